/*
 * errors.c - names for the library's return codes (holdfast.h).
 */
#include "holdfast.h"

#include <string.h>

const char *hf_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "success";
	case HF_EHELD:
		return "held by another";
	case HF_EUNREADABLE:
		return "unreadable or corrupt";
	case HF_ENOTHELD:
		return "not held";
	case HF_ENOTYOURS:
		return "held by another lane or owner";
	case HF_ETIMEDOUT:
		return "timed out";
	case HF_ECONFLICT:
		return "conflicts with another holder";
	case HF_EUNSAFE:
		return "refused for safety";
	case HF_EBARRIER:
		return "a claim beside the lock denies entry";
	case HF_ELOST:
		return "lost: reaped or released by another";
	}
	if (rc < 0 && rc > -4096)
		return strerror(-rc);
	return "unknown error";
}

