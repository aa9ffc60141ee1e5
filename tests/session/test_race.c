/* The session lock's race schedules (src/cli/schedule.c, the same ones
 * `holdfast selftest` runs), each a Criterion test: real processes paused
 * at named points and let go in the schedule's order. No sleeps: every
 * step waits for a reported point or an exit. */
#include "hft.h"
#include "schedule.h"
#include "sx.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

struct harness {
	struct hft_child kids[SCHED_KIDS];
	char why[800];
};

static int h_spawn(void *ctx, int k, const char *rules, const char *const *argv)
{
	struct harness *h = ctx;
	hft_spawn_cli(&h->kids[k], rules, argv, NULL);
	return 0;
}

static int h_expect(void *ctx, int k, const char *point)
{
	hft_expect(&((struct harness *)ctx)->kids[k], point);
	return 0;
}

static void h_go(void *ctx, int k)
{
	hft_go(&((struct harness *)ctx)->kids[k]);
}

static int h_wait(void *ctx, int k)
{
	struct hft_child *c = &((struct harness *)ctx)->kids[k];
	if (c->go_wr >= 0) { /* EOF lets a still-paused child run to its end */
		close(c->go_wr);
		c->go_wr = -1;
	}
	int rc = hft_wait(c);
	close(c->out_rd);
	close(c->err_rd);
	return rc;
}

static int h_run(void *ctx, const char *const *argv, char **err)
{
	(void)ctx;
	return hft_cli(NULL, err, argv);
}

static int h_fail(void *ctx, const char *msg)
{
	struct harness *h = ctx;
	if (!h->why[0])
		snprintf(h->why, sizeof h->why, "%s", msg);
	return -1;
}

static void run_schedule(const char *name)
{
	const struct sched *s = NULL;
	for (size_t i = 0; i < sched_count; i++)
		if (!strcmp(sched_table[i].name, name))
			s = &sched_table[i];
	cr_assert_not_null(s, "no schedule %s", name);
	struct harness h;
	memset(&h, 0, sizeof h);
	struct sched_ops ops = { &h, h_spawn, h_expect, h_go, h_wait, h_run, h_fail };
	cr_assert_eq(sched_run(s, x.lock, &ops), 0, "%s (%s): %s", s->name, s->what, h.why);
}

#define SCHEDULE(test, name)         \
	Test(race, test)             \
	{                            \
		run_schedule(name);  \
	}

SCHEDULE(two_stealers_judged_alpha_first, "stealers-judged")
SCHEDULE(two_stealers_judged_beta_first, "stealers-judged-b")
SCHEDULE(second_stealers_rename_finds_nothing, "stealers-moved")
SCHEDULE(breaker_loses_the_publication, "breaker-loses")
SCHEDULE(third_taker_while_the_winners_lock_is_aside, "third-taker")
SCHEDULE(failed_restore_leaves_a_barrier_the_third_taker_sees, "barrier")
SCHEDULE(holder_releases_from_a_barrier, "barrier-released")
SCHEDULE(release_racing_a_steal_leaves_the_stealers_lock, "release-steal")
SCHEDULE(release_moving_the_stealers_lock_puts_it_back, "release-moves")
SCHEDULE(release_while_the_stealer_holds_the_claim, "release-claim")
SCHEDULE(stealer_while_the_release_holds_the_claim, "steal-release")
SCHEDULE(differential_naive_admits_two_atomic_one, "differential")
SCHEDULE(withdrawn_take_leaves_no_record_of_its_own, "withdraw")

/* Every schedule of the table has its test above, and names are unique. */
Test(race, every_schedule_is_run_here_and_named_once)
{
	static const char *const here[] = {
		"stealers-judged", "stealers-judged-b", "stealers-moved", "breaker-loses",
		"third-taker", "barrier", "barrier-released", "release-steal", "release-moves",
		"release-claim", "steal-release", "differential", "withdraw",
	};
	cr_assert_eq(sched_count, sizeof here / sizeof here[0]);
	for (size_t i = 0; i < sched_count; i++) {
		size_t seen = 0;
		for (size_t j = 0; j < sched_count; j++)
			seen += !strcmp(sched_table[i].name, sched_table[j].name);
		cr_assert_eq(seen, 1, "%s named twice", sched_table[i].name);
		cr_assert_str_eq(sched_table[i].name, here[i]);
	}
}
