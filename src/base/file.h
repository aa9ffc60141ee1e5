/*
 * file.h - paths, small files, directories, publication and replacement
 * (file.c). Every call goes through the system-call seam (sys.h).
 */
#ifndef HF_FILE_H
#define HF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The small-file reader: dirfd/path (opened O_RDONLY | O_NOFOLLOW | flags)
 * into buf (n bytes) with one read, NUL-terminated: the count (< n), or
 * -EFBIG when it holds n - 1 bytes or more, or -errno. One read: a regular
 * file returns fewer bytes than asked only at its end (a record, a /proc
 * file); no heap, no fstat. ret_fd (may be NULL): on success the descriptor
 * is left open there (close-on-exec), pinning what was read. */
ssize_t hf_read_small_at(int dirfd, const char *path, int flags, char *buf, size_t n,
			 int *ret_fd);
/* Read a whole file of any size up to max bytes at dirfd/path,
 * NUL-terminated, into a malloc'd *ret_buf (a table, /proc/self/mountinfo).
 * -EFBIG when larger than max. flags: extra O_ flags. */
int hf_read_file_at(int dirfd, const char *path, int flags, size_t max, char **ret_buf,
		    size_t *ret_len, struct stat *ret_st);
/* The same from fd, already open (and verified) with st its fstat. */
int hf_read_fd(int fd, const struct stat *st, size_t max, char **ret_buf, size_t *ret_len);

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
 * grants more than mode grants to gid (FI3). A uid that cannot be set fails
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

/* The one path splitter: path's directory into dir (dn bytes: "." when it
 * has none, "/" for the root) and its final component into base (bn
 * bytes), trailing slashes ignored. -EINVAL for "", ".", ".." or a path
 * ending in them; -ENAMETOOLONG when a part does not fit. */
int hf_path_split(const char *path, char *dir, size_t dn, char *base, size_t bn);
/* Split path (hf_path_split) and open its directory (O_RDONLY|O_DIRECTORY)
 * into *ret_dirfd. */
int hf_open_parent(const char *path, int *ret_dirfd, char *base, size_t n);
/* The same, keeping the directory's path in dir (dn bytes) too. */
int hf_open_split(const char *path, int *ret_dirfd, char *dir, size_t dn, char *base, size_t bn);

/* Call fn for every entry of dirfd whose name starts with prefix ("" for
 * all; never "." or ".."). fn returns 0 to go on, >0 to stop (returned),
 * <0 to fail (returned). Any error reading the directory is returned
 * (FI6). */
typedef int (*hf_dir_fn)(int dirfd, const char *name, void *ctx);
int hf_dir_each(int dirfd, const char *prefix, hf_dir_fn fn, void *ctx);

#endif
