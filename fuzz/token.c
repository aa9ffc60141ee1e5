/* Token and name forms: --token as `lock acquire` printed it
 * (cli_token_form, src/cli/common.c) and what hf_lock_adopt accepts of it;
 * lanes and owners (session), pod names ($HOLDFAST_POD, --from, NAME).
 * Properties: an adopted token is 32 lowercase hex digits at the start of
 * the argument, followed by nothing but white space and one fence number;
 * an accepted pod name obeys its rule. */
#include "fuzz.h"

#include "cli.h"
#include "holdfast.h"
#include "spec.h"
#include "text.h"

#include <stdbool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *s = fuzz_str(data, size);
	char buf[64];
	uint64_t fence;
	const char *t = cli_token_form(s, buf, sizeof buf, &fence);
	FUZZ_CHECK(t == s || t == buf);
	FUZZ_CHECK(t == buf || fence == 0); /* a fence only with the token's form */
	if (t == buf)
		FUZZ_CHECK(!strncmp(s, buf, strlen(buf)));
	hf_lock *l;
	if (hf_lock_new("/nonexistent/fuzz.lock", &l) < 0)
		abort();
	if (hf_lock_adopt(l, t) == 0) {
		FUZZ_CHECK(strlen(t) == 32 && strspn(t, "0123456789abcdef") == 32);
		const char *rest = s + 32;
		rest += strspn(rest, " \t\n");
		size_t d = strspn(rest, "0123456789");
		FUZZ_CHECK(!*rest || (d > 0 && (!rest[d] || !strcmp(rest + d, "\n"))));
		FUZZ_CHECK(!strcmp(hf_lock_token(l), t));
	}
	hf_lock_free(l); /* an adopted token is not released by free: no I/O */
	if (hf_pod_name_ok(s)) {
		size_t n = strlen(s);
		FUZZ_CHECK(n >= 1 && n <= HF_POD_NAME_MAX && s[0] != '-');
		FUZZ_CHECK(!strpbrk(s, " \t\n\r\"'\\/") && hf_text_ok(s, HF_POD_NAME_MAX));
	}
	free(s);
	return 0;
}
