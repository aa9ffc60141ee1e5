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
#include "pairs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void cycle(const void *arg)
{
	const char *lock = arg;
	hf_lock *l;
	int rc = hf_lock_new(lock, &l);
	if (rc == 0)
		rc = hf_lock_acquire(l);
	if (rc == 0)
		rc = hf_lock_release(l);
	hf_lock_free(l);
	if (rc) {
		fprintf(stderr, "%s: %s\n", lock, hf_strerror(rc));
		exit(1);
	}
}

/* The floor every mkdir lock pays: the directory entry itself. */
static void mkdir_cycle(const void *arg)
{
	const char *lock = arg;
	if (mkdir(lock, 0700) < 0 || rmdir(lock) < 0) {
		perror(lock);
		exit(1);
	}
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
	double t0 = pairs_now_us();
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
		fprintf(stderr, "made %d entries in %.1f s\n", made, (pairs_now_us() - t0) / 1e6);
	snprintf(le, sizeof le, "%s/L", empty);
	snprintf(lc, sizeof lc, "%s/L", crowded);
	pairs_measure(cycle, le, cycle, lc, (size_t)n / 10 + 1); /* warm-up */
	size_t total = (size_t)n * (size_t)rounds;
	struct pairs r = pairs_measure(cycle, le, cycle, lc, total);
	printf("acquire+release beside %d entries  %-12s crowded %7.2f us  empty %7.2f us  "
	       "ratio %.3f  (medians of %zu alternating cycles; means %.2f / %.2f us, ratio %.3f)\n",
	       entries, dir, r.med_b, r.med_a, r.med_b / r.med_a, r.n, r.mean_b, r.mean_a,
	       r.mean_b / r.mean_a);
	/* the floor every mkdir lock pays: the directory entry itself */
	char fe[4300], fc[4300];
	snprintf(fe, sizeof fe, "%s/F", empty);
	snprintf(fc, sizeof fc, "%s/F", crowded);
	struct pairs f = pairs_measure(mkdir_cycle, fe, mkdir_cycle, fc, total);
	printf("  floor: bare mkdir+rmdir beside %d entries: crowded %7.2f us  empty %7.2f us  "
	       "ratio %.3f\n",
	       entries, f.med_b, f.med_a, f.med_b / f.med_a);
	return 0;
}
