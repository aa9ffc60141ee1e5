/*
 * flockrec.h - the kernel's locks on a file as /proc/locks lists them, and
 * the record `holdfast flock` writes beside the file it locks
 * (FILE.holdfast-flock, src/cli/cmd_flock.c FK2-FK4), read and judged by
 * its rule FK3 (flockrec.c). Shared by `holdfast flock` / `lock status FILE` (the
 * CLI) and the file system's listing (src/lib/fs/fslist.c).
 */
#ifndef HF_FLOCKREC_H
#define HF_FLOCKREC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define HF_FLOCKREC_SUFFIX ".holdfast-flock"

/* One granted lock of /proc/locks. */
struct hf_kernel_lock {
	char kind[12];                /* FLOCK, OFDLCK, POSIX                    */
	bool write;
	long pid;                     /* -1: an OFD lock (no pid)                */
	unsigned long long start;
	char end[24];                 /* a number or EOF                         */
};

/* The granted locks on dev:ino (waiters skipped): how many, at most n of
 * them kept in out; -errno when /proc/locks cannot be opened. */
int hf_kernel_locks_on(dev_t dev, ino_t ino, struct hf_kernel_lock *out, int n);
/* "flock(2)", "fcntl OFD" or "fcntl POSIX": the call that took k. */
const char *hf_kernel_lock_api(const struct hf_kernel_lock *k);
/* The record at path (a JSON object; opened O_NOFOLLOW | O_NONBLOCK, so a
 * link is not followed and nothing can make it wait), or NULL when it is
 * missing, unreadable or not an object. The caller decrefs it. */
json_t *hf_flockrec_read(const char *path);
/* The record's integer k, or -1. */
int64_t hf_flockrec_int(const json_t *r, const char *k);
/* Does record r describe k, a lock on the file st (cmd_flock.c FK3)? Only an exclusive
 * flock(2) lock of the record's locker pid on the record's dev:ino. */
bool hf_flockrec_counts(const json_t *r, const struct hf_kernel_lock *k, const struct stat *st);

#endif
