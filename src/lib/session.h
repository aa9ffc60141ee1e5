/*
 * session.h - session lock internals shared with the CLI and the tests.
 * Not part of the public API; the protocol is in session.c's header.
 */
#ifndef HF_SESSION_H
#define HF_SESSION_H

#include "holdfast.h"

#include <stddef.h>
#include <stdint.h>

/* A lock file larger than this is not a lock (a record is well under 1 KiB). */
#define HF_SESSION_FILE_MAX 4096

/* The record as one line of JSON plus "\n" (fields in contract order;
 * "broke" only when has_broke). The length, or -ENAMETOOLONG. */
int hf_session_format(const struct hf_session_record *r, char *buf, size_t n);

/* Parse a lock file's bytes: a JSON record, or a bare ISO-8601 timestamp
 * (legacy). 0 and *ret; HF_EUNREADABLE with a reason in why (n bytes). */
int hf_session_parse(const char *buf, size_t len, struct hf_session_record *ret, char *why,
		     size_t n);

/* A record's age at wall-clock time now_ms (SL2): boot-relative when the
 * record carries boot_id, timens and boottime_ms of this kernel and time
 * namespace (never negative then), else now - started by the wall clock
 * (negative when dated in the future). */
int64_t hf_session_age_ms(const struct hf_session_record *r, int64_t now_ms);

/* HF_SESSION_HELD, _STALE or _SKEW for a parsed record at time now_ms, and
 * its age (hf_session_age_ms; _SKEW when negative). */
int hf_session_judge(const struct hf_session_record *r, int64_t now_ms, int64_t stale_ms,
		     int64_t *ret_age_ms);

/* Is name an aside of the lock file lock_name ("<lock_name>.aside-<16 hex>")? */
int hf_session_is_aside(const char *lock_name, const char *name);

/* The seed's OLD guard, kept only to be measured against (`session race
 * --naive`, the selftest's differential): read the file; if it holds a live
 * timestamp, HF_EHELD; else write the current ISO-8601 time over it with
 * O_TRUNC and return 0. Read-then-write: NOT a lock (hazard SH7). */
int hf_session_naive_take(const char *path, int64_t stale_ms);

#endif
