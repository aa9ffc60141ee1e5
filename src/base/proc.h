/*
 * proc.h - processes as /proc and the kernel show them (proc.c).
 */
#ifndef HF_PROC_H
#define HF_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HF_HOST_MAX 64
#define HF_BOOTID_LEN 36
#define HF_COMM_MAX 15      /* /proc/<pid>/comm, as the kernel truncates it   */
#define HF_PIDNS_UNKNOWN 1  /* no namespace inode is 1: "recorded, not known" */

/* Start time of pid (/proc/<pid>/stat field 22): 0 and *ret, -ESRCH when no
 * such process, other -errno when unreadable (-ENOENT: no /proc here). */
int hf_pid_start(pid_t pid, uint64_t *ret);
/* The command name of pid (/proc/<pid>/comm, as text; "" when it is not
 * text) into buf: 0, -ESRCH, or -errno. */
int hf_pid_comm(pid_t pid, char *buf, size_t n);
/* The inode of this process's pid namespace, or HF_PIDNS_UNKNOWN when this
 * /proc is not of our pid namespace (its numbers are not ours) or cannot be
 * read. */
uint64_t hf_self_pidns(void);
/* The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO,
 * fixed since Linux 3.8): every process of the machine is visible there. */
#define HF_PIDNS_INIT 0xEFFFFFFCULL
/* Does any process we can see live in pid namespace ino (/proc/<pid>/ns/pid
 * of each)? 1 yes, 0 none, -errno when /proc cannot be read. A namespace
 * below ours shows all its processes here, so 0 proves it is gone. */
int hf_pidns_seen(uint64_t ino);
/* The inode of this process's time namespace (0: unknown). */
uint64_t hf_self_timens(void);
/* Both, for me = hf_sys_getpid() (the caller read it already). */
void hf_self_ns(pid_t me, uint64_t *pidns, uint64_t *timens);
/* Probe a kernel lock: flock(fd, LOCK_EX | LOCK_NB) on a descriptor the
 * caller opened itself. 1: held by another open file description (its
 * holder lives); 0: free - the caller now holds LOCK_EX on fd until it
 * closes it or unlocks; <0: -errno (unknown). */
int hf_kernel_lock_probe(int fd);
/* A set of processes watched for their end (PR3): each by its pid and
 * start time, with a pidfd where the kernel has them. */
#define HF_PROCSET_MAX 9
struct hf_procset {
	pid_t pid[HF_PROCSET_MAX];
	uint64_t start[HF_PROCSET_MAX];
	int fd[HF_PROCSET_MAX];        /* pidfd, or -1 (then kill + start time) */
	unsigned n;                    /* members still alive                  */
};
/* An empty set. */
void hf_procset_init(struct hf_procset *s);
/* Add pid with its start time (0: read now): 0; -ESRCH when it is gone or
 * its start time is not start (a reused pid: not added); -E2BIG when full;
 * a pid there already is not added twice. */
int hf_procset_add(struct hf_procset *s, pid_t pid, uint64_t start);
/* Drop the members that have ended: the number left alive (0: all gone). */
unsigned hf_procset_reap(struct hf_procset *s);
/* The members' pidfds into fds (at most HF_PROCSET_MAX): how many; each
 * polls readable when its process ends. 0 with members left means: look
 * by hf_procset_reap at least every second (no pidfd here). */
unsigned hf_procset_fds(const struct hf_procset *s, int *fds);
/* Close every pidfd; the set is empty after. */
void hf_procset_close(struct hf_procset *s);

/* This boot's id (cached after the first read). */
const char *hf_boot_id(void);
/* This host's name (cached). */
const char *hf_host_name(void);

#endif
