/* Decimal numbers (hf_parse_u64, src/base/text.c, TX5): --pid,
 * --generation, -E, --procs, fault counts, the fence reservation.
 * Properties: an accepted number is digits only, at most its maximum, and
 * printed back (without leading zeros) it is the input. */
#include "fuzz.h"

#include "text.h"

#include <errno.h>
#include <inttypes.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 256)
		return 0;
	static const uint64_t maxes[] = { 255, 0x7fffffff, INT64_MAX, UINT64_MAX };
	uint64_t max = maxes[data[0] & 3];
	char *s = fuzz_str(data + 1, size - 1);
	uint64_t v;
	int rc = hf_parse_u64(s, max, &v);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	if (rc == 0) {
		FUZZ_CHECK(v <= max && s[0] && strspn(s, "0123456789") == strlen(s));
		char back[32];
		snprintf(back, sizeof back, "%" PRIu64, v);
		const char *digits = s + strspn(s, "0");
		FUZZ_CHECK(!strcmp(back, *digits ? digits : "0"));
	}
	if (rc == -ERANGE)
		FUZZ_CHECK(s[0] && strspn(s, "0123456789") == strlen(s));
	free(s);
	return 0;
}
