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
#include <string.h>

#define HF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* --- util.c -------------------------------------------------------------- */

/* n random bytes as 2n lowercase hex characters plus NUL (buf: 2n+1). */
int hf_random_hex(char *buf, size_t nbytes);

/* "2026-09-22T10:00:00Z" (seconds) or with ".123" when ms is not whole. */
#define HF_TIME_MAX 32 /* bytes a formatted time needs, NUL included */
void hf_time_format(int64_t unix_ms, char *buf, size_t n);
/* v in decimal at p, zero-padded to width digits (at most 20); returns the
 * end (not NUL-terminated). No stdio: hot paths format with these. */
static inline char *hf_put_u64w(char *p, uint64_t v, int width)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";
	char tmp[20], *end = tmp + sizeof tmp, *q = end;
	while (v >= 100) { /* two digits a division */
		q -= 2;
		memcpy(q, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, pairs + 2 * v, 2);
	} else {
		*--q = (char)('0' + v);
	}
	int n = (int)(end - q);
	if (width > (int)sizeof tmp)
		width = (int)sizeof tmp;
	if (n < width) {
		memset(p, '0', (size_t)(width - n));
		p += width - n;
	}
	while (q < end) /* a few bytes: no call to memcpy */
		*p++ = *q++;
	return p;
}

/* s at p (not NUL-terminated); returns the end. */
static inline char *hf_put_str(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

/* A string literal at p (not NUL-terminated), inline; the end. */
#define HF_PUT_LIT(p, lit) (memcpy((p), "" lit, sizeof(lit) - 1), (p) + sizeof(lit) - 1)
/* s into dst[n], cut to fit, always NUL-terminated. */
void hf_copy_str(char *dst, size_t n, const char *s);
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

/* The same, with the unnamed temporary made in tmpdirfd (same file system)
 * and linked as dirfd/name: a directory whose inode groups are crowded, or
 * one that may move while we publish (a descriptor on it follows it). */
int hf_publish_file_via(int tmpdirfd, int dirfd, const char *name, const void *data, size_t len,
			mode_t mode, bool durable);
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

/* A replacement written but not yet in place (hf_stage_*). */
struct hf_stage {
	char tmp[256];   /* "<name>.tmp-<16 hex>" in the directory; "" when none */
	mode_t mode;     /* the mode it was given (07777 bits)                   */
	uid_t uid;       /* its owner and group as they ended                    */
	gid_t gid;
	bool group_dropped; /* the group asked for could not be set: the group
			       bits were cleared instead                          */
};

/* Write a replacement for dirfd/name: a new temporary "<name>.tmp-<16 hex>"
 * (O_EXCL, created 0600 so nobody can open it before it is finished), owned
 * by uid:gid ((uid_t)-1 / (gid_t)-1: as created), then given exactly mode
 * (fchmod after fchown; the umask does not apply), written and fsync'ed.
 * When gid cannot be set (EPERM/EINVAL: a user outside that group) the
 * created group stays and mode loses its group bits: the replacement never
 * grants more than mode grants to gid (U3). A uid that cannot be set fails
 * (-EPERM). 0 and *ret; on failure nothing is left. */
int hf_stage_create(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		    uid_t uid, gid_t gid, struct hf_stage *ret);
/* Put the staged file at dirfd/name, only if name still is *expect (same
 * st_dev and st_ino, looked at without following a symlink just before the
 * rename; the caller keeps that file open, so its inode number cannot be
 * reused meanwhile) or, expect NULL, only if nothing is there (rename with
 * RENAME_NOREPLACE; where the file system refuses the flag, link + unlink of
 * the temporary, never of name). -ESTALE: name is no longer *expect;
 * -EEXIST: (expect NULL) something appeared at name. On failure the staged
 * file stays: hf_stage_discard it. The directory is not fsync'ed. */
int hf_stage_commit(int dirfd, struct hf_stage *s, const char *name, const struct stat *expect);
/* Remove a staged file that was not committed (no-op when none). */
void hf_stage_discard(int dirfd, struct hf_stage *s);

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
