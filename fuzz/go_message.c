/* The go message (supervise.c, SV4): what `holdfast run` / `edit` send the
 * blocked child on its SOCK_SEQPACKET socket before it execs CMD.
 * Property: an accepted message is exactly what cli_go_format writes for
 * the entries the parse handed out. */
#include "fuzz.h"

#include "run.h"

#include <errno.h>

struct got {
	const char *kv[CLI_GO_MAX];
	size_t n;
};

static int collect(const char *kv, size_t klen, void *ctx)
{
	struct got *g = ctx;
	FUZZ_CHECK(klen > 0 && kv[klen] == '=');
	g->kv[g->n++] = kv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CLI_GO_MAX)
		return 0; /* a longer message arrives truncated (MSG_TRUNC): refused */
	const char *buf = (const char *)data;
	int plain = cli_go_parse(buf, size, NULL, NULL);
	static struct got g;
	g.n = 0;
	int rc = cli_go_parse(buf, size, collect, &g);
	FUZZ_CHECK(rc == plain);
	if (rc < 0) {
		FUZZ_CHECK(rc == -EINVAL && g.n == 0); /* all or nothing (SV1) */
		return 0;
	}
	char back[CLI_GO_MAX];
	int n = cli_go_format(back, sizeof back, g.kv, g.n);
	FUZZ_CHECK(n >= 0 && (size_t)n == size && !memcmp(back, buf, size));
	return 0;
}
