/* Shared and slot holders of a directory lock on the file system, as a C
 * program calls them (HF_OPT_MODE, HF_OPT_SLOTS): who shares with whom,
 * what a refusal names, every holder in the status, a waiting exclusive
 * acquirer that new shared ones queue behind, a killed holder's place
 * coming back at once, fences in order (dirlock.c DS1-DS5, SM1-SM6). */
#include "rt.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

HFT_SCRATCH_SUITE(modes, 60);

/* A handle on p in mode (slots: its bound, for HF_MODE_SLOTS), acquired
 * with wait_ms: the acquisition's outcome in *rc. */
static hf_lock *take(const char *p, int mode, int slots, int64_t wait_ms, int *rc)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new(p, &l), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_MODE, mode), 0);
	if (mode == HF_MODE_SLOTS)
		cr_assert_eq(hf_lock_set(l, HF_OPT_SLOTS, slots), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_WAIT_MS, wait_ms), 0);
	*rc = hf_lock_acquire(l);
	return l;
}

static hf_lock *held(const char *p, int mode, int slots)
{
	int rc;
	hf_lock *l = take(p, mode, slots, 0, &rc);
	cr_assert_eq(rc, 0, "acquire %s in mode %d: %s", p, mode, hf_strerror(rc));
	return l;
}

static hf_rec *status(const char *p)
{
	hf_rec *r;
	cr_assert_eq(hf_lock_status(p, &r), 0);
	return r;
}

/* holders.<i>.<name> of r */
static const char *field(const hf_rec *r, size_t i, const char *name)
{
	char f[64];
	snprintf(f, sizeof f, "holders.%zu.%s", i, name);
	return hf_rec_str(r, f);
}

Test(modes, options_are_checked_and_fixed_while_held)
{
	char *p = rt_path(dir, "L");
	hf_lock *l;
	cr_assert_eq(hf_lock_new(p, &l), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_MODE, 3), -EINVAL, "no such mode");
	cr_assert_eq(hf_lock_set(l, HF_OPT_SLOTS, 0), -EINVAL);
	cr_assert_eq(hf_lock_set(l, HF_OPT_SLOTS, HF_SLOTS_MAX + 1), -EINVAL);
	cr_assert_eq(hf_lock_set(l, HF_OPT_MODE, HF_MODE_SHARED), 0);
	cr_assert_eq(hf_lock_acquire(l), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_MODE, HF_MODE_EXCLUSIVE), -EBUSY);
	cr_assert_eq(hf_lock_set(l, HF_OPT_SLOTS, 2), -EBUSY);
	cr_assert_eq(hf_lock_check(l), 0, "a shared holder checks as held");
	cr_assert_eq(hf_lock_hold(l), 0, "and holds off what it cannot share with");
	hf_lock_unhold(l);
	cr_assert_eq(hf_lock_release(l), 0);
	cr_assert_eq(hf_lock_check(l), HF_ELOST);
	hf_lock_free(l);
	free(p);
}

Test(modes, shared_holders_share_and_keep_an_exclusive_one_out)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = held(p, HF_MODE_SHARED, 0), *b = held(p, HF_MODE_SHARED, 0);
	cr_assert_str_neq(hf_lock_token(a), hf_lock_token(b), "each has its own token");
	cr_assert_neq(hf_lock_fence(a), hf_lock_fence(b), "and its own fence");
	int rc;
	hf_lock *x = take(p, HF_MODE_EXCLUSIVE, 0, 0, &rc);
	cr_assert_eq(rc, HF_EHELD, "%s", hf_strerror(rc));
	cr_assert_str_eq(hf_rec_str(hf_lock_holder(x), "mode"), "shared", "names a shared holder");
	int64_t pid = 0;
	cr_assert_eq(hf_rec_int(hf_lock_holder(x), "pid", &pid), 0);
	cr_assert_eq(pid, getpid());
	hf_rec *s = status(p);
	cr_assert_str_eq(hf_rec_str(s, "state"), "held");
	cr_assert_str_eq(hf_rec_str(s, "mode"), "shared");
	cr_assert_eq(hf_rec_len(s, "holders"), 2, "%s", hf_rec_json(s));
	for (size_t i = 0; i < 2; i++) {
		cr_assert_str_eq(field(s, i, "mode"), "shared");
		cr_assert_str_eq(field(s, i, "state"), "held");
	}
	hf_rec_free(s);
	cr_assert_eq(hf_lock_release(a), 0);
	rc = hf_lock_acquire(x);
	cr_assert_eq(rc, HF_EHELD, "one shared holder is enough to keep it out");
	cr_assert_eq(hf_lock_release(b), 0);
	cr_assert_eq(hf_lock_acquire(x), 0, "the last one gone, it enters");
	cr_assert_gt(hf_lock_fence(x), hf_lock_fence(b), "above every shared fence before it");
	hf_lock *c = take(p, HF_MODE_SHARED, 0, 0, &rc);
	cr_assert_eq(rc, HF_EHELD, "an exclusive holder keeps a shared one out");
	cr_assert_str_eq(hf_rec_str(hf_lock_holder(c), "mode"), "exclusive");
	cr_assert_eq(hf_lock_release(x), 0);
	cr_assert_eq(hf_lock_acquire(c), 0);
	cr_assert_gt(hf_lock_fence(c), hf_lock_fence(x), "a shared holder after it: above it");
	hf_lock_free(c);
	hf_lock_free(x);
	hf_lock_free(a);
	hf_lock_free(b);
	s = status(p);
	cr_assert_str_eq(hf_rec_str(s, "state"), "free", "%s", hf_rec_json(s));
	cr_assert_eq(hf_rec_len(s, "holders"), 0);
	hf_rec_free(s);
	free(p);
}

Test(modes, slots_admit_n_and_no_more)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = held(p, HF_MODE_SLOTS, 2), *b = held(p, HF_MODE_SLOTS, 2);
	int rc;
	hf_lock *c = take(p, HF_MODE_SLOTS, 2, 0, &rc);
	cr_assert_eq(rc, HF_EHELD, "a third of two slots: %s", hf_strerror(rc));
	cr_assert_str_eq(hf_rec_str(hf_lock_holder(c), "mode"), "slots");
	hf_lock *r = take(p, HF_MODE_SHARED, 0, 0, &rc);
	cr_assert_eq(rc, HF_EHELD, "shared and slots are different modes");
	hf_rec *s = status(p);
	cr_assert_str_eq(hf_rec_str(s, "mode"), "slots", "%s", hf_rec_json(s));
	int64_t n = 0;
	cr_assert_eq(hf_rec_int(s, "slots", &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(hf_rec_len(s, "holders"), 2);
	hf_rec_free(s);
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_acquire(c), 0, "a slot came back");
	cr_assert_eq(hf_lock_acquire(a), HF_EHELD, "and is taken again");
	hf_lock_free(a);
	hf_lock_free(b);
	hf_lock_free(c);
	cr_assert_eq(hf_lock_acquire(r), 0);
	hf_lock_free(r);
	free(p);
}

static const char *child_path;

/* An exclusive acquirer that waits as long as it takes, then holds and
 * releases: 0 when it entered with a fence above the shared one's that
 * was held when it came (passed as arg). */
static int exclusive_waits(void *arg)
{
	uint64_t above = *(uint64_t *)arg;
	int rc;
	hf_lock *l;
	if (hf_lock_new(child_path, &l) < 0 || hf_lock_set(l, HF_OPT_WAIT_MS, -1) < 0)
		return 2;
	rc = hf_lock_acquire(l);
	uint64_t f = hf_lock_fence(l);
	hf_lock_free(l);
	return rc == 0 && f > above ? 0 : 1;
}

/* A shared holder of p (returned) and, in *w, an exclusive acquirer paused
 * standing at L, waiting for it (DS1); w enters once let go after the
 * holder released, with a fence above the holder's. */
static hf_lock *shared_and_a_writer_waiting(char *p, struct hft_child *w)
{
	child_path = p;
	hf_lock *a = held(p, HF_MODE_SHARED, 0);
	uint64_t fa = hf_lock_fence(a); /* the child's copy, made at the fork */
	hft_spawn_fn(w, "pause:dirlock.share.draining:1", exclusive_waits, &fa);
	hft_expect(w, "dirlock.share.draining"); /* standing at L, waiting for a */
	return a;
}

Test(modes, a_waiting_exclusive_acquirer_is_not_starved_by_new_shared_ones)
{
	char *p = rt_path(dir, "L");
	struct hft_child w;
	hf_lock *a = shared_and_a_writer_waiting(p, &w);
	int rc;
	hf_lock *b = take(p, HF_MODE_SHARED, 0, 0, &rc);
	cr_assert_eq(rc, HF_EHELD, "a shared acquirer after the waiting one queues behind it");
	int64_t pid = 0;
	cr_assert_eq(hf_rec_int(hf_lock_holder(b), "pid", &pid), 0);
	cr_assert_eq(pid, w.pid, "naming the waiting exclusive acquirer");
	hf_rec *s = status(p);
	cr_assert_eq(hf_rec_len(s, "holders"), 2, "%s", hf_rec_json(s));
	int64_t waiting = 0;
	cr_assert_eq(hf_rec_int(s, "holders.0.waiting", &waiting), 0, "%s", hf_rec_json(s));
	cr_assert_eq(waiting, 1, "the exclusive one at L waits");
	cr_assert_str_eq(hf_rec_str(s, "mode"), "shared", "the lock is still shared");
	hf_rec_free(s);
	cr_assert_eq(hf_lock_release(a), 0);
	hft_go(&w);
	cr_assert_eq(hft_wait(&w), 0, "it entered after a left, above a's fence");
	cr_assert_eq(hf_lock_acquire(b), 0, "and the shared one after it");
	hf_lock_free(b);
	hf_lock_free(a);
	free(p);
}

/* hf_lock_check of an acquisition still waiting at the lock (its token is in
 * the status, "waiting": true) answers that it does not hold it. */
Test(modes, a_waiting_acquisition_is_not_told_it_holds)
{
	char *p = rt_path(dir, "L");
	struct hft_child w;
	hf_lock *a = shared_and_a_writer_waiting(p, &w);
	hf_rec *s = status(p);
	int64_t waiting = 0;
	cr_assert_eq(hf_rec_int(s, "holders.0.waiting", &waiting), 0, "%s", hf_rec_json(s));
	cr_assert_eq(waiting, 1, "%s", hf_rec_json(s));
	hf_lock *c;
	cr_assert_eq(hf_lock_new(p, &c), 0);
	cr_assert_eq(hf_lock_adopt(c, field(s, 0, "token")), 0);
	cr_assert_eq(hf_lock_check(c), HF_ELOST, "a waiting acquisition does not hold: %s",
		     hf_rec_json(s));
	hf_lock *r;
	cr_assert_eq(hf_lock_new(p, &r), 0);
	cr_assert_eq(hf_lock_adopt(r, hf_lock_token(a)), 0);
	cr_assert_eq(hf_lock_check(r), 0, "the shared holder does");
	hf_lock_free(r);
	hf_lock_free(c);
	hf_rec_free(s);
	cr_assert_eq(hf_lock_release(a), 0);
	hft_go(&w);
	cr_assert_eq(hft_wait(&w), 0);
	hf_lock_free(a);
	free(p);
}

/* A shared holder that says so on the pipe, then waits to be killed. */
static int shared_then_block(void *arg)
{
	int fd = *(int *)arg;
	hf_lock *l;
	if (hf_lock_new(child_path, &l) < 0 || hf_lock_set(l, HF_OPT_MODE, HF_MODE_SHARED) < 0 ||
	    hf_lock_acquire(l) < 0)
		return 2;
	if (write(fd, "h", 1) != 1)
		return 3;
	for (;;)
		pause();
}

Test(modes, a_killed_shared_holder_gives_its_place_back_at_once)
{
	char *p = rt_path(dir, "L");
	child_path = p;
	int pp[2];
	cr_assert_eq(pipe(pp), 0);
	struct hft_child c;
	hft_spawn_fn(&c, "", shared_then_block, &pp[1]);
	char b;
	cr_assert_eq(read(pp[0], &b, 1), 1);
	int rc;
	hf_lock *x = take(p, HF_MODE_EXCLUSIVE, 0, 0, &rc);
	cr_assert_eq(rc, HF_EHELD, "held by the live shared holder");
	cr_assert_eq(kill(c.pid, SIGKILL), 0);
	cr_assert_eq(hft_wait(&c), 128 + SIGKILL);
	cr_assert_eq(hf_lock_acquire(x), 0, "its entry is reaped as dead: %s",
		     hf_rec_json(hf_lock_holder(x)));
	hf_lock_free(x);
	hf_rec *s = status(p);
	cr_assert_eq(hf_rec_len(s, "holders"), 0, "nothing left of it: %s", hf_rec_json(s));
	hf_rec_free(s);
	close(pp[0]);
	close(pp[1]);
	free(p);
}

Test(modes, a_shared_holder_renews_and_is_released_by_its_token)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = held(p, HF_MODE_SHARED, 0);
	uint64_t f = hf_lock_fence(a);
	cr_assert_eq(hf_lock_renew(a), 0);
	cr_assert_eq(hf_lock_fence(a), f, "a renewal keeps the fence");
	char token[64];
	snprintf(token, sizeof token, "%s", hf_lock_token(a));
	cr_assert_geq(hf_lock_detach(a), 0);
	hf_lock *r;
	cr_assert_eq(hf_lock_new(p, &r), 0);
	cr_assert_eq(hf_lock_adopt(r, token), 0);
	cr_assert_eq(hf_lock_release(r), 0, "found by its token in its entry");
	cr_assert_eq(hf_lock_release(r), HF_ENOTHELD);
	hf_lock_free(r);
	hf_lock_free(a);
	hf_rec *s = status(p);
	cr_assert_str_eq(hf_rec_str(s, "state"), "free", "%s", hf_rec_json(s));
	hf_rec_free(s);
	free(p);
}

Test(modes, an_exclusive_lock_says_its_one_holder_in_the_same_words)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = held(p, HF_MODE_EXCLUSIVE, 0);
	hf_rec *s = status(p);
	cr_assert_str_eq(hf_rec_str(s, "mode"), "exclusive", "%s", hf_rec_json(s));
	cr_assert_eq(hf_rec_len(s, "holders"), 1);
	cr_assert_str_eq(field(s, 0, "token"), hf_lock_token(a));
	hf_rec_free(s);
	hf_lock_free(a);
	free(p);
}

/* The names in p's state directory (P/L.holdfast) that start with prefix,
 * space-separated into out; how many. */
static int state_names(const char *p, const char *prefix, char *out, size_t n)
{
	char *sd;
	cr_assert_geq(asprintf(&sd, "%s.holdfast", p), 0);
	DIR *d = opendir(sd);
	cr_assert(d, "%s: %s", sd, strerror(errno));
	int k = 0;
	size_t used = 0;
	out[0] = '\0';
	for (struct dirent *e; (e = readdir(d));) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		k++;
		int w = snprintf(out + used, n - used, "%s ", e->d_name);
		if (w > 0 && (size_t)w < n - used)
			used += (size_t)w;
	}
	closedir(d);
	free(sd);
	return k;
}

/* DS3: the release takes the record through the descriptor and the entry by
 * its name; a file in the entry (a renewal's temporary in flight, DR4) makes
 * that rmdir fail, and the release finishes through its self-claim. */
Test(modes, a_release_leaves_nothing_when_a_renewal_file_is_in_the_entry)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = held(p, HF_MODE_SHARED, 0);
	char names[512];
	cr_assert_eq(state_names(p, "r-", names, sizeof names), 1, "one entry: %s", names);
	char *tmp;
	names[strcspn(names, " ")] = '\0';
	cr_assert_geq(asprintf(&tmp, "%s.holdfast/%s/owner.tmp-0123456789abcdef", p, names), 0);
	int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY, 0600);
	cr_assert_geq(fd, 0, "%s: %s", tmp, strerror(errno));
	close(fd);
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(state_names(p, "r-", names, sizeof names), 0, "entry left: %s", names);
	cr_assert_eq(state_names(p, "c-", names, sizeof names), 0, "claim left: %s", names);
	hf_rec *s = status(p);
	cr_assert_str_eq(hf_rec_str(s, "state"), "free", "%s", hf_rec_json(s));
	hf_rec_free(s);
	hf_lock_free(a);
	free(tmp);
	free(p);
}

/* A shared holder whose record is gone from its entry (a failed renewal
 * unlinks it, DR5) is told by its release that it did not hold, and its
 * record-less directory does not stay behind at its name (DS3, SM1). */
Test(modes, a_record_less_entry_is_removed_by_its_release)
{
	char *p = rt_path(dir, "L");
	hf_lock *a = held(p, HF_MODE_SHARED, 0);
	char names[512], *rec;
	cr_assert_eq(state_names(p, "r-", names, sizeof names), 1, "one entry: %s", names);
	names[strcspn(names, " ")] = '\0';
	cr_assert_geq(asprintf(&rec, "%s.holdfast/%s/owner", p, names), 0);
	cr_assert_eq(unlink(rec), 0, "%s: %s", rec, strerror(errno));
	cr_assert_eq(hf_lock_release(a), HF_ENOTHELD);
	cr_assert_eq(state_names(p, "r-", names, sizeof names), 0, "entry left: %s", names);
	hf_lock_free(a);
	free(rec);
	free(p);
}

/* A holder whose directory a reaper took (into its claim; the record removed
 * there, or for a shared one not yet) is told by its release that its
 * record is gone (HF_ENOTHELD, include/holdfast.h), not that it released:
 * a shared holder's entry (DS3) as an exclusive holder's L. */
Test(modes, a_reaped_holder_is_not_told_it_released)
{
	char *p = rt_path(dir, "L");
	/* an exclusive holder with its record still in the claim releases it
	 * from there (DL3's "find" role): not this test's case */
	for (int k = 0; k < 3; k++) {
		int shared = k > 0, withrec = k == 2;
		hf_lock *a = held(p, shared ? HF_MODE_SHARED : HF_MODE_EXCLUSIVE, 0);
		char names[512], *from, *to, *rec;
		if (shared) {
			cr_assert_eq(state_names(p, "r-", names, sizeof names), 1, "one entry: %s", names);
			names[strcspn(names, " ")] = '\0';
			cr_assert_geq(asprintf(&from, "%s.holdfast/%s", p, names), 0);
		} else {
			from = strdup(p);
		}
		/* the reaper's take (DS5, DL3): into a claim of its own */
		cr_assert_geq(asprintf(&to, "%s.holdfast/c-1-%s-0123456789abcdef", p,
				       "ffffffffffffffffffffffffffffffff"), 0);
		cr_assert_eq(rename(from, to), 0, "%s: %s", from, strerror(errno));
		cr_assert_geq(asprintf(&rec, "%s/owner", to), 0);
		if (!withrec)
			cr_assert_eq(unlink(rec), 0);
		int rc = hf_lock_release(a);
		cr_assert_eq(rc, HF_ENOTHELD, "%s, %s its record in the reaper's claim: %s",
			     shared ? "shared" : "exclusive", withrec ? "with" : "without", hf_strerror(rc));
		hf_lock_free(a);
		unlink(rec);
		cr_assert_eq(rmdir(to), 0, "the claim is the reaper's to remove: %s", strerror(errno));
		free(from);
		free(to);
		free(rec);
	}
	free(p);
}

static int64_t boottime_ms(void)
{
	struct timespec t;
	cr_assert_eq(clock_gettime(CLOCK_BOOTTIME, &t), 0);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* An exclusive acquirer that waits, then stays entered until killed. */
static int exclusive_waits_then_blocks(void *arg)
{
	(void)arg;
	hf_lock *l;
	if (hf_lock_new(child_path, &l) < 0 || hf_lock_set(l, HF_OPT_WAIT_MS, -1) < 0 ||
	    hf_lock_acquire(l) < 0)
		return 2;
	for (;;)
		pause();
}

/* SM7 (DS6): one that waited enters with its record written after its
 * wait, so its max-hold counts from its entry, not from its arrival (the
 * model's share-leak: a reaper beside a writer that waited past it). */
Test(modes, a_wait_is_not_counted_against_the_max_hold)
{
	char *p = rt_path(dir, "L");
	child_path = p;
	hf_lock *a = held(p, HF_MODE_SHARED, 0);
	struct hft_child w;
	hft_spawn_fn(&w, "pause:dirlock.share.draining:1;pause:dirlock.acquire.entered:1",
		     exclusive_waits_then_blocks, NULL);
	hft_expect(&w, "dirlock.share.draining");
	int64_t before = boottime_ms();
	cr_assert_eq(hf_lock_release(a), 0);
	hft_go(&w);
	hft_expect(&w, "dirlock.acquire.entered");
	hf_rec *s = status(p);
	int64_t written = 0, pid = 0;
	cr_assert_eq(hf_rec_int(s, "pid", &pid), 0, "%s", hf_rec_json(s));
	cr_assert_eq(pid, w.pid);
	cr_assert_eq(hf_rec_int(s, "boottime_ms", &written), 0, "%s", hf_rec_json(s));
	cr_assert_geq(written, before, "its record was written after its wait ended: %s",
		      hf_rec_json(s));
	hf_rec_free(s);
	cr_assert_eq(kill(w.pid, SIGKILL), 0); /* paused at its entry: no go, which would
					       * write to a dead child's pipe */
	cr_assert_eq(hft_wait(&w), 128 + SIGKILL);
	hf_lock_free(a);
	free(p);
}
