/* Staleness verdicts (dirlock.c DL6) and fences (fence.c FC1): a dead owner is reaped
 * at once, a record-less or unreadable lock after the stale window, a live
 * owner older than max(max-hold, stale) as leaked; every acquisition's
 * fence is greater than every earlier one across reaps, crashes at every
 * step and system call, and a reboot. */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir, *lock, *state;

static void setup(void)
{
	dir = hft_tmpdir();
	lock = dl_path(dir, "L");
	state = dl_path(dir, "L.holdfast");
}

static void teardown(void)
{
	hf_fault_inject(NULL, NULL, 0);
	hft_rmtree(dir);
	free(dir);
	free(lock);
	free(state);
}

TestSuite(stale, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(fence, .init = setup, .fini = teardown, .timeout = 120);

#define HOUR (3600LL * 1000)

static int try_once(int64_t stale_ms, struct hf_lock_info *got, struct hf_lock_info *h)
{
	struct hf_lock_opts o = { .path = lock, .stale_ms = stale_ms };
	memset(h, 0, sizeof *h);
	int rc = hf_dirlock_acquire(&o, got, h);
	if (rc == 0) {
		cr_assert_eq(hf_dirlock_release(lock, got->owner.token, h), 0);
		close(got->live_fd);
	}
	return rc;
}

static int state_of(void)
{
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	return i.state;
}

Test(stale, dead_owner_is_reaped_at_once)
{
	pid_t life = dl_life();
	struct hf_lock_opts o = { .path = lock, .pid = life };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
	cr_assert_eq(state_of(), HF_LOCK_HELD);
	dl_kill(life);
	cr_assert_eq(state_of(), HF_LOCK_DEAD);
	struct hf_lock_info g2;
	cr_assert_eq(try_once(0, &g2, &h), 0, "default windows: no waiting for a proven death");
	cr_assert_gt(g2.fence, got.fence);
}

Test(stale, live_owner_is_held_and_named)
{
	pid_t life = dl_life();
	struct hf_lock_opts o = { .path = lock, .pid = life };
	struct hf_lock_info got, h, g2;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
	cr_assert_eq(try_once(0, &g2, &h), HF_EHELD);
	cr_assert_eq(h.owner.pid, life);
	cr_assert_str_eq(h.owner.host, hf_host_name());
	cr_assert_str_eq(h.owner.token, got.owner.token);
	cr_assert_eq(h.fence, got.fence);
	cr_assert_geq(h.age_ms, 0);
	cr_assert_lt(h.age_ms, 60000);
	dl_kill(life);
}

/* A live owner whose record is 2 h old: leaked past max(max-hold, stale). */
Test(stale, leaked_owner_is_reaped)
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms() - 2 * HOUR, 7, 0, NULL);
	cr_assert_eq(state_of(), HF_LOCK_LEAKED);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(0, &got, &h), 0);
	dl_kill(life);
}

Test(stale, holders_recorded_max_hold_wins)
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms() - 2 * HOUR, 7, 3 * HOUR, NULL);
	cr_assert_eq(state_of(), HF_LOCK_HELD);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(0, &got, &h), HF_EHELD);
	cr_assert_eq(h.max_hold_ms, 3 * HOUR);
	dl_kill(life);
}

/* Leaked means past max(max-hold, stale): a reaper's longer stale window
 * protects an owner beyond its own max-hold. */
Test(stale, stale_window_bounds_the_leak_from_below)
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms() - 2 * 60000, 7, 60000, NULL);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(5 * 60000, &got, &h), HF_EHELD, "max(1 min, 5 min) > 2 min");
	cr_assert_eq(try_once(30000, &got, &h), 0, "max(1 min, 30 s) < 2 min: leaked");
	dl_kill(life);
}

Test(stale, future_dated_record_is_live_skew)
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms() + HOUR, 7, 1, NULL);
	cr_assert_eq(state_of(), HF_LOCK_SKEW);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(1, &got, &h), HF_EHELD, "a record from the future is live");
	dl_kill(life);
}

/* Another host's pid means nothing here: never dead by pid, only leaked. */
Test(stale, other_hosts_owner_is_never_dead_by_pid)
{
	pid_t gone = dl_life();
	char tok[HF_TOKEN_LEN + 1];
	dl_write_record(lock, gone, hf_sys_now_ms(), 7, 0, tok);
	dl_kill(gone);
	cr_assert_eq(state_of(), HF_LOCK_DEAD);
	/* another host: another name and another kernel (boot id) */
	char *p = dl_path(lock, "owner"), *s = hft_slurp(p);
	char *h = strstr(s, hf_host_name()), *b = strstr(s, hf_boot_id());
	cr_assert(h && b && b < h);
	char *fixed;
	cr_assert_geq(asprintf(&fixed, "%.*s%s%.*selsewhere%s", (int)(b - s), s,
			       "00000000-0000-4000-8000-000000000000", (int)(h - b - HF_BOOTID_LEN),
			       b + HF_BOOTID_LEN, h + strlen(hf_host_name())),
		      0);
	hft_write(p, fixed);
	cr_assert_eq(state_of(), HF_LOCK_HELD);
	struct hf_lock_info got, hh;
	cr_assert_eq(try_once(0, &got, &hh), HF_EHELD);
	cr_assert_str_eq(hh.owner.host, "elsewhere");
	free(p);
	free(s);
	free(fixed);
}

/* The kernel lock of a directory (DL9): its maker holds it shared from
 * before the directory is at L until it publishes or withdraws. */
static int maker_lock(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_SH | LOCK_NB), 0);
	return fd;
}

/* A directory without a record and without a maker holding its kernel
 * lock (an acquirer SIGKILLed before publishing, a mkdir by hand) has no
 * attributable owner: reaped at once, whatever the stale window. */
Test(stale, record_less_lock_without_its_maker_is_reaped_at_once)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	cr_assert_eq(state_of(), HF_LOCK_ABANDONED);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(HOUR, &got, &h), 0, "no waiting out a window for the dead");
}

/* Its maker alive (between the rename to L and publication): held while
 * young - age from the directory's ctime - and reaped after the stale
 * window (a maker stopped there). */
Test(stale, record_less_lock_of_a_live_maker_after_the_stale_window)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	int maker = maker_lock(lock);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(60000, &got, &h), HF_EHELD);
	cr_assert(h.partial);
	cr_assert_eq(h.state, HF_LOCK_PARTIAL);
	cr_assert_eq(state_of(), HF_LOCK_PARTIAL);
	dl_wait_age(lock, 30);
	cr_assert_eq(try_once(30, &got, &h), 0);
	close(maker);
}

/* Only the kernel sets ctime: an mtime set decades back does not age it. */
Test(stale, mtime_is_never_the_age)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	int maker = maker_lock(lock);
	struct timespec old[2] = { { 1, 0 }, { 1, 0 } };
	cr_assert_eq(utimensat(AT_FDCWD, lock, old, 0), 0);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(60000, &got, &h), HF_EHELD);
	cr_assert_lt(h.age_ms, 60000, "age %" PRId64 " ms", h.age_ms);
	close(maker);
}

/* A dead owner dated in the future is dead: death is proof whatever the
 * record's date (skew is judged only for the living). */
Test(stale, dead_owner_dated_in_the_future_is_reaped)
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms() + HOUR, 7, 0, NULL);
	cr_assert_eq(state_of(), HF_LOCK_SKEW);
	dl_kill(life);
	cr_assert_eq(state_of(), HF_LOCK_DEAD);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(0, &got, &h), 0);
}

/* A record without "acquired" is not dated 1970: its age is the
 * directory's (ctime), so a live owner is not reaped as leaked. */
Test(stale, record_without_time_is_dated_by_its_directory)
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms(), 7, 0, NULL);
	char *p = dl_path(lock, "owner"), *s = hft_slurp(p);
	json_t *j = json_loads(s, 0, NULL);
	cr_assert_not_null(j);
	json_object_del(j, "acquired");
	json_object_del(j, "boottime_ms");
	char *t = json_dumps(j, JSON_COMPACT);
	hft_write(p, t);
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	cr_assert_eq(i.state, HF_LOCK_HELD, "state %d, age %" PRId64, i.state, i.age_ms);
	cr_assert_lt(i.age_ms, 60000);
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(0, &got, &h), HF_EHELD);
	dl_kill(life);
	json_decref(j);
	free(t);
	free(s);
	free(p);
}

/* A holder on this kernel whose wall clock is ahead (or a judge whose clock
 * is): ages are boot-relative, so neither makes a live owner look leaked
 * or dated in the future. */
Test(stale, wall_clock_step_does_not_age_a_record_of_this_kernel)
{
	pid_t life = dl_life();
	struct hf_lock_opts o = { .path = lock, .pid = life };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
	close(got.live_fd);
	cr_assert_eq(hf_fault_inject("skew:wall:+7200000", NULL, 0), 0); /* our clock: 2 h ahead */
	cr_assert_eq(state_of(), HF_LOCK_HELD, "not leaked by a 2 h step");
	cr_assert_eq(hf_fault_inject("skew:wall:-7200000", NULL, 0), 0);
	cr_assert_eq(state_of(), HF_LOCK_HELD, "nor dated in the future");
	cr_assert_eq(hf_fault_inject(NULL, NULL, 0), 0);
	dl_kill(life);
}

Test(stale, unreadable_record_refused_then_reaped)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	char *p = dl_path(lock, "owner");
	hft_write(p, "{\"token\": \"half-writ");
	struct hf_lock_info got, h;
	cr_assert_eq(try_once(60000, &got, &h), HF_EUNREADABLE);
	cr_assert(h.partial);
	cr_assert(hft_exists(p), "refused: nothing changed");
	dl_wait_age(lock, 30);
	cr_assert_eq(try_once(30, &got, &h), 0);
	free(p);
}

/* --- fences --------------------------------------------------------------- */

static uint64_t acquire_release(int64_t wait_ms, int64_t stale_ms)
{
	struct hf_lock_opts o = { .path = lock, .wait_ms = wait_ms, .stale_ms = stale_ms };
	struct hf_lock_info got, h;
	int rc = hf_dirlock_acquire(&o, &got, &h);
	cr_assert_eq(rc, 0, "the lock must come back: %s", hf_strerror(rc));
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
	return got.fence;
}

Test(fence, increases_across_release_and_reap)
{
	uint64_t f1 = acquire_release(0, 0);
	char *r = dl_path(dir, "r");
	struct dl_acq a = { .path = lock, .result = r };
	struct hft_child c;
	hft_spawn_fn(&c, "crash:test.cs", dl_acq, &a); /* dies holding */
	cr_assert_eq(hft_wait(&c), 128 + 9);
	int rc;
	uint64_t f2;
	dl_result(r, &rc, &f2, NULL);
	uint64_t f3 = acquire_release(0, 0);
	cr_assert(f1 < f2 && f2 < f3, "%" PRIu64 " %" PRIu64 " %" PRIu64, f1, f2, f3);
	free(r);
}

/* A crash at every named step of an acquisition: the next one recovers the
 * lock (a record-less directory after the stale window) with a greater
 * fence than any handed out before. */
Test(fence, crash_at_every_step_of_acquire)
{
	static const char *points[] = {
		"dirlock.acquire.made",    "dirlock.acquire.opened", "dirlock.acquire.fenced",
		"dirlock.acquire.published", "dirlock.acquire.scanned", "dirlock.acquire.readback",
		"dirlock.acquire.entered",
	};
	uint64_t last = acquire_release(0, 0);
	char *cnt = dl_path(state, "fence");
	for (size_t i = 0; i < HF_ARRAY_SIZE(points); i++) {
		char rule[96];
		snprintf(rule, sizeof rule, "crash:%s", points[i]);
		struct dl_acq a = { .path = lock };
		struct hft_child c;
		hft_spawn_fn(&c, rule, dl_acq, &a);
		cr_assert_eq(hft_wait(&c), 128 + 9, "crash at %s", points[i]);
		char *s = hft_slurp(cnt);
		uint64_t counted = strtoull(s, NULL, 10);
		free(s);
		uint64_t f = acquire_release(10000, 30);
		cr_assert_gt(f, last, "after a crash at %s", points[i]);
		cr_assert_gt(f, counted, "after a crash at %s", points[i]);
		last = f;
	}
	free(cnt);
}

static int acquire_crash_release(void *arg)
{
	const char *rule = arg;
	dl_orphan_guard();
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	if (hf_dirlock_acquire(&o, &got, &h) != 0)
		return 3;
	hf_fault_inject(rule, NULL, 0);
	int rrc = hf_dirlock_release(lock, got.owner.token, &h);
	close(got.live_fd);
	return rrc == 0 ? 0 : 4;
}

/* A crash at every system call of acquire, then of release: the lock comes
 * back every time and fences keep increasing. */
Test(fence, crash_at_every_syscall)
{
	uint64_t last = acquire_release(0, 0);
	char *cnt = dl_path(state, "fence");
	int crashes[2] = { 0, 0 };
	for (int phase = 0; phase < 2; phase++) {
		for (int n = 1; n < 200; n++) {
			char rule[32];
			snprintf(rule, sizeof rule, "crash:*:%d", n);
			struct dl_acq a = { .path = lock };
			struct hft_child c;
			if (phase == 0)
				hft_spawn_fn(&c, rule, dl_acq, &a);
			else
				hft_spawn_fn(&c, NULL, acquire_crash_release, rule);
			int st = hft_wait(&c);
			if (st == 0)
				break; /* past the last system call: done */
			cr_assert_eq(st, 128 + 9, "phase %d call %d: status %d", phase, n, st);
			crashes[phase]++;
			char *s = hft_slurp(cnt);
			uint64_t counted = s ? strtoull(s, NULL, 10) : 0;
			free(s);
			uint64_t f = acquire_release(10000, 30);
			cr_assert_gt(f, last, "phase %d, crash at call %d", phase, n);
			cr_assert_gt(f, counted);
			last = f;
		}
	}
	cr_log_info("crashed acquire at %d calls, release at %d", crashes[0], crashes[1]);
	cr_assert_gt(crashes[0], 15);
	cr_assert_gt(crashes[1], 5);
	/* a release crashed between unlinking its record and rmdir leaves a
	 * record-less claim: swept once older than the stale window */
	DIR *d = opendir(state);
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "c-", 2)) {
			char *p = dl_path(state, e->d_name);
			dl_wait_age(p, 30);
			free(p);
		}
	closedir(d);
	acquire_release(0, 30);
	cr_assert_eq(dl_claims(lock), 0, "stale claims were swept");
	free(cnt);
}

/* A new boot may have lost unsynced counter writes: the counter then
 * restarts from the durable reservation, above every fence handed out. */
Test(fence, reboot_restarts_from_the_reservation)
{
	uint64_t f = 0;
	for (int i = 0; i < 5; i++)
		f = acquire_release(0, 0);
	char *cnt = dl_path(state, "fence"), *res = dl_path(state, "fence.reserve");
	char *r = hft_slurp(res);
	cr_assert_geq(strtoull(r, NULL, 10), f, "the reservation covers every fence");
	hft_write(cnt, "00000000000000000001 00000000000000000002 "
		       "00000000-0000-0000-0000-000000000000\n"); /* an older boot's */
	uint64_t g = acquire_release(0, 0);
	cr_assert_gt(g, f);
	hft_write(cnt, "garbage");
	uint64_t h = acquire_release(0, 0);
	cr_assert_gt(h, g);
	cr_assert_eq(unlink(res), 0);
	hft_write(cnt, "garbage");
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, hh;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &hh), HF_EUNREADABLE,
		     "no counter and no reservation: refuse rather than repeat a fence");
	free(r);
	free(cnt);
	free(res);
}

/* hf_dirlock_hold: a commit is allowed only while the lock provably is still
 * the caller's: the fence counter shows its fence (nobody entered since)
 * and its record is at the lock (not reaped). */
Test(fence, hold_only_while_still_the_holder)
{
	pid_t life = dl_life();
	struct hf_lock_opts o = { .path = lock, .pid = life };
	struct hf_lock_info a, b, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &a, &h), 0);
	int guard = -1;
	cr_assert_eq(hf_dirlock_hold(lock, &a, &guard), 0, "still ours");
	cr_assert_geq(guard, 0);
	hf_dirlock_unhold(guard);

	/* reaped (its owner died) but not acquired again: the record is gone */
	dl_kill(life);
	struct hf_lock_opts r = { .path = lock };
	cr_assert_eq(hf_dirlock_acquire(&r, &b, &h), 0, "the dead owner is reaped");
	cr_assert_eq(hf_dirlock_hold(lock, &a, &guard), HF_ELOST, "acquired since: lost");
	cr_assert_eq(hf_dirlock_hold(lock, &b, &guard), 0);
	hf_dirlock_unhold(guard);
	cr_assert_eq(hf_dirlock_release(lock, b.owner.token, &h), 0);
	close(b.live_fd);
	close(a.live_fd);
	cr_assert_eq(hf_dirlock_hold(lock, &b, &guard), HF_ELOST, "released: lost");
}

/* While one holds the guard, an acquirer cannot pass its fence step: the
 * counter's exclusive flock waits for the guard. */
Test(fence, hold_keeps_the_next_acquirer_before_its_fence)
{
	pid_t life = dl_life();
	struct hf_lock_opts o = { .path = lock, .pid = life };
	struct hf_lock_info a, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &a, &h), 0);
	int guard = -1;
	cr_assert_eq(hf_dirlock_hold(lock, &a, &guard), 0);
	dl_kill(life); /* now reapable: the next acquirer gets in as far as DA3 */
	char *counter = dl_path(state, "fence");
	int fd = open(counter, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), -1, "the guard holds the counter shared");
	hf_dirlock_unhold(guard);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0, "let go");
	close(fd);
	free(counter);
}
