/*
 * flockrec.h - the kernel's locks on a file as /proc/locks lists them, and
 * the records `holdfast flock` writes beside the file it locks (the
 * exclusive holder's FILE.holdfast-flock, each shared holder's own
 * FILE.holdfast-flock.d/<locker>-<hex>.json: src/cli/cmd_flock.c FK2-FK4,
 * FK8-FK9), read and judged by its rule FK3 (flockrec.c). Shared by `holdfast flock` / `lock status FILE` (the
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
/* The directory of the shared holders' records: FILE.holdfast-flock.d. */
#define HF_FLOCKREC_SHARED_SUFFIX ".holdfast-flock.d"
/* At most this many shared records are read (or swept) per look. */
#define HF_FLOCKREC_SHARED_MAX 256

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
/* Does record r describe k, a lock on the file st (cmd_flock.c FK3)? Only a
 * flock(2) lock of the record's locker pid on the record's dev:ino, of the
 * record's "mode": an exclusive record (no mode, or "exclusive") a WRITE
 * lock, a "shared" one a READ lock. */
bool hf_flockrec_counts(const json_t *r, const struct hf_kernel_lock *k, const struct stat *st);
/* The shared holders' records in the directory dirpath (FILE.holdfast-flock.d,
 * opened O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK; only regular files named
 * *.json, at most HF_FLOCKREC_SHARED_MAX): a JSON array of the records,
 * each with "file" (its name in the directory) added; an empty array when
 * the directory is missing or unreadable; NULL on ENOMEM. */
json_t *hf_flockrec_shared_read(const char *dirpath);
/* Every holder of the file st: the kernel's granted locks on its inode,
 * each named by the record that counts for it (FK3: the exclusive record
 * at recpath, a shared one in recpath.d, each record for one lock at
 * most), else by /proc/locks alone. A JSON array, one object per lock:
 * "mode" (exclusive/shared), "api" (hf_kernel_lock_api), "record" (true
 * when named by a record), "pid" (unless the kernel names none), "command"
 * (the record's, else the pid's comm), and from a record "host",
 * "taken_ms" (and "fence" from the exclusive one); "range" ("START-END")
 * for a byte-range lock. Records are read before /proc/locks (FK9).
 * recpath NULL: no records. Empty when free; NULL on ENOMEM. */
json_t *hf_flock_holders(const char *recpath, const struct stat *st);

#endif
