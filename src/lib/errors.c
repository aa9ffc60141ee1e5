/*
 * errors.c - what the library's return codes mean and are called, and its
 * version (holdfast.h).
 */
#include "holdfast.h"

#include <errno.h>
#include <string.h>

const char *hf_version(void)
{
	return HF_VERSION_STRING;
}

static const struct {
	int rc;
	const char *name, *text;
} outcomes[] = {
	{ HF_EHELD, "held", "held by another" },
	{ HF_EUNREADABLE, "unreadable", "unreadable or corrupt" },
	{ HF_ENOTHELD, "not_held", "not held" },
	{ HF_ENOTYOURS, "not_yours", "held by another lane or owner" },
	{ HF_ETIMEDOUT, "timed_out", "timed out" },
	{ HF_ECONFLICT, "conflict", "conflicts with another holder" },
	{ HF_EUNSAFE, "unsafe", "refused for safety" },
	{ HF_EBARRIER, "barrier", "a claim beside the lock denies entry" },
	{ HF_ELOST, "lost", "lost: reaped or released by another" },
	{ HF_ECANCELED, "canceled", "the wait was cancelled" },
};

/* The outcome rc names, or -1 when it is none of them. */
static int outcome(int rc)
{
	for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++)
		if (outcomes[i].rc == rc)
			return (int)i;
	return -1;
}

const char *hf_strerror(int rc)
{
	if (rc == 0)
		return "success";
	int i = outcome(rc);
	if (i >= 0)
		return outcomes[i].text;
	if (rc < 0 && rc > -4096)
		return strerror(-rc);
	return "unknown error";
}

const char *hf_error_name(int rc)
{
	if (rc == 0)
		return "ok";
	int i = outcome(rc);
	if (i >= 0)
		return outcomes[i].name;
	if (rc < 0 && rc > -4096) {
		const char *n = strerrorname_np(-rc);
		if (n)
			return n;
	}
	return "unknown";
}
