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
#include "pairs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

static void die(const char *what)
{
	perror(what);
	exit(1);
}

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

/* The same calls, in the same order, with the same flags and sizes (as
 * strace shows them for one warm cycle of the library). */
static char record[280];
#define ODIR (O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_DIRECTORY)
#define OREC (O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
static void bare_cycle(const void *unused)
{
	(void)unused;
	char buf[4097], name[128], path[160];
	unsigned char rnd[16];
	struct stat st;
	struct statfs sf;
	/* acquire */
	int p = openat(AT_FDCWD, dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	int s = openat(p, "L.holdfast", ODIR);
	if (p < 0 || s < 0)
		die("open");
	fstat(s, &st);
	if (st.st_uid != geteuid())
		die("uid");
	fstatfs(s, &sf);
	getrandom(rnd, 16, 0);
	(void)getpid();
	getrandom(rnd, 8, 0);
	snprintf(name, sizeof name, "n-1796117716794-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (mkdirat(s, name, 0700) < 0)
		die("mkdir");
	int l = openat(s, name, ODIR);
	flock(l, LOCK_SH | LOCK_NB);
	if (syscall(SYS_renameat2, s, name, p, "L", RENAME_NOREPLACE) < 0)
		die("rename");
	int c = openat(s, "fence", O_RDWR | O_CREAT | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	flock(c, LOCK_EX | LOCK_NB);
	if (pread(c, buf, 127, 0) < 0 || pwrite(c, buf, 100, 0) < 0)
		die("fence");
	flock(c, LOCK_UN);
	int t = openat(s, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (write(t, record, sizeof record) < 0)
		die("write");
	if (linkat(t, "", l, "owner", AT_EMPTY_PATH) < 0)
		die("link");
	close(t);
	fstat(s, &st);
	int r = openat(p, "L/owner", OREC);
	if (read(r, buf, sizeof buf) < 0)
		die("read");
	close(r);
	flock(c, LOCK_EX | LOCK_NB);
	if (pread(c, buf, 127, 0) < 0 || pwrite(c, buf, 100, 0) < 0)
		die("pread");
	flock(c, LOCK_UN);
	(void)getpid(); /* the handle's acquired_by */
	/* release: the holder's own (the directories and the counter stayed
	 * open), L identified by the inode its descriptor pins */
	struct stat at;
	fstat(l, &st);
	if (fstatat(p, "L", &at, AT_SYMLINK_NOFOLLOW) < 0 || at.st_ino != st.st_ino)
		die("not ours");
	getrandom(rnd, 8, 0);
	snprintf(name, sizeof name, "c-1796009672989-aca5127502d53742ccac26ac54196783-%02x%02x%02x%02x%02x%02x%02x%02x",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (syscall(SYS_renameat2, p, "L", s, name, RENAME_NOREPLACE) < 0)
		die("rename");
	if (fstatat(s, name, &at, AT_SYMLINK_NOFOLLOW) < 0 || at.st_ino != st.st_ino)
		die("claim");
	snprintf(path, sizeof path, "%s/owner", name);
	unlinkat(s, path, 0);
	if (unlinkat(s, name, AT_REMOVEDIR) < 0)
		die("rmdir");
	close(s);
	close(p);
	close(c);
	close(l); /* the holder's kernel lock, closed after its release */
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
	memset(record, 'x', sizeof record);
	int rc = hf_lock_new(lockpath, &handle);
	if (rc)
		fprintf(stderr, "%s: %s\n", lockpath, hf_strerror(rc)), exit(1);
	lib_cycle(NULL); /* creates L.holdfast and the fence counter */
	struct pairs w = pairs_measure(lib_cycle, NULL, bare_cycle, NULL, (size_t)n / 10 + 1);
	(void)w; /* warm-up */
	struct pairs r = pairs_measure(lib_cycle, NULL, bare_cycle, NULL, (size_t)n * rounds);
	printf("uncontended acquire+release  %-12s library %7.2f us  bare syscalls %7.2f us  "
	       "ratio %.3f  (medians of %zu alternating cycles; means %.2f / %.2f us, ratio %.3f)\n",
	       dir, r.med_a, r.med_b, r.med_a / r.med_b, r.n, r.mean_a, r.mean_b,
	       r.mean_a / r.mean_b);
	return 0;
}
