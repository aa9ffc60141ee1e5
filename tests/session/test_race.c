/* Scripted interleavings of real processes paused at named points: two
 * stealers of one stale lock in every order, a third taker while the
 * winner's lock is aside, a release racing a steal, and the seed's
 * differential (issue 2, items 4, 5, 10). No sleeps: every schedule is
 * driven by hft_expect / hft_go. */
#include "hft.h"
#include "internal.h"
#include "session.h"
#include "sx.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct sx x;

static void setup(void)
{
	sx_init(&x);
}

static void teardown(void)
{
	sx_fini(&x);
}

TestSuite(race, .init = setup, .fini = teardown);

#define JUDGED "session.take.judged"
#define MOVED "session.take.moved"

static int done(struct hft_child *c)
{
	int rc = hft_wait(c);
	close(c->out_rd);
	close(c->err_rd);
	return rc;
}

/* Two stealers judged the same stale lock; then, in the order given,
 * each runs to its end. Exactly the first one holds it. */
static void two_stealers(int a_first)
{
	sx_put_record(&x, "old", "o-old", 2 * SX_HOUR);
	struct hft_child a, b;
	sx_spawn(&a, &x, "pause:" JUDGED, "take", "alpha");
	sx_spawn(&b, &x, "pause:" JUDGED, "take", "beta");
	hft_expect(&a, JUDGED);
	hft_expect(&b, JUDGED);
	struct hft_child *first = a_first ? &a : &b, *second = a_first ? &b : &a;
	hft_go(first);
	cr_assert_eq(done(first), 0, "the first stealer breaks the stale lock");
	hft_go(second); /* its rename takes the winner's fresh lock: put back */
	cr_assert_eq(done(second), 1, "the second finds the winner's live lock");
	sx_assert_held(&x, a_first ? "alpha" : "beta");
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x.lock, 0, &st), 0);
	cr_assert(st.rec.has_broke && !strcmp(st.rec.broke.lane, "old"));
}

Test(race, two_stealers_judged_alpha_first)
{
	two_stealers(1);
}

Test(race, two_stealers_judged_beta_first)
{
	two_stealers(0);
}

/* Both judged; A moved the stale lock aside; B's rename gets ENOENT, B
 * publishes at the free name and sweeps A's stale aside; A loses. */
Test(race, second_stealers_rename_finds_nothing)
{
	sx_put_record(&x, "old", "o-old", 2 * SX_HOUR);
	struct hft_child a, b;
	sx_spawn(&a, &x, "pause:" JUDGED ";pause:" MOVED, "take", "alpha");
	sx_spawn(&b, &x, "pause:" JUDGED, "take", "beta");
	hft_expect(&a, JUDGED);
	hft_expect(&b, JUDGED);
	hft_go(&a);
	hft_expect(&a, MOVED);
	cr_assert_not(hft_exists(x.lock));
	cr_assert_eq(sx_asides(&x), 1);
	hft_go(&b);
	cr_assert_eq(done(&b), 0);
	hft_go(&a);
	cr_assert_eq(done(&a), 1);
	sx_assert_held(&x, "beta");
}

/* A verified its break but B published first: A drops the stale aside
 * (SL8) and is refused; one holder, no aside. */
Test(race, breaker_loses_the_publication)
{
	sx_put_record(&x, "old", "o-old", 2 * SX_HOUR);
	struct hft_child a;
	sx_spawn(&a, &x, "pause:session.take.verified", "take", "alpha");
	hft_expect(&a, "session.take.verified");
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "beta", NULL, NULL), 0,
		     "the name is free while the stale lock is aside");
	hft_go(&a);
	cr_assert_eq(done(&a), 1);
	sx_assert_held(&x, "beta");
}

/* A won; B (outdated verdict) moved A's fresh lock aside; C arrives, finds
 * the name free, publishes, sees A's live record in B's aside, withdraws
 * and restores it; B then finds nothing in its aside. One holder: A. */
Test(race, third_taker_while_the_winners_lock_is_aside)
{
	sx_put_record(&x, "old", "o-old", 2 * SX_HOUR);
	struct hft_child a, b;
	sx_spawn(&a, &x, "pause:" JUDGED, "take", "alpha");
	sx_spawn(&b, &x, "pause:" JUDGED ";pause:" MOVED, "take", "beta");
	hft_expect(&a, JUDGED);
	hft_expect(&b, JUDGED);
	hft_go(&a);
	cr_assert_eq(done(&a), 0);
	char *alpha = sx_read(&x);
	hft_go(&b);
	hft_expect(&b, MOVED);
	cr_assert_not(hft_exists(x.lock), "alpha's lock is in beta's aside");
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "gamma", NULL, NULL), 1);
	cr_assert(strstr(err, "held by lane alpha"), "%s", err);
	char *now = sx_read(&x);
	cr_assert_str_eq(now, alpha, "gamma put alpha's lock back, byte for byte");
	hft_go(&b);
	cr_assert_eq(done(&b), 1);
	sx_assert_held(&x, "alpha");
	char *end = sx_read(&x);
	cr_assert_str_eq(end, alpha);
	free(alpha);
	free(now);
	free(end);
	free(err);
}

/* As above, but C publishes before B restores: B's NOREPLACE restore fails
 * and leaves A's lock as a barrier (C4); C's post-publication scan sees it,
 * withdraws through the claim and restores A. One holder: A. */
Test(race, failed_restore_leaves_a_barrier_the_third_taker_sees)
{
	sx_put_record(&x, "old", "o-old", 2 * SX_HOUR);
	struct hft_child a, b, c;
	sx_spawn(&a, &x, "pause:" JUDGED, "take", "alpha");
	sx_spawn(&b, &x, "pause:" JUDGED ";pause:" MOVED, "take", "beta");
	hft_expect(&a, JUDGED);
	hft_expect(&b, JUDGED);
	hft_go(&a);
	cr_assert_eq(done(&a), 0);
	char *alpha = sx_read(&x);
	hft_go(&b);
	hft_expect(&b, MOVED);
	sx_spawn(&c, &x, "pause:session.take.published;pause:session.take.barrier", "take",
		 "gamma");
	hft_expect(&c, "session.take.published");
	hft_go(&b); /* mismatch: restore fails, the aside stays */
	cr_assert_eq(done(&b), 1, "beta is refused by gamma's record");
	cr_assert_eq(sx_asides(&x), 1, "alpha's lock stays aside as a barrier");
	hft_go(&c);
	hft_expect(&c, "session.take.barrier");
	hft_go(&c);
	cr_assert_eq(done(&c), 1);
	sx_assert_held(&x, "alpha");
	char *end = sx_read(&x);
	cr_assert_str_eq(end, alpha);
	free(alpha);
	free(end);
}

/* The barrier's own lane can release it from the aside. */
Test(race, holder_releases_from_a_barrier)
{
	sx_put_record(&x, "old", "o-old", 2 * SX_HOUR);
	struct hft_child a, b;
	sx_spawn(&a, &x, "pause:" JUDGED, "take", "alpha");
	sx_spawn(&b, &x, "pause:" JUDGED ";pause:" MOVED, "take", "beta");
	hft_expect(&a, JUDGED);
	hft_expect(&b, JUDGED);
	hft_go(&a);
	cr_assert_eq(done(&a), 0);
	hft_go(&b);
	hft_expect(&b, MOVED); /* alpha's record is aside */
	cr_assert_eq(sx_cli(&x, NULL, NULL, "release", "alpha", NULL, NULL), 0,
		     "release finds its record in the aside");
	cr_assert_eq(sx_asides(&x), 0);
	hft_go(&b); /* its claim is gone: the lock is free, beta takes it */
	cr_assert_eq(done(&b), 0);
	sx_assert_held(&x, "beta");
}

/* 5: the releaser judged the lock its own; a stealer breaks it meanwhile
 * (and deletes it, SL8). The releaser's descriptor says its record is gone
 * (no name refers to it): it leaves the stealer's lock alone, not even
 * moved, and says who holds the tree now. */
static void ino_of(const char *path, ino_t *ret)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	*ret = st.st_ino;
}

Test(race, release_racing_a_steal_leaves_the_stealers_lock)
{
	sx_put_record(&x, "data", "o-data", 2 * SX_HOUR);
	struct hft_child h;
	sx_spawn(&h, &x, "pause:session.release.read", "release", "data");
	hft_expect(&h, "session.release.read");
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "dist", NULL, NULL), 0);
	char *dist = sx_read(&x);
	ino_t before, after;
	ino_of(x.lock, &before);
	hft_go(&h);
	cr_assert_eq(done(&h), 1, "data's lock is gone: held by dist");
	char *now = sx_read(&x);
	cr_assert_str_eq(now, dist, "the stealer's lock, byte for byte");
	ino_of(x.lock, &after);
	cr_assert_eq(after, before, "never moved");
	sx_assert_held(&x, "dist");
	free(dist);
	free(now);
}

/* 5: the steal lands between the releaser's look at the name (its record
 * there) and its rename: the move takes the stealer's lock, which the
 * releaser puts back, byte for byte. */
Test(race, release_moving_the_stealers_lock_puts_it_back)
{
	sx_put_record(&x, "data", "o-data", 2 * SX_HOUR);
	struct hft_child h;
	sx_spawn(&h, &x, "pause:rename;pause:session.release.moved", "release", "data");
	hft_expect(&h, "rename"); /* judged its own at the name, about to move it */
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "dist", NULL, NULL), 0);
	char *dist = sx_read(&x);
	hft_go(&h);
	hft_expect(&h, "session.release.moved");
	cr_assert_not(hft_exists(x.lock), "the releaser moved the stealer's lock aside");
	hft_go(&h);
	cr_assert_eq(done(&h), 1, "data's lock is gone: held by dist");
	char *after = sx_read(&x);
	cr_assert_str_eq(after, dist, "the stealer's lock is back, byte for byte");
	sx_assert_held(&x, "dist");
	free(dist);
	free(after);
}

/* 5: the stealer has the holder's lock in its aside; the holder's release
 * finds it there and deletes it; the stealer's claim is gone, so it takes
 * the free lock anew. */
Test(race, release_while_the_stealer_holds_the_claim)
{
	sx_put_record(&x, "data", "o-data", 2 * SX_HOUR);
	struct hft_child s;
	sx_spawn(&s, &x, "pause:" MOVED, "take", "dist");
	hft_expect(&s, MOVED);
	cr_assert_eq(sx_cli(&x, NULL, NULL, "release", "data", NULL, NULL), 0);
	hft_go(&s);
	cr_assert_eq(done(&s), 0);
	sx_assert_held(&x, "dist");
}

/* 5: the holder moved its lock aside to release it; a stealer takes the
 * free name and sweeps the (stale) aside; the release then finds the
 * stealer's lock and leaves it alone. */
Test(race, stealer_while_the_release_holds_the_claim)
{
	sx_put_record(&x, "data", "o-data", 2 * SX_HOUR);
	struct hft_child h;
	sx_spawn(&h, &x, "pause:session.release.moved", "release", "data");
	hft_expect(&h, "session.release.moved");
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "dist", NULL, NULL), 0);
	char *dist = sx_read(&x);
	hft_go(&h);
	cr_assert_eq(done(&h), 1);
	char *after = sx_read(&x);
	cr_assert_str_eq(after, dist);
	sx_assert_held(&x, "dist");
	free(dist);
	free(after);
}

/* 10: the seed's differential. The old guard under "A reads, B reads, B
 * writes, A writes" admits two holders; the atomic take, stopped at the
 * same place (before it publishes), admits one. */
static int naive(void *arg)
{
	return hf_session_naive_take(arg, 0) == 0 ? 0 : 1;
}

Test(race, differential_naive_admits_two_atomic_one)
{
	struct hft_child a, b;
	hft_spawn_fn(&a, "pause:session.naive.read", naive, x.lock);
	hft_spawn_fn(&b, "pause:session.naive.read", naive, x.lock);
	hft_expect(&a, "session.naive.read"); /* A read: free */
	hft_expect(&b, "session.naive.read"); /* B read: free */
	hft_go(&b);                           /* B writes */
	int hb = hft_wait(&b);
	hft_go(&a);                           /* A writes over it */
	int ha = hft_wait(&a);
	cr_assert_eq((ha == 0) + (hb == 0), 2, "the old guard admits two holders");
	unlink(x.lock);

	sx_spawn(&a, &x, "pause:session.take.begin", "take", "alpha");
	sx_spawn(&b, &x, "pause:session.take.begin", "take", "beta");
	hft_expect(&a, "session.take.begin");
	hft_expect(&b, "session.take.begin");
	hft_go(&b);
	hb = done(&b);
	hft_go(&a);
	ha = done(&a);
	cr_assert_eq(hb, 0);
	cr_assert_eq(ha, 1, "the atomic take admits one");
	sx_assert_held(&x, "beta");
}

/* Issue "holder identity", item 5: a withdrawn take must leave no record of
 * its own anywhere. A live record sits in an aside (a breaker killed between
 * its move and its restore). W publishes, sees it as a barrier, moves its own
 * record to its withdraw aside and is delayed there; the barrier's lane
 * releases it; X publishes and sees W's record in W's aside as a live
 * barrier. In 0.1.0, X restored W's record to the name and W, finding its
 * aside empty, never looked at the name again: the tree was held by nobody
 * for 90 minutes. */
Test(race, withdrawn_take_leaves_no_record_of_its_own)
{
	sx_put_aside_record(&x, "00000000000000aa", "holder", "o-holder", 60 * 1000);
	struct hft_child w;
	sx_spawn(&w, &x, "pause:session.withdraw.moved", "take", "wlane");
	hft_expect(&w, "session.withdraw.moved");
	cr_assert_not(hft_exists(x.lock), "W's record is in W's withdraw aside");
	cr_assert_eq(sx_asides(&x), 2, "the barrier and W's withdraw aside");
	cr_assert_eq(sx_cli(&x, NULL, NULL, "release", "holder", NULL, NULL), 0,
		     "the barrier's lane releases it from its aside");
	char *err;
	int xrc = sx_cli(&x, NULL, &err, "take", "xlane", NULL, NULL);
	cr_assert_eq(xrc, 1, "X sees W's live record in W's aside: refused (SH4): %s", err);
	free(err);
	hft_go(&w);
	cr_assert_eq(done(&w), 1, "W withdrew");
	char *left = sx_read(&x);
	cr_assert_null(left, "no record at the name after both withdrew: %s", left ? left : "");
	cr_assert_eq(sx_asides(&x), 0, "no aside left");
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "next", NULL, NULL), 0, "the lock is free");
	sx_assert_held(&x, "next");
}
