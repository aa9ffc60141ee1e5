/*
 * dirlock.h - the directory lock's protocol functions (dirlock.c), which
 * the public handle (handle_lock.c), the records (rec.c) and the tests
 * call. Not part of the public API; the protocol, its invariants and its
 * hazards are in dirlock.c. The fence counter is fence.h's (included).
 */
#ifndef HF_DIRLOCK_H
#define HF_DIRLOCK_H

#include "fence.h"
#include "lock.h"
#include "owner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A lock's directories (P, P/L.holdfast) and its fence counter, kept open
 * by a holder from its acquisition to its release (hf_lock handles): the
 * release then opens nothing before it moves L away (DL17), and the
 * acquisition closes nothing after it entered. -1: none kept. */
struct hf_dirlock_kept {
	int pfd, sfd, ffd;
	int nlink_counts;                 /* DL8, as lk_open found it             */
	int qfd, efd;                     /* the queue (DQ4): a holder that waited
					     in it rings through its own reader  */
};
#define HF_DIRLOCK_KEPT_NONE ((struct hf_dirlock_kept){ -1, -1, -1, 0, -1, -1 })

/* Acquire PATH for o->pid. 0 and *ret (the new owner, its fence, live_fd).
 * Failure:
 * HF_EHELD (try once: held by another; *reterr_holder), HF_EBARRIER (a
 * claim beside the lock denies entry; its owner in *reterr_holder when
 * readable), HF_EUNREADABLE (an unreadable owner record within the stale
 * window, or the fence counter's reservation lost: reason says which),
 * HF_ETIMEDOUT (the wait reached its deadline; the last holder seen),
 * HF_ECANCELED (has_cancel and cancel_fd became readable while waiting),
 * HF_EUNSAFE (state directory of another user or writable by others),
 * -EINVAL (a name ending in ".holdfast", or no name: ".", "/"), -ESRCH (no
 * such pid), -EBUSY (the fence counter stayed locked for 5 s: a process
 * stopped in the middle of an acquisition), -EOVERFLOW (fences exhausted),
 * -EOPNOTSUPP (no flock on this file system), other -errno. Waiting wakes
 * on the lock's removal (inotify on PATH's parent) with a jittered backoff
 * fallback; never past the deadline. */
int hf_dirlock_acquire(const struct hf_lock_opts *o, struct hf_lock_info *ret,
		    struct hf_lock_info *reterr_holder);
/* Release the lock acquired with token: 0; HF_ENOTHELD when no record with
 * this token exists (nothing to release); HF_ENOTYOURS when another token
 * holds PATH (*reterr_holder). Finds the record at PATH or in a claim. Any
 * process may release with the token; the holder closes its live_fd after. */
int hf_dirlock_release(const char *path, const char *token, struct hf_lock_info *reterr_holder);
/* Renew the lock acquired with token (DR, dirlock.c): the same owner, token
 * and fence, its window (acquired, boottime_ms) restarted now and its
 * max-hold max_hold_ms (0: the recorded one; HF_MAX_HOLD_NONE: never leaked
 * while its owner lives). 0 and *ret (may be NULL); HF_ENOTHELD when nothing
 * is at PATH; HF_ENOTYOURS when PATH holds another token's record or none
 * complete (*reterr_holder); HF_ELOST when the owner is dead, or a reaper or
 * a release moved or removed the directory while it was renewed (the
 * renewed record is taken back: nothing of ours is left). */
int hf_dirlock_renew(const char *path, const char *token, int64_t max_hold_ms,
		     struct hf_lock_info *ret, struct hf_lock_info *reterr_holder);
/* The same by the holder itself: held is what hf_dirlock_acquire returned
 * (its token and live_fd, still open), kept its directories (o->kept; may
 * hold -1: opened here). When PATH is held's own directory - the inode its
 * live_fd pins - it is moved away at once, without reading PATH's record
 * first (DL17); else as hf_dirlock_release. Closes kept's descriptors (all
 * -1 after), never live_fd. */
int hf_dirlock_release_kept(const char *path, const struct hf_lock_info *held,
			    struct hf_dirlock_kept *kept, struct hf_lock_info *reterr_holder);
/* Close what kept holds (a holder that detaches or is freed). */
void hf_dirlock_kept_close(struct hf_dirlock_kept *kept);
/* Commit under the lock: hold off every later acquisition of PATH while
 * the caller finishes work it did under the lock it acquired as *held (an
 * edit's rename). 0 and *ret_guard when the last entry into PATH was
 * held's and its record still exists (at PATH, or aside in a claim where it
 * denies every acquirer): nobody can pass the fence steps, so nobody
 * enters, until hf_dirlock_unhold(*ret_guard). HF_ELOST when the lock is no
 * longer the caller's (reaped as dead or leaked, released, or entered by
 * another since); -ETIMEDOUT when the counter stayed locked for 5 s (a
 * stopped acquirer); other -errno. Hold it briefly. */
int hf_dirlock_hold(const char *path, const struct hf_lock_info *held, int *ret_guard);
void hf_dirlock_unhold(int guard);
/* Read-only: 0 and *ret filled (state HF_LOCK_FREE when no lock directory;
 * claims counts claims beside it); -errno on errors. Uses the default stale
 * and max-hold windows unless the record carries its own max-hold. */
int hf_dirlock_status(const char *path, struct hf_lock_info *ret);
/* The same, and every shared and slot holder's entry (DS2), judged, by
 * fence (*entries malloc'ed, NULL when none; the caller frees it). */
int hf_dirlock_status_all(const char *path, struct hf_lock_info *ret,
			  struct hf_lock_info **entries, size_t *nentries);

/* --- the files' formats (pure: bytes in, bytes out; fuzz/ drives them) --- */

/* The owner record of me with fence, max_hold_ms and its mode (enum
 * hf_lock_mode; slots: HF_MODE_SLOTS's bound) into buf (at least
 * HF_OWNER_JSON_MAX + 128 bytes), NUL-terminated; its length. An exclusive
 * holder's record has no "mode" (0.2's form). */
size_t hf_dirlock_record_format(char *buf, const struct hf_owner *me, uint64_t fence,
				int64_t max_hold_ms, int mode, int slots);
/* A record file's len bytes (DL13): 0 and *ret (owner, fence, max_hold_ms,
 * mode and slots;
 * the rest zero, live_fd -1), or HF_EUNREADABLE. buf[len] need not be NUL. */
int hf_dirlock_record_parse(const char *buf, size_t len, struct hf_lock_info *ret);
/* The token of a record as the writer starts it ({"token":"<32 hex>"),
 * without a parse (identity checks only): true and token, or false. */
bool hf_dirlock_record_token(const char *buf, size_t len, char token[HF_TOKEN_LEN + 1]);

#endif
