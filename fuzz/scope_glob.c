/* Glob specs (spec_glob.c): the syntax check and the exact decisions. The
 * input is two stored specs, one a line. Properties: hf_glob_check never
 * crashes and a refusal's offset lies in the path; a glob spec that parses
 * is its own format; every spec overlaps and covers itself (SC9: its set is
 * not empty); overlap is symmetric; covers implies overlap; a path named
 * outside (covers refused) is the inner's, and the outer does not hold it. */
#include "fuzz.h"

#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 512)
		return 0; /* the automata are polynomial, but keep runs short */
	const char *s = (const char *)data;
	size_t pos;
	const char *why;
	bool glob;
	if (hf_glob_check(s, size, &glob, &pos, &why) < 0)
		FUZZ_CHECK(pos < size && why && why[0]);
	const char *nl = memchr(s, '\n', size);
	size_t la = nl ? (size_t)(nl - s) : size;
	struct hf_spec a, b;
	if (hf_spec_parse_canonical(s, la, &a) < 0)
		return 0;
	char back[1024];
	int n = hf_spec_format(&a, back, sizeof back);
	FUZZ_CHECK(n >= 0 && (size_t)n == la && !memcmp(back, s, la));
	FUZZ_CHECK(hf_spec_overlap(&a, &a) && hf_spec_covers(&a, &a));
	if (!nl || hf_spec_parse_canonical(nl + 1, size - la - 1, &b) < 0)
		return 0;
	bool ab = hf_spec_overlap(&a, &b);
	FUZZ_CHECK(ab == hf_spec_overlap(&b, &a));
	char out[PATH_MAX];
	if (hf_spec_covers_why(&a, &b, out, sizeof out)) {
		FUZZ_CHECK(ab);
	} else if (out[0] == '/') {
		unsigned d;
		if (hf_path_normal(out, strlen(out), &d)) {
			FUZZ_CHECK(hf_spec_contains(&b, out, strlen(out), d));
			FUZZ_CHECK(!hf_spec_contains(&a, out, strlen(out), d));
		}
	}
	return 0;
}
