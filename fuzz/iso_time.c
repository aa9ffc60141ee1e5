/* ISO-8601 times (hf_time_parse, src/base/text.c): "started",
 * "acquired", "registered", and the legacy session lock. Properties
 * (TX1, TX4): an accepted time is a date of the calendar in years
 * 0000-9999, and the time formatted back parses to the same millisecond. */
#include "fuzz.h"

#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256)
		return 0;
	char *s = fuzz_str(data, size);
	int64_t ms, back;
	if (hf_time_parse(s, &ms) == 0) {
		char t[HF_TIME_MAX];
		hf_time_format(ms, t, sizeof t);
		FUZZ_CHECK(strlen(t) >= 20 && t[4] == '-' && t[strlen(t) - 1] == 'Z');
		FUZZ_CHECK(hf_time_parse(t, &back) == 0 && back == ms);
		/* the day of the month as written is a day of that month */
		int y = atoi(s + strspn(s, " \t\r\n")), m, d;
		const char *p = s + strspn(s, " \t\r\n");
		m = (p[5] - '0') * 10 + (p[6] - '0');
		d = (p[8] - '0') * 10 + (p[9] - '0');
		static const int dim[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
		bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
		FUZZ_CHECK(m >= 1 && m <= 12 && d >= 1 && d <= (m == 2 && !leap ? 28 : dim[m - 1]));
	}
	free(s);
	return 0;
}
