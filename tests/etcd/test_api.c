/*
 * test_api.c - the directory lock on etcd through the library: acquire,
 * conflict naming the holder, release, check, query, fences, the
 * keep-alive thread, cancel, a stopped etcd, options.
 */
#include "et.h"
#include "faults.h"
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

/* Arm the fault rules (or none: "") in this process. */
static void faults(const char *rules)
{
	char why[200];
	cr_assert_eq(hf_fault_inject(rules, why, sizeof why), 0, "%s", why);
}

static hf_lock *lock_on_etcd(const char *name)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", et_dir, name);
	hf_lock *l;
	cr_assert_eq(hf_lock_new(path, &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, E.uri), 0);
	return l;
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
	cr_assert_eq(et_num(h, "pid"), getpid());
	cr_assert_eq((uint64_t)et_num(h, "fence"), fence);
	cr_assert_str_eq(et_str(h, "token"), hf_lock_token(a));
	cr_assert_str_eq(et_str(h, "state"), "held");
	et_str(h, "host");
	et_str(h, "comm");
	et_num(h, "age_ms");
	cr_assert_eq(hf_lock_check(a), 0);
	hf_rec *q;
	cr_assert_eq(hf_lock_query(b, &q), 0);
	cr_assert_str_eq(et_str(q, "state"), "held");
	cr_assert_str_eq(et_str(q, "backend"), "etcd");
	cr_assert_eq((uint64_t)et_num(q, "fence"), fence);
	hf_rec_free(q);
	/* release by the token from another handle: the CLI's way */
	cr_assert_eq(hf_lock_adopt(b, hf_lock_token(a)), 0);
	cr_assert_eq(hf_lock_check(b), 0);
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_check(a), HF_ELOST);
	cr_assert_eq(hf_lock_release(a), HF_ENOTHELD);
	cr_assert_eq(hf_lock_release(b), HF_ENOTHELD);
	cr_assert_eq(hf_lock_query(b, &q), 0);
	cr_assert_str_eq(et_str(q, "state"), "free");
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
	cr_assert_eq(et_num(hf_lock_holder(b), "pid"), getpid());
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
	cr_assert_eq(hf_lock_set(a, HF_OPT_THREAD, 1), 0); /* another thread's: waited for (HL5) */
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
	cr_assert_eq(hf_lock_set(a, HF_OPT_THREAD, 1), 0); /* another thread's: waited for (HL5) */
	cr_assert_eq(hf_lock_acquire(a), 0);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_CANCEL_FD, p[0]), 0);
	cr_assert_eq(hf_lock_acquire(b), HF_ECANCELED);
	cr_assert_eq(et_num(hf_lock_holder(b), "pid"), getpid());
	close(p[0]);
	close(p[1]);
	hf_lock_free(a);
	hf_lock_free(b);
}

/* HL5 on etcd: a thread's wait for its own hold is refused at once. */
Test(etcd_api, a_thread_never_waits_for_its_own_hold)
{
	hf_lock *a = lock_on_etcd("s"), *b = lock_on_etcd("s");
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(hf_lock_set(b, HF_OPT_WAIT_MS, -1), 0);
	cr_assert_eq(hf_lock_acquire(b), -EDEADLK);
	cr_assert_eq(et_num(hf_lock_holder(b), "pid"), getpid());
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_acquire(b), 0, "released: the wait takes it");
	cr_assert_eq(hf_lock_release(b), 0);
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

/* ---- renew (etcdlock.c R1-R3, EL6, EL7) -------------------------------- */

static const char *rec_state(hf_lock *l)
{
	static char st[32];
	hf_rec *q = NULL;
	cr_assert_eq(hf_lock_query(l, &q), 0);
	const char *s = hf_rec_str(q, "state");
	snprintf(st, sizeof st, "%s", s ? s : "?");
	hf_rec_free(q);
	return st;
}

/* A record over-age (dated 10 min back, max-hold 2 s: past the 60 s stale
 * window too) is renewed: the window starts again, so a taker that judges
 * its age (step 4) leaves it alone - while the same record not renewed is
 * taken (the control). The fence and the lease stay (EL7). */
Test(etcd_api, renew_restarts_the_window)
{
	hf_lock *a = lock_on_etcd("rw"), *c = lock_on_etcd("cw");
	char pa[600], pc[600];
	snprintf(pa, sizeof pa, "%s/rw", et_dir);
	snprintf(pc, sizeof pc, "%s/cw", et_dir);
	hf_lock_set(a, HF_OPT_MAX_HOLD_MS, 2000);
	hf_lock_set(c, HF_OPT_MAX_HOLD_MS, 2000);
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_eq(hf_lock_acquire(c), 0);
	uint64_t f = hf_lock_fence(a);
	int64_t lease0 = 0, cr0 = 0, mod0 = 0, lease1 = 0, cr1 = 0, mod1 = 0;
	et_lock_kv(pa, &lease0, &cr0, &mod0);
	cr_assert_eq((uint64_t)(et_epoch(NULL) + cr0), f, "EL10: the fence is the epoch + create_revision");
	et_lock_backdate(pa, 600000);
	et_lock_backdate(pc, 600000);
	cr_assert_str_eq(rec_state(a), "leaked");
	cr_assert_str_eq(rec_state(c), "leaked");
	cr_assert_eq(hf_lock_renew(a), 0, "%s", hf_rec_json(hf_lock_holder(a)));
	cr_assert_str_eq(rec_state(a), "held");
	cr_assert_eq(hf_lock_fence(a), f);
	et_lock_kv(pa, &lease1, &cr1, &mod1);
	cr_assert_eq(lease1, lease0, "the renewal changed the lease");
	cr_assert_eq(cr1, cr0, "the renewal changed the fence");
	cr_assert_gt(mod1, mod0);
	const hf_rec *h = hf_lock_holder(a);
	int64_t mh = 0, fence = 0;
	cr_assert_eq(hf_rec_int(h, "max_hold_ms", &mh), 0);
	cr_assert_eq(mh, 2000, "the recorded max-hold is kept");
	cr_assert_eq(hf_rec_int(h, "fence", &fence), 0);
	cr_assert_eq((uint64_t)fence, f);
	hf_lock *b = lock_on_etcd("rw"), *d = lock_on_etcd("cw");
	cr_assert_eq(hf_lock_acquire(b), HF_EHELD, "the renewed lock was taken");
	cr_assert_eq(hf_lock_acquire(d), 0, "the control was not judged over-age");
	cr_assert_eq(hf_lock_check(a), 0);
	/* a renewal with a max-hold of its own records it */
	hf_lock_set(a, HF_OPT_MAX_HOLD_MS, HF_MAX_HOLD_NONE);
	cr_assert_eq(hf_lock_renew(a), 0);
	cr_assert_eq(hf_rec_int(hf_lock_holder(a), "max_hold_ms", &mh), 0);
	cr_assert_eq(mh, HF_MAX_HOLD_NONE);
	/* the control's first holder: taken over - another token holds it */
	cr_assert_eq(hf_lock_renew(c), HF_ENOTYOURS);
	cr_assert_str_eq(hf_rec_str(hf_lock_holder(c), "token"), hf_lock_token(d));
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_renew(a), HF_ENOTHELD);
	hf_lock_free(a);
	hf_lock_free(b);
	hf_lock_free(c);
	hf_lock_free(d);
}

/* An adopted token renews the keeper's lock (the CLI's way); a wrong one
 * renews nothing. */
Test(etcd_api, renew_by_adopted_token)
{
	hf_lock *a = lock_on_etcd("ad");
	char pa[600];
	snprintf(pa, sizeof pa, "%s/ad", et_dir);
	cr_assert_eq(hf_lock_acquire(a), 0);
	uint64_t f = hf_lock_fence(a);
	et_lock_backdate(pa, 900000);
	hf_lock *t = lock_on_etcd("ad"), *w = lock_on_etcd("ad");
	cr_assert_eq(hf_lock_adopt(t, hf_lock_token(a)), 0);
	cr_assert_eq(hf_lock_adopt(w, "0123456789abcdef0123456789abcdef"), 0);
	cr_assert_eq(hf_lock_renew(w), HF_ENOTYOURS);
	cr_assert_str_eq(hf_rec_str(hf_lock_holder(w), "token"), hf_lock_token(a));
	cr_assert_str_eq(rec_state(a), "leaked");
	cr_assert_eq(hf_lock_renew(t), 0);
	cr_assert_eq(hf_lock_fence(t), f, "the adopted token learns the fence");
	cr_assert_str_eq(rec_state(a), "held");
	cr_assert_eq(hf_lock_check(a), 0);
	hf_lock_free(w);
	hf_lock_free(t); /* adopted: releases nothing (HL2) */
	cr_assert_eq(hf_lock_check(a), 0);
	hf_lock_free(a);
}

static char renew_path[600];

/* Acquire, renew (paused after R1's read by the test), say how it ended:
 * 0 HF_ELOST with the record left as the test made it, else a code. */
static int renewer_fn(void *arg)
{
	int64_t *min_age = arg;
	hf_lock *l;
	if (hf_lock_new(renew_path, &l) < 0 || hf_lock_set_str(l, HF_OPT_BACKEND, E.uri) < 0 ||
	    hf_lock_acquire(l) < 0)
		return 2;
	int rc = hf_lock_renew(l); /* the test acts at etcdlock.renew.judged */
	if (rc != HF_ELOST)
		return rc == 0 ? 3 : 4;
	hf_rec *q = NULL;
	if (hf_lock_query(l, &q) < 0)
		return 5;
	int64_t age = 0;
	const char *st = hf_rec_str(q, "state");
	bool left = *min_age ? hf_rec_int(q, "age_ms", &age) == 0 && age >= *min_age
			     : st && !strcmp(st, "free");
	hf_rec_free(q);
	hf_lock_free(l);
	return left ? 0 : 6;
}

/* EL6: the record changed between the renewal's read and its txn (another
 * write to the key, with the same lease): HF_ELOST, and the other write
 * stays - the renewal never writes over what it did not judge. */
Test(etcd_api, renew_loses_to_a_write_after_its_read)
{
	snprintf(renew_path, sizeof renew_path, "%s/race", et_dir);
	static int64_t min_age = 500000;
	struct hft_child r;
	hft_spawn_fn(&r, "pause:etcdlock.renew.judged", renewer_fn, &min_age);
	hft_expect(&r, "etcdlock.renew.judged");
	et_lock_backdate(renew_path, 600000);
	hft_go(&r);
	int st = hft_exit_within(r.pid, 60000);
	cr_assert_eq(st, 0, "renewer: %d", st);
}

/* EL6: the key deleted (its lease revoked: a release, a reap) between the
 * read and the txn: HF_ELOST, and no key is made again. */
Test(etcd_api, renew_after_a_revoke_makes_no_key)
{
	snprintf(renew_path, sizeof renew_path, "%s/rev", et_dir);
	static int64_t min_age = 0;
	struct hft_child r;
	hft_spawn_fn(&r, "pause:etcdlock.renew.judged", renewer_fn, &min_age);
	hft_expect(&r, "etcdlock.renew.judged");
	int64_t lease = 0;
	et_lock_kv(renew_path, &lease, NULL, NULL);
	char *args = et_fmt("lease revoke %llx", (unsigned long long)lease), *out = NULL;
	cr_assert_eq(et_ctl(args, &out), 0, "%s", out);
	free(out);
	free(args);
	hft_go(&r);
	int st = hft_exit_within(r.pid, 60000);
	cr_assert_eq(st, 0, "renewer: %d", st);
}

/* A waiting acquisition whose put-if-absent txn etcd applied but whose
 * answer was lost (the 2nd answer: the grant's is the 1st) judges again
 * (EL9) and recognises its own put: it holds the lock with that put's
 * fence, and its release frees it. */
Test(etcd_api, waiting_acquire_whose_answer_was_lost_finds_its_own)
{
	hf_lock *l = lock_on_etcd("lost");
	cr_assert_eq(hf_lock_set(l, HF_OPT_WAIT_MS, 5000), 0);
	faults("fail:etcd_answer:2:EIO");
	int rc = hf_lock_acquire(l);
	cr_assert_eq(rc, 0, "%s", hf_error_name(rc));
	hf_rec *q = NULL;
	cr_assert_eq(hf_lock_query(l, &q), 0);
	const char *tok = hf_rec_str(q, "token");
	cr_assert(tok && !strcmp(tok, hf_lock_token(l)), "held by %s", tok ? tok : "nobody");
	int64_t fence = 0;
	cr_assert_eq(hf_rec_int(q, "fence", &fence), 0);
	cr_assert_eq((uint64_t)fence, hf_lock_fence(l));
	hf_rec_free(q);
	cr_assert_eq(hf_lock_release(l), 0);
	cr_assert_eq(hf_lock_acquire(l), 0, "the release did not free it");
	cr_assert_eq(hf_lock_release(l), 0);
	hf_lock_free(l);
}

/* A holder whose keep-alive gave up (every answer lost for a TTL: etcd
 * renewed the lease, the holder could not know it) is told its renew is
 * lost (LE2), though etcd still keeps its key: nothing would keep that
 * lease alive after the renew. */
Test(etcd_api, renew_after_the_keepalive_gave_up_is_lost)
{
	hf_lock *l = lock_on_etcd("gaveup");
	cr_assert_eq(hf_lock_set(l, HF_OPT_TTL_MS, 3000), 0);
	cr_assert_eq(hf_lock_acquire(l), 0);
	int64_t t = et_mono_ms();
	faults("fail:etcd_answer:1:EIO:persist");
	while (et_mono_ms() < t + 3000 + 300)
		usleep(50000); /* the holder's proof of its lease runs out (LE2) */
	faults("");
	int rc = hf_lock_renew(l);
	cr_assert_eq(rc, HF_ELOST, "renewed: %s", hf_error_name(rc));
	cr_assert_eq(hf_lock_check(l), HF_ELOST);
	hf_lock_release(l); /* its lease: revoked, or gone already */
	hf_lock_free(l);
}

/* A release whose revoke etcd applied but whose answer was lost revokes
 * once more (idempotent): "no such lease" then is our own lease gone, so
 * the release succeeds and the lock is free. */
Test(etcd_api, release_whose_answer_was_lost_succeeds)
{
	hf_lock *l = lock_on_etcd("relost");
	cr_assert_eq(hf_lock_acquire(l), 0);
	faults("fail:etcd_answer:1:EIO");
	int rc = hf_lock_release(l);
	faults("");
	cr_assert_eq(rc, 0, "%s", hf_error_name(rc));
	hf_rec *q = NULL;
	cr_assert_eq(hf_lock_query(l, &q), 0);
	cr_assert_str_eq(hf_rec_str(q, "state"), "free");
	hf_rec_free(q);
	hf_lock_free(l);
}
