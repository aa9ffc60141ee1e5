/*
 * owner_find.c - whose life a lock or scope taken from the shell belongs to.
 *
 * `holdfast lock acquire L` and `holdfast scope register NAME SPEC` exit at
 * once: the lock must belong to the script that ran the command, never to
 * holdfast itself nor to a process that exists only to run that one line.
 * Without --pid the owner is found by walking up from holdfast's parent.
 * The rule cannot know which process runs the caller's next step, so where
 * it guesses it guesses upwards: the lock lives while ANY process from
 * holdfast's parent up to the owner lives (O5), never only the nearest.
 *
 *   (O1) A shell that is a fork-without-exec copy of its own parent is a
 *        subshell - `x=$(holdfast lock acquire L 2>&1)`, `$(… || echo x)`,
 *        a function run in `$(f)`, a pipeline element, `( … ) &`: it may
 *        exit right after the line, or outlive its parent. Skipped. A copy
 *        is recognised by having the same executable and the same command
 *        line as its parent (fork copies both; exec replaces both).
 *   (O2) A wrapper that forks the command and waits for it - timeout, time,
 *        flock, sudo, doas, runuser, su, chronic, unbuffer, strace, ltrace,
 *        xargs, find (-exec), parallel, watch, holdfast (run) - lives exactly
 *        as long as the line. Skipped. (env, nice, nohup, ionice, chrt,
 *        taskset, stdbuf, setpriv exec the command in place, so they are
 *        never a parent; they are listed too, for the forms that fork.)
 *   (O4) A shell given its commands with -c (`sh -c LINE`, `bash -lc
 *        LINE`) is one line of its caller: make runs each recipe line so,
 *        Python's subprocess(shell=True), Node's exec*, an agent's shell tool,
 *        tmux's run-shell, cron. Its caller runs the next step. Skipped.
 *   (O3) The first process that is none of these is the owner. Reaching the
 *        machine's init (pid 1 of the initial pid namespace: it never ends),
 *        or a parent outside our pid namespace (ppid 0), before an owner:
 *        the topmost skipped process that is a shell (O1, O4) is the owner
 *        (`setsid sh -c 'holdfast lock acquire L; work'`), said in a warning;
 *        none (only wrappers): -ESRCH, and the caller says to pass --pid.
 *        The init of another pid namespace (a container's entrypoint,
 *        `unshare --pid --fork sh`) ends with its namespace: it is an owner
 *        like any other, even a `sh -c`.
 *   (O5) Every process skipped on the way (the chain, nearest first, at most
 *        HF_OWNER_CHAIN_MAX) holds the lock too (owner.c, OW5), and the
 *        keeper watches them all: a subshell that outlives its script, or a
 *        `sh -c` line whose caller is gone, keeps the lock until it ends.
 *        Past HF_OWNER_CHAIN_MAX the farther ones are left out (the owner
 *        always counts).
 *
 * For a lock that stands for an open descriptor (`holdfast flock FD`, the
 * flock(1) idiom `exec 9>L; flock -n 9` or `( flock -n 9; ... ) 9>L`):
 *
 *   (OD1) The owner is the topmost ancestor of holdfast (below the
 *         machine's init, inside our pid namespace) that has the
 *         descriptor's file open: the process that opened it for the lock
 *         (a redirection's subshell or the script), which holds it longest -
 *         flock(2)'s lock lasts as long as the open file does. None but
 *         holdfast itself (a shell that exec'd `holdfast flock 9` as its
 *         last command): -ENOENT, the lock ends with holdfast.
 *   (OD2) "Has it open" means the same open file description as
 *         holdfast's descriptor (kcmp KCMP_FILE): a descendant's separate
 *         open of the same file is another flock(2) lock, never the
 *         ancestor's. Where kcmp cannot tell, the same device and inode.
 *
 * Erring upwards is safe: an ancestor lives at least as long as the line,
 * so the lock can only outlive the script (until the ancestor exits), never
 * be freed while the script still believes it holds it. --pid PID is the
 * explicit way and is never second-guessed.
 */
#include "cli.h"

#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_HOPS 64

static const char *const shells[] = {
	"sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh", "busybox",
};

static const char *const wrappers[] = {
	"timeout", "time", "flock", "sudo", "doas", "runuser", "su", "chronic", "unbuffer",
	"strace", "ltrace", "holdfast", "env", "nice", "nohup", "ionice", "chrt", "taskset",
	"stdbuf", "setpriv", "xargs", "find", "parallel", "watch", "setsid",
};

static bool in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return true;
	return false;
}

struct proc {
	pid_t pid, ppid;
	char comm[HF_COMM_MAX + 1];
	char exe[4096];        /* readlink of /proc/PID/exe; "" when not ours to read */
	char *cmdline;         /* malloc'd, NUL-separated; NULL when unreadable */
	size_t cmdlen;
};

static void proc_free(struct proc *p)
{
	free(p->cmdline);
	p->cmdline = NULL;
}

/* Read what O1-O3 need about pid. 0, or -ESRCH when it is gone. */
static int proc_read(pid_t pid, struct proc *p)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = hf_sys_openat(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return -ESRCH;
	ssize_t n = hf_sys_read(fd, buf, sizeof buf - 1);
	hf_sys_close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	if (!open || !close || close < open || close[1] != ' ')
		return -ESRCH;
	size_t cl = (size_t)(close - open - 1);
	if (cl > HF_COMM_MAX)
		cl = HF_COMM_MAX;
	memcpy(p->comm, open + 1, cl);
	p->comm[cl] = '\0';
	/* " S ppid ..." */
	p->ppid = (pid_t)strtol(close + 4, NULL, 10);
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	ssize_t l = hf_sys_readlinkat(AT_FDCWD, path, p->exe, sizeof p->exe - 1);
	p->exe[l > 0 ? l : 0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if (hf_read_file_at(AT_FDCWD, path, O_NONBLOCK | O_NOCTTY, 1 << 20, &p->cmdline, &p->cmdlen,
			    NULL) < 0)
		p->cmdline = NULL;
	return 0;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* O2: by the executable's name, or, for a multi-call binary (busybox) or
 * an executable we may not read, by the command name. */
static bool is_wrapper(const struct proc *p)
{
	const char *exe = p->exe[0] ? base_of(p->exe) : "";
	if (exe[0] && strcmp(exe, "busybox") != 0)
		return in(exe, wrappers, HF_ARRAY_SIZE(wrappers));
	return in(p->comm, wrappers, HF_ARRAY_SIZE(wrappers));
}

static bool is_shell(const struct proc *p)
{
	const char *exe = p->exe[0] ? base_of(p->exe) : p->comm;
	return in(exe, shells, HF_ARRAY_SIZE(shells));
}

/* O1: the same executable and the same command line as its parent. */
static bool is_fork_copy(const struct proc *p, const struct proc *parent)
{
	return p->exe[0] && !strcmp(p->exe, parent->exe) && p->cmdline && parent->cmdline &&
	       p->cmdlen == parent->cmdlen && !memcmp(p->cmdline, parent->cmdline, p->cmdlen);
}

/* The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO). */
#define INIT_PIDNS 0xEFFFFFFCULL

/* O4: a shell whose command line gives it its commands with -c: an option
 * word before the first operand that is "-c" or a cluster holding 'c'
 * ("-ec", "-lc"); "-o NAME" / "+o NAME" / "-O NAME" take the next word. */
static bool is_dash_c(const struct proc *p)
{
	if (!p->cmdline)
		return false;
	const char *a = p->cmdline, *end = p->cmdline + p->cmdlen;
	a += strnlen(a, (size_t)(end - a)) + 1; /* argv[0] */
	while (a < end) {
		size_t l = strnlen(a, (size_t)(end - a));
		if ((a[0] != '-' && a[0] != '+') || l < 2 || !strcmp(a, "--"))
			return false; /* the first operand: a script, or nothing */
		bool takes_arg = !strcmp(a, "-o") || !strcmp(a, "+o") || !strcmp(a, "-O") ||
				 !strcmp(a, "+O");
		if (a[0] == '-' && a[1] != '-' && memchr(a + 1, 'c', l - 1))
			return true;
		a += l + 1;
		if (takes_arg && a < end)
			a += strnlen(a, (size_t)(end - a)) + 1;
	}
	return false;
}

int cli_owner_find(struct cli_owner *ret)
{
	pid_t pid = getppid();
	struct proc p, up;
	bool host = hf_self_pidns() == INIT_PIDNS;
	struct cli_owner o;
	memset(&o, 0, sizeof o);
	pid_t top_shell = 0; /* O3: the topmost skipped shell (O1, O4) */
	char top_comm[HF_COMM_MAX + 1] = "";
	for (int hop = 0; hop < MAX_HOPS; hop++) {
		if (pid <= 0 || (pid == 1 && host) || proc_read(pid, &p) < 0)
			break; /* O3: the machine's init, outside our namespace, or gone */
		bool ns_init = pid == 1; /* the init of our (not the initial) namespace */
		bool skip = !ns_init && is_wrapper(&p); /* O2 */
		bool shell = false;
		if (!skip && !ns_init && is_shell(&p)) {
			shell = skip = is_dash_c(&p); /* O4 */
			if (!skip && p.ppid > 1 && proc_read(p.ppid, &up) == 0) {
				shell = skip = is_fork_copy(&p, &up); /* O1 */
				proc_free(&up);
			}
		}
		if (!skip) { /* O3 */
			o.pid = pid;
			snprintf(o.comm, sizeof o.comm, "%s", p.comm);
			proc_free(&p);
			*ret = o;
			return 0;
		}
		if (o.nchain < HF_ARRAY_SIZE(o.chain))
			o.chain[o.nchain++] = pid; /* O5: nearest first */
		if (shell) {
			top_shell = pid;
			snprintf(top_comm, sizeof top_comm, "%s", p.comm);
		}
		pid = p.ppid;
		proc_free(&p);
	}
	if (!top_shell)
		return -ESRCH; /* O3: only wrappers between holdfast and init */
	/* O3: the topmost one-line shell owns it, the chain below it too */
	o.pid = top_shell;
	snprintf(o.comm, sizeof o.comm, "%s", top_comm);
	o.one_line = true;
	size_t k = 0;
	for (size_t i = 0; i < o.nchain; i++)
		if (o.chain[i] != top_shell)
			o.chain[k++] = o.chain[i];
	o.nchain = k;
	*ret = o;
	return 0;
}

/* Does process pid have a descriptor open on the file (dev, ino)? Another
 * user's /proc/PID/fd is unreadable: not ours to count, so no. */
struct fd_probe {
	dev_t dev;
	ino_t ino;
	int fd;   /* ours, on the file                                   */
	pid_t pid; /* the process whose descriptors are looked at          */
};

/* OD2: the same open file description as our fd (kcmp), so that another
 * open of the same file - a separate flock(2) lock in flock(1)'s terms -
 * never counts; where kcmp cannot tell (no CONFIG_KCMP, no ptrace access),
 * the same file (device and inode), erring upwards. */
static int fd_same(int dirfd, const char *name, void *ctx)
{
	const struct fd_probe *f = ctx;
	struct stat st;
	if (hf_sys_fstatat(dirfd, name, &st, 0) < 0)
		return 0; /* closed meanwhile, or a file we may not stat */
	if (st.st_dev != f->dev || st.st_ino != f->ino)
		return 0;
	int rc = hf_sys_kcmp_file(getpid(), f->fd, f->pid, atoi(name));
	return rc == 0 || rc < 0 ? 1 : 0;
}

static bool holds_file(pid_t pid, struct fd_probe *f)
{
	f->pid = pid;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	int dfd = hf_sys_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return false;
	int rc = hf_dir_each(dfd, "", fd_same, (void *)f);
	hf_sys_close(dfd);
	return rc > 0;
}

int cli_owner_find_holding(int fd, pid_t *ret_pid, char *comm, size_t n)
{
	struct stat st;
	int rc = hf_sys_fstat(fd, &st);
	if (rc < 0)
		return rc;
	struct fd_probe f = { st.st_dev, st.st_ino, fd, 0 };
	bool host = hf_self_pidns() == INIT_PIDNS;
	pid_t pid = getppid(), found = 0;
	struct proc p;
	for (int hop = 0; hop < MAX_HOPS; hop++) {
		if (pid <= 0 || (pid == 1 && host))
			break; /* OD1: never the machine's init, never outside our namespace */
		if (proc_read(pid, &p) < 0)
			break;
		if (holds_file(pid, &f)) {
			found = pid; /* OD1: the topmost so far */
			if (comm)
				snprintf(comm, n, "%s", p.comm);
		}
		pid = p.ppid;
		proc_free(&p);
	}
	if (!found)
		return -ENOENT;
	*ret_pid = found;
	return 0;
}
