/* The session lock's record (session.c): JSON and the legacy timestamp.
 * Property: an accepted JSON record formats to a record that parses back
 * and formats to the same bytes (parse -> format -> parse is the identity). */
#include "fuzz.h"

#include "session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > HF_SESSION_FILE_MAX)
		return 0; /* look() refuses a longer file before parsing */
	struct hf_sessionlock_record r, r2;
	char why[160];
	if (hf_session_parse((const char *)data, size, &r, why, sizeof why) < 0) {
		FUZZ_CHECK(why[0]); /* a refusal says why */
		return 0;
	}
	if (r.legacy) {
		FUZZ_CHECK(!r.lane[0]);
		return 0;
	}
	FUZZ_CHECK(r.lane[0] && r.pid >= 0 && r.boot_ms >= 0);
	char a[HF_SESSION_FILE_MAX + 2], b[HF_SESSION_FILE_MAX + 2];
	int na = hf_session_format(&r, a, sizeof a);
	FUZZ_CHECK(na > 0);
	FUZZ_CHECK(hf_session_parse(a, (size_t)na, &r2, why, sizeof why) == 0);
	FUZZ_CHECK(!r2.legacy && r2.started_ms == r.started_ms && !strcmp(r2.lane, r.lane) &&
		   !strcmp(r2.owner, r.owner) && r2.pid == r.pid);
	int nb = hf_session_format(&r2, b, sizeof b);
	FUZZ_CHECK(nb == na && !memcmp(a, b, (size_t)na));
	return 0;
}
