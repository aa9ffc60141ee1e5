/*
 * bench_guard.c - the commit guard's cost: `holdfast scope check --staged`
 * on a commit of P staged paths against a registry of N live pods, beside
 * `git diff --cached --name-status -z --no-renames` alone (the floor: the
 * git call the guard itself makes, which no guard can do without).
 *
 * usage: bench-guard HOLDFAST DIR N P ITERS
 *
 * DIR becomes a git repository (HEAD: one file) with P new files staged,
 * and N pods registered through the library in its registry (the tree's:
 * .git/holdfast/scope.lock), pod i holding DIR/p/dI:write:recursive, owned
 * by this process. Two cases, each measured against the floor in
 * alternating blocks of 5 (both see the same noise), each command run by
 * fork + exec with its output to /dev/null:
 *   refused  the P paths are p/dI/f (one in each of P pods' scopes) and the
 *            guard asks for pod d0: all but one refused, each worded;
 *   free     the P paths are free/fJ, in no pod's scope: all free.
 *   one_path `holdfast scope check PATH --pod d0` of one of them: what any
 *            reading of this registry costs (read, parse, judge), against
 *            the same floor.
 * Prints one line per case: case n p iters holdfast_ms floor_ms ratio
 * (medians per run, CLOCK_MONOTONIC).
 */
#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "bench-guard: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmpd);
	return v[n / 2];
}

/* Run argv in dir, stdout (and stderr unless show_err) to /dev/null: the
 * time it took; its exit code in *code. */
static double run(const char *dir, char *const *argv, int *code)
{
	double t0 = now_ms();
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || chdir(dir) < 0)
			_exit(125);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	double t = now_ms() - t0;
	*code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return t;
}

static void sh(const char *dir, const char *cmd)
{
	char *const argv[] = { "sh", "-c", (char *)cmd, NULL };
	int code;
	run(dir, argv, &code);
	if (code) {
		fprintf(stderr, "bench-guard: '%s' exited %d\n", cmd, code);
		exit(2);
	}
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "x\n", 2) != 2)
		die(path);
	close(fd);
}

/* One case: holdfast's and the floor's medians, alternating. */
static void measure(const char *name, const char *dir, char *const *guard, int want, int n,
		    int p, int iters)
{
	char *const floor_argv[] = { "git", "diff", "--cached", "--name-status", "-z",
				     "--no-renames", "--no-ext-diff", NULL };
	double *ours = malloc(sizeof(double) * (size_t)iters);
	double *flr = malloc(sizeof(double) * (size_t)iters);
	int code;
	run(dir, guard, &code); /* warm */
	if (code != want) {
		fprintf(stderr, "bench-guard: %s: the guard exited %d, not %d\n", name, code, want);
		exit(2);
	}
	for (int done = 0; done < iters;) {
		int block = iters - done < 5 ? iters - done : 5;
		for (int k = 0; k < block; k++)
			ours[done + k] = run(dir, guard, &code);
		for (int k = 0; k < block; k++)
			flr[done + k] = run(dir, floor_argv, &code);
		done += block;
	}
	double h = median(ours, iters), f = median(flr, iters);
	printf("%s %d %d %d %.2f %.2f %.2f\n", name, n, p, iters, h, f, h / f);
	free(ours);
	free(flr);
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: bench-guard HOLDFAST DIR N P ITERS\n");
		return 2;
	}
	char *bin = argv[1];
	const char *dir = argv[2];
	int n = atoi(argv[3]), p = atoi(argv[4]), iters = atoi(argv[5]);
	if (n < 1 || p < 1 || p > n || iters < 1) {
		fprintf(stderr, "bench-guard: need 1 <= P <= N, ITERS >= 1\n");
		return 2;
	}
	unsetenv("HOLDFAST_REGISTRY");
	unsetenv("HOLDFAST_POD");
	if (mkdir(dir, 0700) < 0)
		die(dir);
	sh(dir, "git init -q . && git config user.email b@example.com && git config user.name b "
		"&& echo 0 > README && git add README && git commit -qm init && mkdir p free");
	char path[4096];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/p/d%d", dir, i);
		if (mkdir(path, 0755) < 0)
			die(path);
	}
	/* N pods through the library, in the tree's registry */
	for (int i = 0; i < n; i++) {
		char name[32], spec[4200];
		snprintf(name, sizeof name, "d%d", i);
		snprintf(spec, sizeof spec, "%s/p/d%d:write:recursive", dir, i);
		hf_scope *s;
		int rc = hf_scope_new(name, &s);
		if (rc == 0)
			rc = hf_scope_add(s, spec);
		if (rc == 0)
			rc = hf_scope_register(s);
		if (rc < 0) {
			fprintf(stderr, "bench-guard: register %s: %s\n", name, hf_strerror(rc));
			return 2;
		}
		int fd = hf_scope_detach(s); /* alive by our pid (RG7), fd not needed */
		if (fd >= 0)
			close(fd);
		hf_scope_free(s);
	}
	/* refused: one new file in each of the first P pods' scopes */
	for (int i = 0; i < p; i++) {
		snprintf(path, sizeof path, "%s/p/d%d/f", dir, i);
		touch(path);
	}
	sh(dir, "git add p");
	/* one path alone (`scope check PATH`): the registry's read and judge,
	 * which every guard run pays once */
	snprintf(path, sizeof path, "%s/p/d1/f", dir);
	char *const one[] = { bin, "scope", "check", path, "--pod", "d0", NULL };
	measure("one_path", dir, one, 1, n, 1, iters);
	char *const pod_guard[] = { bin, "scope", "check", "--staged", "--pod", "d0", NULL };
	measure("refused", dir, pod_guard, 1, n, p, iters);
	/* free: P files in no pod's scope, nothing else staged */
	sh(dir, "git reset -q");
	for (int j = 0; j < p; j++) {
		snprintf(path, sizeof path, "%s/free/f%d", dir, j);
		touch(path);
	}
	sh(dir, "git add free");
	char *const free_guard[] = { bin, "scope", "check", "--staged", NULL };
	measure("free", dir, free_guard, 0, n, p, iters);
	return 0;
}
