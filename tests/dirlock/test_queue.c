/* The waiters' queue (dirlock.c DQ1-DQ3, wait.c WT8-WT9) from the API: who
 * waits is woken in the order it came, a release nobody waits for makes no
 * queue, and a queue that cannot be had falls back to the watch. Children
 * are scripted acquirers (dl_acq) stopped at named points; their waits have
 * the cap at an hour, so only a ring (or the deadline) wakes them. */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <dirent.h>
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
		/* the first's second rename is its DA1 after the ring (its
		 * first found L taken; the attempt made once registered
		 * judged L without one: DQ6) */
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

/* Does process pid have the FIFO at path open? (its /proc fd links) */
static bool has_open(pid_t pid, const char *path)
{
	struct stat want;
	if (stat(path, &want) != 0)
		return false;
	char fds[64];
	snprintf(fds, sizeof fds, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(fds);
	cr_assert_not_null(d, "%s", fds);
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char p[320];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", fds, e->d_name);
		found = e->d_name[0] != '.' && stat(p, &st) == 0 && st.st_dev == want.st_dev &&
			st.st_ino == want.st_ino;
	}
	closedir(d);
	return found;
}

/* DQ6: a waiting acquirer that finds L taken registers in the queue before
 * it judges the holder - its first verdict is made registered, and one
 * verdict serves the wait (it sleeps after it, not after a second). A try
 * once judges at once and names the holder. */
Test(queue, a_waiter_judges_the_holder_once_registered)
{
	hf_lock *h = hold();
	/* a first waiter makes the queue, so that its existence says nothing */
	struct hft_child first;
	struct dl_acq a0 = { .path = lock, .wait_ms = -1, .own_release = true };
	hft_spawn_fn(&first, "cap:wait:3600000", dl_acq, &a0);
	cr_assert(hft_asleep_in_queue(first.pid), "the first waiter asleep in the queue");
	char *q = state_file("queue");
	struct hft_child c;
	struct dl_acq a = { .path = lock, .wait_ms = -1, .own_release = true };
	hft_spawn_fn(&c, "cap:wait:3600000;pause:dirlock.acquire.judged:1;pause:dirlock.acquire.judged:2",
		     dl_acq, &a);
	hft_expect(&c, "dirlock.acquire.judged");
	cr_assert(has_open(c.pid, q), "registered in the queue before its first verdict");
	hft_go(&c);
	cr_assert(hft_asleep_in_queue(c.pid), "asleep after one verdict (no second judged)");
	/* try once: the holder judged and named at once */
	hf_lock *t;
	cr_assert_eq(hf_lock_new(lock, &t), 0);
	cr_assert_eq(hf_lock_set(t, HF_OPT_WAIT_MS, 0), 0);
	cr_assert_eq(hf_lock_acquire(t), HF_EHELD);
	int64_t hpid = 0;
	cr_assert_eq(hf_rec_int(hf_lock_holder(t), "pid", &hpid), 0, "the holder is named");
	cr_assert_eq(hpid, getpid(), "named: this process holds it");
	hf_lock_free(t);
	cr_assert_eq(hf_lock_release(h), 0);
	cr_assert_eq(hft_wait(&first), DL_ENTERED, "the first in, rung by the release");
	/* rung by the first's release, it finds L free: in, with no verdict
	 * (a second one before its sleep would have stopped it at judged:2) */
	cr_assert_eq(hft_wait(&c), DL_ENTERED);
	hf_lock_free(h);
	free(q);
}

/* DQ5: a waiter that cannot mark its holder (the fchmod refused, as by a
 * file system or a security module that refuses the bit) would sleep in
 * the queue behind a holder that rings nobody - to the cap, an hour here,
 * or its deadline. It leaves the
 * queue for the watch instead, attempts once watched, and sleeps there:
 * the release wakes it. */
Test(queue, a_waiter_that_cannot_mark_its_holder_waits_on_the_watch)
{
	hf_lock *h = hold();
	char *q = state_file("queue");
	struct hft_child c;
	/* a deadline, so that a waiter left in the queue ends (timed out)
	 * instead of reaching its third wait */
	struct dl_acq a = { .path = lock, .wait_ms = 20000, .own_release = true };
	hft_spawn_fn(&c,
		     "cap:wait:3600000;fail:chmod:1:EPERM:persist;"
		     "pause:dirlock.acquire.waiting:1;pause:dirlock.acquire.waiting:3",
		     dl_acq, &a);
	hft_expect(&c, "dirlock.acquire.waiting"); /* L taken: about to register */
	hft_go(&c);
	/* registered, judged, mark refused: out of the queue, the watch set
	 * up, attempted watched, about to sleep */
	hft_expect(&c, "dirlock.acquire.waiting");
	cr_assert(!has_open(c.pid, q), "left the queue its holder never rings");
	struct stat st;
	cr_assert_eq(stat(lock, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700, "the holder is unmarked");
	hft_go(&c);
	cr_assert_eq(hf_lock_release(h), 0);
	cr_assert_eq(hft_wait(&c), DL_ENTERED, "woken by the watch (the cap is an hour)");
	hf_lock_free(h);
	free(q);
}

/* DQ5, WT9: a waiter woken by a ring that then meets a holder it cannot
 * mark leaves the queue - and the ring goes to the next waiter, since that
 * holder will not ring. W1 and W2 queue behind H1 (W1 marks it); H1's
 * release rings W1, stopped before its rename while H2 enters; W1 meets H2,
 * cannot mark it and moves to the watch; W2, rung in its place, judges and
 * marks H2, and enters after it - with an hour's cap, only a ring can wake
 * it before its deadline. */
Test(queue, a_ring_that_met_an_unmarkable_holder_goes_to_the_next)
{
	hf_lock *h1 = hold();
	struct hft_child c[2];
	struct dl_acq a[2];
	for (int i = 0; i < 2; i++)
		a[i] = (struct dl_acq){ .path = lock, .wait_ms = 20000, .own_release = true };
	/* W1: its first rename found L taken; the second is after H1's ring */
	hft_spawn_fn(&c[0], "cap:wait:3600000;fail:chmod:2:EPERM:persist;pause:rename:2", dl_acq,
		     &a[0]);
	cr_assert(hft_asleep_in_queue(c[0].pid), "W1 asleep in the queue");
	hft_spawn_fn(&c[1], "cap:wait:3600000;pause:dirlock.acquire.judged:2", dl_acq, &a[1]);
	cr_assert(hft_asleep_in_queue(c[1].pid), "W2 asleep in the queue");
	struct stat st;
	cr_assert_eq(stat(lock, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 01700, "W1 marked H1");
	cr_assert_eq(hf_lock_release(h1), 0);
	hft_expect(&c[0], "rename"); /* W1, rung, stopped before its rename */
	hf_lock *h2 = hold();        /* H2 enters meanwhile, not through the queue */
	hft_go(&c[0]);
	/* W1 met H2, could not mark it, passed the ring on: W2 judges H2 */
	hft_expect(&c[1], "dirlock.acquire.judged");
	hft_go(&c[1]);
	cr_assert(hft_asleep_in_queue(c[1].pid), "W2 asleep in the queue again");
	cr_assert_eq(stat(lock, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 01700, "W2 marked H2");
	cr_assert_eq(hf_lock_release(h2), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(hft_wait(&c[i]), DL_ENTERED, "W%d entered", i + 1);
	hf_lock_free(h1);
	hf_lock_free(h2);
}
