/*
 * util.c - small helpers shared by every lock kind: error names, tokens,
 * ISO-8601 times, whole-file reads, test-and-set publication and atomic
 * replacement of files.
 *
 * Invariants:
 *  (U1) hf_publish_file_at never makes a partial file visible under its name,
 *       and never replaces an existing one (linkat fails with EEXIST).
 *  (U2) hf_replace_file_at leaves, after a crash at any instant, the old
 *       content or the new under the name; never a mix, never nothing.
 *       So does hf_stage_create + hf_stage_commit.
 *  (U3) A staged file never grants more than it was asked to: it is created
 *       0600, its owner and group are set before its mode, and a group that
 *       cannot be set costs the mode its group bits.
 *  (U4) hf_stage_commit replaces only the object the caller expects (or
 *       nothing, when it expects none); the check is by device and inode of
 *       a file the caller keeps open, so the number cannot have been reused.
 *  (U5) hf_publish_file_at_fd hands back a descriptor of the very file it
 *       published: while it is open the inode cannot be reused, so its
 *       st_ino identifies the file (wherever it is renamed to), and its
 *       st_nlink says whether any name still refers to it.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

const char *hf_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "success";
	case HF_EHELD:
		return "held by another";
	case HF_EUNREADABLE:
		return "unreadable or corrupt";
	case HF_ENOTHELD:
		return "not held";
	case HF_ENOTYOURS:
		return "held by another lane or owner";
	case HF_ETIMEDOUT:
		return "timed out";
	case HF_ECONFLICT:
		return "conflicts with another holder";
	case HF_EUNSAFE:
		return "refused for safety";
	case HF_EBARRIER:
		return "a claim beside the lock denies entry";
	case HF_ELOST:
		return "lost: reaped or released by another";
	}
	if (rc < 0 && rc > -4096)
		return strerror(-rc);
	return "unknown error";
}

int hf_random_hex(char *buf, size_t nbytes)
{
	unsigned char raw[64];
	if (nbytes > sizeof raw)
		return -EINVAL;
	int rc = hf_sys_getrandom(raw, nbytes);
	if (rc < 0)
		return rc;
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < nbytes; i++) {
		unsigned b = raw[i];
		buf[2 * i] = hex[b >> 4];
		buf[2 * i + 1] = hex[b & 15];
	}
	buf[2 * nbytes] = '\0';
	return 0;
}

/* UTC calendar arithmetic (H. Hinnant's days_from_civil / civil_from_days,
 * proleptic Gregorian). gmtime_r and timegm would do, but glibc loads
 * /etc/localtime on their first use: seven system calls in every short
 * `holdfast` process, for a zone that is never used. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

void hf_copy_str(char *dst, size_t n, const char *s)
{
	if (!n)
		return;
	size_t l = strnlen(s, n - 1);
	memcpy(dst, s, l);
	dst[l] = '\0';
}

void hf_time_format(int64_t ms, char *buf, size_t n)
{
	int64_t s = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
	int frac = (int)(ms - s * 1000);
	int64_t days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
	int64_t sod = s - days * 86400, y;
	int mon, mday;
	civil_from_days(days, &y, &mon, &mday);
	int h = (int)(sod / 3600), mi = (int)(sod / 60 % 60), sec = (int)(sod % 60);
	if (y < 0 || y > 9999 || n < HF_TIME_MAX) {
		/* outside what four digits say (or a short buffer): the slow way */
		if (frac)
			snprintf(buf, n, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, mon,
				 mday, h, mi, sec, frac);
		else
			snprintf(buf, n, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, mon, mday,
				 h, mi, sec);
		return;
	}
	/* by hand: this runs in every acquisition, and stdio's padding costs
	 * more than the system calls around it */
	char *p = buf;
	p = hf_put_u64w(p, (uint64_t)y, 4);
	*p++ = '-';
	p = hf_put_u64w(p, (uint64_t)mon, 2);
	*p++ = '-';
	p = hf_put_u64w(p, (uint64_t)mday, 2);
	*p++ = 'T';
	p = hf_put_u64w(p, (uint64_t)h, 2);
	*p++ = ':';
	p = hf_put_u64w(p, (uint64_t)mi, 2);
	*p++ = ':';
	p = hf_put_u64w(p, (uint64_t)sec, 2);
	if (frac) {
		*p++ = '.';
		p = hf_put_u64w(p, (uint64_t)frac, 3);
	}
	*p++ = 'Z';
	*p = '\0';
}

static int digits(const char **p, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -EINVAL;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

int hf_time_parse(const char *s, int64_t *ret_ms)
{
	const char *p = s;
	int Y, M, D, h, m, sec;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
	    digits(&p, 2, &D) || (*p != 'T' && *p != 't' && *p != ' '))
		return -EINVAL;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
	    digits(&p, 2, &sec))
		return -EINVAL;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -EINVAL;
	int ms = 0;
	if (*p == '.' || *p == ',') {
		p++;
		int nd = 0;
		while (*p >= '0' && *p <= '9') {
			if (nd < 3)
				ms = ms * 10 + (*p - '0');
			nd++;
			p++;
		}
		if (nd == 0)
			return -EINVAL;
		for (; nd < 3; nd++)
			ms *= 10;
	}
	int64_t off_s = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om;
		if (digits(&p, 2, &oh))
			return -EINVAL;
		if (*p == ':')
			p++;
		if (digits(&p, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		off_s = sign * (oh * 3600 + om * 60);
	} else {
		return -EINVAL; /* a time without a zone is ambiguous: refuse */
	}
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p)
		return -EINVAL;
	/* like timegm: an out-of-range day (Feb 30) rolls into the next month */
	int64_t t = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec;
	*ret_ms = (t - off_s) * 1000 + ms;
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
	if (rc < 0)
		goto out;
	size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 256;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = malloc(cap + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	size_t len = 0;
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				free(buf);
				rc = -EFBIG;
				goto out;
			}
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = realloc(buf, ncap + 1);
			if (!nb) {
				free(buf);
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = hf_sys_read(fd, buf + len, cap - len);
		if (r < 0) {
			free(buf);
			rc = (int)r;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > max) {
		free(buf);
		rc = -EFBIG;
		goto out;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	if (ret_len)
		*ret_len = len;
	if (ret_st)
		*ret_st = st;
	rc = 0;
out:
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

/* U1 for all three: an unnamed temporary made in tmpdirfd, linked as
 * dirfd/name; ret_fd (may be NULL) gets the published file's descriptor. */
static int publish(int tmpdirfd, int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode, bool durable, int *ret_fd)
{
	if (ret_fd)
		*ret_fd = -1;
	int fd = hf_sys_openat(tmpdirfd, ".", O_TMPFILE | O_WRONLY, mode);
	if (fd >= 0) {
		int rc = write_all_and_sync(fd, data, len, durable);
		/* U1: linkat fails with EEXIST rather than replace. The opener
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
			*ret_fd = fd; /* U5: it pins the inode now named `name` */
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
		rc = hf_sys_linkat(tmpdirfd, tmp, dirfd, name, 0); /* U1 */
	hf_sys_unlinkat(tmpdirfd, tmp, 0);
	if (rc == 0 && ret_fd) {
		*ret_fd = fd; /* U5 */
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
		rc = hf_sys_renameat2(dirfd, tmp, dirfd, name, 0); /* U2 */
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
	rc = hf_sys_fstat(fd, &st); /* U3: 0600 at most so far */
	if (rc < 0)
		goto fail;
	s.uid = st.st_uid;
	s.gid = st.st_gid;
	uid_t want_uid = uid != (uid_t)-1 && uid != st.st_uid ? uid : (uid_t)-1;
	gid_t want_gid = gid != (gid_t)-1 && gid != st.st_gid ? gid : (gid_t)-1;
	if (want_uid != (uid_t)-1 || want_gid != (gid_t)-1) {
		rc = hf_sys_fchown(fd, want_uid, want_gid);
		if ((rc == -EPERM || rc == -EINVAL) && want_uid == (uid_t)-1) {
			s.group_dropped = true; /* U3 */
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
	rc = hf_sys_fchmod(fd, s.mode); /* U3: after the owner; whatever the umask */
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
		if (now.st_dev != expect->st_dev || now.st_ino != expect->st_ino) /* U4 */
			return -ESTALE;
		rc = hf_sys_renameat2(dirfd, s->tmp, dirfd, name, 0); /* U2 */
	} else {
		rc = hf_sys_renameat2(dirfd, s->tmp, dirfd, name, RENAME_NOREPLACE); /* U4 */
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

int hf_open_parent(const char *path, int *ret_dirfd, char *base, size_t n)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len == 0)
		return -EINVAL;
	const char *slash = memrchr(path, '/', len);
	const char *b = slash ? slash + 1 : path;
	size_t blen = len - (size_t)(b - path);
	if (blen == 0 || blen >= n || (blen == 1 && b[0] == '.') ||
	    (blen == 2 && b[0] == '.' && b[1] == '.'))
		return -EINVAL;
	memcpy(base, b, blen);
	base[blen] = '\0';
	char dir[PATH_MAX];
	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else {
		size_t dlen = (size_t)(slash - path);
		if (dlen >= sizeof dir)
			return -ENAMETOOLONG;
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
	}
	int fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	*ret_dirfd = fd;
	return 0;
}

bool hf_text_ok(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	while (*p) {
		unsigned c = *p;
		int extra;
		if (c < 0x20 || c == 0x7f)
			return false;
		if (c < 0x80)
			extra = 0;
		else if ((c & 0xe0) == 0xc0 && c >= 0xc2)
			extra = 1;
		else if ((c & 0xf0) == 0xe0)
			extra = 2;
		else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
			extra = 3;
		else
			return false;
		for (int i = 1; i <= extra; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += extra + 1;
		n += (size_t)extra + 1;
		if (n > max)
			return false;
	}
	return true;
}
