/*
 * bench_scope.c - a scope register+release cycle with n live allocations,
 * beside the bare cost of the same file round trips done with jansson.
 *
 * usage: bench-scope DIR N ITERS [distinct|glob]
 *
 * DIR gets a registry of N live allocations (the format holdfast writes).
 * Two measures alternate in blocks of 10 cycles, so both see the same noise:
 *   holdfast  hf_scope_register(new pod) + hf_scope_release(it), one
 *             handle: lock, read, parse, judge every owner alive, check
 *             overlap, write (tmp, fsync, rename, fsync dir), twice;
 *   floor     the same two file round trips with jansson alone: flock, read,
 *             json_loadb, append (remove) one allocation object, json_dumps,
 *             tmp + fsync + rename + fsync dir.
 * Owners: the N allocations belong to this process and 15 sleeping children
 * (round robin), or with "distinct" to N sleeping children, one each: the
 * cost of proving N different processes alive (one /proc read each).
 * With "glob" the N allocations hold glob specs (under /bench/src/mI: '**',
 * then dJ*.ts) and the new pod registers one (under /bench/src: '**', then
 * *.c), each pair under one literal line: overlap decided by the automaton
 * (spec_glob.c, SC10) N times per register, never by the prefix test; the
 * floor appends the same glob spec.
 * Prints: n bytes iters holdfast_ms floor_ms ratio (medians per cycle).
 */
#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
	perror(what);
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

static unsigned long long start_of(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		die("stat");
	buf[n] = '\0';
	char *s = strrchr(buf, ')');
	for (int f = 3; f < 22; f++)
		s = strchr(s + 1, ' ');
	return strtoull(s + 1, NULL, 10);
}

static json_t *alloc_obj(const char *name, pid_t pid, unsigned long long start, const char *boot,
			 const char *host, const char *spec, long long gen)
{
	return json_pack("{s:s, s:i, s:I, s:s, s:s, s:n, s:[s], s:n, s:I, s:s}", "name", name, "pid",
			 (int)pid, "pid_start", (json_int_t)start, "boot_id", boot, "host", host,
			 "socket", "scope_allow", spec, "delegated_from", "generation",
			 (json_int_t)gen, "registered", "2026-01-01T00:00:00Z");
}

/* One file round trip the plain way: the floor. */
static const char *new_spec = "/bench/new/x:write:recursive";

static void floor_op(const char *dir, int add, const char *boot, const char *host)
{
	char reg[4096], lock[4096], tmp[4096];
	snprintf(reg, sizeof reg, "%s/scope.lock", dir);
	snprintf(lock, sizeof lock, "%s/scope.lock.flock", dir);
	snprintf(tmp, sizeof tmp, "%s/scope.lock.tmp-floor", dir);
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX))
		die("lock");
	int fd = open(reg, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st))
		die("open");
	char *buf = malloc((size_t)st.st_size + 1);
	ssize_t got = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (got != st.st_size)
		die("read");
	json_error_t e;
	json_t *root = json_loadb(buf, (size_t)got, 0, &e);
	free(buf);
	if (!root)
		die("parse");
	json_t *arr = json_object_get(root, "allocations");
	json_int_t gen = json_integer_value(json_object_get(root, "generation")) + 1;
	json_object_set_new(root, "generation", json_integer(gen));
	if (add)
		json_array_append_new(arr, alloc_obj("floor", getpid(), 1, boot, host, new_spec,
						     gen));
	else
		json_array_remove(arr, json_array_size(arr) - 1);
	char *out = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	size_t ol = strlen(out);
	fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, out, ol) != (ssize_t)ol || fsync(fd))
		die("write");
	close(fd);
	free(out);
	if (rename(tmp, reg))
		die("rename");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd))
		die("fsync dir");
	close(dfd);
	close(lfd);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: bench-scope DIR N ITERS [distinct|glob]\n");
		return 2;
	}
	const char *dir = argv[1];
	int n = atoi(argv[2]), iters = atoi(argv[3]);
	int distinct = argc > 4 && !strcmp(argv[4], "distinct");
	int glob = argc > 4 && !strcmp(argv[4], "glob");
	if (glob)
		new_spec = "/bench/src/**/*.c:write";
	int nkids = distinct ? n : 15;
	pid_t *kids = calloc((size_t)nkids + 1, sizeof *kids);
	int go[2];
	if (pipe(go))
		die("pipe");
	for (int i = 0; i < nkids; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			die("fork");
		if (kids[i] == 0) {
			char c;
			close(go[1]);
			ssize_t r = read(go[0], &c, 1);
			_exit(r < 0);
		}
	}
	close(go[0]);
	char boot[64] = "", host[256] = "";
	int bfd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
	if (bfd < 0 || read(bfd, boot, 36) != 36)
		die("boot_id");
	close(bfd);
	gethostname(host, sizeof host);

	mkdir(dir, 0700);
	char reg[4096];
	snprintf(reg, sizeof reg, "%s/scope.lock", dir);
	setenv("HOLDFAST_REGISTRY", reg, 1);
	json_t *root = json_object(), *arr = json_array();
	for (int i = 0; i < n; i++) {
		char name[32], spec[128];
		snprintf(name, sizeof name, "a%05x", i);
		if (glob)
			snprintf(spec, sizeof spec, "/bench/src/m%d/**/d%d*.ts:write", i % 97, i);
		else
			snprintf(spec, sizeof spec, "/bench/m%d/d%d:write:recursive", i % 97, i);
		pid_t owner = distinct ? kids[i] : (i % 16 == 15 ? getpid() : kids[i % 15]);
		json_array_append_new(arr, alloc_obj(name, owner, start_of(owner), boot, host, spec,
						     i + 1));
	}
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "generation", json_integer(n));
	json_object_set_new(root, "allocations", arr);
	if (json_dump_file(root, reg, JSON_COMPACT))
		die("gen");
	json_decref(root);
	chmod(reg, 0600);

	double *ours = malloc(sizeof(double) * (size_t)iters);
	double *flr = malloc(sizeof(double) * (size_t)iters);
	hf_scope *s;
	if (hf_scope_new("newalloc", &s) < 0 || hf_scope_add(s, new_spec) < 0)
		die("hf_scope_new");
	for (int done = 0; done < iters;) {
		int block = iters - done < 10 ? iters - done : 10;
		for (int k = 0; k < block; k++) {
			double t0 = now_ms();
			int rc = hf_scope_register(s);
			if (rc == 0)
				rc = hf_scope_release(s); /* closes the liveness descriptor */
			if (rc < 0) {
				const char *why = hf_rec_str(hf_scope_holder(s), "reason");
				fprintf(stderr, "holdfast: %s %s\n", hf_strerror(rc), why ? why : "");
				return 1;
			}
			ours[done + k] = now_ms() - t0;
		}
		for (int k = 0; k < block; k++) {
			double t0 = now_ms();
			floor_op(dir, 1, boot, host);
			floor_op(dir, 0, boot, host);
			flr[done + k] = now_ms() - t0;
		}
		done += block;
	}
	struct stat st;
	stat(reg, &st);
	hf_scope_free(s);
	hf_registry *t;
	if (hf_registry_read(NULL, &t, NULL) < 0 || (int)hf_registry_count(t) != n) {
		fprintf(stderr, "the registry does not hold the %d allocations any more\n", n);
		return 1;
	}
	hf_registry_free(t);
	double mo = median(ours, iters), mf = median(flr, iters);
	printf("%d %lld %d %.4f %.4f %.2f\n", n, (long long)st.st_size, iters, mo, mf, mo / mf);
	close(go[1]);
	for (int i = 0; i < nkids; i++)
		waitpid(kids[i], NULL, 0);
	free(kids);
	free(ours);
	free(flr);
	return 0;
}
