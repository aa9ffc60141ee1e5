/*
 * wait.h - bounded waiting for a lock to change hands.
 */
#ifndef HF_WAIT_H
#define HF_WAIT_H

#include <stdint.h>

#include <limits.h>

struct hf_waiter {
	int ifd;               /* inotify fd, or -1 (not armed / backoff only) */
	int wd;                /* our watch on dir, or -1                      */
	int armed;             /* 1: the watch was tried (set up or refused)   */
	char dir[PATH_MAX];    /* the directory watched                        */
	char name[256];        /* the entry whose removal wakes us ("" = any)  */
	int64_t deadline_ns;   /* CLOCK_MONOTONIC; <0: no deadline (forever)   */
	int64_t backoff_us;    /* current fallback sleep                       */
	int cancel_fd;         /* readable: stop (HF_ECANCELED); -1 none       */
	unsigned tries;
};

/* Prepare to wait for the removal of entry `name` (moved away or deleted)
 * of directory `dir`. Call before the first attempt. wait_ms: 0 try once,
 * <0 forever, >0 deadline. Costs no system call: the watch is set up by the
 * first hf_wait_next (see WT2), so an attempt that succeeds at once never
 * touches inotify. Where inotify is not available the waiter falls back to
 * jittered backoff. */
int hf_wait_init(struct hf_waiter *w, const char *dir, const char *name, int64_t wait_ms);
/* Block until the watched entry is removed, the backoff elapses (the
 * fallback: quadratic from 1 ms, +-25 % jitter, capped at 250 ms with the
 * watch in place and 100 ms without; it also caps inotify waits, for what
 * inotify cannot see: a holder that died, a release on another host), or
 * the deadline. 0: try again; HF_ETIMEDOUT: the deadline passed
 * (never sleeps past it). The first call sets up the watch and returns 0
 * at once: the caller's next attempt is made with the watch in place.
 * HF_ECANCELED: the cancel descriptor is readable. */
int hf_wait_next(struct hf_waiter *w);
/* A descriptor whose being readable ends the wait with HF_ECANCELED (WT4);
 * -1: none (hf_wait_init's default). */
void hf_wait_set_cancel(struct hf_waiter *w, int fd);
/* Remove the watch. The inotify instance is kept for this thread's next
 * wait (closing one that ever had a watch costs a synchronize_srcu in the
 * kernel, about 10 ms). */
void hf_wait_done(struct hf_waiter *w);

#endif
