/*
 * sys.c - every kernel call libholdfast makes for files and processes.
 *
 * Why one file: tests must be able to fail the Nth call of a kind, pause a
 * process at a named point until a test lets it go, or kill it there, without
 * touching protocol code (SQLite's os_unix.c syscall table and test_syscall.c
 * are the model). The rule grammar is in sys.h.
 *
 * Invariants:
 *  (S1) With no rule armed, a call costs its syscall plus one branch.
 *  (S2) A rule counts only the hits of its own point, from the moment it was
 *       armed; "*" counts system calls only, never named protocol points, so a
 *       crash schedule "crash:*:N" is stable against new named points.
 *  (S3) A failed close still closes the real fd (a fault loop must not leak).
 *  (S4) Functions here never touch errno as seen by the caller's contract:
 *       results come back as -errno.
 */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

enum { RULE_FAIL = 1, RULE_PAUSE, RULE_CRASH, RULE_SKEW };

struct rule {
	int kind;
	char point[64];
	unsigned long target;  /* fire at this hit                       */
	unsigned long hits;
	int err;
	int persist;
	int64_t skew_ms;       /* RULE_SKEW                             */
};

#define MAX_RULES 16
static struct rule rules[MAX_RULES];
static int nrules;
static int armed = -1;        /* -1: environment not read yet */
static int64_t wall_skew_ms;  /* skew:wall:MS */
static int notify_fd = -1, go_fd = -1;

static const struct {
	const char *name;
	int value;
} errnames[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EINTR", EINTR }, { "EIO", EIO },
	{ "EBADF", EBADF }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM }, { "EACCES", EACCES },
	{ "EBUSY", EBUSY }, { "EEXIST", EEXIST }, { "EXDEV", EXDEV }, { "ENOTDIR", ENOTDIR },
	{ "EISDIR", EISDIR }, { "EINVAL", EINVAL }, { "EMFILE", EMFILE }, { "ENOSPC", ENOSPC },
	{ "EROFS", EROFS }, { "EMLINK", EMLINK }, { "ENAMETOOLONG", ENAMETOOLONG },
	{ "ENOSYS", ENOSYS }, { "ENOTEMPTY", ENOTEMPTY }, { "ELOOP", ELOOP },
	{ "ESTALE", ESTALE }, { "EDQUOT", EDQUOT }, { "ESRCH", ESRCH }, { "ECHILD", ECHILD },
	{ "EOPNOTSUPP", EOPNOTSUPP },
};

static int parse_errno(const char *s)
{
	for (size_t i = 0; i < sizeof errnames / sizeof errnames[0]; i++)
		if (!strcmp(s, errnames[i].name))
			return errnames[i].value;
	char *end;
	long v = strtol(s, &end, 10);
	if (*s && !*end && v > 0 && v < 4096)
		return (int)v;
	return 0;
}

/* One rule "kind:point[:n[:errno[:persist]]]"; 0 or -EINVAL. */
static int parse_rule(char *s, struct rule *r)
{
	char *f[5] = { 0 };
	int nf = 0;
	for (char *p = s; nf < 5;) {
		f[nf++] = p;
		p = strchr(p, ':');
		if (!p)
			break;
		*p++ = '\0';
	}
	memset(r, 0, sizeof *r);
	r->target = 1;
	if (nf < 2 || !*f[1] || strlen(f[1]) >= sizeof r->point)
		return -EINVAL;
	if (!strcmp(f[0], "fail"))
		r->kind = RULE_FAIL;
	else if (!strcmp(f[0], "pause"))
		r->kind = RULE_PAUSE;
	else if (!strcmp(f[0], "crash"))
		r->kind = RULE_CRASH;
	else if (!strcmp(f[0], "skew"))
		r->kind = RULE_SKEW;
	else
		return -EINVAL;
	strcpy(r->point, f[1]);
	if (r->kind == RULE_SKEW) {
		/* skew:wall:MS, MS signed: the rule's "errno" slot holds nothing */
		char *end;
		if (strcmp(f[1], "wall") || nf != 3 || !*f[2])
			return -EINVAL;
		errno = 0;
		long long ms = strtoll(f[2], &end, 10);
		if (*end || errno || ms > 100LL * 365 * 86400000 || ms < -100LL * 365 * 86400000)
			return -EINVAL;
		r->skew_ms = ms;
		return 0;
	}
	if (nf >= 3 && *f[2]) {
		char *end;
		unsigned long n = strtoul(f[2], &end, 10);
		if (*end || n == 0)
			return -EINVAL;
		r->target = n;
	}
	if (r->kind == RULE_FAIL) {
		if (nf < 4 || !(r->err = parse_errno(f[3])))
			return -EINVAL;
		if (nf == 5) {
			if (strcmp(f[4], "persist"))
				return -EINVAL;
			r->persist = 1;
		}
	} else if (nf > 3) {
		return -EINVAL;
	}
	return 0;
}

int hf_sys_inject(const char *spec)
{
	struct rule tmp[MAX_RULES];
	int n = 0;
	if (spec && *spec) {
		char buf[1024];
		if (strlen(spec) >= sizeof buf)
			return -EINVAL;
		strcpy(buf, spec);
		char *save = NULL;
		for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			if (!*tok)
				continue;
			if (n == MAX_RULES || parse_rule(tok, &tmp[n]) < 0)
				return -EINVAL;
			n++;
		}
	}
	/* skew rules are not counted hits: they set the offset once */
	int64_t skew = 0;
	int w = 0;
	for (int i = 0; i < n; i++) {
		if (tmp[i].kind == RULE_SKEW)
			skew += tmp[i].skew_ms;
		else
			tmp[w++] = tmp[i];
	}
	memcpy(rules, tmp, sizeof(struct rule) * (size_t)w);
	nrules = w;
	wall_skew_ms = skew;
	armed = w > 0;
	return 0;
}

void hf_sys_pause_fds(int nfd, int gfd)
{
	notify_fd = nfd;
	go_fd = gfd;
}

static void load_env(void)
{
	const char *fds = getenv("HOLDFAST_PAUSE_FDS");
	if (fds) {
		int a, b;
		if (sscanf(fds, "%d,%d", &a, &b) == 2)
			hf_sys_pause_fds(a, b);
	}
	/* A bad rule in the environment arms nothing (hf_sys_inject keeps the
	 * old, empty table); the test that set it sees its rule never fire. */
	armed = 0;
	const char *spec = getenv("HOLDFAST_FAULTS");
	if (spec && hf_sys_inject(spec) < 0)
		armed = 0;
}

static void do_pause(const char *point)
{
	if (notify_fd >= 0) {
		char line[80];
		int len = snprintf(line, sizeof line, "%s\n", point);
		ssize_t w;
		do
			w = write(notify_fd, line, (size_t)len);
		while (w < 0 && errno == EINTR);
	}
	if (go_fd >= 0) {
		char c;
		ssize_t r;
		do
			r = read(go_fd, &c, 1);
		while (r < 0 && errno == EINTR);
	}
}

/* 0: go on; <0: the call must fail with this code. */
static int pass(const char *point, int is_call)
{
	if (__builtin_expect(armed == 0, 1))
		return 0;
	if (armed < 0) {
		load_env();
		if (!armed)
			return 0;
	}
	int rc = 0;
	for (int i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];
		int match = !strcmp(r->point, point) || (is_call && !strcmp(r->point, "*"));
		if (!match)
			continue;
		r->hits++;
		int fire = r->hits == r->target || (r->persist && r->hits > r->target);
		if (!fire)
			continue;
		switch (r->kind) {
		case RULE_FAIL:
			if (!rc)
				rc = -r->err;
			break;
		case RULE_PAUSE:
			do_pause(point);
			break;
		case RULE_CRASH:
			kill(getpid(), SIGKILL);
			for (;;)
				pause();
		}
	}
	return rc;
}

void hf_sys_point(const char *name)
{
	(void)pass(name, 0);
}

#define PASS(name)                          \
	do {                                \
		int f_ = pass(name, 1);     \
		if (f_ < 0)                 \
			return f_;          \
	} while (0)

#define NEG(expr) ((expr) < 0 ? -errno : 0)

int hf_sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	PASS("open");
	int fd;
	do
		fd = openat(dirfd, path, flags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

int hf_sys_close(int fd)
{
	int f = pass("close", 1);
	int rc = close(fd); /* S3: the real fd is closed whatever the rule says */
	if (f < 0)
		return f;
	if (rc < 0 && errno != EINTR) /* EINTR: the fd is gone on Linux */
		return -errno;
	return 0;
}

ssize_t hf_sys_read(int fd, void *buf, size_t n)
{
	PASS("read");
	ssize_t r;
	do
		r = read(fd, buf, n);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

ssize_t hf_sys_pread(int fd, void *buf, size_t n, off_t off)
{
	PASS("read");
	ssize_t r;
	do
		r = pread(fd, buf, n, off);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

ssize_t hf_sys_write(int fd, const void *buf, size_t n)
{
	PASS("write");
	const char *p = buf;
	size_t left = n;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		left -= (size_t)w;
	}
	return (ssize_t)n;
}

int hf_sys_ftruncate(int fd, off_t len)
{
	PASS("ftruncate");
	return NEG(ftruncate(fd, len));
}

int hf_sys_fsync(int fd)
{
	PASS("fsync");
	return NEG(fsync(fd));
}

int hf_sys_fstat(int fd, struct stat *st)
{
	PASS("stat");
	return NEG(fstat(fd, st));
}

int hf_sys_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	PASS("stat");
	return NEG(fstatat(dirfd, path, st, flags));
}

int hf_sys_fchmod(int fd, mode_t mode)
{
	PASS("chmod");
	return NEG(fchmod(fd, mode));
}

int hf_sys_mkdirat(int dirfd, const char *path, mode_t mode)
{
	PASS("mkdir");
	return NEG(mkdirat(dirfd, path, mode));
}

int hf_sys_unlinkat(int dirfd, const char *path, int flags)
{
	PASS(flags & AT_REMOVEDIR ? "rmdir" : "unlink");
	return NEG(unlinkat(dirfd, path, flags));
}

int hf_sys_renameat2(int odir, const char *oldp, int ndir, const char *newp, unsigned flags)
{
	PASS("rename");
	long rc = syscall(SYS_renameat2, odir, oldp, ndir, newp, flags);
	if (rc == 0)
		return 0;
	int e = errno;
	/* A file system that refuses RENAME_NOREPLACE (some network and FUSE
	 * file systems) says EINVAL. It is never emulated here: link + unlink
	 * would unlink the source by name, a check-then-act at a canonical
	 * name (C2). The caller decides what is safe without the flag. */
	if ((flags & RENAME_NOREPLACE) && e == EINVAL)
		return -EOPNOTSUPP;
	return -e;
}

int hf_sys_linkat(int odir, const char *oldp, int ndir, const char *newp, int flags)
{
	PASS("link");
	return NEG(linkat(odir, oldp, ndir, newp, flags));
}

int hf_sys_symlinkat(const char *target, int dirfd, const char *path)
{
	PASS("symlink");
	return NEG(symlinkat(target, dirfd, path));
}

ssize_t hf_sys_readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
	PASS("readlink");
	ssize_t r = readlinkat(dirfd, path, buf, n);
	return r < 0 ? -errno : r;
}

int hf_sys_flock(int fd, int op)
{
	PASS("flock");
	int rc;
	do
		rc = flock(fd, op);
	while (rc < 0 && errno == EINTR && !(op & LOCK_NB));
	return rc < 0 ? -errno : 0;
}

ssize_t hf_sys_getdents(int fd, void *buf, size_t n)
{
	PASS("getdents");
	long r = syscall(SYS_getdents64, fd, buf, n);
	return r < 0 ? -errno : r;
}

int hf_sys_pipe2(int fds[2], int flags)
{
	PASS("pipe");
	return NEG(pipe2(fds, flags));
}

int hf_sys_dup2(int oldfd, int newfd)
{
	PASS("dup");
	int rc;
	do
		rc = dup2(oldfd, newfd);
	while (rc < 0 && errno == EINTR);
	return rc < 0 ? -errno : rc;
}

int hf_sys_kill(pid_t pid, int sig)
{
	PASS("kill");
	return NEG(kill(pid, sig));
}

int hf_sys_getrandom(void *buf, size_t n)
{
	PASS("getrandom");
	char *p = buf;
	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

pid_t hf_sys_fork(void)
{
	PASS("fork");
	pid_t p = fork();
	return p < 0 ? -errno : p;
}

pid_t hf_sys_waitpid(pid_t pid, int *status, int options)
{
	PASS("wait");
	pid_t r;
	do
		r = waitpid(pid, status, options);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int hf_sys_execvp(const char *file, char *const argv[])
{
	PASS("exec");
	execvp(file, argv);
	return -errno;
}

int hf_sys_uname_host(char *buf, size_t n)
{
	PASS("uname");
	struct utsname u;
	if (uname(&u) < 0)
		return -errno;
	if (strlen(u.nodename) >= n)
		return -ENAMETOOLONG;
	strcpy(buf, u.nodename);
	return 0;
}

int hf_sys_inotify_init(void)
{
	PASS("inotify");
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

int hf_sys_inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	PASS("inotify");
	int w = inotify_add_watch(fd, path, mask);
	return w < 0 ? -errno : w;
}

int hf_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	PASS("poll");
	int r = poll(fds, n, timeout_ms);
	return r < 0 ? -errno : r;
}

int hf_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	PASS("sigaction");
	return NEG(sigaction(sig, act, old));
}

int hf_sys_realpath(const char *path, char *buf)
{
	PASS("realpath");
	return realpath(path, buf) ? 0 : -errno;
}

int64_t hf_sys_now_ms(void)
{
	if (__builtin_expect(armed < 0, 0))
		load_env(); /* a skew rule from the environment counts from the first read */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + wall_skew_ms;
}

int64_t hf_sys_boot_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t hf_sys_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* --- directory lock (dirlock.c) ------------------------------------------ */
#include <sys/vfs.h>

int hf_sys_fstatfs(int fd, struct statfs *st)
{
	PASS("statfs");
	return NEG(fstatfs(fd, st));
}

ssize_t hf_sys_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	PASS("write");
	ssize_t w;
	do
		w = pwrite(fd, buf, n, off);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	return (size_t)w == n ? w : -EIO;
}

/* ---- run/edit: signals and the file-creation mask ------------------------ */

int hf_sys_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	PASS("sigprocmask");
	return NEG(sigprocmask(how, set, old));
}

int hf_sys_signalfd(const sigset_t *mask)
{
	PASS("signalfd");
	int fd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

mode_t hf_sys_umask_get(void)
{
	mode_t m = umask(022); /* no fault point: cannot fail */
	umask(m);
	return m;
}

int hf_sys_inotify_rm_watch(int fd, int wd)
{
	PASS("inotify");
	return NEG(inotify_rm_watch(fd, wd));
}

int hf_sys_waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	PASS("wait");
	int rc;
	do
		rc = waitid(type, id, info, options);
	while (rc < 0 && errno == EINTR);
	return rc < 0 ? -errno : 0;
}

/* --- session lock (session.c) ------------------------------------------- */

int hf_sys_getcwd(char *buf, size_t n)
{
	PASS("getcwd");
	return getcwd(buf, n) ? 0 : -errno;
}

/* --- wait.c ---------------------------------------------------------------- */

int hf_sys_sleep_ms(int64_t ms)
{
	PASS("sleep");
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* --- edit: the replacement's owner, CMD's input ------------------------------ */

int hf_sys_fchown(int fd, uid_t uid, gid_t gid)
{
	PASS("chown");
	return NEG(fchown(fd, uid, gid));
}

int hf_sys_memfd_create(const char *name, unsigned flags)
{
	PASS("memfd");
	int fd = memfd_create(name, flags | MFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int hf_sys_add_seals(int fd, int seals)
{
	PASS("fcntl");
	return NEG(fcntl(fd, F_ADD_SEALS, seals));
}

/* --- run/edit: the go message and the descriptors handed to CMD ---------- */
#include <sys/socket.h>

int hf_sys_socketpair(int domain, int type, int fds[2])
{
	PASS("socket");
	return NEG(socketpair(domain, type | SOCK_CLOEXEC, 0, fds));
}

ssize_t hf_sys_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	PASS("write");
	ssize_t w;
	do
		w = sendmsg(fd, msg, flags | MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w < 0 ? -errno : w;
}

ssize_t hf_sys_recvmsg(int fd, struct msghdr *msg, int flags)
{
	PASS("read");
	ssize_t r;
	do
		r = recvmsg(fd, msg, flags);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int hf_sys_fcntl_setfd(int fd, int flags)
{
	PASS("fcntl");
	return NEG(fcntl(fd, F_SETFD, flags));
}

#include <sys/prctl.h>

int hf_sys_set_comm(const char *name)
{
	PASS("prctl");
	char comm[16];
	snprintf(comm, sizeof comm, "%s", name);
	return NEG(prctl(PR_SET_NAME, comm, 0, 0, 0));
}

/* --- scope registry keeper (src/cli/keeper.c) ------------------------------ */

pid_t hf_sys_setsid(void)
{
	PASS("setsid");
	pid_t p = setsid();
	return p < 0 ? -errno : p;
}

int hf_sys_chdir(const char *path)
{
	PASS("chdir");
	return NEG(chdir(path));
}

int hf_sys_pidfd_open(pid_t pid)
{
	PASS("pidfd_open");
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : (int)fd;
#else
	(void)pid;
	return -ENOSYS;
#endif
}

int hf_sys_close_range(unsigned first, unsigned last)
{
	PASS("close_range");
#ifdef SYS_close_range
	return NEG(syscall(SYS_close_range, first, last, 0));
#else
	(void)first;
	(void)last;
	return -ENOSYS;
#endif
}
