/* file.c and text.c: times, publication, atomic replacement, text validation. */
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

Test(util, time_round_trip)
{
	char buf[64];
	int64_t ms;
	hf_time_format(1758535200000LL, buf, sizeof buf);
	cr_assert_str_eq(buf, "2025-09-22T10:00:00Z");
	cr_assert_eq(hf_time_parse(buf, &ms), 0);
	cr_assert_eq(ms, 1758535200000LL);
	hf_time_format(1758535200123LL, buf, sizeof buf);
	cr_assert_str_eq(buf, "2025-09-22T10:00:00.123Z");
	cr_assert_eq(hf_time_parse(buf, &ms), 0);
	cr_assert_eq(ms, 1758535200123LL);
}

Test(util, time_parse_forms)
{
	int64_t ms;
	cr_assert_eq(hf_time_parse("2026-09-22T10:00:00Z\n", &ms), 0);
	int64_t z = ms;
	cr_assert_eq(hf_time_parse("2026-09-22T12:00:00+02:00", &ms), 0);
	cr_assert_eq(ms, z);
	cr_assert_eq(hf_time_parse("2026-09-22T05:30:00-0430", &ms), 0);
	cr_assert_eq(ms, z);
	cr_assert_eq(hf_time_parse("2026-09-22T10:00:00.5Z", &ms), 0);
	cr_assert_eq(ms, z + 500);
	cr_assert_eq(hf_time_parse("2026-09-22T10:00:00", &ms), -EINVAL, "no zone: ambiguous");
	cr_assert_eq(hf_time_parse("garbage", &ms), -EINVAL);
	cr_assert_eq(hf_time_parse("2026-13-22T10:00:00Z", &ms), -EINVAL);
	cr_assert_eq(hf_time_parse("2026-09-22T10:00:00Zjunk", &ms), -EINVAL);
	cr_assert_eq(hf_time_parse("", &ms), -EINVAL);
}

Test(util, publish_is_test_and_set)
{
	char *d = hft_tmpdir();
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(hf_publish_file_at(dfd, "rec", "first\n", 6, 0644, false), 0);
	cr_assert_eq(hf_publish_file_at(dfd, "rec", "second\n", 7, 0644, false), -EEXIST);
	char p[600];
	snprintf(p, sizeof p, "%s/rec", d);
	char *s = hft_slurp(p);
	cr_assert_str_eq(s, "first\n", "FI1: never replaced");
	free(s);
	cr_assert_eq(hft_count_prefix(d, ""), 1, "no temporary left beside it");
	close(dfd);
	hft_rmtree(d);
	free(d);
}

Test(util, publish_failure_leaves_nothing)
{
	char *d = hft_tmpdir();
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(hf_fault_inject("fail:write:1:ENOSPC", NULL, 0), 0);
	cr_assert_eq(hf_publish_file_at(dfd, "rec", "data", 4, 0644, false), -ENOSPC);
	hf_fault_inject(NULL, NULL, 0);
	cr_assert_eq(hft_count_prefix(d, ""), 0, "FI1: nothing visible after a failed publish");
	close(dfd);
	hft_rmtree(d);
	free(d);
}

Test(util, replace_keeps_mode_and_leaves_no_temporary)
{
	char *d = hft_tmpdir();
	char p[600];
	snprintf(p, sizeof p, "%s/f", d);
	hft_write(p, "old");
	chmod(p, 0640);
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(hf_replace_file_at(dfd, "f", "new", 3, 0600, true), 0);
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640);
	char *s = hft_slurp(p);
	cr_assert_str_eq(s, "new");
	free(s);
	cr_assert_eq(hf_fault_inject("fail:rename:1:EIO", NULL, 0), 0);
	cr_assert_eq(hf_replace_file_at(dfd, "f", "newer", 5, 0600, true), -EIO);
	hf_fault_inject(NULL, NULL, 0);
	s = hft_slurp(p);
	cr_assert_str_eq(s, "new", "FI2: a failed replace leaves the old content");
	free(s);
	cr_assert_eq(hft_count_prefix(d, "f.tmp-"), 0);
	close(dfd);
	hft_rmtree(d);
	free(d);
}

Test(util, text_validation)
{
	cr_assert(hf_text_ok("data-lane_1", 64));
	cr_assert(hf_text_ok("caf\xc3\xa9", 64));
	cr_assert_not(hf_text_ok("a\nb", 64));
	cr_assert_not(hf_text_ok("a\x1b[31m", 64));
	cr_assert_not(hf_text_ok("\xff\xfe", 64));
	cr_assert_not(hf_text_ok("\xc3", 64), "truncated sequence");
	cr_assert_not(hf_text_ok("abcdef", 5));
}

/* The small-file reader: one read, NUL-terminated, -EFBIG at n - 1 bytes,
 * the descriptor kept on request; hf_json_escape, the one escaper (TX3). */
Test(util, read_small_and_json_escape)
{
	char *d = hft_tmpdir();
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(hf_publish_file_at(dfd, "f", "12345", 5, 0600, false), 0);
	char buf[7];
	int fd = -1;
	cr_assert_eq(hf_read_small_at(dfd, "f", 0, buf, sizeof buf, &fd), 5);
	cr_assert_str_eq(buf, "12345");
	cr_assert_geq(fd, 0, "the descriptor is kept");
	close(fd);
	fd = -1;
	cr_assert_eq(hf_read_small_at(dfd, "f", 0, buf, 6, &fd), -EFBIG, "5 bytes need 7");
	cr_assert_eq(fd, -1, "nothing kept on failure");
	cr_assert_eq(hf_read_small_at(dfd, "none", 0, buf, sizeof buf, NULL), -ENOENT);
	cr_assert_eq(symlinkat("f", dfd, "l"), 0);
	cr_assert_eq(hf_read_small_at(dfd, "l", 0, buf, sizeof buf, NULL), -ELOOP, "never followed");
	close(dfd);
	hft_rmtree(d);
	free(d);

	char out[64];
	*hf_json_escape(out, "a\"b\\c\x01\x7f\xc3\xa9") = '\0';
	cr_assert_str_eq(out, "a\\\"b\\\\c\\u0001\\u007f\xc3\xa9");
}

Test(util, time_parse_takes_calendar_dates_only)
{
	/* TX4: a day past its month's last was rolled into the next month */
	static const char *const bad[] = {
		"2020-02-30T10:00:00Z", "2021-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
		"1900-02-29T00:00:00Z", "2016-12-31T22:59:60Z", "2016-12-31T23:59:61Z",
		"0000-01-01T00:30:00+01:00", /* year -1: not what hf_time_format writes back */
	};
	int64_t ms;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hf_time_parse(bad[i], &ms), -EINVAL, "'%s' must be refused", bad[i]);
	cr_assert_eq(hf_time_parse("2020-02-29T00:00:00Z", &ms), 0, "a leap day");
	cr_assert_eq(hf_time_parse("2000-02-29T00:00:00Z", &ms), 0, "a leap day of a 400th year");
	cr_assert_eq(hf_time_parse("2016-12-31T23:59:60Z", &ms), 0, "a leap second");
	int64_t next;
	cr_assert_eq(hf_time_parse("2017-01-01T00:00:00Z", &next), 0);
	cr_assert_eq(ms, next);
	cr_assert_eq(hf_time_parse("9999-12-31T23:59:59.999Z", &ms), 0);
}

Test(util, parse_u64_is_decimal_digits_only)
{
	/* TX5: strtol's forms (" 5", "+5") and hex were taken for numbers */
	static const char *const bad[] = { "", " 5", "5 ", "+5", "-1", "0x10", "1e3", "5\n", "٣" };
	uint64_t v;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hf_parse_u64(bad[i], UINT64_MAX, &v), -EINVAL, "'%s' must be refused",
			     bad[i]);
	cr_assert_eq(hf_parse_u64("18446744073709551615", UINT64_MAX, &v), 0);
	cr_assert_eq(v, UINT64_MAX);
	cr_assert_eq(hf_parse_u64("18446744073709551616", UINT64_MAX, &v), -ERANGE, "never wrapped");
	cr_assert_eq(hf_parse_u64("256", 255, &v), -ERANGE);
	cr_assert_eq(hf_parse_u64("99999999999999999999x", UINT64_MAX, &v), -EINVAL,
		     "not a number, however long");
	cr_assert_eq(hf_parse_u64("007", 255, &v), 0);
	cr_assert_eq(v, 7);
}

/* TX6: random bytes come from a per-thread pool; a forked child never hands
 * out the bytes its parent will (its pool is emptied at the fork), and no
 * byte is handed out twice in one process. */
Test(util, random_pool_is_never_shared_with_a_child)
{
	char a[33], b[33], c[33];
	cr_assert_eq(hf_random_hex(a, 16), 0); /* the pool is filled now */
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char mine[33];
		_exit(hf_random_hex(mine, 16) == 0 && write(p[1], mine, 32) == 32 ? 0 : 1);
	}
	cr_assert_eq(hf_random_hex(b, 16), 0);
	cr_assert_eq(read(p[0], c, 32), 32);
	c[32] = '\0';
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_str_neq(a, b, "never the same bytes twice");
	cr_assert_str_neq(b, c, "the child drew its own bytes, not the parent's next ones");
	cr_assert_eq(strlen(b), 32);
	close(p[0]);
	close(p[1]);
}
