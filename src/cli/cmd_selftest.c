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
#include "schedule.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
	"Runs the session lock's scripted interleavings on DIR's file system (default:\n"
	"the current directory), in a scratch directory DIR/.holdfast-selftest-<hex> that\n"
	"is removed afterwards. Each check re-runs this binary with pause rules\n"
	"(HOLDFAST_FAULTS) and lets its processes go in a fixed order: two stealers of\n"
	"one stale lock, a third taker while the winner's lock is moved aside, a release\n"
	"racing a steal, a withdrawal whose record is moved under it, the old\n"
	"read-then-write guard next to the atomic take, ...\n"
	"Prints one line per check; exits 0 only if every check passes, else 1.\n"
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

static const struct {
	const char *name;
	const char *what;
	int (*fn)(struct t *);
} checks[] = {
	{ "publish", "a take's record appears whole or not at all", c_publish },
	{ "live", "a live lock refuses every lane, the same lane included; untouched", c_live },
	{ "break", "a stale lock is broken, named under \"broke\", no aside left", c_break },
	{ "unreadable", "garbage, bad JSON, empty, EACCES, a directory: exit 65, untouched",
	  c_unreadable },
	{ "legacy", "a bare ISO-8601 timestamp is honoured, then breakable", c_legacy },
	{ "skew", "a record dated in the future is live (clock skew)", c_skew },
	{ "release-rules", "release: other lane 1, other owner 1, holder 0, free 69",
	  c_release_rules },
	{ "not-records", "a symlink or directory named like an aside denies nothing",
	  c_not_records },
};

static int rm_cb(int dfd, const char *name, void *ctx)
{
	(void)ctx;
	if (hf_sys_unlinkat(dfd, name, 0) == -EISDIR)
		hf_sys_unlinkat(dfd, name, AT_REMOVEDIR);
	return 0;
}

int cmd_selftest(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return HF_EXIT_OK;
	}
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
		return cli_version();
	if (argc == 3 && !strcmp(argv[1], "--naive-take")) {
		int rc = cli_naive_take(argv[2]);
		return rc == 0 ? HF_EXIT_OK : cli_exit_for(rc);
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fputs(usage, stderr);
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
		cli_err("selftest: cannot make a scratch directory in %s: %s",
			CLI_SHOW(argc == 2 ? argv[1] : "."), hf_strerror(rc));
		return cli_exit_for(rc);
	}
	int failed = 0, nown = (int)HF_ARRAY_SIZE(checks), n = nown + (int)sched_count;
	for (int i = 0; i < n; i++) {
		t.why[0] = '\0';
		snprintf(t.name, sizeof t.name, "c%02d.lock", i + 1);
		snprintf(t.lock, sizeof t.lock, "%s/%s", t.dir, t.name);
		const struct sched *sc = i < nown ? NULL : &sched_table[i - nown];
		int ok = (sc ? c_schedule(&t, sc) : checks[i].fn(&t)) == 0;
		failed += !ok;
		printf("%s %2d %-17s %s%s%s\n", ok ? "ok  " : "FAIL", i + 1,
		       sc ? sc->name : checks[i].name, sc ? sc->what : checks[i].what,
		       ok ? "" : ": ",
		       ok ? "" : cli_shown(t.why, (char[4 * sizeof t.why]){ 0 }, 4 * sizeof t.why));
		fflush(stdout);
	}
	int dfd = hf_sys_openat(AT_FDCWD, t.dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd >= 0) {
		hf_dir_each(dfd, "", rm_cb, NULL);
		hf_sys_close(dfd);
	}
	hf_sys_unlinkat(AT_FDCWD, t.dir, AT_REMOVEDIR);
	cli_err("selftest: %d of %d checks passed on %s", n - failed, n,
		CLI_SHOW(argc == 2 ? argv[1] : "."));
	return failed ? HF_EXIT_CONFLICT : HF_EXIT_OK;
}
