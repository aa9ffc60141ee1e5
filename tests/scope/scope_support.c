/*
 * scope_support.c - shared set-up for the scope registry suites.
 */
#include "scope_support.h"

#include "hft.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

char *sc_dir;
char sc_reg[512];

/* Every sleeper started and not ended yet: a test that fails half-way
 * leaves its own, which sc_teardown ends before it waits for everyone. */
static pid_t live_sleepers[256];
static int nlive_sleepers;
/* Every process sc_spawn started: one still running at teardown (a failed
 * test's) is killed - only if it is still our unreaped child, so its pid
 * cannot be another process's. */
static pid_t spawned[64];
static int nspawned;

void sc_setup(void)
{
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	sc_dir = hft_tmpdir();
	snprintf(sc_reg, sizeof sc_reg, "%s/reg/scope.lock", sc_dir);
	setenv("HOLDFAST_REGISTRY", sc_reg, 1);
	unsetenv("HOLDFAST_POD");
}

void sc_reap_all(void)
{
	for (;;) {
		pid_t p = waitpid(-1, NULL, 0);
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			break; /* ECHILD: nothing left */
	}
}

void sc_teardown(void)
{
	while (nlive_sleepers > 0)
		kill(live_sleepers[--nlive_sleepers], SIGKILL); /* a failed test's */
	while (nspawned > 0) {
		pid_t p = spawned[--nspawned];
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)p, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0)
			kill(p, SIGKILL); /* still running, still ours */
	}
	hft_rmtree(sc_dir);
	free(sc_dir);
	sc_reap_all();
}

void sc_private_mounts(bool tmp)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: a private mount namespace (CI runs as root)");
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare(CLONE_NEWNS): %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "MS_PRIVATE: %s",
		     strerror(errno));
	if (!tmp)
		return;
	/* The binary and the sources may live under /tmp themselves (a fresh
	 * clone in /tmp/fresh): the new tmpfs would hide them. Their top
	 * directories are bound back from the machine's /tmp, reached through
	 * a descriptor opened before the mount. */
	int old = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(old, 0, "/tmp: %s", strerror(errno));
	cr_assert_eq(mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777"), 0, "tmpfs on /tmp: %s",
		     strerror(errno));
	const char *keep[] = { hft_bin(), getenv("HOLDFAST_SRC") };
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
		if (!keep[i] || strncmp(keep[i], "/tmp/", 5) != 0)
			continue;
		char top[256], src[300], dst[300];
		snprintf(top, sizeof top, "%.*s", (int)strcspn(keep[i] + 5, "/"), keep[i] + 5);
		snprintf(src, sizeof src, "/proc/self/fd/%d/%s", old, top);
		snprintf(dst, sizeof dst, "/tmp/%s", top);
		if (mkdir(dst, 0755) < 0 && errno == EEXIST)
			continue; /* bound already (binary and sources in one tree) */
		cr_assert_eq(mount(src, dst, NULL, MS_BIND | MS_REC, NULL), 0, "bind %s: %s", dst,
			     strerror(errno));
	}
	close(old);
}

struct sc_sleeper sc_owner;

void sc_setup_owned(void)
{
	sc_setup();
	sc_sleeper_start(&sc_owner);
}

void sc_teardown_owned(void)
{
	sc_sleeper_end(&sc_owner, SIGKILL);
	sc_teardown();
}

int sc_wait_within(pid_t pid, int ms)
{
	return hft_exit_within(pid, ms);
}

bool sc_exits_within(pid_t pid, int ms)
{
	return hft_exit_within(pid, ms) >= 0;
}

/* argv[0] (searched in PATH) with stdin /dev/null, stdout and stderr on
 * pipes (*out_rd, *err_rd), $HF the binary, no fault rules. */
static pid_t spawn_piped(const char *const *argv, int *out_rd, int *err_rd)
{
	char env[4200];
	snprintf(env, sizeof env, "HF=%s", hft_bin());
	struct hft_child c;
	hft_spawn_cmd(&c, argv, env);
	*out_rd = c.out_rd;
	*err_rd = c.err_rd;
	return c.pid;
}

int sc_sh(char **out, char **err, const char *script, ...)
{
	const char *argv[64];
	int n = 0;
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n++] = "sh";
	va_list ap;
	va_start(ap, script);
	const char *a;
	while ((a = va_arg(ap, const char *)) && n < 63)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	int o, e;
	pid_t pid = spawn_piped(argv, &o, &e);
	return hft_collect(pid, o, e, out, err);
}


static void sleeper_forget(pid_t pid)
{
	for (int i = 0; i < nlive_sleepers; i++)
		if (live_sleepers[i] == pid)
			live_sleepers[i] = live_sleepers[--nlive_sleepers];
}

void sc_sleeper_start(struct sc_sleeper *s)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[1]);
		char c;
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	s->pid = pid;
	s->wr = p[1];
	if (nlive_sleepers < 256)
		live_sleepers[nlive_sleepers++] = pid;
}

void sc_sleeper_end(struct sc_sleeper *s, int sig)
{
	if (sig)
		kill(s->pid, sig);
	close(s->wr);
	int st;
	while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
		;
	sleeper_forget(s->pid);
}

static int cli_va(const char *env, char **out, char **err, va_list ap)
{
	const char *argv[64];
	int n = 0;
	argv[n++] = "holdfast";
	const char *a;
	while ((a = va_arg(ap, const char *)) && n < 63)
		argv[n++] = a;
	argv[n] = NULL;
	return hft_cli_env(out, err, env, NULL, argv);
}

int sc_cli(char **out, char **err, ...)
{
	va_list ap;
	va_start(ap, err);
	int rc = cli_va(NULL, out, err, ap);
	va_end(ap);
	return rc;
}

int sc_cli_env(const char *env, char **out, char **err, ...)
{
	va_list ap;
	va_start(ap, err);
	int rc = cli_va(env, out, err, ap);
	va_end(ap);
	return rc;
}

const char *sc_num(long long v)
{
	static char ring[16][24];
	static int at;
	char *b = ring[at++ % 16];
	snprintf(b, 24, "%lld", v);
	return b;
}

const char *sc_path(const char *rel)
{
	static char ring[16][1024];
	static int at;
	char *b = ring[at++ % 16];
	snprintf(b, 1024, "%s/%s", sc_dir, rel);
	return b;
}

json_t *sc_registry_json(void)
{
	json_error_t e;
	json_t *root = json_load_file(sc_reg, 0, &e);
	cr_assert_not_null(root, "the registry %s must parse: %s", sc_reg, e.text);
	return root;
}

json_t *sc_alloc(json_t *root, const char *name)
{
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(root, "allocations"), i, a)
		if (!strcmp(json_string_value(json_object_get(a, "name")), name))
			return a;
	return NULL;
}

void sc_need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (unshare, mounts, setpriv); CI runs as root");
}

void sc_spawn(struct hft_child *c, const char *const *argv)
{
	int o, e;
	pid_t pid = spawn_piped(argv, &o, &e);
	if (nspawned < 64)
		spawned[nspawned++] = pid;
	/* hft_wait closes notify_rd and go_wr: give it descriptors of its own */
	int n[2], g[2];
	cr_assert_eq(pipe2(n, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(g, O_CLOEXEC), 0);
	close(n[1]);
	close(g[0]);
	*c = (struct hft_child){ .pid = pid, .notify_rd = n[0], .go_wr = g[1], .out_rd = o,
				 .err_rd = e };
}

char *sc_line(int fd)
{
	size_t cap = 256, n = 0;
	char *line = malloc(cap);
	char ch;
	for (;;) {
		ssize_t r = read(fd, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 1 || ch == '\n')
			break;
		if (n + 1 >= cap)
			line = realloc(line, cap *= 2);
		line[n++] = ch;
	}
	line[n] = '\0';
	return line;
}
