/*
 * supervise.c - a command started blocked, released once its locks are
 * held, waited for with signals forwarded (run.h). `holdfast run` and
 * `holdfast edit` start CMD this way; neither knows how.
 *
 * Steps
 * -----
 *   1. cli_child_init: block the forwarded signals (CLI_FWD_SIGNALS, unless
 *      ignored at start) and SIGCHLD; they are read from a signalfd, which
 *      is also the cancel descriptor of the waits for CMD's locks
 *      (HF_OPT_CANCEL_FD): a signal ends a library wait at once.
 *   2. cli_child_spawn: fork the child. It blocks reading the go socket; it
 *      has not run CMD.
 *   3. cli_child_go: one message - 'G', "K=V\0"..., 'E', and the locks'
 *      kernel-lock descriptors - in one sendmsg(2) on a SOCK_SEQPACKET pair;
 *      the child sets the variables, keeps the descriptors open across exec,
 *      and execs CMD (127: not found, 126: cannot run).
 *   4. cli_child_wait: wait for CMD's exit, forwarding every forwarded
 *      signal to it (except one the terminal sent to the whole foreground
 *      group, si_code SI_KERNEL: CMD got it too). The exit is seen with
 *      waitid(WNOWAIT): CMD stays a zombie.
 *   5. cli_child_reap: collect it, once the caller released its locks.
 *
 * Invariants
 * ----------
 *   (SV1) CMD never runs unless the complete go message arrived: one
 *         SOCK_SEQPACKET message, all of it or nothing. EOF or a truncated
 *         message - holdfast failed, was stopped or killed - makes the
 *         child exit without running CMD.
 *   (SV2) CMD is never collected by cli_child_wait: a zombie whose parent
 *         lives counts as alive (owner.c's liveness), so the locks that name
 *         its pid stay live until the caller releases them and reaps it.
 *   (SV3) The descriptors sent with the go message stay open in CMD across
 *         exec (their close-on-exec flag cleared in the child only).
 *   (SV4) The message is 'G', entries "K=V\0" (K not empty), 'E' - exactly
 *         what cli_go_format writes; anything else is refused whole (SV1),
 *         before a variable is set.
 *
 * Hazards
 * -------
 *   - Signals stay blocked in holdfast until it exits (SIGPIPE included, so
 *     a write to a vanished reader fails with EPIPE instead of killing it).
 *   - An orphaned CMD whose init never reaps it stays a zombie; hf_pid_start
 *     counts a zombie as gone, so its locks are reapable all the same.
 */
#include "cli.h"
#include "faults.h"
#include "run.h"
#include "sys.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const int fwd_signals[] = CLI_FWD_SIGNALS;


void cli_child_reset(struct cli_child *c)
{
	memset(c, 0, sizeof *c);
	c->pid = -1;
	c->go_wr = -1;
	c->sigfd = -1;
}

int cli_child_init(struct cli_child *c)
{
	cli_child_reset(c);
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

int cli_go_format(char *buf, size_t cap, const char *const *env, size_t nenv)
{
	size_t len = 0;
	if (cap < 2)
		return -E2BIG;
	buf[len++] = 'G';
	for (size_t i = 0; i < nenv; i++) {
		size_t l = strlen(env[i]) + 1;
		const char *eq = strchr(env[i], '=');
		if (!eq || eq == env[i])
			return -EINVAL; /* what cli_go_parse would refuse */
		if (len + l + 1 > cap)
			return -E2BIG;
		memcpy(buf + len, env[i], l);
		len += l;
	}
	buf[len++] = 'E';
	return (int)len;
}

int cli_go_parse(const char *buf, size_t len, int (*each)(const char *kv, size_t klen, void *ctx),
		 void *ctx)
{
	/* SV4: 'G', then entries "K=V\0" (K not empty, at least one '='),
	 * then 'E'; nothing else - no empty entry, no entry without its NUL */
	if (len < 2 || buf[0] != 'G' || buf[len - 1] != 'E' || (len > 2 && buf[len - 2] != '\0'))
		return -EINVAL;
	for (int pass = 0; pass < 2; pass++) {
		for (const char *p = buf + 1; p < buf + len - 1; p += strlen(p) + 1) {
			const char *eq = strchr(p, '=');
			if (!eq || eq == p)
				return -EINVAL;
			if (pass == 1 && each) {
				int rc = each(p, (size_t)(eq - p), ctx);
				if (rc < 0)
					return rc;
			}
		}
		if (!each)
			break; /* checked: all or nothing (SV1) */
	}
	return 0;
}

static int go_setenv(const char *kv, size_t klen, void *ctx)
{
	(void)ctx;
	char key[256];
	if (klen >= sizeof key)
		return 0;
	memcpy(key, kv, klen);
	key[klen] = '\0';
	setenv(key, kv + klen + 1, 1);
	return 0;
}

/* The child: wait for the go message (SV1), then become CMD. */
static void __attribute__((noreturn))
child_main(struct cli_child *c, int go_rd, char *const argv[], int stdin_fd, int stdout_fd)
{
	hf_fault_inject(NULL, NULL, 0); /* fault rules are for holdfast, not for CMD */
	char buf[CLI_GO_MAX];
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
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || cli_go_parse(buf, len, NULL, NULL) < 0)
		_exit(HF_EXIT_SOFTWARE); /* SV1: not released; CMD never runs */
	/* SV3: the locks' kernel locks go to CMD, kept across exec */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[CLI_GO_MAX_FDS];
		memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
		for (size_t k = 0; k < nfd; k++)
			hf_sys_fcntl_setfd(fds[k], 0);
	}
	cli_go_parse(buf, len, go_setenv, NULL);
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
	char buf[CLI_GO_MAX];
	if (nfds > CLI_GO_MAX_FDS)
		return -E2BIG;
	int n = cli_go_format(buf, sizeof buf, env, nenv);
	if (n < 0)
		return n;
	size_t len = (size_t)n;
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
	ssize_t w = hf_sys_sendmsg(c->go_wr, &msg, 0); /* SV1: one message, atomic */
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
		c->term_signal = si.si_code == CLD_EXITED ? 0 : si.si_status;
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
			c->term_signal = WIFEXITED(st) ? 0 : WTERMSIG(st);
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
		hf_sys_close(c->go_wr); /* SV1: EOF, the child exits */
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
		/* cannot wait any more: CMD must not outlive our locks. It is
		 * killed and its end awaited, but not collected (SV2): the
		 * caller releases first, then reaps. */
		if (!c->exited) {
			hf_sys_kill(c->pid, SIGKILL);
			siginfo_t si;
			memset(&si, 0, sizeof si);
			if (hf_sys_waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOWAIT) == 0) {
				c->exited = true;
				c->code = 128 + SIGKILL;
				c->term_signal = SIGKILL;
			}
		}
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
	cli_child_reset(c);
}

