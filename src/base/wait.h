/*
 * wait.h - bounded waiting for a lock to change hands.
 */
#ifndef HF_WAIT_H
#define HF_WAIT_H

#include <stdint.h>

#include <limits.h>
#include <sys/types.h>

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
	int steady;            /* hf_wait_holder since the last sleep (WT6)    */
	int pidfd;             /* the holder's pidfd (WT5); -1 not (yet) open  */
	pid_t pid;             /* the holder to watch (0: none)                */
	pid_t spent;           /* a pid whose pidfd fired: not watched again   */
	int woke;              /* why the last hf_wait_next returned 0: HF_WOKE_* */
	int quick;             /* the last sleep ended by an event within 10 ms */
	int qdir;              /* the queue's directory (WT8), or -1: none      */
	char qname[32];        /* the queue FIFO's name in qdir                 */
	int qfd;               /* the queue, open O_RDWR, or -1                 */
	int efd;               /* an epoll instance holding qfd exclusively, or -1 */
};

/* Why a wait returned 0 (struct hf_waiter.woke; tests look). */
enum { HF_WOKE_NONE, HF_WOKE_ARMED, HF_WOKE_TIMER, HF_WOKE_EVENT, HF_WOKE_HOLDER_END };

/* Prepare to wait for the removal of entry `name` (moved away or deleted)
 * of directory `dir`. Call before the first attempt. wait_ms: 0 try once,
 * <0 forever, >0 deadline. Costs no system call: the watch is set up by the
 * first hf_wait_next (see WT2), so an attempt that succeeds at once never
 * touches inotify. Where inotify is not available the waiter falls back to
 * jittered backoff. */
int hf_wait_init(struct hf_waiter *w, const char *dir, const char *name, int64_t wait_ms);
/* Block until the watched entry is removed, the holder named by
 * hf_wait_holder ends, the backoff elapses, or the deadline. The backoff:
 * quadratic from 1 ms, +-25 % jitter, capped at 1 s (1 to 1.5 s once at the
 * cap: at most one wake-up a second, WT6); after hf_wait_holder
 * with the watch in place it is the cap at once - a release is an event and
 * a holder's end a pidfd event, so the cap only bounds what neither can see
 * (a holder in another pid namespace or on another host that died, a
 * release on another host). 0: try again; HF_ETIMEDOUT: the deadline passed
 * (never sleeps past it). The first call sets up the watch and returns 0
 * at once: the caller's next attempt is made with the watch in place.
 * HF_ECANCELED: the cancel descriptor is readable. */
int hf_wait_next(struct hf_waiter *w);
/* Set up the watch or register in the queue now, as the first hf_wait_next
 * would (WT2), without sleeping: the caller's next attempt is made
 * registered. No effect once armed, for try once, or past the deadline. */
void hf_wait_arm(struct hf_waiter *w);
/* The last attempt was refused by a holder whose leaving changes the
 * watched entry (a release, a reap, a withdrawal): the next sleep may last
 * the whole cap (WT6). pid > 0: that holder is a process of this pid
 * namespace on this kernel; its end wakes the waiter too (a pidfd, WT5).
 * Not called (a barrier, an unreadable record): the short backoff. Costs
 * no system call: the pidfd is opened by the sleep (WT5). */
void hf_wait_holder(struct hf_waiter *w, pid_t pid);
/* Wait in the kernel's queue (WT8) instead of the inotify watch: the FIFO
 * `name` in dirfd (made 0600 if missing), in which hf_wait_ring rings once
 * per release and which wakes one waiter per ring, in the order they began
 * waiting. dirfd stays the caller's and must stay open until hf_wait_done.
 * Where the FIFO cannot be made or opened (not a FIFO, no permission, a
 * read-only file system), the watch of hf_wait_init as before. Costs no
 * system call: the first hf_wait_next registers (WT2). */
void hf_wait_queue(struct hf_waiter *w, int dirfd, const char *name);
/* A waiter registered in the queue leaves without having taken the lock
 * (deadline, cancel, an error): a ring meant for it is passed on to the
 * next (WT9); owed: its last wake was a ring and it met no holder after it
 * (an error first): one is written back in any case. Then hf_wait_done. */
void hf_wait_pass(struct hf_waiter *w, int owed);
/* Leave the queue for the watch (WT9, then WT2): a ring held is passed on
 * as by hf_wait_pass(w, owed), the queue closed and forgotten, and the next
 * hf_wait_next sets up the watch and returns at once, so the next attempt
 * is made watched. For a waiter whose holder rings nobody (dirlock.c DQ5:
 * its mark could not be set) - so the ring that woke it, if one did, is
 * owed to the next: that holder will not ring again. Out of the queue
 * (never registered, or on the watch already), it only stops a later
 * registration. */
void hf_wait_unqueue(struct hf_waiter *w, int owed);
/* The releaser's ring (WT8): one wake-up for the first waiter in the queue
 * `name` of dirfd, if any. One system call (an open that fails) when nobody
 * waits; never blocks, never fails the caller. */
void hf_wait_ring(int dirfd, const char *name);
/* The ring through a queue descriptor of one's own (qfd, opened O_RDWR by
 * a registration: a reader itself, so never SIGPIPE): one write (WT8). */
void hf_wait_ring_fd(int qfd);
/* 1 when the wait's deadline has passed (never for a wait without one). */
int hf_wait_expired(const struct hf_waiter *w);
/* A descriptor whose being readable ends the wait with HF_ECANCELED (WT4);
 * -1: none (hf_wait_init's default). */
void hf_wait_set_cancel(struct hf_waiter *w, int fd);
/* Remove the watch and the holder's pidfd. The inotify instance is kept for this thread's next
 * wait (closing one that ever had a watch costs a synchronize_srcu in the
 * kernel, about 10 ms). */
void hf_wait_done(struct hf_waiter *w);

#endif
