/*
 * cmd_run.c - `holdfast run`: hold locks on behalf of a command while it runs.
 *
 *   holdfast run [--session LANE] [--lock PATH]... [--scope SPEC]... [--name NAME]
 *                [-n | -w SECS] [-E CODE] -- CMD [ARG...]
 *
 * Also the machinery `holdfast edit` shares (run.h): the blocked child, the
 * signal forwarding, the sliced lock wait, the words for a holder.
 *
 * On-disk artifacts
 * -----------------
 *   None of its own: the session lock file, the directory locks and the
 *   registry entry belong to their kinds. Each names CMD's pid as its owner.
 *
 * Steps
 * -----
 *   1. Block the forwarded signals (CLI_FWD_SIGNALS, unless ignored at start)
 *      and SIGCHLD; they are read from a signalfd.
 *   2. Fork the child. It blocks reading the go pipe; it has not run CMD.
 *   3. Acquire, ON BEHALF OF THE CHILD (owner pid = the child's pid): the
 *      session lane, then the directory locks sorted by canonical path, then
 *      the scopes (one allocation for every --scope). Waits go in slices of
 *      at most SLICE_MS; a forwarded signal between slices stops the wait.
 *   4. Send the go message - 'G', "K=V\0"..., 'E', and the kernel locks'
 *      descriptors (R8) - in one sendmsg(2) on a SOCK_SEQPACKET pair; the
 *      child sets HOLDFAST_FENCE / HOLDFAST_POD, keeps the descriptors open
 *      across exec, and execs CMD (127: not found, 126: cannot run).
 *   5. Wait for CMD's exit, forwarding every forwarded signal to it (except
 *      one the terminal sent to the whole foreground group, si_code
 *      SI_KERNEL: CMD got it too). The exit is seen with waitid(WNOWAIT):
 *      CMD stays a zombie, not yet collected.
 *   6. Release everything, in the reverse order of step 3; then collect CMD.
 *   7. Exit with CMD's status (128+N when it died of signal N).
 *
 * Invariants
 * ----------
 *   (R1) Every lock names CMD's pid as its owner, never holdfast's: the lock
 *        lives as long as CMD. A SIGKILLed holdfast leaves it held while CMD
 *        runs and reapable (dead owner) once CMD is gone - unlike
 *        dotlockfile, which records its own pid and lets a second holder in.
 *   (R2) CMD never runs before every lock is held: the child execs only after
 *        receiving the complete go message, one SOCK_SEQPACKET message (all
 *        of it or nothing). EOF or a truncated message - holdfast failed,
 *        was stopped or killed - makes the child exit without running CMD.
 *   (R3) One global order - session, directory locks by the kernel's
 *        identity of their parent directory (device, inode) and then name,
 *        scopes - so two runs never wait for each other in a cycle, however
 *        each reaches a lock (a bind mount, a symlinked parent). All or
 *        nothing: on any failure everything acquired is released first.
 *   (R4) Every path out after step 3 (CMD's exit, its death by a signal, a
 *        stop signal to holdfast) releases what was acquired.
 *   (R5) The wait never passes the deadline: each slice is min(SLICE_MS,
 *        time left), and the library's waits never sleep past theirs (W1).
 *   (R6) CMD is collected only after its locks were released: a zombie
 *        whose parent lives counts as alive (owner.c), so no acquirer reaps
 *        a lock in the instant between CMD's exit and run's release.
 *   (R7) A refusal never runs CMD, whatever -E CODE says (even 0): CMD is
 *        released only by the go message after step 3 succeeded; -E only
 *        chooses the exit code of the refusal.
 *   (R8) The kernel locks that prove the locks' owner alive (each lock
 *        directory's live_fd, the scope's live file) go to CMD with the go
 *        message (SCM_RIGHTS) and stay open in CMD across exec, and in
 *        holdfast until it releases: a judge in another pid namespace,
 *        where CMD's pid proves nothing, sees them held as long as either
 *        lives - through a SIGKILL of holdfast.
 *
 * Hazards
 * -------
 *   - SIGKILL of holdfast itself releases nothing: the directory locks and
 *     the scope stay with CMD's pid until the next acquirer proves CMD dead.
 *     The session lock is judged by age, not pid: it stays until its stale
 *     window or a release by its lane.
 *   - An orphaned CMD whose init never reaps it stays a zombie; hf_pid_start
 *     counts a zombie as gone (owner.c), so its locks are reapable all the
 *     same.
 *   - Signals stay blocked in holdfast until it exits (SIGPIPE included, so
 *     a write to a vanished reader fails with EPIPE instead of killing it).
 */
#include "cli.h"
#include "faults.h"
#include "internal.h"
#include "session.h"
#include "run.h"
#include "wait.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLICE_MS 100
/* Their fences (20 digits each) must fit the go message (R2). */
#define RUN_MAX_LOCKS 64
/* run's locks live as long as CMD, like flock(1)'s: recorded in the owner
 * record so that no acquirer judges a long CMD leaked (100 years). */
#define RUN_MAX_HOLD_MS (100LL * 365 * 86400 * 1000)
#define GO_MAX PIPE_BUF

static const int fwd_signals[] = CLI_FWD_SIGNALS;

/* --- the child ------------------------------------------------------------ */

static void child_reset(struct cli_child *c)
{
	memset(c, 0, sizeof *c);
	c->pid = -1;
	c->go_wr = -1;
	c->sigfd = -1;
}

int cli_child_init(struct cli_child *c)
{
	child_reset(c);
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < HF_ARRAY_SIZE(fwd_signals); i++) {
		struct sigaction old;
		if (hf_sys_sigaction(fwd_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue; /* ignored by whoever started us: CMD inherits that */
		sigaddset(&set, fwd_signals[i]);
	}
	/* An inherited SIG_IGN for SIGCHLD would reap the child behind our back. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	int rc = hf_sys_sigaction(SIGCHLD, &dfl, NULL);
	if (rc < 0)
		return rc;
	sigaddset(&set, SIGCHLD);
	sigset_t block = set;
	sigaddset(&block, SIGPIPE);
	rc = hf_sys_sigprocmask(SIG_BLOCK, &block, &c->oldmask);
	if (rc < 0)
		return rc;
	c->sigfd = hf_sys_signalfd(&set);
	return c->sigfd < 0 ? c->sigfd : 0;
}

/* The child: wait for the go message (R2), then become CMD. */
static void __attribute__((noreturn))
child_main(struct cli_child *c, int go_rd, char *const argv[], int stdin_fd, int stdout_fd)
{
	hf_fault_inject(NULL, NULL, 0); /* fault rules are for holdfast, not for CMD */
	char buf[GO_MAX];
	union {
		char space[CMSG_SPACE(sizeof(int) * CLI_GO_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { buf, sizeof buf };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			      .msg_controllen = sizeof ctl.space };
	/* one message (SOCK_SEQPACKET): all of it or nothing; EOF when
	 * holdfast failed, was stopped or killed */
	ssize_t r = hf_sys_recvmsg(go_rd, &msg, 0);
	size_t len = r > 0 ? (size_t)r : 0;
	if (len < 2 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || buf[0] != 'G' ||
	    buf[len - 1] != 'E' || (len > 2 && buf[len - 2] != '\0'))
		_exit(HF_EXIT_SOFTWARE); /* R2: not released; CMD never runs */
	/* R8: the locks' kernel locks go to CMD, kept across exec */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[CLI_GO_MAX_FDS];
		memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
		for (size_t k = 0; k < nfd; k++)
			hf_sys_fcntl_setfd(fds[k], 0);
	}
	for (char *p = buf + 1; p < buf + len - 1; p += strlen(p) + 1) {
		char *eq = strchr(p, '=');
		if (eq) {
			*eq = '\0';
			setenv(p, eq + 1, 1);
			*eq = '=';
		}
	}
	unsetenv("HOLDFAST_FAULTS");
	unsetenv("HOLDFAST_PAUSE_FDS");
	if ((stdin_fd >= 0 && hf_sys_dup2(stdin_fd, 0) < 0) ||
	    (stdout_fd >= 0 && hf_sys_dup2(stdout_fd, 1) < 0)) {
		cli_err("%s: cannot set up standard input/output", argv[0]);
		_exit(126);
	}
	hf_sys_sigprocmask(SIG_SETMASK, &c->oldmask, NULL);
	int rc = hf_sys_execvp(argv[0], argv);
	if (rc == -ENOENT) {
		cli_err("%s: command not found", argv[0]);
		_exit(127);
	}
	cli_err("%s: cannot run: %s", argv[0], strerror(-rc));
	_exit(126);
}

int cli_child_spawn(struct cli_child *c, char *const argv[], int stdin_fd, int stdout_fd)
{
	int p[2];
	int rc = hf_sys_socketpair(AF_UNIX, SOCK_SEQPACKET, p);
	if (rc < 0)
		return rc;
	fflush(NULL);
	/* The locks name the child's pid: let their records name CMD too. The
	 * child is born with CMD's name (set here, around the fork, so no
	 * record can be made before it has it). */
	const char *base = strrchr(argv[0], '/');
	hf_sys_set_comm(base ? base + 1 : argv[0]);
	pid_t pid = hf_sys_fork();
	if (pid < 0) {
		hf_sys_set_comm("holdfast");
		hf_sys_close(p[0]);
		hf_sys_close(p[1]);
		return pid;
	}
	if (pid == 0) {
		hf_sys_close(p[1]);
		child_main(c, p[0], argv, stdin_fd, stdout_fd);
	}
	hf_sys_set_comm("holdfast");
	hf_sys_close(p[0]);
	c->pid = pid;
	c->go_wr = p[1];
	return 0;
}

int cli_child_go(struct cli_child *c, const char *const *env, size_t nenv, const int *fds,
		 size_t nfds)
{
	char buf[GO_MAX];
	size_t len = 0;
	if (nfds > CLI_GO_MAX_FDS)
		return -E2BIG;
	buf[len++] = 'G';
	for (size_t i = 0; i < nenv; i++) {
		size_t l = strlen(env[i]) + 1;
		if (len + l + 1 > sizeof buf)
			return -E2BIG;
		memcpy(buf + len, env[i], l);
		len += l;
	}
	buf[len++] = 'E';
	union {
		char space[CMSG_SPACE(sizeof(int) * CLI_GO_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds) {
		msg.msg_control = ctl.space;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	ssize_t w = hf_sys_sendmsg(c->go_wr, &msg, 0); /* R2: one message, atomic */
	hf_sys_close(c->go_wr);
	c->go_wr = -1;
	return w < 0 ? (int)w : 0;
}

/* Has CMD exited? Seen with WNOWAIT: it stays a zombie until reaped. */
static void child_check(struct cli_child *c)
{
	if (c->exited || c->pid <= 0)
		return;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (hf_sys_waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	    si.si_pid == c->pid) {
		c->exited = true;
		c->code = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
	}
}

void cli_child_reap(struct cli_child *c)
{
	if (c->pid <= 0 || c->reaped)
		return;
	int st;
	if (hf_sys_waitpid(c->pid, &st, 0) == c->pid) {
		c->reaped = true;
		if (!c->exited) {
			c->exited = true;
			c->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
	}
}

/* Read what the signalfd holds: forward to a running CMD (forward != 0). */
static void child_signals_read(struct cli_child *c, bool forward)
{
	struct signalfd_siginfo si[8];
	for (;;) {
		ssize_t r = hf_sys_read(c->sigfd, si, sizeof si);
		if (r <= 0)
			break;
		for (size_t i = 0; i < (size_t)r / sizeof si[0]; i++) {
			int sig = (int)si[i].ssi_signo;
			if (sig == SIGCHLD) {
				child_check(c);
				continue;
			}
			c->stop_signal = sig;
			/* The terminal signals the whole foreground group: CMD has
			 * it already, a second copy could mean "force quit". */
			if (forward && !c->exited && si[i].ssi_code != SI_KERNEL)
				hf_sys_kill(c->pid, sig);
		}
	}
}

int cli_child_stop_pending(struct cli_child *c)
{
	if (c->sigfd >= 0)
		child_signals_read(c, false);
	return c->stop_signal;
}

void cli_child_abort(struct cli_child *c)
{
	if (c->go_wr >= 0) {
		hf_sys_close(c->go_wr); /* R2: EOF, the child exits */
		c->go_wr = -1;
	}
	cli_child_reap(c);
}

/* One read of fd into the growing buffer: >0 bytes read, 0 EOF, <0 error. */
static ssize_t grow_read(int fd, char **buf, size_t *len, size_t *cap)
{
	if (*cap - *len < 4096) {
		size_t ncap = *cap ? *cap * 2 : 65536;
		char *nb = realloc(*buf, ncap);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	ssize_t r = hf_sys_read(fd, *buf + *len, *cap - *len);
	if (r > 0)
		*len += (size_t)r;
	return r;
}

int cli_child_wait(struct cli_child *c, int out_fd, char **out, size_t *outlen)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	child_check(c);
	for (;;) {
		struct pollfd pf[2] = { { .fd = c->sigfd, .events = POLLIN },
					{ .fd = out_fd, .events = POLLIN } };
		/* Once CMD has exited all it wrote is in the pipe: take what is
		 * there, never waiting for leftover background processes. */
		if (c->exited && out_fd < 0)
			break;
		int n = c->exited ? hf_sys_poll(pf + 1, 1, 0) : hf_sys_poll(pf, out_fd >= 0 ? 2 : 1, -1);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			rc = n;
			break;
		}
		if (c->exited && n == 0)
			break;
		if (!c->exited && pf[0].revents)
			child_signals_read(c, true);
		if (out_fd >= 0 && pf[1].revents) {
			ssize_t r = grow_read(out_fd, &buf, &len, &cap);
			if (r == 0)
				out_fd = -1; /* EOF: only the exit is left to wait for */
			else if (r < 0) {
				rc = (int)r;
				break;
			}
		}
	}
	if (rc < 0) {
		/* cannot wait any more: CMD must not outlive our locks */
		if (!c->exited)
			hf_sys_kill(c->pid, SIGKILL);
		cli_child_reap(c);
		free(buf);
		return rc;
	}
	if (out) {
		*out = buf;
		*outlen = len;
	} else {
		free(buf);
	}
	return c->code;
}

void cli_child_done(struct cli_child *c)
{
	cli_child_reap(c);
	if (c->go_wr >= 0)
		hf_sys_close(c->go_wr);
	if (c->sigfd >= 0)
		hf_sys_close(c->sigfd);
	/* The signal mask stays: a pending SIGPIPE must not kill us on exit. */
	child_reset(c);
}

/* --- waiting options and lock acquisition ---------------------------------- */

int cli_wait_opt(struct cli_wait_opts *w, int opt, const char *arg)
{
	switch (opt) {
	case 'n':
		w->wait_ms = 0;
		return 0;
	case 'w':
		return cli_duration_arg("-w", arg, &w->wait_ms);
	case 'E': {
		char *end;
		long v = strtol(arg, &end, 10);
		if (!*arg || *end || v < 0 || v > 255) {
			cli_err("-E %s: not an exit code (0-255)", arg);
			return HF_EXIT_USAGE;
		}
		w->conflict_exit = (int)v;
		return 0;
	}
	}
	return HF_EXIT_USAGE;
}

int64_t cli_deadline(int64_t wait_ms)
{
	if (wait_ms < 0)
		return -1;
	if (wait_ms == 0)
		return 0;
	return hf_sys_mono_ns() + wait_ms * 1000000LL;
}

void cli_lock_holder(const struct hf_dirlock_info *h, char *buf, size_t n)
{
	char age[32];
	cli_format_age(h->age_ms, age, sizeof age);
	if (h->partial) {
		snprintf(buf, n, "a holder whose owner record is not complete yet (%s old)", age);
		return;
	}
	if (h->owner.pid <= 0) {
		snprintf(buf, n, "an unknown holder");
		return;
	}
	char comm[64] = "";
	if (!strcmp(h->owner.host, hf_host_name())) {
		char path[64], *s;
		snprintf(path, sizeof path, "/proc/%lld/comm", (long long)h->owner.pid);
		if (hf_read_file_at(AT_FDCWD, path, 0, 64, &s, NULL, NULL) == 0) {
			s[strcspn(s, "\n")] = '\0';
			if (hf_text_ok(s, 32))
				snprintf(comm, sizeof comm, " (%s)", s);
			free(s);
		}
	}
	snprintf(buf, n, "pid %lld%s on %s, acquired %s ago, fence %llu", (long long)h->owner.pid,
		 comm, h->owner.host[0] ? h->owner.host : "an unknown host", age,
		 (unsigned long long)h->fence);
}

static bool lock_busy(int rc)
{
	return rc == HF_EHELD || rc == HF_ETIMEDOUT || rc == HF_EBARRIER;
}

int cli_lock_acquire(struct hf_dirlock_opts *o, int64_t deadline_ns, struct cli_child *c,
		     struct hf_dirlock_info *ret)
{
	struct hf_dirlock_info holder;
	int rc;
	for (;;) {
		int64_t slice = SLICE_MS;
		if (deadline_ns == 0) {
			slice = 0;
		} else if (deadline_ns > 0) {
			int64_t left = deadline_ns - hf_sys_mono_ns();
			slice = left <= 0 ? 0 : (left + 999999) / 1000000; /* R5 */
			if (slice > SLICE_MS)
				slice = SLICE_MS;
		}
		o->wait_ms = slice;
		memset(&holder, 0, sizeof holder);
		rc = hf_dirlock_acquire(o, ret, &holder);
		if (rc == 0)
			return 0;
		if (!lock_busy(rc))
			break;
		int sig = c ? cli_child_stop_pending(c) : 0;
		if (sig) {
			cli_err("lock %s: stopped by %s while waiting", o->path, strsignal(sig));
			return 128 + sig;
		}
		if (slice == 0 || (deadline_ns > 0 && hf_sys_mono_ns() >= deadline_ns))
			break;
	}
	if (!lock_busy(rc)) {
		cli_err("lock %s: %s", o->path, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	char who[400];
	cli_lock_holder(&holder, who, sizeof who);
	if (rc == HF_EBARRIER)
		cli_err("lock %s: a claim beside it denies entry (being reaped or released); "
			"last holder: %s",
			o->path, who);
	else if (deadline_ns == 0)
		cli_err("lock %s is held by %s", o->path, who);
	else
		cli_err("lock %s: timed out waiting; held by %s", o->path, who);
	return HF_EXIT_CONFLICT; /* never 0: the caller applies -E */
}

/* --- holdfast run ----------------------------------------------------------- */

static const char run_usage[] =
	"usage: holdfast run [--session LANE] [--lock PATH]... [--scope SPEC]... [--name NAME]\n"
	"                    [-n | -w SECS] [-E CODE] -- CMD [ARG...]\n"
	"\n"
	"Hold every lock given while CMD runs, on behalf of CMD: each lock names CMD's\n"
	"pid, so it stays held while CMD runs even if holdfast itself is killed, and is\n"
	"reapable once CMD is gone. Releases everything when CMD ends (also when CMD is\n"
	"killed, and on SIGINT/SIGTERM to holdfast, which forwards them to CMD).\n"
	"\n"
	"  --session LANE   take the session lock (.session.lock of the work tree) for LANE\n"
	"  --lock PATH      a directory lock (repeatable; taken in order of canonical path)\n"
	"  --scope SPEC     PATH:MODE[:recursive] (repeatable): one scope allocation,\n"
	"                   delegated from $HOLDFAST_POD when set\n"
	"  --name NAME      the scope allocation's name (default: generated)\n"
	"  -n, --nonblock   fail at once if a lock is held\n"
	"  -w, --wait SECS  wait at most SECS (also --timeout; default: wait forever)\n"
	"  -E, --conflict-exit-code CODE   exit code on conflict or timeout (default 1)\n"
	"\n"
	"CMD gets HOLDFAST_FENCE (each --lock's fence, space-separated, in command-line\n"
	"order) and HOLDFAST_POD (the scope allocation's name).\n"
	"Exit: CMD's status (128+N if it died of signal N; 126 cannot run, 127 not found);\n"
	"1 (or -E CODE) held by another or timed out; 64 usage; 65 unreadable record;\n"
	"77 refused for safety; 70/71/73/74 internal/OS/cannot create/I-O errors.\n";

struct run_lock {
	const char *given;        /* as on the command line              */
	char canon[PATH_MAX];     /* canonical parent + final component  */
	dev_t dev;                /* the parent directory, as the kernel */
	ino_t ino;                /* knows it (R3): bind mounts, links   */
	const char *base;         /* the final component (in canon)      */
	struct hf_dirlock_info info;
	bool held;
};

/* R3: one global order of the objects the kernel says the locks are - the
 * parent directory's device and inode, then the name in it - so the same
 * lock reached through a bind mount or a symlinked parent sorts the same
 * for every run, and counts as given twice. */
static int lock_cmp(const struct run_lock *a, const struct run_lock *b)
{
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return strcmp(a->base, b->base);
}

/* Insertion sort: a handful of locks (glibc's qsort asks the kernel for the
 * memory size first). */
static void sort_locks(struct run_lock *l, size_t n)
{
	if (n < 2)
		return; /* one lock: used as given, never compared */
	for (size_t i = 1; i < n; i++) {
		struct run_lock t = l[i];
		size_t j = i;
		for (; j > 0 && lock_cmp(&l[j - 1], &t) > 0; j--)
			l[j] = l[j - 1];
		l[j] = t;
	}
	for (size_t i = 0; i < n; i++) /* base points into canon, which moved */
		l[i].base = strrchr(l[i].canon, '/') + 1;
}

/* The canonical path of a lock that may not exist yet: realpath of the
 * parent, then the final component; and the parent's identity. */
static int canon_path(struct run_lock *l)
{
	const char *path = l->given;
	char *out = l->canon;
	size_t n = sizeof l->canon;
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	const char *slash = memrchr(path, '/', len);
	const char *base = slash ? slash + 1 : path;
	size_t blen = len - (size_t)(base - path);
	if (blen == 0 || (blen == 1 && base[0] == '.') || (blen == 2 && !strncmp(base, "..", 2)))
		return -EINVAL;
	char dir[PATH_MAX], real[PATH_MAX];
	if (!slash)
		strcpy(dir, ".");
	else if (slash == path)
		strcpy(dir, "/");
	else if ((size_t)(slash - path) < sizeof dir)
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	else
		return -ENAMETOOLONG;
	int rc = hf_sys_realpath(dir, real);
	if (rc < 0)
		return rc;
	struct stat st;
	if ((rc = hf_sys_fstatat(AT_FDCWD, real, &st, 0)) < 0)
		return rc;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	if ((size_t)snprintf(out, n, "%s%s%.*s", real, strcmp(real, "/") ? "/" : "", (int)blen,
			     base) >= n)
		return -ENAMETOOLONG;
	l->base = strrchr(out, '/') + 1;
	return 0;
}

struct run_state {
	struct run_lock *locks;
	size_t nlocks;
	const char **scopes;
	size_t nscopes;
	const char *lane;
	const char *name;
	struct cli_wait_opts w;
	struct cli_child child;
	char session_path[PATH_MAX];
	struct hf_sessionlock_record session;
	bool session_held;
	char pod[HF_POD_NAME_MAX + 1];
	bool pod_held;
	int pod_fd;               /* the scope's liveness file: kept until CMD ended */
};

static void session_holder(const struct hf_sessionlock_status *st, char *buf, size_t n)
{
	char age[32];
	cli_format_age(st->age_ms, age, sizeof age);
	if (st->state == HF_SESSION_UNREADABLE)
		snprintf(buf, n, "an unreadable lock (%s)", st->reason);
	else
		snprintf(buf, n, "lane %s (pid %lld on %s, %s old%s)", st->rec.lane,
			 (long long)st->rec.pid, st->rec.host[0] ? st->rec.host : "?", age,
			 st->state == HF_SESSION_SKEW ? ", dated in the future: clock skew" : "");
}

/* Take the session lane, waiting like the directory locks (R5). */
static int run_session(struct run_state *s, int64_t deadline_ns)
{
	int rc = hf_session_default_path(s->session_path, sizeof s->session_path);
	if (rc < 0) {
		cli_err("session: cannot locate the session lock: %s", hf_strerror(rc));
		return cli_exit_for(rc);
	}
	struct hf_sessionlock_opts so = { .path = s->session_path, .lane = s->lane };
	struct hf_waiter wt;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", s->session_path);
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	if (slash)
		*slash = '\0';
	int64_t wait_ms = deadline_ns < 0 ? -1
			  : deadline_ns == 0 ? 0
					     : (deadline_ns - hf_sys_mono_ns()) / 1000000 + 1;
	hf_wait_init(&wt, slash ? (dir[0] ? dir : "/") : ".", base, wait_ms); /* W2 */
	struct hf_sessionlock_status st;
	for (;;) {
		memset(&st, 0, sizeof st);
		rc = hf_sessionlock_take(&so, &s->session, &st);
		if (rc == 0) {
			s->session_held = true;
			break;
		}
		if (rc != HF_EHELD && rc != HF_ENOTYOURS)
			break;
		int sig = cli_child_stop_pending(&s->child);
		if (sig) {
			hf_wait_done(&wt);
			cli_err("session %s: stopped by %s while waiting", s->session_path,
				strsignal(sig));
			return 128 + sig;
		}
		if (hf_wait_next(&wt) == HF_ETIMEDOUT)
			break;
	}
	hf_wait_done(&wt);
	if (rc == 0)
		return 0;
	char who[600];
	session_holder(&st, who, sizeof who);
	if (rc == HF_EHELD || rc == HF_ENOTYOURS) {
		cli_err("session %s is held by %s", s->session_path, who);
		return HF_EXIT_CONFLICT;
	}
	if (rc == HF_EUNREADABLE)
		cli_err("session %s: refused, %s", s->session_path, who);
	else
		cli_err("session %s: %s", s->session_path, hf_strerror(rc));
	return cli_exit_for(rc);
}

static void run_release(struct run_state *s)
{
	if (s->pod_held) {
		cli_scope_run_release(s->pod, s->pod_fd);
		s->pod_held = false;
		s->pod_fd = -1;
	}
	for (size_t i = s->nlocks; i-- > 0;) {
		struct run_lock *l = &s->locks[i];
		if (!l->held)
			continue;
		struct hf_dirlock_info h;
		memset(&h, 0, sizeof h);
		int rc = hf_dirlock_release(l->canon, l->info.owner.token, &h);
		hf_sys_close(l->info.live_fd); /* R8: after the release, never before */
		l->info.live_fd = -1;
		if (rc < 0) {
			char who[400];
			cli_lock_holder(&h, who, sizeof who);
			cli_err("warning: lock %s: release: %s%s%s", l->given, hf_strerror(rc),
				rc == HF_ENOTHELD ? "" : "; now held by ",
				rc == HF_ENOTHELD ? "" : who);
		}
		l->held = false;
	}
	if (s->session_held) {
		struct hf_sessionlock_opts so = { .path = s->session_path, .lane = s->lane,
					      .owner = s->session.owner };
		struct hf_sessionlock_status st;
		memset(&st, 0, sizeof st);
		int rc = hf_sessionlock_release(&so, &st);
		if (rc < 0)
			cli_err("warning: session %s: release: %s", s->session_path,
				hf_strerror(rc));
		s->session_held = false;
	}
}

/* Step 3: everything, for the child's pid, in the order of R3. */
static int run_acquire(struct run_state *s)
{
	int64_t deadline = cli_deadline(s->w.wait_ms);
	int rc;
	if (s->lane && (rc = run_session(s, deadline)) != 0)
		return rc;
	for (size_t i = 0; i < s->nlocks; i++) {
		struct run_lock *l = &s->locks[i];
		/* The lock's life is CMD's (R1): a long CMD is not a leak. */
		struct hf_dirlock_opts o = { .path = l->canon, .pid = s->child.pid,
					  .max_hold_ms = RUN_MAX_HOLD_MS };
		if ((rc = cli_lock_acquire(&o, deadline, &s->child, &l->info)) != 0)
			return rc;
		l->held = true;
	}
	if (s->nscopes) {
		rc = cli_scope_run_register(s->name, s->scopes, s->nscopes, s->child.pid, deadline,
					    &s->child, &s->pod_fd, s->pod, sizeof s->pod);
		if (rc != 0)
			return rc;
		s->pod_held = true;
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "session", required_argument, NULL, 'S' },
		{ "lock", required_argument, NULL, 'L' },
		{ "scope", required_argument, NULL, 'P' },
		{ "name", required_argument, NULL, 'N' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "wait", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "conflict-exit-code", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run_state s;
	memset(&s, 0, sizeof s);
	s.pod_fd = -1;
	child_reset(&s.child);
	s.w = (struct cli_wait_opts){ .wait_ms = -1, .conflict_exit = HF_EXIT_CONFLICT };
	s.locks = calloc((size_t)argc, sizeof *s.locks);
	s.scopes = calloc((size_t)argc, sizeof *s.scopes);
	if (!s.locks || !s.scopes) {
		cli_err("out of memory");
		return HF_EXIT_OSERR;
	}
	int code = 0, opt;
	optind = 1;
	opterr = 0;
	while (!code && (opt = getopt_long(argc, argv, "+nw:E:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			if (s.lane) {
				cli_err("run: --session given twice");
				code = HF_EXIT_USAGE;
			}
			s.lane = optarg;
			break;
		case 'L':
			if (s.nlocks == RUN_MAX_LOCKS) {
				cli_err("run: at most %d --lock", RUN_MAX_LOCKS);
				code = HF_EXIT_USAGE;
				break;
			}
			s.locks[s.nlocks++].given = optarg;
			break;
		case 'P':
			s.scopes[s.nscopes++] = optarg;
			break;
		case 'N':
			s.name = optarg;
			break;
		case 'n':
		case 'w':
		case 'E':
			code = cli_wait_opt(&s.w, opt, optarg);
			break;
		case 'h':
			fputs(run_usage, stdout);
			code = -1;
			break;
		default:
			cli_err("run: unknown option or missing argument: %s", argv[optind - 1]);
			code = HF_EXIT_USAGE;
		}
	}
	if (!code && optind >= argc) {
		cli_err("run: no command given (holdfast run [OPTIONS] -- CMD [ARG...])");
		code = HF_EXIT_USAGE;
	}
	if (!code && s.name && !s.nscopes) {
		cli_err("run: --name names the scope allocation: give --scope too");
		code = HF_EXIT_USAGE;
	}
	/* Canonical paths, one global order (R3), no lock twice. A single lock
	 * needs no order: it is used as given. */
	for (size_t i = 0; !code && i < s.nlocks; i++) {
		int rc = 0;
		if (s.nlocks == 1 && strlen(s.locks[i].given) < sizeof s.locks[i].canon)
			strcpy(s.locks[i].canon, s.locks[i].given);
		else
			rc = canon_path(&s.locks[i]);
		if (rc < 0) {
			cli_err("lock %s: %s", s.locks[i].given, hf_strerror(rc));
			code = cli_exit_for(rc);
		}
	}
	/* Fences go to CMD in command-line order: remember it before sorting. */
	const char **order = calloc(s.nlocks + 1, sizeof *order);
	if (!code) {
		for (size_t i = 0; i < s.nlocks; i++)
			order[i] = s.locks[i].given;
		sort_locks(s.locks, s.nlocks);
		for (size_t i = 1; i < s.nlocks; i++)
			if (!lock_cmp(&s.locks[i], &s.locks[i - 1])) {
				if (strcmp(s.locks[i].canon, s.locks[i - 1].canon))
					cli_err("run: lock %s given twice: %s is the same lock (the same "
						"directory, through another path)",
						s.locks[i - 1].canon, s.locks[i].canon);
				else
					cli_err("run: lock %s given twice", s.locks[i].canon);
				code = HF_EXIT_USAGE;
				break;
			}
	}
	if (code) {
		free(order);
		free(s.locks);
		free(s.scopes);
		return code < 0 ? HF_EXIT_OK : code;
	}

	int rc = cli_child_init(&s.child);
	if (rc == 0)
		rc = cli_child_spawn(&s.child, argv + optind, -1, -1);
	if (rc < 0) {
		cli_err("run: cannot start %s: %s", argv[optind], hf_strerror(rc));
		code = cli_exit_for(rc);
		goto out;
	}
	code = run_acquire(&s);
	if (code) {
		run_release(&s); /* R3: all or nothing */
		cli_child_abort(&s.child);
		/* R7: a refusal never runs CMD; -E only chooses its exit code,
		 * even when that code is 0 (flock -n -E 0: "skip quietly") */
		if (code == HF_EXIT_CONFLICT)
			code = s.w.conflict_exit;
		goto out;
	}
	hf_sys_point(HF_PT_RUN_ACQUIRED);

	/* Step 4: HOLDFAST_FENCE in command-line order, HOLDFAST_POD. */
	char fence[GO_MAX / 2] = "HOLDFAST_FENCE=", pod[HF_POD_NAME_MAX + 16];
	const char *env[2];
	size_t nenv = 0;
	if (s.nlocks) {
		size_t fl = strlen(fence);
		for (size_t k = 0; k < s.nlocks; k++)
			for (size_t i = 0; i < s.nlocks; i++)
				if (s.locks[i].given == order[k])
					fl += (size_t)snprintf(fence + fl, sizeof fence - fl,
							       "%s%llu", k ? " " : "",
							       (unsigned long long)s.locks[i].info.fence);
		env[nenv++] = fence;
	}
	if (s.pod_held) {
		snprintf(pod, sizeof pod, "HOLDFAST_POD=%s", s.pod);
		env[nenv++] = pod;
	}
	int live[RUN_MAX_LOCKS + 1];
	size_t nlive = 0;
	for (size_t i = 0; i < s.nlocks; i++)
		if (s.locks[i].info.live_fd >= 0)
			live[nlive++] = s.locks[i].info.live_fd; /* R8 */
	if (s.pod_fd >= 0)
		live[nlive++] = s.pod_fd; /* R8: the scope's live file */
	rc = cli_child_go(&s.child, env, nenv, live, nlive);
	if (rc < 0 && rc != -EPIPE) {
		cli_err("run: cannot start %s: %s", argv[optind], hf_strerror(rc));
		cli_child_abort(&s.child);
		run_release(&s);
		code = cli_exit_for(rc);
		goto out;
	}
	/* -EPIPE: the child was killed before it could run CMD; its status says so. */
	code = cli_child_wait(&s.child, -1, NULL, NULL);
	if (code < 0) {
		cli_err("run: waiting for %s: %s", argv[optind], hf_strerror(code));
		code = cli_exit_for(code);
	}
	hf_sys_point(HF_PT_RUN_EXITED);
	run_release(&s); /* R4: CMD is still a zombie: its locks are released, not reaped */
	cli_child_reap(&s.child);
out:
	cli_child_done(&s.child);
	free(order);
	free(s.locks);
	free(s.scopes);
	return code;
}
