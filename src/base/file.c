/*
 * file.c - the file operations every lock kind shares: one path splitter,
 * one small-file reader (and a heap reader for files of any size), one
 * directory iterator, test-and-set publication and atomic replacement of
 * files.
 *
 * Invariants:
 *  (FI1) hf_publish_file_at never makes a partial file visible under its name,
 *        and never replaces an existing one (linkat fails with EEXIST).
 *  (FI2) hf_replace_file_at leaves, after a crash at any instant, the old
 *        content or the new under the name; never a mix, never nothing.
 *        So does hf_stage_create + hf_stage_commit.
 *  (FI3) A staged file never grants more than it was asked to: it is created
 *        0600, its owner and group are set before its mode, and a group that
 *        cannot be set costs the mode its group bits.
 *  (FI4) hf_stage_commit replaces only the object the caller expects (or
 *        nothing, when it expects none); the check is by device and inode of
 *        a file the caller keeps open, so the number cannot have been reused.
 *  (FI5) hf_publish_file_at_fd hands back a descriptor of the very file it
 *        published: while it is open the inode cannot be reused, so its
 *        st_ino identifies the file (wherever it is renamed to), and its
 *        st_nlink says whether any name still refers to it.
 *  (FI6) hf_dir_each reports every error reading the directory: a caller
 *        that must see every entry (a claims look) never mistakes a failed
 *        read for the end.
 */
#include "file.h"

#include "sys.h"
#include "text.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

ssize_t hf_read_small_at(int dirfd, const char *path, int flags, char *buf, size_t n,
			 int *ret_fd)
{
	if (n < 2)
		return -EINVAL;
	int fd = hf_sys_openat(dirfd, path, O_RDONLY | O_NOFOLLOW | flags, 0);
	if (fd < 0)
		return fd;
	ssize_t r = hf_sys_read(fd, buf, n - 1);
	if (r >= 0 && (size_t)r < n - 1 && ret_fd)
		*ret_fd = fd;
	else
		hf_sys_close(fd);
	if (r < 0)
		return r;
	if ((size_t)r == n - 1)
		return -EFBIG;
	buf[r] = '\0';
	return r;
}

int hf_read_fd(int fd, const struct stat *st, size_t max, char **ret_buf, size_t *ret_len)
{
	size_t cap = st->st_size > 0 ? (size_t)st->st_size + 1 : 256;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	size_t len = 0;
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				free(buf);
				return -EFBIG;
			}
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = realloc(buf, ncap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = hf_sys_read(fd, buf + len, cap - len);
		if (r < 0) {
			free(buf);
			return (int)r;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > max) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

int hf_read_file_at(int dirfd, const char *path, int flags, size_t max, char **ret_buf,
		    size_t *ret_len, struct stat *ret_st)
{
	int fd = hf_sys_openat(dirfd, path, O_RDONLY | O_NOFOLLOW | flags, 0);
	if (fd < 0)
		return fd;
	struct stat st;
	int rc = hf_sys_fstat(fd, &st);
	if (rc == 0)
		rc = hf_read_fd(fd, &st, max, ret_buf, ret_len);
	if (rc == 0 && ret_st)
		*ret_st = st;
	hf_sys_close(fd);
	return rc;
}

static int write_all_and_sync(int fd, const void *data, size_t len, bool durable)
{
	ssize_t w = len ? hf_sys_write(fd, data, len) : 0;
	if (w < 0)
		return (int)w;
	return durable ? hf_sys_fsync(fd) : 0;
}

/* FI1 for all three: an unnamed temporary made in tmpdirfd, linked as
 * dirfd/name; ret_fd (may be NULL) gets the published file's descriptor. */
static int publish(int tmpdirfd, int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode, bool durable, int *ret_fd)
{
	if (ret_fd)
		*ret_fd = -1;
	int fd = hf_sys_openat(tmpdirfd, ".", O_TMPFILE | O_WRONLY, mode);
	if (fd >= 0) {
		int rc = write_all_and_sync(fd, data, len, durable);
		/* FI1: linkat fails with EEXIST rather than replace. The opener
		 * may link its own fd directly (Linux >= 6.10, or with
		 * CAP_DAC_READ_SEARCH): ENOENT elsewhere. That spares the walk
		 * through /proc/self/fd, ~45 us in a fresh process. */
		if (rc == 0)
			rc = hf_sys_linkat(fd, "", dirfd, name, AT_EMPTY_PATH);
		if (rc == -ENOENT) {
			char proc[64];
			snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
			rc = hf_sys_linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW);
		}
		if (rc == 0 && ret_fd) {
			*ret_fd = fd; /* FI5: it pins the inode now named `name` */
			return 0;
		}
		hf_sys_close(fd);
		if (rc != -ENOENT)
			return rc;
		/* ENOENT: no /proc mounted; fall through to a named temporary */
	} else if (fd != -EOPNOTSUPP && fd != -EISDIR && fd != -EINVAL && fd != -ENOENT) {
		return fd;
	}
	char tmp[96];
	char hex[17];
	int rc = hf_random_hex(hex, 8);
	if (rc < 0)
		return rc;
	snprintf(tmp, sizeof tmp, ".hf-tmp-%s", hex);
	fd = hf_sys_openat(tmpdirfd, tmp, O_CREAT | O_EXCL | O_WRONLY, mode);
	if (fd < 0)
		return fd;
	rc = write_all_and_sync(fd, data, len, durable);
	if (rc == 0)
		rc = hf_sys_linkat(tmpdirfd, tmp, dirfd, name, 0); /* FI1 */
	hf_sys_unlinkat(tmpdirfd, tmp, 0);
	if (rc == 0 && ret_fd) {
		*ret_fd = fd; /* FI5 */
		return 0;
	}
	hf_sys_close(fd);
	return rc;
}

int hf_publish_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		       bool durable)
{
	return publish(dirfd, dirfd, name, data, len, mode, durable, NULL);
}

int hf_publish_file_via(int tmpdirfd, int dirfd, const char *name, const void *data, size_t len,
			mode_t mode, bool durable)
{
	return publish(tmpdirfd, dirfd, name, data, len, mode, durable, NULL);
}

int hf_publish_file_at_fd(int dirfd, const char *name, const void *data, size_t len,
			  mode_t mode, bool durable, int *ret_fd)
{
	return publish(dirfd, dirfd, name, data, len, mode, durable, ret_fd);
}

int hf_replace_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		       bool keep_mode)
{
	char tmp[NAME_MAX + 1];
	char hex[17];
	int rc = hf_random_hex(hex, 8);
	if (rc < 0)
		return rc;
	if (snprintf(tmp, sizeof tmp, "%s.tmp-%s", name, hex) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	if (keep_mode) {
		struct stat st;
		if (hf_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			mode = st.st_mode & 07777;
	}
	int fd = hf_sys_openat(dirfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW, mode);
	if (fd < 0)
		return fd;
	rc = hf_sys_fchmod(fd, mode); /* whatever the umask */
	if (rc == 0)
		rc = write_all_and_sync(fd, data, len, true);
	int crc = hf_sys_close(fd);
	if (rc == 0)
		rc = crc;
	if (rc == 0)
		rc = hf_sys_renameat2(dirfd, tmp, dirfd, name, 0); /* FI2 */
	if (rc < 0) {
		hf_sys_unlinkat(dirfd, tmp, 0);
		return rc;
	}
	return hf_sys_fsync(dirfd);
}

int hf_stage_create(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		    uid_t uid, gid_t gid, struct hf_stage *ret)
{
	struct hf_stage s;
	memset(&s, 0, sizeof s);
	char hex[17];
	int rc = hf_random_hex(hex, 8);
	if (rc < 0)
		return rc;
	if (snprintf(s.tmp, sizeof s.tmp, "%s.tmp-%s", name, hex) >= (int)sizeof s.tmp ||
	    strlen(s.tmp) > NAME_MAX)
		return -ENAMETOOLONG;
	int fd = hf_sys_openat(dirfd, s.tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fd;
	struct stat st;
	rc = hf_sys_fstat(fd, &st); /* FI3: 0600 at most so far */
	if (rc < 0)
		goto fail;
	s.uid = st.st_uid;
	s.gid = st.st_gid;
	uid_t want_uid = uid != (uid_t)-1 && uid != st.st_uid ? uid : (uid_t)-1;
	gid_t want_gid = gid != (gid_t)-1 && gid != st.st_gid ? gid : (gid_t)-1;
	if (want_uid != (uid_t)-1 || want_gid != (gid_t)-1) {
		rc = hf_sys_fchown(fd, want_uid, want_gid);
		if ((rc == -EPERM || rc == -EINVAL) && want_uid == (uid_t)-1) {
			s.group_dropped = true; /* FI3 */
			mode &= ~(mode_t)070;
			rc = 0;
		} else if (rc < 0) {
			goto fail;
		} else {
			if (want_uid != (uid_t)-1)
				s.uid = want_uid;
			if (want_gid != (gid_t)-1)
				s.gid = want_gid;
		}
	}
	s.mode = mode & 07777;
	assert((!s.group_dropped || !(s.mode & 070)) && "FI3");
	rc = hf_sys_fchmod(fd, s.mode); /* FI3: after the owner; whatever the umask */
	if (rc == 0)
		rc = write_all_and_sync(fd, data, len, true);
fail:;
	int crc = hf_sys_close(fd);
	if (rc == 0)
		rc = crc;
	if (rc < 0) {
		hf_sys_unlinkat(dirfd, s.tmp, 0);
		return rc;
	}
	*ret = s;
	return 0;
}

int hf_stage_commit(int dirfd, struct hf_stage *s, const char *name, const struct stat *expect)
{
	if (!s->tmp[0])
		return -EINVAL;
	int rc;
	if (expect) {
		struct stat now;
		rc = hf_sys_fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW);
		if (rc == -ENOENT)
			return -ESTALE;
		if (rc < 0)
			return rc;
		if (now.st_dev != expect->st_dev || now.st_ino != expect->st_ino) /* FI4 */
			return -ESTALE;
		rc = hf_sys_renameat2(dirfd, s->tmp, dirfd, name, 0); /* FI2 */
	} else {
		rc = hf_sys_renameat2(dirfd, s->tmp, dirfd, name, RENAME_NOREPLACE); /* FI4 */
		if (rc == -EOPNOTSUPP) {
			/* a test-and-set all the same: link fails on an existing
			 * name; only the temporary's own name is unlinked */
			rc = hf_sys_linkat(dirfd, s->tmp, dirfd, name, 0);
			if (rc == 0)
				hf_sys_unlinkat(dirfd, s->tmp, 0);
		}
	}
	if (rc == 0)
		s->tmp[0] = '\0';
	return rc;
}

void hf_stage_discard(int dirfd, struct hf_stage *s)
{
	if (s->tmp[0])
		hf_sys_unlinkat(dirfd, s->tmp, 0);
	s->tmp[0] = '\0';
}

int hf_path_split(const char *path, char *dir, size_t dn, char *base, size_t bn)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len == 0)
		return -EINVAL;
	const char *slash = memrchr(path, '/', len);
	const char *b = slash ? slash + 1 : path;
	size_t blen = len - (size_t)(b - path);
	if (blen == 0 || (blen == 1 && b[0] == '.') || (blen == 2 && b[0] == '.' && b[1] == '.'))
		return -EINVAL;
	if (blen >= bn)
		return -ENAMETOOLONG;
	if (!slash) {
		if (dn < 2)
			return -ENAMETOOLONG;
		strcpy(dir, ".");
	} else if (slash == path) {
		if (dn < 2)
			return -ENAMETOOLONG;
		strcpy(dir, "/");
	} else {
		size_t dlen = (size_t)(slash - path);
		if (dlen >= dn)
			return -ENAMETOOLONG;
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
	}
	memcpy(base, b, blen);
	base[blen] = '\0';
	return 0;
}

int hf_open_split(const char *path, int *ret_dirfd, char *dir, size_t dn, char *base, size_t bn)
{
	int rc = hf_path_split(path, dir, dn, base, bn);
	if (rc < 0)
		return rc;
	int fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	*ret_dirfd = fd;
	return 0;
}

int hf_open_parent(const char *path, int *ret_dirfd, char *base, size_t n)
{
	char dir[PATH_MAX];
	return hf_open_split(path, ret_dirfd, dir, sizeof dir, base, n);
}

int hf_dir_each(int dirfd, const char *prefix, hf_dir_fn fn, void *ctx)
{
	int fd = hf_sys_openat(dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	size_t plen = strlen(prefix);
	char buf[8192] __attribute__((aligned(8)));
	int rc = 0;
	for (;;) {
		ssize_t n = hf_sys_getdents(fd, buf, sizeof buf);
		if (n < 0) {
			rc = (int)n; /* FI6 */
			break;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			off += d->reclen;
			if (strncmp(d->name, prefix, plen) != 0 || !strcmp(d->name, ".") ||
			    !strcmp(d->name, ".."))
				continue;
			rc = fn(dirfd, d->name, ctx);
			if (rc != 0)
				goto out;
		}
	}
out:
	hf_sys_close(fd);
	return rc;
}
