/* threads.c - the library's code that runs on many threads at once, without
 * Criterion (whose forking arena cannot start under ThreadSanitizer): the
 * per-process caches read by threads of a fresh process (proc.c, PR4), and
 * threads of one process taking and waiting for one directory lock through
 * their own handles, as the bindings' waits do. Exit 0 when every thread saw
 * what it must; under the TSan build (make check-tsan) a data race aborts
 * it (TSAN_OPTIONS=halt_on_error=1). Usage: test-threads DIR. */
#include "holdfast.h"
#include "proc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 40

struct seen {
	uint64_t pidns, timens;
	const char *boot, *host;
};

static void *read_caches(void *arg)
{
	struct seen *s = arg;
	s->pidns = hf_self_pidns();
	s->timens = hf_self_timens();
	s->boot = hf_boot_id();
	s->host = hf_host_name();
	return NULL;
}

/* In a fresh process (a fork: its caches are read again), every thread at
 * once; all must agree. */
static int caches(void)
{
	pid_t kid = fork();
	if (kid < 0)
		return 1;
	if (kid == 0) {
		pthread_t t[THREADS];
		struct seen s[THREADS];
		for (int i = 0; i < THREADS; i++)
			if (pthread_create(&t[i], NULL, read_caches, &s[i]) != 0)
				_exit(2);
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		for (int i = 1; i < THREADS; i++)
			if (s[i].pidns != s[0].pidns || s[i].timens != s[0].timens ||
			    strcmp(s[i].boot, s[0].boot) || strcmp(s[i].host, s[0].host))
				_exit(3);
		_exit(s[0].pidns && strlen(s[0].boot) == HF_BOOTID_LEN ? 0 : 4);
	}
	int st;
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "threads: caches: child status %d\n", st);
		return 1;
	}
	return 0;
}

static const char *lock_path;
static atomic_int inside, overlaps, failures;

static void *contend(void *arg)
{
	(void)arg;
	for (int r = 0; r < ROUNDS; r++) {
		hf_lock *l;
		if (hf_lock_new(lock_path, &l) < 0) {
			atomic_fetch_add(&failures, 1);
			return NULL;
		}
		hf_lock_set(l, HF_OPT_WAIT_MS, 30000);
		int rc = hf_lock_acquire(l);
		if (rc == 0) {
			if (atomic_fetch_add(&inside, 1) != 0)
				atomic_fetch_add(&overlaps, 1);
			atomic_fetch_sub(&inside, 1);
			rc = hf_lock_release(l);
		}
		if (rc != 0) {
			fprintf(stderr, "threads: %s: %s\n", lock_path, hf_strerror(rc));
			atomic_fetch_add(&failures, 1);
		}
		hf_lock_free(l);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test-threads DIR\n");
		return 64;
	}
	if (caches())
		return 1;
	char path[4096];
	snprintf(path, sizeof path, "%s/threads-%d.lock", argv[1], (int)getpid());
	lock_path = path;
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, contend, NULL) != 0)
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	char state[4200];
	snprintf(state, sizeof state, "%s.holdfast", path);
	char cmd[8500];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", path, state);
	if (system(cmd) != 0)
		fprintf(stderr, "threads: could not remove %s\n", path);
	int o = atomic_load(&overlaps), f = atomic_load(&failures);
	printf("threads: %d threads x %d rounds: %d overlaps, %d failures\n", THREADS, ROUNDS, o, f);
	return o == 0 && f == 0 ? 0 : 1;
}
