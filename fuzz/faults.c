/* The fault engine's rules, HOLDFAST_FAULTS, and HOLDFAST_PAUSE_FDS
 * (src/base/faults.c). Properties: a rule set is armed or refused with a
 * reason; accepted descriptors are non-negative. Whatever was armed is
 * disarmed before the next system call. */
#include "fuzz.h"

#include "faults.h"
#include "sys.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 2048)
		return 0;
	char *s = fuzz_str(data, size);
	char why[256] = "";
	int rc = hf_fault_inject(s, why, sizeof why);
	hf_fault_inject(NULL, NULL, 0); /* nothing fires here: no call in between */
	FUZZ_CHECK(rc == 0 || (rc == -EINVAL && why[0]));
	FUZZ_CHECK(hf_sys_hook == NULL && hf_sys_wall_skew_ms == 0);
	int a = -1, b = -1;
	if (hf_fault_parse_fds(s, &a, &b) == 0) {
		FUZZ_CHECK(a >= 0 && b >= 0);
		FUZZ_CHECK(s[0] >= '0' && s[0] <= '9' && !strpbrk(s, " +-\t\n"));
	}
	free(s);
	return 0;
}
