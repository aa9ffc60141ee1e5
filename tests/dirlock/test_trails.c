/* Every counterexample trail of research/model/REPORT.md (trails/cex-*.txt)
 * replayed as a deterministic schedule against the C code: the same moves,
 * in the same order, by real processes paused at dirlock.c's named points.
 * Where the seed's protocol let two processes in, holdfast's lets one in
 * (overlap detector), and the lock comes back afterwards.
 *
 * Tokens of the trails map to acquisitions held for "life" processes
 * (dl.h): the test kills a life exactly when the trail's oracle makes that
 * token stale (its attempt left the critical section or withdrew). */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir, *lock, *ovl, *state;

static void setup_in(const char *base)
{
	if (base) {
		char *t;
		cr_assert_geq(asprintf(&t, "%s/hft-trail.XXXXXX", base), 0);
		cr_assert_not_null(mkdtemp(t));
		dir = t;
	} else {
		dir = hft_tmpdir();
	}
	lock = dl_path(dir, "L");
	ovl = dl_path(dir, "ovl");
	state = dl_path(dir, "L.holdfast");
	dl_ovl_init(ovl);
}

static void setup(void)
{
	setup_in(NULL);
}

static void teardown(void)
{
	hft_rmtree(dir);
	free(dir);
	free(lock);
	free(ovl);
	free(state);
}

TestSuite(trail, .init = setup, .fini = teardown, .timeout = 60);

static char *res(const char *name)
{
	return dl_path(dir, name);
}


static void comes_back(void)
{
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	int rc = hf_dirlock_acquire(&o, &got, &h);
	cr_assert_eq(rc, 0, "the lock must come back: %s", hf_strerror(rc));
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
}

static ino_t ino_of(const char *p)
{
	struct stat st;
	cr_assert_eq(stat(p, &st), 0, "stat %s", p);
	return st.st_ino;
}

static void held_by_result(const char *result)
{
	int rc;
	uint64_t f;
	char tok[HF_TOKEN_LEN + 1];
	dl_result(result, &rc, &f, tok);
	cr_assert_eq(rc, 0);
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	cr_assert_eq(i.state, HF_LOCK_HELD);
	cr_assert_str_eq(i.owner.token, tok, "L must still carry the holder's record");
}

/* Token 4's attempt: acquire for life4, enter, leave, pause before release
 * (the trails' "A1(tok 4): leaves CS, starts release"). */
static void tok4_left(struct hft_child *A1a, pid_t life4)
{
	static struct dl_acq a;
	a = (struct dl_acq){ .path = lock, .ovl = ovl, .life = life4 };
	hft_spawn_fn(A1a, "pause:test.left", dl_acq, &a);
	hft_expect(A1a, "test.left");
}

/* cex-weakened-no-claim-scan.txt (the seed's design-note schedule): R0's
 * verdict about token 4 is applied to token 5's directory; R0's restore
 * fails because A0 made L; A0 publishes. Without the look at the claims A0
 * entered beside token 5's holder; here the claim denies it. */
Test(trail, weakened_no_claim_scan)
{
	dl_dead_holder(lock);                              /* steps 1-5: X reaped below */
	pid_t life4 = dl_life(), life5 = dl_life();
	struct hft_child A1a, A1b, R0, A0;
	tok4_left(&A1a, life4);                     /* 6-13 */
	dl_kill(life4);                             /* token 4 is stale now */
	struct dl_acq r0 = { .path = lock };
	hft_spawn_fn(&R0, "pause:dirlock.reap.judged;pause:claim.restore.checked", dl_acq, &r0);
	hft_expect(&R0, "dirlock.reap.judged");     /* 13: judges tok 4 stale */
	hft_go(&A1a);                               /* 14-17: releases */
	cr_assert_eq(hft_wait(&A1a), DL_ENTERED);
	char *r5 = res("A1b"), *r0r = res("A0");
	struct dl_acq a1b = { .path = lock, .ovl = ovl, .life = life5, .result = r5 };
	hft_spawn_fn(&A1b, "pause:test.cs", dl_acq, &a1b);
	hft_expect(&A1b, "test.cs");                /* 18-23: tok 5 in the CS */
	hft_go(&R0);                                /* 24-25: takes tok 5's dir */
	hft_expect(&R0, "claim.restore.checked");
	struct dl_acq a0 = { .path = lock, .ovl = ovl, .result = r0r };
	hft_spawn_fn(&A0, "pause:dirlock.acquire.made", dl_acq, &a0);
	hft_expect(&A0, "dirlock.acquire.made");    /* 26-28: A0 made L */
	hft_go(&R0);                                /* 29: restore fails: barrier */
	cr_assert_eq(hft_wait(&R0), DL_HELD);
	cr_assert_eq(dl_claims(lock), 1);
	hft_go(&A0);                                /* 30-32: publishes ... */
	cr_assert_eq(hft_wait(&A0), DL_BARRIER, "A0 must withdraw, not enter");
	cr_assert_eq(dl_ovl_count(ovl), 0);
	hft_go(&A1b);                               /* tok 5 releases from the claim */
	cr_assert_eq(hft_wait(&A1b), DL_ENTERED);
	cr_assert_eq(dl_claims(lock), 0);
	dl_kill(life5);
	comes_back();
	free(r5);
	free(r0r);
}

/* cex-full-protocol-withdraw-by-path.txt and cex-inode-number-reuse.txt:
 * A0's withdrawal is delayed just before it takes L - its record already
 * unlinked through its descriptor (DL10), its directory at L pinned and
 * kernel-locked (DL9). Stopped past the stale window, the record-less
 * directory is reaped; A1 acquires a fresh L (maybe with the same inode
 * number) and enters. A0's delayed destructive step must not touch A1's
 * record: it takes L into its own claim, finds token 5 there instead of
 * the directory it pins, and puts it back - here even with the restore
 * failing (a third acquirer made L meanwhile), the claim stays a barrier
 * and A1 releases from it. */
static void delayed_withdrawal(bool log_inodes)
{
	pid_t lb = dl_life(), life2 = dl_life(), life5 = dl_life();
	/* a barrier claim that denies A0 (the trail's releaser claim) */
	{
		struct hf_lock_opts o = { .path = lock };
		struct hf_lock_info got, h;
		cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
		cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
		close(got.live_fd);
	close(got.live_fd);
		char *c = dl_path(state, "c-0000000000003-00000000000000bb");
		dl_write_record(c, lb, hf_sys_now_ms(), 1, 0, NULL);
		free(c);
	}
	char *ra1 = res("A1"), *rc3 = res("C");
	struct hft_child A0, A1, C;
	struct dl_acq a0 = { .path = lock, .life = life2 };
	hft_spawn_fn(&A0, "pause:dirlock.withdraw.judged;pause:claim.restore.checked", dl_acq, &a0);
	hft_expect(&A0, "dirlock.withdraw.judged"); /* read L/owner == mine; delayed */
	ino_t i3 = ino_of(lock);
	dl_kill(life2);                              /* token 2 withdrew: stale */
	dl_kill(lb);                                 /* the barrier's owner is gone */
	dl_wait_age(lock, 20);                       /* A0 stopped past A1's window */
	struct dl_acq a1 = { .path = lock, .ovl = ovl, .life = life5, .result = ra1,
			     .stale_ms = 20 };
	hft_spawn_fn(&A1, "pause:test.cs", dl_acq, &a1);
	hft_expect(&A1, "test.cs");                  /* reaped tok 2's dir, entered */
	ino_t i4 = ino_of(lock);
	if (log_inodes)
		cr_log_info("withdrawn dir inode %lu, successor's %lu: %s", (unsigned long)i3,
			    (unsigned long)i4, i3 == i4 ? "REUSED" : "not reused this time");
	hft_go(&A0);                                 /* takes L (tok 5) into its claim */
	hft_expect(&A0, "claim.restore.checked");
	struct dl_acq c3 = { .path = lock, .ovl = ovl, .result = rc3 };
	hft_spawn_fn(&C, "pause:dirlock.acquire.made", dl_acq, &c3);
	hft_expect(&C, "dirlock.acquire.made");
	hft_go(&A0);                                 /* restore fails: a barrier */
	cr_assert_eq(hft_wait(&A0), DL_BARRIER);
	hft_go(&C);
	cr_assert_eq(hft_wait(&C), DL_BARRIER, "token 5's directory in the claim denies C");
	cr_assert_eq(dl_ovl_count(ovl), 0);
	hft_go(&A1);
	cr_assert_eq(hft_wait(&A1), DL_ENTERED, "A1 releases from the claim");
	cr_assert_eq(dl_claims(lock), 0);
	dl_kill(life5);
	comes_back();
	free(ra1);
	free(rc3);
}

Test(trail, full_protocol_withdraw_by_path)
{
	delayed_withdrawal(false);
}

/* cex-inode-number-reuse.txt on ext4 (/tmp), where a freed inode number is
 * handed to the next mkdir: a delayed release (it holds no fd that would
 * pin its directory) judged "L/owner is mine"; its directory is reaped and
 * the successor's fresh L may carry the same inode number. Identity is the
 * token: the release takes L into its own claim, finds token 5, restores.
 * own: the release is the holder's own (DL17, as hf_lock handles release):
 * it judged "L is my directory" by the inode its live descriptor pins -
 * which no new directory can be given while it is open - and after the
 * take finds another inode in its claim: it restores L the same way. */
static void delayed_release(bool own)
{
	teardown(); /* this one runs on /tmp, not on the suite's tmpfs */
	setup_in("/tmp");
	pid_t life2 = dl_life(), life5 = dl_life();
	char *ra0 = res("A0"), *ra1 = res("A1");
	struct hft_child A0, A1, B;
	struct dl_acq a0 = { .path = lock, .ovl = ovl, .life = life2, .result = ra0,
			     .own_release = own };
	hft_spawn_fn(&A0, "pause:dirlock.release.judged", dl_acq, &a0);
	hft_expect(&A0, "dirlock.release.judged"); /* left, "L/owner is mine", delayed */
	ino_t i3 = ino_of(lock);
	dl_kill(life2);
	struct dl_acq a1 = { .path = lock, .ovl = ovl, .life = life5, .result = ra1 };
	hft_spawn_fn(&A1, "pause:test.cs", dl_acq, &a1);
	hft_expect(&A1, "test.cs");                /* reaped dir 3, made dir 4, entered */
	ino_t i4 = ino_of(lock);
	cr_log_info("released dir inode %lu, successor's %lu: %s", (unsigned long)i3,
		    (unsigned long)i4, i3 == i4 ? "REUSED" : "not reused this time");
	if (own)
		cr_assert_neq(i3, i4, "a pinned inode is never handed to a new directory");
	hft_go(&A0);                               /* takes L, finds token 5, restores */
	cr_assert_eq(hft_wait(&A0), DL_RELFAIL, "nothing of A0's was left to release");
	held_by_result(ra1);
	struct dl_acq b = { .path = lock, .ovl = ovl };
	hft_spawn_fn(&B, NULL, dl_acq, &b);
	cr_assert_eq(hft_wait(&B), DL_HELD);
	hft_go(&A1);
	cr_assert_eq(hft_wait(&A1), DL_ENTERED);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	cr_assert_eq(dl_claims(lock), 0);
	dl_kill(life5);
	comes_back();
	free(ra0);
	free(ra1);
}

Test(trail, inode_number_reuse)
{
	delayed_release(false);
}

Test(trail, inode_number_reuse_own_release)
{
	delayed_release(true);
}

/* The same delayed withdrawal with a successful restore: A1's directory
 * goes back to L with its record, and a newcomer finds it held. */
Test(trail, delayed_withdrawal_restores_the_successor)
{
	pid_t lb = dl_life(), life2 = dl_life(), life5 = dl_life();
	{
		struct hf_lock_opts o = { .path = lock };
		struct hf_lock_info got, h;
		cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
		cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
		close(got.live_fd);
	close(got.live_fd);
		char *c = dl_path(state, "c-0000000000003-00000000000000bb");
		dl_write_record(c, lb, hf_sys_now_ms(), 1, 0, NULL);
		free(c);
	}
	char *ra1 = res("A1");
	struct hft_child A0, A1, B;
	struct dl_acq a0 = { .path = lock, .life = life2 };
	hft_spawn_fn(&A0, "pause:dirlock.withdraw.judged", dl_acq, &a0);
	hft_expect(&A0, "dirlock.withdraw.judged");
	dl_kill(life2);
	dl_kill(lb);
	dl_wait_age(lock, 20);
	struct dl_acq a1 = { .path = lock, .ovl = ovl, .life = life5, .result = ra1,
			     .stale_ms = 20 };
	hft_spawn_fn(&A1, "pause:test.cs", dl_acq, &a1);
	hft_expect(&A1, "test.cs");
	hft_go(&A0);
	cr_assert_eq(hft_wait(&A0), DL_BARRIER);
	held_by_result(ra1);
	struct dl_acq b = { .path = lock, .ovl = ovl };
	hft_spawn_fn(&B, NULL, dl_acq, &b);
	cr_assert_eq(hft_wait(&B), DL_HELD);
	hft_go(&A1);
	cr_assert_eq(hft_wait(&A1), DL_ENTERED);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	dl_kill(life5);
	comes_back();
	free(ra1);
}

/* cex-misjudged-live-holder.txt: a live holder judged stale (here: leaked,
 * past max(max-hold, stale) - suspended too long) is reaped while it still
 * believes it holds the lock. No directory protocol can prevent that; the
 * fence can: the successor's fence is greater, so a resource that keeps the
 * greatest fence it has seen refuses the old holder's writes. */
Test(trail, misjudged_live_holder_is_fenced)
{
	char *ra = res("A"), *rb = res("B");
	struct hft_child A, B;
	struct dl_acq a = { .path = lock, .ovl = ovl, .result = ra, .max_hold_ms = 1,
			    .stale_ms = 1 };
	hft_spawn_fn(&A, "pause:test.cs", dl_acq, &a);
	hft_expect(&A, "test.cs");
	int rc;
	uint64_t fa, fb;
	dl_result(ra, &rc, &fa, NULL);
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	while (hf_sys_now_ms() - i.owner.time_ms <= 2)
		; /* let A's record age past its 1 ms ceiling */
	struct dl_acq b = { .path = lock, .result = rb, .stale_ms = 1, .no_release = false };
	hft_spawn_fn(&B, NULL, dl_acq, &b);
	cr_assert_eq(hft_wait(&B), DL_ENTERED, "B reaps A as leaked");
	dl_result(rb, &rc, &fb, NULL);
	cr_assert_gt(fb, fa, "the successor's fence is greater");
	uint64_t resource_max = fb; /* what the resource saw from B */
	cr_assert(fa < resource_max, "A's write with fence %" PRIu64 " is refused", fa);
	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_RELFAIL, "A's release: its record is gone");
	free(ra);
	free(rb);
}

/* cex-rename-fallback.txt: R0's outdated verdict (about a record-less L)
 * takes A1's fresh directory; A0 makes the next; the seed's restore then
 * replaced A0's empty directory and both published into one directory by
 * check-then-rename. Here the restore never replaces (NOREPLACE), and each
 * publishes into its own directory (DL1): A1's record lands in R0's claim,
 * its own look finds it there, it withdraws it (DL10); A0, at L, enters. *
 * R0 keeps the default stale window: the crashed acquirer's directory is
 * abandoned at once (its kernel lock is free), and A0's record-less
 * directory, which R0 judges after its failed restore, must stay held
 * however long the schedule takes (with a 20 ms window a loaded machine
 * let R0 reap it as a stopped maker's and enter: 3 of 160 loaded runs).
 */
Test(trail, rename_fallback)
{
	cr_assert_eq(mkdir(lock, 0700), 0);         /* a crashed acquirer's dir */
	struct hft_child R0, A1, A0;
	struct dl_acq r0 = { .path = lock }; /* the default stale window: see above */
	hft_spawn_fn(&R0, "pause:dirlock.reap.judged;pause:claim.restore.checked", dl_acq, &r0);
	hft_expect(&R0, "dirlock.reap.judged");     /* judged: record-less, abandoned */
	cr_assert_eq(rmdir(lock), 0);               /* another reaper removed it */
	char *ra1 = res("A1"), *ra0 = res("A0");
	struct dl_acq a1 = { .path = lock, .ovl = ovl, .result = ra1 };
	hft_spawn_fn(&A1, "pause:dirlock.acquire.opened;pause:test.cs", dl_acq, &a1);
	hft_expect(&A1, "dirlock.acquire.opened");  /* 6: mkdir L -> dir 3 */
	hft_go(&R0);                                /* 21-22: takes dir 3, not the judged one */
	hft_expect(&R0, "claim.restore.checked");
	struct dl_acq a0 = { .path = lock, .ovl = ovl, .result = ra0 };
	hft_spawn_fn(&A0, "pause:dirlock.acquire.opened;pause:test.cs", dl_acq, &a0);
	hft_expect(&A0, "dirlock.acquire.opened");  /* 23: mkdir L -> dir 4 */
	ino_t d4 = ino_of(lock);
	hft_go(&R0);                                /* 24: restore must NOT replace dir 4 */
	cr_assert_eq(hft_wait(&R0), DL_HELD);
	cr_assert_eq(ino_of(lock), d4, "the restore replaced a fresh directory");
	hft_go(&A1);                                /* publishes into dir 3, in the claim */
	cr_assert_eq(hft_wait(&A1), DL_HELD, "denied by its own record in the claim");
	hft_go(&A0);                                /* publishes into dir 4, at L */
	hft_expect(&A0, "test.cs");
	held_by_result(ra0);
	hft_go(&A0);
	cr_assert_eq(hft_wait(&A0), DL_ENTERED);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	comes_back();
	free(ra1);
	free(ra0);
}

/* cex-rename-fallback-noreplace.txt: a verdict "L has no record" is applied
 * to a different record-less directory, and in the seed an acquirer's stat
 * picked up the next acquirer's directory: two acquirers recorded one
 * directory. Here an acquirer only ever publishes into its own (DL1): A0's
 * record lands in R0's claim and is withdrawn from there; A1's fence check
 * sees A0's later fence and A1 tries again; one holder, A1. */
Test(trail, rename_fallback_noreplace)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	dl_wait_age(lock, 20);
	struct hft_child R0, A0, A1;
	struct dl_acq r0 = { .path = lock, .stale_ms = 20 };
	hft_spawn_fn(&R0, "pause:dirlock.reap.judged;pause:dirlock.reap.taken", dl_acq, &r0);
	hft_expect(&R0, "dirlock.reap.judged");
	cr_assert_eq(rmdir(lock), 0);
	char *ra0 = res("A0"), *ra1 = res("A1");
	struct dl_acq a0 = { .path = lock, .ovl = ovl, .result = ra0 };
	hft_spawn_fn(&A0, "pause:dirlock.acquire.made;pause:dirlock.acquire.fenced;pause:test.cs",
		     dl_acq, &a0);
	hft_expect(&A0, "dirlock.acquire.made");    /* 16: mkdir L -> dir 3 */
	hft_go(&R0);
	hft_expect(&R0, "dirlock.reap.taken");      /* 17: dir 3 moved away */
	struct dl_acq a1 = { .path = lock, .ovl = ovl, .result = ra1 };
	hft_spawn_fn(&A1, "pause:dirlock.acquire.fenced;pause:test.cs", dl_acq, &a1);
	hft_expect(&A1, "dirlock.acquire.fenced");  /* 21-23: mkdir L -> dir 4 */
	hft_go(&A0);
	hft_expect(&A0, "dirlock.acquire.fenced");  /* 25: A0 fenced, its dir 3 in the claim */
	hft_go(&A0);                                /* its record lands in dir 3: a barrier */
	cr_assert_eq(hft_wait(&A0), DL_HELD, "A0 withdrew from the claim, found A1 at L");
	hft_go(&A1);                                /* its fence check sees A0's later fence */
	hft_expect(&A1, "test.cs");                 /* ... and its next attempt enters */
	held_by_result(ra1);
	hft_go(&R0);                                /* its claim was swept meanwhile */
	cr_assert_eq(hft_wait(&R0), DL_HELD);
	hft_go(&A1);
	cr_assert_eq(hft_wait(&A1), DL_ENTERED);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	comes_back();
	free(ra0);
	free(ra1);
}

/* cex-withdraw-by-fd-plus-sweep.txt: R1 (outdated verdict about token 4)
 * takes A0's directory (token 2) and means to restore it; A1 makes a fresh
 * L; A0 withdraws; in the seed a sweeper emptied R1's claim in place and
 * R1's restore put the emptied directory back over A1's, which A1 then
 * adopted while A0 still held an fd on it. Here A0 unlinks its own record
 * through its descriptor (DL10); R1's restore re-checks the token it read
 * and finds it gone, so nothing goes back over A1's L (NOREPLACE anyway);
 * A1 only ever publishes into its own directory, enters; the record-less
 * claim is swept once A0's kernel lock is gone. */
Test(trail, withdraw_by_fd_plus_sweep)
{
	dl_dead_holder(lock);
	pid_t life4 = dl_life(), life2 = dl_life(), life5 = dl_life();
	struct hft_child A1a, R1, A0, A1;
	tok4_left(&A1a, life4);                     /* 6-13 */
	dl_kill(life4);
	struct dl_acq r1 = { .path = lock };
	hft_spawn_fn(&R1, "pause:dirlock.reap.judged;pause:claim.restore.checked", dl_acq, &r1);
	hft_expect(&R1, "dirlock.reap.judged");     /* 14: judges tok 4 stale */
	hft_go(&A1a);                               /* releases */
	cr_assert_eq(hft_wait(&A1a), DL_ENTERED);
	char *ra0 = res("A0"), *ra1 = res("A1");
	struct dl_acq a0 = { .path = lock, .ovl = ovl, .life = life2, .result = ra0 };
	hft_spawn_fn(&A0, "pause:dirlock.acquire.published;pause:dirlock.withdraw.unlinked", dl_acq,
		     &a0);
	hft_expect(&A0, "dirlock.acquire.published"); /* 21-24: tok 2 in dir 3 */
	hft_go(&R1);                                /* 25-26: takes dir 3, owner 2 != 4 */
	hft_expect(&R1, "claim.restore.checked");
	struct dl_acq a1 = { .path = lock, .ovl = ovl, .life = life5, .result = ra1 };
	hft_spawn_fn(&A1, "pause:dirlock.acquire.made;pause:test.cs", dl_acq, &a1);
	hft_expect(&A1, "dirlock.acquire.made");    /* 27: fresh dir 4 at L */
	ino_t d4 = ino_of(lock);
	hft_go(&A0);                                /* 28-31: denied by its own record */
	hft_expect(&A0, "dirlock.withdraw.unlinked"); /* in R1's claim: unlinked through its fd */
	hft_go(&R1);                                /* 32: the restore */
	cr_assert_eq(hft_wait(&R1), DL_HELD);
	cr_assert_eq(ino_of(lock), d4, "an emptied directory was put back over A1's");
	hft_go(&A0);
	cr_assert_eq(hft_wait(&A0), DL_HELD, "A0 swept its leftover, found A1 at L");
	hft_go(&A1);                                /* 34-39: A1 enters its own dir 4 */
	hft_expect(&A1, "test.cs");
	held_by_result(ra1);
	hft_go(&A1);
	cr_assert_eq(hft_wait(&A1), DL_ENTERED);
	cr_assert_eq(dl_ovl_count(ovl), 0);
	cr_assert_eq(dl_claims(lock), 0);
	dl_kill(life2);
	dl_kill(life5);
	comes_back();
	free(ra0);
	free(ra1);
}

/* The schedule of the 0.1 bug "a failed attempt leaves its record at L": a
 * reaper R judges a dead owner, the directory is removed, A publishes, R
 * takes A's directory into its claim, A's look finds its own record in R's
 * claim and starts to withdraw, R restores A's directory, and 0.1's A then
 * searched the claims, found nothing and left: L held by A's record while
 * A's owner lived (max-hold, 10 min). Here A unlinks its record through its
 * descriptor (DL10): nothing of A's is left anywhere; A starts again (DL20:
 * the claim held only its own directory), enters and releases, and the next
 * acquirer gets L at once although A's owner lives on. */
Test(trail, failed_attempt_leaves_no_record_of_its_own)
{
	dl_dead_holder(lock);                               /* X, dead */
	pid_t lifeA = dl_life();
	struct hft_child R, A;
	struct dl_acq r = { .path = lock };
	hft_spawn_fn(&R, "pause:dirlock.reap.judged;pause:claim.restore.checked", dl_acq, &r);
	hft_expect(&R, "dirlock.reap.judged");             /* R: X is dead */
	comes_back();                                       /* another reaps X's directory */
	char *ra = res("A");
	struct dl_acq a = { .path = lock, .ovl = ovl, .life = lifeA, .result = ra };
	hft_spawn_fn(&A, "pause:dirlock.acquire.published;pause:dirlock.withdraw.unlinked", dl_acq,
		     &a);
	hft_expect(&A, "dirlock.acquire.published");       /* A's record at L */
	hft_go(&R);                                         /* R takes A's directory */
	hft_expect(&R, "claim.restore.checked");           /* not X's: about to put it back */
	hft_go(&A);                                         /* A's look: its record in R's claim */
	hft_expect(&A, "dirlock.withdraw.unlinked");       /* unlinked through its descriptor */
	hft_go(&R);                                         /* R restores A's (now empty) directory */
	hft_wait(&R);
	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_ENTERED, "DL20: refused by nobody but itself");
	cr_assert_eq(dl_ovl_count(ovl), 0);
	/* A's owner lives; nothing of A's may hold L */
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	cr_assert(i.state == HF_LOCK_FREE || i.state == HF_LOCK_ABANDONED,
		  "state %d (owner pid %lld): a record of the failed attempt remains", i.state,
		  (long long)i.owner.pid);
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0, "L at once");
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
	dl_kill(lifeA);
	free(ra);
}

static const char *rel_token;

static int release_by_token(void *arg)
{
	(void)arg;
	struct hf_lock_info h;
	int rc = hf_dirlock_release(lock, rel_token, &h);
	return rc == 0 || rc == HF_ENOTHELD || rc == HF_ENOTYOURS ? 0 : 1;
}

/* DL20: a release by token that looked at L while the token's record was
 * there, and took L after it changed hands, holds the next acquirer's new
 * directory in its claim. That acquirer, trying once, meets its own record
 * there: a claim that hides nobody but itself. It starts again and enters
 * (it was refused "a claim beside it denies entry", naming itself -
 * tests/run/test_callers.c's background_subshell met it). */
Test(trail, a_try_once_acquirer_is_not_refused_by_its_own_directory_in_a_claim)
{
	char tok[HF_TOKEN_LEN + 1];
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms(), 7, 0, tok);
	rel_token = tok;
	struct hft_child R, A;
	hft_spawn_fn(&R, "pause:dirlock.release.judged:1;pause:dirlock.release.taken:1",
		     release_by_token, NULL);
	hft_expect(&R, "dirlock.release.judged"); /* L's record was the token's */
	dl_kill(life);                            /* its owner is dead: reapable */
	static struct dl_acq a;
	char *result = res("A");
	a = (struct dl_acq){ .path = lock, .ovl = ovl, .result = result };
	hft_spawn_fn(&A, "pause:dirlock.acquire.published:1;pause:dirlock.acquire.denied:1", dl_acq,
		     &a);
	hft_expect(&A, "dirlock.acquire.published"); /* reaped it, published at L */
	hft_go(&R);
	hft_expect(&R, "dirlock.release.taken"); /* L - A's directory - in R's claim */
	hft_go(&A);
	hft_expect(&A, "dirlock.acquire.denied"); /* its look met its own record there */
	hft_go(&R);
	cr_assert_eq(hft_wait(&R), 0); /* not the token's: back to L it went (DL4) */
	hft_go(&A);
	cr_assert_eq(hft_wait(&A), DL_ENTERED, "the acquirer was refused by its own record");
	cr_assert_eq(dl_ovl_count(ovl), 0);
	comes_back();
	free(result);
}
