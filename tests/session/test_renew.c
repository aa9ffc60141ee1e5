/* `holdfast session renew` (session.c SN1-SN4): a session that outlives its
 * stale window restarts it; the same lane and owner; refused for another
 * lane (exit 1, naming it) and when free (69); at named points, a taker
 * during the renewal is refused and a breaker of the stale record wins
 * over the renewal, which says so. */
#include "hft.h"
#include "internal.h"
#include "session_file.h"
#include "sx.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sx x;

static void setup(void)
{
	sx_init(&x);
}

static void teardown(void)
{
	sx_fini(&x);
}

TestSuite(renew, .init = setup, .fini = teardown, .timeout = 60);

static json_t *record(void)
{
	char *s = sx_read(&x);
	cr_assert_not_null(s, "a record at the name");
	json_t *j = json_loads(s, 0, NULL);
	cr_assert_not_null(j, "%s", s);
	free(s);
	return j;
}

#define OWNER "0123456789abcdef0123456789abcdef"

/* 80 minutes old of a 90-minute window: renewed, it is 0 s old, with the
 * same lane and owner; a taker with a 30-minute window still finds it live. */
Test(renew, renew_restarts_the_window_with_the_same_owner)
{
	sx_put_record(&x, "data", OWNER, 80 * 60 * 1000LL);
	char *out, *err;
	cr_assert_eq(sx_cli(&x, &out, &err, "renew", "data", "--json", NULL), 0, "%s", err);
	json_t *j = record();
	cr_assert_str_eq(json_string_value(json_object_get(j, "lane")), "data");
	cr_assert_str_eq(json_string_value(json_object_get(j, "owner")), OWNER);
	int64_t started;
	cr_assert_eq(hf_time_parse(json_string_value(json_object_get(j, "started")), &started), 0);
	cr_assert_gt(started, hf_sys_now_ms() - 60000, "started now");
	json_decref(j);
	cr_assert_not_null(strstr(out, OWNER), "--json prints the record: %s", out);
	free(out);
	free(err);
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "other", "--stale", "30m"), 1,
		     "renewed: live for a 30 min window");
	free(err);
	cr_assert_eq(sx_asides(&x), 0, "no aside left");
}

Test(renew, another_lane_is_refused_and_free_is_69)
{
	sx_put_record(&x, "data", OWNER, 1000);
	char *before = sx_read(&x), *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "renew", "other", NULL, NULL), 1);
	cr_assert(strstr(err, "lane data") && strstr(err, "renew refused"), "%s", err);
	free(err);
	char *after = sx_read(&x);
	cr_assert_str_eq(after, before, "untouched");
	cr_assert_eq(sx_cli(&x, NULL, &err, "renew", "data", "--owner", "ffff"), 1,
		     "another owner token");
	free(err);
	cr_assert_eq(sx_cli(&x, NULL, &err, "release", "data", NULL, NULL), 0);
	free(err);
	cr_assert_eq(sx_cli(&x, NULL, &err, "renew", "data", NULL, NULL), 69);
	cr_assert_not_null(strstr(err, "nothing to renew"), "%s", err);
	free(err);
	cr_assert_null(sx_read(&x), "nothing made");
	free(before);
	free(after);
}

/* While the old record waits in its aside (the name free), a taker of
 * another lane publishes, sees the live record beside the lock and is
 * refused (SL5); it leaves nothing, and the renewal completes. */
Test(renew, taker_during_the_renewal_is_refused)
{
	sx_put_record(&x, "data", OWNER, 1000);
	struct hft_child r;
	sx_spawn(&r, &x, "pause:session.renew.moved", "renew", "data");
	hft_expect(&r, "session.renew.moved");
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "other", NULL, NULL), 1, "refused");
	cr_assert_not_null(strstr(err, "data"), "names the renewing lane: %s", err);
	free(err);
	hft_go(&r);
	cr_assert_eq(hft_wait(&r), 0);
	sx_assert_held(&x, "data");
	json_t *j = record();
	cr_assert_str_eq(json_string_value(json_object_get(j, "owner")), OWNER);
	json_decref(j);
}

/* The session is stale when its renewal starts: a breaker that comes while
 * the old record waits in the aside publishes at the free name and sweeps
 * the stale aside. The renewal cannot publish, sees its record gone, and is
 * lost (exit 1, naming the new holder); one holder. */
Test(renew, breaker_of_the_stale_session_wins_and_the_renewal_says_so)
{
	sx_put_record(&x, "data", OWNER, 2 * SX_HOUR);
	struct hft_child r;
	sx_spawn(&r, &x, "pause:session.renew.moved", "renew", "data");
	hft_expect(&r, "session.renew.moved");
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "other", NULL, NULL), 0, "%s", err);
	free(err);
	hft_go(&r);
	cr_assert_eq(hft_wait(&r), 1, "lost");
	char *rerr = hft_read_all(r.err_rd);
	cr_assert(strstr(rerr, "lost while renewing") && strstr(rerr, "other"), "%s", rerr);
	free(rerr);
	sx_assert_held(&x, "other");
}
