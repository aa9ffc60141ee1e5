/*
 * test_term.c - people at a terminal (issue 9): the status line of a wait on
 * a real pty (openpty: the CLI's stderr is a terminal), never without one,
 * the -v lines for scripts; run -c STRING from bash and dash.
 *
 * The holders are this test process, through the public API; the waiter is
 * the holdfast binary. Nothing is timed: a test reads the terminal until
 * the line shows (bounded), then releases and reads to the end.
 */
#include "hft.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

HFT_SCRATCH_SUITE(term, 120);

#define ARGV(...) ((const char *const[]){ "holdfast", __VA_ARGS__, NULL })
#define BOUND_MS 60000 /* no read of the terminal waits longer than this */

struct tty {
	pid_t pid;
	int master;
	char *buf; /* everything read so far, NUL-terminated */
	size_t len, cap;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The pty's width in columns (tests of a narrow terminal set it first). */
static int tty_cols = 200;

/* Run the holdfast binary with argv on a fresh pty (stdin, stdout and stderr
 * its slave, its controlling terminal, 200 columns wide) in directory cwd. */
static void tty_spawn(struct tty *t, const char *cwd, const char *const *argv)
{
	struct winsize ws = { .ws_row = 24, .ws_col = (unsigned short)tty_cols };
	int master, slave;
	cr_assert_eq(openpty(&master, &slave, NULL, NULL, &ws), 0, "openpty: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* ended with the test even when an assertion ends it first */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setsid();
		ioctl(slave, TIOCSCTTY, 0);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		if (slave > 2)
			close(slave);
		close(master);
		if (cwd && chdir(cwd) < 0)
			_exit(126);
		unsetenv("HOLDFAST_FAULTS");
		unsetenv("HOLDFAST_PAUSE_FDS");
		size_t argc = 0;
		while (argv[argc])
			argc++;
		char **av = calloc(argc + 1, sizeof *av);
		av[0] = (char *)hft_bin();
		for (size_t i = 1; i < argc; i++)
			av[i] = (char *)argv[i];
		execv(av[0], av);
		_exit(127);
	}
	close(slave);
	*t = (struct tty){ .pid = pid, .master = master };
	t->cap = 4096;
	t->buf = calloc(1, t->cap);
}

/* Read what the terminal shows until needle has appeared `times` times
 * counted from offset `from` (NULL: until the end); false at the end of
 * the output. Bounded: a failed assertion after BOUND_MS. */
static bool tty_read_until(struct tty *t, const char *needle, int times, size_t from)
{
	int64_t end = mono_ms() + BOUND_MS;
	for (;;) {
		if (needle) {
			int seen = 0;
			for (const char *p = t->buf + from; (p = strstr(p, needle)); p++)
				seen++;
			if (seen >= times)
				return true;
		}
		int64_t left = end - mono_ms();
		cr_assert_gt(left, 0, "the terminal did not show '%s' within %d ms; it showed:\n%s",
			     needle ? needle : "(its end)", BOUND_MS, t->buf);
		struct pollfd p = { .fd = t->master, .events = POLLIN };
		int rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		cr_assert_geq(rc, 0);
		if (rc == 0)
			continue;
		if (t->len + 1024 + 1 > t->cap) {
			t->cap *= 2;
			t->buf = realloc(t->buf, t->cap);
		}
		ssize_t r = read(t->master, t->buf + t->len, 1024);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) /* EIO: the slave closed, every writer gone */
			return false;
		t->len += (size_t)r;
		t->buf[t->len] = '\0';
	}
}

/* Read to the end and collect the child: its exit code. */
static int tty_finish(struct tty *t)
{
	tty_read_until(t, NULL, 0, 0);
	close(t->master);
	int code = hft_exit_within(t->pid, BOUND_MS);
	cr_assert_neq(code, -1, "holdfast (pid %d) did not end", (int)t->pid);
	return code;
}

/* The status line showed (at least twice: it is redrawn in place, at
 * least one second of waiting), then was erased, and nothing of it is
 * shown after: after its last draw comes \r + erase-line. */
static void assert_line_then_cleared(const struct tty *t, const char *line)
{
	const char *last = NULL;
	for (const char *p = t->buf; (p = strstr(p, line)); p++)
		last = p;
	cr_assert(last, "no '%s' on the terminal:\n%s", line, t->buf);
	cr_assert(last - t->buf >= 11 && strncmp(last - 11, "\rholdfast: ", 11) == 0,
		  "the line is not drawn from the start of the row (\\r):\n%s", t->buf);
	const char *clear = strstr(last, "\033[K\r\033[K");
	cr_assert(clear, "the status line was not erased after its last draw:\n%s", t->buf);
	cr_assert_null(strstr(clear, "waiting for"), "the line came back after its erasure:\n%s",
		       t->buf);
}

static hf_lock *hold_lock(const char *path)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new(path, &l), 0);
	hf_lock_set(l, HF_OPT_WAIT_MS, 0);
	int rc = hf_lock_acquire(l);
	cr_assert_eq(rc, 0, "hold %s: %s", path, hf_strerror(rc));
	return l;
}

static void drop_lock(hf_lock *l)
{
	cr_assert_eq(hf_lock_release(l), 0);
	hf_lock_free(l);
}

/* A process for `lock acquire --pid` to hold for (the test itself holds
 * the lock the waiter wants: waiting for itself would be refused, DL13). */
static pid_t sleeper(void)
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* ended with the test, whatever ends it */
		for (;;)
			pause();
	}
	return pid;
}

static void sleeper_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static char *path_in(const char *name)
{
	char *p;
	cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

/* "held by pid <this test>" */
static char *held_by_me(const char *what)
{
	char *s;
	cr_assert_geq(asprintf(&s, "waiting for %s: held by pid %d", what, (int)getpid()), 0);
	return s;
}

Test(term, lock_acquire_shows_the_holder_then_clears)
{
	char *L = path_in("L");
	hf_lock *l = hold_lock(L);
	struct tty t;
	pid_t owner = sleeper();
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)owner);
	tty_spawn(&t, NULL, ARGV("lock", "acquire", L, "-w", "120", "--pid", pid));
	char *line = held_by_me(L);
	tty_read_until(&t, line, 2, 0); /* drawn, and redrawn a second later */
	char fence[40], next[48];
	snprintf(fence, sizeof fence, ", fence %llu", (unsigned long long)hf_lock_fence(l));
	snprintf(next, sizeof next, " %llu\r\n", (unsigned long long)hf_lock_fence(l) + 1);
	cr_assert(strstr(t.buf, fence) && strstr(t.buf, " old"),
		  "the line says the holder's age and fence (cli_holder_words):\n%s", t.buf);
	drop_lock(l);
	int code = tty_finish(&t);
	cr_assert_eq(code, 0, "lock acquire exited %d:\n%s", code, t.buf);
	assert_line_then_cleared(&t, line);
	/* the token comes after the erasure, at the start of a clean row */
	const char *clear = strstr(t.buf, "\r\033[K");
	cr_assert(clear && strstr(clear, next), "no 'TOKEN%s' after the line:\n%s", next, t.buf);
	sleeper_end(owner);
	free(t.buf);
	free(line);
	free(L);
}

Test(term, run_stopped_while_waiting_clears_before_its_message)
{
	char *L = path_in("L");
	hf_lock *l = hold_lock(L);
	struct tty t;
	tty_spawn(&t, NULL, ARGV("run", "--lock", L, "--", "true"));
	char *line = held_by_me(L);
	tty_read_until(&t, line, 1, 0);
	kill(t.pid, SIGTERM); /* stops the wait: exit 128+15 */
	tty_read_until(&t, "stopped by", 1, 0);
	int code = tty_finish(&t);
	cr_assert_eq(code, 128 + SIGTERM, "run exited %d:\n%s", code, t.buf);
	const char *clear = strstr(t.buf, "\r\033[K");
	const char *msg = strstr(t.buf, "holdfast: lock ");
	cr_assert(clear && msg && clear < msg,
		  "the line was not erased before the message:\n%s", t.buf);
	cr_assert_null(strstr(msg, "waiting for"), "%s", t.buf);
	drop_lock(l);
	free(t.buf);
	free(line);
	free(L);
}

Test(term, edit_waits_for_file_lock_on_a_terminal)
{
	char *F = path_in("F"), *FL = path_in("F.lock");
	hft_write(F, "old\n");
	hf_lock *l = hold_lock(FL);
	struct tty t;
	tty_spawn(&t, NULL, ARGV("edit", F, "--", "sed", "s/old/new/"));
	char *line = held_by_me(FL);
	tty_read_until(&t, line, 1, 0);
	drop_lock(l);
	int code = tty_finish(&t);
	cr_assert_eq(code, 0, "edit exited %d:\n%s", code, t.buf);
	assert_line_then_cleared(&t, line);
	char *now = hft_slurp(F);
	cr_assert_str_eq(now, "new\n");
	free(now);
	free(t.buf);
	free(line);
	free(F);
	free(FL);
}

Test(term, run_session_waits_on_a_terminal)
{
	char *S = path_in(".session.lock");
	hf_session *s;
	cr_assert_eq(hf_session_new(S, "alpha", &s), 0);
	cr_assert_geq(hf_session_take(s), 0);
	struct tty t;
	/* -w: the session is judged by age, so a failed test must not leave a
	 * waiter waiting for 90 minutes */
	tty_spawn(&t, dir, ARGV("run", "--session", "beta", "-w", "100", "--", "true"));
	char *line;
	cr_assert_geq(asprintf(&line, "waiting for session %s: held by lane alpha (pid %d", S,
			       (int)getpid()), 0);
	tty_read_until(&t, line, 1, 0);
	cr_assert_eq(hf_session_release(s), 0);
	hf_session_free(s);
	int code = tty_finish(&t);
	cr_assert_eq(code, 0, "run --session exited %d:\n%s", code, t.buf);
	assert_line_then_cleared(&t, line);
	free(t.buf);
	free(line);
	free(S);
}

Test(term, run_scope_waits_on_a_terminal)
{
	char *reg = path_in("registry"), *P = path_in("p"), *spec;
	cr_assert_eq(mkdir(P, 0755), 0);
	cr_assert_geq(asprintf(&spec, "%s:write", P), 0);
	setenv("HOLDFAST_REGISTRY", reg, 1); /* the waiter inherits it */
	hf_scope *s;
	cr_assert_eq(hf_scope_new("holder-pod", &s), 0);
	cr_assert_eq(hf_scope_add(s, spec), 0);
	int rc = hf_scope_register(s);
	cr_assert_eq(rc, 0, "register: %s", hf_strerror(rc));
	struct tty t;
	tty_spawn(&t, NULL, ARGV("run", "--scope", spec, "--", "true"));
	char *line;
	cr_assert_geq(asprintf(&line, "waiting for scope %s: held by holder-pod (pid %d", spec,
			       (int)getpid()), 0);
	tty_read_until(&t, line, 1, 0);
	cr_assert_eq(hf_scope_release(s), 0);
	hf_scope_free(s);
	int code = tty_finish(&t);
	cr_assert_eq(code, 0, "run --scope exited %d:\n%s", code, t.buf);
	assert_line_then_cleared(&t, line);
	unsetenv("HOLDFAST_REGISTRY");
	free(t.buf);
	free(line);
	free(spec);
	free(P);
	free(reg);
}

/* Two waiters for one lock: one on a pipe, waiting first; one on a
 * terminal. Once the terminal's line was drawn twice (a second of waiting)
 * the pipe's waiter has waited longer still: it printed nothing (WL1), or
 * with -v exactly its two lines, no \r, no escape. */
static void pipe_waiter(const char *const *argv, const char *want_err, pid_t owner)
{
	char *L = path_in("L");
	hf_lock *l = hold_lock(L);
	struct hft_child c;
	/* the wait's first sleep comes after the first refusal: paused there
	 * once (-v tries once before: that refusal is the first hit) */
	hft_spawn_cli(&c, want_err ? "pause:dirlock.acquire.waiting:2" : "pause:dirlock.acquire.waiting",
		      argv, NULL);
	hft_expect(&c, "dirlock.acquire.waiting");
	hft_go(&c);
	struct tty t;
	tty_spawn(&t, NULL, ARGV("run", "--lock", L, "--", "true"));
	char *line = held_by_me(L);
	tty_read_until(&t, line, 2, 0);
	drop_lock(l);
	char *out = NULL, *err = NULL;
	int code = hft_collect(c.pid, c.out_rd, c.err_rd, &out, &err);
	cr_assert_eq(code, 0, "the pipe's waiter exited %d: %s", code, err);
	if (owner > 0)
		sleeper_end(owner); /* what the pipe's waiter took, for the terminal's */
	cr_assert_eq(tty_finish(&t), 0, "%s", t.buf);
	if (!want_err) {
		cr_assert_str_eq(err, "", "a waiter without a terminal printed: %s", err);
	} else {
		char *first = held_by_me(L);
		cr_assert(strncmp(err, "holdfast: ", 10) == 0 && strstr(err, first) == err + 10,
			  "-v: no 'waiting for' line first: %s", err);
		cr_assert(strstr(err, want_err), "-v: no '%s': %s", want_err, err);
		cr_assert_null(strchr(err, '\r'), "-v without a terminal drew in place: %s", err);
		cr_assert_null(strchr(err, '\033'), "-v without a terminal: an escape: %s", err);
		free(first);
	}
	close(c.notify_rd);
	close(c.go_wr);
	free(out);
	free(err);
	free(t.buf);
	free(line);
	free(L);
}

Test(term, no_line_without_a_terminal)
{
	char *L = path_in("L");
	pipe_waiter(ARGV("run", "--lock", L, "--", "true"), NULL, 0);
	free(L);
}

Test(term, verbose_lines_for_scripts_run)
{
	char *L = path_in("L");
	pipe_waiter(ARGV("run", "-v", "--lock", L, "--", "true"), "\nholdfast: getting lock took ", 0);
	free(L);
}

Test(term, verbose_lines_for_scripts_lock_acquire)
{
	char *L = path_in("L");
	pid_t owner = sleeper();
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)owner);
	pipe_waiter(ARGV("lock", "acquire", L, "-v", "--pid", pid), "\nholdfast: getting lock took ",
		    owner);
	free(L);
}

/* ---- run -c STRING, from real shells ---------------------------------- */

static void run_c_from(const char *shell)
{
	char *env;
	cr_assert_geq(asprintf(&env, "D=%s", dir), 0);
	char *out = NULL, *err = NULL;
	/* quoting survives: two spaces, a single quote, $HOLDFAST_FENCE
	 * expanded by CMD's shell, not by the caller's; CMD's status passed */
	int code = hft_sh(&out, &err, shell, env,
			  "\"$HOLDFAST_BIN\" run --lock \"$D/L\" -c 'printf \"%s|\" \"a  b\" \"it'\\''s\" "
			  "\"$HOLDFAST_FENCE\" \"$0\"; exit 7'\n"
			  "echo \"rc=$?\"\n"
			  "\"$HOLDFAST_BIN\" run -c 'exit 0' -- true; echo \"both=$?\"\n"
			  "\"$HOLDFAST_BIN\" run --command 'kill -TERM $$'; echo \"sig=$?\"\n");
	cr_assert_eq(code, 0, "%s: %s", shell, err);
	/* the fence: digits (a new counter starts at the wall clock, FC2) */
	const char *f = strncmp(out, "a  b|it's|", 10) ? NULL : out + 10;
	size_t nd = f ? strspn(f, "0123456789") : 0;
	cr_assert(f && nd > 0 && !strcmp(f + nd, "|/bin/sh|rc=7\nboth=64\nsig=143\n"), "%s: %s\n%s",
		  shell, out, err);
	cr_assert(strstr(err, "-c STRING or CMD"), "%s", err);
	free(out);
	free(err);
	free(env);
}

Test(term, run_c_from_bash)
{
	run_c_from("bash");
}

Test(term, run_c_from_dash)
{
	run_c_from("dash");
}

/* WL: on a narrow terminal the line keeps whole clauses and says it is cut
 * (" \u2026"), never a number cut short: a 16-digit fence cut to "1" would
 * show a wrong fence. */
Test(term, a_narrow_terminal_never_cuts_a_number)
{
	char *L = path_in("L");
	hf_lock *l = hold_lock(L);
	char fence[40];
	snprintf(fence, sizeof fence, "fence %llu", (unsigned long long)hf_lock_fence(l));
	struct tty t;
	pid_t owner = sleeper();
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)owner);
	tty_cols = 80 + (int)strlen(L) - 20; /* the fence clause does not fit */
	tty_spawn(&t, NULL, ARGV("lock", "acquire", L, "-w", "120", "--pid", pid));
	tty_cols = 200;
	tty_read_until(&t, " \u2026", 1, 0);
	drop_lock(l);
	int code = tty_finish(&t);
	cr_assert_eq(code, 0, "lock acquire exited %d:\n%s", code, t.buf);
	const char *f = strstr(t.buf, "fence ");
	cr_assert(!f || strncmp(f, fence, strlen(fence)) == 0 || f > strstr(t.buf, "\033[K"),
		  "a fence cut short:\n%s", t.buf);
	sleeper_end(owner);
	free(t.buf);
	free(L);
}

/* WL2 for lock acquire, which has no signal loop: a SIGTERM while the line
 * is up erases it before the process ends by the signal. */
Test(term, lock_acquire_ended_by_a_signal_erases_the_line)
{
	char *L = path_in("L");
	hf_lock *l = hold_lock(L);
	pid_t owner = sleeper();
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)owner);
	struct tty t;
	tty_spawn(&t, NULL, ARGV("lock", "acquire", L, "--pid", pid));
	char *line = held_by_me(L);
	tty_read_until(&t, line, 2, 0); /* drawn and redrawn: assert_line_then_cleared */
	kill(t.pid, SIGTERM);
	int code = tty_finish(&t);
	cr_assert_eq(code, 128 + SIGTERM, "lock acquire exited %d:\n%s", code, t.buf);
	assert_line_then_cleared(&t, line);
	drop_lock(l);
	sleeper_end(owner);
	free(t.buf);
	free(line);
	free(L);
}
