/*
 * session.h - the session lock above its backends: the record (struct
 * hf_sessionlock_record; its format, parse, age and judge in
 * session_record.c), what a take asks for (struct hf_sessionlock_opts),
 * what a lock's state looks like to any backend (struct
 * hf_sessionlock_status, enum hf_session_state) and the defaults. The file
 * system's protocol is fs/session_file.c (fs/session_file.h), etcd's
 * etcd/etcdsession.c. Not part of the public API.
 */
#ifndef HF_SESSION_H
#define HF_SESSION_H

#include "holdfast.h"
#include "owner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HF_SESSION_STALE_MS_DEFAULT (90LL * 60 * 1000)

struct hf_sessionlock_record {
	char lane[HF_LANE_MAX + 1];       /* "" only for a legacy record             */
	char owner[HF_OWNER_MAX + 1];     /* the caller's token, or a generated one */
	int64_t pid;                      /* the process that wrote it (0: unknown) */
	char host[HF_HOST_MAX + 1];
	int64_t started_ms;               /* Unix ms                                */
	int legacy;                       /* 1: a bare ISO-8601 timestamp lock      */
	int has_broke;                    /* 1: this take broke a stale lock        */
	struct {
		char lane[HF_LANE_MAX + 1];
		char owner[HF_OWNER_MAX + 1];
		int64_t started_ms;
		int64_t age_s;
		int legacy;
	} broke;
	/* When "started" was, on the writer's kernel: with these its age is
	 * boot-relative for a judge on the same kernel and time namespace (a
	 * wall-clock step moves it neither way); absent in older records. */
	char boot_id[HF_BOOTID_LEN + 1];  /* "": unknown                            */
	uint64_t timens;                  /* time namespace inode; 0: unknown       */
	int64_t boot_ms;                  /* CLOCK_BOOTTIME ms; 0: unknown          */
};

struct hf_sessionlock_opts {
	const char *path;                 /* the lock file; NULL: the default path  */
	const char *lane;                 /* required for take and release          */
	const char *owner;                /* NULL: take generates; release: unchecked */
	int64_t stale_ms;                 /* <= 0: HF_SESSION_STALE_MS_DEFAULT      */
};

enum hf_session_state {
	HF_SESSION_FREE = 0,
	HF_SESSION_HELD = 1,              /* a live lock                            */
	HF_SESSION_STALE = 2,             /* older than the stale window            */
	HF_SESSION_SKEW = 3,              /* dated in the future: live, clock skew  */
	HF_SESSION_UNREADABLE = 4,        /* garbage, unparseable, unreadable       */
};

struct hf_sessionlock_status {
	int state;                        /* enum hf_session_state                  */
	struct hf_sessionlock_record rec;     /* valid for HELD, STALE, SKEW            */
	int64_t age_ms;                   /* from rec.started_ms, never from mtime  */
	int64_t mtime_ms;                 /* evidence only (UNREADABLE included)    */
	int in_aside;                     /* 1: the record sits in an aside         */
	char aside[256];                  /* its name, when in_aside                */
	char reason[160];                 /* UNREADABLE: what was wrong             */
};

/* A record larger than this is not a record (one is well under 1 KiB): a
 * lock file's or a key's value. */
#define HF_SESSION_FILE_MAX 4096

/* The record as one line of JSON plus "\n" (fields in contract order;
 * "broke" only when has_broke). The length, or -ENAMETOOLONG. */
int hf_session_format(const struct hf_sessionlock_record *r, char *buf, size_t n);

/* Parse a lock file's bytes: a JSON record, or a bare ISO-8601 timestamp
 * (legacy). 0 and *ret; HF_EUNREADABLE with a reason in why (n bytes). */
int hf_session_parse(const char *buf, size_t len, struct hf_sessionlock_record *ret, char *why,
		     size_t n);

/* A record's age at wall-clock time now_ms (SL2): boot-relative when the
 * record carries boot_id, timens and boottime_ms of this kernel and time
 * namespace (never negative then), else now - started by the wall clock
 * (negative when dated in the future). */
int64_t hf_session_age_ms(const struct hf_sessionlock_record *r, int64_t now_ms);

/* Stamp r as written now by this process: its pid, host, and "started"
 * with the boot-relative time it is on this kernel (boot id, time
 * namespace, CLOCK_BOOTTIME: SL2). */
void hf_session_stamp(struct hf_sessionlock_record *r);

/* HF_SESSION_HELD, _STALE or _SKEW for a parsed record at time now_ms, and
 * its age (hf_session_age_ms; _SKEW when negative). */
int hf_session_judge(const struct hf_sessionlock_record *r, int64_t now_ms, int64_t stale_ms,
		     int64_t *ret_age_ms);

/* Does a session verb's outcome rc come with the holder it met (every
 * backend names it in the handle's record, BE3)? A release or renewal that
 * met another's record or an unreadable one, or a renewal that lost it. */
static inline bool hf_session_names_holder(int rc)
{
	return rc == HF_ENOTYOURS || rc == HF_EUNREADABLE || rc == HF_ELOST;
}

/* Is rc an outcome of the protocol (done, or refused by what it met), not
 * a failure of the store under it (an etcd endpoint that did not answer)? */
static inline bool hf_session_outcome(int rc)
{
	return rc >= 0 || rc == HF_ENOTHELD || hf_session_names_holder(rc);
}

#endif
