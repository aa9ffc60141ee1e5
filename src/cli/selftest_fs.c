/*
 * selftest_fs.c - what `holdfast selftest DIR` asks of DIR's file system and
 * of /proc before it runs any interleaving (selftest.h): each probe does the
 * very call the protocols rely on, in the selftest's scratch directory, and
 * removes what it made.
 *
 *   needed (FAIL without):  hard links (linkat: every record is published
 *     by a link, DL1/SL1), renameat2 RENAME_NOREPLACE (every claim and
 *     restore, DL4 - holdfast never emulates it), flock(2) on files and
 *     directories (fence counter, registry, kernel locks DL9), /proc start
 *     times (liveness: a pid's identity, OW1), /proc of this pid namespace
 *     (a pid read from /proc is a pid here).
 *   optional (ok, with a note, without):  O_TMPFILE (publication falls back
 *     to a named temporary + link), inotify events for DIR (waits back off
 *     instead of waking on the release).
 */
#include "selftest.h"

#include "proc.h"
#include "sys.h"
#include "text.h"

#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

static int p_tmpfile(int dfd, char *why, size_t n)
{
	int fd = hf_sys_openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return hf_why(why, n, ST_NOTE, "O_TMPFILE refused here (%s): records are published "
			   "through a named temporary + link instead", hf_strerror(fd));
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	int rc = hf_sys_write(fd, "x", 1) == 1 ? 0 : -EIO;
	if (rc == 0)
		rc = hf_sys_linkat(AT_FDCWD, p, dfd, "tmpfile", AT_SYMLINK_FOLLOW);
	hf_sys_close(fd);
	struct stat st;
	int seen = hf_sys_fstatat(dfd, "tmpfile", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size == 1;
	hf_sys_unlinkat(dfd, "tmpfile", 0);
	if (rc < 0)
		return hf_why(why, n, ST_FAIL, "an O_TMPFILE could not be linked into DIR: %s",
			   hf_strerror(rc));
	return seen ? ST_OK : hf_why(why, n, ST_FAIL, "the linked O_TMPFILE is not whole");
}

static int p_link(int dfd, char *why, size_t n)
{
	int fd = hf_sys_openat(dfd, "a", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return hf_why(why, n, ST_FAIL, "cannot create a file: %s", hf_strerror(fd));
	hf_sys_close(fd);
	int rc = hf_sys_linkat(dfd, "a", dfd, "b", 0);
	int again = rc == 0 ? hf_sys_linkat(dfd, "a", dfd, "b", 0) : 0;
	hf_sys_unlinkat(dfd, "a", 0);
	hf_sys_unlinkat(dfd, "b", 0);
	if (rc < 0)
		return hf_why(why, n, ST_FAIL, "no hard links here (%s): holdfast publishes every "
			   "record by link, it cannot work on this file system", hf_strerror(rc));
	if (again != -EEXIST)
		return hf_why(why, n, ST_FAIL, "a link over an existing name did not fail with EEXIST "
			   "(%s)", hf_strerror(again));
	return ST_OK;
}

static int p_noreplace(int dfd, char *why, size_t n)
{
	int rc = hf_sys_mkdirat(dfd, "x", 0700);
	if (rc == 0)
		rc = hf_sys_mkdirat(dfd, "y", 0700);
	if (rc < 0) {
		hf_sys_unlinkat(dfd, "x", AT_REMOVEDIR);
		return hf_why(why, n, ST_FAIL, "cannot make a directory: %s", hf_strerror(rc));
	}
	int over = hf_sys_renameat2(dfd, "x", dfd, "y", RENAME_NOREPLACE);
	int moved = over == -EEXIST ? hf_sys_renameat2(dfd, "x", dfd, "z", RENAME_NOREPLACE) : -1;
	struct stat st;
	int there = moved == 0 && hf_sys_fstatat(dfd, "z", &st, 0) == 0 && S_ISDIR(st.st_mode);
	hf_sys_unlinkat(dfd, "x", AT_REMOVEDIR);
	hf_sys_unlinkat(dfd, "y", AT_REMOVEDIR);
	hf_sys_unlinkat(dfd, "z", AT_REMOVEDIR);
	if (over == -EINVAL || over == -ENOSYS || over == -EOPNOTSUPP)
		return hf_why(why, n, ST_FAIL, "renameat2 RENAME_NOREPLACE is refused here (%s): "
			   "holdfast never emulates it", hf_strerror(over));
	if (over != -EEXIST)
		return hf_why(why, n, ST_FAIL, "RENAME_NOREPLACE over an existing directory gave %s, "
			   "not EEXIST", over == 0 ? "success" : hf_strerror(over));
	if (!there)
		return hf_why(why, n, ST_FAIL, "RENAME_NOREPLACE to a free name did not move it (%s)",
			   moved < 0 ? hf_strerror(moved) : "not found there");
	return ST_OK;
}

/* flock(2) on a file: two descriptors exclude each other; on a directory:
 * a shared lock blocks an exclusive one (the directory's kernel lock). */
static int p_flock(int dfd, char *why, size_t n)
{
	int a = hf_sys_openat(dfd, "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	int b = a >= 0 ? hf_sys_openat(dfd, "f", O_RDWR | O_CLOEXEC, 0) : -1;
	int d1 = hf_sys_openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	int d2 = hf_sys_openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	int rc = a < 0 ? a : b < 0 ? b : d1 < 0 ? d1 : d2;
	int r1 = 0, r2 = 0, r3 = 0, r4 = 0;
	if (rc >= 0) {
		r1 = hf_sys_flock(a, LOCK_EX | LOCK_NB);
		r2 = hf_sys_flock(b, LOCK_EX | LOCK_NB);
		r3 = hf_sys_flock(d1, LOCK_SH | LOCK_NB);
		r4 = hf_sys_flock(d2, LOCK_EX | LOCK_NB);
	}
	int fds[] = { a, b, d1, d2 };
	for (int i = 0; i < 4; i++)
		if (fds[i] >= 0)
			hf_sys_close(fds[i]);
	hf_sys_unlinkat(dfd, "f", 0);
	if (rc < 0)
		return hf_why(why, n, ST_FAIL, "cannot open a file or DIR: %s", hf_strerror(rc));
	if (r1 < 0 || r3 < 0)
		return hf_why(why, n, ST_FAIL, "flock(2) is refused here (%s)",
			   hf_strerror(r1 < 0 ? r1 : r3));
	if (r2 != -EWOULDBLOCK || r4 != -EWOULDBLOCK)
		return hf_why(why, n, ST_FAIL, "flock(2) does not exclude here (a second exclusive "
			   "lock gave %s): it is emulated or local to one process",
			   hf_strerror(r2 != -EWOULDBLOCK ? r2 : r4));
	return ST_OK;
}

/* An inotify watch on DIR sees a removal in it (what a wait wakes on). */
static int p_inotify(int dfd, const char *dir, char *why, size_t n)
{
	int in = hf_sys_inotify_init();
	if (in < 0)
		return hf_why(why, n, ST_NOTE, "no inotify (%s): waits back off instead of waking on "
			   "the release", hf_strerror(in));
	int rc = hf_sys_inotify_add_watch(in, dir, IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR);
	int fd = rc >= 0 ? hf_sys_openat(dfd, "w", O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : rc;
	if (fd >= 0) {
		hf_sys_close(fd);
		rc = hf_sys_unlinkat(dfd, "w", 0);
	} else {
		rc = fd;
	}
	int seen = 0;
	if (rc >= 0) {
		struct pollfd p = { .fd = in, .events = POLLIN };
		seen = hf_sys_poll(&p, 1, 2000) == 1;
	}
	hf_sys_close(in);
	if (!seen)
		return hf_why(why, n, ST_NOTE, "inotify reports no removal in DIR%s%s: waits back off "
			   "(about four wake-ups a second) instead of waking on the release",
			   rc < 0 ? ": " : "", rc < 0 ? hf_strerror(rc) : "");
	return ST_OK;
}

/* /proc gives start times: ours, and a child's differs from a later one's. */
static int p_proc(char *why, size_t n)
{
	uint64_t me = 0;
	int rc = hf_pid_start(getpid(), &me);
	if (rc < 0 || me == 0)
		return hf_why(why, n, ST_FAIL, "no start time in /proc/%d/stat (%s): no owner could "
			   "ever be proven dead", (int)getpid(), rc < 0 ? hf_strerror(rc) : "0");
	pid_t kid = hf_sys_fork();
	if (kid == 0)
		_exit(0);
	if (kid < 0)
		return hf_why(why, n, ST_FAIL, "fork: %s", hf_strerror(kid));
	uint64_t ks = 0;
	int krc = hf_pid_start(kid, &ks);
	int st;
	hf_sys_waitpid(kid, &st, 0);
	uint64_t gone = 0;
	int grc = hf_pid_start(kid, &gone);
	if (krc < 0 && krc != -ESRCH)
		return hf_why(why, n, ST_FAIL, "a child's start time cannot be read: %s",
			   hf_strerror(krc));
	if (grc != -ESRCH)
		return hf_why(why, n, ST_FAIL, "a reaped child still has a start time in /proc (%s): "
			   "/proc is not this pid namespace's", grc < 0 ? hf_strerror(grc) : "found");
	return ST_OK;
}

/* /proc is this pid namespace's: /proc/self names our pid. */
static int p_pidns(char *why, size_t n)
{
	char self[32];
	ssize_t len = hf_sys_readlinkat(AT_FDCWD, "/proc/self", self, sizeof self - 1);
	if (len < 0)
		return hf_why(why, n, ST_FAIL, "/proc/self cannot be read (%s): is /proc mounted?",
			   hf_strerror((int)len));
	self[len] = '\0';
	if (atol(self) != (long)getpid())
		return hf_why(why, n, ST_FAIL, "/proc/self is %s but this process is pid %d: /proc "
			   "belongs to another pid namespace (unshare --pid without --mount-proc?); "
			   "liveness read from it would judge the wrong processes",
			   self, (int)getpid());
	if (hf_self_pidns() == 0)
		return hf_why(why, n, ST_NOTE, "the pid namespace cannot be read: records carry "
			   "none, and a judge elsewhere relies on the kernel lock alone");
	return ST_OK;
}

int st_probe(int which, int dfd, const char *dir, char *why, size_t n)
{
	why[0] = '\0';
	switch (which) {
	case ST_P_TMPFILE: return p_tmpfile(dfd, why, n);
	case ST_P_LINK: return p_link(dfd, why, n);
	case ST_P_NOREPLACE: return p_noreplace(dfd, why, n);
	case ST_P_FLOCK: return p_flock(dfd, why, n);
	case ST_P_INOTIFY: return p_inotify(dfd, dir, why, n);
	case ST_P_PROC: return p_proc(why, n);
	case ST_P_PIDNS: return p_pidns(why, n);
	}
	return hf_why(why, n, ST_FAIL, "no such probe");
}
