/* Stress with an overlap detector: 8 processes x thousands of acquisitions,
 * then the same under a storm of SIGKILLs aimed at holders and acquirers
 * alike. Never two live holders, fences strictly increasing, and the lock
 * always comes back. No sleeps: the storm is paced by the acquisitions it
 * watches in shared memory.
 *
 * HF_STRESS_SCALE=PERCENT scales the work (the ASan build uses 25 % by
 * default: it is several times slower). */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 8

struct shared {
	int64_t holder;          /* pid of the last holder to enter         */
	uint64_t holder_start;
	uint64_t last_fence;
	long acquisitions;
	long overlaps;           /* entered beside a live holder            */
	long fence_bad;          /* a fence not above the previous one      */
	long errors;
};

static char *dir, *lock;
static struct shared *sh;

static void setup(void)
{
	dir = hft_tmpdir();
	lock = dl_path(dir, "L");
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	memset(sh, 0, sizeof *sh);
}

static void teardown(void)
{
	munmap(sh, sizeof *sh);
	hft_rmtree(dir);
	free(dir);
	free(lock);
}

TestSuite(stress, .init = setup, .fini = teardown, .timeout = 240);


static bool alive(int64_t pid, uint64_t start)
{
	uint64_t now;
	return pid > 0 && hf_pid_start((pid_t)pid, &now) == 0 && now == start;
}

/* The overlap detector. A holder publishes itself (pid, start time) on
 * entry and clears the pid on exit. Entering while another LIVE process is
 * published as inside is an overlap, and so is finding, on leaving, that
 * another live process overwrote one's entry. A holder SIGKILLed anywhere in here
 * leaves at most its own (dead) pid behind, which no later entry counts:
 * the detector needs no repair after a kill (a counter of "inside" would
 * stay raised by a holder killed between its two updates: a false alarm). */
static void enter(uint64_t fence, uint64_t my_start)
{
	int64_t h = __atomic_load_n(&sh->holder, __ATOMIC_SEQ_CST);
	uint64_t hs = __atomic_load_n(&sh->holder_start, __ATOMIC_SEQ_CST);
	if (h && h != getpid() && alive(h, hs))
		__atomic_fetch_add(&sh->overlaps, 1, __ATOMIC_SEQ_CST);
	if (fence <= sh->last_fence)
		__atomic_fetch_add(&sh->fence_bad, 1, __ATOMIC_SEQ_CST);
	sh->last_fence = fence;
	__atomic_store_n(&sh->holder, 0, __ATOMIC_SEQ_CST); /* never a torn pair */
	__atomic_store_n(&sh->holder_start, my_start, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->holder, (int64_t)getpid(), __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&sh->acquisitions, 1, __ATOMIC_SEQ_CST);
}

static void leave(void)
{
	/* two entering at once both saw nobody: the later one overwrote the
	 * earlier, who sees it here, still alive, before leaving */
	int64_t h = __atomic_load_n(&sh->holder, __ATOMIC_SEQ_CST);
	uint64_t hs = __atomic_load_n(&sh->holder_start, __ATOMIC_SEQ_CST);
	if (h != getpid() && h && alive(h, hs))
		__atomic_fetch_add(&sh->overlaps, 1, __ATOMIC_SEQ_CST);
	if (h == getpid())
		__atomic_store_n(&sh->holder, 0, __ATOMIC_SEQ_CST);
}

/* n acquisitions (n < 0: until killed); own: released as the holder itself
 * (hf_dirlock_release_kept, DL17, as hf_lock handles do), else by token */
static void worker(int n, int64_t stale_ms, bool own)
{
	dl_orphan_guard();
	uint64_t start = 0;
	hf_pid_start(getpid(), &start);
	for (int i = 0; n < 0 || i < n; i++) {
		struct hf_dirlock_kept kept = HF_DIRLOCK_KEPT_NONE;
		struct hf_lock_opts o = { .path = lock, .wait_ms = -1, .stale_ms = stale_ms,
					  .kept = own ? &kept : NULL };
		struct hf_lock_info got, h;
		int rc = hf_dirlock_acquire(&o, &got, &h);
		if (rc != 0) {
			__atomic_fetch_add(&sh->errors, 1, __ATOMIC_SEQ_CST);
			continue;
		}
		enter(got.fence, start);
		leave();
		int rrc = own ? hf_dirlock_release_kept(lock, &got, &kept, &h)
			      : hf_dirlock_release(lock, got.owner.token, &h);
		close(got.live_fd);
		if (rrc != 0)
			__atomic_fetch_add(&sh->errors, 1, __ATOMIC_SEQ_CST);
	}
	_exit(0);
}

/* Acquire and release once: the fence the counter started from. */
static uint64_t first_fence(void)
{
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
	return got.fence;
}

/* worker i: the even ones release as holders (DL17), the odd ones by token */
static pid_t spawn(int i, int n, int64_t stale_ms)
{
	fflush(NULL);
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0)
		worker(n, stale_ms, i % 2 == 0);
	return p;
}

Test(stress, eight_processes_no_overlap)
{
	int n = dl_scaled(1500);
	pid_t w[WORKERS];
	uint64_t f0 = first_fence(); /* FC2: the counter starts at the wall clock */
	sh->last_fence = f0;
	int64_t t0 = hf_sys_mono_ns();
	for (int i = 0; i < WORKERS; i++)
		w[i] = spawn(i, n, 0);
	for (int i = 0; i < WORKERS; i++) {
		int st;
		cr_assert_eq(waitpid(w[i], &st, 0), w[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	double s = (hf_sys_mono_ns() - t0) / 1e9;
	cr_log_info("%d x %d acquisitions in %.2f s (%.0f/s)", WORKERS, n, s, WORKERS * n / s);
	cr_assert_eq(sh->acquisitions, (long)WORKERS * n);
	cr_assert_eq(sh->overlaps, 0);
	cr_assert_eq(sh->fence_bad, 0);
	cr_assert_eq(sh->errors, 0);
	cr_assert_eq(sh->last_fence - f0, (uint64_t)WORKERS * n, "no fence wasted under contention: %llu", (unsigned long long)sh->last_fence);
	cr_assert(!hft_exists(lock));
	cr_assert_eq(dl_claims(lock), 0);
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 16) & 0x7fff;
}

/* SIGKILLs at random moments (paced by progress, not by time): holders in
 * their critical section, acquirers between any two system calls, releasers
 * with their directory in a claim. Record-less leftovers are reaped after a
 * 200 ms stale window; dead owners at once. */
Test(stress, kill_storm_no_overlap_and_recovery)
{
	const int64_t stale = 200;
	int kills = dl_scaled(400);
	unsigned seed = (unsigned)getpid();
	pid_t w[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		w[i] = spawn(i, -1, stale);
	int64_t t0 = hf_sys_mono_ns();
	for (int k = 0; k < kills; k++) {
		long target = __atomic_load_n(&sh->acquisitions, __ATOMIC_SEQ_CST) + rnd(&seed) % 3;
		int64_t until = hf_sys_mono_ns() + 2000000000LL; /* progress or 2 s */
		while (__atomic_load_n(&sh->acquisitions, __ATOMIC_SEQ_CST) < target &&
		       hf_sys_mono_ns() < until)
			sched_yield();
		for (unsigned spin = rnd(&seed) % 2000; spin > 0; spin--)
			__asm__ volatile("" ::: "memory"); /* a random point in between */
		int i = (int)(rnd(&seed) % WORKERS);
		dl_kill(w[i]);
		w[i] = spawn(i, -1, stale);
	}
	long during = sh->acquisitions;
	for (int i = 0; i < WORKERS; i++)
		dl_kill(w[i]);
	double s = (hf_sys_mono_ns() - t0) / 1e9;
	cr_log_info("%d kills, %ld acquisitions in %.2f s", kills, during, s);
	cr_assert_eq(sh->overlaps, 0, "two live holders");
	cr_assert_eq(sh->fence_bad, 0);
	cr_assert_gt(during, kills / 2, "the lock kept changing hands during the storm");

	/* the lock always comes back */
	struct hf_lock_opts o = { .path = lock, .wait_ms = 10000, .stale_ms = stale };
	struct hf_lock_info got, h;
	int rc = hf_dirlock_acquire(&o, &got, &h);
	cr_assert_eq(rc, 0, "after the storm: %s", hf_strerror(rc));
	cr_assert_gt(got.fence, sh->last_fence);
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
}
