/*
 * cmd_selftest.c - `holdfast selftest [DIR]`: the session lock's scripted
 * interleavings, run for real on DIR's file system.
 *
 * Each check starts this very binary (/proc/self/exe) as child processes
 * with HOLDFAST_FAULTS pause rules; a child stops at a named protocol point
 * (session.take.judged, ...), reports it on a pipe and waits for one byte on
 * another. The check lets the children go in the order of its schedule,
 * then looks at exit codes and at what is on disk. No sleeps, no timing:
 * the same schedule every run. A child that does not reach its point within
 * 10 s fails the check instead of hanging it.
 *
 * The checks of this file look at single takes and releases (publication,
 * breaking, unreadable and legacy records, skew, the release rules); the
 * race schedules are schedule.c's, the same ones tests/session/test_race.c
 * runs, here with this file's children.
 *
 * One line per check on stdout ("ok" or "FAIL" and why); exit 0 only if all
 * pass, 1 otherwise.
 */
#include "cli.h"
#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include "holdfast.h"
#include "faults.h"
#include "schedule.h"
#include "selftest.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
	"usage: holdfast selftest [DIR]\n"
	"\n"
	"Checks that DIR's file system (default: the current directory) gives what\n"
	"holdfast needs, then runs scripted interleavings of every lock kind on it, in a\n"
	"scratch directory DIR/.holdfast-selftest-<hex> that is removed afterwards:\n"
	"  fs:       hard links, O_TMPFILE, renameat2 RENAME_NOREPLACE, flock(2),\n"
	"            inotify, /proc start times, /proc of this pid namespace\n"
	"  session:  two stealers of one stale lock, a third taker while the winner's\n"
	"            lock is aside, a release racing a steal, the old read-then-write\n"
	"            guard next to the atomic take, ...\n"
	"  dirlock:  a lock being made, two reapers of a dead owner's lock (R1/R2),\n"
	"            a failed restore left as a barrier\n"
	"  scope:    overlapping write scopes, a dead pod's scope reclaimed\n"
	"  run, edit: CMD under the lock; the atomic replace keeps the mode\n"
	"Each check re-runs this binary with pause rules (HOLDFAST_FAULTS) and lets\n"
	"its processes go in a fixed order; a process that does not reach its point\n"
	"or end within 10 s fails the check and is killed (never a hang).\n"
	"Prints one line per check (\"ok\" or \"FAIL ... why\"); exits 0 only if every\n"
	"check passes, else 1; 73/77 when DIR cannot be written.\n"
	"--json: one JSON object at the end instead, {\"dir\", \"ok\", \"passed\",\n"
	"\"total\", \"exit\", \"checks\": [{\"n\", \"kind\", \"name\", \"what\", \"ok\", \"why\",\n"
	"\"note\"}]}.\n"
	"\n"
	"(Internal: 'holdfast selftest --naive-take FILE' runs the old read-then-write guard once;\n"
	"the differential check uses it. Never use it as a lock.)\n"
	"-h, --help; -V, --version.\n";

#define KID_TIMEOUT_MS 10000
/* <name>.aside-<16 hex>: where a break, release or withdrawal moves a
 * session's record first (holdfast.h, "Session lock"). */
#define ASIDE_INFIX ".aside-"
#define NOTIFY_FD 100
#define GO_FD 101

struct kid {
	pid_t pid;
	int note, go;
};

struct t {
	char dir[PATH_MAX];
	char lock[PATH_MAX + 64];  /* this check's lock file */
	char name[64];             /* its base name */
	char why[512];             /* the first failure */
};

static int fail(struct t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct t *t, const char *fmt, ...)
{
	if (!t->why[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(t->why, sizeof t->why, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ------------------------------------------------------------------------
 * Children: this binary again, paused at named points
 * ---------------------------------------------------------------------- */

static void kid_exec(int note, int go, int err, const char *rules, const char *const *args)
{
	const char *argv[16] = { "holdfast" };
	size_t n = 1;
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int null = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDWR, 0);
	if (null < 0 || hf_sys_dup2(note, NOTIFY_FD) < 0 || hf_sys_dup2(go, GO_FD) < 0 ||
	    hf_sys_dup2(null, 0) < 0 || hf_sys_dup2(null, 1) < 0 ||
	    hf_sys_dup2(err >= 0 ? err : null, 2) < 0)
		_exit(126);
	setenv("HOLDFAST_PAUSE_FDS", "100,101", 1);
	if (rules)
		setenv("HOLDFAST_FAULTS", rules, 1);
	else
		unsetenv("HOLDFAST_FAULTS");
	hf_sys_execvp("/proc/self/exe", (char *const *)argv);
	_exit(127);
}

/* Start `holdfast ARGS...` with rules; args NULL-terminated; its stderr
 * to err (-1: /dev/null). */
static int kid_start_err(struct t *t, struct kid *k, const char *rules, const char *const *args,
			 int err)
{
	int n[2], g[2];
	*k = (struct kid){ -1, -1, -1 };
	if (hf_sys_pipe2(n, O_CLOEXEC) < 0)
		return fail(t, "pipe failed");
	if (hf_sys_pipe2(g, O_CLOEXEC) < 0) {
		hf_sys_close(n[0]);
		hf_sys_close(n[1]);
		return fail(t, "pipe failed");
	}
	fflush(NULL);
	pid_t pid = hf_sys_fork();
	if (pid == 0)
		kid_exec(n[1], g[0], err, rules, args);
	hf_sys_close(n[1]);
	hf_sys_close(g[0]);
	*k = (struct kid){ pid, n[0], g[1] };
	if (pid < 0) {
		hf_sys_close(n[0]);
		hf_sys_close(g[1]);
		k->pid = -1;
		return fail(t, "fork failed: %s", hf_strerror(pid));
	}
	return 0;
}

static int kid_start(struct t *t, struct kid *k, const char *rules, const char *const *args)
{
	return kid_start_err(t, k, rules, args, -1);
}

/* Wait until the child reports a point; it must be `point`. */
static int kid_expect(struct t *t, struct kid *k, const char *point)
{
	char line[128];
	size_t len = 0;
	for (;;) {
		struct pollfd p = { .fd = k->note, .events = POLLIN };
		int r = hf_sys_poll(&p, 1, KID_TIMEOUT_MS);
		if (r == 0)
			return fail(t, "pid %d did not reach %s within 10 s", (int)k->pid, point);
		char c;
		if (r < 0 || hf_sys_read(k->note, &c, 1) != 1)
			return fail(t, "pid %d ended before reaching %s", (int)k->pid, point);
		if (c == '\n')
			break;
		if (len < sizeof line - 1)
			line[len++] = c;
	}
	line[len] = '\0';
	if (strcmp(line, point))
		return fail(t, "pid %d reached %s, expected %s", (int)k->pid, line, point);
	return 0;
}

static void kid_go(struct kid *k)
{
	hf_sys_write(k->go, "g", 1);
}

/* The child's exit code (128+N for signal N); -1 when it never started. */
static int kid_wait(struct kid *k)
{
	if (k->pid <= 0)
		return -1;
	hf_sys_close(k->go); /* EOF lets a still-paused child run to its end */
	int st = 0;
	/* never a hang: a child that does not end within the bound is killed */
	int pfd = hf_sys_pidfd_open(k->pid);
	if (pfd >= 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		if (hf_sys_poll(&p, 1, KID_TIMEOUT_MS) == 0)
			hf_sys_kill(k->pid, SIGKILL);
		hf_sys_close(pfd);
	}
	pid_t r = hf_sys_waitpid(k->pid, &st, 0);
	hf_sys_close(k->note);
	k->pid = -1;
	if (r < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run `holdfast ARGS...` (no rules) to its end: its exit code. */
static int run(struct t *t, const char *const *args)
{
	struct kid k;
	if (kid_start(t, &k, NULL, args) < 0)
		return -1;
	return kid_wait(&k);
}

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define TAKE(t, lane) ARGS("session", "take", "--lane", lane, "--file", (t)->lock)
#define RELEASE(t, lane) ARGS("session", "release", "--lane", lane, "--file", (t)->lock)

/* ------------------------------------------------------------------------
 * Looking at the result
 * ---------------------------------------------------------------------- */

static int put_at(struct t *t, const char *path, const char *content)
{
	int fd = hf_sys_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail(t, "cannot write %s: %s", path, hf_strerror(fd));
	ssize_t w = hf_sys_write(fd, content, strlen(content));
	hf_sys_close(fd);
	return w < 0 ? fail(t, "cannot write %s", path) : 0;
}

static int put(struct t *t, const char *content)
{
	return put_at(t, t->lock, content);
}

/* A record of lane (owner "selftest-LANE"), started age_ms ago (negative:
 * in the future), at path. */
static int put_record_at(struct t *t, const char *path, const char *lane, int64_t age_ms)
{
	char owner[96];
	snprintf(owner, sizeof owner, "selftest-%s", lane);
	int rc = sched_put_record(path, lane, owner, age_ms);
	return rc < 0 ? fail(t, "cannot write %s: %s", path, hf_strerror(rc)) : 0;
}

static int put_record(struct t *t, const char *lane, int64_t age_ms)
{
	return put_record_at(t, t->lock, lane, age_ms);
}

/* t's lock + ".aside-" + hex16 */
static void aside_path(struct t *t, const char *hex16, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s", t->lock, ASIDE_INFIX, hex16);
}

static int put_legacy(struct t *t, int64_t age_ms)
{
	char buf[64];
	hf_time_format(hf_sys_now_ms() - age_ms, buf, sizeof buf - 1);
	strcat(buf, "\n");
	return put(t, buf);
}

static char *slurp(struct t *t)
{
	return sched_lock_bytes(t->lock);
}

static int asides(struct t *t)
{
	return sched_asides(t->lock);
}

/* The session's status record (the caller frees it), NULL with the failure
 * noted. */
static hf_rec *status(struct t *t)
{
	hf_rec *r = NULL;
	int rc = hf_session_status(t->lock, 0, &r);
	if (rc < 0) {
		fail(t, "status: %s", hf_strerror(rc));
		return NULL;
	}
	return r;
}

static const char *rec_str(const hf_rec *r, const char *field)
{
	const char *v = hf_rec_str(r, field);
	return v ? v : "";
}

static int64_t rec_int(const hf_rec *r, const char *field)
{
	int64_t v;
	return hf_rec_int(r, field, &v) == 0 ? v : 0;
}

/* The lock is held (live) at its name by lane, with no aside beside it. */
static int held_by(struct t *t, const char *lane)
{
	hf_rec *r = status(t);
	if (!r)
		return -1;
	int rc = 0;
	if (strcmp(rec_str(r, "state"), "held") || hf_rec_str(r, "aside") ||
	    strcmp(rec_str(r, "lane"), lane))
		rc = fail(t, "expected the lock held by %s at its name, found state %s lane '%s'%s",
			  lane, rec_str(r, "state"), rec_str(r, "lane"),
			  hf_rec_str(r, "aside") ? " (in an aside)" : "");
	hf_rec_free(r);
	if (rc < 0)
		return rc;
	int n = asides(t);
	if (n)
		return fail(t, "%d aside file(s) left beside the lock", n);
	return 0;
}

static int expect_exit(struct t *t, const char *who, int got, int want)
{
	if (got != want)
		return fail(t, "%s exited %d, expected %d", who, got, want);
	return 0;
}

/* ------------------------------------------------------------------------
 * The checks
 * ---------------------------------------------------------------------- */

#define HOUR (3600LL * 1000)

static int c_publish(struct t *t)
{
	/* Stop the taker just before its link: the record is written, yet
	 * nothing is visible at the name; after it, all of it is (SL1). */
	struct kid a;
	if (kid_start(t, &a, "pause:link", TAKE(t, "alpha")) < 0 || kid_expect(t, &a, "link") < 0)
		return kid_wait(&a), -1;
	hf_rec *r = status(t);
	char before[32];
	snprintf(before, sizeof before, "%s", r ? rec_str(r, "state") : "?");
	hf_rec_free(r);
	kid_go(&a);
	if (expect_exit(t, "the taker", kid_wait(&a), 0) < 0)
		return -1;
	if (strcmp(before, "free"))
		return fail(t, "a reader saw state %s before the link, expected free", before);
	char *s = slurp(t);
	size_t len = s ? strlen(s) : 0;
	int whole = len > 2 && s[0] == '{' && s[len - 1] == '\n' && !strchr(s, '\n')[1];
	free(s);
	if (!whole)
		return fail(t, "the published lock is not one whole line of JSON");
	return held_by(t, "alpha");
}

static int c_live(struct t *t)
{
	if (expect_exit(t, "take by alpha", run(t, TAKE(t, "alpha")), 0) < 0)
		return -1;
	char *before = slurp(t);
	int same = run(t, TAKE(t, "alpha"));
	int other = run(t, TAKE(t, "beta"));
	char *after = slurp(t);
	int untouched = before && after && !strcmp(before, after);
	free(before);
	free(after);
	if (expect_exit(t, "a second take by the same lane", same, 1) < 0 ||
	    expect_exit(t, "a take by another lane", other, 1) < 0)
		return -1;
	if (!untouched)
		return fail(t, "a refused take changed the lock");
	return held_by(t, "alpha");
}

static int c_break(struct t *t)
{
	if (put_record(t, "old", 2 * HOUR) < 0)
		return -1;
	if (expect_exit(t, "take by new", run(t, TAKE(t, "new")), 0) < 0)
		return -1;
	hf_rec *r = status(t);
	bool named = r && !strcmp(rec_str(r, "broke.lane"), "old") &&
		     !strcmp(rec_str(r, "broke.owner"), "selftest-old") &&
		     rec_int(r, "broke.age_s") >= 7100;
	hf_rec_free(r);
	if (!named)
		return fail(t, "the new record does not name the broken lock under \"broke\"");
	return held_by(t, "new");
}

static int c_unreadable(struct t *t)
{
	static const char *const bad[] = { "garbage\n", "{\"lane\":\"x\",", "{\"lane\":1}\n", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (put(t, bad[i]) < 0)
			return -1;
		int e = run(t, TAKE(t, "alpha"));
		char *s = slurp(t);
		int same = s && !strcmp(s, bad[i]);
		free(s);
		if (expect_exit(t, "take of an unreadable lock", e, 65) < 0)
			return -1;
		if (!same || asides(t))
			return fail(t, "an unreadable lock (case %zu) was changed or moved", i + 1);
	}
	/* cannot be read at all: a permission error, by fault injection so that
	 * root sees it too. Every read(2) of the taker fails (its first is of
	 * the boot id, where /proc has one: it then records none). */
	put_record(t, "alpha", 0);
	struct kid k;
	kid_start(t, &k, "fail:read:1:EACCES:persist", TAKE(t, "beta"));
	if (expect_exit(t, "take of a lock it cannot read", kid_wait(&k), 65) < 0)
		return -1;
	hf_sys_unlinkat(AT_FDCWD, t->lock, 0);
	hf_sys_mkdirat(AT_FDCWD, t->lock, 0700); /* a directory at the path */
	int e = run(t, TAKE(t, "alpha"));
	struct stat st;
	int still_dir = hf_sys_fstatat(AT_FDCWD, t->lock, &st, 0) == 0 && S_ISDIR(st.st_mode);
	hf_sys_unlinkat(AT_FDCWD, t->lock, AT_REMOVEDIR);
	if (expect_exit(t, "take over a directory", e, 65) < 0)
		return -1;
	return still_dir ? 0 : fail(t, "the directory at the lock path was touched");
}

static int c_legacy(struct t *t)
{
	if (put_legacy(t, 10 * 60 * 1000) < 0)
		return -1;
	if (expect_exit(t, "take over a young legacy lock", run(t, TAKE(t, "alpha")), 1) < 0)
		return -1;
	if (put_legacy(t, 2 * HOUR) < 0)
		return -1;
	if (expect_exit(t, "take over an old legacy lock", run(t, TAKE(t, "alpha")), 0) < 0)
		return -1;
	hf_rec *r = status(t);
	bool named = r && rec_int(r, "broke.legacy");
	hf_rec_free(r);
	if (!named)
		return fail(t, "the broken legacy lock is not named under \"broke\"");
	return held_by(t, "alpha");
}

static int c_skew(struct t *t)
{
	if (put_record(t, "future", -24 * HOUR) < 0)
		return -1;
	hf_rec *r = status(t);
	char state[32];
	snprintf(state, sizeof state, "%s", r ? rec_str(r, "state") : "?");
	hf_rec_free(r);
	if (strcmp(state, "skew"))
		return fail(t, "a record dated tomorrow has state %s, expected skew", state);
	return expect_exit(t, "take over a future-dated lock", run(t, TAKE(t, "alpha")), 1);
}

static int c_release_rules(struct t *t)
{
	if (expect_exit(t, "take by data", run(t, ARGS("session", "take", "--lane", "data", "--owner",
						      "tok-1", "--file", t->lock)),
			0) < 0 ||
	    expect_exit(t, "release by another lane", run(t, RELEASE(t, "dist")), 1) < 0 ||
	    expect_exit(t, "release with another owner token",
			run(t, ARGS("session", "release", "--lane", "data", "--owner", "tok-2",
				    "--file", t->lock)),
			1) < 0 ||
	    held_by(t, "data") < 0 ||
	    expect_exit(t, "release by the holder",
			run(t, ARGS("session", "release", "--lane", "data", "--owner", "tok-1",
				    "--file", t->lock)),
			0) < 0 ||
	    expect_exit(t, "release of a free lock", run(t, RELEASE(t, "data")), 69) < 0)
		return -1;
	return slurp(t) ? fail(t, "the released lock is still there") : 0;
}

/* Only regular files in an aside are records: a dangling symlink and a
 * directory named like asides deny nothing (the tests add a FIFO: this
 * binary makes no FIFOs, sys.c has no mknod). */
static int c_not_records(struct t *t)
{
	char p[2][PATH_MAX + 128];
	aside_path(t, "0000000000000001", p[0], sizeof p[0]);
	aside_path(t, "0000000000000002", p[1], sizeof p[1]);
	int made = hf_sys_symlinkat("/nonexistent/holdfast-selftest", AT_FDCWD, p[0]) == 0 &&
		   hf_sys_mkdirat(AT_FDCWD, p[1], 0700) == 0;
	int et = made ? run(t, TAKE(t, "alpha")) : -1;
	hf_rec *r = made ? status(t) : NULL;
	int held = r && !strcmp(rec_str(r, "state"), "held") && !hf_rec_str(r, "aside") &&
		   !strcmp(rec_str(r, "lane"), "alpha");
	hf_rec_free(r);
	int er = made ? run(t, RELEASE(t, "alpha")) : -1;
	struct stat s;
	int kept = hf_sys_fstatat(AT_FDCWD, p[0], &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(s.st_mode) &&
		   hf_sys_fstatat(AT_FDCWD, p[1], &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(s.st_mode);
	hf_sys_unlinkat(AT_FDCWD, p[0], 0);
	hf_sys_unlinkat(AT_FDCWD, p[1], AT_REMOVEDIR);
	if (!made)
		return fail(t, "cannot plant a symlink and a directory in %s", t->dir);
	if (expect_exit(t, "take beside them", et, 0) < 0 ||
	    expect_exit(t, "release beside them", er, 0) < 0)
		return -1;
	if (!held)
		return fail(t, "the take did not hold the lock at its name");
	if (!kept)
		return fail(t, "a symlink or directory named like an aside was touched");
	return slurp(t) ? fail(t, "the released lock is still there") : 0;
}

/* ------------------------------------------------------------------------
 * The race schedules (schedule.c), run with this file's children
 * ---------------------------------------------------------------------- */

struct sel {
	struct t *t;
	struct kid kids[SCHED_KIDS];
};

static int sel_spawn(void *ctx, int k, const char *rules, const char *const *argv)
{
	struct sel *s = ctx;
	return kid_start(s->t, &s->kids[k], rules, argv + 1);
}

static int sel_expect(void *ctx, int k, const char *point)
{
	struct sel *s = ctx;
	return kid_expect(s->t, &s->kids[k], point);
}

static void sel_go(void *ctx, int k)
{
	kid_go(&((struct sel *)ctx)->kids[k]);
}

static int sel_wait(void *ctx, int k)
{
	return kid_wait(&((struct sel *)ctx)->kids[k]);
}

static int sel_run(void *ctx, const char *const *argv, char **err)
{
	struct sel *s = ctx;
	int p[2];
	*err = NULL;
	if (hf_sys_pipe2(p, O_CLOEXEC) < 0)
		return fail(s->t, "pipe failed");
	struct kid k;
	int rc = kid_start_err(s->t, &k, NULL, argv + 1, p[1]);
	hf_sys_close(p[1]);
	int code = rc < 0 ? -1 : kid_wait(&k);
	char buf[4096];
	size_t len = 0;
	ssize_t r;
	while (len < sizeof buf - 1 && (r = hf_sys_read(p[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	hf_sys_close(p[0]);
	*err = strdup(buf);
	return code;
}

static int sel_fail(void *ctx, const char *msg)
{
	return fail(((struct sel *)ctx)->t, "%s", msg);
}

static int c_schedule(struct t *t, const struct sched *sc)
{
	struct sel s = { .t = t };
	for (int k = 0; k < SCHED_KIDS; k++)
		s.kids[k].pid = -1;
	struct sched_ops ops = { &s, sel_spawn, sel_expect, sel_go, sel_wait, sel_run, sel_fail };
	return sched_run(sc, t->lock, &ops);
}

static int count_cb(int dfd, const char *name, void *ctx)
{
	(void)dfd;
	(void)name;
	++*(int *)ctx;
	return 0;
}

/* ------------------------------------------------------------------------
 * The directory lock, the scope registry, run and edit on DIR's file
 * system: short schedules at their named points, through this binary
 * ---------------------------------------------------------------------- */

#define TOK_MAX 64 /* a token and its NUL, with room */
static char self_pid[16]; /* the owner every lock and scope here is taken for */

#define ACQ(path) ARGS("lock", "acquire", "-n", "--pid", self_pid, path)

/* A process that lives until mortal_end: the owner that dies (*pid, and
 * in pids as --pid takes it). */
static int mortal(struct t *t, pid_t *pid, int *wfd, char pids[16])
{
	int p[2];
	if (hf_sys_pipe2(p, O_CLOEXEC) < 0)
		return fail(t, "pipe failed");
	fflush(NULL);
	*pid = hf_sys_fork();
	if (*pid == 0) {
		char c;
		hf_sys_close(p[1]);
		while (hf_sys_read(p[0], &c, 1) > 0)
			;
		_exit(0);
	}
	hf_sys_close(p[0]);
	if (*pid < 0) {
		hf_sys_close(p[1]);
		return fail(t, "fork failed");
	}
	*wfd = p[1];
	snprintf(pids, 16, "%d", (int)*pid);
	return 0;
}

static void mortal_end(pid_t pid, int wfd)
{
	int st;
	hf_sys_close(wfd); /* EOF: it exits */
	hf_sys_waitpid(pid, &st, 0);
}

/* The lock's status: its state into state, token and fence of its record
 * (empty / 0 when none), how many claims beside it. -1 on failure. */
static int lock_look(struct t *t, const char *path, char *state, char *token, int64_t *fence,
		     int64_t *claims)
{
	hf_rec *r;
	int rc = hf_lock_status(path, &r);
	if (rc < 0)
		return fail(t, "lock status %s: %s", path, hf_strerror(rc));
	snprintf(state, 32, "%s", rec_str(r, "state"));
	snprintf(token, TOK_MAX, "%s", rec_str(r, "token"));
	if (fence)
		*fence = rec_int(r, "fence");
	if (claims)
		*claims = rec_int(r, "claims");
	hf_rec_free(r);
	return 0;
}

/* Held by a live record (its token into token), no claim beside it. */
static int lock_held(struct t *t, const char *path, char *token, int64_t *fence)
{
	char state[32];
	int64_t claims;
	if (lock_look(t, path, state, token, fence, &claims) < 0)
		return -1;
	if (strcmp(state, "held") || !token[0])
		return fail(t, "expected the lock held, found it %s", state);
	if (claims)
		return fail(t, "%lld claim(s) left beside the lock", (long long)claims);
	return 0;
}

static int lock_release(struct t *t, const char *path, const char *token)
{
	return expect_exit(t, "release with the holder's token",
			   run(t, ARGS("lock", "release", path, "--token", token)), 0);
}

/* A fresh acquisition succeeds with a fence above `above`; released. */
static int lock_fresh(struct t *t, const char *path, int64_t above)
{
	char token[TOK_MAX];
	int64_t f;
	if (expect_exit(t, "a fresh acquire", run(t, ACQ(path)), 0) < 0 ||
	    lock_held(t, path, token, &f) < 0)
		return -1;
	if (f <= above)
		return fail(t, "fence %lld after fence %lld: not increasing", (long long)f,
			    (long long)above);
	return lock_release(t, path, token);
}

/* The last steps of a schedule: another acquirer (who) is refused while
 * token holds t->lock, token's release, then a fresh acquisition above
 * fence f. */
static int refused_then_fresh(struct t *t, const char *who, const char *token, int64_t f)
{
	if (expect_exit(t, who, run(t, ACQ(t->lock)), 1) < 0 || lock_release(t, t->lock, token) < 0)
		return -1;
	return lock_fresh(t, t->lock, f);
}

/* A lock of a process that then died (its pid reaped). */
static int lock_dead(struct t *t, const char *path)
{
	pid_t x;
	int xw;
	char xs[16];
	if (mortal(t, &x, &xw, xs) < 0)
		return -1;
	/* taken for x by the library, held by no keeper (a keeper would
	 * release it when x ends, keeper.c K5): x's end leaves a dead owner */
	hf_lock *l = NULL;
	int e = hf_lock_new(path, &l);
	if (e == 0 && (e = hf_lock_set(l, HF_OPT_PID, x)) == 0 && (e = hf_lock_acquire(l)) == 0) {
		int fd = hf_lock_detach(l);
		if (fd >= 0)
			hf_sys_close(fd);
	}
	hf_lock_free(l);
	mortal_end(x, xw);
	return expect_exit(t, "an acquire for the owner that dies", e < 0 ? 1 : 0, 0);
}

/* A lock being made (at L, no record yet) refuses another; its maker
 * enters. */
static int c_dl_made(struct t *t)
{
	struct kid a;
	if (kid_start(t, &a, "pause:dirlock.acquire.made", ACQ(t->lock)) < 0 ||
	    kid_expect(t, &a, "dirlock.acquire.made") < 0)
		return kid_wait(&a), -1;
	int eb = run(t, ACQ(t->lock));
	kid_go(&a);
	int ea = kid_wait(&a);
	char token[TOK_MAX];
	int64_t f;
	if (expect_exit(t, "a second acquirer while the first makes it", eb, 1) < 0 ||
	    expect_exit(t, "the maker", ea, 0) < 0 || lock_held(t, t->lock, token, &f) < 0)
		return -1;
	return refused_then_fresh(t, "a third acquirer", token, f);
}

/* Seed 000's R1/R2: R1 judged X dead and pauses; R2 reaps X and enters;
 * R1's claim takes R2's fresh lock, finds another token, restores it. */
static int c_dl_reapers(struct t *t)
{
	if (lock_dead(t, t->lock) < 0)
		return -1;
	struct kid r1;
	if (kid_start(t, &r1, "pause:dirlock.reap.judged", ACQ(t->lock)) < 0 ||
	    kid_expect(t, &r1, "dirlock.reap.judged") < 0)
		return kid_wait(&r1), -1;
	int e2 = run(t, ACQ(t->lock));
	char token[TOK_MAX] = "", after[TOK_MAX];
	int64_t f = 0, f2;
	int look = e2 == 0 ? lock_held(t, t->lock, token, &f) : 0;
	kid_go(&r1);
	int e1 = kid_wait(&r1);
	if (expect_exit(t, "R2 (reaps the dead owner)", e2, 0) < 0 || look < 0 ||
	    expect_exit(t, "R1 (its claim took R2's lock)", e1, 1) < 0 ||
	    lock_held(t, t->lock, after, &f2) < 0)
		return -1;
	if (strcmp(token, after))
		return fail(t, "R2's lock was not restored (another token at the name)");
	return refused_then_fresh(t, "B while R2 holds", token, f);
}

/* The same, R1's restore finding the name taken by B: the claim stays, a
 * barrier; B withdraws without entering; R2 releases from the claim. */
static int c_dl_barrier(struct t *t)
{
	if (lock_dead(t, t->lock) < 0)
		return -1;
	struct kid r1, b;
	b.pid = -1;
	if (kid_start(t, &r1, "pause:dirlock.reap.judged;pause:claim.restore.checked",
		      ACQ(t->lock)) < 0 ||
	    kid_expect(t, &r1, "dirlock.reap.judged") < 0)
		return kid_wait(&r1), -1;
	char token[TOK_MAX] = "", state[32];
	int64_t f = 0, claims = 0;
	int rc = expect_exit(t, "R2 (reaps the dead owner)", run(t, ACQ(t->lock)), 0);
	if (rc == 0)
		rc = lock_held(t, t->lock, token, &f);
	if (rc == 0) {
		kid_go(&r1);
		rc = kid_expect(t, &r1, "claim.restore.checked");
	}
	if (rc == 0)
		rc = lock_look(t, t->lock, state, (char[TOK_MAX]){ 0 }, NULL, &claims);
	if (rc == 0 && claims != 1)
		rc = fail(t, "R2's lock is not in R1's claim (%lld claims)", (long long)claims);
	if (rc == 0 && kid_start(t, &b, "pause:dirlock.acquire.published", ACQ(t->lock)) == 0)
		rc = kid_expect(t, &b, "dirlock.acquire.published");
	if (rc == 0)
		kid_go(&r1);
	int e1 = kid_wait(&r1);
	if (rc == 0)
		kid_go(&b);
	int eb = kid_wait(&b);
	if (rc < 0 || expect_exit(t, "R1 (its restore found the name taken)", e1, 1) < 0 ||
	    expect_exit(t, "B (a barrier beside the lock)", eb, 1) < 0 ||
	    lock_look(t, t->lock, state, (char[TOK_MAX]){ 0 }, NULL, &claims) < 0)
		return -1;
	if (strcmp(state, "free") || claims != 1)
		return fail(t, "expected the name free and the barrier beside it, found %s and %lld "
			    "claim(s)", state, (long long)claims);
	if (lock_release(t, t->lock, token) < 0 ||
	    lock_look(t, t->lock, state, (char[TOK_MAX]){ 0 }, NULL, &claims) < 0)
		return -1;
	if (claims)
		return fail(t, "the barrier is still there after R2's release");
	return lock_fresh(t, t->lock, f);
}

/* The registry's scratch tree: <dir>/tree (and tree/sub). */
static int scope_tree(struct t *t, char *tree, size_t n)
{
	if ((size_t)snprintf(tree, n, "%.*s/tree", PATH_MAX - 64, t->dir) >= n)
		return fail(t, "the scratch path is too long");
	int rc = hf_sys_mkdirat(AT_FDCWD, tree, 0700);
	if (rc < 0 && rc != -EEXIST)
		return fail(t, "cannot make %s: %s", tree, hf_strerror(rc));
	return 0;
}

/* Two overlapping write scopes: A decided under the registry's lock and
 * paused; B's registration waits for the lock, then is refused naming A. */
static int c_sc_overlap(struct t *t)
{
	char tree[PATH_MAX], sa[PATH_MAX + 32], sb[PATH_MAX + 32];
	if (scope_tree(t, tree, sizeof tree) < 0)
		return -1;
	snprintf(sa, sizeof sa, "%s:write:recursive", tree);
	snprintf(sb, sizeof sb, "%s/sub:write", tree);
	struct kid a, b;
	int p[2];
	if (hf_sys_pipe2(p, O_CLOEXEC) < 0)
		return fail(t, "pipe failed");
	if (kid_start(t, &a, "pause:scope.register.decided",
		      ARGS("scope", "register", "pod-a", sa, "--pid", self_pid)) < 0 ||
	    kid_expect(t, &a, "scope.register.decided") < 0) {
		hf_sys_close(p[0]);
		hf_sys_close(p[1]);
		return kid_wait(&a), -1;
	}
	int rc = kid_start_err(t, &b, NULL, ARGS("scope", "register", "pod-b", sb, "--pid", self_pid),
			       p[1]);
	hf_sys_close(p[1]);
	kid_go(&a);
	int ea = kid_wait(&a), eb = rc < 0 ? -1 : kid_wait(&b);
	char err[2048];
	ssize_t len = hf_sys_read(p[0], err, sizeof err - 1);
	err[len > 0 ? len : 0] = '\0';
	hf_sys_close(p[0]);
	if (expect_exit(t, "A's registration", ea, 0) < 0 ||
	    expect_exit(t, "B's overlapping registration", eb, 1) < 0)
		return -1;
	if (!strstr(err, "pod-a"))
		return fail(t, "B's refusal does not name pod-a: %s", err);
	if (expect_exit(t, "release of pod-a", run(t, ARGS("scope", "release", "pod-a")), 0) < 0 ||
	    expect_exit(t, "B once A released",
			run(t, ARGS("scope", "register", "pod-b", sb, "--pid", self_pid)), 0) < 0)
		return -1;
	return expect_exit(t, "release of pod-b", run(t, ARGS("scope", "release", "pod-b")), 0);
}

/* A pod whose process died gives its scope back to the next registration. */
static int c_sc_reclaim(struct t *t)
{
	char tree[PATH_MAX], spec[PATH_MAX + 32];
	if (scope_tree(t, tree, sizeof tree) < 0)
		return -1;
	snprintf(spec, sizeof spec, "%s:write:recursive", tree);
	pid_t x;
	int xw;
	char xs[16];
	if (mortal(t, &x, &xw, xs) < 0)
		return -1;
	int ex = run(t, ARGS("scope", "register", "pod-x", spec, "--pid", xs));
	int held = run(t, ARGS("scope", "register", "pod-y", spec, "--pid", self_pid));
	mortal_end(x, xw);
	if (expect_exit(t, "pod-x's registration", ex, 0) < 0 ||
	    expect_exit(t, "pod-y while pod-x lives", held, 1) < 0 ||
	    expect_exit(t, "pod-y once pod-x's process is gone",
			run(t, ARGS("scope", "register", "pod-y", spec, "--pid", self_pid)), 0) < 0)
		return -1;
	return expect_exit(t, "release of pod-y", run(t, ARGS("scope", "release", "pod-y")), 0);
}

/* run: CMD runs only with the lock, a second run is refused meanwhile,
 * CMD's status comes back and the lock is free after. */
static int c_run(struct t *t)
{
	struct kid a;
	if (kid_start(t, &a, "pause:run.acquired",
		      ARGS("run", "-n", "--lock", t->lock, "--", "true")) < 0 ||
	    kid_expect(t, &a, "run.acquired") < 0)
		return kid_wait(&a), -1;
	int eb = run(t, ARGS("run", "-n", "--lock", t->lock, "--", "true"));
	kid_go(&a);
	char state[32], token[TOK_MAX];
	if (expect_exit(t, "a second run meanwhile", eb, 1) < 0 ||
	    expect_exit(t, "the first run", kid_wait(&a), 0) < 0 ||
	    expect_exit(t, "run of sh -c 'exit 3'",
			run(t, ARGS("run", "-n", "--lock", t->lock, "--", "sh", "-c", "exit 3")),
			3) < 0 ||
	    lock_look(t, t->lock, state, token, NULL, NULL) < 0)
		return -1;
	return strcmp(state, "free") ? fail(t, "the lock is %s after run, expected free", state) : 0;
}

/* edit: the atomic replace keeps FILE's mode; a failing CMD leaves FILE as
 * it was, the same inode; nothing else is left beside it. */
static int c_edit(struct t *t)
{
	char f[PATH_MAX + 80];
	snprintf(f, sizeof f, "%s/%s.txt", t->dir, t->name);
	if (put_at(t, f, "a\n") < 0)
		return -1;
	int fd = hf_sys_openat(AT_FDCWD, f, O_RDONLY | O_CLOEXEC, 0);
	int rc = fd < 0 ? fd : hf_sys_fchmod(fd, 0640);
	if (fd >= 0)
		hf_sys_close(fd);
	if (rc < 0)
		return fail(t, "chmod %s: %s", f, hf_strerror(rc));
	struct stat st1, st2;
	char *c1 = NULL, *c2 = NULL;
	int e1 = run(t, ARGS("edit", f, "-n", "--", "tr", "a", "b"));
	int s1 = hf_sys_fstatat(AT_FDCWD, f, &st1, 0);
	hf_read_file_at(AT_FDCWD, f, 0, 4096, &c1, NULL, NULL);
	int e2 = run(t, ARGS("edit", f, "-n", "--", "sh", "-c", "cat >/dev/null; echo junk; exit 4"));
	int s2 = hf_sys_fstatat(AT_FDCWD, f, &st2, 0);
	hf_read_file_at(AT_FDCWD, f, 0, 4096, &c2, NULL, NULL);
	char base[96];
	snprintf(base, sizeof base, "%s.txt", t->name);
	int dfd = hf_sys_openat(AT_FDCWD, t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	int left = 0;
	if (dfd >= 0) {
		left = hf_dir_each(dfd, base, count_cb, &left) < 0 ? -1 : left;
		hf_sys_close(dfd);
	}
	bool same1 = c1 && !strcmp(c1, "b\n"), same2 = c2 && !strcmp(c2, "b\n");
	free(c1);
	free(c2);
	if (expect_exit(t, "edit with tr a b", e1, 0) < 0 ||
	    expect_exit(t, "edit with a CMD that exits 4", e2, 4) < 0)
		return -1;
	if (s1 < 0 || s2 < 0 || !same1)
		return fail(t, "the edited file is not \"b\\n\"");
	if ((st1.st_mode & 07777) != 0640)
		return fail(t, "the replacement has mode %04o, FILE had 0640",
			    (unsigned)(st1.st_mode & 07777));
	if (!same2 || st1.st_ino != st2.st_ino)
		return fail(t, "a failing CMD changed FILE");
	/* FILE, FILE.lock.holdfast (the lock's state directory) */
	if (left != 2)
		return fail(t, "%d entries named %s* beside FILE, expected FILE and its lock's "
			    "state directory", left, base);
	return 0;
}

static const struct {
	const char *kind;
	const char *name;
	const char *what;
	int (*fn)(struct t *);
} checks[] = {
	{ "session", "publish", "a take's record appears whole or not at all", c_publish },
	{ "session", "live", "a live lock refuses every lane, the same lane included; untouched",
	  c_live },
	{ "session", "break", "a stale lock is broken, named under \"broke\", no aside left",
	  c_break },
	{ "session", "unreadable", "garbage, bad JSON, empty, EACCES, a directory: exit 65, untouched",
	  c_unreadable },
	{ "session", "legacy", "a bare ISO-8601 timestamp is honoured, then breakable", c_legacy },
	{ "session", "skew", "a record dated in the future is live (clock skew)", c_skew },
	{ "session", "release-rules", "release: other lane 1, other owner 1, holder 0, free 69",
	  c_release_rules },
	{ "session", "not-records", "a symlink or directory named like an aside denies nothing",
	  c_not_records },
};

/* After the session's race schedules (schedule.c). */
static const struct {
	const char *kind;
	const char *name;
	const char *what;
	int (*fn)(struct t *);
} later[] = {
	{ "dirlock", "being-made", "a lock being made refuses another; its maker enters",
	  c_dl_made },
	{ "dirlock", "two-reapers", "R1/R2: a reaper's claim takes the new lock and restores it",
	  c_dl_reapers },
	{ "dirlock", "barrier", "a restore that finds the name taken leaves a barrier; B withdraws",
	  c_dl_barrier },
	{ "scope", "overlap", "overlapping write scopes: the second is refused, naming the first",
	  c_sc_overlap },
	{ "scope", "reclaim", "a dead pod's scope goes to the next registration", c_sc_reclaim },
	{ "run", "hold-and-pass", "CMD runs under the lock, a second run is refused, status passed",
	  c_run },
	{ "edit", "atomic-replace", "atomic replace keeps the mode; a failing CMD changes nothing",
	  c_edit },
};

/* The file system and /proc probes (selftest_fs.c), first. */
static const struct {
	int which;
	const char *name;
	const char *what;
} probes[] = {
	{ ST_P_LINK, "hard-links", "linkat on DIR's fs (every record is published by link)" },
	{ ST_P_TMPFILE, "o-tmpfile", "O_TMPFILE + linkat on DIR's fs" },
	{ ST_P_NOREPLACE, "rename-noreplace", "renameat2 RENAME_NOREPLACE on DIR's fs" },
	{ ST_P_FLOCK, "flock", "flock(2) excludes on DIR's fs, files and directories" },
	{ ST_P_INOTIFY, "inotify", "inotify sees a removal in DIR (waits wake on the release)" },
	{ ST_P_PROC, "start-times", "/proc gives process start times (liveness)" },
	{ ST_P_PIDNS, "pidns", "/proc is this pid namespace's" },
};

/* Remove everything in dfd, depth first (best effort). */
static int rm_cb(int dfd, const char *name, void *ctx)
{
	(void)ctx;
	if (hf_sys_unlinkat(dfd, name, 0) == -EISDIR ||
	    hf_sys_unlinkat(dfd, name, AT_REMOVEDIR) == -ENOTEMPTY) {
		int sub = hf_sys_openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (sub >= 0) {
			hf_dir_each(sub, "", rm_cb, NULL);
			hf_sys_close(sub);
		}
		hf_sys_unlinkat(dfd, name, AT_REMOVEDIR);
	}
	return 0;
}

/* --json: the checks, printed as one object at the end */
static json_t *json_checks;

static int line(int i, bool ok, const char *kind, const char *name, const char *what,
		const char *why, bool note)
{
	if (json_checks) {
		const char *w = why && why[0] ? cli_shown(why, (char[2048]){ 0 }, 2048) : NULL;
		json_array_append_new(json_checks,
				      json_pack("{s:i, s:s, s:s, s:s, s:b, s:s?, s:s?}", "n", i,
						"kind", kind, "name", name, "what", what, "ok", ok,
						"why", ok ? NULL : w, "note", ok && note ? w : NULL));
		return ok ? 0 : 1;
	}
	char k[24];
	snprintf(k, sizeof k, "%s:", kind);
	const char *shown = why && why[0] ? cli_shown(why, (char[2048]){ 0 }, 2048) : "";
	printf("%s %2d %-8s %-17s %s%s%s%s\n", ok ? "ok  " : "FAIL", i, k, name, what,
	       !shown[0] ? "" : note ? " (note: " : ": ", shown, shown[0] && note ? ")" : "");
	fflush(stdout);
	return ok ? 0 : 1;
}

int cmd_selftest(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return HF_EXIT_OK;
	}
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
		return cli_version();
	/* --json anywhere: one object with every check at the end */
	bool json = false;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json")) {
			json = true;
			cli_json_enable();
			memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof *argv);
			argc--;
			i--;
		}
	if (argc == 3 && !strcmp(argv[1], "--naive-take")) {
		int rc = cli_naive_take(argv[2]);
		return rc == 0 ? HF_EXIT_OK : cli_exit_for(rc);
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		if (argc > 2)
			cli_err("selftest: one DIR at most (given %d: %s %s ...); see 'holdfast "
				"selftest --help'",
				argc - 1, CLI_SHOW(argv[1]), CLI_SHOW(argv[2]));
		else
			cli_err("selftest: unknown option '%s' (see 'holdfast selftest --help')",
				CLI_SHOW(argv[1]));
		return HF_EXIT_USAGE;
	}
	struct t t;
	memset(&t, 0, sizeof t);
	char hex[17];
	int rc = hf_random_hex(hex, 8);
	if (rc == 0) {
		snprintf(t.dir, sizeof t.dir, "%s/.holdfast-selftest-%s", argc == 2 ? argv[1] : ".",
			 hex);
		rc = hf_sys_mkdirat(AT_FDCWD, t.dir, 0700);
	}
	if (rc < 0) {
		const char *d = argc == 2 ? argv[1] : ".";
		struct stat st;
		char owner[300] = "", me[300];
		if ((rc == -EACCES || rc == -EPERM) && hf_sys_fstatat(AT_FDCWD, d, &st, 0) == 0)
			snprintf(owner, sizeof owner, " (%s is owned by %s, mode %04o; you are %s)",
				 CLI_SHOW(d), cli_user_words(st.st_uid, (char[300]){ 0 }, 300),
				 (unsigned)(st.st_mode & 07777),
				 cli_user_words(geteuid(), me, sizeof me));
		cli_err("selftest: cannot make a scratch directory in %s: %s%s", CLI_SHOW(d),
			hf_strerror(rc), owner);
		return cli_fail_rc(rc, d, NULL);
	}
	json_checks = json ? json_array() : NULL;
	/* the scopes' registry is the scratch directory's, never the user's */
	char reg[PATH_MAX + 32];
	snprintf(reg, sizeof reg, "%s/registry/scope.lock", t.dir);
	setenv("HOLDFAST_REGISTRY", reg, 1);
	unsetenv("HOLDFAST_POD");
	snprintf(self_pid, sizeof self_pid, "%d", (int)getpid());
	int failed = 0, i = 0;
	int sdfd = hf_sys_openat(AT_FDCWD, t.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	for (size_t p = 0; p < HF_ARRAY_SIZE(probes); p++) {
		char why[1024] = "cannot open the scratch directory";
		int r = sdfd < 0 ? ST_FAIL : st_probe(probes[p].which, sdfd, t.dir, why, sizeof why);
		failed += line(++i, r != ST_FAIL, "fs", probes[p].name, probes[p].what, why,
			       r == ST_NOTE);
	}
	if (sdfd >= 0)
		hf_sys_close(sdfd);
	int nown = (int)HF_ARRAY_SIZE(checks), nsched = (int)sched_count;
	int nlater = (int)HF_ARRAY_SIZE(later);
	for (int c = 0; c < nown + nsched + nlater; c++) {
		t.why[0] = '\0';
		snprintf(t.name, sizeof t.name, "c%02d.lock", c + 1);
		snprintf(t.lock, sizeof t.lock, "%s/%s", t.dir, t.name);
		int ok;
		const char *kind = "session", *name, *what;
		if (c < nown) {
			ok = checks[c].fn(&t) == 0;
			name = checks[c].name;
			what = checks[c].what;
		} else if (c < nown + nsched) {
			const struct sched *sc = &sched_table[c - nown];
			ok = c_schedule(&t, sc) == 0;
			name = sc->name;
			what = sc->what;
		} else {
			int k = c - nown - nsched;
			ok = later[k].fn(&t) == 0;
			kind = later[k].kind;
			name = later[k].name;
			what = later[k].what;
		}
		failed += line(++i, ok, kind, name, what, ok ? "" : t.why, false);
	}
	int n = i;
	/* whatever a test's fault rules say, the scratch directory goes */
	hf_fault_inject(NULL, NULL, 0);
	int dfd = hf_sys_openat(AT_FDCWD, t.dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd >= 0) {
		hf_dir_each(dfd, "", rm_cb, NULL);
		hf_sys_close(dfd);
	}
	hf_sys_unlinkat(AT_FDCWD, t.dir, AT_REMOVEDIR);
	cli_err("selftest: %d of %d checks passed on %s", n - failed, n,
		CLI_SHOW(argc == 2 ? argv[1] : "."));
	if (json) {
		char abs[PATH_MAX];
		cli_json_print(json_pack("{s:s, s:b, s:i, s:i, s:i, s:o}", "dir",
					 cli_abs_path(argc == 2 ? argv[1] : ".", abs, sizeof abs),
					 "ok", !failed, "passed", n - failed, "total", n, "exit",
					 failed ? HF_EXIT_CONFLICT : HF_EXIT_OK, "checks", json_checks));
		json_checks = NULL;
	}
	return failed ? HF_EXIT_CONFLICT : HF_EXIT_OK;
}
