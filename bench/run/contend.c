/*
 * contend.c - N processes contending for one lock for a fixed wall time:
 * cross-process handoff latency and fairness, holdfast's directory lock
 * (through the library) beside flock(2) and 1 ms-polling mkdir, in one run.
 *
 * The method of research/perf/contend.c: every process starts at the same
 * absolute CLOCK_MONOTONIC time; in the critical section it takes t_acq,
 * bumps a MAP_SHARED holder counter (which must have been 0: overlap check),
 * takes t_rel and releases; after releasing it sleeps THINK_US (0: contends
 * again at once). Holds are sorted by t_acq:
 *   handoff        t_acq[k] - t_rel[k-1]
 *   cross handoff  the same, only where the next holder is another process
 *                  (the waiter's wake-up: what a waiting process sees)
 *   fairness       fewest / most acquisitions of one process in the window
 *
 * usage: contend MECH N SECONDS DIR [THINK_US]
 *   MECH  holdfast   hf_lock_acquire(wait forever) / hf_lock_release
 *         watch      the same with the waiters' queue unusable (its name
 *                    taken by a directory made first): every waiter on the
 *                    inotify watch, woken by every release (dirlock.c DQ's
 *                    fallback, as before 0.3)
 *         flock      flock(LOCK_EX) / flock(LOCK_UN) on a per-process fd
 *         mkdir      mkdir; on EEXIST sleep 1 ms and retry / rmdir
 * Prints one JSON line.
 */
#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EV (1 << 20) /* per process */

struct ev {
	uint64_t acq, rel;
};

struct shared {
	atomic_int holders;
	atomic_long overlaps;
	atomic_long errors;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* A library call that must succeed in a contender: else count and stop. */
static void must(int rc, const char *what, struct shared *sh)
{
	if (rc >= 0)
		return;
	fprintf(stderr, "%s: %s\n", what, hf_strerror(rc));
	atomic_fetch_add(&sh->errors, 1);
	_exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct tagged {
	uint64_t acq, rel;
	int proc;
};

static int cmp_tagged(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;
	return x->acq < y->acq ? -1 : x->acq > y->acq;
}

static double pct(const uint64_t *v, size_t n, double p)
{
	if (!n)
		return -1;
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1] / 1e3;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: contend MECH N SECONDS DIR [THINK_US]\n");
		return 2;
	}
	const char *mech = argv[1];
	int n = atoi(argv[2]);
	double secs = atof(argv[3]);
	const char *dir = argv[4];
	long think = argc > 5 ? atol(argv[5]) : 0;
	bool watch = !strcmp(mech, "watch");
	int m = !strcmp(mech, "holdfast") || watch ? 1 : !strcmp(mech, "flock") ? 2 : !strcmp(mech, "mkdir") ? 3 : 0;
	if (!m || n < 1 || n > 64 || secs <= 0) {
		fprintf(stderr, "contend: bad arguments\n");
		return 2;
	}
	char lockp[4096];
	snprintf(lockp, sizeof lockp, "%s/lock-%s", dir, mech);
	if (m == 2)
		close(open(lockp, O_CREAT | O_RDWR | O_CLOEXEC, 0600));
	char qdir[4200];
	if (watch) { /* the state directory, and a directory where the FIFO goes */
		snprintf(qdir, sizeof qdir, "%s.holdfast", lockp);
		if (mkdir(qdir, 0700) < 0 && errno != EEXIST) {
			perror(qdir);
			return 1;
		}
		snprintf(qdir, sizeof qdir, "%s.holdfast/queue", lockp);
		if (mkdir(qdir, 0700) < 0 && errno != EEXIST) {
			perror(qdir);
			return 1;
		}
	}
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	size_t evbytes = (size_t)n * MAX_EV * sizeof(struct ev);
	struct ev *evs = mmap(NULL, evbytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	size_t *counts = mmap(NULL, (size_t)n * sizeof(size_t), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || evs == MAP_FAILED || counts == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	uint64_t start = now_ns() + 300000000ull;
	uint64_t end = start + (uint64_t)(secs * 1e9);
	pid_t pids[64];
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p) {
			pids[i] = p;
			continue;
		}
		struct ev *mine = evs + (size_t)i * MAX_EV;
		size_t cnt = 0;
		int lfd = m == 2 ? open(lockp, O_RDWR | O_CLOEXEC) : -1;
		struct timespec st = { (time_t)(start / 1000000000ull), (long)(start % 1000000000ull) };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &st, NULL);
		hf_lock *hl = NULL;
		if (m == 1) {
			must(hf_lock_new(lockp, &hl), "new", sh);
			must(hf_lock_set(hl, HF_OPT_WAIT_MS, -1), "set", sh);
		}
		while (now_ns() < end && cnt < MAX_EV) {
			switch (m) {
			case 1:
				must(hf_lock_acquire(hl), "acquire", sh);
				break;
			case 2:
				if (flock(lfd, LOCK_EX))
					_exit(1);
				break;
			case 3:
				while (mkdir(lockp, 0700) < 0) {
					if (errno != EEXIST)
						_exit(1);
					sleep_us(1000);
				}
				break;
			}
			uint64_t ta = now_ns();
			if (atomic_fetch_add(&sh->holders, 1) != 0)
				atomic_fetch_add(&sh->overlaps, 1);
			atomic_fetch_sub(&sh->holders, 1);
			uint64_t tr = now_ns();
			switch (m) {
			case 1:
				must(hf_lock_release(hl), "release", sh);
				break;
			case 2:
				flock(lfd, LOCK_UN);
				break;
			case 3:
				rmdir(lockp);
				break;
			}
			mine[cnt].acq = ta;
			mine[cnt].rel = tr;
			cnt++;
			if (think)
				sleep_us(think);
		}
		counts[i] = cnt;
		_exit(0);
	}
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		waitpid(pids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	/* analysis */
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += counts[i];
	struct tagged *all = malloc(total * sizeof *all);
	size_t k = 0, per[64] = { 0 };
	for (int i = 0; i < n; i++)
		for (size_t j = 0; j < counts[i]; j++) {
			struct ev *e = evs + (size_t)i * MAX_EV + j;
			if (e->acq < start || e->acq >= end)
				continue;
			all[k++] = (struct tagged){ e->acq, e->rel, i };
			per[i]++;
		}
	qsort(all, k, sizeof *all, cmp_tagged);
	uint64_t *ho = malloc((k + 1) * sizeof *ho), *xho = malloc((k + 1) * sizeof *xho);
	size_t nho = 0, nxho = 0, same = 0, tsover = 0;
	for (size_t j = 1; j < k; j++) {
		if (all[j].acq < all[j - 1].rel) {
			tsover++;
			continue;
		}
		uint64_t d = all[j].acq - all[j - 1].rel;
		ho[nho++] = d;
		if (all[j].proc == all[j - 1].proc)
			same++;
		else
			xho[nxho++] = d;
	}
	qsort(ho, nho, sizeof *ho, cmp_u64);
	qsort(xho, nxho, sizeof *xho, cmp_u64);
	size_t mn = per[0], mx = per[0];
	for (int i = 1; i < n; i++) {
		if (per[i] < mn)
			mn = per[i];
		if (per[i] > mx)
			mx = per[i];
	}
	printf("{\"mech\":\"%s\",\"n\":%d,\"secs\":%.2f,\"think_us\":%ld,\"acq_per_s\":%.0f,"
	       "\"handoff_p50_us\":%.1f,\"handoff_p99_us\":%.1f,\"xhandoff_p50_us\":%.1f,"
	       "\"xhandoff_p99_us\":%.1f,\"xhandoffs\":%zu,\"same_frac\":%.3f,\"fair_min\":%zu,"
	       "\"fair_max\":%zu,\"fairness\":%.3f,\"overlaps\":%ld,\"ts_overlaps\":%zu,"
	       "\"errors\":%ld,\"bad_exit\":%d}\n",
	       mech, n, secs, think, (double)k / secs, pct(ho, nho, 50), pct(ho, nho, 99),
	       pct(xho, nxho, 50), pct(xho, nxho, 99), nxho, nho ? (double)same / (double)nho : 0,
	       mn, mx, mx ? (double)mn / (double)mx : 0, atomic_load(&sh->overlaps), tsover,
	       atomic_load(&sh->errors), bad);
	if (m == 2)
		unlink(lockp);
	free(all);
	free(ho);
	free(xho);
	return bad || atomic_load(&sh->overlaps) || tsover ? 1 : 0;
}
