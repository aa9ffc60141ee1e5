/*
 * pairs.h - side-by-side measurement for the directory lock's benchmarks:
 * single runs of A and B alternate (A B, B A, ...), so noise from other processes hits both
 * alike, and the medians of the per-run times are compared.
 */
#ifndef HF_BENCH_PAIRS_H
#define HF_BENCH_PAIRS_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double pairs_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int pairs_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct pairs {
	double med_a, med_b;    /* medians of the per-run times, us */
	double mean_a, mean_b;
	size_t n;
};

/* Run a(ctx_a) and b(ctx_b) alternately n times each. */
static inline struct pairs pairs_measure(void (*a)(const void *), const void *ctx_a,
					 void (*b)(const void *), const void *ctx_b, size_t n)
{
	double *ta = malloc(n * sizeof *ta), *tb = malloc(n * sizeof *tb);
	if (!ta || !tb) {
		perror("malloc");
		exit(1);
	}
	struct pairs r = { .n = n };
	for (size_t i = 0; i < n; i++) {
		/* A B, then B A: neither side always runs right after the other
		 * (warm caches, the other's leftovers to clean up) */
		double t0 = pairs_now_us();
		if (i & 1)
			b(ctx_b);
		else
			a(ctx_a);
		double t1 = pairs_now_us();
		if (i & 1)
			a(ctx_a);
		else
			b(ctx_b);
		double t2 = pairs_now_us();
		ta[i] = i & 1 ? t2 - t1 : t1 - t0;
		tb[i] = i & 1 ? t1 - t0 : t2 - t1;
		r.mean_a += ta[i] / n;
		r.mean_b += tb[i] / n;
	}
	qsort(ta, n, sizeof ta[0], pairs_cmp);
	qsort(tb, n, sizeof tb[0], pairs_cmp);
	r.med_a = ta[n / 2];
	r.med_b = tb[n / 2];
	free(ta);
	free(tb);
	return r;
}

#endif
