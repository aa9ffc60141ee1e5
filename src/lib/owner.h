/*
 * owner.h - owner records and liveness (owner.c): who holds a lock, with
 * enough to prove its death. Not part of the public API.
 */
#ifndef HF_OWNER_H
#define HF_OWNER_H

#include "holdfast.h"
#include "proc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HF_TOKEN_LEN 32   /* hex characters of a generated token (128 bits)   */
#define HF_OWNER_CHAIN_MAX HF_CHAIN_MAX /* processes besides the owner whose life holds it */

/* One more process whose life holds the record (OW5): a pid of the owner's
 * pid namespace and its start time. */
struct hf_owner_link {
	int64_t pid;
	uint64_t start;
};

struct hf_owner {
	char token[HF_TOKEN_LEN + 1];     /* random, hex                           */
	int64_t pid;                      /* the process whose life holds the lock */
	uint64_t pid_start;               /* /proc/<pid>/stat field 22; 0: unknown */
	char boot_id[HF_BOOTID_LEN + 1];  /* /proc/sys/kernel/random/boot_id       */
	char host[HF_HOST_MAX + 1];
	int64_t time_ms;                  /* wall clock, Unix ms, when recorded    */
	uint64_t pidns;                   /* inode of the pid namespace `pid` is
					     a pid of; HF_PIDNS_UNKNOWN: not known
					     (its pid is never proof); 0: absent
					     from the record (an older writer)     */
	uint64_t timens;                  /* inode of the time namespace boot_ms
					     was read in; 0: unknown               */
	int64_t boot_ms;                  /* CLOCK_BOOTTIME ms when recorded; 0:
					     unknown                               */
	char comm[HF_COMM_MAX + 1];       /* the owner's command name; "" unknown  */
	struct hf_owner_link chain[HF_OWNER_CHAIN_MAX]; /* OW5: also alive while
					     any of these lives                    */
	unsigned nchain;
	int64_t lease_ms;                 /* OW6: > 0: held by a lease of this
					     length from time_ms/boot_ms, by no
					     process ("lease_ms"); 0: by pid    */
	bool kept;                        /* OW7: the kernel lock is held for
					     the owner by another process (a
					     keeper, the library caller of
					     HF_OPT_PID): its absence proves
					     nothing of the owner ("kept")      */
};

/* Fill *ret for process pid (0: the caller) with a fresh token and now: 0,
 * -ESRCH when there is no such process, or -errno. */
int hf_owner_init(struct hf_owner *ret, pid_t pid);
/* OW5: add the processes of pids[0..n) (of our pid namespace) to o's chain,
 * each with its start time; one that is gone already, the owner itself or
 * one there already is left out. 0, or -E2BIG past HF_OWNER_CHAIN_MAX. */
int hf_owner_chain_add(struct hf_owner *o, const pid_t *pids, size_t n);
/* A renewal's owner (DR3): o's time is now; its boot-relative time and
 * time namespace only when we run on o's kernel (a judge there reads
 * boottime_ms against its own boot clock), else none. */
void hf_owner_restart(struct hf_owner *o);

enum hf_liveness {
	HF_ALIVE = 0,   /* proven alive, or not provably dead (other host, unknown) */
	HF_DEAD = 1,    /* proven dead: no such pid, or pid reused (start differs)  */
};
/* HF_ALIVE or HF_DEAD by pid alone; never an error: whatever cannot be
 * proven is alive (another kernel, another pid namespace, no start time). */
int hf_owner_liveness(const struct hf_owner *o);
/* The same, with the owner's kernel lock as the proof where a pid proves
 * nothing (another pid namespace of this kernel): probe_fd is a descriptor
 * the judge opened itself on the owner's liveness object. HF_DEAD when the
 * kernel lock is free - the judge then holds LOCK_EX on probe_fd until it
 * closes it, so no late taker can claim the object meanwhile. */
int hf_owner_liveness_fd(const struct hf_owner *o, int probe_fd);
/* The record's pid when it is a pid of this kernel and of our pid
 * namespace (the pid a verdict by pid would look at, OW1-OW3), else 0. A
 * waiter may watch that process's end (wait.c, WT5); never a verdict. */
pid_t hf_owner_local_pid(const struct hf_owner *o);
/* Age of the record at wall-clock time now_ms: boot-relative on this kernel
 * and time namespace (a wall-clock step does not change it), else by the
 * wall clock (negative when dated in the future). */
int64_t hf_owner_age_ms(const struct hf_owner *o, int64_t now_ms);

/* The owner record's members as JSON text at p, without the braces:
 * token, pid, pid_start, boot_id, host, time_key (ISO-8601), then mid
 * verbatim (NULL: nothing; the caller's own members, each starting with
 * ','), then pidns, timens, boottime_ms, comm, and chain when it has any
 * ([[pid,start],...]). Not NUL-terminated; returns
 * the end. At most HF_OWNER_JSON_MAX bytes plus strlen(mid), for a
 * time_key of at most HF_OWNER_TIME_KEY_MAX bytes. The one writer (OW4). */
#define HF_OWNER_TIME_KEY_MAX 32
#define HF_OWNER_JSON_MAX 2000
char *hf_owner_put_json(char *p, const struct hf_owner *o, const char *time_key,
			const char *mid);
/* The JSON object of an owner record (hf_owner_put_json, parsed), owned by
 * the caller (json_decref); NULL when it cannot be made (host or comm not
 * UTF-8, no memory, a time_key longer than HF_OWNER_TIME_KEY_MAX). */
struct json_t;
struct json_t *hf_owner_to_json(const struct hf_owner *o, const char *time_key);
/* Fill *ret from a JSON object; missing optional fields stay zero. -EINVAL
 * when token or pid are missing or of the wrong type, or a field present is
 * malformed (the time, pidns, timens, boottime_ms, comm not text). */
int hf_owner_from_json(const struct json_t *obj, const char *time_key, struct hf_owner *ret);

#endif
