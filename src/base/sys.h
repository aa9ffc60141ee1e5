/*
 * sys.h - the system-call seam: the only door from holdfast to the kernel
 * for files and processes (sys.c).
 *
 * Every call returns >= 0 on success and -errno on failure (errno itself is
 * left alone). EINTR is retried inside where a retry is always right (open,
 * read, write, flock, waitpid); close is never retried (the fd may already
 * be reused). Each call first passes its point (a kind of call, HF_PT_OPEN,
 * HF_PT_RENAME, ...: points.def), and hf_sys_point() passes a named protocol
 * point; a fault engine that set hf_sys_hook (faults.h: the CLI and the
 * tests only) may then make the call fail, pause or crash the process.
 */
#ifndef HF_SYS_H
#define HF_SYS_H

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

/* The one EINTR loop (SY4): evaluate expr (a system call returning < 0 and
 * setting errno on failure) again while it fails with EINTR; its value. */
#define HF_EINTR_RETRY(expr)                                  \
	({                                                    \
		__typeof__(expr) r_;                          \
		do                                            \
			r_ = (expr);                          \
		while (r_ < 0 && errno == EINTR);             \
		r_;                                           \
	})

/* Every point: HF_PT_<ID> for each line of points.def, the calls first. */
enum hf_point {
#define HF_CALL(id, name) HF_PT_##id,
#define HF_POINT(id, name)
#include "points.def"
	HF_PT_CALLS_END, /* not a point: the calls end here */
#undef HF_CALL
#undef HF_POINT
#define HF_CALL(id, name)
#define HF_POINT(id, name) HF_PT_##id,
#include "points.def"
#undef HF_CALL
#undef HF_POINT
	HF_PT_COUNT
};
/* The point's name in rules ("open", "dirlock.acquire.made"). */
const char *hf_point_name(enum hf_point p);
/* The point named name, or -1 (not in points.def). */
int hf_point_find(const char *name);

/* Set by a fault engine (faults.c) only: called at every point with it;
 * <0 makes a system call fail with that code. NULL: no engine. */
extern int (*hf_sys_hook)(enum hf_point point);
/* Added to every wall-clock read (a fault engine's skew:wall rule). */
extern int64_t hf_sys_wall_skew_ms;
/* The waiters' backoff cap in ms (a fault engine's cap:wait rule; 0: wait.c's
 * own, 1 s): a test sets an hour, so that a waiter wakes only on an event. */
extern int64_t hf_sys_wait_cap_ms;

int hf_sys_openat(int dirfd, const char *path, int flags, mode_t mode);
int hf_sys_close(int fd);
ssize_t hf_sys_read(int fd, void *buf, size_t n);
ssize_t hf_sys_pread(int fd, void *buf, size_t n, off_t off);
/* Writes all n bytes or fails; a short write is an error (-EIO / -ENOSPC). */
ssize_t hf_sys_write(int fd, const void *buf, size_t n);
int hf_sys_ftruncate(int fd, off_t len);
int hf_sys_fsync(int fd);
int hf_sys_fstat(int fd, struct stat *st);
int hf_sys_fstatat(int dirfd, const char *path, struct stat *st, int flags);
int hf_sys_fchmod(int fd, mode_t mode);
int hf_sys_mkdirat(int dirfd, const char *path, mode_t mode);
int hf_sys_unlinkat(int dirfd, const char *path, int flags);
/* flags: 0 or RENAME_NOREPLACE. NOREPLACE is never emulated: where the file
 * system refuses it, the call fails with -EOPNOTSUPP and moves nothing. */
int hf_sys_renameat2(int odir, const char *oldp, int ndir, const char *newp, unsigned flags);
int hf_sys_linkat(int odir, const char *oldp, int ndir, const char *newp, int flags);
int hf_sys_symlinkat(const char *target, int dirfd, const char *path);
ssize_t hf_sys_readlinkat(int dirfd, const char *path, char *buf, size_t n);
int hf_sys_flock(int fd, int op);
/* Raw getdents64 into buf; 0 at the end. */
ssize_t hf_sys_getdents(int fd, void *buf, size_t n);
int hf_sys_pipe2(int fds[2], int flags);
int hf_sys_dup2(int oldfd, int newfd);
/* getpid(2), kept per process: no system call after a process's first
 * (SY5: a child of any fork asks the kernel again). */
pid_t hf_sys_getpid(void);
int hf_sys_kill(pid_t pid, int sig);
int hf_sys_getrandom(void *buf, size_t n);
pid_t hf_sys_fork(void);
pid_t hf_sys_waitpid(pid_t pid, int *status, int options);
/* execvp; returns only on failure (-errno). */
int hf_sys_execvp(const char *file, char *const argv[]);
int hf_sys_uname_host(char *buf, size_t n);
int hf_sys_inotify_init(void);
int hf_sys_inotify_add_watch(int fd, const char *path, uint32_t mask);
int hf_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
int hf_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int hf_sys_realpath(const char *path, char *buf); /* buf: PATH_MAX */

/* Clocks (vDSO; no fault point): wall Unix ms (moved by a skew:wall rule),
 * monotonic ns, and CLOCK_BOOTTIME ms (monotonic, counts suspend, one per
 * kernel and time namespace). */
int64_t hf_sys_now_ms(void);
/* The wall clock in microseconds (with the same skew rule as now_ms). */
int64_t hf_sys_now_us(void);
int64_t hf_sys_mono_ns(void);
int64_t hf_sys_boot_ms(void);

/* A named protocol point: a place a test may pause or crash a process. */
void hf_sys_point(enum hf_point point);
/* A point where a test may make what happens there fail (a call kind that
 * is no system call: etcd_answer): 0, or the armed rule's -errno (never in
 * the installed library: no hook there). */
int hf_sys_point_fails(enum hf_point point);

/* --- directory lock (dirlock.c) ---------------------------------------- */
struct statfs;
/* fstatfs(2): the file system type decides whether a directory's link count
 * tells how many subdirectories it has. */
int hf_sys_fstatfs(int fd, struct statfs *st);
/* pwrite(2) of all n bytes at off, or an error (the fence counter). */
ssize_t hf_sys_pwrite(int fd, const void *buf, size_t n, off_t off);

/* ---- run/edit: signals and the file-creation mask ------------------------ */
int hf_sys_sigprocmask(int how, const sigset_t *set, sigset_t *old);
/* A new signalfd (CLOEXEC, NONBLOCK) for mask; read struct signalfd_siginfo. */
int hf_sys_signalfd(const sigset_t *mask);
/* The process's file-creation mask (read without changing it). */
mode_t hf_sys_umask_get(void);
/* inotify_rm_watch(2) (wait.c keeps its inotify instance between waits). */
int hf_sys_inotify_rm_watch(int fd, int wd);
/* waitid(2); with WNOWAIT a command's exit is seen while it stays a zombie
 * (its locks are released before it is collected). */
int hf_sys_waitid(idtype_t type, id_t id, siginfo_t *info, int options);

/* --- session lock (session.c) ----------------------------------------- */

/* The current directory into buf (n bytes). */
int hf_sys_getcwd(char *buf, size_t n);



/* --- wait.c -------------------------------------------------------------- */
/* Sleep ms milliseconds (EINTR resumes the rest); a point "sleep". */
int hf_sys_sleep_ms(int64_t ms);

/* --- edit ----------------------------------------------------------------- */
/* fchown(2); (uid_t)-1 / (gid_t)-1 leave that id alone. Point "chown". */
int hf_sys_fchown(int fd, uid_t uid, gid_t gid);
/* memfd_create(2), always MFD_CLOEXEC: an anonymous regular file (CMD's
 * input). Point "memfd". */
int hf_sys_memfd_create(const char *name, unsigned flags);
/* fcntl(fd, F_ADD_SEALS, seals) (a memfd made with MFD_ALLOW_SEALING).
 * Point "fcntl". */
int hf_sys_add_seals(int fd, int seals);

/* --- run/edit: the go message and the descriptors handed to CMD -------- */
struct msghdr;
/* socketpair(2), close-on-exec. */
int hf_sys_socketpair(int domain, int type, int fds[2]);
/* sendmsg(2) without SIGPIPE (MSG_NOSIGNAL) / recvmsg(2), EINTR retried;
 * fault points "write" / "read". */
ssize_t hf_sys_sendmsg(int fd, const struct msghdr *msg, int flags);
ssize_t hf_sys_recvmsg(int fd, struct msghdr *msg, int flags);
/* fcntl(fd, F_SETFD, flags): 0 keeps a descriptor across exec. */
int hf_sys_fcntl_setfd(int fd, int flags);
/* This process's command name (/proc/self/comm), truncated to 15 bytes. */
int hf_sys_set_comm(const char *name);

/* --- scope registry keeper (src/cli/keeper.c) ------------------------------ */
pid_t hf_sys_setsid(void);
int hf_sys_chdir(const char *path);
/* pidfd_open(2): a descriptor that polls readable once pid has exited;
 * -ENOSYS where the kernel has none. */
int hf_sys_pidfd_open(pid_t pid);
/* mknodat(2) of a FIFO (wait.c's queue, WT8). */
int hf_sys_mkfifoat(int dirfd, const char *path, mode_t mode);
/* epoll_create1(EPOLL_CLOEXEC) and epoll_ctl(2) (wait.c's queue, WT8). */
int hf_sys_epoll_create(void);
int hf_sys_epoll_ctl(int epfd, int op, int fd, uint32_t events);
/* epoll_wait(2) of at most n events: their fds and events into fds/evs;
 * the count, or <0 (-EINTR included). */
int hf_sys_epoll_wait(int epfd, int *fds, uint32_t *evs, int n, int timeout_ms);
/* kcmp(2) KCMP_FILE: 0 when descriptor fd1 of pid1 and fd2 of pid2 are the
 * same open file description, 1 or 2 when not (the kernel's order), -errno
 * (-ENOSYS without CONFIG_KCMP, -EPERM without ptrace access, -EBADF). */
int hf_sys_kcmp_file(pid_t pid1, int fd1, pid_t pid2, int fd2);
/* close_range(2) without flags: close every fd in [first, last]. */
int hf_sys_close_range(unsigned first, unsigned last);
/* madvise(2): advice for [addr, addr + len) (the keeper gives back its
 * dead stack pages, MADV_DONTNEED). -ENOMEM when part of it is unmapped. */
int hf_sys_madvise(void *addr, size_t len, int advice);
/* flock(2) that may block and is NOT retried on EINTR: a timer's signal
 * ends the wait with -EINTR (holdfast flock -w; FK4). */
int hf_sys_flock_intr(int fd, int op);
/* fcntl(2) with an open-file-description lock command (F_OFD_SETLK,
 * F_OFD_SETLKW, F_OFD_GETLK); F_OFD_SETLKW is not retried on EINTR. */
struct flock;
int hf_sys_fcntl_lock(int fd, int cmd, struct flock *fl);
/* access(2) (the real ids). */
int hf_sys_access(const char *path, int mode);
/* setitimer(2) on ITIMER_REAL (holdfast flock -w's deadline). */
struct itimerval;
int hf_sys_setitimer(const struct itimerval *it);

#endif
