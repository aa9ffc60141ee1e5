/* The go message (src/cli/supervise.c, SV4): what the blocked child of
 * `holdfast run` / `edit` accepts before it execs CMD. */
#include "run.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

static int count(const char *kv, size_t klen, void *ctx)
{
	(void)kv;
	(void)klen;
	++*(int *)ctx;
	return 0;
}

Test(go, only_what_the_writer_writes_is_accepted)
{
	const char *env[] = { "HOLDFAST_FENCE=17 18", "HOLDFAST_POD=run-1a2b3c4d" };
	char buf[CLI_GO_MAX];
	int n = cli_go_format(buf, sizeof buf, env, 2);
	cr_assert_gt(n, 0);
	int got = 0;
	cr_assert_eq(cli_go_parse(buf, (size_t)n, count, &got), 0);
	cr_assert_eq(got, 2);
	cr_assert_eq(cli_go_parse("GE", 2, NULL, NULL), 0, "no variables");
	/* an entry without '=' or with an empty name was skipped, and CMD ran */
	static const struct {
		const char *m;
		size_t n;
	} bad[] = {
		{ "GHOLDFAST_FENCE\0E", 17 }, { "G=x\0E", 5 }, { "G\0E", 3 },
		{ "GA=1\0\0E", 7 }, { "GA=1E", 5 }, { "GA=1\0", 5 }, { "XA=1\0E", 6 }, { "G", 1 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		got = 0;
		cr_assert_eq(cli_go_parse(bad[i].m, bad[i].n, count, &got), -EINVAL, "case %zu", i);
		cr_assert_eq(got, 0, "case %zu: nothing handed out before the refusal (SV1)", i);
	}
	/* a valid entry before a bad one is not handed out either */
	got = 0;
	cr_assert_eq(cli_go_parse("GA=1\0B\0E", 8, count, &got), -EINVAL);
	cr_assert_eq(got, 0);
	const char *noeq[] = { "NOEQUALS" };
	cr_assert_eq(cli_go_format(buf, sizeof buf, noeq, 1), -EINVAL, "the writer refuses it too");
}
