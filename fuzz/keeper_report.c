/* The keeper's report (src/cli/keeper.c, K4): the one message a keeper
 * sends its caller on a pipe - its pid, or 0 when the owner ended first.
 * Property: a pid comes back only from exactly sizeof(pid_t) bytes holding
 * a positive pid; everything else is -ECHILD or -ESRCH. */
#include "fuzz.h"

#include "cli.h"

#include <sys/types.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int rc = cli_keep_report_parse(data, size);
	pid_t v = 0;
	if (size == sizeof v)
		memcpy(&v, data, sizeof v);
	if (rc > 0)
		FUZZ_CHECK(size == sizeof v && v == rc);
	else if (rc == -ESRCH)
		FUZZ_CHECK(size == sizeof v && v == 0);
	else
		FUZZ_CHECK(rc == -ECHILD && (size != sizeof v || v < 0));
	return 0;
}
