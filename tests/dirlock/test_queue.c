/* The waiters' queue (dirlock.c DQ1-DQ3, wait.c WT8-WT9) from the API: who
 * waits is woken in the order it came, a release nobody waits for makes no
 * queue, and a queue that cannot be had falls back to the watch. Children
 * are scripted acquirers (dl_acq) stopped at named points; their waits have
 * the cap at an hour, so only a ring (or the deadline) wakes them. */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir, *lock;

static void setup(void)
{
	dl_fixture(&dir, &lock);
}

static void teardown(void)
{
	dl_fixture_end(&dir, &lock);
}

TestSuite(queue, .init = setup, .fini = teardown, .timeout = 120);

static hf_lock *hold(void)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new(lock, &l), 0);
	cr_assert_eq(hf_lock_acquire(l), 0);
	return l;
}

static char *state_file(const char *name)
{
	char *p;
	cr_assert_geq(asprintf(&p, "%s.holdfast/%s", lock, name), 0);
	return p;
}

/* Three waiters, registered one after the other (each stopped at its second
 * "dirlock.acquire.waiting": registered, its look at L made, about to
 * sleep), enter in that order, one release each, with rising fences. */
Test(queue, waiters_enter_in_the_order_they_came)
{
	hf_lock *h = hold();
	struct hft_child c[3];
	struct dl_acq a[3];
	char *res[3];
	for (int i = 0; i < 3; i++) {
		cr_assert_geq(asprintf(&res[i], "%s/res%d", dir, i), 0);
		a[i] = (struct dl_acq){ .path = lock, .result = res[i], .wait_ms = -1,
					.own_release = true };
		hft_spawn_fn(&c[i], "cap:wait:3600000;pause:dirlock.acquire.waiting:2;pause:test.cs:1",
			     dl_acq, &a[i]);
		hft_expect(&c[i], "dirlock.acquire.waiting");
		hft_go(&c[i]); /* it sleeps in the queue, behind the ones before it */
		/* asleep there before the next comes and before the release: a
		 * ring passes a waiter not yet asleep (EPOLLEXCLUSIVE) */
		cr_assert(hft_asleep_in_queue(c[i].pid), "waiter %d asleep in the queue", i);
	}
	char *q = state_file("queue");
	struct stat st;
	cr_assert_eq(stat(q, &st), 0, "the first waiter made the queue");
	cr_assert(S_ISFIFO(st.st_mode) && (st.st_mode & 0777) == 0600, "a FIFO, 0600");
	cr_assert_eq(hf_lock_release(h), 0);
	uint64_t last = hf_lock_fence(h);
	for (int i = 0; i < 3; i++) {
		hft_expect(&c[i], "test.cs"); /* the i-th in, holding the lock */
		for (int k = i + 1; k < 3; k++) /* the others still asleep, not woken */
			cr_assert(hft_in_epoll_wait(c[k].pid), "waiter %d still asleep", k);
		hft_go(&c[i]);                /* its release rings the next */
		cr_assert_eq(hft_wait(&c[i]), DL_ENTERED);
		int rc;
		uint64_t f;
		char tok[64];
		dl_result(res[i], &rc, &f, tok);
		cr_assert_eq(rc, 0);
		cr_assert_gt(f, last, "waiter %d entered after the one before it", i);
		last = f;
		free(res[i]);
	}
	hf_lock_free(h);
	free(q);
}

/* Nobody waited: no queue is made, and a release rings nothing. */
Test(queue, an_uncontended_lock_has_no_queue)
{
	for (int i = 0; i < 3; i++) {
		hf_lock *h = hold();
		cr_assert_eq(hf_lock_release(h), 0);
		hf_lock_free(h);
	}
	char *q = state_file("queue");
	struct stat st;
	cr_assert_eq(stat(q, &st), -1, "no queue without a waiter");
	cr_assert_eq(errno, ENOENT);
	free(q);
}

/* The queue's name taken by a directory (not ours to read): the waiter
 * waits on the watch of the parent instead and enters after the release. */
Test(queue, a_queue_that_cannot_be_had_falls_back_to_the_watch)
{
	hf_lock *h = hold();
	char *q = state_file("queue");
	cr_assert_eq(mkdir(q, 0700), 0);
	struct hft_child c;
	struct dl_acq a = { .path = lock, .wait_ms = -1, .own_release = true };
	hft_spawn_fn(&c, "cap:wait:3600000;pause:dirlock.acquire.waiting:2", dl_acq, &a);
	hft_expect(&c, "dirlock.acquire.waiting"); /* watched, attempted again */
	hft_go(&c);
	cr_assert_eq(hf_lock_release(h), 0);
	cr_assert_eq(hft_wait(&c), DL_ENTERED, "woken by the watch, not the cap (an hour)");
	struct stat st;
	cr_assert_eq(stat(q, &st), 0);
	cr_assert(S_ISDIR(st.st_mode), "left as it was");
	hf_lock_free(h);
	free(q);
}

/* A waiter woken by a ring whose attempt then fails before it meets anyone
 * (an I/O error at its DA1 here) owes that ring to the next (DQ3, WT9): the
 * second waiter enters, woken by it - not by the cap, an hour here. */
Test(queue, a_ring_spent_on_an_error_goes_to_the_next)
{
	hf_lock *h = hold();
	struct hft_child c[2];
	struct dl_acq a[2];
	for (int i = 0; i < 2; i++) {
		/* no deadline to wake the second either: the suite's timeout
		 * fails the test if nobody rings it */
		a[i] = (struct dl_acq){ .path = lock, .wait_ms = -1, .own_release = true };
		/* the first's second rename is its DA1 after the ring */
		hft_spawn_fn(&c[i], i == 0 ? "cap:wait:3600000;fail:rename:2:EIO" : "cap:wait:3600000",
			     dl_acq, &a[i]);
		cr_assert(hft_asleep_in_queue(c[i].pid), "waiter %d asleep in the queue", i);
	}
	cr_assert_eq(hf_lock_release(h), 0);
	cr_assert_eq(hft_wait(&c[0]), DL_ERROR, "the first woke, and its attempt failed");
	cr_assert_eq(hft_wait(&c[1]), DL_ENTERED, "the second was rung in its place");
	hf_lock_free(h);
}

/* DQ5: a waiter asleep behind a holder has marked its directory (the
 * sticky bit); a lock nobody waited for is never marked. */
Test(queue, a_waiter_marks_the_holder_it_sleeps_behind)
{
	hf_lock *h = hold();
	struct stat st;
	cr_assert_eq(stat(lock, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700, "unmarked while nobody waits");
	struct hft_child c;
	struct dl_acq a = { .path = lock, .wait_ms = -1, .own_release = true };
	hft_spawn_fn(&c, "cap:wait:3600000", dl_acq, &a);
	cr_assert(hft_asleep_in_queue(c.pid), "asleep in the queue");
	cr_assert_eq(stat(lock, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 01700, "marked before its sleep");
	cr_assert_eq(hf_lock_release(h), 0);
	cr_assert_eq(hft_wait(&c), DL_ENTERED, "rung by the release (the cap is an hour)");
	hf_lock_free(h);
}
