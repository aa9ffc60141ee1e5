/* session.c's record: format, parse (JSON and legacy), judge; aside names;
 * the default lock path (issue 2, items 7, 12, 13). */
#include "hft.h"
#include "internal.h"
#include "session_file.h"
#include "sx.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct hf_sessionlock_record sample(void)
{
	struct hf_sessionlock_record r;
	memset(&r, 0, sizeof r);
	strcpy(r.lane, "data");
	strcpy(r.owner, "tok\"en\\1");
	r.pid = 4242;
	strcpy(r.host, "box");
	r.started_ms = 1790071200000LL; /* 2026-09-22T10:00:00Z */
	return r;
}

Test(record, format_is_one_line_in_contract_order)
{
	struct hf_sessionlock_record r = sample();
	r.has_broke = 1;
	strcpy(r.broke.lane, "dist");
	strcpy(r.broke.owner, "o2");
	r.broke.started_ms = r.started_ms - 5520000;
	r.broke.age_s = 5520;
	char buf[1024];
	int len = hf_session_format(&r, buf, sizeof buf);
	cr_assert_str_eq(buf, "{\"lane\":\"data\",\"owner\":\"tok\\\"en\\\\1\",\"pid\":4242,"
			      "\"host\":\"box\",\"started\":\"2026-09-22T10:00:00Z\","
			      "\"broke\":{\"lane\":\"dist\",\"owner\":\"o2\","
			      "\"started\":\"2026-09-22T08:28:00Z\",\"age_s\":5520}}\n");
	cr_assert_eq(len, (int)strlen(buf));
	cr_assert_eq(hf_session_format(&r, buf, 40), -ENAMETOOLONG, "never truncated silently");
}

Test(record, parse_round_trip)
{
	struct hf_sessionlock_record r = sample(), back;
	char buf[1024], why[160];
	int len = hf_session_format(&r, buf, sizeof buf);
	cr_assert_eq(hf_session_parse(buf, (size_t)len, &back, why, sizeof why), 0, "%s", why);
	cr_assert_str_eq(back.lane, "data");
	cr_assert_str_eq(back.owner, "tok\"en\\1");
	cr_assert_eq(back.pid, 4242);
	cr_assert_str_eq(back.host, "box");
	cr_assert_eq(back.started_ms, r.started_ms);
	cr_assert_not(back.legacy);
	cr_assert_not(back.has_broke);
}

Test(record, legacy_timestamp_is_a_record)
{
	struct hf_sessionlock_record r;
	char why[160];
	const char *s = "2026-09-22T10:00:00Z\n";
	cr_assert_eq(hf_session_parse(s, strlen(s), &r, why, sizeof why), 0);
	cr_assert(r.legacy);
	cr_assert_str_eq(r.lane, "");
	cr_assert_eq(r.started_ms, 1790071200000LL);
	const char *js = "2026-09-22T10:00:00.123Z"; /* JavaScript's toISOString() */
	cr_assert_eq(hf_session_parse(js, strlen(js), &r, why, sizeof why), 0);
	cr_assert_eq(r.started_ms, 1790071200123LL);
}

Test(record, unreadable_content_is_refused_with_a_reason)
{
	static const char *const bad[] = {
		"",                                   /* empty                          */
		"  \n",                               /* blank                          */
		"garbage\n",                          /* neither JSON nor a timestamp   */
		"2026-09-22T10:00:00\n",              /* no zone: ambiguous             */
		"{\"lane\":\"data\",",                /* truncated JSON                 */
		"[1,2]\n",                            /* JSON, not an object            */
		"{\"started\":\"2026-09-22T10:00:00Z\"}", /* no lane                    */
		"{\"lane\":\"data\"}",                /* no started                     */
		"{\"lane\":\"data\",\"started\":\"yesterday\"}",
		"{\"lane\":7,\"started\":\"2026-09-22T10:00:00Z\"}",
		"{\"lane\":\"d\",\"pid\":\"x\",\"started\":\"2026-09-22T10:00:00Z\"}",
		"{\"lane\":\"d\",\"lane\":\"e\",\"started\":\"2026-09-22T10:00:00Z\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct hf_sessionlock_record r;
		char why[160] = "";
		cr_assert_eq(hf_session_parse(bad[i], strlen(bad[i]), &r, why, sizeof why),
			     HF_EUNREADABLE, "case %zu '%s' must be unreadable", i, bad[i]);
		cr_assert_neq(why[0], '\0', "case %zu: a reason for the human", i);
	}
	char nul[] = "2026-09-22T10:00:00Z\0junk";
	struct hf_sessionlock_record r;
	char why[160];
	cr_assert_eq(hf_session_parse(nul, sizeof nul - 1, &r, why, sizeof why), HF_EUNREADABLE,
		     "NUL bytes: not a text record");
}

Test(record, judge_ages_from_started_and_sees_skew)
{
	struct hf_sessionlock_record r = sample();
	int64_t age;
	int64_t now = r.started_ms + 10 * 60 * 1000;
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_HELD);
	cr_assert_eq(age, 600000);
	now = r.started_ms + 91 * 60 * 1000;
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_STALE, "default window 90 min");
	cr_assert_eq(hf_session_judge(&r, now, 2 * SX_HOUR, &age), HF_SESSION_HELD);
	cr_assert_eq(hf_session_judge(&r, r.started_ms - 1000, 0, &age), HF_SESSION_SKEW);
	cr_assert_eq(age, -1000);
}

/* Item 9 of "holder identity": what makes a boot-relative age possible is
 * in the record, under the owner records' names. */
Test(record, boot_fields_round_trip_under_the_owner_records_names)
{
	struct hf_sessionlock_record r = sample(), back;
	snprintf(r.boot_id, sizeof r.boot_id, "%s", "d616b8ae-4c40-4d21-92b0-5a312d00c62a");
	r.timens = 4026531834ULL;
	r.boot_ms = 8123456;
	char buf[1024], why[160];
	int len = hf_session_format(&r, buf, sizeof buf);
	cr_assert(strstr(buf, "\"started\":\"2026-09-22T10:00:00Z\","
			      "\"boot_id\":\"d616b8ae-4c40-4d21-92b0-5a312d00c62a\","
			      "\"timens\":4026531834,\"boottime_ms\":8123456}\n"),
		  "%s", buf);
	cr_assert_eq(hf_session_parse(buf, (size_t)len, &back, why, sizeof why), 0, "%s", why);
	cr_assert_str_eq(back.boot_id, r.boot_id);
	cr_assert_eq(back.timens, r.timens);
	cr_assert_eq(back.boot_ms, r.boot_ms);
	static const char *const bad[] = {
		"{\"lane\":\"d\",\"started\":\"2026-09-22T10:00:00Z\",\"boottime_ms\":\"1\"}",
		"{\"lane\":\"d\",\"started\":\"2026-09-22T10:00:00Z\",\"timens\":-4}",
		"{\"lane\":\"d\",\"started\":\"2026-09-22T10:00:00Z\",\"boot_id\":7}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hf_session_parse(bad[i], strlen(bad[i]), &back, why, sizeof why),
			     HF_EUNREADABLE, "case %zu", i);
}

/* SL2: on this kernel and time namespace the age is boot-relative - a wall
 * clock that says 100 minutes passed does not make a fresh record stale,
 * nor a record dated in the future skew; of another boot (or without the
 * fields, as 0.1.0 wrote them) the wall clock decides, skew included. */
Test(record, judge_is_boot_relative_on_this_kernel_else_by_the_wall_clock)
{
	struct hf_sessionlock_record r = sample();
	int64_t age, now = hf_sys_now_ms();
	r.started_ms = now - 100 * 60 * 1000; /* the wall clock says 100 min */
	snprintf(r.boot_id, sizeof r.boot_id, "%s", hf_boot_id());
	cr_assert_neq(r.boot_id[0], '\0', "this machine has a boot id");
	r.timens = hf_self_timens();
	cr_assert_neq(r.timens, 0);
	r.boot_ms = hf_sys_boot_ms() - 5000; /* CLOCK_BOOTTIME says 5 s */
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_HELD);
	cr_assert(age >= 5000 && age < 65000, "boot-relative age %lld", (long long)age);
	r.started_ms = now + SX_HOUR; /* dated in the future by the wall clock */
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_HELD, "not skew");
	/* another boot: the wall clock */
	r.started_ms = now - 100 * 60 * 1000;
	snprintf(r.boot_id, sizeof r.boot_id, "%s", "00000000-0000-0000-0000-000000000000");
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_STALE);
	cr_assert_eq(age, 100 * 60 * 1000);
	r.started_ms = now + 1000;
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_SKEW);
	/* another time namespace, or no boottime: the wall clock */
	snprintf(r.boot_id, sizeof r.boot_id, "%s", hf_boot_id());
	r.started_ms = now - 100 * 60 * 1000;
	r.timens = hf_self_timens() + 1;
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_STALE);
	r.timens = hf_self_timens();
	r.boot_ms = 0;
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_STALE);
	/* a legacy timestamp never carries them */
	r.boot_ms = hf_sys_boot_ms();
	r.legacy = 1;
	cr_assert_eq(hf_session_judge(&r, now, 0, &age), HF_SESSION_STALE);
}

Test(record, aside_names_follow_one_pattern)
{
	cr_assert(hf_session_is_aside(".session.lock", ".session.lock.aside-0123456789abcdef"));
	cr_assert_not(hf_session_is_aside(".session.lock", ".session.lock.aside-0123"));
	cr_assert_not(hf_session_is_aside(".session.lock", ".session.lock.aside-0123456789ABCDEF"));
	cr_assert_not(hf_session_is_aside(".session.lock", ".session.lock"));
	cr_assert_not(hf_session_is_aside(".session.lock", "x.session.lock.aside-0123456789abcdef"));
}

/* --- default path (item 13) ----------------------------------------------- */

static char *real(const char *p)
{
	char *r = realpath(p, NULL);
	cr_assert_not_null(r, "realpath %s", p);
	return r;
}

Test(default_path, top_of_the_git_work_tree)
{
	struct sx x;
	sx_init(&x);
	char sub[700], dotgit[700], want[800], got[PATH_MAX];
	snprintf(dotgit, sizeof dotgit, "%s/.git", x.dir);
	snprintf(sub, sizeof sub, "%s/a/b", x.dir);
	cr_assert_eq(mkdir(dotgit, 0700), 0);
	snprintf(want, sizeof want, "%s/a", x.dir);
	cr_assert_eq(mkdir(want, 0700), 0);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(chdir(sub), 0);
	cr_assert_eq(hf_session_default_path(got, sizeof got), 0);
	char *top = real(x.dir);
	snprintf(want, sizeof want, "%s/.session.lock", top);
	cr_assert_str_eq(got, want, "walks up to the directory holding .git");
	free(top);
	sx_fini(&x);
}

Test(default_path, a_git_file_marks_a_linked_work_tree)
{
	struct sx x;
	sx_init(&x);
	char dotgit[700], sub[700], want[800], got[PATH_MAX];
	snprintf(dotgit, sizeof dotgit, "%s/.git", x.dir);
	hft_write(dotgit, "gitdir: /elsewhere/.git/worktrees/wt\n");
	snprintf(sub, sizeof sub, "%s/src", x.dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(chdir(sub), 0);
	cr_assert_eq(hf_session_default_path(got, sizeof got), 0);
	char *top = real(x.dir);
	snprintf(want, sizeof want, "%s/.session.lock", top);
	cr_assert_str_eq(got, want);
	free(top);
	sx_fini(&x);
}

Test(default_path, outside_a_work_tree_the_current_directory)
{
	struct sx x;
	sx_init(&x);
	char want[800], got[PATH_MAX];
	cr_assert_eq(chdir(x.dir), 0);
	/* /dev/shm (or $HFT_TMPDIR) is not inside a work tree: nothing above
	 * holds a .git, so the lock goes in the current directory. */
	cr_assert_eq(hf_session_default_path(got, sizeof got), 0);
	char *here = real(".");
	snprintf(want, sizeof want, "%s/.session.lock", here);
	cr_assert_str_eq(got, want);
	free(here);
	sx_fini(&x);
}

Test(record, legacy_timestamp_is_read_within_its_length)
{
	/* hf_session_parse's legacy branch read the timestamp up to a NUL
	 * past len (a read past the caller's buffer, found by the fuzz
	 * replay): only len bytes are the record */
	const char buf[] = "2026-09-22T10:00:00Zjunk-beyond-len";
	struct hf_sessionlock_record r;
	char why[160];
	cr_assert_eq(hf_session_parse(buf, 20, &r, why, sizeof why), 0, "%s", why);
	cr_assert(r.legacy);
	cr_assert_eq(r.started_ms, 1790071200000LL);
}

Test(record, dates_of_the_calendar_only)
{
	/* 2020-02-30 was read as 2020-03-01 */
	static const char *const bad[] = {
		"2020-02-30T10:00:00Z\n",
		"{\"lane\":\"d\",\"started\":\"2020-02-30T10:00:00Z\"}\n",
		"{\"lane\":\"d\",\"started\":\"2026-06-31T10:00:00Z\"}\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct hf_sessionlock_record r;
		char why[160] = "";
		cr_assert_eq(hf_session_parse(bad[i], strlen(bad[i]), &r, why, sizeof why),
			     HF_EUNREADABLE, "'%s' must be unreadable", bad[i]);
		cr_assert_neq(why[0], '\0');
	}
}

Test(record, every_record_the_writer_makes_reads_back)
{
	/* a stricter judge must never call a live holder's record unreadable */
	struct hf_sessionlock_record r, back;
	memset(&r, 0, sizeof r);
	snprintf(r.lane, sizeof r.lane, "data");
	snprintf(r.owner, sizeof r.owner, "9f0c2d4e5a6b7c8d9e0f1a2b3c4d5e6f");
	snprintf(r.host, sizeof r.host, "box");
	snprintf(r.boot_id, sizeof r.boot_id, "d616b8ae-4c40-4d21-92b0-5a312d00c62a");
	r.pid = 4242;
	r.timens = 4026531834u;
	r.boot_ms = 8123456;
	r.has_broke = 1;
	r.broke.legacy = 1;
	r.broke.age_s = 5520;
	char buf[HF_SESSION_FILE_MAX], why[160];
	static const int64_t times[] = { 0, 1790071200123LL, 951782400000LL /* 2000-02-29 */,
					 253402300799999LL /* 9999-12-31T23:59:59.999 */ };
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		r.started_ms = r.broke.started_ms = times[i];
		int n = hf_session_format(&r, buf, sizeof buf);
		cr_assert_gt(n, 0);
		cr_assert_eq(hf_session_parse(buf, (size_t)n, &back, why, sizeof why), 0, "%s: %s",
			     buf, why);
		cr_assert_eq(back.started_ms, times[i]);
		cr_assert_eq(back.broke.started_ms, times[i]);
	}
}
