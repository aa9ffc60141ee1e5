/* The directory lock's files as bytes: what a valid owner record (DL13)
 * and fence counter (FC3) are, that every record the current writer
 * makes is one, and that the rest is refused as unreadable - by the
 * library and by `holdfast lock status` (65). */
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

HFT_SCRATCH_SUITE(record, 60);

#define TOK "9f0c2d4e5a6b7c8d9e0f1a2b3c4d5e6f"
#define BOOT "d616b8ae-4c40-4d21-92b0-5a312d00c62a"
#define REC(tok, extra)                                                                  \
	"{\"token\":\"" tok "\",\"pid\":4242,\"pid_start\":123456,\"boot_id\":\"" BOOT "\","    \
	"\"host\":\"box\",\"acquired\":\"2026-09-22T10:00:00Z\",\"fence\":7,"                 \
	"\"max_hold_ms\":600000" extra ",\"pidns\":4026531836,\"timens\":4026531834,"         \
	"\"boottime_ms\":8123456,\"comm\":\"deploy.sh\"}\n"

static int parse(const char *s, size_t n)
{
	struct hf_lock_info i;
	return hf_dirlock_record_parse(s, n, &i);
}

Test(record, the_writers_records_read_back)
{
	struct hf_owner me;
	cr_assert_eq(hf_owner_init(&me, 0), 0);
	char buf[HF_OWNER_JSON_MAX + 256];
	static const uint64_t fences[] = { 1, 7, (uint64_t)INT64_MAX };
	for (size_t k = 0; k < 3; k++) {
		size_t n = hf_dirlock_record_format(buf, &me, fences[k], 600000, HF_MODE_EXCLUSIVE, 1);
		struct hf_lock_info i;
		cr_assert_eq(hf_dirlock_record_parse(buf, n, &i), 0, "%s", buf);
		cr_assert_str_eq(i.owner.token, me.token);
		cr_assert_eq(i.fence, fences[k]);
		char tok[HF_TOKEN_LEN + 1];
		cr_assert(hf_dirlock_record_token(buf, n, tok));
		cr_assert_str_eq(tok, me.token);
	}
	/* the documented form, older records without pidns/timens/boottime/comm,
	 * and a later writer's unknown member */
	const char *doc = REC(TOK, "");
	cr_assert_eq(parse(doc, strlen(doc)), 0);
	const char *old = "{\"token\":\"" TOK "\",\"pid\":4242,\"pid_start\":1,\"boot_id\":\"" BOOT
			  "\",\"host\":\"box\",\"acquired\":\"2026-09-22T10:00:00Z\",\"fence\":1}\n";
	cr_assert_eq(parse(old, strlen(old)), 0);
	const char *later = REC(TOK, ",\"epoch\":3,\"future\":{\"x\":[1]}");
	cr_assert_eq(parse(later, strlen(later)), 0, "unknown members are tolerated");
}

Test(record, nul_and_junk_after_a_record_is_unreadable)
{
	/* json_loads stopped at the NUL: a record followed by NUL and junk
	 * was read as the record */
	char buf[1024];
	const char *r = REC(TOK, "");
	size_t n = strlen(r);
	memcpy(buf, r, n);
	memcpy(buf + n, "\0{\"x\":1}", 8);
	cr_assert_eq(parse(buf, n), 0);
	cr_assert_eq(parse(buf, n + 8), HF_EUNREADABLE);
	cr_assert_eq(parse(buf, n + 1), HF_EUNREADABLE, "a single NUL");
	const char *junk = "{\"token\":\"" TOK "\",\"pid\":1,\"fence\":1} junk";
	cr_assert_eq(parse(junk, strlen(junk)), HF_EUNREADABLE);
}

Test(record, a_member_twice_is_unreadable)
{
	/* the parse took the last token, the peek of identity checks the
	 * first: two identities in one record */
	const char *dup = "{\"token\":\"" TOK "\",\"token\":\"ffffffffffffffffffffffffffffffff\","
			  "\"pid\":4242,\"fence\":7}\n";
	cr_assert_eq(parse(dup, strlen(dup)), HF_EUNREADABLE);
	const char *dupf = "{\"token\":\"" TOK "\",\"pid\":4242,\"fence\":7,\"fence\":9}\n";
	cr_assert_eq(parse(dupf, strlen(dupf)), HF_EUNREADABLE);
}

Test(record, a_token_is_32_lowercase_hex_digits)
{
	static const char *const bad[] = {
		REC("9F0C2D4E5A6B7C8D9E0F1A2B3C4D5E6F", ""), REC("zz0c2d4e5a6b7c8d9e0f1a2b3c4d5e6f", ""),
		REC("9f0c2d4e", ""), REC("9f0c2d4e5a6b7c8d9e0f1a2b3c4d5e6", ""), REC("x y", ""),
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(parse(bad[i], strlen(bad[i])), HF_EUNREADABLE, "%s", bad[i]);
	char tok[HF_TOKEN_LEN + 1];
	cr_assert_not(hf_dirlock_record_token("{\"token\":\"9f0c", 14, tok),
		      "the peek never reads past the bytes it has");
}

Test(record, dates_of_the_calendar_only)
{
	const char *feb30 = "{\"token\":\"" TOK "\",\"pid\":4242,\"acquired\":\"2026-02-30T10:00:00Z\","
			    "\"fence\":7}\n";
	cr_assert_eq(parse(feb30, strlen(feb30)), HF_EUNREADABLE);
}

Test(record, lock_acquire_says_unreadable_for_a_record_with_junk)
{
	/* through the CLI: a live holder's record followed by NUL and junk is
	 * not a record - exit 65 within the stale window, not "held" */
	char lock[512], owner[600];
	snprintf(lock, sizeof lock, "%s/L", dir);
	snprintf(owner, sizeof owner, "%s/owner", lock);
	cr_assert_eq(mkdir(lock, 0700), 0);
	struct hf_owner me;
	cr_assert_eq(hf_owner_init(&me, 0), 0);
	char buf[HF_OWNER_JSON_MAX + 256];
	size_t n = hf_dirlock_record_format(buf, &me, 3, 600000, HF_MODE_EXCLUSIVE, 1);
	int fd = open(owner, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	cr_assert_eq(write(fd, "\0junk", 5), 5);
	close(fd);
	char *out = NULL, *err = NULL;
	const char *argv[] = { "holdfast", "lock", "acquire", "-n", lock, NULL };
	int st = hft_cli(&out, &err, argv);
	cr_assert_eq(st, 65, "exit %d: %s%s", st, out, err);
	cr_assert(strstr(err, "unreadable"), "%s", err);
	free(out);
	free(err);
	/* the same record without the junk: held (by this test process) */
	cr_assert_eq(truncate(owner, (off_t)n), 0);
	st = hft_cli(&out, &err, argv);
	cr_assert_eq(st, 1, "exit %d: %s%s", st, out, err);
	cr_assert(strstr(err, "held by pid"), "%s", err);
	free(out);
	free(err);
}

Test(record, fence_lines)
{
	struct hf_fence_line fl;
	char line[HF_FENCE_LINE_MAX + 64];
	fl.fence = 7;
	fl.reserve = 1024;
	fl.entered = 6;
	snprintf(fl.boot, sizeof fl.boot, BOOT);
	size_t n = hf_fence_format(line, &fl);
	struct hf_fence_line back;
	cr_assert_eq(hf_fence_parse(line, n, &back), 0, "the writer's line");
	cr_assert(back.fence == 7 && back.reserve == 1024 && back.entered == 6);
	memcpy(line + n, "0000000009 tail", 15);
	cr_assert_eq(hf_fence_parse(line, n + 15, &back), 0,
		     "a longer line's tail after the newline is ignored (rewritten in place)");
	const char *three = "00000000000000000007 00000000000000001024 " BOOT "\n";
	cr_assert_eq(hf_fence_parse(three, strlen(three), &back), 0, "an older three-field line");
	cr_assert_eq(back.entered, 7);
	cr_assert_eq(hf_fence_parse("", 0, &back), -ENODATA);
	/* a NUL in the line: the boot id was cut at it and the rest ignored */
	char nul[] = "7 1024 d616b8ae\0junk 7\n";
	cr_assert_eq(hf_fence_parse(nul, sizeof nul - 1, &back), HF_EUNREADABLE);
	static const char *const bad[] = { "8 7 b 1\n", "7 9223372036854775808 b 1\n", "7 8 b 9\n",
					   "7 8  1\n", "+7 8 b\n", "7 8 b\x01 1\n" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hf_fence_parse(bad[i], strlen(bad[i]), &back), HF_EUNREADABLE, "%s",
			     bad[i]);
}

Test(record, fence_reservation_is_digits)
{
	uint64_t v;
	cr_assert_eq(hf_fence_reserve_parse("2048\n", 5, &v), 0);
	cr_assert_eq(v, 2048);
	cr_assert_eq(hf_fence_reserve_parse("2048", 4, &v), 0);
	/* strtoull took these */
	static const char *const bad[] = { " 2048\n", "+2048\n", "2048\n\n", "9223372036854775808\n",
					   "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hf_fence_reserve_parse(bad[i], strlen(bad[i]), &v), HF_EUNREADABLE,
			     "'%s'", bad[i]);
	cr_assert_eq(hf_fence_reserve_parse("2048\0junk", 9, &v), HF_EUNREADABLE);
}
