/*
 * hft.c - test support: scripted schedules of real processes (see hft.h).
 */
#include "hft.h"

#include "sys.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Every child spawned here, so that a test that fails half way (an
 * assertion ends the test process) leaves none of them running: at exit
 * each one still there is killed with its process group, and collected. */
#define HFT_MAX_SPAWNED 1024
static pid_t spawned[HFT_MAX_SPAWNED];
static size_t nspawned;
static pid_t spawner;

static void kill_spawned(void)
{
	if (getpid() != spawner)
		return; /* a forked copy of the test process: not its children */
	for (size_t i = 0; i < nspawned; i++) {
		pid_t p = spawned[i];
		/* still our child, running or exited but not collected (so its
		 * pid and process group are not another's yet); one the test
		 * collected may be another process's pid now: never signalled */
		siginfo_t si;
		if (waitid(P_PID, (id_t)p, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
			continue;
		kill(-p, SIGKILL); /* its group, when it leads one (also after it exited) */
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	nspawned = 0;
}

void hft_kill_spawned(void)
{
	kill_spawned();
}

static void track(pid_t pid)
{
	if (spawner != getpid()) {
		spawner = getpid();
		nspawned = 0;
		atexit(kill_spawned);
	}
	if (nspawned < HFT_MAX_SPAWNED)
		spawned[nspawned++] = pid;
}

/* make test's ASan run leaves the leak check of the programs a test runs
 * (the holdfast CLI, shells and what they start) to make check-long's
 * check-asan-leaks: LeakSanitizer's scan at exit costs every ASan process
 * about 50 ms here. The Makefile sets HFT_CHILD_ASAN_OPTIONS
 * (detect_leaks=0), appended here to ASAN_OPTIONS in the Criterion worker
 * that runs the test (BoxFort names its map in BXFI_MAP), after ASan read
 * its own options at start: the worker, and the copies of it a test forks,
 * keep checking for leaks; what they execute does not. The runner is left
 * alone, so the workers it starts keep the run's options. */
__attribute__((constructor)) static void hft_child_asan_options(void)
{
	/* appended: the run's other options stay (ASan takes the last of a
	 * name), so only what HFT_CHILD_ASAN_OPTIONS names differs */
	const char *o = getenv("HFT_CHILD_ASAN_OPTIONS");
	const char *now = getenv("ASAN_OPTIONS");
	char *both;
	if (o && *o && getenv("BXFI_MAP") &&
	    asprintf(&both, "%s%s%s", now ? now : "", now && *now ? ":" : "", o) >= 0) {
		setenv("ASAN_OPTIONS", both, 1);
		free(both);
	}
}

static void xpipe(int p[2])
{
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
}

static void child_pause_fds(int notify_wr, int go_rd)
{
	/* Move the pipe ends to fds 3 and 4 for CLI children; keep them for
	 * in-process children. */
	hf_fault_pause_fds(notify_wr, go_rd);
}

void hft_spawn_fn(struct hft_child *c, const char *rules, int (*fn)(void *), void *arg)
{
	int n[2], g[2];
	xpipe(n);
	xpipe(g);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(n[0]);
		close(g[1]);
		child_pause_fds(n[1], g[0]);
		if (hf_fault_inject(rules, NULL, 0) < 0)
			_exit(99);
		_exit(fn(arg));
	}
	close(n[1]);
	close(g[0]);
	track(pid);
	*c = (struct hft_child){ .pid = pid, .notify_rd = n[0], .go_wr = g[1], .out_rd = -1,
				 .err_rd = -1 };
}

pid_t hft_fork_until_closed(int *ret_end)
{
	int p[2];
	xpipe(p);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		char c;
		close(p[1]);
		_exit(read(p[0], &c, 1) < 0);
	}
	close(p[0]);
	track(pid);
	*ret_end = p[1];
	return pid;
}

const char *hft_bin(void)
{
	const char *b = getenv("HOLDFAST_BIN");
	cr_assert(b && *b, "HOLDFAST_BIN is not set (run through meson test)");
	return b;
}

static void apply_env(const char *env)
{
	if (!env)
		return;
	char *copy = strdup(env), *save = NULL;
	for (char *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = '\0';
		setenv(kv, eq + 1, 1);
	}
	free(copy);
}

void (*hft_spawn_cli_pre)(void);

void hft_spawn_cli(struct hft_child *c, const char *rules, const char *const *argv,
		   const char *extra_env)
{
	int n[2], g[2], o[2], e[2];
	xpipe(n);
	xpipe(g);
	xpipe(o);
	xpipe(e);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setpgid(0, 0); /* its own group: hft_reap_group can end leftovers */
		dup2(o[1], 1);
		dup2(e[1], 2);
		/* pause fds at 3 (notify) and 4 (go), inherited across exec */
		int nw = dup(n[1]), gr = dup(g[0]);
		dup2(nw, 3);
		dup2(gr, 4);
		int devnull = open("/dev/null", O_RDONLY);
		dup2(devnull, 0);
		setenv("HOLDFAST_PAUSE_FDS", "3,4", 1);
		if (rules)
			setenv("HOLDFAST_FAULTS", rules, 1);
		else
			unsetenv("HOLDFAST_FAULTS");
		apply_env(extra_env);
		if (hft_spawn_cli_pre)
			hft_spawn_cli_pre();
		size_t argc = 0;
		while (argv[argc])
			argc++;
		char **av = calloc(argc + 2, sizeof *av);
		av[0] = (char *)hft_bin();
		for (size_t i = 1; i < argc; i++)
			av[i] = (char *)argv[i];
		execv(av[0], av);
		_exit(127);
	}
	close(n[1]);
	close(g[0]);
	close(o[1]);
	close(e[1]);
	track(pid);
	*c = (struct hft_child){ .pid = pid, .notify_rd = n[0], .go_wr = g[1], .out_rd = o[0],
				 .err_rd = e[0] };
}

void hft_next_point(struct hft_child *c, char *line, size_t n, const char *expected)
{
	size_t len = 0;
	for (;;) {
		char ch;
		ssize_t r = read(c->notify_rd, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		cr_assert_eq(r, 1, "child %d ended before reaching %s", (int)c->pid, expected);
		if (ch == '\n')
			break;
		if (len < n - 1)
			line[len++] = ch;
	}
	line[len] = '\0';
}

void hft_expect(struct hft_child *c, const char *point)
{
	char line[128], what[160];
	snprintf(what, sizeof what, "point '%s'", point);
	hft_next_point(c, line, sizeof line, what);
	cr_assert_str_eq(line, point, "child %d reached '%s', expected '%s'", (int)c->pid, line,
			 point);
}

void hft_go(struct hft_child *c)
{
	char ch = 'g';
	cr_assert_eq(write(c->go_wr, &ch, 1), 1);
}

int hft_collect(pid_t pid, int out_rd, int err_rd, char **out, char **err)
{
	/* Read stderr after stdout: both are small in every test; a child that
	 * fills a pipe would block, so keep outputs under 64 KiB. */
	char *so = hft_read_all(out_rd);
	char *se = hft_read_all(err_rd);
	close(out_rd);
	close(err_rd);
	int st;
	pid_t r;
	do
		r = waitpid(pid, &st, 0);
	while (r < 0 && errno == EINTR);
	cr_assert_eq(r, pid);
	if (out)
		*out = so;
	else
		free(so);
	if (err)
		*err = se;
	else
		free(se);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

char *hft_proc_slurp(pid_t pid, const char *file)
{
	char path[128];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	return hft_slurp(path);
}

pid_t hft_ppid(pid_t pid)
{
	char *s = hft_proc_slurp(pid, "stat");
	cr_assert_not_null(s, "/proc/%d/stat", (int)pid);
	long ppid = -1; /* after "pid (comm) S " */
	sscanf(strrchr(s, ')') + 2, "%*c %ld", &ppid);
	free(s);
	return (pid_t)ppid;
}

int hft_children(pid_t pid, pid_t *kids, int n)
{
	char file[64];
	snprintf(file, sizeof file, "task/%d/children", (int)pid);
	char *s = hft_proc_slurp(pid, file);
	cr_assert_not_null(s, "/proc/%d/%s (a kernel without CONFIG_PROC_CHILDREN?)", (int)pid,
			   file);
	int found = 0, off = 0, used;
	long v;
	while (sscanf(s + off, "%ld%n", &v, &used) == 1) {
		if (found < n)
			kids[found] = (pid_t)v;
		found++;
		off += used;
	}
	free(s);
	return found;
}

pid_t hft_only_child(pid_t pid)
{
	pid_t kid = 0;
	int n = hft_children(pid, &kid, 1);
	cr_assert_eq(n, 1, "process %d has %d children, expected one", (int)pid, n);
	cr_assert_gt(kid, 0);
	return kid;
}

int hft_exit_within(pid_t pid, int ms)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	cr_assert_geq(fd, 0, "pidfd_open %d: %s", (int)pid, strerror(errno));
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int rc;
	do /* a bound against a hang, never a timing asserted */
		rc = poll(&p, 1, ms);
	while (rc < 0 && errno == EINTR);
	close(fd);
	if (rc != 1)
		return -1;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

char *hft_read_all(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 1024 > cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	return buf;
}

int hft_wait(struct hft_child *c)
{
	int st;
	pid_t r;
	do
		r = waitpid(c->pid, &st, 0);
	while (r < 0 && errno == EINTR);
	cr_assert_eq(r, c->pid, "waitpid: %s", strerror(errno));
	if (c->notify_rd >= 0)
		close(c->notify_rd);
	if (c->go_wr >= 0)
		close(c->go_wr);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run argv (argv[0] the program, looked up in PATH when it has no '/')
 * to completion with stdin from input; out/err collected. */
static int run_argv(char **out, char **err, const char *env, const char *input,
		    char *const *av)
{
	int o[2], e[2], i[2];
	xpipe(o);
	xpipe(e);
	xpipe(i);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		dup2(i[0], 0);
		unsetenv("HOLDFAST_FAULTS");
		unsetenv("HOLDFAST_PAUSE_FDS");
		apply_env(env);
		execvp(av[0], av);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	close(i[0]);
	if (input) {
		size_t len = strlen(input);
		cr_assert_eq(write(i[1], input, len), (ssize_t)len);
	}
	close(i[1]);
	return hft_collect(pid, o[0], e[0], out, err);
}

int hft_sh(char **out, char **err, const char *shell, const char *env, const char *script)
{
	hft_bin(); /* the script finds the binary as "$HOLDFAST_BIN" */
	/* a script file, as a script is run: `shell -c LINE` is a one-line
	 * shell whose caller runs the next step (owner_find.c O4), which would
	 * make this test process the owner of what the script takes */
	char *d = hft_tmpdir(), *file;
	cr_assert_geq(asprintf(&file, "%s/script", d), 0);
	hft_write(file, script);
	char *const av[] = { (char *)shell, file, NULL };
	int st = run_argv(out, err, env, NULL, av);
	hft_rmtree(d);
	free(d);
	free(file);
	return st;
}

int hft_cli_env(char **out, char **err, const char *env, const char *input,
		const char *const *argv)
{
	size_t argc = 0;
	while (argv[argc])
		argc++;
	char **av = calloc(argc + 2, sizeof *av);
	cr_assert_not_null(av);
	av[0] = (char *)hft_bin();
	for (size_t k = 1; k < argc; k++)
		av[k] = (char *)argv[k];
	int st = run_argv(out, err, env, input, av);
	free(av);
	return st;
}

int hft_cli(char **out, char **err, const char *const *argv)
{
	return hft_cli_env(out, err, NULL, NULL, argv);
}

char *hft_tmpdir(void)
{
	const char *base = getenv("HFT_TMPDIR");
	if (!base || !*base)
		base = "/dev/shm";
	char *tmpl;
	cr_assert_geq(asprintf(&tmpl, "%s/hft.XXXXXX", base), 0);
	cr_assert_not_null(mkdtemp(tmpl), "mkdtemp in %s: %s", base, strerror(errno));
	return tmpl;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

void hft_rmtree(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

void hft_write(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "fopen %s: %s", path, strerror(errno));
	fputs(content, f);
	cr_assert_eq(fclose(f), 0);
}

char *hft_slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	char *s = hft_read_all(fd);
	close(fd);
	return s;
}

bool hft_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int hft_count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "opendir %s", dir);
	int n = 0;
	struct dirent *e;
	size_t pl = strlen(prefix);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, pl) && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

bool hft_private_mounts(void)
{
	if (geteuid() != 0)
		return false;
	if (unshare(CLONE_NEWNS) < 0)
		return false;
	/* nothing mounted here propagates out, and the namespace goes with the
	 * last process in it (this test and its children) */
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "mount --make-rprivate /: %s",
		     strerror(errno));
	return true;
}

void hft_bind(const char *src, const char *dst)
{
	cr_assert_eq(mount(src, dst, NULL, MS_BIND, NULL), 0, "mount --bind %s %s: %s", src, dst,
		     strerror(errno));
}

void hft_bind_ro(const char *src, const char *dst)
{
	hft_bind(src, dst);
	cr_assert_eq(mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL), 0,
		     "mount -o remount,bind,ro %s: %s", dst, strerror(errno));
}

void hft_unmount(const char *dst)
{
	cr_assert_eq(umount2(dst, MNT_DETACH), 0, "umount %s: %s", dst, strerror(errno));
}

void hft_spawn_cmd(struct hft_child *c, const char *const *argv, const char *env)
{
	int o[2], e[2];
	xpipe(o);
	xpipe(e);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setpgid(0, 0);
		dup2(o[1], 1);
		dup2(e[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		dup2(devnull, 0);
		unsetenv("HOLDFAST_FAULTS");
		unsetenv("HOLDFAST_PAUSE_FDS");
		apply_env(env);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	track(pid);
	*c = (struct hft_child){ .pid = pid, .notify_rd = -1, .go_wr = -1, .out_rd = o[0],
				 .err_rd = e[0] };
}

void hft_reap_group(const struct hft_child *c)
{
	/* everything still in the child's process group: a CMD's background
	 * job that a signal reached in the instant between its fork and its
	 * exec, when the shell's trap could not hand it on */
	if (kill(-c->pid, SIGKILL) < 0)
		cr_assert_eq(errno, ESRCH, "kill(-%d): %s", (int)c->pid, strerror(errno));
}

/* The system call pid is blocked in, once it is blocked (state S), or -1
 * when it ended. */
static long blocked_in(pid_t pid)
{
	char path[64], buf[256];
	int64_t end = hf_sys_mono_ns() + 10000000000LL;
	while (hf_sys_mono_ns() < end) {
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		FILE *f = fopen(path, "re");
		if (!f)
			return -1;
		char *ok = fgets(buf, sizeof buf, f);
		fclose(f);
		char *rp = ok ? strrchr(buf, ')') : NULL;
		if (rp && rp[1] && rp[2] == 'S') {
			snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
			f = fopen(path, "re");
			long nr = -1;
			int got = f ? fscanf(f, "%ld", &nr) : 0;
			if (f)
				fclose(f);
			if (got == 1)
				return nr;
		}
		sched_yield();
	}
	cr_assert_fail("process %d never blocked", (int)pid);
	return -1;
}

bool hft_in_epoll_wait(pid_t pid)
{
	long nr = blocked_in(pid);
	return nr == SYS_epoll_wait || nr == SYS_epoll_pwait
#ifdef SYS_epoll_pwait2
	       || nr == SYS_epoll_pwait2
#endif
		;
}

static bool has_pidfd(pid_t pid)
{
	char dir[64], path[320], link[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n > 0) {
			link[n] = '\0';
			found = strstr(link, "pidfd") != NULL;
		}
	}
	closedir(d);
	return found;
}

bool hft_asleep_in_queue(pid_t pid)
{
	int64_t end = hf_sys_mono_ns() + 10000000000LL;
	while (!has_pidfd(pid)) {
		if (hf_sys_mono_ns() >= end)
			cr_assert_fail("process %d opened no pidfd", (int)pid);
		sched_yield();
	}
	return hft_in_epoll_wait(pid);
}
