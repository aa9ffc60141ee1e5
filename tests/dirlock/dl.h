/*
 * dl.h - support for the directory-lock suites.
 *
 * Lives: an acquisition holds the lock on behalf of a "life" process
 * (hf_lock_opts.pid), a child that only waits. Killing it (and reaping it)
 * is what makes a verdict "dead" true, so the tests decide exactly when a
 * token becomes stale - the sound oracle of the model (model/dirlock.pml).
 *
 * Overlap detector: every holder marks <dir>/in on entry (its pid, start
 * time and fence) and removes the mark on exit. A holder that finds a mark
 * of a live process, or a fence not greater than the last one, records an
 * overlap in <dir>/overlaps.
 *
 * Scripted acquirers: dl_acq() runs in a hft_spawn_fn child; it acquires,
 * writes its outcome to <result>, marks the detector, passes the point
 * "test.cs" (a test pauses it there to keep it in its critical section),
 * unmarks, passes "test.left", releases, passes "test.released".
 */
#ifndef DL_H
#define DL_H

#include "holdfast.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* exit codes of dl_acq */
enum {
	DL_ENTERED = 0,   /* entered, left, released                     */
	DL_HELD = 1,      /* HF_EHELD                                     */
	DL_BARRIER = 2,   /* HF_EBARRIER                                  */
	DL_TIMEDOUT = 3,  /* HF_ETIMEDOUT                                 */
	DL_UNREADABLE = 4,/* HF_EUNREADABLE                               */
	DL_ERROR = 5,     /* any other error (see the result file)        */
	DL_RELFAIL = 6,   /* entered, but the release failed              */
};

struct dl_acq {
	const char *path;      /* the lock                                   */
	const char *ovl;       /* overlap detector directory (may be NULL)   */
	const char *result;    /* result file "rc fence token" (may be NULL) */
	pid_t life;            /* hf_lock_opts.pid (0: the child itself)     */
	int64_t wait_ms;       /* 0: try once                                */
	int64_t stale_ms, max_hold_ms;
	bool no_release;       /* leave the critical section without release */
	int repeat;            /* acquisitions in a row (0 = 1)              */
	bool own_release;      /* release as the holder itself, as hf_lock
				  handles do (hf_dirlock_release_kept, DL17),
				  not by token                               */
};

/* A suite's fixture: a fresh temporary directory and the lock path L in it;
 * its end disarms the fault engine and removes the directory. */
void dl_fixture(char **dir, char **lock);
void dl_fixture_end(char **dir, char **lock);

/* hft_spawn_fn function: one scripted acquirer (see above). */
int dl_acq(void *arg);

/* In a forked child: die with the test process (a failed test must not
 * leave paused children behind). */
void dl_orphan_guard(void);
/* A life process: waits until killed. */
pid_t dl_life(void);
/* Kill a life (SIGKILL) and reap it: its owner records are dead now. */
void dl_kill(pid_t pid);

/* Overlap detector. */
void dl_ovl_init(const char *dir);
void dl_ovl_enter(const char *dir, uint64_t fence);
void dl_ovl_exit(const char *dir);
/* Number of overlaps recorded (0 expected). */
int dl_ovl_count(const char *dir);

/* The result a dl_acq child wrote: rc, fence, token (token: 33 bytes). */
void dl_result(const char *file, int *rc, uint64_t *fence, char *token);

/* Path helpers: malloc'd "<dir>/<name>". */
char *dl_path(const char *dir, const char *name);
/* mkdir -p dir/rel (asserted). */
void dl_mkdirs(const char *dir, const char *rel);
/* Claims in the lock's state directory (<lock>.holdfast/c-*). */
int dl_claims(const char *lock);
/* Write an owner record into <lock>/owner (lock made if missing), with
 * owner fields of process pid, acquired at time ms, fence f, max_hold. */
void dl_write_record(const char *dir, pid_t pid, int64_t acquired_ms, uint64_t fence,
		     int64_t max_hold_ms, char *ret_token);
/* Wait until path's ctime is more than ms old (bounded by 10 s): for the
 * time-based verdicts about record-less directories only, never to order
 * processes. */
void dl_wait_age(const char *path, int64_t ms);

/* The lock acquired for a process that is then killed (a dead owner X):
 * returns X's fence. */
uint64_t dl_dead_holder(const char *lock);

/* n scaled by HF_STRESS_SCALE=PERCENT (the ASan build: 25 % by default), at
 * least 10: the stress suites' rounds. */
int dl_scaled(int n);

#endif
