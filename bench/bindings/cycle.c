/*
 * cycle.c - the C library's own acquire+release cycle of a directory lock,
 * one handle kept as a program keeps it, linked with the shared libholdfast
 * as the bindings are: the baseline of bench/bindings/run.sh. Each cycle is
 * timed on CLOCK_MONOTONIC; prints the median as one JSON line, the format
 * every language's cycle program prints.
 *
 * usage: bench-bindings-cycle DIR [CYCLES]
 */
#include "holdfast.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [CYCLES]\n", argv[0]);
		return 64;
	}
	long cycles = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
	if (cycles < 1)
		return 64;
	char path[4096];
	snprintf(path, sizeof path, "%s/c.lock", argv[1]);
	hf_lock *l;
	int rc = hf_lock_new(path, &l);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", path, hf_strerror(rc));
		return 1;
	}
	uint64_t *t = calloc((size_t)cycles, sizeof *t);
	if (!t)
		return 1;
	for (long i = 0; i < cycles; i++) {
		uint64_t t0 = now_ns();
		if ((rc = hf_lock_acquire(l)) < 0 || (rc = hf_lock_release(l)) < 0) {
			fprintf(stderr, "%s: %s\n", path, hf_strerror(rc));
			return 1;
		}
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)cycles, sizeof *t, cmp);
	printf("{\"lang\":\"c\",\"cycles\":%ld,\"median_ns\":%llu}\n", cycles,
	       (unsigned long long)t[cycles / 2]);
	hf_lock_free(l);
	free(t);
	return 0;
}
