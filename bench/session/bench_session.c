/*
 * bench_session.c - in-process cost of a session take + release, against the
 * bare system-call sequence of the same steps, measured side by side.
 *
 *   bench-session DIR [CYCLES]
 *   bench-session --spawn HOLDFAST DIR [RUNS]
 *
 * The second form measures whole processes, interleaved: each run spawns
 * /bin/true, `holdfast session take`, `holdfast session release`,
 * `dotlockfile -l` and `dotlockfile -u` in turn, each after its untimed
 * prepare step (remove the lock, or take it), and times the spawn-to-exit of
 * each. Interleaving makes the ratios robust to a machine whose load moves
 * (hyperfine runs one command's batch after the other's).
 *
 * CYCLES cycles of each, alternating (ABAB...) so both see the same machine;
 * each cycle is timed on its own and the figures are the medians (and 10th
 * percentiles) of those times: a preempted cycle moves neither.
 *
 * The bare sequence is what the protocol must do at the least, written with
 * raw system calls and a preformatted record:
 *   take:    open dir; getrandom (token); getpid; open O_TMPFILE; write;
 *            linkat(fd, "", AT_EMPTY_PATH); close; open dir "."; getdents
 *            until 0; close; close dir
 *   release: open dir; open lock; read until 0; close; getrandom (aside
 *            name); renameat2(lock, aside, NOREPLACE); open aside; read until
 *            0; close; compare bytes; unlink aside; close dir
 * The library adds what makes it a library: parsing and checking the record
 * (JSON), formatting its own, fstat of what it reads, its messages' data.
 */
#include "holdfast.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

static const char *dir;
static char lock[4096];

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench-session: %s: %s\n", what, hf_strerror(rc));
	exit(1);
}

static hf_session *handle;

static void lib_cycle(void)
{
	int rc = handle ? 0 : hf_session_new(lock, "bench", &handle);
	if (rc)
		die("new", rc);
	rc = hf_session_take(handle);
	if (rc < 0)
		die("take", rc);
	rc = hf_session_release(handle);
	if (rc)
		die("release", rc);
}

static const char record[] =
	"{\"lane\":\"bench\",\"owner\":\"0123456789abcdef0123456789abcdef\",\"pid\":4242,"
	"\"host\":\"box\",\"started\":\"2026-09-22T10:00:00.123Z\"}\n";

static ssize_t read_all(int fd, char *buf, size_t n)
{
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, n - len);
		if (r <= 0)
			return r < 0 ? r : (ssize_t)len;
		len += (size_t)r;
	}
}

static void bare_cycle(void)
{
	char buf[8192], tok[16], aside[64];
	/* take */
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (getrandom(tok, sizeof tok, 0) < 0 || getpid() < 0)
		die("getrandom", -errno);
	int fd = openat(d, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, record, sizeof record - 1) < 0 ||
	    linkat(fd, "", d, "L", AT_EMPTY_PATH) < 0)
		die("bare publish", -errno);
	close(fd);
	int s = openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (syscall(SYS_getdents64, s, buf, sizeof buf) > 0)
		;
	close(s);
	close(d);
	/* release */
	char a[512], b[512];
	d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = openat(d, "L", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t la = read_all(fd, a, sizeof a);
	close(fd);
	if (getrandom(tok, 8, 0) < 0)
		die("getrandom", -errno);
	snprintf(aside, sizeof aside, "L.aside-%02x%02x%02x%02x%02x%02x%02x%02x",
		 (unsigned char)tok[0], (unsigned char)tok[1], (unsigned char)tok[2],
		 (unsigned char)tok[3], (unsigned char)tok[4], (unsigned char)tok[5],
		 (unsigned char)tok[6], (unsigned char)tok[7]);
	if (syscall(SYS_renameat2, d, "L", d, aside, RENAME_NOREPLACE) < 0)
		die("bare rename", -errno);
	fd = openat(d, aside, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t lb = read_all(fd, b, sizeof b);
	close(fd);
	if (la != lb || memcmp(a, b, (size_t)la) || unlinkat(d, aside, 0) < 0)
		die("bare verify", -EIO);
	close(d);
}

static int cmp(const void *x, const void *y)
{
	int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
	return p < q ? -1 : p > q;
}

static int64_t pct(int64_t *v, int n, int p)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[(int64_t)n * p / 100];
}

extern char **environ;

/* Spawn argv (NULL-terminated) with stdout/stderr to /dev/null: its time. */
static int64_t spawn_ns(char *const *argv)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	int64_t t0 = now_ns();
	pid_t pid;
	int st = 0;
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) == 0)
		waitpid(pid, &st, 0);
	int64_t t = now_ns() - t0;
	posix_spawn_file_actions_destroy(&fa);
	return t;
}

static int spawn_mode(const char *hf, const char *d, int runs)
{
	char l[4096], dl[4096];
	snprintf(l, sizeof l, "%s/.session.lock", d);
	snprintf(dl, sizeof dl, "%s/dot.lock", d);
	int dot = access("/usr/bin/dotlockfile", X_OK) == 0;
	char *t_true[] = { "/bin/true", NULL };
	char *t_take[] = { (char *)hf, "session", "take", "--lane", "data", "--file", l, NULL };
	char *t_rel[] = { (char *)hf, "session", "release", "--lane", "data", "--file", l, NULL };
	char *t_dl[] = { "/usr/bin/dotlockfile", "-l", "-r", "0", dl, NULL };
	char *t_du[] = { "/usr/bin/dotlockfile", "-u", dl, NULL };
	struct {
		const char *name;
		char *const *argv;
		int prep; /* 0 none, 1 remove the lock, 2 take it (by the command before) */
		int64_t *t;
	} c[] = {
		{ "/bin/true", t_true, 0, NULL },
		{ "holdfast session take", t_take, 1, NULL },
		{ "holdfast session release", t_rel, 2, NULL },
		{ "dotlockfile -l", t_dl, 1, NULL },
		{ "dotlockfile -u", t_du, 2, NULL },
	};
	int nc = dot ? 5 : 3;
	for (int k = 0; k < nc; k++)
		c[k].t = calloc((size_t)runs, sizeof(int64_t));
	for (int i = -runs / 10; i < runs; i++) { /* the first tenth warms up */
		for (int k = 0; k < nc; k++) {
			const char *lock_of = k >= 3 ? dl : l;
			if (c[k].prep == 1)
				unlink(lock_of);
			if (c[k].prep == 2) {
				unlink(lock_of);
				spawn_ns(c[k - 1].argv);
			}
			int64_t t = spawn_ns(c[k].argv);
			if (i >= 0)
				c[k].t[i] = t;
		}
	}
	unlink(l);
	unlink(dl);
	int64_t t50 = pct(c[0].t, runs, 50), t10 = pct(c[0].t, runs, 10);
	printf("whole processes on %s, %d runs of each, interleaved (spawn to exit):\n", d, runs);
	for (int k = 0; k < nc; k++) {
		int64_t m = pct(c[k].t, runs, 50), p = pct(c[k].t, runs, 10);
		printf("  %-26s median %6.3f ms  %5.2fx /bin/true   (p10 %5.2fx)\n", c[k].name,
		       m / 1e6, (double)m / (double)t50, (double)p / (double)t10);
		free(c[k].t);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench-session DIR [CYCLES]\n"
				"       bench-session --spawn HOLDFAST DIR [RUNS]\n");
		return 64;
	}
	if (!strcmp(argv[1], "--spawn") && argc >= 4)
		return spawn_mode(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 1000);
	dir = argv[1];
	int n = argc > 2 ? atoi(argv[2]) : 20000;
	snprintf(lock, sizeof lock, "%s/L", dir);
	for (int i = 0; i < 500; i++) { /* warm up both */
		lib_cycle();
		bare_cycle();
	}
	int64_t *lib = calloc((size_t)n, sizeof *lib), *bare = calloc((size_t)n, sizeof *bare);
	for (int i = 0; i < n; i++) { /* alternate: both see the same machine */
		int64_t t0 = now_ns();
		lib_cycle();
		int64_t t1 = now_ns();
		bare_cycle();
		bare[i] = now_ns() - t1;
		lib[i] = t1 - t0;
	}
	int64_t l50 = pct(lib, n, 50), b50 = pct(bare, n, 50);
	int64_t l10 = pct(lib, n, 10), b10 = pct(bare, n, 10);
	printf("in-process take+release on %s, %d cycles of each, alternating:\n", dir, n);
	printf("  bare syscall sequence     p50 %7.1f us   p10 %7.1f us\n", b50 / 1e3, b10 / 1e3);
	printf("  hf_session_take+release   p50 %7.1f us   p10 %7.1f us\n", l50 / 1e3, l10 / 1e3);
	printf("  ratio library/bare        p50 %5.2fx      p10 %5.2fx     (goal <= 1.5x)\n",
	       (double)l50 / (double)b50, (double)l10 / (double)b10);
	free(lib);
	free(bare);
	return 0;
}
