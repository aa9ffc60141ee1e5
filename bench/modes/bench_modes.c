/*
 * bench_modes.c - shared and slot holders of the directory lock beside
 * exclusive ones, through the C API (hf_lock_*), each figure a ratio of
 * sides measured in one run (bench/modes/run.sh drives it and prints the
 * tables; the protocol is src/lib/fs/dirlock.c "Modes", DS1-DS5, SM1-SM6).
 *
 * usage:
 *   bench-modes uncontended DIR [CYCLES [ROUNDS]]
 *       One process, acquire+release of DIR/L by four sides in rotation
 *       (cycle i of each side in the order that starts at side i mod 4, so
 *       no side always follows another): exclusive, shared, slots 4 (one
 *       handle each, as a program keeps it) and the bare system-call floor
 *       of an exclusive cycle (bench/dirlock/bare.h, the directory lock
 *       bench's). Per side: median, p99 and mean per cycle, the acquire's
 *       and the release's medians; ratios to exclusive and to the floor.
 *   bench-modes crowd DIR MODE N SECS HOLD_US [sleep|busy [WRITER_GAP_US]]
 *       N processes, started at one absolute CLOCK_MONOTONIC time, each
 *       loop for SECS: acquire DIR/C in MODE (exclusive, shared, slotsK;
 *       waiting without a deadline), hold HOLD_US (sleep: clock_nanosleep
 *       to an absolute monotonic deadline, timer slack 1 ns; busy: spin on
 *       the monotonic clock), release, and at once again. With
 *       WRITER_GAP_US one more process, the writer, loops: sleep the gap,
 *       acquire exclusive, hold HOLD_US, release. Every holder counts
 *       itself in shared memory while it holds: holders that cannot share
 *       seen together are overlaps (exit 1). One JSON line:
 *         acq_per_s           the N processes' acquisitions per second
 *         conc_mean, conc_max holders at once: held time / window, most seen
 *         wait_p50_us, _p99, _max   a contender's acquire call
 *         hold_mean_us        the hold as measured (the sleep's overshoot)
 *         w_n, w_p50_us, w_p99_us, w_max_us   the writer's acquire calls
 *         w_in_before         contenders' acquisitions that returned during
 *                             a writer's acquire call with a fence below
 *                             the writer's: ahead of it at L, legitimate
 *         w_in_after          the same with a fence above the writer's: got
 *                             in after the writer stood at L - the
 *                             writer-not-starved rule (SM4) says none
 *   bench-modes cycles DIR MODE N
 *       N acquire+release cycles of one mode and nothing else (for
 *       `perf stat` or `strace -c`: system calls per cycle).
 */
#include "holdfast.h"
#include "../dirlock/bare.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The p-th percentile of v (sorted, n > 0), in us. */
static double pct_us(const uint64_t *v, size_t n, double p)
{
	if (!n)
		return -1;
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1] / 1e3;
}

/* "exclusive", "shared", "slotsK" (1 <= K <= HF_SLOTS_MAX): mode and K. */
static int parse_mode(const char *s, int *mode, int *slots)
{
	*slots = 0;
	if (!strcmp(s, "exclusive"))
		*mode = HF_MODE_EXCLUSIVE;
	else if (!strcmp(s, "shared"))
		*mode = HF_MODE_SHARED;
	else if (!strncmp(s, "slots", 5) && (*slots = atoi(s + 5)) >= 1 && *slots <= HF_SLOTS_MAX)
		*mode = HF_MODE_SLOTS;
	else
		return -1;
	return 0;
}

static hf_lock *handle_for(const char *path, int mode, int slots)
{
	hf_lock *l;
	int rc = hf_lock_new(path, &l);
	if (!rc)
		rc = hf_lock_set(l, HF_OPT_MODE, mode);
	if (!rc && mode == HF_MODE_SLOTS)
		rc = hf_lock_set(l, HF_OPT_SLOTS, slots);
	if (!rc)
		rc = hf_lock_set(l, HF_OPT_WAIT_MS, -1);
	if (rc) {
		fprintf(stderr, "bench-modes: %s: %s\n", path, hf_strerror(rc));
		exit(1);
	}
	return l;
}

static void must(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "bench-modes: %s: %s\n", what, hf_strerror(rc));
		_exit(1);
	}
}

/* --- uncontended ---------------------------------------------------------- */

#define SIDES 4
static const char *side_name[SIDES] = { "bare floor", "exclusive", "shared", "slots 4" };

static void uncontended_side(int s, hf_lock **h, const char *dir, uint64_t *acq, uint64_t *all)
{
	uint64_t t0 = now_ns(), t1;
	if (s == 0) {
		bare_cycle(dir);
		t1 = now_ns();
		*acq = 0;
	} else {
		must(hf_lock_acquire(h[s]), "acquire");
		t1 = now_ns();
		must(hf_lock_release(h[s]), "release");
		*acq = t1 - t0;
	}
	*all = now_ns() - t0;
}

static int uncontended(const char *dir, size_t cycles, size_t rounds)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/L", dir);
	hf_lock *h[SIDES] = { NULL, handle_for(path, HF_MODE_EXCLUSIVE, 0),
			      handle_for(path, HF_MODE_SHARED, 0), handle_for(path, HF_MODE_SLOTS, 4) };
	bare_init();
	size_t n = cycles * rounds;
	uint64_t *all[SIDES], *acq[SIDES], *rel[SIDES];
	for (int s = 0; s < SIDES; s++) {
		all[s] = calloc(n, sizeof(uint64_t));
		acq[s] = calloc(n, sizeof(uint64_t));
		rel[s] = calloc(n, sizeof(uint64_t));
		if (!all[s] || !acq[s] || !rel[s])
			bare_die("calloc");
	}
	uint64_t a, t;
	/* the first library cycle makes L.holdfast and the counter; then a
	 * warm-up of every side */
	uncontended_side(1, h, dir, &a, &t);
	for (size_t i = 0; i < n / 10 + 1; i++)
		for (int k = 0; k < SIDES; k++)
			uncontended_side((int)((i + k) % SIDES), h, dir, &a, &t);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < SIDES; k++) {
			int s = (int)((i + k) % SIDES);
			uncontended_side(s, h, dir, &acq[s][i], &all[s][i]);
			rel[s][i] = all[s][i] - acq[s][i];
		}
	double med[SIDES], p99[SIDES], mean[SIDES], amed[SIDES], rmed[SIDES];
	for (int s = 0; s < SIDES; s++) {
		mean[s] = 0;
		for (size_t i = 0; i < n; i++)
			mean[s] += (double)all[s][i] / 1e3 / (double)n;
		qsort(all[s], n, sizeof(uint64_t), cmp_u64);
		qsort(acq[s], n, sizeof(uint64_t), cmp_u64);
		qsort(rel[s], n, sizeof(uint64_t), cmp_u64);
		med[s] = pct_us(all[s], n, 50);
		p99[s] = pct_us(all[s], n, 99);
		amed[s] = pct_us(acq[s], n, 50);
		rmed[s] = pct_us(rel[s], n, 50);
	}
	printf("uncontended acquire+release of %s/L: %zu cycles per side, 4 sides in rotation\n", dir, n);
	printf("  %-11s%9s%9s%9s%11s%11s%12s%12s%9s\n", "side", "med us", "p99 us", "mean us",
	       "acq med", "rel med", "x excl med", "x excl p99", "x bare");
	for (int s = 0; s < SIDES; s++) {
		printf("  %-11s%9.2f%9.2f%9.2f", side_name[s], med[s], p99[s], mean[s]);
		if (s)
			printf("%11.2f%11.2f", amed[s], rmed[s]);
		else
			printf("%11s%11s", "-", "-");
		printf("%12.3f%12.3f%9.3f\n", med[s] / med[1], p99[s] / p99[1], med[s] / med[0]);
	}
	printf("  shared / exclusive = %.3f (goal <= 1.1: %s); slots 4 / exclusive = %.3f;"
	       " exclusive / bare = %.3f\n",
	       med[2] / med[1], med[2] / med[1] <= 1.1 ? "meets" : "misses", med[3] / med[1],
	       med[1] / med[0]);
	for (int s = 0; s < SIDES; s++) {
		hf_lock_free(h[s]);
		free(all[s]);
		free(acq[s]);
		free(rel[s]);
	}
	return 0;
}

/* --- cycles --------------------------------------------------------------- */

static int cycles_only(const char *dir, const char *m, long n)
{
	int mode, slots;
	if (parse_mode(m, &mode, &slots))
		return 64;
	char path[4096];
	snprintf(path, sizeof path, "%s/L", dir);
	hf_lock *h = handle_for(path, mode, slots);
	for (long i = 0; i < n; i++) {
		must(hf_lock_acquire(h), "acquire");
		must(hf_lock_release(h), "release");
	}
	hf_lock_free(h);
	return 0;
}

/* --- crowd ---------------------------------------------------------------- */

#define MAX_EV (1 << 17) /* per process */

struct ev {
	uint64_t t0, acq, rel, fence;
};

struct shared {
	atomic_int nx, nr, ns; /* exclusive, shared, slot holders now */
	atomic_int conc_max;
	atomic_long overlaps;
};

/* Count ourselves in as a holder of mode (slots: K); an overlap when a
 * holder we cannot share with is counted too (each holder counts itself in
 * before it looks, so of two that overlap at least one sees the other). */
static void enter(struct shared *sh, int mode, int slots)
{
	int x = 0, r = 0, s = 0;
	if (mode == HF_MODE_EXCLUSIVE)
		x = atomic_fetch_add(&sh->nx, 1) + 1, r = atomic_load(&sh->nr), s = atomic_load(&sh->ns);
	else if (mode == HF_MODE_SHARED)
		r = atomic_fetch_add(&sh->nr, 1) + 1, x = atomic_load(&sh->nx), s = atomic_load(&sh->ns);
	else
		s = atomic_fetch_add(&sh->ns, 1) + 1, x = atomic_load(&sh->nx), r = atomic_load(&sh->nr);
	int bad = mode == HF_MODE_EXCLUSIVE ? x + r + s > 1
		: mode == HF_MODE_SHARED    ? x + s > 0
					    : x + r > 0 || s > slots;
	if (bad)
		atomic_fetch_add(&sh->overlaps, 1);
	int c = x + r + s, m = atomic_load(&sh->conc_max);
	while (c > m && !atomic_compare_exchange_weak(&sh->conc_max, &m, c))
		;
}

static void leave(struct shared *sh, int mode)
{
	atomic_fetch_sub(mode == HF_MODE_EXCLUSIVE ? &sh->nx : mode == HF_MODE_SHARED ? &sh->nr : &sh->ns, 1);
}

static void hold(uint64_t until, int busy)
{
	if (busy)
		while (now_ns() < until)
			;
	else
		sleep_until(until);
}

/* One contender (or the writer, gap_ns >= 0): its loop, its events. */
static void contender(const char *path, int mode, int slots, uint64_t start, uint64_t end,
		      uint64_t hold_ns, int busy, int64_t gap_ns, struct shared *sh, struct ev *mine,
		      size_t *count)
{
	size_t cnt = 0;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	hf_lock *h = handle_for(path, mode, slots);
	sleep_until(start);
	while (cnt < MAX_EV) {
		if (gap_ns >= 0)
			sleep_until(now_ns() + (uint64_t)gap_ns);
		uint64_t t0 = now_ns();
		if (t0 >= end)
			break;
		must(hf_lock_acquire(h), "acquire");
		uint64_t ta = now_ns();
		enter(sh, mode, slots);
		hold(ta + hold_ns, busy);
		leave(sh, mode);
		uint64_t tr = now_ns();
		mine[cnt++] = (struct ev){ t0, ta, tr, hf_lock_fence(h) };
		must(hf_lock_release(h), "release");
	}
	hf_lock_free(h);
	*count = cnt;
}

static int crowd(const char *dir, const char *m, int n, double secs, long hold_us, int busy,
		 long gap_us)
{
	int mode, slots;
	if (parse_mode(m, &mode, &slots) || n < 1 || n > 32 || secs <= 0 || hold_us < 0)
		return 64;
	char path[4096];
	snprintf(path, sizeof path, "%s/C", dir);
	int procs = n + (gap_us >= 0);
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct ev *evs = mmap(NULL, (size_t)procs * MAX_EV * sizeof(struct ev), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	size_t *counts = mmap(NULL, (size_t)procs * sizeof(size_t), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || evs == MAP_FAILED || counts == MAP_FAILED)
		bare_die("mmap");
	uint64_t start = now_ns() + 300000000ull, end = start + (uint64_t)(secs * 1e9);
	uint64_t hold_ns = (uint64_t)hold_us * 1000;
	pid_t pids[33];
	for (int i = 0; i < procs; i++) {
		pid_t p = fork();
		if (p < 0)
			bare_die("fork");
		if (p) {
			pids[i] = p;
			continue;
		}
		int writer = i == n;
		contender(path, writer ? HF_MODE_EXCLUSIVE : mode, slots, start, end, hold_ns, busy,
			  writer ? (int64_t)gap_us * 1000 : -1, sh, evs + (size_t)i * MAX_EV, &counts[i]);
		_exit(0);
	}
	int bad = 0;
	for (int i = 0; i < procs; i++) {
		int st;
		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	/* the contenders: acquisitions in the window, time held, waits */
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += counts[i];
	uint64_t *waits = malloc((total + 1) * sizeof(uint64_t));
	if (!waits)
		bare_die("malloc");
	size_t k = 0;
	double held = 0, holdsum = 0;
	for (int i = 0; i < n; i++)
		for (size_t j = 0; j < counts[i]; j++) {
			const struct ev *e = evs + (size_t)i * MAX_EV + j;
			if (e->acq < start || e->acq >= end)
				continue;
			waits[k++] = e->acq - e->t0;
			held += (double)((e->rel < end ? e->rel : end) - e->acq);
			holdsum += (double)(e->rel - e->acq);
		}
	qsort(waits, k, sizeof *waits, cmp_u64);
	/* the writer: its waits, and who got in during them */
	size_t wn = 0, in_before = 0, in_after = 0;
	uint64_t *ww = NULL;
	if (gap_us >= 0) {
		const struct ev *w = evs + (size_t)n * MAX_EV;
		wn = counts[n];
		ww = malloc((wn + 1) * sizeof(uint64_t));
		if (!ww)
			bare_die("malloc");
		for (size_t j = 0; j < wn; j++) {
			ww[j] = w[j].acq - w[j].t0;
			for (int i = 0; i < n; i++)
				for (size_t q = 0; q < counts[i]; q++) {
					const struct ev *e = evs + (size_t)i * MAX_EV + q;
					if (e->acq <= w[j].t0 || e->acq >= w[j].acq)
						continue;
					if (e->fence < w[j].fence)
						in_before++;
					else
						in_after++;
				}
		}
		qsort(ww, wn, sizeof *ww, cmp_u64);
	}
	double win = (double)(end - start);
	printf("{\"mode\":\"%s\",\"n\":%d,\"secs\":%.2f,\"hold_us\":%ld,\"hold\":\"%s\",\"acq_per_s\":%.0f,"
	       "\"conc_mean\":%.2f,\"conc_max\":%d,\"wait_p50_us\":%.1f,\"wait_p99_us\":%.1f,\"wait_max_us\":%.1f,"
	       "\"hold_mean_us\":%.1f,\"overlaps\":%ld,\"bad_exit\":%d",
	       m, n, secs, hold_us, busy ? "busy" : "sleep", (double)k / secs, held / win,
	       atomic_load(&sh->conc_max), k ? pct_us(waits, k, 50) : -1, k ? pct_us(waits, k, 99) : -1,
	       k ? pct_us(waits, k, 100) : -1, k ? holdsum / (double)k / 1e3 : -1, atomic_load(&sh->overlaps), bad);
	if (gap_us >= 0)
		printf(",\"gap_us\":%ld,\"w_n\":%zu,\"w_p50_us\":%.1f,\"w_p99_us\":%.1f,\"w_max_us\":%.1f,"
		       "\"w_in_before\":%zu,\"w_in_after\":%zu",
		       gap_us, wn, pct_us(ww, wn, 50), pct_us(ww, wn, 99), pct_us(ww, wn, 100), in_before,
		       in_after);
	printf("}\n");
	free(waits);
	free(ww);
	return bad || atomic_load(&sh->overlaps) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "uncontended"))
		return uncontended(argv[2], argc > 3 ? (size_t)atol(argv[3]) : 2000,
				   argc > 4 ? (size_t)atol(argv[4]) : 5);
	if (argc == 5 && !strcmp(argv[1], "cycles"))
		return cycles_only(argv[2], argv[3], atol(argv[4]));
	if (argc >= 7 && argc <= 9 && !strcmp(argv[1], "crowd")) {
		int busy = argc > 7 && !strcmp(argv[7], "busy");
		if (argc > 7 && !busy && strcmp(argv[7], "sleep"))
			goto usage;
		return crowd(argv[2], argv[3], atoi(argv[4]), atof(argv[5]), atol(argv[6]), busy,
			     argc > 8 ? atol(argv[8]) : -1);
	}
usage:
	fprintf(stderr, "usage: bench-modes uncontended DIR [CYCLES [ROUNDS]]\n"
			"       bench-modes crowd DIR MODE N SECS HOLD_US [sleep|busy [WRITER_GAP_US]]\n"
			"       bench-modes cycles DIR MODE N\n"
			"MODE: exclusive, shared, slotsK\n");
	return 64;
}
