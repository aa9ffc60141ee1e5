/*
 * schedule.c - the session lock's race schedules and the one interpreter
 * that runs them (schedule.h). The point names are points.def's; each
 * schedule says in its comment what the interleaving is and what must
 * come out of it.
 */
#include "schedule.h"

#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HOUR (3600LL * 1000)
#define J "session.take.judged"
#define M "session.take.moved"

#define RECORD(lane, owner, age) { .op = SO_RECORD, .a = lane, .b = owner, .n = age }
#define SPAWN(k, verb_, lane, rules) { .op = SO_SPAWN, .kid = k, .verb = verb_, .a = lane, .text = rules }
#define EXPECT(k, point) { .op = SO_EXPECT, .kid = k, .text = point }
#define GO(k) { .op = SO_GO, .kid = k }
#define EXIT(k, code) { .op = SO_EXIT, .kid = k, .n = code }
#define CLI(verb_, lane, code, says) { .op = SO_CLI, .verb = verb_, .a = lane, .n = code, .text = says }
#define ABSENT { .op = SO_ABSENT }
#define ASIDES(k) { .op = SO_ASIDES, .n = k }
#define SAVE { .op = SO_SAVE }
#define SAME { .op = SO_SAME }
#define SAME_INODE { .op = SO_SAME_INODE }
#define HELD(lane) { .op = SO_HELD, .a = lane }
#define BROKE(lane) { .op = SO_BROKE, .a = lane }
#define UNLINK { .op = SO_UNLINK }
#define END { .op = SO_END }

enum { A, B, C };

/* Two stealers judged one stale lock; A runs to its end first and breaks
 * it; B's rename then takes A's fresh lock and must put it back. */
static const struct sched_step stealers_a[] = {
	RECORD("old", "o-old", 2 * HOUR),
	SPAWN(A, "take", "alpha", "pause:" J), SPAWN(B, "take", "beta", "pause:" J),
	EXPECT(A, J), EXPECT(B, J),
	GO(A), EXIT(A, 0), GO(B), EXIT(B, 1),
	HELD("alpha"), BROKE("old"), END,
};

/* The same, B first. */
static const struct sched_step stealers_b[] = {
	RECORD("old", "o-old", 2 * HOUR),
	SPAWN(A, "take", "alpha", "pause:" J), SPAWN(B, "take", "beta", "pause:" J),
	EXPECT(A, J), EXPECT(B, J),
	GO(B), EXIT(B, 0), GO(A), EXIT(A, 1),
	HELD("beta"), BROKE("old"), END,
};

/* Both judged; A moved the stale lock aside; B's rename finds nothing, B
 * publishes at the free name and sweeps A's stale aside; A loses. */
static const struct sched_step stealers_moved[] = {
	RECORD("old", "o-old", 2 * HOUR),
	SPAWN(A, "take", "alpha", "pause:" J ";pause:" M), SPAWN(B, "take", "beta", "pause:" J),
	EXPECT(A, J), EXPECT(B, J),
	GO(A), EXPECT(A, M), ABSENT, ASIDES(1),
	GO(B), EXIT(B, 0), GO(A), EXIT(A, 1),
	HELD("beta"), END,
};

/* A verified its break but B published first: A drops the stale aside
 * and is refused; one holder, no aside. */
static const struct sched_step breaker_loses[] = {
	RECORD("old", "o-old", 2 * HOUR),
	SPAWN(A, "take", "alpha", "pause:session.take.verified"),
	EXPECT(A, "session.take.verified"),
	CLI("take", "beta", 0, NULL), /* the name is free while the stale lock is aside */
	GO(A), EXIT(A, 1),
	HELD("beta"), END,
};

/* A won; B (outdated verdict) moved A's fresh lock aside; C finds the name
 * free, publishes, sees A's live record in B's aside, withdraws and
 * restores it byte for byte; B then finds nothing in its aside. */
static const struct sched_step third_taker[] = {
	RECORD("old", "o-old", 2 * HOUR),
	SPAWN(A, "take", "alpha", "pause:" J), SPAWN(B, "take", "beta", "pause:" J ";pause:" M),
	EXPECT(A, J), EXPECT(B, J),
	GO(A), EXIT(A, 0), SAVE,
	GO(B), EXPECT(B, M), ABSENT,
	CLI("take", "gamma", 1, "held by lane alpha"), SAME,
	GO(B), EXIT(B, 1),
	HELD("alpha"), SAME, END,
};

/* As above, but C publishes before B restores: B's restore fails and
 * leaves A's lock aside as a barrier; C's scan after publishing sees it,
 * withdraws and restores A. */
static const struct sched_step barrier[] = {
	RECORD("old", "o-old", 2 * HOUR),
	SPAWN(A, "take", "alpha", "pause:" J), SPAWN(B, "take", "beta", "pause:" J ";pause:" M),
	EXPECT(A, J), EXPECT(B, J),
	GO(A), EXIT(A, 0), SAVE,
	GO(B), EXPECT(B, M),
	SPAWN(C, "take", "gamma", "pause:session.take.published;pause:session.take.barrier"),
	EXPECT(C, "session.take.published"),
	GO(B), EXIT(B, 1), ASIDES(1),
	GO(C), EXPECT(C, "session.take.barrier"), GO(C), EXIT(C, 1),
	HELD("alpha"), SAME, END,
};

/* The barrier's own lane releases it from the aside; the stealer whose
 * claim it was then takes the free lock. */
static const struct sched_step barrier_released[] = {
	RECORD("old", "o-old", 2 * HOUR),
	SPAWN(A, "take", "alpha", "pause:" J), SPAWN(B, "take", "beta", "pause:" J ";pause:" M),
	EXPECT(A, J), EXPECT(B, J),
	GO(A), EXIT(A, 0),
	GO(B), EXPECT(B, M), /* alpha's record is aside */
	CLI("release", "alpha", 0, NULL), ASIDES(0),
	GO(B), EXIT(B, 0),
	HELD("beta"), END,
};

/* The releaser judged the lock its own; a stealer breaks it meanwhile (and
 * deletes it). The releaser leaves the stealer's lock alone - not even
 * moved - and says who holds the tree now. */
static const struct sched_step release_steal[] = {
	RECORD("data", "o-data", 2 * HOUR),
	SPAWN(A, "release", "data", "pause:session.release.read"),
	EXPECT(A, "session.release.read"),
	CLI("take", "dist", 0, NULL), SAVE,
	GO(A), EXIT(A, 1),
	SAME, SAME_INODE, HELD("dist"), END,
};

/* The steal lands between the releaser's look at the name and its rename:
 * the move takes the stealer's lock, which the releaser puts back. */
static const struct sched_step release_moves_stealer[] = {
	RECORD("data", "o-data", 2 * HOUR),
	SPAWN(A, "release", "data", "pause:rename;pause:session.release.moved"),
	EXPECT(A, "rename"),
	CLI("take", "dist", 0, NULL), SAVE,
	GO(A), EXPECT(A, "session.release.moved"), ABSENT,
	GO(A), EXIT(A, 1),
	SAME, HELD("dist"), END,
};

/* The stealer has the holder's lock in its aside; the holder's release
 * finds it there and deletes it; the stealer takes the free lock anew. */
static const struct sched_step release_from_claim[] = {
	RECORD("data", "o-data", 2 * HOUR),
	SPAWN(A, "take", "dist", "pause:" M), EXPECT(A, M),
	CLI("release", "data", 0, NULL),
	GO(A), EXIT(A, 0),
	HELD("dist"), END,
};

/* The holder moved its lock aside to release it; a stealer takes the free
 * name and sweeps the stale aside; the release then finds the stealer's
 * lock and leaves it alone. */
static const struct sched_step steal_from_release[] = {
	RECORD("data", "o-data", 2 * HOUR),
	SPAWN(A, "release", "data", "pause:session.release.moved"),
	EXPECT(A, "session.release.moved"),
	CLI("take", "dist", 0, NULL), SAVE,
	GO(A), EXIT(A, 1),
	SAME, HELD("dist"), END,
};

/* The read-then-write guard under "A reads, B reads, B writes, A writes"
 * admits two holders; the atomic take, stopped at the same place (before
 * it publishes), admits one. */
static const struct sched_step differential[] = {
	SPAWN(A, "naive", NULL, "pause:session.naive.read"),
	SPAWN(B, "naive", NULL, "pause:session.naive.read"),
	EXPECT(A, "session.naive.read"), EXPECT(B, "session.naive.read"),
	GO(B), EXIT(B, 0), GO(A), EXIT(A, 0), /* two holders */
	UNLINK,
	SPAWN(A, "take", "alpha", "pause:session.take.begin"),
	SPAWN(B, "take", "beta", "pause:session.take.begin"),
	EXPECT(A, "session.take.begin"), EXPECT(B, "session.take.begin"),
	GO(B), EXIT(B, 0), GO(A), EXIT(A, 1), /* one */
	HELD("beta"), END,
};

/* A withdrawn take leaves no record of its own anywhere. A live record sits
 * in an aside (a breaker killed between its move and its restore). W
 * publishes, sees it as a barrier, moves its own record to its withdraw
 * aside and is delayed there; the barrier's lane releases it; X publishes
 * and sees W's record in W's aside as a live barrier: refused. W then
 * withdraws for good: nothing is left at the name or beside it. */
static const struct sched_step withdraw[] = {
	{ .op = SO_ASIDE_RECORD, .a = "holder", .b = "o-holder", .n = 60 * 1000,
	  .text = "00000000000000aa" },
	SPAWN(A, "take", "wlane", "pause:session.withdraw.moved"),
	EXPECT(A, "session.withdraw.moved"),
	ABSENT, ASIDES(2), /* the barrier and W's withdraw aside */
	CLI("release", "holder", 0, NULL),
	CLI("take", "xlane", 1, NULL),
	GO(A), EXIT(A, 1),
	ABSENT, ASIDES(0),
	CLI("take", "next", 0, NULL), HELD("next"), END,
};

const struct sched sched_table[] = {
	{ "stealers-judged", "two stealers judged one stale lock, A first: one holder", stealers_a },
	{ "stealers-judged-b", "the same, B first: one holder", stealers_b },
	{ "stealers-moved", "the second stealer's rename finds nothing: one holder",
	  stealers_moved },
	{ "breaker-loses", "a verified break loses the publication: one holder, no aside",
	  breaker_loses },
	{ "third-taker", "a taker while the winner's lock is aside: it comes back", third_taker },
	{ "barrier", "a restore that finds the name taken leaves a barrier; it is seen",
	  barrier },
	{ "barrier-released", "the barrier's own lane releases it from the aside",
	  barrier_released },
	{ "release-steal", "a release racing a steal never touches the stealer's lock",
	  release_steal },
	{ "release-moves", "a release that moved the stealer's lock puts it back",
	  release_moves_stealer },
	{ "release-claim", "a release while the stealer holds the claim: the stealer takes it",
	  release_from_claim },
	{ "steal-release", "a steal while the release holds the claim: left alone",
	  steal_from_release },
	{ "differential", "read-then-write admits two under A/B reads, B/A writes; take one",
	  differential },
	{ "withdraw", "a withdrawn take leaves no record of its own, wherever it was moved",
	  withdraw },
};
const size_t sched_count = HF_ARRAY_SIZE(sched_table);

/* --- the interpreter -------------------------------------------------------- */

struct run {
	const struct sched_ops *ops;
	const char *lock;
	bool started[SCHED_KIDS];
	char *saved;
	ino_t saved_ino;
};

static int failf(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(struct run *r, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return r->ops->fail(r->ops->ctx, msg);
}

int sched_put_record(const char *path, const char *lane, const char *owner, int64_t age_ms)
{
	char when[HF_TIME_MAX];
	hf_time_format(hf_sys_now_ms() - age_ms, when, sizeof when);
	json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:s}", "lane", lane, "owner", owner, "pid", 1,
			      "host", hf_host_name(), "started", when);
	char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!line)
		return -ENOMEM;
	int fd = hf_sys_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t w = fd < 0 ? fd : hf_sys_write(fd, line, strlen(line));
	if (w >= 0)
		w = hf_sys_write(fd, "\n", 1);
	if (fd >= 0)
		hf_sys_close(fd);
	free(line);
	return w < 0 ? (int)w : 0;
}

static int put(struct run *r, const char *path, const char *lane, const char *owner, int64_t age)
{
	int rc = sched_put_record(path, lane, owner, age);
	return rc < 0 ? failf(r, "cannot write %s: %s", path, hf_strerror(rc)) : 0;
}

char *sched_lock_bytes(const char *lock)
{
	char *buf = NULL;
	if (hf_read_file_at(AT_FDCWD, lock, O_NONBLOCK, 1 << 16, &buf, NULL, NULL) < 0)
		return NULL;
	return buf;
}

static int count_one(int dfd, const char *name, void *ctx)
{
	(void)dfd;
	(void)name;
	(*(int *)ctx)++;
	return 0;
}

int sched_asides(const char *lock)
{
	char dir[PATH_MAX], base[NAME_MAX + 1], prefix[NAME_MAX + 16];
	int dfd, n = 0;
	if (hf_path_split(lock, dir, sizeof dir, base, sizeof base) < 0)
		return -1;
	snprintf(prefix, sizeof prefix, "%s.aside-", base);
	if ((dfd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)) < 0)
		return -1;
	hf_dir_each(dfd, prefix, count_one, &n);
	hf_sys_close(dfd);
	return n;
}

static int held(struct run *r, const char *lane)
{
	hf_rec *st;
	int rc = hf_session_status(r->lock, 0, &st);
	if (rc < 0)
		return failf(r, "status: %s", hf_strerror(rc));
	const char *state = hf_rec_str(st, "state"), *got = hf_rec_str(st, "lane");
	bool aside = hf_rec_str(st, "aside") != NULL;
	rc = 0;
	if (!state || strcmp(state, "held") || aside || !got || strcmp(got, lane))
		rc = failf(r, "expected the lock held by %s at its name, found %s lane '%s'%s", lane,
			   state ? state : "?", got ? got : "", aside ? " (in an aside)" : "");
	hf_rec_free(st);
	if (rc == 0 && (rc = sched_asides(r->lock)) != 0)
		rc = failf(r, "%d aside file(s) left beside the lock", rc);
	return rc;
}

static int broke(struct run *r, const char *lane)
{
	hf_rec *st;
	int rc = hf_session_status(r->lock, 0, &st);
	if (rc < 0)
		return failf(r, "status: %s", hf_strerror(rc));
	const char *got = hf_rec_str(st, "broke.lane");
	rc = got && !strcmp(got, lane) ? 0
				       : failf(r, "the record does not name lane %s under \"broke\"",
					       lane);
	hf_rec_free(st);
	return rc;
}

/* argv for a step's verb: `session VERB --lane A --file LOCK`, or the
 * naive guard `selftest --naive-take LOCK`. */
static void step_argv(struct run *r, const struct sched_step *s, const char *argv[8])
{
	size_t n = 0;
	argv[n++] = "holdfast";
	if (!strcmp(s->verb, "naive")) {
		argv[n++] = "selftest";
		argv[n++] = "--naive-take";
		argv[n++] = r->lock;
	} else {
		argv[n++] = "session";
		argv[n++] = s->verb;
		argv[n++] = "--lane";
		argv[n++] = s->a;
		argv[n++] = "--file";
		argv[n++] = r->lock;
	}
	argv[n] = NULL;
}

static int step(struct run *r, const struct sched_step *s)
{
	const struct sched_ops *o = r->ops;
	const char *argv[8];
	switch (s->op) {
	case SO_END:
		return 0;
	case SO_RECORD:
		return put(r, r->lock, s->a, s->b, s->n);
	case SO_ASIDE_RECORD: {
		char p[PATH_MAX + 64];
		snprintf(p, sizeof p, "%s.aside-%s", r->lock, s->text);
		return put(r, p, s->a, s->b, s->n);
	}
	case SO_SPAWN:
		step_argv(r, s, argv);
		if (o->spawn(o->ctx, s->kid, s->text, argv) < 0)
			return -1;
		r->started[s->kid] = true;
		return 0;
	case SO_EXPECT:
		return o->expect(o->ctx, s->kid, s->text);
	case SO_GO:
		o->go(o->ctx, s->kid);
		return 0;
	case SO_EXIT: {
		int code = o->wait(o->ctx, s->kid);
		r->started[s->kid] = false;
		if (code != s->n)
			return failf(r, "child %c exited %d, expected %lld", 'A' + s->kid, code,
				     (long long)s->n);
		return 0;
	}
	case SO_CLI: {
		step_argv(r, s, argv);
		char *err = NULL;
		int code = o->run(o->ctx, argv, &err);
		int rc = 0;
		if (code != s->n)
			rc = failf(r, "session %s --lane %s exited %d, expected %lld: %s", s->verb,
				   s->a, code, (long long)s->n, err ? err : "");
		else if (s->text && (!err || !strstr(err, s->text)))
			rc = failf(r, "session %s --lane %s: expected \"%s\" in: %s", s->verb, s->a,
				   s->text, err ? err : "");
		free(err);
		return rc;
	}
	case SO_ABSENT: {
		struct stat st;
		return hf_sys_fstatat(AT_FDCWD, r->lock, &st, AT_SYMLINK_NOFOLLOW) == -ENOENT
			       ? 0
			       : failf(r, "expected nothing at the lock's name");
	}
	case SO_ASIDES: {
		int n = sched_asides(r->lock);
		return n == s->n ? 0
				 : failf(r, "%d aside(s) beside the lock, expected %lld", n,
					 (long long)s->n);
	}
	case SO_SAVE: {
		free(r->saved);
		r->saved = sched_lock_bytes(r->lock);
		struct stat st;
		if (!r->saved || hf_sys_fstatat(AT_FDCWD, r->lock, &st, 0) < 0)
			return failf(r, "nothing at the lock's name to remember");
		r->saved_ino = st.st_ino;
		return 0;
	}
	case SO_SAME: {
		char *now = sched_lock_bytes(r->lock);
		int rc = now && r->saved && !strcmp(now, r->saved)
				 ? 0
				 : failf(r, "the lock is not the one remembered, byte for byte: %s",
					 now ? now : "(none)");
		free(now);
		return rc;
	}
	case SO_SAME_INODE: {
		struct stat st;
		return hf_sys_fstatat(AT_FDCWD, r->lock, &st, 0) == 0 && st.st_ino == r->saved_ino
			       ? 0
			       : failf(r, "the lock was moved (another inode)");
	}
	case SO_HELD:
		return held(r, s->a);
	case SO_BROKE:
		return broke(r, s->a);
	case SO_UNLINK:
		hf_sys_unlinkat(AT_FDCWD, r->lock, 0);
		return 0;
	}
	return failf(r, "unknown step %d", (int)s->op);
}

int sched_run(const struct sched *s, const char *lock, const struct sched_ops *ops)
{
	struct run r = { .ops = ops, .lock = lock };
	int rc = 0;
	for (const struct sched_step *st = s->steps; st->op != SO_END && rc == 0; st++)
		rc = step(&r, st);
	for (int k = 0; k < SCHED_KIDS; k++)
		if (r.started[k])
			ops->wait(ops->ctx, k); /* a failed schedule leaves none behind */
	free(r.saved);
	return rc;
}
