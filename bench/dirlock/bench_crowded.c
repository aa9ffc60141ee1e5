/*
 * bench_crowded.c - acquire + release of a directory lock whose parent holds
 * 100 000 unrelated entries, against the same lock in an empty parent,
 * side by side: single cycles alternate, and the medians of the per-cycle
 * times are compared.
 * Claims live in the lock's own state directory, never scanned from the
 * parent: the cost must not grow with the parent.
 *
 * usage: bench-dirlock-crowded DIR [ENTRIES [CYCLES_PER_ROUND [ROUNDS]]]
 *        (makes DIR/empty and DIR/crowded; keeps DIR/crowded between runs)
 */
#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void cycle(const char *lock)
{
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	int rc = hf_lock_acquire(&o, &got, &h);
	if (rc == 0)
		rc = hf_lock_release(lock, got.owner.token, &h);
	if (rc) {
		fprintf(stderr, "%s: %s\n", lock, hf_strerror(rc));
		exit(1);
	}
}

/* The floor every mkdir lock pays: the directory entry itself. */
static void mkdir_cycle(const char *lock)
{
	if (mkdir(lock, 0700) < 0 || rmdir(lock) < 0) {
		perror(lock);
		exit(1);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [ENTRIES [CYCLES [ROUNDS]]]\n", argv[0]);
		return 64;
	}
	const char *dir = argv[1];
	int entries = argc > 2 ? atoi(argv[2]) : 100000;
	int n = argc > 3 ? atoi(argv[3]) : 1000, rounds = argc > 4 ? atoi(argv[4]) : 10;
	char empty[4096], crowded[4096], le[4200], lc[4200], p[4300];
	snprintf(empty, sizeof empty, "%s/empty", dir);
	snprintf(crowded, sizeof crowded, "%s/crowded", dir);
	mkdir(empty, 0700);
	mkdir(crowded, 0700);
	double t0 = now_us();
	int made = 0;
	for (int i = 0; i < entries; i++) {
		snprintf(p, sizeof p, "%s/entry-%06d", crowded, i);
		int fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			made++;
		} else if (errno != EEXIST) {
			perror(p);
			return 1;
		}
	}
	if (made)
		fprintf(stderr, "made %d entries in %.1f s\n", made, (now_us() - t0) / 1e6);
	snprintf(le, sizeof le, "%s/L", empty);
	snprintf(lc, sizeof lc, "%s/L", crowded);
	for (int i = 0; i < n / 10 + 1; i++) {
		cycle(le);
		cycle(lc);
	}
	size_t total = (size_t)n * (size_t)rounds;
	double *a = malloc(total * sizeof *a), *b = malloc(total * sizeof *b);
	if (!a || !b)
		return 1;
	double sa = 0, sb = 0;
	for (size_t i = 0; i < total; i++) {
		double s0 = now_us();
		cycle(le);
		double s1 = now_us();
		cycle(lc);
		double s2 = now_us();
		a[i] = s1 - s0;
		b[i] = s2 - s1;
		sa += a[i];
		sb += b[i];
	}
	qsort(a, total, sizeof a[0], cmp);
	qsort(b, total, sizeof b[0], cmp);
	double ma = a[total / 2], mb = b[total / 2];
	printf("acquire+release beside %d entries  %-12s crowded %7.2f us  empty %7.2f us  "
	       "ratio %.3f  (medians of %zu alternating cycles; means %.2f / %.2f us, ratio %.3f)\n",
	       entries, dir, mb, ma, mb / ma, total, sb / total, sa / total, sb / sa);
	/* the same alternation for bare mkdir+rmdir of the lock's name */
	char fe[4300], fc[4300];
	snprintf(fe, sizeof fe, "%s/F", empty);
	snprintf(fc, sizeof fc, "%s/F", crowded);
	for (size_t i = 0; i < total; i++) {
		double s0 = now_us();
		mkdir_cycle(fe);
		double s1 = now_us();
		mkdir_cycle(fc);
		double s2 = now_us();
		a[i] = s1 - s0;
		b[i] = s2 - s1;
	}
	qsort(a, total, sizeof a[0], cmp);
	qsort(b, total, sizeof b[0], cmp);
	printf("  floor: bare mkdir+rmdir beside %d entries: crowded %7.2f us  empty %7.2f us  "
	       "ratio %.3f\n",
	       entries, b[total / 2], a[total / 2], b[total / 2] / a[total / 2]);
	free(a);
	free(b);
	return 0;
}
