/*
 * lock.h - the lock kind above its backends: what an acquisition asks for
 * (struct hf_lock_opts), what a lock's holder looks like to any backend
 * (struct hf_lock_info, enum hf_lock_state), and the defaults. The file
 * system's directory lock (fs/dirlock.c) and etcd's (etcd/etcdlock.c) fill
 * the same structures; the handle (handle_lock.c) and the records (rec.c)
 * read them without knowing which backend did. Not part of the public API.
 */
#ifndef HF_LOCK_H
#define HF_LOCK_H

#include "holdfast.h"
#include "owner.h"

#include <errno.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hf_dirlock_kept; /* the file system's (fs/dirlock.h) */

#define HF_LOCK_STALE_MS_DEFAULT (60LL * 1000)
#define HF_LOCK_MAX_HOLD_MS_DEFAULT (10LL * 60 * 1000)

struct hf_lock_opts {
	const char *path;                 /* the lock directory                     */
	int64_t wait_ms;                  /* 0: try once; <0: forever; else deadline */
	int64_t stale_ms;                 /* 0: HF_LOCK_STALE_MS_DEFAULT            */
	int64_t max_hold_ms;              /* 0: HF_LOCK_MAX_HOLD_MS_DEFAULT         */
	pid_t pid;                        /* whose life holds the lock; 0: caller   */
	pid_t chain[HF_OWNER_CHAIN_MAX];  /* OW5: more processes whose life holds
					     it (a detached acquisition's callers) */
	size_t nchain;
	int64_t lease_ms;                 /* OW6: > 0 held by a lease of this
					     length, by no process; 0: by pid   */
	int has_cancel;                   /* 1: cancel_fd ends a wait when readable
					     (HF_ECANCELED); 0: no cancel fd      */
	int cancel_fd;
	int list_depth;                   /* hf_lock_list's HF_OPT_DEPTH            */
	int mode;                         /* enum hf_lock_mode (HF_OPT_MODE)        */
	int slots;                        /* HF_MODE_SLOTS's bound (HF_OPT_SLOTS)   */
	struct hf_dirlock_kept *kept;     /* non-NULL (all -1): on success the
					     directories stay open there, for
					     hf_dirlock_release_kept           */
};

enum hf_lock_state {
	HF_LOCK_FREE = 0,       /* no lock directory (claims may still deny entry) */
	HF_LOCK_HELD = 1,       /* a live owner                                    */
	HF_LOCK_DEAD = 2,       /* owner proven dead: the next acquirer reaps it   */
	HF_LOCK_LEAKED = 3,     /* live owner older than max(max-hold, stale)      */
	HF_LOCK_PARTIAL = 4,    /* no complete owner record; its maker lives and is
				   within the stale window                         */
	HF_LOCK_ABANDONED = 5,  /* no complete owner record, and its maker is gone
				   (its kernel lock is free) or past the window    */
	HF_LOCK_SKEW = 6,       /* dated in the future: counts as live, clock skew */
	HF_LOCK_EXPIRED = 7,    /* a lease (OW6) older than its length: reapable   */
};

struct hf_lock_info {
	struct hf_owner owner;            /* owner.time_ms: when acquired           */
	uint64_t fence;                   /* strictly increasing per lock           */
	int mode;                         /* enum hf_lock_mode, as recorded         */
	int slots;                        /* HF_MODE_SLOTS: the holder's bound      */
	int64_t age_ms;                   /* from the record; partial: from ctime   */
	int64_t max_hold_ms;              /* recorded by the holder; 0: none        */
	int64_t ttl_ms;                   /* etcd: the lease's, as recorded; 0: none */
	int partial;                      /* 1: no complete owner record            */
	int state;                        /* enum hf_lock_state                  */
	int in_claim;                     /* 1: the holder's directory sits in a
					     claim (a barrier), not at PATH        */
	int claims;                       /* claims beside the lock (status only)   */
	int live_fd;                      /* hf_dirlock_acquire: the descriptor of the
					     lock directory holding its kernel
					     lock (close-on-exec). Keep it open as
					     long as the owner lives - pass it to
					     the owner when that is another process
					     - and close it after hf_dirlock_release.
					     -1 everywhere else.                   */
	char reason[256];                 /* HF_EUNREADABLE: what cannot be read    */
};

/* Does a failed acquisition's outcome rc come with a holder worth naming
 * (someone holds it, or the reason why not)? */
static inline bool hf_lock_names_holder(int rc)
{
	return rc == HF_EHELD || rc == HF_ETIMEDOUT || rc == HF_ECANCELED || rc == HF_EBARRIER ||
	       rc == HF_EUNREADABLE || rc == HF_ENOTYOURS || rc == -EDEADLK;
}

/* The words for enum hf_lock_mode in records, JSON and the CLI:
 * "exclusive", "shared", "slots"; NULL for another value. */
static inline const char *hf_lock_mode_name(int mode)
{
	return mode == HF_MODE_EXCLUSIVE ? "exclusive"
	       : mode == HF_MODE_SHARED  ? "shared"
	       : mode == HF_MODE_SLOTS   ? "slots"
					 : NULL;
}

#endif
