/*
 * bench_list.c - `holdfast list DIR` (the CLI's walk, a process per run)
 * beside hf_fs_list(DIR) (the library's walk, fslist.c, in this process) on
 * one tree, alternating (pairs.h): what a second walk would add to a listing
 * if cmd_list.c kept its own walk for the flock records and took the locks
 * and sessions from the library. The tree: DIRS directories (DIRS/100 at
 * the top, 100 below each) and LOCKS directory locks spread over them, held
 * by this process.
 *
 * usage: bench-list HOLDFAST_BIN DIR [DIRS [LOCKS [RUNS]]]
 *   (defaults 10000, 100, 15; DIR must not exist; it is removed at the end)
 * prints: dirs locks items list_ms fslist_ms ratio (medians, ms)
 */
#include "holdfast.h"
#include "fslist.h"
#include "../dirlock/pairs.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bin, *dir;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void run_list(const void *ctx)
{
	(void)ctx;
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || dup2(null, 1) < 0)
			_exit(127);
		execl(bin, "holdfast", "list", "--json", dir, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "holdfast list failed: %d\n", st);
		exit(1);
	}
}

static size_t last_items;

static void run_fslist(const void *ctx)
{
	(void)ctx;
	json_t *items, *errors;
	if (hf_fs_list(dir, HF_FS_LIST_DEPTH_DEFAULT, &items, &errors, NULL) < 0) {
		fprintf(stderr, "hf_fs_list failed\n");
		exit(1);
	}
	last_items = json_array_size(items);
	json_decref(items);
	json_decref(errors);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench-list HOLDFAST_BIN DIR [DIRS [LOCKS [RUNS]]]\n");
		return 2;
	}
	bin = argv[1];
	dir = argv[2];
	int dirs = argc > 3 ? atoi(argv[3]) : 10000, locks = argc > 4 ? atoi(argv[4]) : 100;
	size_t runs = argc > 5 ? (size_t)atoi(argv[5]) : 15;
	if (dirs < 100 || locks < 1 || locks > dirs || runs < 1)
		return 2;
	if (mkdir(dir, 0700) < 0)
		die(dir);
	int top = dirs / 100;
	char p[4096];
	for (int i = 0; i < top; i++) {
		snprintf(p, sizeof p, "%s/t%03d", dir, i);
		if (mkdir(p, 0700) < 0)
			die(p);
		for (int j = 0; j < 100; j++) {
			snprintf(p, sizeof p, "%s/t%03d/d%03d", dir, i, j);
			if (mkdir(p, 0700) < 0)
				die(p);
		}
	}
	hf_lock **held = calloc((size_t)locks, sizeof *held);
	if (!held)
		die("calloc");
	for (int k = 0; k < locks; k++) {
		int i = k % top, j = (k / top) % 100;
		snprintf(p, sizeof p, "%s/t%03d/d%03d/l%d.lock", dir, i, j, k);
		if (hf_lock_new(p, &held[k]) < 0 || hf_lock_acquire(held[k]) < 0) {
			fprintf(stderr, "%s: not acquired\n", p);
			return 1;
		}
	}
	run_list(NULL); /* warm: both sides read a cached tree */
	run_fslist(NULL);
	struct pairs r = pairs_measure(run_list, NULL, run_fslist, NULL, runs);
	printf("dirs locks items list_ms fslist_ms ratio\n");
	printf("%d %d %zu %.2f %.2f %.3f\n", dirs, locks, last_items, r.med_a / 1000,
	       r.med_b / 1000, r.med_b / r.med_a);
	for (int k = 0; k < locks; k++) {
		hf_lock_release(held[k]);
		hf_lock_free(held[k]);
	}
	free(held);
	return 0;
}
