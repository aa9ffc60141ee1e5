/*
 * test_modes.c - shared and slot acquisitions of the lock on etcd
 * (etcdlock.c EL11-EL15) through the library: readers share while a writer
 * waits and enters after they release; a waiting writer is not starved by
 * readers that come after it; slots N admit N; a SIGKILLed reader's place
 * comes back after its lease's TTL; status and list show every holder,
 * a status every waiting acquisition too (first, "waiting": true); fences
 * ordered.
 *
 * Holders that wait are children ("actors") forked before this process
 * runs a keep-alive thread of its own (a child forked beside running
 * threads may only exec), driven by pipes; a wait is seen by the named
 * point etcdlock.acquire.judged (judged blocked, about to watch).
 */
#include "et.h"
#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

ET_SUITE(etcd_modes, 240);

static hf_lock *lock_on_etcd(const char *name)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", et_dir, name);
	hf_lock *l;
	cr_assert_eq(hf_lock_new(path, &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, E.uri), 0);
	return l;
}

static hf_lock *lock_mode(const char *name, int mode, int slots)
{
	hf_lock *l = lock_on_etcd(name);
	cr_assert_eq(hf_lock_set(l, HF_OPT_MODE, mode), 0);
	if (slots)
		cr_assert_eq(hf_lock_set(l, HF_OPT_SLOTS, slots), 0);
	return l;
}


/* ---- actors: a child holding one handle, told what to do on a pipe ---- */

struct actor {
	struct hft_child c;
	int cmd[2], res[2];
	const char *name;        /* the lock, in et_dir                        */
	int mode, slots;
	int64_t ttl_ms;          /* 0: the default                             */
	pid_t owner;             /* HF_OPT_PID (0: itself)                     */
};

struct result {
	int rc;
	uint64_t fence;
	char token[40];
};

static int actor_fn(void *arg)
{
	struct actor *a = arg;
	close(a->cmd[1]);
	close(a->res[0]);
	char path[600];
	snprintf(path, sizeof path, "%s/%s", et_dir, a->name);
	hf_lock *l;
	if (hf_lock_new(path, &l) < 0 || hf_lock_set_str(l, HF_OPT_BACKEND, E.uri) < 0 ||
	    hf_lock_set(l, HF_OPT_MODE, a->mode) < 0 ||
	    (a->slots && hf_lock_set(l, HF_OPT_SLOTS, a->slots) < 0) ||
	    (a->ttl_ms && hf_lock_set(l, HF_OPT_TTL_MS, a->ttl_ms) < 0) ||
	    (a->owner && hf_lock_set(l, HF_OPT_PID, a->owner) < 0) ||
	    hf_lock_set(l, HF_OPT_WAIT_MS, -1) < 0)
		return 10;
	char c;
	while (read(a->cmd[0], &c, 1) == 1 && c != 'q') {
		struct result r;
		memset(&r, 0, sizeof r);
		if (c == 'a') {
			r.rc = hf_lock_acquire(l);
			if (r.rc == 0) {
				r.fence = hf_lock_fence(l);
				snprintf(r.token, sizeof r.token, "%s", hf_lock_token(l));
			}
		} else {
			r.rc = hf_lock_release(l);
		}
		if (write(a->res[1], &r, sizeof r) != sizeof r)
			return 11;
	}
	hf_lock_free(l);
	return 0;
}

static void actor_start(struct actor *a, const char *rules)
{
	cr_assert_eq(pipe(a->cmd), 0);
	cr_assert_eq(pipe(a->res), 0);
	hft_spawn_fn(&a->c, rules, actor_fn, a);
	close(a->cmd[0]);
	close(a->res[1]);
}

static void actor_tell(struct actor *a, char what)
{
	cr_assert_eq(write(a->cmd[1], &what, 1), 1);
}

/* The actor's answer, within 60 s (a bound against a hang). */
static struct result actor_result(struct actor *a)
{
	struct pollfd p = { .fd = a->res[0], .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 60000), 1, "actor %d did not answer", a->c.pid);
	struct result r;
	cr_assert_eq(read(a->res[0], &r, sizeof r), (ssize_t)sizeof r, "actor %d ended", a->c.pid);
	return r;
}

static struct result actor_do(struct actor *a, char what)
{
	actor_tell(a, what);
	return actor_result(a);
}

/* Quit (its handle freed: released) and reaped. */
static void actor_stop(struct actor *a)
{
	actor_tell(a, 'q');
	int st = hft_exit_within(a->c.pid, 30000);
	cr_assert_eq(st, 0, "actor %d: %d", a->c.pid, st);
	close(a->cmd[1]);
	close(a->res[0]);
}

/* The lock's status record now, through a handle of its own. */
static hf_rec *query(const char *name)
{
	hf_lock *q = lock_on_etcd(name);
	hf_rec *r = NULL;
	cr_assert_eq(hf_lock_query(q, &r), 0);
	hf_lock_free(q);
	return r;
}

/* holders.I of status q is an acquisition still waiting (EL15): pid's, in
 * mode. */
static void expect_waiting(const hf_rec *q, int i, pid_t pid, const char *mode)
{
	char f[48];
	snprintf(f, sizeof f, "holders.%d.waiting", i);
	cr_assert_eq(et_num(q, f), 1, "%s not waiting: %s", f, hf_rec_json(q));
	snprintf(f, sizeof f, "holders.%d.pid", i);
	cr_assert_eq(et_num(q, f), pid, "%s: %s", f, hf_rec_json(q));
	snprintf(f, sizeof f, "holders.%d.mode", i);
	cr_assert_str_eq(et_str(q, f), mode, "%s", hf_rec_json(q));
}

/* Readers share; a writer finds them, waits, is still waiting after the
 * first one's release, and enters only after the last one's - with a fence
 * above both of theirs (EL13, EL14). */
Test(etcd_modes, readers_share_writer_waits_until_they_release)
{
	struct actor r1 = { .name = "rw", .mode = HF_MODE_SHARED };
	struct actor r2 = r1;
	struct actor w = { .name = "rw", .mode = HF_MODE_EXCLUSIVE };
	actor_start(&r1, NULL);
	actor_start(&r2, NULL);
	actor_start(&w, "pause:etcdlock.acquire.judged:1;pause:etcdlock.acquire.judged:2");
	struct result a = actor_do(&r1, 'a'), b = actor_do(&r2, 'a');
	cr_assert_eq(a.rc, 0, "the first reader: %d", a.rc);
	cr_assert_eq(b.rc, 0, "the second reader shares: %d", b.rc);
	cr_assert_gt(b.fence, a.fence);
	hf_rec *q = query("rw");
	cr_assert_str_eq(et_str(q, "mode"), "shared");
	cr_assert_eq(hf_rec_len(q, "holders"), 2, "%s", hf_rec_json(q));
	hf_rec_free(q);
	actor_tell(&w, 'a');
	hft_expect(&w.c, "etcdlock.acquire.judged"); /* it found the readers */
	q = query("rw"); /* the status names the writer waiting first (EL15) */
	cr_assert_eq(hf_rec_len(q, "holders"), 3, "%s", hf_rec_json(q));
	expect_waiting(q, 0, w.c.pid, "exclusive");
	cr_assert_str_eq(et_str(q, "holders.1.token"), a.token);
	cr_assert_str_eq(et_str(q, "holders.2.token"), b.token);
	cr_assert_str_eq(et_str(q, "mode"), "shared", "the lock's fields are its first holder's");
	hf_rec_free(q);
	hft_go(&w.c);
	cr_assert_eq(actor_do(&r1, 'r').rc, 0);
	hft_expect(&w.c, "etcdlock.acquire.judged"); /* woken, judged again: r2 */
	q = query("rw");
	cr_assert_eq(hf_rec_len(q, "holders"), 2, "%s", hf_rec_json(q));
	expect_waiting(q, 0, w.c.pid, "exclusive"); /* not entered beside a reader */
	cr_assert_str_eq(et_str(q, "holders.1.token"), b.token);
	hf_rec_free(q);
	hft_go(&w.c);
	cr_assert_eq(actor_do(&r2, 'r').rc, 0);
	struct result c = actor_result(&w);
	cr_assert_eq(c.rc, 0, "the writer: %d", c.rc);
	cr_assert_gt(c.fence, b.fence);
	q = query("rw");
	cr_assert_str_eq(et_str(q, "mode"), "exclusive");
	cr_assert_str_eq(et_str(q, "token"), c.token);
	cr_assert_eq(hf_rec_len(q, "holders"), 1);
	hf_rec_free(q);
	actor_stop(&w);
	actor_stop(&r1);
	actor_stop(&r2);
}

/* A writer waits for a reader; readers that come after it queue behind it
 * (a try-once one is refused naming the writer), the writer enters at the
 * reader's release, and the late reader only at the writer's, with a
 * greater fence (EL13, EL14). */
Test(etcd_modes, waiting_writer_not_starved_by_new_readers)
{
	struct actor r1 = { .name = "st", .mode = HF_MODE_SHARED };
	struct actor r3 = { .name = "st", .mode = HF_MODE_SHARED };
	struct actor w = { .name = "st", .mode = HF_MODE_EXCLUSIVE };
	actor_start(&r1, NULL);
	actor_start(&w, "pause:etcdlock.acquire.judged:1");
	actor_start(&r3, "pause:etcdlock.acquire.judged:1");
	struct result a = actor_do(&r1, 'a');
	cr_assert_eq(a.rc, 0, "the reader: %d", a.rc);
	actor_tell(&w, 'a');
	hft_expect(&w.c, "etcdlock.acquire.judged");
	hft_go(&w.c); /* the writer waits for r1 */
	hf_lock *late = lock_mode("st", HF_MODE_SHARED, 0);
	cr_assert_eq(hf_lock_acquire(late), HF_EHELD, "a reader passed a waiting writer");
	cr_assert_eq(et_num(hf_lock_holder(late), "pid"), w.c.pid, "%s",
		     hf_rec_json(hf_lock_holder(late)));
	hf_lock_free(late);
	actor_tell(&r3, 'a');
	hft_expect(&r3.c, "etcdlock.acquire.judged"); /* it queues behind the writer */
	hft_go(&r3.c);
	hf_rec *q = query("st"); /* the waiting ones first, in order (EL15) */
	cr_assert_eq(hf_rec_len(q, "holders"), 3, "%s", hf_rec_json(q));
	expect_waiting(q, 0, w.c.pid, "exclusive");
	expect_waiting(q, 1, r3.c.pid, "shared");
	cr_assert_str_eq(et_str(q, "holders.2.token"), a.token);
	hf_rec_free(q);
	cr_assert_eq(actor_do(&r1, 'r').rc, 0);
	struct result c = actor_result(&w);
	cr_assert_eq(c.rc, 0, "the writer: %d", c.rc);
	cr_assert_gt(c.fence, a.fence);
	q = query("st");
	cr_assert_str_eq(et_str(q, "mode"), "exclusive");
	cr_assert_eq(hf_rec_len(q, "holders"), 2, "%s", hf_rec_json(q));
	expect_waiting(q, 0, r3.c.pid, "shared"); /* not entered beside the writer */
	cr_assert_str_eq(et_str(q, "holders.1.token"), c.token);
	hf_rec_free(q);
	cr_assert_eq(actor_do(&w, 'r').rc, 0);
	struct result d = actor_result(&r3);
	cr_assert_eq(d.rc, 0, "the late reader: %d", d.rc);
	cr_assert_gt(d.fence, c.fence);
	actor_stop(&w);
	actor_stop(&r1);
	actor_stop(&r3);
}

/* Slots 2: two enter, the third waits (a try-once one is refused) and
 * enters at the first one's release (EL13, EL14). */
Test(etcd_modes, slots_two_admit_two_the_third_waits)
{
	struct actor s1 = { .name = "sl", .mode = HF_MODE_SLOTS, .slots = 2 };
	struct actor s2 = s1, s3 = s1;
	actor_start(&s1, NULL);
	actor_start(&s2, NULL);
	actor_start(&s3, "pause:etcdlock.acquire.judged:1");
	struct result a = actor_do(&s1, 'a'), b = actor_do(&s2, 'a');
	cr_assert_eq(a.rc, 0, "%d", a.rc);
	cr_assert_eq(b.rc, 0, "the second slot: %d", b.rc);
	actor_tell(&s3, 'a');
	hft_expect(&s3.c, "etcdlock.acquire.judged"); /* a third waits */
	hft_go(&s3.c);
	hf_lock *t = lock_mode("sl", HF_MODE_SLOTS, 2);
	cr_assert_eq(hf_lock_acquire(t), HF_EHELD, "a third slot of 2 entered");
	hf_lock_free(t);
	hf_rec *q = query("sl");
	cr_assert_str_eq(et_str(q, "mode"), "slots");
	cr_assert_eq(et_num(q, "slots"), 2);
	cr_assert_eq(hf_rec_len(q, "holders"), 3, "%s", hf_rec_json(q));
	expect_waiting(q, 0, s3.c.pid, "slots");
	cr_assert_str_eq(et_str(q, "holders.1.mode"), "slots");
	cr_assert_str_eq(et_str(q, "holders.1.token"), a.token);
	cr_assert_str_eq(et_str(q, "holders.2.token"), b.token);
	hf_rec_free(q);
	/* a shared acquirer never shares with slot holders */
	hf_lock *sh = lock_mode("sl", HF_MODE_SHARED, 0);
	cr_assert_eq(hf_lock_acquire(sh), HF_EHELD);
	hf_lock_free(sh);
	cr_assert_eq(actor_do(&s1, 'r').rc, 0);
	struct result c = actor_result(&s3);
	cr_assert_eq(c.rc, 0, "the third slot: %d", c.rc);
	cr_assert_gt(c.fence, b.fence);
	q = query("sl");
	cr_assert_eq(hf_rec_len(q, "holders"), 2, "%s", hf_rec_json(q));
	cr_assert_str_eq(et_str(q, "holders.0.token"), b.token);
	cr_assert_str_eq(et_str(q, "holders.1.token"), c.token);
	hf_rec_free(q);
	actor_stop(&s1);
	actor_stop(&s2);
	actor_stop(&s3);
}

/* A reader (and a slot holder) SIGKILLed while its owner lives on (a
 * `sleep`: no pid proves it dead) frees its place when its lease's TTL
 * (1 s) runs out: a writer (a slot acquirer) refused at once then gets it
 * by waiting. The time it took is reported, not asserted. */
Test(etcd_modes, sigkilled_reader_frees_its_place_after_its_ttl)
{
	pid_t owner = et_sleeper();
	struct actor r = { .name = "kr", .mode = HF_MODE_SHARED, .ttl_ms = 1000, .owner = owner };
	struct actor s = { .name = "ks", .mode = HF_MODE_SLOTS, .slots = 1, .ttl_ms = 1000,
			   .owner = owner };
	actor_start(&r, NULL);
	actor_start(&s, NULL);
	struct result a = actor_do(&r, 'a'), b = actor_do(&s, 'a');
	cr_assert_eq(a.rc, 0, "%d", a.rc);
	cr_assert_eq(b.rc, 0, "%d", b.rc);
	cr_assert_eq(kill(r.c.pid, SIGKILL), 0);
	cr_assert_eq(kill(s.c.pid, SIGKILL), 0);
	cr_assert_eq(hft_exit_within(r.c.pid, 30000), 128 + SIGKILL);
	cr_assert_eq(hft_exit_within(s.c.pid, 30000), 128 + SIGKILL);
	close(r.cmd[1]);
	close(r.res[0]);
	close(s.cmd[1]);
	close(s.res[0]);
	hf_lock *w = lock_on_etcd("kr"), *t = lock_mode("ks", HF_MODE_SLOTS, 1);
	cr_assert_eq(hf_lock_acquire(w), HF_EHELD, "the killed reader's owner lives: held");
	cr_assert_eq(hf_lock_acquire(t), HF_EHELD);
	cr_assert_eq(hf_lock_set(w, HF_OPT_WAIT_MS, 30000), 0);
	cr_assert_eq(hf_lock_set(t, HF_OPT_WAIT_MS, 30000), 0);
	int64_t t0 = et_mono_ms();
	cr_assert_eq(hf_lock_acquire(w), 0, "the reader's place never came back");
	int64_t t1 = et_mono_ms();
	cr_assert_eq(hf_lock_acquire(t), 0, "the slot never came back");
	cr_log_info("writer in after %lld ms, slot after %lld ms (TTL 1000 ms)",
		    (long long)(t1 - t0), (long long)(et_mono_ms() - t0));
	cr_assert_gt(hf_lock_fence(w), a.fence);
	cr_assert_gt(hf_lock_fence(t), b.fence);
	hf_lock_free(w);
	hf_lock_free(t);
	et_reap(owner);
}

/* Status and list name every holder, each with its mode, token, fence and
 * key; check, renew and release by token work for a shared holder. */
Test(etcd_modes, status_json_lists_every_holder)
{
	hf_lock *a = lock_mode("js", HF_MODE_SHARED, 0), *b = lock_mode("js", HF_MODE_SHARED, 0);
	cr_assert_eq(hf_lock_acquire(a), 0, "%s", hf_lock_holder(a) ? hf_rec_json(hf_lock_holder(a)) : "");
	cr_assert_eq(hf_lock_acquire(b), 0);
	hf_rec *q = query("js");
	cr_assert_str_eq(et_str(q, "state"), "held");
	cr_assert_str_eq(et_str(q, "mode"), "shared");
	cr_assert_eq(hf_rec_len(q, "holders"), 2, "%s", hf_rec_json(q));
	hf_lock *h[2] = { a, b };
	for (int i = 0; i < 2; i++) {
		char f[64];
		snprintf(f, sizeof f, "holders.%d.token", i);
		cr_assert_str_eq(et_str(q, f), hf_lock_token(h[i]));
		snprintf(f, sizeof f, "holders.%d.mode", i);
		cr_assert_str_eq(et_str(q, f), "shared");
		snprintf(f, sizeof f, "holders.%d.fence", i);
		cr_assert_eq((uint64_t)et_num(q, f), hf_lock_fence(h[i]));
		snprintf(f, sizeof f, "holders.%d.pid", i);
		cr_assert_eq(et_num(q, f), getpid());
		snprintf(f, sizeof f, "holders.%d.key", i);
		const char *k = et_str(q, f);
		cr_assert(strstr(k, "//") && !strcmp(strstr(k, "//") + 2, hf_lock_token(h[i])), "%s", k);
	}
	hf_rec_free(q);
	cr_assert_eq(hf_lock_check(a), 0);
	cr_assert_eq(hf_lock_check(b), 0);
	/* the listing: one item for the lock, its holders in it */
	hf_lock *d = lock_on_etcd("js");
	hf_rec *ls = NULL;
	cr_assert_eq(hf_lock_list(d, &ls), 0);
	cr_assert_eq(hf_rec_len(ls, "locks"), 1, "%s", hf_rec_json(ls));
	cr_assert_eq(hf_rec_len(ls, "locks.0.holders"), 2, "%s", hf_rec_json(ls));
	cr_assert_str_eq(et_str(ls, "locks.0.mode"), "shared");
	hf_rec_free(ls);
	/* renew keeps the fence and the mode */
	uint64_t fb = hf_lock_fence(b);
	cr_assert_eq(hf_lock_renew(b), 0, "%s", hf_lock_holder(b) ? hf_rec_json(hf_lock_holder(b)) : "");
	cr_assert_eq(hf_lock_fence(b), fb);
	/* release by a's token from another handle */
	cr_assert_eq(hf_lock_adopt(d, hf_lock_token(a)), 0);
	cr_assert_eq(hf_lock_release(d), 0);
	cr_assert_eq(hf_lock_check(a), HF_ELOST);
	q = query("js");
	cr_assert_eq(hf_rec_len(q, "holders"), 1, "%s", hf_rec_json(q));
	cr_assert_str_eq(et_str(q, "holders.0.token"), hf_lock_token(b));
	cr_assert_str_eq(et_str(q, "holders.0.mode"), "shared");
	hf_rec_free(q);
	cr_assert_eq(hf_lock_release(b), 0);
	q = query("js");
	cr_assert_str_eq(et_str(q, "state"), "free");
	cr_assert_eq(hf_rec_len(q, "holders"), 0);
	hf_rec_free(q);
	hf_lock_free(a);
	hf_lock_free(b);
	hf_lock_free(d);
}

/* Fences grow across modes: every acquisition's above the one before it. */
Test(etcd_modes, fences_ordered_across_modes)
{
	hf_lock *r1 = lock_mode("fo", HF_MODE_SHARED, 0), *r2 = lock_mode("fo", HF_MODE_SHARED, 0);
	hf_lock *w = lock_on_etcd("fo"), *s = lock_mode("fo", HF_MODE_SLOTS, 3);
	cr_assert_eq(hf_lock_acquire(r1), 0);
	cr_assert_eq(hf_lock_acquire(r2), 0);
	cr_assert_gt(hf_lock_fence(r2), hf_lock_fence(r1));
	cr_assert_eq(hf_lock_acquire(w), HF_EHELD, "a writer entered beside readers");
	cr_assert_eq(hf_lock_release(r1), 0);
	cr_assert_eq(hf_lock_release(r2), 0);
	cr_assert_eq(hf_lock_acquire(w), 0);
	cr_assert_gt(hf_lock_fence(w), hf_lock_fence(r2));
	cr_assert_eq(hf_lock_acquire(s), HF_EHELD, "a slot entered beside a writer");
	uint64_t fw = hf_lock_fence(w);
	cr_assert_eq(hf_lock_release(w), 0);
	cr_assert_eq(hf_lock_acquire(s), 0);
	cr_assert_gt(hf_lock_fence(s), fw);
	cr_assert_eq(hf_lock_release(s), 0);
	hf_lock_free(r1);
	hf_lock_free(r2);
	hf_lock_free(w);
	hf_lock_free(s);
}

/* hf_lock_keep for a shared holder: detached, kept by a forked keeper for
 * its owner (a `sleep`) past several TTLs (a writer waiting 3 s, three
 * TTLs, times out), then released by the keeper when the owner ends (the
 * writer waiting then gets it). */
Test(etcd_modes, keep_holds_a_shared_holders_key_for_its_owner)
{
	pid_t owner = et_sleeper();
	hf_lock *r = lock_mode("kp", HF_MODE_SHARED, 0);
	cr_assert_eq(hf_lock_set(r, HF_OPT_TTL_MS, 1000), 0);
	cr_assert_eq(hf_lock_set(r, HF_OPT_PID, owner), 0);
	cr_assert_eq(hf_lock_acquire(r), 0);
	uint64_t fr = hf_lock_fence(r);
	cr_assert_eq(hf_lock_detach(r), -1); /* the keep-alive thread joined: forking is safe */
	fflush(NULL);
	pid_t k = fork();
	cr_assert_geq(k, 0);
	if (k == 0)
		_exit(hf_lock_keep(r) == 0 ? 0 : 1);
	hf_lock *w = lock_on_etcd("kp");
	cr_assert_eq(hf_lock_set(w, HF_OPT_WAIT_MS, 3000), 0);
	cr_assert_eq(hf_lock_acquire(w), HF_ETIMEDOUT, "the kept reader's key expired");
	cr_assert_str_eq(et_str(hf_lock_holder(w), "mode"), "shared");
	et_reap(owner); /* the owner ends: the keeper revokes the lease */
	cr_assert_eq(hft_exit_within(k, 30000), 0, "the keeper");
	cr_assert_eq(hf_lock_set(w, HF_OPT_WAIT_MS, 30000), 0);
	cr_assert_eq(hf_lock_acquire(w), 0);
	cr_assert_gt(hf_lock_fence(w), fr);
	hf_lock_free(w);
	hf_lock_free(r);
}
