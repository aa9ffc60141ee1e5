/* The scope registry's table file (registry_json.c). Property (RJ2): an
 * accepted table formats to bytes that parse back to a table formatting
 * to the same bytes. */
#include "fuzz.h"

#include "registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	struct hf_scopereg_table t, u;
	char reason[256];
	int rc = hf_regtable_parse((const char *)data, size, &t, reason, sizeof reason);
	if (rc < 0) {
		FUZZ_CHECK(rc != HF_EUNREADABLE || reason[0]); /* a refusal says why */
		return 0;
	}
	char *a = NULL, *b = NULL;
	size_t na, nb;
	FUZZ_CHECK(hf_regtable_format(&t, &a, &na) == 0);
	rc = hf_regtable_parse(a, na, &u, reason, sizeof reason);
	if (rc < 0)
		fprintf(stderr, "re-parse refused: %s\n", reason);
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(u.n == t.n && u.generation == t.generation);
	FUZZ_CHECK(hf_regtable_format(&u, &b, &nb) == 0);
	FUZZ_CHECK(na == nb && !memcmp(a, b, na));
	free(a);
	free(b);
	hf_regtable_clear(&t);
	hf_regtable_clear(&u);
	return 0;
}
