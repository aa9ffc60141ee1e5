/*
 * bench_uncontended.c - one process, acquire + release of a directory lock:
 * hf_lock_acquire/hf_lock_release (one handle, as a program keeps it)
 * against the bare system-call sequence of
 * the same steps (the exact calls `strace` shows the library making in a
 * warm process, made directly, with a record of the same size), measured
 * side by side: single cycles alternate, and the medians of the per-cycle
 * times are compared (noise from other processes hits both sides alike).
 *
 * usage: bench-dirlock-uncontended DIR [CYCLES [ROUNDS]]  (CYCLES x ROUNDS pairs)
 */
#include "holdfast.h"
#include "bare.h"
#include "pairs.h"

#include <stdio.h>
#include <stdlib.h>

static const char *dir;
static char lockpath[4096];

static hf_lock *handle;

static void lib_cycle(const void *unused)
{
	(void)unused;
	int rc = hf_lock_acquire(handle);
	if (rc)
		fprintf(stderr, "acquire: %s\n", hf_strerror(rc)), exit(1);
	rc = hf_lock_release(handle);
	if (rc)
		fprintf(stderr, "release: %s\n", hf_strerror(rc)), exit(1);
}

static void bare_side(const void *unused)
{
	(void)unused;
	bare_cycle(dir);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [CYCLES [ROUNDS]]\n", argv[0]);
		return 64;
	}
	dir = argv[1];
	int n = argc > 2 ? atoi(argv[2]) : 2000, rounds = argc > 3 ? atoi(argv[3]) : 10;
	snprintf(lockpath, sizeof lockpath, "%s/L", dir);
	bare_init();
	int rc = hf_lock_new(lockpath, &handle);
	if (rc)
		fprintf(stderr, "%s: %s\n", lockpath, hf_strerror(rc)), exit(1);
	lib_cycle(NULL); /* creates L.holdfast and the fence counter */
	struct pairs w = pairs_measure(lib_cycle, NULL, bare_side, NULL, (size_t)n / 10 + 1);
	(void)w; /* warm-up */
	struct pairs r = pairs_measure(lib_cycle, NULL, bare_side, NULL, (size_t)n * rounds);
	printf("uncontended acquire+release  %-12s library %7.2f us  bare syscalls %7.2f us  "
	       "ratio %.3f  (medians of %zu alternating cycles; means %.2f / %.2f us, ratio %.3f)\n",
	       dir, r.med_a, r.med_b, r.med_a / r.med_b, r.n, r.mean_a, r.mean_b,
	       r.mean_a / r.mean_b);
	return 0;
}
