/*
 * wait.h - bounded waiting for a lock to change hands.
 */
#ifndef HF_WAIT_H
#define HF_WAIT_H

#include <stdint.h>

struct hf_waiter {
	int ifd;               /* inotify fd, or -1 (backoff only)             */
	char name[256];        /* the entry whose removal wakes us ("" = any)  */
	int64_t deadline_ns;   /* CLOCK_MONOTONIC; <0: no deadline (forever)   */
	int64_t backoff_us;    /* current fallback sleep                       */
	unsigned tries;
};

/* Watch directory `dir` for the removal of entry `name` (moved away or
 * deleted). Call before the first attempt, so no release between attempt and
 * watch is missed. wait_ms: 0 try once, <0 forever, >0 deadline. Where
 * inotify is not available the waiter falls back to jittered backoff. */
int hf_wait_init(struct hf_waiter *w, const char *dir, const char *name, int64_t wait_ms);
/* Block until the watched entry is removed, the backoff elapses (the
 * fallback: quadratic from 1 ms, +-25 % jitter, capped at 100 ms; also caps
 * inotify waits, in case a release happened on another host or a missed
 * event), or the deadline. 0: try again; HF_ETIMEDOUT: the deadline passed
 * (never sleeps past it). */
int hf_wait_next(struct hf_waiter *w);
void hf_wait_done(struct hf_waiter *w);

#endif
