/*
 * internal.h - helpers shared by the lock kinds. Not part of the public API.
 */
#ifndef HF_INTERNAL_H
#define HF_INTERNAL_H

#include "holdfast.h"
#include "sys.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* --- util.c -------------------------------------------------------------- */

/* n random bytes as 2n lowercase hex characters plus NUL (buf: 2n+1). */
int hf_random_hex(char *buf, size_t nbytes);

/* "2026-09-22T10:00:00Z" (seconds) or with ".123" when ms is not whole. */
void hf_time_format(int64_t unix_ms, char *buf, size_t n);
/* ISO-8601 / RFC 3339: date 'T' time, optional fraction, 'Z' or +hh:mm.
 * Leading/trailing white space allowed. 0 and *ret_ms, or -EINVAL. */
int hf_time_parse(const char *s, int64_t *ret_ms);

/* Read a whole small file (at most max bytes) at dirfd/path, NUL-terminated.
 * *ret_buf is malloc'd. -EFBIG when larger than max. flags: extra O_ flags. */
int hf_read_file_at(int dirfd, const char *path, int flags, size_t max, char **ret_buf,
		    size_t *ret_len, struct stat *ret_st);

/* Publish a complete file at dirfd/name only if nothing is there (a true
 * test-and-set, never check-then-rename): an unnamed O_TMPFILE written and
 * fsync'ed if asked, then linkat() into place; where O_TMPFILE is refused, a
 * uniquely named temporary + link + unlink. -EEXIST when the name exists; on
 * any failure no partial file is ever visible under name. */
int hf_publish_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		       bool durable);

/* The same, handing back in *ret_fd (close-on-exec; -1 on failure) a
 * descriptor of the published file: it pins the inode, so fstat(*ret_fd)
 * tells whether any name still refers to the record (st_nlink) and which
 * name does (st_ino against fstatat). */
int hf_publish_file_at_fd(int dirfd, const char *name, const void *data, size_t len,
			  mode_t mode, bool durable, int *ret_fd);

/* Replace dirfd/name with data atomically: temporary in the same directory,
 * write, fsync, rename over name, fsync the directory. A crash at any point
 * leaves the old content or the new, and at most a temporary named
 * "<name>.tmp-<hex>" (swept by callers that own the directory). If keep_mode
 * is true and name exists, its mode is kept; else mode is used. */
int hf_replace_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		       bool keep_mode);

/* Split path into a directory fd (O_PATH|O_DIRECTORY, opened through the
 * sys layer) and a final component copied into base (n bytes). */
int hf_open_parent(const char *path, int *ret_dirfd, char *base, size_t n);

/* Is s valid UTF-8 without control characters, at most max bytes? */
bool hf_text_ok(const char *s, size_t max);

/* --- owner.c ------------------------------------------------------------- */

/* Start time of pid (/proc/<pid>/stat field 22): 0 and *ret, -ESRCH when no
 * such process, other -errno when unreadable. */
int hf_pid_start(pid_t pid, uint64_t *ret);
/* The command name of pid (/proc/<pid>/comm, as text; "" when it is not
 * text) into buf: 0, -ESRCH, or -errno. */
int hf_pid_comm(pid_t pid, char *buf, size_t n);
/* The inode of this process's pid namespace, or HF_PIDNS_UNKNOWN when this
 * /proc is not of our pid namespace (its numbers are not ours) or cannot be
 * read. */
uint64_t hf_self_pidns(void);
/* The inode of this process's time namespace (0: unknown). */
uint64_t hf_self_timens(void);
/* Probe a kernel lock: flock(fd, LOCK_EX | LOCK_NB) on a descriptor the
 * caller opened itself. 1: held by another open file description (its
 * holder lives); 0: free - the caller now holds LOCK_EX on fd until it
 * closes it or unlocks; <0: -errno (unknown). */
int hf_kernel_lock_probe(int fd);
/* This boot's id (cached after the first read). */
const char *hf_boot_id(void);
/* This host's name (cached). */
const char *hf_host_name(void);

/* The JSON object of an owner record, owned by the caller (json_decref).
 * Fields: token, pid, pid_start, boot_id, host, and time_key as ISO-8601. */
struct json_t;
struct json_t *hf_owner_to_json(const struct hf_owner *o, const char *time_key);
/* Fill *ret from a JSON object; missing optional fields stay zero. -EINVAL
 * when token or pid are missing or of the wrong type. */
int hf_owner_from_json(const struct json_t *obj, const char *time_key, struct hf_owner *ret);

#endif
