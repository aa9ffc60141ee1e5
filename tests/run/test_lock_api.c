/* hf_lock (holdfast.h) as a C program calls it: the misuse and no-op
 * sentences of the header, detach handing the lock over, check after the
 * lock was lost, and a wait ended by its cancel descriptor. */
#include "rt.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>

HFT_SCRATCH_SUITE(lock_api, 60);

Test(lock_api, misuse_says_so_and_changes_nothing)
{
	char *p = rt_path(dir, "L");
	hf_lock *l;
	cr_assert_eq(hf_lock_new(NULL, &l), -EINVAL);
	cr_assert_eq(hf_lock_new(p, NULL), -EINVAL);
	cr_assert_eq(hf_lock_new("x.holdfast", &l), -EINVAL, "reserved names are refused");
	cr_assert_eq(hf_lock_acquire(NULL), -EINVAL);
	cr_assert_eq(hf_lock_release(NULL), -EINVAL);
	cr_assert_eq(hf_lock_set(NULL, HF_OPT_WAIT_MS, 0), -EINVAL);
	cr_assert_null(hf_lock_token(NULL));
	cr_assert_eq(hf_lock_fd(NULL), -1);
	hf_lock_free(NULL);
	hf_rec_free(NULL);
	cr_assert_eq(hf_lock_new(p, &l), 0);
	cr_assert_eq(hf_lock_set(l, 9999, 1), -EINVAL, "an option the kind does not have");
	cr_assert_eq(hf_lock_set(l, HF_OPT_STALE_MS, -1), -EINVAL, "a value out of its range");
	cr_assert_eq(hf_lock_set(l, HF_OPT_CANCEL_FD, -2), -EINVAL);
	cr_assert_eq(hf_lock_release(l), HF_ENOTHELD);
	cr_assert_eq(hf_lock_hold(l), HF_ENOTHELD);
	cr_assert_eq(hf_lock_check(l), HF_ENOTHELD, "never had a token");
	hf_lock_unhold(l); /* no-op */
	cr_assert_eq(hf_lock_acquire(l), 0);
	uint64_t fence = hf_lock_fence(l);
	cr_assert_eq(hf_lock_acquire(l), -EALREADY);
	cr_assert_eq(hf_lock_fence(l), fence, "the failed call changed nothing");
	cr_assert_eq(hf_lock_check(l), 0);
	cr_assert_eq(hf_lock_release(l), 0);
	cr_assert_eq(hf_lock_check(l), HF_ELOST, "released: no longer ours");
	cr_assert_eq(hf_lock_release(l), HF_ENOTHELD);
	hf_lock_free(l);
	free(p);
}

Test(lock_api, detach_hands_the_lock_and_its_descriptor_over)
{
	char *p = rt_path(dir, "L");
	hf_lock *l;
	cr_assert_eq(hf_lock_new(p, &l), 0);
	cr_assert_eq(hf_lock_acquire(l), 0);
	char token[64];
	snprintf(token, sizeof token, "%s", hf_lock_token(l));
	int fd = hf_lock_detach(l);
	cr_assert_geq(fd, 0);
	cr_assert_eq(hf_lock_release(l), HF_ENOTHELD, "the handle holds nothing now");
	hf_lock_free(l); /* releases nothing */
	cr_assert_eq(fcntl(fd, F_GETFD), FD_CLOEXEC, "the descriptor is the caller's, still open");
	hf_rec *st;
	cr_assert_eq(hf_lock_status(p, &st), 0);
	cr_assert_str_eq(hf_rec_str(st, "state"), "held");
	cr_assert_str_eq(hf_rec_str(st, "token"), token);
	hf_rec_free(st);
	hf_lock *again;
	cr_assert_eq(hf_lock_new(p, &again), 0);
	cr_assert_eq(hf_lock_adopt(again, token), 0);
	cr_assert_eq(hf_lock_release(again), 0, "released by its token elsewhere");
	hf_lock_free(again);
	close(fd);
	free(p);
}

/* A handle that holds p: for this thread (thread 0), or for another one
 * (thread 1: tid 1 is never a test's thread, so a wait of this thread for
 * it is a wait, not a self-deadlock, HL5). */
static hf_lock *holding(const char *p, int64_t thread)
{
	hf_lock *h;
	cr_assert_eq(hf_lock_new(p, &h), 0);
	if (thread)
		cr_assert_eq(hf_lock_set(h, HF_OPT_THREAD, thread), 0);
	cr_assert_eq(hf_lock_acquire(h), 0);
	return h;
}

Test(lock_api, a_readable_cancel_descriptor_ends_a_wait)
{
	char *p = rt_path(dir, "L");
	hf_lock *holder = holding(p, 1), *waiter;
	int c[2];
	cr_assert_eq(pipe(c), 0);
	cr_assert_eq(write(c[1], "x", 1), 1); /* readable before the wait starts */
	cr_assert_eq(hf_lock_new(p, &waiter), 0);
	cr_assert_eq(hf_lock_set(waiter, HF_OPT_WAIT_MS, -1), 0); /* forever */
	cr_assert_eq(hf_lock_set(waiter, HF_OPT_CANCEL_FD, c[0]), 0);
	cr_assert_eq(hf_lock_acquire(waiter), HF_ECANCELED);
	char b;
	cr_assert_eq(read(c[0], &b, 1), 1, "the library only polls the descriptor, never reads it");
	cr_assert_eq(hf_lock_release(holder), 0);
	cr_assert_eq(hf_lock_acquire(waiter), 0, "with nothing to read, the wait goes on and gets it");
	hf_lock_free(waiter);
	hf_lock_free(holder);
	close(c[0]);
	close(c[1]);
	free(p);
}

Test(lock_api, a_session_take_waits_until_cancelled_and_releases_only_its_own_take)
{
	char *p = rt_path(dir, ".session.lock");
	hf_session *a, *b;
	cr_assert_eq(hf_session_new(p, "alpha", &a), 0);
	cr_assert_eq(hf_session_take(a), 0);
	int c[2];
	cr_assert_eq(pipe(c), 0);
	cr_assert_eq(write(c[1], "x", 1), 1);
	cr_assert_eq(hf_session_new(p, "beta", &b), 0);
	cr_assert_eq(hf_session_set(b, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_session_set(b, HF_OPT_CANCEL_FD, c[0]), 0);
	cr_assert_eq(hf_session_take(b), HF_ECANCELED);
	int64_t pid;
	cr_assert_eq(hf_rec_int(hf_session_holder(b), "pid", &pid), 0);
	cr_assert_eq(pid, getpid(), "the holder seen while waiting");
	/* another handle of lane alpha that took nothing releases whoever of
	 * the lane holds it; one that took releases only its own take (HS3) */
	hf_session *a2, *anyone;
	cr_assert_eq(hf_session_new(p, "alpha", &a2), 0);
	cr_assert_eq(hf_session_new(p, "alpha", &anyone), 0);
	cr_assert_eq(hf_session_release(a), 0);
	cr_assert_eq(hf_session_take(a2), 0);
	cr_assert_eq(hf_session_release(a), HF_ENOTYOURS, "a's take is over: a2's is not a's");
	cr_assert_eq(hf_session_release(anyone), 0, "a handle that took nothing: whoever of the lane");
	cr_assert_eq(hf_session_release(a2), HF_ENOTHELD, "released by the other handle");
	hf_session_free(anyone);
	hf_session_free(a);
	hf_session_free(a2);
	hf_session_free(b);
	close(c[0]);
	close(c[1]);
	free(p);
}

/* The cancel descriptor becomes readable while the waiter is waiting (the
 * waiter a child paused at its wait point, let go, then cancelled): the
 * wait ends with HF_ECANCELED, whenever the byte arrives. */
static int cancel_fd_for_child = -1;
static const char *cancel_path;

static int wait_forever(void *arg)
{
	(void)arg;
	hf_lock *l;
	if (hf_lock_new(cancel_path, &l) < 0)
		return 2;
	hf_lock_set(l, HF_OPT_WAIT_MS, -1);
	hf_lock_set(l, HF_OPT_CANCEL_FD, cancel_fd_for_child);
	int rc = hf_lock_acquire(l);
	hf_lock_free(l);
	return rc == HF_ECANCELED ? 0 : 1;
}

Test(lock_api, a_cancel_that_arrives_during_the_wait_ends_it)
{
	char *p = rt_path(dir, "L");
	hf_lock *holder = holding(p, 0);
	int c[2];
	cr_assert_eq(pipe(c), 0);
	cancel_fd_for_child = c[0];
	cancel_path = p;
	struct hft_child w;
	hft_spawn_fn(&w, "pause:dirlock.acquire.waiting:2", wait_forever, NULL);
	hft_expect(&w, "dirlock.acquire.waiting"); /* its second wait: the watch is armed */
	hft_go(&w);
	cr_assert_eq(write(c[1], "x", 1), 1); /* while it sleeps, or just before */
	cr_assert_eq(hft_wait(&w), 0, "the waiter ended with HF_ECANCELED");
	cr_assert_eq(hf_lock_release(holder), 0, "the holder never lost it");
	hf_lock_free(holder);
	close(c[0]);
	close(c[1]);
	free(p);
}

Test(lock_api, a_cancel_descriptor_that_is_not_open_is_refused_at_once)
{
	char *p = rt_path(dir, "L");
	hf_lock *holder = holding(p, 1), *waiter;
	int bad = 1000; /* far above what the library opens meanwhile */
	cr_assert_eq(fcntl(bad, F_GETFD), -1, "descriptor %d is open", bad);
	cr_assert_eq(hf_lock_new(p, &waiter), 0);
	cr_assert_eq(hf_lock_set(waiter, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_lock_set(waiter, HF_OPT_CANCEL_FD, bad), 0);
	cr_assert_eq(hf_lock_acquire(waiter), -EBADF, "not a wait forever, not a spin");
	hf_lock_free(waiter);
	hf_lock_free(holder);
	free(p);
}

Test(lock_api, a_take_that_breaks_a_stale_session_says_so)
{
	char *p = rt_path(dir, ".session.lock");
	hft_write(p, "{\"lane\":\"old\",\"owner\":\"o\",\"pid\":1,\"host\":\"elsewhere\","
		     "\"started\":\"2000-01-01T00:00:00Z\"}\n");
	hf_session *s;
	cr_assert_eq(hf_session_new(p, "new", &s), 0);
	cr_assert_eq(hf_session_take(s), 1, "1: it broke one stale session");
	cr_assert_str_eq(hf_rec_str(hf_session_holder(s), "broke.lane"), "old");
	cr_assert_eq(hf_session_release(s), 0);
	cr_assert_eq(hf_session_take(s), 0, "a free lock: nothing broken");
	cr_assert_null(hf_rec_str(hf_session_holder(s), "broke.lane"));
	cr_assert_eq(hf_session_release(s), 0);
	hf_session_free(s);
	free(p);
}

/* The library's side of it: waiting on behalf of another process for a
 * lock that process holds is -EDEADLK at once, naming it; a process
 * waiting for itself waits (a sibling thread may release). */
Test(lock_api, a_wait_for_a_lock_its_owner_holds_is_refused_at_once)
{
	char *p = rt_path(dir, "L");
	pid_t parent = getppid(); /* alive for the test's length: Criterion's runner */
	hf_lock *a, *b;
	cr_assert_eq(hf_lock_new(p, &a), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_PID, parent), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(hf_lock_new(p, &b), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_PID, parent), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_lock_acquire(b), -EDEADLK);
	int64_t pid;
	cr_assert_eq(hf_rec_int(hf_lock_holder(b), "pid", &pid), 0);
	cr_assert_eq(pid, parent);
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_PID, 0), 0); /* now the test's own */
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_PID, 0), 0);
	/* a deadline as long as the suite's timeout (and before the hold
	 * leaks, at 10 min: HL5 waits for a hold that leaks first): a wait to
	 * it would end HF_ETIMEDOUT or in the timeout, so -EDEADLK is "at
	 * once" without a clock asserted */
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, 60000), 0);
	cr_assert_eq(hf_lock_acquire(b), -EDEADLK, "this thread holds it: refused (HL5)");
	cr_assert_eq(hf_lock_release(a), 0);
	hf_lock_free(a);
	hf_lock_free(b);
	free(p);
}

/* HL5: a thread never waits for a lock it holds itself - through another
 * handle of the same process, with or without a deadline: -EDEADLK at once,
 * the holder (this process) named. Trying once still says HF_EHELD. Once
 * released, the same wait takes the lock. */
Test(lock_api, a_thread_never_waits_for_its_own_hold)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = holding(p, 0), *b;
	cr_assert_eq(hf_lock_new(p, &b), 0);
	cr_assert_eq(hf_lock_acquire(b), HF_EHELD, "trying once: held");
	int64_t waits[] = { -1, 60000 }; /* the hold leaks only after 10 min */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, waits[i]), 0);
		cr_assert_eq(hf_lock_acquire(b), -EDEADLK, "wait %" PRId64, waits[i]);
		int64_t pid;
		cr_assert_eq(hf_rec_int(hf_lock_holder(b), "pid", &pid), 0);
		cr_assert_eq(pid, getpid(), "the holder is named");
		cr_assert_str_eq(hf_rec_str(hf_lock_holder(b), "token"), hf_lock_token(a));
	}
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_acquire(b), 0, "released: the wait takes it");
	/* a handle freed while holding releases and is no longer listed */
	hf_lock_free(b);
	cr_assert_eq(hf_lock_set(a, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(hf_lock_release(a), 0);
	hf_lock_free(a);
	free(p);
}

/* HL5's one exception: a hold of this thread that leaks (max(max-hold,
 * stale) old) before a bounded wait ends is waited for - the wait ends by
 * the reap, without this thread - while a wait without a deadline for it is
 * still refused. */
Test(lock_api, a_bounded_wait_outlasting_its_own_holds_leak_reaps_it)
{
	char *p = rt_path(dir, "L");
	hf_lock *a, *b;
	cr_assert_eq(hf_lock_new(p, &a), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_MAX_HOLD_MS, 1), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_STALE_MS, 1), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(hf_lock_new(p, &b), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_STALE_MS, 1), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, 30000), 0);
	cr_assert_eq(hf_lock_acquire(b), 0, "the leaked hold was reaped");
	cr_assert_eq(hf_lock_check(a), HF_ELOST);
	cr_assert_eq(hf_lock_release(b), 0);
	hf_lock_free(a);
	hf_lock_free(b);
	free(p);
}

struct waiter {
	const char *path;
	int64_t wait_ms;
	int rc;
	int started; /* a pipe's write end: written when the thread begins */
};

static void *wait_in_thread(void *arg)
{
	struct waiter *w = arg;
	hf_lock *b;
	w->rc = hf_lock_new(w->path, &b);
	if (w->rc == 0)
		w->rc = hf_lock_set(b, HF_OPT_WAIT_MS, w->wait_ms);
	if (w->started >= 0 && write(w->started, "x", 1) != 1)
		w->rc = -EIO;
	if (w->rc == 0)
		w->rc = hf_lock_acquire(b);
	if (w->rc == 0)
		w->rc = hf_lock_release(b);
	hf_lock_free(b);
	return NULL;
}

/* HL5: another thread's hold is waited for (that thread may release it):
 * a thread waiting without a deadline takes the lock once the holding
 * thread releases. */
Test(lock_api, a_thread_waits_for_another_threads_hold)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = holding(p, 0);
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	struct waiter w = { .path = p, .wait_ms = -1, .rc = 1, .started = fds[1] };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, wait_in_thread, &w), 0);
	char c;
	cr_assert_eq(read(fds[0], &c, 1), 1);
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w.rc, 0, "the other thread waited and took it: %d", w.rc);
	close(fds[0]);
	close(fds[1]);
	hf_lock_free(a);
	free(p);
}

static void *acquire_in_thread(void *arg)
{
	hf_lock *a = arg;
	return (void *)(intptr_t)hf_lock_acquire(a);
}

/* HF_OPT_THREAD: an event loop acquires on a worker thread for its own
 * thread (Node's async acquire); that thread's wait for the hold is then
 * refused at once (Node's acquireSync would block the loop forever). */
Test(lock_api, a_hold_acquired_on_a_worker_for_this_thread_is_this_threads)
{
	char *p = rt_path(dir, "L");
	hf_lock *a, *b;
	cr_assert_eq(hf_lock_new(p, &a), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_THREAD, gettid()), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_THREAD, -1), -EINVAL);
	pthread_t t;
	void *rc;
	cr_assert_eq(pthread_create(&t, NULL, acquire_in_thread, a), 0);
	cr_assert_eq(pthread_join(t, &rc), 0);
	cr_assert_eq((intptr_t)rc, 0);
	cr_assert_eq(hf_lock_new(p, &b), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_lock_acquire(b), -EDEADLK);
	cr_assert_eq(hf_lock_release(a), 0);
	hf_lock_free(a);
	hf_lock_free(b);
	free(p);
}

/* The lowest free descriptor number: a leak check. */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	close(fd);
	return fd;
}

/* A handle keeps its lock's directories open while it holds (DL17) and
 * closes them with the release, detach and free. Its release moves its own
 * directory away without reading the record first - and when the holder
 * was reaped meanwhile (its process, for which it held the lock, died), the
 * successor's lock at the same path is another directory: it is left alone
 * (HF_ENOTYOURS, the successor still holds). */
Test(lock_api, a_release_after_being_reaped_leaves_the_successor_alone)
{
	char *p = rt_path(dir, "L");
	int free0 = lowest_free_fd();
	int end;
	pid_t life = hft_fork_until_closed(&end);
	hf_lock *a, *b;
	cr_assert_eq(hf_lock_new(p, &a), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_PID, life), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(kill(life, SIGKILL), 0);
	int st;
	cr_assert_eq(waitpid(life, &st, 0), life); /* a's owner is dead now */
	cr_assert_eq(hf_lock_new(p, &b), 0);
	cr_assert_eq(hf_lock_acquire(b), 0, "the dead owner's lock is reaped");
	cr_assert_eq(hf_lock_release(a), HF_ENOTYOURS);
	hf_rec *s;
	cr_assert_eq(hf_lock_status(p, &s), 0);
	cr_assert_str_eq(hf_rec_str(s, "state"), "held");
	cr_assert_str_eq(hf_rec_str(s, "token"), hf_lock_token(b), "the successor still holds");
	hf_rec_free(s);
	cr_assert_eq(hf_lock_release(b), 0);
	hf_lock_free(a);
	/* detach and free close what the handle kept */
	cr_assert_eq(hf_lock_acquire(b), 0);
	char token[64];
	snprintf(token, sizeof token, "%s", hf_lock_token(b));
	int fd = hf_lock_detach(b);
	cr_assert_geq(fd, 0);
	close(fd);
	hf_lock_free(b);
	cr_assert_eq(hf_lock_new(p, &b), 0);
	cr_assert_eq(hf_lock_adopt(b, token), 0);
	cr_assert_eq(hf_lock_release(b), 0, "released by its token");
	cr_assert_eq(hf_lock_acquire(b), 0);
	hf_lock_free(b); /* releases, closes */
	close(end);
	cr_assert_eq(lowest_free_fd(), free0, "no descriptor left open");
	char *state = rt_path(dir, "L.holdfast");
	cr_assert_eq(hft_count_prefix(state, "c-"), 0, "no claim left");
	cr_assert_not(hft_exists(p), "released");
	free(state);
	free(p);
}
