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
 * One line per check on stdout ("ok" or "FAIL" and why); exit 0 only if all
 * pass, 1 otherwise.
 */
#include "cli.h"

#include "claim.h"
#include "holdfast.h"
#include "internal.h"
#include "session.h"

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
	"(Internal: 'holdfast selftest --naive-take FILE' runs the seed's old guard once;\n"
	"the differential check uses it. Never use it as a lock.)\n";

#define KID_TIMEOUT_MS 10000
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

static void kid_exec(int note, int go, const char *rules, const char *const *args)
{
	const char *argv[16] = { "holdfast" };
	size_t n = 1;
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int null = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDWR, 0);
	if (null < 0 || hf_sys_dup2(note, NOTIFY_FD) < 0 || hf_sys_dup2(go, GO_FD) < 0 ||
	    hf_sys_dup2(null, 0) < 0 || hf_sys_dup2(null, 1) < 0 || hf_sys_dup2(null, 2) < 0)
		_exit(126);
	setenv("HOLDFAST_PAUSE_FDS", "100,101", 1);
	if (rules)
		setenv("HOLDFAST_FAULTS", rules, 1);
	else
		unsetenv("HOLDFAST_FAULTS");
	hf_sys_execvp("/proc/self/exe", (char *const *)argv);
	_exit(127);
}

/* Start `holdfast ARGS...` with rules; args NULL-terminated. */
static int kid_start(struct t *t, struct kid *k, const char *rules, const char *const *args)
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
		kid_exec(n[1], g[0], rules, args);
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

/* A record of lane, started age_ms ago (negative: in the future), at path. */
static int put_record_at(struct t *t, const char *path, const char *lane, int64_t age_ms)
{
	struct hf_sessionlock_record r;
	memset(&r, 0, sizeof r);
	snprintf(r.lane, sizeof r.lane, "%s", lane);
	snprintf(r.owner, sizeof r.owner, "selftest-%s", lane);
	r.pid = 1;
	snprintf(r.host, sizeof r.host, "%s", hf_host_name());
	r.started_ms = hf_sys_now_ms() - age_ms;
	char buf[1024];
	if (hf_session_format(&r, buf, sizeof buf) < 0)
		return fail(t, "cannot format a record");
	return put_at(t, path, buf);
}

static int put_record(struct t *t, const char *lane, int64_t age_ms)
{
	return put_record_at(t, t->lock, lane, age_ms);
}

/* t's lock + ".aside-" + hex16 */
static void aside_path(struct t *t, const char *hex16, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s", t->lock, HF_SESSION_ASIDE_INFIX, hex16);
}

static int put_legacy(struct t *t, int64_t age_ms)
{
	char buf[64];
	hf_time_format(hf_sys_now_ms() - age_ms, buf, sizeof buf - 1);
	strcat(buf, "\n");
	return put(t, buf);
}

/* The lock's bytes (malloc'd), NULL when absent. */
static char *slurp(struct t *t)
{
	char *buf = NULL;
	if (hf_read_file_at(AT_FDCWD, t->lock, O_NONBLOCK, 1 << 16, &buf, NULL, NULL) < 0)
		return NULL;
	return buf;
}

static int count_cb(int dfd, const char *name, void *ctx)
{
	(void)dfd;
	(void)name;
	(*(int *)ctx)++;
	return 0;
}

static int asides(struct t *t)
{
	char prefix[96];
	snprintf(prefix, sizeof prefix, "%s%s", t->name, HF_SESSION_ASIDE_INFIX);
	int dfd = hf_sys_openat(AT_FDCWD, t->dir, O_RDONLY | O_DIRECTORY, 0);
	int n = 0;
	if (dfd >= 0) {
		hf_claim_scan(dfd, prefix, count_cb, &n);
		hf_sys_close(dfd);
	}
	return n;
}

/* The lock is held (live) at its name by lane, with no aside beside it. */
static int held_by(struct t *t, const char *lane)
{
	struct hf_sessionlock_status st;
	int rc = hf_sessionlock_status(t->lock, 0, &st);
	if (rc < 0)
		return fail(t, "status: %s", hf_strerror(rc));
	if (st.state != HF_SESSION_HELD || st.in_aside || strcmp(st.rec.lane, lane))
		return fail(t, "expected the lock held by %s at its name, found state %d lane '%s'%s",
			    lane, st.state, st.rec.lane, st.in_aside ? " (in an aside)" : "");
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
	struct hf_sessionlock_status st;
	int rc = hf_sessionlock_status(t->lock, 0, &st);
	int before = rc == 0 ? st.state : -1;
	kid_go(&a);
	if (expect_exit(t, "the taker", kid_wait(&a), 0) < 0)
		return -1;
	if (before != HF_SESSION_FREE)
		return fail(t, "a reader saw state %d before the link, expected free", before);
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
	struct hf_sessionlock_status st;
	hf_sessionlock_status(t->lock, 0, &st);
	if (!st.rec.has_broke || strcmp(st.rec.broke.lane, "old") ||
	    strcmp(st.rec.broke.owner, "selftest-old") || st.rec.broke.age_s < 7100)
		return fail(t, "the new record does not name the broken lock under \"broke\"");
	return held_by(t, "new");
}

/* The common start of the stealer schedules: a lock two hours stale, and
 * stealers alpha and beta (with their pause rules) both paused at the point
 * where they have judged it stale. On failure both are collected. */
static int stealers_judged(struct t *t, struct kid *a, const char *rules_a, struct kid *b,
			   const char *rules_b)
{
	if (put_record(t, "old", 2 * HOUR) < 0)
		return -1;
	kid_start(t, a, rules_a, TAKE(t, "alpha"));
	kid_start(t, b, rules_b, TAKE(t, "beta"));
	if (kid_expect(t, a, "session.take.judged") < 0 ||
	    kid_expect(t, b, "session.take.judged") < 0) {
		kid_wait(a);
		kid_wait(b);
		return -1;
	}
	return 0;
}

/* Two stealers judged the same stale lock; A breaks it first. */
static int c_stealers_judged(struct t *t)
{
	struct kid a, b;
	if (stealers_judged(t, &a, "pause:session.take.judged", &b, "pause:session.take.judged") < 0)
		return -1;
	kid_go(&a);
	int ea = kid_wait(&a);
	kid_go(&b); /* B now moves A's fresh lock: it must put it back */
	int eb = kid_wait(&b);
	if (expect_exit(t, "stealer alpha", ea, 0) < 0 || expect_exit(t, "stealer beta", eb, 1) < 0)
		return -1;
	return held_by(t, "alpha");
}

/* A has moved the stale lock aside; B's rename finds nothing. */
static int c_stealers_moved(struct t *t)
{
	struct kid a, b;
	if (stealers_judged(t, &a, "pause:session.take.judged;pause:session.take.moved", &b, "pause:session.take.judged") < 0)
		return -1;
	kid_go(&a);
	if (kid_expect(t, &a, "session.take.moved") < 0)
		return kid_wait(&a), kid_wait(&b), -1;
	kid_go(&b); /* ENOENT, publishes at the free name, sweeps A's stale aside */
	int eb = kid_wait(&b);
	kid_go(&a); /* its aside is gone: it finds B's live lock */
	int ea = kid_wait(&a);
	if (expect_exit(t, "stealer beta", eb, 0) < 0 || expect_exit(t, "stealer alpha", ea, 1) < 0)
		return -1;
	return held_by(t, "beta");
}

/* A won; B moved A's fresh lock aside; C arrives and finds the name free. */
static int c_third_taker(struct t *t)
{
	struct kid a, b;
	if (stealers_judged(t, &a, "pause:session.take.judged", &b, "pause:session.take.judged;pause:session.take.moved") < 0)
		return -1;
	kid_go(&a);
	int ea = kid_wait(&a);
	kid_go(&b);
	if (kid_expect(t, &b, "session.take.moved") < 0) /* A's lock sits in B's aside */
		return kid_wait(&b), -1;
	int ec = run(t, TAKE(t, "gamma")); /* sees A's live aside: withdraws, restores it */
	kid_go(&b);
	int eb = kid_wait(&b);
	if (expect_exit(t, "winner alpha", ea, 0) < 0 || expect_exit(t, "third taker gamma", ec, 1) < 0 ||
	    expect_exit(t, "stealer beta", eb, 1) < 0)
		return -1;
	return held_by(t, "alpha");
}

/* As above, but B's restore finds C at the name: the aside stays a barrier
 * and C must see it after publishing. */
static int c_barrier(struct t *t)
{
	struct kid a, b, c;
	if (stealers_judged(t, &a, "pause:session.take.judged", &b, "pause:session.take.judged;pause:session.take.moved") < 0)
		return -1;
	kid_go(&a);
	int ea = kid_wait(&a);
	kid_go(&b);
	if (kid_expect(t, &b, "session.take.moved") < 0)
		return kid_wait(&b), -1;
	kid_start(t, &c, "pause:session.take.published", TAKE(t, "gamma"));
	if (kid_expect(t, &c, "session.take.published") < 0)
		return kid_wait(&b), kid_wait(&c), -1;
	kid_go(&b); /* mismatch; restore fails (C is at the name): a barrier */
	int eb = kid_wait(&b);
	kid_go(&c); /* C's scan sees the barrier: withdraw, restore A's lock */
	int ec = kid_wait(&c);
	if (expect_exit(t, "winner alpha", ea, 0) < 0 || expect_exit(t, "stealer beta", eb, 1) < 0 ||
	    expect_exit(t, "third taker gamma", ec, 1) < 0)
		return -1;
	return held_by(t, "alpha");
}

/* The holder releases while a stealer breaks its stale lock. */
static int c_release_steal(struct t *t)
{
	struct kid h, s;
	if (put_record(t, "data", 2 * HOUR) < 0)
		return -1;
	/* 1: the releaser judged the lock its own; the stealer replaces it. */
	kid_start(t, &h, "pause:session.release.read", RELEASE(t, "data"));
	if (kid_expect(t, &h, "session.release.read") < 0)
		return kid_wait(&h), -1;
	int es = run(t, TAKE(t, "dist"));
	kid_go(&h); /* its record is gone (the stealer deleted it): the stealer's
		       lock is not its own, and it is left untouched */
	int eh = kid_wait(&h);
	if (expect_exit(t, "stealer dist", es, 0) < 0 || expect_exit(t, "release by data", eh, 1) < 0 ||
	    held_by(t, "dist") < 0)
		return -1;
	/* 2: the stealer has moved the holder's lock aside; the holder releases
	 * it from there, and the stealer takes the free lock. */
	hf_sys_unlinkat(AT_FDCWD, t->lock, 0);
	if (put_record(t, "data", 2 * HOUR) < 0)
		return -1;
	kid_start(t, &s, "pause:session.take.moved", TAKE(t, "dist"));
	if (kid_expect(t, &s, "session.take.moved") < 0)
		return kid_wait(&s), -1;
	eh = run(t, RELEASE(t, "data"));
	kid_go(&s);
	es = kid_wait(&s);
	if (expect_exit(t, "release by data", eh, 0) < 0 || expect_exit(t, "stealer dist", es, 0) < 0)
		return -1;
	return held_by(t, "dist");
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
	struct hf_sessionlock_status st;
	hf_sessionlock_status(t->lock, 0, &st);
	if (!st.rec.has_broke || !st.rec.broke.legacy)
		return fail(t, "the broken legacy lock is not named under \"broke\"");
	return held_by(t, "alpha");
}

static int c_skew(struct t *t)
{
	if (put_record(t, "future", -24 * HOUR) < 0)
		return -1;
	struct hf_sessionlock_status st;
	hf_sessionlock_status(t->lock, 0, &st);
	if (st.state != HF_SESSION_SKEW)
		return fail(t, "a record dated tomorrow has state %d, expected skew", st.state);
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

/* A withdrawn take leaves no record of its own anywhere. A live record sits
 * in an aside; W publishes, sees it, moves its own record to its withdraw
 * aside and stops there; the barrier's lane releases it; X publishes and
 * sees W's record in W's aside. In 0.1.0, X put W's record back at the name
 * and W, finding its aside empty, stopped: a lock nobody held, 90 min. */
static int c_withdraw(struct t *t)
{
	char barrier[PATH_MAX + 128];
	aside_path(t, "00000000000000aa", barrier, sizeof barrier);
	if (put_record_at(t, barrier, "holder", 60 * 1000) < 0)
		return -1;
	struct kid w;
	kid_start(t, &w, "pause:session.withdraw.moved", TAKE(t, "wlane"));
	if (kid_expect(t, &w, "session.withdraw.moved") < 0)
		return kid_wait(&w), -1;
	int er = run(t, RELEASE(t, "holder"));
	int ex = run(t, TAKE(t, "xlane")); /* W's aside is a live barrier to it */
	kid_go(&w);
	int ew = kid_wait(&w);
	if (expect_exit(t, "release of the barrier by its lane", er, 0) < 0 ||
	    expect_exit(t, "taker X beside W's withdrawal", ex, 1) < 0 ||
	    expect_exit(t, "withdrawing taker W", ew, 1) < 0)
		return -1;
	char *left = slurp(t);
	if (left) {
		fail(t, "a withdrawn take left its record at the name: %s", left);
		free(left);
		return -1;
	}
	if (asides(t))
		return fail(t, "%d aside file(s) left beside the lock", asides(t));
	if (expect_exit(t, "take of the free lock", run(t, TAKE(t, "next")), 0) < 0)
		return -1;
	return held_by(t, "next");
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
	struct hf_sessionlock_status st;
	int rc = made ? hf_sessionlock_status(t->lock, 0, &st) : -1;
	int held = rc == 0 && st.state == HF_SESSION_HELD && !st.in_aside &&
		   !strcmp(st.rec.lane, "alpha");
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

/* The seed's differential: A reads, B reads, B writes, A writes. */
static int c_differential(struct t *t)
{
	struct kid a, b;
	const char *const naive[] = { "selftest", "--naive-take", t->lock, NULL };
	kid_start(t, &a, "pause:session.naive.read", naive);
	kid_start(t, &b, "pause:session.naive.read", naive);
	if (kid_expect(t, &a, "session.naive.read") < 0 ||
	    kid_expect(t, &b, "session.naive.read") < 0)
		return kid_wait(&a), kid_wait(&b), -1;
	kid_go(&b);
	int nb = kid_wait(&b);
	kid_go(&a);
	int na = kid_wait(&a);
	int naive_holders = (na == 0) + (nb == 0);
	hf_sys_unlinkat(AT_FDCWD, t->lock, 0);
	/* the same schedule with the atomic take: both stop before publishing */
	kid_start(t, &a, "pause:session.take.begin", TAKE(t, "alpha"));
	kid_start(t, &b, "pause:session.take.begin", TAKE(t, "beta"));
	if (kid_expect(t, &a, "session.take.begin") < 0 ||
	    kid_expect(t, &b, "session.take.begin") < 0)
		return kid_wait(&a), kid_wait(&b), -1;
	kid_go(&b);
	int ab = kid_wait(&b);
	kid_go(&a);
	int aa = kid_wait(&a);
	int atomic_holders = (aa == 0) + (ab == 0);
	if (naive_holders != 2)
		return fail(t, "the old guard admitted %d holders under the schedule, expected 2",
			    naive_holders);
	if (atomic_holders != 1 || ab != 0 || aa != 1)
		return fail(t, "the atomic take admitted %d holders, expected 1", atomic_holders);
	return held_by(t, "beta");
}

static const struct {
	const char *name;
	const char *what;
	int (*fn)(struct t *);
} checks[] = {
	{ "publish", "a take's record appears whole or not at all", c_publish },
	{ "live", "a live lock refuses every lane, the same lane included; untouched", c_live },
	{ "break", "a stale lock is broken, named under \"broke\", no aside left", c_break },
	{ "stealers-judged", "two stealers judged one stale lock: one holder", c_stealers_judged },
	{ "stealers-moved", "the second stealer's rename finds nothing: one holder",
	  c_stealers_moved },
	{ "third-taker", "a taker while the winner's lock is aside: it comes back",
	  c_third_taker },
	{ "barrier", "a restore that finds the name taken leaves a barrier; it is seen",
	  c_barrier },
	{ "release-steal", "a release racing a steal never deletes the stealer's lock",
	  c_release_steal },
	{ "unreadable", "garbage, bad JSON, empty, EACCES, a directory: exit 65, untouched",
	  c_unreadable },
	{ "legacy", "a bare ISO-8601 timestamp is honoured, then breakable", c_legacy },
	{ "skew", "a record dated in the future is live (clock skew)", c_skew },
	{ "release-rules", "release: other lane 1, other owner 1, holder 0, free 69",
	  c_release_rules },
	{ "withdraw", "a withdrawn take leaves no record of its own, wherever it was moved",
	  c_withdraw },
	{ "not-records", "a symlink or directory named like an aside denies nothing",
	  c_not_records },
	{ "differential", "read-then-write admits two under A/B reads, B/A writes; take one",
	  c_differential },
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
	if (argc == 3 && !strcmp(argv[1], "--naive-take")) {
		int rc = hf_session_naive_take(argv[2], 0);
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
	int failed = 0, n = (int)(sizeof checks / sizeof checks[0]);
	for (int i = 0; i < n; i++) {
		t.why[0] = '\0';
		snprintf(t.name, sizeof t.name, "c%02d.lock", i + 1);
		snprintf(t.lock, sizeof t.lock, "%s/%s", t.dir, t.name);
		int ok = checks[i].fn(&t) == 0;
		failed += !ok;
		printf("%s %2d %-16s %s%s%s\n", ok ? "ok  " : "FAIL", i + 1, checks[i].name,
		       checks[i].what, ok ? "" : ": ",
		       ok ? "" : cli_shown(t.why, (char[4 * sizeof t.why]){ 0 }, 4 * sizeof t.why));
		fflush(stdout);
	}
	int dfd = hf_sys_openat(AT_FDCWD, t.dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd >= 0) {
		hf_claim_scan(dfd, "", rm_cb, NULL);
		hf_sys_close(dfd);
	}
	hf_sys_unlinkat(AT_FDCWD, t.dir, AT_REMOVEDIR);
	cli_err("selftest: %d of %d checks passed on %s", n - failed, n,
		CLI_SHOW(argc == 2 ? argv[1] : "."));
	return failed ? HF_EXIT_CONFLICT : HF_EXIT_OK;
}
