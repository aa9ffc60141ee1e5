/*
 * handle.h - what the library's own files need from the public handles
 * (a lock handle's acquisition and path for edit.c, a scope handle's
 * registry table for handle_registry.c) and what the handles share (the
 * options' ranges). Not part of the public API.
 */
#ifndef HF_HANDLE_H
#define HF_HANDLE_H

#include "holdfast.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct hf_lock_info;

/* The one range rule of every option (holdfast.h, enum hf_opt), for each
 * kind's setter on handle h: 0 when opt may take v, -EINVAL otherwise or
 * when h is NULL (whether the kind has opt at all is the setter's to say). */
static inline int hf_opt_check(const void *h, int opt, int64_t v)
{
	if (!h)
		return -EINVAL;
	switch (opt) {
	case HF_OPT_WAIT_MS:
		return 0; /* <0 forever, 0 once, >0 a bound */
	case HF_OPT_STALE_MS:
	case HF_OPT_MAX_HOLD_MS:
	case HF_OPT_LOCK_WAIT_MS:
	case HF_OPT_GENERATION:
		return v < 0 ? -EINVAL : 0;
	case HF_OPT_PID:
	case HF_OPT_CHAIN_PID:
	case HF_OPT_THREAD:
		return v < 0 || v > INT_MAX ? -EINVAL : 0;
	case HF_OPT_TTL_MS:
		return v != 0 && (v < 1000 || v > 86400LL * 1000) ? -EINVAL : 0;
	case HF_OPT_TIMEOUT_MS:
		return v != 0 && (v < 1 || v > 3600LL * 1000) ? -EINVAL : 0;
	case HF_OPT_LEASE_MS:
		return v != 0 && (v < 1000 || v > 365LL * 86400 * 1000) ? -EINVAL : 0;
	case HF_OPT_CANCEL_FD:
		return v < -1 || v > INT_MAX ? -EINVAL : 0;
	case HF_OPT_DEPTH:
		return v < 0 || v > HF_LIST_DEPTH_MAX ? -EINVAL : 0;
	case HF_OPT_MODE:
		return v != HF_MODE_EXCLUSIVE && v != HF_MODE_SHARED && v != HF_MODE_SLOTS ? -EINVAL
											  : 0;
	case HF_OPT_SLOTS:
		return v < 1 || v > HF_SLOTS_MAX ? -EINVAL : 0;
	}
	return -EINVAL;
}

/* The options every waiting kind has, HF_OPT_WAIT_MS and HF_OPT_CANCEL_FD
 * (checked by hf_opt_check first): 1 when opt is one of them (stored),
 * 0 when it is not. */
static inline int hf_opt_wait(int opt, int64_t v, int64_t *wait_ms, int *cancel_fd)
{
	if (opt == HF_OPT_WAIT_MS)
		*wait_ms = v;
	else if (opt == HF_OPT_CANCEL_FD)
		*cancel_fd = (int)v;
	else
		return 0;
	return 1;
}

/* The acquisition l holds (acquired, not adopted), or NULL. */
const struct hf_lock_info *hf_lock_held(const hf_lock *l);
/* l's lock directory path. */
const char *hf_lock_path(const hf_lock *l);
/* The registry s names (HF_OPT_REGISTRY's file, or HF_OPT_BACKEND's etcd,
 * HC5): read it (reap false) or reap it, as hf_scopereg_read/_reap. */
struct hf_scopereg_table;
struct hf_scopereg_holder;
int hf_scope_table(hf_scope *s, bool reap, struct hf_scopereg_table **ret,
		   struct hf_scopereg_holder *h);

#endif
