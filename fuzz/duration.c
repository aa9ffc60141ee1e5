/* Durations (cli_parse_duration, src/cli/common.c): --stale, --max-hold,
 * -w. Properties: an accepted duration lies in [0, 100 years]; it is
 * decimal (no sign, hex or exponent); a bare number is seconds; the value
 * written back in milliseconds parses to itself. */
#include "fuzz.h"

#include "cli.h"

#include <inttypes.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *s = fuzz_str(data, size);
	int64_t ms = -1, back = -1;
	int rc = cli_parse_duration(s, &ms);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	if (rc == 0) {
		FUZZ_CHECK(ms >= 0 && ms <= CLI_DURATION_MAX_MS);
		FUZZ_CHECK(s[0] >= '0' && s[0] <= '9' && !strpbrk(s, "xX+-eE \t"));
		char t[40];
		snprintf(t, sizeof t, "%" PRId64 "ms", ms);
		FUZZ_CHECK(cli_parse_duration(t, &back) == 0 && back == ms);
		if (strspn(s, "0123456789") == strlen(s) && strlen(s) < 12)
			FUZZ_CHECK(ms == strtoll(s, NULL, 10) * 1000);
	}
	free(s);
	return 0;
}
