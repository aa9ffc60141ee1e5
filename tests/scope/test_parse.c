/* The registry and spec parsers never crash and refuse cleanly: malformed
 * JSON, wrong types, bad names, non-canonical specs, cycles, and thousands of
 * deterministic random mutations of a valid registry (a libFuzzer-free
 * regression test; any input must give 0 or HF_EUNREADABLE with a reason). */
#include "hft.h"
#include "registry.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char valid[] =
	"{\"version\":1,\"generation\":9,\"allocations\":[\n"
	"{\"name\":\"a\",\"pid\":123,\"pid_start\":77,\"boot_id\":\"b\",\"host\":\"h\","
	"\"socket\":\"/run/a.sock\",\"scope_allow\":[\"/p:write:recursive\",\"/q:read\"],"
	"\"delegated_from\":null,\"generation\":3,\"registered\":\"2026-01-01T00:00:00Z\"},\n"
	"{\"name\":\"d\",\"pid\":124,\"scope_allow\":[\"/p/x:write\"],\"delegated_from\":\"a\","
	"\"generation\":9}\n]}\n";

static int parse(const char *s, size_t len, char *why, size_t n)
{
	struct hf_scopereg_table t;
	int rc = hf_regtable_parse(s, len, &t, why, n);
	if (rc == 0)
		hf_regtable_clear(&t);
	return rc;
}

Test(parse, valid_round_trip)
{
	struct hf_scopereg_table t;
	char why[256];
	cr_assert_eq(hf_regtable_parse(valid, strlen(valid), &t, why, sizeof why), 0, "%s", why);
	cr_assert_eq(t.n, 2);
	cr_assert_eq(t.generation, 9);
	cr_assert_str_eq(t.a[1].from, "a");
	cr_assert_str_eq(t.a[0].socket, "/run/a.sock");
	cr_assert_eq(t.a[0].nspecs, 2);
	char *out;
	size_t len;
	cr_assert_eq(hf_regtable_format(&t, &out, &len), 0);
	struct hf_scopereg_table u;
	cr_assert_eq(hf_regtable_parse(out, len, &u, why, sizeof why), 0, "%s", why);
	char *again;
	size_t len2;
	cr_assert_eq(hf_regtable_format(&u, &again, &len2), 0);
	cr_assert_eq(len, len2);
	cr_assert_eq(memcmp(out, again, len), 0, "format(parse(format(t))) == format(t)");
	free(out);
	free(again);
	hf_regtable_clear(&t);
	hf_regtable_clear(&u);
}

Test(parse, escaping_round_trips)
{
	/* a path with quotes, backslashes and non-ASCII text survives */
	static const char in[] =
		"{\"version\":1,\"generation\":1,\"allocations\":[{\"name\":\"\\u00e9t\\u00e9\","
		"\"pid\":5,\"socket\":\"/r/\\\"q\\\\.sock\",\"scope_allow\":"
		"[\"/p/\\\"it's\\\"/\\\\x/\\u65e5:write\"],\"generation\":1}]}";
	struct hf_scopereg_table t;
	char why[256];
	cr_assert_eq(hf_regtable_parse(in, strlen(in), &t, why, sizeof why), 0, "%s", why);
	cr_assert_str_eq(t.a[0].spec_text[0], "/p/\"it's\"/\\x/\xe6\x97\xa5:write");
	char *out;
	size_t len;
	cr_assert_eq(hf_regtable_format(&t, &out, &len), 0);
	struct hf_scopereg_table u;
	cr_assert_eq(hf_regtable_parse(out, len, &u, why, sizeof why), 0, "%s", why);
	cr_assert_str_eq(u.a[0].spec_text[0], t.a[0].spec_text[0]);
	cr_assert_str_eq(u.a[0].socket, "/r/\"q\\.sock");
	cr_assert_str_eq(u.a[0].name, "\xc3\xa9t\xc3\xa9");
	free(out);
	hf_regtable_clear(&t);
	hf_regtable_clear(&u);
}

Test(parse, malformed_refused_with_a_reason)
{
	const char *bad[] = {
		"",
		"null",
		"[]",
		"{",
		"{\"version\":2,\"generation\":1,\"allocations\":[]}",
		"{\"version\":1,\"allocations\":[]}",
		"{\"version\":1,\"generation\":-1,\"allocations\":[]}",
		"{\"version\":1,\"generation\":1,\"allocations\":{}}",
		"{\"version\":1,\"generation\":1,\"allocations\":[1]}",
		"{\"version\":1,\"generation\":1,\"allocations\":[],\"version\":1}",
		/* fields */
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":0,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a b\",\"pid\":1,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\\u0001\",\"pid\":1,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\\u0000b\",\"pid\":1,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[\"p:write\"],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[\"/p/../q:write\"],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[\"/p:rw\"],\"generation\":1}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":6}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":1,\"socket\":\"/s\\n\"}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":1,\"registered\":\"yesterday\"}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":[{\"name\":\"a\",\"pid\":1,"
		"\"scope_allow\":[\"/p:write\"],\"generation\":1,\"delegated_from\":\"a\"}]}",
		/* duplicates and cycles */
		"{\"version\":1,\"generation\":5,\"allocations\":["
		"{\"name\":\"a\",\"pid\":1,\"scope_allow\":[\"/p:write\"],\"generation\":1},"
		"{\"name\":\"a\",\"pid\":2,\"scope_allow\":[\"/q:write\"],\"generation\":2}]}",
		"{\"version\":1,\"generation\":5,\"allocations\":["
		"{\"name\":\"a\",\"pid\":1,\"scope_allow\":[\"/p:write\"],\"generation\":1,"
		"\"delegated_from\":\"b\"},"
		"{\"name\":\"b\",\"pid\":2,\"scope_allow\":[\"/q:write\"],\"generation\":2,"
		"\"delegated_from\":\"a\"}]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char why[256] = "";
		cr_assert_eq(parse(bad[i], strlen(bad[i]), why, sizeof why), HF_EUNREADABLE,
			     "input %zu must be refused: %s", i, bad[i]);
		cr_assert_neq(why[0], '\0', "input %zu: a refusal says why", i);
	}
}

Test(parse, random_mutations_never_crash)
{
	/* xorshift: deterministic, so a failure reproduces */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t vlen = strlen(valid);
	char *buf = malloc(vlen + 64);
	int accepted = 0, refused = 0;
	static const char tokens[] = "{}[]\":,\\0123456789-.:/ \x01\xff\xc3truefalsenul";
	for (int round = 0; round < 20000; round++) {
		memcpy(buf, valid, vlen);
		size_t len = vlen;
		int edits = 1 + (int)(x % 4);
		for (int e = 0; e < edits; e++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			size_t pos = (size_t)(x % len);
			char c = tokens[(x >> 32) % (sizeof tokens - 1)];
			switch ((x >> 48) % 3) {
			case 0: /* replace */
				buf[pos] = c;
				break;
			case 1: /* delete */
				memmove(buf + pos, buf + pos + 1, len - pos - 1);
				len--;
				break;
			case 2: /* insert */
				memmove(buf + pos + 1, buf + pos, len - pos);
				buf[pos] = c;
				len++;
				break;
			}
		}
		char why[256] = "";
		int rc = parse(buf, len, why, sizeof why);
		cr_assert(rc == 0 || rc == HF_EUNREADABLE, "round %d: rc %d", round, rc);
		if (rc == 0)
			accepted++;
		else {
			refused++;
			cr_assert_neq(why[0], '\0', "round %d: a refusal says why", round);
		}
	}
	free(buf);
	cr_assert_gt(refused, 10000, "most mutations break the registry");
	cr_assert_gt(accepted, 0, "some mutations (white space, digits) keep it valid");
}

Test(parse, random_specs_never_crash)
{
	uint64_t x = 12345;
	static const char alphabet[] = "/.:abwritecusvd\x01\xff";
	for (int round = 0; round < 20000; round++) {
		char s[40];
		size_t len = 1 + (size_t)(x % 30);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			s[i] = alphabet[x % (sizeof alphabet - 1)];
		}
		s[len] = '\0';
		struct hf_spec sp;
		int rc = hf_spec_parse_canonical(s, len, &sp);
		if (rc == 0) {
			unsigned d;
			cr_assert(hf_path_normal(sp.path, sp.len, &d), "'%s': accepted path is normal",
				  s);
			cr_assert_eq(d, sp.depth);
		} else {
			cr_assert_eq(rc, -EINVAL);
		}
	}
}
