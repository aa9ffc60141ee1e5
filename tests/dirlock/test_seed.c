/* The regression cases seed 000 lists, as scripted schedules of real
 * processes paused at the protocol's named points (dirlock.c): never two
 * holders (overlap detector), and the lock always comes back. */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/file.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir, *lock, *ovl, *state;

static void setup(void)
{
	dir = hft_tmpdir();
	lock = dl_path(dir, "L");
	ovl = dl_path(dir, "ovl");
	state = dl_path(dir, "L.holdfast");
	dl_ovl_init(ovl);
}

static void teardown(void)
{
	hf_fault_inject(NULL, NULL, 0);
	hft_rmtree(dir);
	free(dir);
	free(lock);
	free(ovl);
	free(state);
}

TestSuite(seed, .init = setup, .fini = teardown, .timeout = 60);

static char *res(const char *name)
{
	return dl_path(dir, name);
}


static void acquire_now(uint64_t *fence)
{
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	int rc = hf_dirlock_acquire(&o, &got, &h);
	cr_assert_eq(rc, 0, "the lock must come back: %s", hf_strerror(rc));
	if (fence)
		*fence = got.fence;
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
}

static void held_by(const char *token)
{
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	cr_assert_eq(i.state, HF_LOCK_HELD, "state %d", i.state);
	cr_assert_str_eq(i.owner.token, token);
}

/* R1 judges X dead and pauses; R2 reaps X and enters (A); R1 moves A's
 * directory into its claim. restored: R1 puts it back, B is refused. */
Test(seed, r1_r2_a_b_restoration_succeeds)
{
	dl_dead_holder(lock);
	char *ra = res("A"), *rb = res("B"), *r1r = res("R1");
	struct dl_acq r1 = { .path = lock, .result = r1r };
	struct hft_child R1, A, B;
	hft_spawn_fn(&R1, "pause:dirlock.reap.judged", dl_acq, &r1);
	hft_expect(&R1, "dirlock.reap.judged");

	pid_t la = dl_life();
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra, .life = la };
	hft_spawn_fn(&A, "pause:test.cs", dl_acq, &a); /* R2 = A: reaps X, enters */
	hft_expect(&A, "test.cs");

	hft_go(&R1); /* takes A's directory, finds A's token, restores it */
	cr_assert_eq(hft_wait(&R1), DL_HELD, "R1 must see A holding after its restore");
	int rc;
	uint64_t fa;
	char ta[HF_TOKEN_LEN + 1];
	dl_result(ra, &rc, &fa, ta);
	held_by(ta);

	struct dl_acq b = { .path = lock, .ovl = ovl, .result = rb };
	hft_spawn_fn(&B, NULL, dl_acq, &b);
	cr_assert_eq(hft_wait(&B), DL_HELD);

	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_ENTERED);
	dl_kill(la);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	cr_assert_eq(dl_claims(lock), 0);
	uint64_t f;
	acquire_now(&f);
	cr_assert_gt(f, fa);
	free(ra);
	free(rb);
	free(r1r);
}

/* The same, but B mkdirs L while A's directory sits in R1's claim, so R1's
 * restore fails: the claim stays, a barrier; B publishes, sees it, and
 * withdraws without entering. A releases from the claim. */
Test(seed, r1_r2_a_b_restoration_fails)
{
	dl_dead_holder(lock);
	char *ra = res("A"), *rb = res("B");
	struct dl_acq r1 = { .path = lock };
	struct hft_child R1, A, B;
	hft_spawn_fn(&R1, "pause:dirlock.reap.judged;pause:claim.restore.checked", dl_acq, &r1);
	hft_expect(&R1, "dirlock.reap.judged");

	pid_t la = dl_life();
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra, .life = la };
	hft_spawn_fn(&A, "pause:test.cs", dl_acq, &a);
	hft_expect(&A, "test.cs");

	hft_go(&R1);
	hft_expect(&R1, "claim.restore.checked"); /* A's directory is in R1's claim */
	cr_assert(!hft_exists(lock));
	cr_assert_eq(dl_claims(lock), 1);

	struct dl_acq b = { .path = lock, .ovl = ovl, .result = rb };
	hft_spawn_fn(&B, "pause:dirlock.acquire.published", dl_acq, &b);
	hft_expect(&B, "dirlock.acquire.published"); /* B's record at L */

	hft_go(&R1); /* the restore finds L taken: a barrier */
	cr_assert_eq(hft_wait(&R1), DL_HELD);
	cr_assert_eq(dl_claims(lock), 1, "the claim stays as a barrier");

	hft_go(&B);
	cr_assert_eq(hft_wait(&B), DL_BARRIER, "B must see the barrier and withdraw");
	cr_assert(!hft_exists(lock), "B withdrew its directory");
	cr_assert_eq(dl_ovl_count(ovl), 0);

	hft_go(&A); /* A releases: its record is in R1's claim */
	cr_assert_eq(hft_wait(&A), DL_ENTERED, "A's release must find its record in the claim");
	dl_kill(la);
	cr_assert_eq(dl_claims(lock), 0);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	acquire_now(NULL);
	free(ra);
	free(rb);
}

/* B waits instead of trying once: it enters only after A released. */
Test(seed, r1_r2_a_b_waiting_b_enters_after_a)
{
	dl_dead_holder(lock);
	char *ra = res("A"), *rb = res("B");
	struct dl_acq r1 = { .path = lock };
	struct hft_child R1, A, B;
	hft_spawn_fn(&R1, "pause:dirlock.reap.judged;pause:claim.restore.checked", dl_acq, &r1);
	hft_expect(&R1, "dirlock.reap.judged");
	pid_t la = dl_life();
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra, .life = la };
	hft_spawn_fn(&A, "pause:test.cs", dl_acq, &a);
	hft_expect(&A, "test.cs");
	hft_go(&R1);
	hft_expect(&R1, "claim.restore.checked");
	struct dl_acq b = { .path = lock, .ovl = ovl, .result = rb, .wait_ms = 20000 };
	hft_spawn_fn(&B, "pause:dirlock.acquire.published;pause:test.cs", dl_acq, &b);
	hft_expect(&B, "dirlock.acquire.published");
	hft_go(&R1);
	cr_assert_eq(hft_wait(&R1), DL_HELD);
	hft_go(&B); /* denied by the barrier; keeps trying while A is in */
	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_ENTERED);
	hft_expect(&B, "test.cs"); /* B enters once A's record is gone */
	hft_go(&B);
	cr_assert_eq(hft_wait(&B), DL_ENTERED);
	dl_kill(la);
	int rc;
	uint64_t fa, fb;
	dl_result(ra, &rc, &fa, NULL);
	dl_result(rb, &rc, &fb, NULL);
	cr_assert_gt(fb, fa);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	cr_assert_eq(dl_claims(lock), 0);
	free(ra);
	free(rb);
}

/* Open path and hold a shared flock on it: a live maker's kernel lock (DL9).
 * The descriptor is returned (close it to let the maker "die"). */
static int hold_kernel_lock(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s", path);
	cr_assert_eq(flock(fd, LOCK_SH | LOCK_NB), 0);
	return fd;
}

/* Plant a claim: a directory in the state directory named with time ms;
 * with a record of process pid (0: none; -1: garbage). */
static void plant_claim(int64_t ms, pid_t pid, char *ret_name)
{
	mkdir(state, 0700);
	char name[128], *p;
	snprintf(name, sizeof name, "c-%013" PRId64 "-%016x", ms, (unsigned)rand());
	p = dl_path(state, name);
	if (pid > 0) {
		dl_write_record(p, pid, hf_sys_now_ms(), 1, 0, NULL);
	} else {
		cr_assert_eq(mkdir(p, 0700), 0);
		if (pid < 0) {
			char *o = dl_path(p, "owner");
			hft_write(o, "{\"token\":\"trunc");
			free(o);
		}
	}
	if (ret_name)
		strcpy(ret_name, name);
	free(p);
}

/* A record-less claim whose kernel lock is free has no live maker: swept
 * at once, whatever its age; one whose maker holds it is left alone while
 * young, and swept past the stale window (a stopped maker). */
Test(seed, abandoned_record_less_claim_is_swept_young_one_left)
{
	acquire_now(NULL); /* make the state directory */
	plant_claim(1, 0, NULL);                  /* 1970, no maker: abandoned */
	char young[128], gone[128];
	plant_claim(hf_sys_now_ms(), 0, young);   /* a fresh one, its maker at work */
	plant_claim(hf_sys_now_ms(), 0, gone);    /* a fresh one, its maker gone */
	char *p = dl_path(state, young), *q = dl_path(state, gone);
	int maker = hold_kernel_lock(p);
	uint64_t f;
	acquire_now(&f); /* none denies; the holder sweeps the makerless ones */
	cr_assert_eq(dl_claims(lock), 1);
	cr_assert(hft_exists(p), "a young record-less claim of a live maker is left alone");
	cr_assert(!hft_exists(q), "a record-less claim without a maker goes at once");
	close(maker);
	acquire_now(&f);
	cr_assert_eq(dl_claims(lock), 0, "its maker gone, it goes too");
	free(p);
	free(q);
}

/* A stopped maker holds its kernel lock forever: its record-less claim is
 * swept past the stale window all the same (the model: safe at any time). */
Test(seed, record_less_claim_of_a_stopped_maker_goes_past_the_window)
{
	acquire_now(NULL);
	char name[128];
	plant_claim(1, 0, name); /* named decades ago */
	char *p = dl_path(state, name);
	int maker = hold_kernel_lock(p);
	acquire_now(NULL);
	cr_assert(!hft_exists(p), "past the stale window by its name");
	close(maker);
	free(p);
}

Test(seed, dead_owners_claim_does_not_deny_and_is_swept)
{
	acquire_now(NULL);
	pid_t life = dl_life();
	plant_claim(hf_sys_now_ms(), life, NULL); /* a reaper crashed after its take */
	dl_kill(life);
	acquire_now(NULL);
	cr_assert_eq(dl_claims(lock), 0);
}

Test(seed, partial_claim_denies_until_old)
{
	acquire_now(NULL);
	plant_claim(hf_sys_now_ms(), -1, NULL); /* unreadable record, young */
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), HF_EBARRIER);
	cr_assert(!hft_exists(lock), "the denied attempt withdrew");
	hft_rmtree(state);
	plant_claim(1, -1, NULL); /* unreadable and old: abandoned */
	acquire_now(NULL);
	cr_assert_eq(dl_claims(lock), 0);
}

/* A claim named as if it were decades old but holding a live owner's
 * record is a barrier, and is never swept by age alone. */
Test(seed, old_dated_live_claim_is_a_barrier)
{
	acquire_now(NULL);
	pid_t life = dl_life();
	plant_claim(1, life, NULL);
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	memset(&h, 0, sizeof h);
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), HF_EBARRIER);
	cr_assert_eq(h.owner.pid, life, "the barrier's owner is reported");
	cr_assert(h.in_claim);
	cr_assert_eq(dl_claims(lock), 1, "a live owner's claim is never swept by age");
	dl_kill(life);
	acquire_now(NULL);
	cr_assert_eq(dl_claims(lock), 0);
}

Test(seed, repeated_contention)
{
	uint64_t f0;
	acquire_now(&f0); /* the counter's first fence (FC2: from the wall clock) */
	struct hft_child c[4];
	struct dl_acq a = { .path = lock, .ovl = ovl, .wait_ms = -1, .repeat = 150 };
	for (int i = 0; i < 4; i++)
		hft_spawn_fn(&c[i], NULL, dl_acq, &a);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(hft_wait(&c[i]), DL_ENTERED);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	cr_assert_eq(dl_claims(lock), 0);
	cr_assert(!hft_exists(lock));
	uint64_t f;
	acquire_now(&f);
	cr_assert_eq(f, f0 + 601, "600 acquisitions, no fence wasted or repeated");
}

/* CL4: a look at the claims that fails denies entry, and the attempt
 * withdraws: readdir fails (a claim is there, so the link count sends the
 * look to readdir) and the link count itself cannot be read. */
Test(seed, unreadable_scan_denies)
{
	acquire_now(NULL);
	plant_claim(hf_sys_now_ms(), 0, NULL); /* harmless, but forces readdir */
	char *r = res("r");
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = r };
	struct hft_child c;
	hft_spawn_fn(&c, "fail:getdents:1:EIO", dl_acq, &a);
	cr_assert_eq(hft_wait(&c), DL_ERROR);
	int rc;
	uint64_t f;
	dl_result(r, &rc, &f, NULL);
	cr_assert_eq(rc, -EIO, "rc %d", rc);
	cr_assert(!hft_exists(lock), "withdrew after the failed look");
	cr_assert_eq(dl_claims(lock), 1);

	hft_rmtree(state);
	acquire_now(NULL); /* no claim: the link count decides (lk_open stats first,
			      then the owner's pid and time namespaces are read in
			      this new process) */
	hft_spawn_fn(&c, "fail:stat:4:EIO", dl_acq, &a);
	cr_assert_eq(hft_wait(&c), DL_ERROR);
	dl_result(r, &rc, &f, NULL);
	cr_assert_eq(rc, -EIO, "rc %d", rc);
	cr_assert(!hft_exists(lock));
	cr_assert_eq(dl_ovl_count(ovl), 0);
	acquire_now(NULL);
	free(r);
}

/* Displacement after the look but before the read-back: A's directory is
 * moved into R1's claim; A's read-back fails, A withdraws (stealing its
 * record out of R1's claim) and enters only with a later attempt. */
Test(seed, post_scan_displacement)
{
	uint64_t fx = dl_dead_holder(lock);
	char *ra = res("A");
	struct dl_acq r1 = { .path = lock, .ovl = ovl };
	struct hft_child R1, A;
	hft_spawn_fn(&R1, "pause:dirlock.reap.judged;pause:dirlock.reap.taken", dl_acq, &r1);
	hft_expect(&R1, "dirlock.reap.judged");
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra };
	hft_spawn_fn(&A, "pause:dirlock.acquire.scanned;pause:dirlock.acquire.denied;pause:test.cs",
		     dl_acq, &a);
	hft_expect(&A, "dirlock.acquire.scanned"); /* published, looked: no claim */
	hft_go(&R1);
	hft_expect(&R1, "dirlock.reap.taken"); /* A's directory displaced */
	hft_go(&A);
	hft_expect(&A, "dirlock.acquire.denied"); /* read-back fails: no entry */
	hft_go(&A);
	hft_expect(&A, "test.cs"); /* a later attempt enters */
	hft_go(&R1); /* its claim was stolen back by A: nothing to verify */
	int r1rc = hft_wait(&R1);
	cr_assert(r1rc == DL_HELD, "R1: %d", r1rc);
	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_ENTERED);
	int rc;
	uint64_t fa;
	dl_result(ra, &rc, &fa, NULL);
	cr_assert_geq(fa, fx + 2, "A entered with its second attempt's fence");
	cr_assert_eq(dl_ovl_count(ovl), 0);
	cr_assert_eq(dl_claims(lock), 0);
	acquire_now(NULL);
	free(ra);
}

/* Where hard links are refused, publication fails: never a rename, and
 * the directory made is removed again (from our own claim). */
Test(seed, links_refused_never_fall_back_to_rename)
{
	acquire_now(NULL);
	char *r = res("r");
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = r };
	struct hft_child c;
	hft_spawn_fn(&c, "fail:link:1:EPERM:persist", dl_acq, &a);
	cr_assert_eq(hft_wait(&c), DL_ERROR);
	int rc;
	uint64_t f;
	dl_result(r, &rc, &f, NULL);
	cr_assert_eq(rc, -EPERM);
	cr_assert(!hft_exists(lock), "the record-less directory was withdrawn");
	cr_assert_eq(dl_claims(lock), 0);
	acquire_now(NULL);
	free(r);
}

/* A's fresh directory was moved away by an outdated reaper, B's is at L:
 * each publishes into its own directory, through its descriptor (DL1), so
 * A's record lands in the claim, where it is a barrier to B until A's own
 * look finds it there and A withdraws it through its descriptor (DL10).
 * One holder at most - B, at L - in both orders, and nothing left. */
static void same_directory(bool a_first)
{
	acquire_now(NULL);
	char *ra = res("A"), *rb = res("B");
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra };
	struct dl_acq b = { .path = lock, .ovl = ovl, .result = rb, .wait_ms = 10000 };
	struct hft_child A, B;
	hft_spawn_fn(&A, "pause:dirlock.acquire.opened", dl_acq, &a);
	hft_expect(&A, "dirlock.acquire.opened");
	char *aside = dl_path(state, "c-0000000000002-00000000000000aa");
	cr_assert_eq(rename(lock, aside), 0); /* the outdated reaper's take */
	hft_spawn_fn(&B, "pause:dirlock.acquire.opened;pause:test.cs", dl_acq, &b);
	hft_expect(&B, "dirlock.acquire.opened"); /* B's directory at L */
	/* A: its look finds its own record in the claim (a barrier), it
	 * withdraws it, sweeps what is left there, and finds L held by B */
	if (a_first) {
		hft_go(&A);
		cr_assert_eq(hft_wait(&A), DL_HELD, "A never enters from the claim");
		hft_go(&B);
		hft_expect(&B, "test.cs");
	} else {
		hft_go(&B); /* A has not published: B's look finds nothing live */
		hft_expect(&B, "test.cs");
		hft_go(&A);
		int ca = hft_wait(&A);
		int rc;
		uint64_t f;
		dl_result(ra, &rc, &f, NULL);
		cr_assert_eq(ca, DL_HELD, "A: %d rc %d", ca, rc);
	}
	hft_go(&B);
	cr_assert_eq(hft_wait(&B), DL_ENTERED);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	char *owner = dl_path(aside, "owner");
	cr_assert(!hft_exists(owner), "A left no record of its own anywhere (DL10)");
	acquire_now(NULL);
	free(owner);
	free(aside);
	free(ra);
	free(rb);
}

Test(seed, publication_race_same_directory_a_first)
{
	same_directory(true);
}

Test(seed, publication_race_same_directory_b_first)
{
	same_directory(false);
}

/* The holder releases while its directory sits in a reaper's claim: it
 * steals the claim into its own and removes it there; the reaper finds its
 * claim gone and can never restore an emptied directory. */
Test(seed, owner_release_during_a_claim)
{
	dl_dead_holder(lock);
	char *ra = res("A");
	struct dl_acq r1 = { .path = lock, .ovl = ovl };
	struct hft_child R1, A;
	hft_spawn_fn(&R1, "pause:dirlock.reap.judged;pause:dirlock.reap.taken", dl_acq, &r1);
	hft_expect(&R1, "dirlock.reap.judged");
	pid_t la = dl_life();
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra, .life = la };
	hft_spawn_fn(&A, "pause:test.cs;pause:test.released", dl_acq, &a);
	hft_expect(&A, "test.cs");
	hft_go(&R1);
	hft_expect(&R1, "dirlock.reap.taken");
	hft_go(&A); /* leave and release */
	hft_expect(&A, "test.released");
	cr_assert_eq(dl_claims(lock), 0, "released from the claim");
	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_ENTERED, "the release succeeded");
	hft_go(&R1); /* claim gone: it retries, and enters a free lock */
	cr_assert_eq(hft_wait(&R1), DL_ENTERED);
	dl_kill(la);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	cr_assert_eq(dl_claims(lock), 0);
	free(ra);
}

Test(seed, timeout_reports_the_holder)
{
	pid_t la = dl_life();
	struct dl_acq a = { .path = lock, .ovl = ovl, .life = la };
	struct hft_child A;
	hft_spawn_fn(&A, "pause:test.cs", dl_acq, &a);
	hft_expect(&A, "test.cs");
	struct hf_lock_opts o = { .path = lock, .wait_ms = 150 };
	struct hf_lock_info got, h;
	int64_t t0 = hf_sys_mono_ns();
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), HF_ETIMEDOUT);
	int64_t ms = (hf_sys_mono_ns() - t0) / 1000000;
	cr_assert_geq(ms, 150, "gave up after %" PRId64 " ms, before its deadline", ms);
	cr_assert_eq(h.owner.pid, la);
	cr_assert_eq(h.state, HF_LOCK_HELD);
	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_ENTERED);
	dl_kill(la);
}

/* A holder that dies in its critical section (SIGKILL) is reaped at once by
 * the next acquirer; a holder that exits without releasing too. */
Test(seed, dead_owner_recovery)
{
	char *ra = res("A");
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra };
	struct hft_child A;
	hft_spawn_fn(&A, "crash:test.cs", dl_acq, &a);
	cr_assert_eq(hft_wait(&A), 128 + 9);
	int rc;
	uint64_t fa, f;
	dl_result(ra, &rc, &fa, NULL);
	cr_assert(hft_exists(lock));
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	cr_assert_eq(i.state, HF_LOCK_DEAD);
	acquire_now(&f);
	cr_assert_gt(f, fa);

	struct dl_acq b = { .path = lock, .result = ra, .no_release = true };
	hft_spawn_fn(&A, NULL, dl_acq, &b);
	cr_assert_eq(hft_wait(&A), DL_ENTERED);
	dl_result(ra, &rc, &fa, NULL);
	acquire_now(&f);
	cr_assert_gt(f, fa);
	free(ra);
}

/* More claims than one pass handles: harmless ones never block, stale ones
 * go over successive passes. */
Test(seed, many_claims_neither_block_nor_stay)
{
	acquire_now(NULL);
	int makers[150];
	for (int i = 0; i < 150; i++) {
		char name[128];
		plant_claim(hf_sys_now_ms(), 0, name); /* young, record-less, maker at work */
		char *p = dl_path(state, name);
		makers[i] = hold_kernel_lock(p);
		free(p);
	}
	acquire_now(NULL);
	cr_assert_eq(dl_claims(lock), 150, "young record-less claims of live makers stay");
	for (int i = 0; i < 150; i++)
		close(makers[i]);
	hft_rmtree(state);
	acquire_now(NULL);
	for (int i = 0; i < 150; i++)
		plant_claim(1, 0, NULL); /* abandoned */
	for (int pass = 0; pass < 3 && dl_claims(lock) > 0; pass++)
		acquire_now(NULL);
	cr_assert_eq(dl_claims(lock), 0, "swept over successive passes");
}
