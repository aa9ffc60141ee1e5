/* The directory lock's owner record (dirlock.c, owner.c). Properties: an
 * accepted record formats to one that parses back to the same fields and
 * bytes; a token read without a parse (identity checks) is the token the
 * parse found. */
#include "fuzz.h"

#include "dirlock.h"

#include <stdbool.h>

#define BUF (HF_OWNER_JSON_MAX + 256)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0; /* read_small refuses a longer record before parsing */
	const char *buf = (const char *)data;
	struct hf_lock_info i, j;
	char tok[HF_TOKEN_LEN + 1];
	bool peeked = hf_dirlock_record_token(buf, size, tok);
	if (hf_dirlock_record_parse(buf, size, &i) < 0)
		return 0;
	FUZZ_CHECK(strlen(i.owner.token) == HF_TOKEN_LEN &&
		   strspn(i.owner.token, "0123456789abcdef") == HF_TOKEN_LEN);
	FUZZ_CHECK(i.owner.pid > 0 && i.max_hold_ms >= 0 && i.owner.boot_ms >= 0);
	if (peeked)
		FUZZ_CHECK(!strcmp(tok, i.owner.token)); /* peek and parse agree */
	char a[BUF], b[BUF];
	size_t na = hf_dirlock_record_format(a, &i.owner, i.fence, i.max_hold_ms, i.mode, i.slots);
	FUZZ_CHECK(na < sizeof a);
	FUZZ_CHECK(hf_dirlock_record_parse(a, na, &j) == 0);
	FUZZ_CHECK(hf_dirlock_record_token(a, na, tok) && !strcmp(tok, i.owner.token));
	FUZZ_CHECK(j.fence == i.fence && j.max_hold_ms == i.max_hold_ms &&
		   j.owner.pid == i.owner.pid && j.owner.pid_start == i.owner.pid_start &&
		   j.owner.time_ms == i.owner.time_ms && j.owner.pidns == i.owner.pidns &&
		   j.owner.timens == i.owner.timens && j.owner.boot_ms == i.owner.boot_ms &&
		   !strcmp(j.owner.boot_id, i.owner.boot_id) && !strcmp(j.owner.host, i.owner.host) &&
		   !strcmp(j.owner.comm, i.owner.comm));
	size_t nb = hf_dirlock_record_format(b, &j.owner, j.fence, j.max_hold_ms, j.mode, j.slots);
	FUZZ_CHECK(nb == na && !memcmp(a, b, na));
	return 0;
}
