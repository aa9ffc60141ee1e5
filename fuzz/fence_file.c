/* The fence counter (L.holdfast/fence) and its reservation
 * (fence.reserve), fence.c. Properties: an accepted line is ordered
 * (entered <= fence <= reserve <= 2^63-1) and formats to a line that parses
 * back to the same; an accepted reservation is printed back as digits. */
#include "fuzz.h"

#include "fence.h"
#include "holdfast.h"

#include <errno.h>

#include <inttypes.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	/* fence_read reads at most HF_FENCE_LINE_MAX + 1 bytes */
	size_t n = size > HF_FENCE_LINE_MAX + 1 ? HF_FENCE_LINE_MAX + 1 : size;
	struct hf_fence_line fl, fl2;
	int rc = hf_fence_parse(buf, n, &fl);
	FUZZ_CHECK(rc == 0 || rc == -ENODATA || rc == HF_EUNREADABLE);
	FUZZ_CHECK(rc != -ENODATA || n == 0);
	if (rc == 0) {
		FUZZ_CHECK(fl.entered <= fl.fence && fl.fence <= fl.reserve &&
			   fl.reserve <= (uint64_t)INT64_MAX && fl.boot[0]);
		char line[HF_FENCE_LINE_MAX];
		size_t len = hf_fence_format(line, &fl);
		FUZZ_CHECK(len <= sizeof line && line[len - 1] == '\n');
		FUZZ_CHECK(hf_fence_parse(line, len, &fl2) == 0);
		FUZZ_CHECK(fl2.fence == fl.fence && fl2.reserve == fl.reserve &&
			   fl2.entered == fl.entered && !strcmp(fl2.boot, fl.boot));
	}
	uint64_t v;
	if (size < 66 && hf_fence_reserve_parse(buf, size, &v) == 0) {
		char back[32];
		int k = snprintf(back, sizeof back, "%" PRIu64, v);
		FUZZ_CHECK(v <= (uint64_t)INT64_MAX);
		FUZZ_CHECK(hf_fence_reserve_parse(back, (size_t)k, &v) == 0);
	}
	return 0;
}
