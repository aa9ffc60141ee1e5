/*
 * rec.h - records (hf_rec) made from jansson objects (rec.c), and the
 * builders of each kind's records. Not part of the public API.
 */
#ifndef HF_REC_H
#define HF_REC_H

#include "holdfast.h"

#include <jansson.h>
#include <stdbool.h>

struct hf_lock_info;
struct hf_sessionlock_status;
struct hf_sessionlock_record;
struct hf_scopereg_holder;
struct hf_scopereg_alloc;

/* A record owning obj (stolen; NULL: -ENOMEM is the caller's to report,
 * and NULL is returned). */
hf_rec *hf_rec_take(json_t *obj);
/* r into *ret: 0, or -ENOMEM when r is NULL (a builder that ran out). */
int hf_rec_out(hf_rec *r, hf_rec **ret);
/* The object inside (borrowed). */
json_t *hf_rec_object(const hf_rec *r);
/* into with from's fields added (from freed; either may be NULL: the
 * other is returned). */
hf_rec *hf_rec_merge(hf_rec *into, hf_rec *from);
/* Replace *slot with r (freeing the old one). */
void hf_rec_put(hf_rec **slot, hf_rec *r);

/* A directory lock's state as a record: the owner's fields (file names),
 * "fence", "max_hold_ms", "state", "age_ms", "claims", "in_claim",
 * "partial", "reason" and "path" (path may be NULL). */
hf_rec *hf_rec_from_dirlock(const struct hf_lock_info *i, const char *path);
/* A session record (the file's fields) and a session's state ("state",
 * "age_ms", "mtime_ms", "aside", "reason", "path"). */
hf_rec *hf_rec_from_session(const struct hf_sessionlock_record *r, const char *path);
hf_rec *hf_rec_from_session_status(const struct hf_sessionlock_status *st, const char *path);
/* What a failed scope operation (rc) says: the holder's fields ("name",
 * "pid", "host", "generation", "scope", "comm", "foreign_pidns", "age_ms",
 * "registered"), "request", "request_index", "spec" (given: the caller's
 * spec at request_index, may be NULL), "others", "fs", "request_fs",
 * "outside" (HF_ENOTYOURS: a path of the spec outside the parent's),
 * "registry", "reason" - each only when it is known -, and "refused":
 * hf_error_name(rc). */
hf_rec *hf_rec_from_scope_holder(const struct hf_scopereg_holder *h, int rc, const char *given);
/* An allocation of the registry with the file's field names, and "live",
 * "depth", "age_ms" (when registered is known); "returned_to" when reaped. */
hf_rec *hf_rec_from_scope_alloc(const struct hf_scopereg_alloc *a, int64_t age_ms, bool reaped);
/* A record of one reason: {"reason": why, "path": path} (path may be NULL). */
hf_rec *hf_rec_reason(const char *why, const char *path);

#endif
