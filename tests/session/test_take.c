/* `holdfast session take`, driven through the binary as a user would
 * (issue 2, items 1, 2, 3, 6, 7). */
#include "hft.h"
#include "internal.h"
#include "session_file.h"
#include "sx.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
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

TestSuite(take, .init = setup, .fini = teardown);

static json_t *parse_json(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	cr_assert_not_null(j, "not one JSON object: '%s' (%s)", s, e.text);
	return j;
}

/* 1: a complete record, published atomically; --json prints it */
Test(take, free_path_publishes_a_complete_record)
{
	char *out, *err;
	cr_assert_eq(sx_cli(&x, &out, &err, "take", "data", "--json", NULL), 0, "%s", err);
	char *file = sx_read(&x);
	cr_assert_not_null(file);
	size_t len = strlen(file);
	cr_assert(len > 2 && file[len - 1] == '\n' && !strchr(file, '\n')[1], "one line + \\n");
	json_t *rec = parse_json(file), *printed = parse_json(out);
	cr_assert_str_eq(json_string_value(json_object_get(rec, "lane")), "data");
	cr_assert_eq(strlen(json_string_value(json_object_get(rec, "owner"))), 32,
		     "a generated 128-bit token");
	cr_assert(json_integer_value(json_object_get(rec, "pid")) > 0);
	cr_assert_str_eq(json_string_value(json_object_get(rec, "host")), hf_host_name());
	int64_t started;
	cr_assert_eq(hf_time_parse(json_string_value(json_object_get(rec, "started")), &started), 0);
	cr_assert(started <= hf_sys_now_ms() && started > hf_sys_now_ms() - 60000);
	cr_assert_null(json_object_get(rec, "broke"));
	/* --json: the same fields as the file, plus the file's path */
	const char *k;
	json_t *v;
	json_object_foreach(rec, k, v)
		cr_assert(json_equal(v, json_object_get(printed, k)), "--json field %s differs", k);
	cr_assert_str_eq(json_string_value(json_object_get(printed, "file")), x.lock);
	cr_assert_eq(sx_asides(&x), 0);
	cr_assert_eq(hft_count_prefix(x.dir, ""), 1, "nothing but the lock: no named temporary");
	json_decref(rec);
	json_decref(printed);
	free(file);
	free(out);
	free(err);
}

/* 1: a reader looking while the taker is one step from publishing sees no
 * file at all, never an empty or partial one */
Test(take, readers_never_see_a_partial_record)
{
	struct hft_child c;
	sx_spawn(&c, &x, "pause:write;pause:link", "take", "data");
	hft_expect(&c, "write");
	cr_assert_not(hft_exists(x.lock), "nothing at the name before the record is written");
	hft_go(&c);
	hft_expect(&c, "link");
	cr_assert_not(hft_exists(x.lock), "nothing at the name after the write, before the link");
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x.lock, 0, &st), 0);
	cr_assert_eq(st.state, HF_SESSION_FREE);
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 0);
	sx_assert_held(&x, "data");
}

/* 1: a failed publication leaves nothing behind (no partial, no temporary) */
Test(take, failed_link_leaves_nothing)
{
	struct hft_child c;
	sx_spawn(&c, &x, "fail:link:1:EIO", "take", "data");
	cr_assert_eq(hft_wait(&c), 74, "EIO is an I/O error");
	cr_assert_eq(hft_count_prefix(x.dir, ""), 0);
}

/* 2: a live lock refuses every lane, the same lane included, untouched */
Test(take, live_lock_refuses_every_lane)
{
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "data", NULL, NULL), 0);
	char *before = sx_read(&x);
	struct stat st0, st1;
	cr_assert_eq(stat(x.lock, &st0), 0);
	const char *lanes[] = { "data", "dist" };
	for (int i = 0; i < 2; i++) {
		char *err;
		cr_assert_eq(sx_cli(&x, NULL, &err, "take", lanes[i], NULL, NULL), 1);
		cr_assert(strstr(err, "held by lane data"), "names the holder: %s", err);
		cr_assert(strstr(err, " s old") || strstr(err, " min old"), "names the age: %s", err);
		cr_assert(strstr(err, x.lock), "names the path: %s", err);
		cr_assert(strstr(err, "pid ") && strstr(err, hf_host_name()), "pid and host: %s", err);
		free(err);
	}
	char *after = sx_read(&x);
	cr_assert_str_eq(after, before, "the lock is untouched");
	cr_assert_eq(stat(x.lock, &st1), 0);
	cr_assert_eq(st1.st_ino, st0.st_ino);
	cr_assert_eq(sx_asides(&x), 0);
	free(before);
	free(after);
}

/* 2: --json on refusal: one object naming the holder */
Test(take, refusal_json_names_the_holder)
{
	sx_put_record(&x, "dist", "o1", 4 * 60 * 1000);
	char *out;
	cr_assert_eq(sx_cli(&x, &out, NULL, "take", "data", "--json", NULL), 1);
	json_t *j = parse_json(out);
	cr_assert_str_eq(json_string_value(json_object_get(j, "error")), "held");
	json_t *h = json_object_get(j, "holder");
	cr_assert_str_eq(json_string_value(json_object_get(h, "lane")), "dist");
	cr_assert_str_eq(json_string_value(json_object_get(h, "state")), "held");
	json_int_t age = json_integer_value(json_object_get(h, "age_ms"));
	cr_assert(age >= 240000 && age < 300000, "age_ms %lld", (long long)age);
	cr_assert_null(json_object_get(j, "token"), "no token at the top of a failure");
	cr_assert_eq(json_integer_value(json_object_get(j, "exit")), 1);
	json_decref(j);
	free(out);
}

/* 3: a stale lock is broken by rename, verified, recorded under "broke" */
Test(take, stale_lock_is_broken_and_named)
{
	sx_put_record(&x, "dist", "o-dist", 2 * SX_HOUR);
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 0, "%s", err);
	cr_assert(strstr(err, "broke a stale lock of lane dist"), "%s", err);
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x.lock, 0, &st), 0);
	cr_assert(st.rec.has_broke);
	cr_assert_str_eq(st.rec.broke.lane, "dist");
	cr_assert_str_eq(st.rec.broke.owner, "o-dist");
	cr_assert(st.rec.broke.age_s >= 7199 && st.rec.broke.age_s < 7300, "age %lld",
		  (long long)st.rec.broke.age_s);
	sx_assert_held(&x, "data"); /* no aside left */
	free(err);
}

/* 3: --stale sets the window; the age is the record's, never the mtime */
Test(take, age_is_the_records_never_the_mtime)
{
	/* an old record in a freshly written file: stale */
	sx_put_record(&x, "dist", "o", 10 * 60 * 1000);
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "data", "--stale", "5m"), 0);
	sx_assert_held(&x, "data");
	/* a fresh record in a file whose mtime is days old: live */
	sx_put_record(&x, "dist", "o", 1000);
	struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
	cr_assert_eq(utimensat(AT_FDCWD, x.lock, old, 0), 0);
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "data", "--stale", "5m"), 1);
	sx_assert_held(&x, "dist");
}

/* 3, SL9: a breaker killed mid-steal leaves a stale aside; the next take
 * sweeps it, so none remains */
Test(take, killed_breaker_aside_is_swept)
{
	sx_put_record(&x, "dist", "o", 2 * SX_HOUR);
	struct hft_child c;
	sx_spawn(&c, &x, "crash:session.take.verified", "take", "data");
	cr_assert_eq(hft_wait(&c), 128 + SIGKILL);
	cr_assert_eq(sx_asides(&x), 1, "the stale lock sits in the killed breaker's aside");
	cr_assert_not(hft_exists(x.lock));
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "ops", NULL, NULL), 0);
	sx_assert_held(&x, "ops");
}

/* SH3: a breaker killed after moving a FRESH lock aside leaves a barrier;
 * status still reports the holder; the next taker puts the lock back */
Test(take, killed_mismatching_breaker_leaves_a_barrier_that_comes_back)
{
	sx_put_record(&x, "dist", "o", 2 * SX_HOUR);
	struct hft_child a, b;
	sx_spawn(&a, &x, "pause:session.take.judged", "take", "alpha");
	sx_spawn(&b, &x, "pause:session.take.judged;crash:session.take.mismatch", "take", "beta");
	hft_expect(&a, "session.take.judged");
	hft_expect(&b, "session.take.judged");
	hft_go(&a);
	cr_assert_eq(hft_wait(&a), 0);
	hft_go(&b); /* moves alpha's fresh lock aside, dies before restoring it */
	cr_assert_eq(hft_wait(&b), 128 + SIGKILL);
	cr_assert_not(hft_exists(x.lock));
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x.lock, 0, &st), 0);
	cr_assert_eq(st.state, HF_SESSION_HELD);
	cr_assert(st.in_aside);
	cr_assert_str_eq(st.rec.lane, "alpha");
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "gamma", NULL, NULL), 1);
	cr_assert(strstr(err, "held by lane alpha") && strstr(err, ".aside-"), "%s", err);
	sx_assert_held(&x, "alpha"); /* restored to the name */
	free(err);
}

/* 6: unreadable locks are refused with 65, evidence printed, untouched */
Test(take, unreadable_lock_is_refused_untouched)
{
	static const char *const bad[] = { "garbage\n", "{\"lane\":\"data\",\"started\":",
					   "{\"lane\":\"\",\"started\":\"2026-09-22T10:00:00Z\"}",
					   "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sx_put(&x, bad[i]);
		struct timespec old[2] = { { .tv_sec = 1790071200 }, { .tv_sec = 1790071200 } };
		cr_assert_eq(utimensat(AT_FDCWD, x.lock, old, 0), 0);
		char *err;
		cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 65, "case %zu", i);
		cr_assert(strstr(err, "unreadable"), "%s", err);
		cr_assert(strstr(err, "mtime 2026-09-22T10:00:00Z"), "mtime as evidence: %s", err);
		cr_assert(strstr(err, "rm -- '"), "tells a human how to clear it: %s", err);
		char *after = sx_read(&x);
		cr_assert_str_eq(after, bad[i], "untouched");
		struct stat st;
		cr_assert_eq(stat(x.lock, &st), 0);
		cr_assert_eq(st.st_mtim.tv_sec, 1790071200, "not even its mtime moved");
		cr_assert_eq(sx_asides(&x), 0);
		free(after);
		free(err);
	}
}

/* 6: a lock that cannot be read (permission denied; as root via fault
 * injection: every read fails - the boot id's, then the lock's) */
Test(take, permission_denied_is_unreadable)
{
	sx_put_record(&x, "dist", "o", 1000);
	char *before = sx_read(&x);
	struct hft_child c;
	sx_spawn(&c, &x, "fail:read:1:EACCES:persist", "take", "data");
	cr_assert_eq(hft_wait(&c), 65);
	char *err = hft_read_all(c.err_rd);
	cr_assert(strstr(err, "permission denied"), "%s", err);
	char *after = sx_read(&x);
	cr_assert_str_eq(after, before);
	free(err);
	free(before);
	free(after);
	close(c.out_rd);
	close(c.err_rd);
}

/* 6: something that is not a file at the path */
Test(take, directory_at_the_path_is_unreadable)
{
	cr_assert_eq(mkdir(x.lock, 0700), 0);
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 65);
	cr_assert(strstr(err, "a directory"), "%s", err);
	struct stat st;
	cr_assert_eq(stat(x.lock, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	free(err);
}

/* 7: a legacy bare timestamp is honoured while young, breakable when old */
Test(take, legacy_lock_honoured_then_breakable)
{
	sx_put_legacy(&x, 10 * 60 * 1000);
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 1);
	cr_assert(strstr(err, "legacy"), "%s", err);
	cr_assert(strstr(err, "10.0 min old"), "%s", err);
	free(err);
	sx_put_legacy(&x, 2 * SX_HOUR);
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 0, "%s", err);
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x.lock, 0, &st), 0);
	cr_assert(st.rec.has_broke && st.rec.broke.legacy);
	sx_assert_held(&x, "data");
	free(err);
}

/* 7: a record dated in the future is live, reported as clock skew */
Test(take, future_record_is_live_clock_skew)
{
	sx_put_record(&x, "dist", "o", -3 * SX_HOUR);
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 1);
	cr_assert(strstr(err, "in the future (clock skew)"), "%s", err);
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x.lock, 0, &st), 0);
	cr_assert_eq(st.state, HF_SESSION_SKEW);
	free(err);
}

/* bad input is a usage error, and nothing is created */
Test(take, usage_errors)
{
	const char *no_lane[] = { "holdfast", "session", "take", "--file", x.lock, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, no_lane), 64);
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "da\tta", NULL, NULL), 64, "control chars");
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "data", "--stale", "soon"), 64);
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "data", "--bogus", NULL), 64);
	cr_assert_not(hft_exists(x.lock));
}

/* --- "holder identity" item 14: only regular files in an aside are records */

static void planted(const char *dir, const char *name, char *path, size_t n)
{
	snprintf(path, n, "%s/%s%s%s", dir, HF_SESSION_FILE, HF_SESSION_ASIDE_INFIX, name);
}

/* SL11: a symlink (to a live record, or dangling), a directory and a FIFO
 * named like asides are not barriers: take, status and release work beside
 * them, none of them hangs on the FIFO, and none of them is touched. */
Test(take, only_regular_files_in_an_aside_are_records)
{
	char live[800], p[4][900];
	snprintf(live, sizeof live, "%s/elsewhere", x.dir);
	struct sx other = { .dir = x.dir };
	snprintf(other.lock, sizeof other.lock, "%s", live);
	sx_put_record(&other, "ghost", "o-ghost", 1000); /* a live record, elsewhere */
	planted(x.dir, "0000000000000001", p[0], sizeof p[0]);
	planted(x.dir, "0000000000000002", p[1], sizeof p[1]);
	planted(x.dir, "0000000000000003", p[2], sizeof p[2]);
	planted(x.dir, "0000000000000004", p[3], sizeof p[3]);
	cr_assert_eq(symlink(live, p[0]), 0);
	cr_assert_eq(symlink("/nonexistent/holdfast", p[1]), 0);
	cr_assert_eq(mkdir(p[2], 0700), 0);
	cr_assert_eq(mkfifo(p[3], 0600), 0);
	const char *st[] = { "holdfast", "session", "status", "--file", x.lock, NULL };
	char *out, *err;
	cr_assert_eq(hft_cli(&out, NULL, st), 0);
	cr_assert_str_eq(out, "free\n", "a symlink to a live record is no holder");
	free(out);
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 0, "%s", err);
	free(err);
	cr_assert_eq(hft_cli(&out, NULL, st), 0);
	cr_assert(!strncmp(out, "held by data, ", 14) && strstr(out, " s old\n") &&
			  !strstr(out, "displaced"),
		  "held at its name: %s", out);
	free(out);
	cr_assert_eq(sx_cli(&x, NULL, &err, "release", "data", NULL, NULL), 0, "%s", err);
	free(err);
	cr_assert_not(hft_exists(x.lock));
	struct stat s;
	cr_assert(lstat(p[0], &s) == 0 && S_ISLNK(s.st_mode));
	cr_assert(lstat(p[1], &s) == 0 && S_ISLNK(s.st_mode));
	cr_assert(lstat(p[2], &s) == 0 && S_ISDIR(s.st_mode));
	cr_assert(lstat(p[3], &s) == 0 && S_ISFIFO(s.st_mode));
	char *ghost = hft_slurp(live);
	cr_assert(ghost && strstr(ghost, "\"lane\":\"ghost\""), "the symlink's target untouched");
	free(ghost);
}

/* At its own name a FIFO is refused as unreadable, without hanging: the
 * reads are O_NONBLOCK (SL2, SL11). */
Test(take, a_fifo_at_the_name_is_unreadable_and_never_hangs)
{
	cr_assert_eq(mkfifo(x.lock, 0600), 0);
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 65);
	cr_assert(strstr(err, "not a regular file (a FIFO)"), "%s", err);
	free(err);
	const char *st[] = { "holdfast", "session", "status", "--file", x.lock, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, st), 65);
	cr_assert_eq(sx_cli(&x, NULL, NULL, "release", "data", NULL, NULL), 65);
	struct stat s;
	cr_assert(lstat(x.lock, &s) == 0 && S_ISFIFO(s.st_mode), "untouched");
}

/* --- "holder identity" item 9: a wall-clock step and the session lock ---- */

/* A taker whose wall clock runs 100 minutes ahead must not break a fresh
 * lock of this machine: its age is boot-relative here. */
Test(take, a_wall_clock_step_does_not_break_a_fresh_lock_of_this_machine)
{
	cr_assert_eq(sx_cli(&x, NULL, NULL, "take", "data", NULL, NULL), 0);
	char *before = sx_read(&x);
	cr_assert(strstr(before, "\"boot_id\":\"") && strstr(before, "\"timens\":") &&
			  strstr(before, "\"boottime_ms\":"),
		  "the record carries what a boot-relative age needs: %s", before);
	const char *take[] = { "holdfast", "session", "take", "--lane", "dist", "--file", x.lock,
			       NULL };
	char *err;
	int rc = hft_cli_env(NULL, &err, "HOLDFAST_FAULTS=skew:wall:+6000000", NULL, take);
	cr_assert_eq(rc, 1, "refused, not broken: %s", err);
	cr_assert(strstr(err, "held by lane data") && strstr(err, " s old;"),
		  "seconds old, not 100 minutes: %s", err);
	free(err);
	const char *st[] = { "holdfast", "session", "status", "--file", x.lock, NULL };
	char *out;
	cr_assert_eq(hft_cli_env(&out, NULL, "HOLDFAST_FAULTS=skew:wall:+6000000", NULL, st), 0);
	cr_assert(!strncmp(out, "held by data, ", 14) && strstr(out, " s old\n") &&
			  !strstr(out, "stale") && !strstr(out, "future"),
		  "not stale to a clock 100 min ahead: %s", out);
	free(out);
	char *after = sx_read(&x);
	cr_assert_str_eq(after, before, "untouched");
	sx_assert_held(&x, "data");
	free(before);
	free(after);
}

/* A record of another boot is judged by the wall clock: dated 100 minutes
 * ago it is broken (whatever its boottime_ms says), dated in the future it
 * is live and reported as skew. */
Test(take, a_record_of_another_boot_is_judged_by_the_wall_clock)
{
	static const char other[] = "00000000-0000-0000-0000-000000000001";
	sx_put_record_boot(&x, "dist", "o-dist", 100 * 60 * 1000, other, 0);
	char *err;
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 0, "%s", err);
	cr_assert(strstr(err, "broke a stale lock of lane dist"), "%s", err);
	free(err);
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x.lock, 0, &st), 0);
	cr_assert(st.rec.has_broke && st.rec.broke.age_s >= 5999 && st.rec.broke.age_s < 6100,
		  "the wall-clock age: %lld s", (long long)st.rec.broke.age_s);
	sx_put_record_boot(&x, "dist", "o-dist", -SX_HOUR, other, 0);
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 1);
	cr_assert(strstr(err, "in the future (clock skew)"), "%s", err);
	free(err);
	/* the same record on this boot: boot-relative, live, not skew */
	sx_put_record_boot(&x, "dist", "o-dist", 100 * 60 * 1000, hf_boot_id(), 1000);
	cr_assert_eq(sx_cli(&x, NULL, &err, "take", "data", NULL, NULL), 1);
	cr_assert(strstr(err, "held by lane dist") && strstr(err, " s old;") && !strstr(err, "future"),
		  "seconds old by the boot clock: %s", err);
	free(err);
}
