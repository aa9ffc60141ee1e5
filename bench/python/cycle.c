/*
 * cycle.c - the C library's own acquire+release cycle, for bench/python:
 * one handle kept (as a program keeps it), CYCLES cycles of
 * hf_lock_acquire + hf_lock_release on DIR/NAME, each timed with
 * CLOCK_MONOTONIC; prints the median cycle in nanoseconds. bench/python/
 * cycle.py runs it alternately with the same cycle from Python, so both
 * sides see the same load.
 *
 * usage: bench-python-cycle LOCKPATH CYCLES
 */
#include "holdfast.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s LOCKPATH CYCLES\n", argv[0]);
		return 64;
	}
	int n = atoi(argv[2]);
	if (n < 1)
		n = 1;
	long long *t = calloc((size_t)n, sizeof *t);
	hf_lock *l;
	int rc = t ? hf_lock_new(argv[1], &l) : -12;
	if (rc) {
		fprintf(stderr, "%s: %s\n", argv[1], hf_strerror(rc));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		long long t0 = now_ns();
		rc = hf_lock_acquire(l);
		if (rc == 0)
			rc = hf_lock_release(l);
		if (rc) {
			fprintf(stderr, "%s: %s\n", argv[1], hf_strerror(rc));
			return 1;
		}
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("%lld\n", t[n / 2]);
	hf_lock_free(l);
	free(t);
	return 0;
}
