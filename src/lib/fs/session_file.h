/*
 * session_file.h - the session lock on the file system (session_file.c):
 * take, release, renew and status of a lock file with its asides, and the
 * lock file's path. The record and the states both backends share are in
 * session.h. Not part of the public API; the protocol, its invariants (SL)
 * and hazards (SH) are in session_file.c's header.
 */
#ifndef HF_SESSION_FILE_H
#define HF_SESSION_FILE_H

#include "session.h"

#include <stddef.h>
#include <stdint.h>

#define HF_SESSION_ASIDE_INFIX ".aside-"  /* <name>.aside-<16 hex>             */

/* Take the lock for o->lane (session_file.c, ST1-ST5). 0 and *ret_taken (may be
 * NULL); HF_EHELD (a live lock at the name or in an aside: *reterr_holder),
 * HF_EUNREADABLE (the lock or an aside cannot be read: *reterr_holder with
 * the reason), -EINVAL (lane or owner not text), -EAGAIN (the lock changed
 * hands ROUNDS_MAX times meanwhile), other -errno. */
int hf_sessionlock_take(const struct hf_sessionlock_opts *o, struct hf_sessionlock_record *ret_taken,
		    struct hf_sessionlock_status *reterr_holder);
/* Release o->lane's lock (SR1-SR3). 0; HF_ENOTHELD (no record at the name
 * or in an aside); HF_ENOTYOURS (another lane's or owner's: *reterr_holder);
 * HF_EUNREADABLE (the lock cannot be read); -EAGAIN (SH10); -EINVAL; other
 * -errno. */
int hf_sessionlock_release(const struct hf_sessionlock_opts *o, struct hf_sessionlock_status *reterr_holder);
/* Renew o->lane's lock (SN1-SN4): its record replaced by one of the same
 * lane and owner, "started" now. 0 and *ret (may be NULL); HF_ENOTHELD
 * (nothing at the name); HF_ENOTYOURS (another lane's or owner's:
 * *reterr_holder); HF_EUNREADABLE; HF_ELOST (broken or released while it
 * was renewed: *reterr_holder names who holds it now, if anyone); -EAGAIN;
 * -EINVAL; other -errno. */
int hf_sessionlock_renew(const struct hf_sessionlock_opts *o, struct hf_sessionlock_record *ret,
			 struct hf_sessionlock_status *reterr_holder);
/* 0 and *ret filled (any state, UNREADABLE included); -errno when the
 * directory cannot be read. path NULL: the default path; stale_ms <= 0:
 * the default window. */
int hf_sessionlock_status(const char *path, int64_t stale_ms, struct hf_sessionlock_status *ret);


/* *path, or when it is NULL the default path (hf_session_default_path) into
 * def (n bytes) and *path = def. 0 or -errno. */
int hf_session_resolve_path(const char **path, char *def, size_t n);

/* Is name an aside of the lock file lock_name ("<lock_name>.aside-<16 hex>")? */
int hf_session_is_aside(const char *lock_name, const char *name);

#endif
