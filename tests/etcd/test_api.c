/*
 * test_api.c - the directory lock on etcd through the library: acquire,
 * conflict naming the holder, release, check, query, fences, the
 * keep-alive thread, cancel, a stopped etcd, options.
 */
#include "et.h"
#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

ET_SUITE(etcd_api, 240);

static hf_lock *lock_on_etcd(const char *name)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", et_dir, name);
	hf_lock *l;
	cr_assert_eq(hf_lock_new(path, &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, E.uri), 0);
	return l;
}

static const char *str(const hf_rec *r, const char *f)
{
	const char *s = hf_rec_str(r, f);
	cr_assert_not_null(s, "no %s in %s", f, r ? hf_rec_json(r) : "(null)");
	return s;
}

static int64_t num(const hf_rec *r, const char *f)
{
	int64_t v;
	cr_assert_eq(hf_rec_int(r, f, &v), 0, "no %s in %s", f, r ? hf_rec_json(r) : "(null)");
	return v;
}

Test(etcd_api, acquire_conflict_release_check_query)
{
	hf_lock *a = lock_on_etcd("l"), *b = lock_on_etcd("l");
	cr_assert_eq(hf_lock_acquire(a), 0, "%s", hf_lock_holder(a) ? hf_rec_json(hf_lock_holder(a)) : "");
	cr_assert_eq(hf_lock_acquire(a), -EALREADY);
	uint64_t fence = hf_lock_fence(a);
	cr_assert_gt(fence, 0);
	cr_assert_eq(hf_lock_fd(a), -1);
	cr_assert_eq(hf_lock_acquire(b), HF_EHELD);
	const hf_rec *h = hf_lock_holder(b);
	cr_assert_eq(num(h, "pid"), getpid());
	cr_assert_eq((uint64_t)num(h, "fence"), fence);
	cr_assert_str_eq(str(h, "token"), hf_lock_token(a));
	cr_assert_str_eq(str(h, "state"), "held");
	str(h, "host");
	str(h, "comm");
	num(h, "age_ms");
	cr_assert_eq(hf_lock_check(a), 0);
	hf_rec *q;
	cr_assert_eq(hf_lock_query(b, &q), 0);
	cr_assert_str_eq(str(q, "state"), "held");
	cr_assert_str_eq(str(q, "backend"), "etcd");
	cr_assert_eq((uint64_t)num(q, "fence"), fence);
	hf_rec_free(q);
	/* release by the token from another handle: the CLI's way */
	cr_assert_eq(hf_lock_adopt(b, hf_lock_token(a)), 0);
	cr_assert_eq(hf_lock_check(b), 0);
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_check(a), HF_ELOST);
	cr_assert_eq(hf_lock_release(a), HF_ENOTHELD);
	cr_assert_eq(hf_lock_release(b), HF_ENOTHELD);
	cr_assert_eq(hf_lock_query(b, &q), 0);
	cr_assert_str_eq(str(q, "state"), "free");
	hf_rec_free(q);
	hf_lock_free(a);
	hf_lock_free(b);
}

Test(etcd_api, release_of_another_token_is_not_yours)
{
	hf_lock *a = lock_on_etcd("n"), *b = lock_on_etcd("n");
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(hf_lock_adopt(b, "0123456789abcdef0123456789abcdef"), 0);
	cr_assert_eq(hf_lock_release(b), HF_ENOTYOURS);
	cr_assert_eq(num(hf_lock_holder(b), "pid"), getpid());
	cr_assert_eq(hf_lock_check(a), 0, "a refused release took it");
	hf_lock_free(a); /* releases */
	hf_lock_free(b);
}

Test(etcd_api, fences_strictly_increase)
{
	hf_lock *a = lock_on_etcd("f");
	uint64_t prev = 0;
	for (int i = 0; i < 10; i++) {
		cr_assert_eq(hf_lock_acquire(a), 0);
		cr_assert_gt(hf_lock_fence(a), prev);
		prev = hf_lock_fence(a);
		cr_assert_eq(hf_lock_release(a), 0);
	}
	hf_lock_free(a);
}

/* A holder that dies without releasing, on this host: the next acquirer
 * reaps it at once (its pid proves it), with a greater fence. */
Test(etcd_api, dead_holder_reaped_with_a_greater_fence)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	fflush(NULL);
	pid_t c = fork();
	cr_assert_geq(c, 0);
	if (c == 0) {
		hf_lock *l = lock_on_etcd("d");
		uint64_t f = 0;
		if (hf_lock_set(l, HF_OPT_TTL_MS, 60000) == 0 && hf_lock_acquire(l) == 0)
			f = hf_lock_fence(l);
		if (write(p[1], &f, sizeof f) != sizeof f)
			_exit(2);
		raise(SIGKILL);
	}
	close(p[1]);
	uint64_t f = 0;
	cr_assert_eq(read(p[0], &f, sizeof f), (ssize_t)sizeof f);
	cr_assert_gt(f, 0);
	cr_assert_eq(hft_exit_within(c, 30000), 128 + SIGKILL);
	hf_lock *l = lock_on_etcd("d");
	cr_assert_eq(hf_lock_acquire(l), 0, "a dead holder not reaped");
	cr_assert_gt(hf_lock_fence(l), f);
	hf_lock_free(l);
	close(p[0]);
}

/* The keep-alive thread: held across several TTLs (3 s each). */
Test(etcd_api, keepalive_holds_past_the_ttl)
{
	hf_lock *a = lock_on_etcd("k"), *b = lock_on_etcd("k");
	cr_assert_eq(hf_lock_set(a, HF_OPT_TTL_MS, 3000), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	/* b waits 10 s: without the keep-alive a's lease would expire after 3 */
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, 10000), 0);
	cr_assert_eq(hf_lock_acquire(b), HF_ETIMEDOUT);
	cr_assert_eq(hf_lock_check(a), 0);
	cr_assert_eq(hf_lock_release(a), 0);
	hf_lock_free(a);
	hf_lock_free(b);
}

Test(etcd_api, wait_cancelled)
{
	hf_lock *a = lock_on_etcd("c"), *b = lock_on_etcd("c");
	cr_assert_eq(hf_lock_acquire(a), 0);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_CANCEL_FD, p[0]), 0);
	cr_assert_eq(hf_lock_acquire(b), HF_ECANCELED);
	cr_assert_eq(num(hf_lock_holder(b), "pid"), getpid());
	close(p[0]);
	close(p[1]);
	hf_lock_free(a);
	hf_lock_free(b);
}

/* The holder of waiter_woken_by_release: acquire, report the fence on
 * fds[1], release when fds[0] gives a byte. */
static int fds_hold[2], fds_go[2];
static int hold_fn(void *arg)
{
	(void)arg;
	hf_lock *a = lock_on_etcd("w");
	if (hf_lock_acquire(a) < 0)
		return 1;
	uint64_t f = hf_lock_fence(a);
	char b;
	if (write(fds_hold[1], &f, sizeof f) != sizeof f || read(fds_go[0], &b, 1) != 1)
		return 2;
	int rc = hf_lock_release(a);
	hf_lock_free(a);
	return rc == 0 ? 0 : 3;
}

static int wait_fn(void *arg)
{
	(void)arg;
	hf_lock *b = lock_on_etcd("w");
	hf_lock_set(b, HF_OPT_WAIT_MS, -1);
	int rc = hf_lock_acquire(b);
	uint64_t f = rc == 0 ? hf_lock_fence(b) : 0;
	if (write(fds_hold[1], &f, sizeof f) != sizeof f)
		return 2;
	hf_lock_free(b);
	return rc == 0 ? 0 : 1;
}

/* A waiter woken by the release (the watch, EL4), with the release made
 * after the waiter judged the lock held and before its watch started: the
 * watch from the next revision still sees it. Both are children forked
 * before this process runs a keep-alive thread of its own (a child forked
 * beside running threads may only exec). Its wait is unbounded; the test
 * bounds it. */
Test(etcd_api, waiter_woken_by_release)
{
	cr_assert_eq(pipe(fds_hold), 0);
	cr_assert_eq(pipe(fds_go), 0);
	struct hft_child h, w;
	hft_spawn_fn(&h, NULL, hold_fn, NULL);
	uint64_t fa = 0, fb = 0;
	cr_assert_eq(read(fds_hold[0], &fa, sizeof fa), (ssize_t)sizeof fa);
	cr_assert_gt(fa, 0);
	hft_spawn_fn(&w, "pause:etcdlock.acquire.judged", wait_fn, NULL);
	hft_expect(&w, "etcdlock.acquire.judged"); /* it found the lock held */
	cr_assert_eq(write(fds_go[1], "x", 1), 1);
	int st = hft_exit_within(h.pid, 60000);
	cr_assert_eq(st, 0, "the holder: %d", st);
	hft_go(&w);
	st = hft_exit_within(w.pid, 60000);
	if (st < 0)
		kill(w.pid, SIGKILL), hft_exit_within(w.pid, 10000);
	cr_assert_eq(st, 0, "the waiter did not wake on the release");
	cr_assert_eq(read(fds_hold[0], &fb, sizeof fb), (ssize_t)sizeof fb);
	cr_assert_gt(fb, fa);
	close(fds_hold[0]);
	close(fds_hold[1]);
	close(fds_go[0]);
	close(fds_go[1]);
}

Test(etcd_api, etcd_stopped_clear_error_within_timeout)
{
	hf_lock *a = lock_on_etcd("s");
	cr_assert_eq(hf_lock_set(a, HF_OPT_TIMEOUT_MS, 2000), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	et_kill();
	int64_t t0 = et_mono_ms();
	cr_assert_eq(hf_lock_check(a), -EIO);
	const char *why = hf_rec_str(hf_lock_holder(a), "reason");
	cr_assert(why && strstr(why, "etcd http://127.0.0.1:"), "%s", why ? why : "(none)");
	cr_assert_eq(hf_lock_release(a), -EIO, "a release that failed must say so");
	cr_assert_lt(et_mono_ms() - t0, 20000);
	hf_lock_free(a); /* its release fails again: freed all the same */
}

Test(etcd_api, options)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new("x.lock", &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, "http://x:1"), -EINVAL);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, "etcd://"), -EINVAL);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, "etcd://h:0"), -EINVAL);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, "etcd://h:1,"), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, "etcd://a:1,https://b:2"), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, "file"), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, NULL), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_ETCD_USER, ""), -EINVAL);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_WAIT_MS, "x"), -EINVAL);
	cr_assert_eq(hf_lock_set(l, HF_OPT_TTL_MS, 999), -EINVAL);
	cr_assert_eq(hf_lock_set(l, HF_OPT_TTL_MS, 5000), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_TIMEOUT_MS, -1), -EINVAL);
	cr_assert_eq(hf_lock_keep(l), -EOPNOTSUPP);
	hf_lock_free(l);
}

/* Endpoints tried in turn: a dead one first, then E's. */
Test(etcd_api, endpoints_tried_in_turn)
{
	char path[600], uri[160];
	snprintf(path, sizeof path, "%s/t", et_dir);
	snprintf(uri, sizeof uri, "etcd://127.0.0.1:1,%s", E.endpoint);
	hf_lock *l;
	cr_assert_eq(hf_lock_new(path, &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, uri), 0);
	cr_assert_eq(hf_lock_acquire(l), 0, "%s", hf_lock_holder(l) ? hf_rec_json(hf_lock_holder(l)) : "");
	cr_assert_eq(hf_lock_release(l), 0);
	hf_lock_free(l);
}
