/*
 * sys.c - the system-call seam: every kernel call holdfast makes for files
 * and processes, in one place, so that a test can fail the Nth call of a
 * kind, pause a process at a named point until a test lets it go, or kill
 * it there, without touching protocol code.
 *
 * The seam only passes each call through hf_sys_hook when one is set. The
 * fault engine that sets it (faults.c, rules from the environment) is linked
 * into the CLI and the tests, never into the installed library: a program
 * using libholdfast cannot be made to fail, pause or die by HOLDFAST_FAULTS.
 *
 * Invariants:
 *  (SY1) With no hook, a call costs its system call plus one predictable
 *        branch.
 *  (SY2) A failed close still closes the real fd (a fault loop must not leak).
 *  (SY3) Functions here never touch errno as seen by the caller's contract:
 *        results come back as -errno.
 *  (SY4) EINTR is retried where a retry is always right (open, read, write,
 *        flock, waits, dup2, getrandom, messages: HF_EINTR_RETRY, the one
 *        loop; a sleep resumes the rest), never for close (the fd may be
 *        reused at once), nor for hf_sys_flock_intr / hf_sys_fcntl_lock,
 *        whose EINTR is a deadline's timer (holdfast flock -w).
 *  (SY5) hf_sys_getpid() is getpid(2) in every process, however it was
 *        made: the pid is kept in a page the kernel wipes in a child
 *        (MADV_WIPEONFORK), so fork(2), _Fork, clone(2) without CLONE_VM
 *        and a raw fork system call all read 0 there and ask the kernel
 *        again; a page that cannot be had (no mmap, a kernel before 4.14)
 *        keeps nothing and asks every time.
 *        Hazard: a CLONE_VM child that is not a thread (vfork's,
 *        posix_spawn's, clone(CLONE_VM) by hand) shares the page: calling
 *        into the library before it execs, it would read its parent's pid,
 *        or - the page not filled yet - fill it with its own, which the
 *        parent would then keep. vfork's child may only exec or _exit and
 *        posix_spawn's calls no library code; calling holdfast from a
 *        CLONE_VM child by hand is not supported.
 */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int (*hf_sys_hook)(enum hf_point point);
int64_t hf_sys_wall_skew_ms;
int64_t hf_sys_wait_cap_ms;

static const char *const point_names[HF_PT_COUNT] = {
#define HF_CALL(id, name) [HF_PT_##id] = name,
#define HF_POINT(id, name) [HF_PT_##id] = name,
#include "points.def"
#undef HF_CALL
#undef HF_POINT
};

const char *hf_point_name(enum hf_point p)
{
	return (unsigned)p < HF_PT_COUNT ? point_names[p] : "?";
}

int hf_point_find(const char *name)
{
	for (int i = 0; i < HF_PT_COUNT; i++)
		if (i != HF_PT_CALLS_END && point_names[i] && !strcmp(point_names[i], name))
			return i;
	return -1;
}

/* 0: go on; <0: the call must fail with this code (SY1). */
static inline int pass(enum hf_point point)
{
	if (__builtin_expect(hf_sys_hook == NULL, 1))
		return 0;
	return hf_sys_hook(point);
}

void hf_sys_point(enum hf_point point)
{
	(void)pass(point);
}

int hf_sys_point_fails(enum hf_point point)
{
	return pass(point);
}

#define PASS(id)                            \
	do {                                \
		int f_ = pass(HF_PT_##id);  \
		if (f_ < 0)                 \
			return f_;          \
	} while (0)

#define NEG(expr) ((expr) < 0 ? -errno : 0)

int hf_sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	PASS(OPEN);
	int fd = HF_EINTR_RETRY(openat(dirfd, path, flags | O_CLOEXEC, mode));
	return fd < 0 ? -errno : fd;
}

int hf_sys_close(int fd)
{
	int f = pass(HF_PT_CLOSE);
	int rc = close(fd); /* SY2: the real fd is closed whatever the rule says */
	if (f < 0)
		return f;
	if (rc < 0 && errno != EINTR) /* EINTR: the fd is gone on Linux */
		return -errno;
	return 0;
}

ssize_t hf_sys_read(int fd, void *buf, size_t n)
{
	PASS(READ);
	ssize_t r = HF_EINTR_RETRY(read(fd, buf, n));
	return r < 0 ? -errno : r;
}

ssize_t hf_sys_pread(int fd, void *buf, size_t n, off_t off)
{
	PASS(READ);
	ssize_t r = HF_EINTR_RETRY(pread(fd, buf, n, off));
	return r < 0 ? -errno : r;
}

ssize_t hf_sys_write(int fd, const void *buf, size_t n)
{
	PASS(WRITE);
	const char *p = buf;
	size_t left = n;
	while (left > 0) {
		ssize_t w = HF_EINTR_RETRY(write(fd, p, left));
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		left -= (size_t)w;
	}
	return (ssize_t)n;
}

int hf_sys_ftruncate(int fd, off_t len)
{
	PASS(FTRUNCATE);
	return NEG(ftruncate(fd, len));
}

int hf_sys_fsync(int fd)
{
	PASS(FSYNC);
	return NEG(fsync(fd));
}

int hf_sys_fstat(int fd, struct stat *st)
{
	PASS(STAT);
	return NEG(fstat(fd, st));
}

int hf_sys_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	PASS(STAT);
	return NEG(fstatat(dirfd, path, st, flags));
}

int hf_sys_fchmod(int fd, mode_t mode)
{
	PASS(CHMOD);
	return NEG(fchmod(fd, mode));
}

int hf_sys_mkdirat(int dirfd, const char *path, mode_t mode)
{
	PASS(MKDIR);
	return NEG(mkdirat(dirfd, path, mode));
}

int hf_sys_unlinkat(int dirfd, const char *path, int flags)
{
	if (flags & AT_REMOVEDIR)
		PASS(RMDIR);
	else
		PASS(UNLINK);
	return NEG(unlinkat(dirfd, path, flags));
}

int hf_sys_renameat2(int odir, const char *oldp, int ndir, const char *newp, unsigned flags)
{
	PASS(RENAME);
	long rc = syscall(SYS_renameat2, odir, oldp, ndir, newp, flags);
	if (rc == 0)
		return 0;
	int e = errno;
	/* A file system that refuses RENAME_NOREPLACE (some network and FUSE
	 * file systems) says EINVAL. It is never emulated here: link + unlink
	 * would unlink the source by name, a check-then-act at a canonical
	 * name (CL2). The caller decides what is safe without the flag. */
	if ((flags & RENAME_NOREPLACE) && e == EINVAL)
		return -EOPNOTSUPP;
	return -e;
}

int hf_sys_linkat(int odir, const char *oldp, int ndir, const char *newp, int flags)
{
	PASS(LINK);
	return NEG(linkat(odir, oldp, ndir, newp, flags));
}

int hf_sys_symlinkat(const char *target, int dirfd, const char *path)
{
	PASS(SYMLINK);
	return NEG(symlinkat(target, dirfd, path));
}

ssize_t hf_sys_readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
	PASS(READLINK);
	ssize_t r = readlinkat(dirfd, path, buf, n);
	return r < 0 ? -errno : r;
}

int hf_sys_flock(int fd, int op)
{
	PASS(FLOCK);
	int rc = HF_EINTR_RETRY(flock(fd, op)); /* with LOCK_NB it never blocks */
	return rc < 0 ? -errno : 0;
}

int hf_sys_flock_intr(int fd, int op)
{
	PASS(FLOCK);
	return NEG(flock(fd, op)); /* SY4's exception: EINTR is the timer's */
}

int hf_sys_fcntl_lock(int fd, int cmd, struct flock *fl)
{
	PASS(FLOCK);
	return NEG(fcntl(fd, cmd, fl)); /* a waiting F_OFD_SETLKW: as flock_intr */
}

int hf_sys_access(const char *path, int mode)
{
	PASS(STAT);
	return NEG(access(path, mode));
}

int hf_sys_setitimer(const struct itimerval *it)
{
	PASS(TIMER);
	return NEG(setitimer(ITIMER_REAL, it, NULL));
}

ssize_t hf_sys_getdents(int fd, void *buf, size_t n)
{
	PASS(GETDENTS);
	long r = syscall(SYS_getdents64, fd, buf, n);
	return r < 0 ? -errno : r;
}

int hf_sys_pipe2(int fds[2], int flags)
{
	PASS(PIPE);
	return NEG(pipe2(fds, flags));
}

int hf_sys_dup2(int oldfd, int newfd)
{
	PASS(DUP);
	int rc = HF_EINTR_RETRY(dup2(oldfd, newfd));
	return rc < 0 ? -errno : rc;
}

/* SY5: the pid cache. pid_page: NULL not set up yet, MAP_FAILED none to
 * be had (ask every time), else a wipe-on-fork page whose first word is the
 * pid it was filled in (0: not yet, or wiped by a fork). */
static _Atomic(pid_t *) pid_page;

pid_t hf_sys_getpid(void)
{
	pid_t *page = atomic_load_explicit(&pid_page, memory_order_acquire);
	if (page == NULL) {
		pid_t *made = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (made != MAP_FAILED && madvise(made, 4096, MADV_WIPEONFORK) != 0) {
			munmap(made, 4096);
			made = MAP_FAILED; /* SY5: a page a fork keeps would lie there */
		}
		page = NULL;
		if (!atomic_compare_exchange_strong_explicit(&pid_page, &page, made, memory_order_acq_rel,
							     memory_order_acquire)) {
			if (made != MAP_FAILED) /* another thread's won */
				munmap(made, 4096);
		} else {
			page = made;
		}
	}
	if (page == MAP_FAILED)
		return getpid();
	_Atomic pid_t *slot = (_Atomic pid_t *)page;
	pid_t pid = atomic_load_explicit(slot, memory_order_relaxed);
	if (pid == 0) {
		pid = getpid();
		atomic_store_explicit(slot, pid, memory_order_relaxed);
	}
	return pid;
}

int hf_sys_kill(pid_t pid, int sig)
{
	PASS(KILL);
	return NEG(kill(pid, sig));
}

int hf_sys_getrandom(void *buf, size_t n)
{
	PASS(GETRANDOM);
	char *p = buf;
	while (n > 0) {
		ssize_t r = HF_EINTR_RETRY(getrandom(p, n, 0));
		if (r < 0)
			return -errno;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

pid_t hf_sys_fork(void)
{
	PASS(FORK);
	pid_t p = fork();
	return p < 0 ? -errno : p;
}

pid_t hf_sys_waitpid(pid_t pid, int *status, int options)
{
	PASS(WAIT);
	pid_t r = HF_EINTR_RETRY(waitpid(pid, status, options));
	return r < 0 ? -errno : r;
}

int hf_sys_execvp(const char *file, char *const argv[])
{
	PASS(EXEC);
	execvp(file, argv);
	return -errno;
}

int hf_sys_uname_host(char *buf, size_t n)
{
	PASS(UNAME);
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
	PASS(INOTIFY);
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

int hf_sys_inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	PASS(INOTIFY);
	int w = inotify_add_watch(fd, path, mask);
	return w < 0 ? -errno : w;
}

int hf_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	PASS(POLL);
	int r = poll(fds, n, timeout_ms);
	return r < 0 ? -errno : r;
}

int hf_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	PASS(SIGACTION);
	return NEG(sigaction(sig, act, old));
}

int hf_sys_realpath(const char *path, char *buf)
{
	PASS(REALPATH);
	return realpath(path, buf) ? 0 : -errno;
}

int64_t hf_sys_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + hf_sys_wall_skew_ms;
}

int64_t hf_sys_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + hf_sys_wall_skew_ms * 1000;
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
	PASS(STATFS);
	return NEG(fstatfs(fd, st));
}

ssize_t hf_sys_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	PASS(WRITE);
	ssize_t w = HF_EINTR_RETRY(pwrite(fd, buf, n, off));
	if (w < 0)
		return -errno;
	return (size_t)w == n ? w : -EIO;
}

/* ---- run/edit: signals and the file-creation mask ------------------------ */

int hf_sys_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	PASS(SIGPROCMASK);
	return NEG(sigprocmask(how, set, old));
}

int hf_sys_signalfd(const sigset_t *mask)
{
	PASS(SIGNALFD);
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
	PASS(INOTIFY);
	return NEG(inotify_rm_watch(fd, wd));
}

int hf_sys_waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	PASS(WAIT);
	int rc = HF_EINTR_RETRY(waitid(type, id, info, options));
	return rc < 0 ? -errno : 0;
}

/* --- session lock (session.c) ------------------------------------------- */

int hf_sys_getcwd(char *buf, size_t n)
{
	PASS(GETCWD);
	return getcwd(buf, n) ? 0 : -errno;
}

/* --- wait.c ---------------------------------------------------------------- */

int hf_sys_sleep_ms(int64_t ms)
{
	PASS(SLEEP);
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
	PASS(CHOWN);
	return NEG(fchown(fd, uid, gid));
}

int hf_sys_memfd_create(const char *name, unsigned flags)
{
	PASS(MEMFD);
	int fd = memfd_create(name, flags | MFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int hf_sys_add_seals(int fd, int seals)
{
	PASS(FCNTL);
	return NEG(fcntl(fd, F_ADD_SEALS, seals));
}

/* --- run/edit: the go message and the descriptors handed to CMD ---------- */
#include <sys/socket.h>

int hf_sys_socketpair(int domain, int type, int fds[2])
{
	PASS(SOCKET);
	return NEG(socketpair(domain, type | SOCK_CLOEXEC, 0, fds));
}

ssize_t hf_sys_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	PASS(WRITE);
	ssize_t w = HF_EINTR_RETRY(sendmsg(fd, msg, flags | MSG_NOSIGNAL));
	return w < 0 ? -errno : w;
}

ssize_t hf_sys_recvmsg(int fd, struct msghdr *msg, int flags)
{
	PASS(READ);
	ssize_t r = HF_EINTR_RETRY(recvmsg(fd, msg, flags));
	return r < 0 ? -errno : r;
}

int hf_sys_fcntl_setfd(int fd, int flags)
{
	PASS(FCNTL);
	return NEG(fcntl(fd, F_SETFD, flags));
}

#include <sys/prctl.h>

int hf_sys_set_comm(const char *name)
{
	PASS(PRCTL);
	char comm[16];
	snprintf(comm, sizeof comm, "%s", name);
	return NEG(prctl(PR_SET_NAME, comm, 0, 0, 0));
}

/* --- scope registry keeper (src/cli/keeper.c) ------------------------------ */

pid_t hf_sys_setsid(void)
{
	PASS(SETSID);
	pid_t p = setsid();
	return p < 0 ? -errno : p;
}

int hf_sys_chdir(const char *path)
{
	PASS(CHDIR);
	return NEG(chdir(path));
}

int hf_sys_pidfd_open(pid_t pid)
{
	PASS(PIDFD_OPEN);
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : (int)fd;
#else
	(void)pid;
	return -ENOSYS;
#endif
}

int hf_sys_mkfifoat(int dirfd, const char *path, mode_t mode)
{
	PASS(MKNOD);
	return NEG(mknodat(dirfd, path, S_IFIFO | (mode & 07777), 0));
}

int hf_sys_epoll_create(void)
{
	PASS(EPOLL);
	int fd = epoll_create1(EPOLL_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int hf_sys_epoll_ctl(int epfd, int op, int fd, uint32_t events)
{
	PASS(EPOLL);
	struct epoll_event ev = { .events = events, .data.fd = fd };
	return NEG(epoll_ctl(epfd, op, fd, &ev));
}

int hf_sys_epoll_wait(int epfd, int *fds, uint32_t *evs, int n, int timeout_ms)
{
	PASS(POLL);
	struct epoll_event ev[8];
	if (n > 8)
		n = 8;
	int r = epoll_wait(epfd, ev, n, timeout_ms);
	if (r < 0)
		return -errno;
	for (int i = 0; i < r; i++) {
		fds[i] = ev[i].data.fd;
		evs[i] = ev[i].events;
	}
	return r;
}

int hf_sys_kcmp_file(pid_t pid1, int fd1, pid_t pid2, int fd2)
{
	PASS(KCMP);
#ifdef SYS_kcmp
	long rc = syscall(SYS_kcmp, pid1, pid2, 0 /* KCMP_FILE */, (unsigned long)fd1,
			  (unsigned long)fd2);
	return rc < 0 ? -errno : (int)rc;
#else
	(void)pid1, (void)fd1, (void)pid2, (void)fd2;
	return -ENOSYS;
#endif
}

int hf_sys_madvise(void *addr, size_t len, int advice)
{
	PASS(MADVISE);
	return NEG(madvise(addr, len, advice));
}

int hf_sys_close_range(unsigned first, unsigned last)
{
	PASS(CLOSE_RANGE);
#ifdef SYS_close_range
	return NEG(syscall(SYS_close_range, first, last, 0));
#else
	(void)first;
	(void)last;
	return -ENOSYS;
#endif
}
