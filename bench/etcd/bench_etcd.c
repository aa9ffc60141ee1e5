/*
 * bench_etcd.c - the directory lock on etcd, side by side with what it is
 * made of and with etcd's own lock (bench/etcd/run.sh runs it):
 *   lib N URI       N acquire+release through the library
 *   bare N URI      the same requests (lease grant, put-if-absent txn
 *                   reading the epoch key, etcdlock.c EL10,
 *                   lease revoke) on one reused curl handle, JSON prebuilt
 *   bare-noepoch N URI  the same without the epoch (the txn before EL10)
 *   v3lock N URI    etcd's lock service: grant, /v3/lock/lock,
 *                   /v3/lock/unlock, revoke
 *   scopelib N URI  N hf_scope register+release on etcd (one spec)
 *   scopebare N URI the requests those are made of (etcdscope.c): lease
 *                   grant, range of the prefix at R, the txn (pod key
 *                   absent, prefix unchanged since R, put with the lease),
 *                   then the release's lease revoke
 *   handoff N URI   release -> a waiting process holds it (the watch)
 *   poll N URI MS   the same with a waiter that tries every MS ms
 * Each prints "NAME us_per_op" (handoff, poll: the median in us).
 */
#include "holdfast.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void die(const char *what)
{
	fprintf(stderr, "bench-etcd: %s\n", what);
	exit(1);
}

static hf_lock *lk(const char *uri, const char *name)
{
	hf_lock *l;
	if (hf_lock_new(name, &l) < 0 || hf_lock_set_str(l, HF_OPT_BACKEND, uri) < 0)
		die("hf_lock_new");
	return l;
}

static double lib(int n, const char *uri)
{
	hf_lock *l = lk(uri, "/bench/lib.lock");
	int64_t t0 = mono_us();
	for (int i = 0; i < n; i++)
		if (hf_lock_acquire(l) < 0 || hf_lock_release(l) < 0)
			die("lib cycle");
	double us = (double)(mono_us() - t0) / n;
	hf_lock_free(l);
	return us;
}

struct buf {
	char b[65536];
	size_t n;
};

static size_t wr(char *d, size_t s, size_t m, void *ctx)
{
	struct buf *b = ctx;
	size_t k = s * m;
	if (b->n + k >= sizeof b->b)
		return 0;
	memcpy(b->b + b->n, d, k);
	b->n += k;
	b->b[b->n] = '\0';
	return k;
}

static const char *post(CURL *c, const char *base, const char *api, const char *body)
{
	static struct buf b;
	char url[256];
	snprintf(url, sizeof url, "%s%s", base, api);
	b.n = 0;
	b.b[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(c) != CURLE_OK)
		die("curl");
	return b.b;
}

/* "ID":"123" out of an answer */
static void field(const char *a, const char *name, char *out, size_t n)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":\"", name);
	const char *p = strstr(a, pat);
	if (!p)
		die(a);
	p += strlen(pat);
	size_t k = strcspn(p, "\"");
	if (k >= n)
		die("field");
	memcpy(out, p, k);
	out[k] = '\0';
}

static CURL *handle(void)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	return c;
}

/* The bare requests of a lease, as the library makes them: a grant of
 * 10 s (its ID into id), a revoke. */
static void bare_grant(CURL *c, const char *base, char *id, size_t n)
{
	field(post(c, base, "/v3/lease/grant", "{\"TTL\":10}"), "ID", id, n);
}

static void bare_revoke(CURL *c, const char *base, const char *id)
{
	char body[64];
	snprintf(body, sizeof body, "{\"ID\":\"%s\"}", id);
	post(c, base, "/v3/lease/revoke", body);
}

static double bare(int n, const char *base, bool epoch)
{
	CURL *c = handle();
	/* key "/holdfast/lock/bench/bare.lock", a value of an owner record's size */
	const char *k = "L2hvbGRmYXN0L2xvY2svYmVuY2gvYmFyZS5sb2Nr";
	const char *e = "L2hvbGRmYXN0L2Vwb2No"; /* "/holdfast/epoch" */
	char v[600];
	memset(v, 'e', 440);
	v[440] = '\0';
	char body[2048], id[32];
	if (epoch) { /* the epoch key, made once as the library does (put if absent) */
		snprintf(body, sizeof body,
			 "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
			 "\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"%s\","
			 "\"value\":\"MTc5NjEzMDY3MDY0MjM3MA==\"}}]}",
			 e, e);
		post(c, base, "/v3/kv/txn", body);
	}
	int64_t t0 = mono_us();
	for (int i = 0; i < n; i++) {
		bare_grant(c, base, id, sizeof id);
		if (epoch) /* etcdlock.c step 3 with EL10: the epoch in the same txn */
			snprintf(body, sizeof body,
				 "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":"
				 "\"EQUAL\",\"create_revision\":\"0\"},{\"key\":\"%s\",\"target\":"
				 "\"CREATE\",\"result\":\"GREATER\",\"create_revision\":\"0\"}],"
				 "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\","
				 "\"lease\":\"%s\"}},{\"request_range\":{\"key\":\"%s\"}}],"
				 "\"failure\":[{\"request_range\":{\"key\":\"%s\"}},{\"request_range\":"
				 "{\"key\":\"%s\"}}]}",
				 k, e, k, v, id, e, k, e);
		else /* the same without the epoch (before EL10) */
			snprintf(body, sizeof body,
				 "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":"
				 "\"EQUAL\",\"create_revision\":\"0\"}],\"success\":[{\"request_put\":"
				 "{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%s\"}}],\"failure\":"
				 "[{\"request_range\":{\"key\":\"%s\"}}]}",
				 k, k, v, id, k);
		if (!strstr(post(c, base, "/v3/kv/txn", body), "\"succeeded\":true"))
			die("bare txn");
		bare_revoke(c, base, id);
	}
	double us = (double)(mono_us() - t0) / n;
	curl_easy_cleanup(c);
	return us;
}

static double v3lock(int n, const char *base)
{
	CURL *c = handle();
	char body[512], id[32], key[256];
	int64_t t0 = mono_us();
	for (int i = 0; i < n; i++) {
		bare_grant(c, base, id, sizeof id);
		snprintf(body, sizeof body, "{\"name\":\"L2JlbmNoL3YzbG9jaw==\",\"lease\":\"%s\"}", id);
		field(post(c, base, "/v3/lock/lock", body), "key", key, sizeof key);
		snprintf(body, sizeof body, "{\"key\":\"%s\"}", key);
		post(c, base, "/v3/lock/unlock", body);
		bare_revoke(c, base, id);
	}
	double us = (double)(mono_us() - t0) / n;
	curl_easy_cleanup(c);
	return us;
}

static double scopelib(int n, const char *uri)
{
	hf_scope *s;
	if (hf_scope_new("bench-scope", &s) < 0 ||
	    hf_scope_add(s, "/tmp/hf-bench-scope/src:write:recursive") < 0 ||
	    hf_scope_set_str(s, HF_OPT_BACKEND, uri) < 0)
		die("hf_scope_new");
	int64_t t0 = mono_us();
	for (int i = 0; i < n; i++)
		if (hf_scope_register(s) < 0 || hf_scope_release(s) < 0)
			die("scope cycle");
	double us = (double)(mono_us() - t0) / n;
	hf_scope_free(s);
	return us;
}

static double scopebare(int n, const char *base)
{
	CURL *c = handle();
	/* "/holdfast/scope/", "/holdfast/scope0", "/holdfast/scope/bench-bare" */
	const char *pre = "L2hvbGRmYXN0L3Njb3BlLw==", *end = "L2hvbGRmYXN0L3Njb3BlMA==";
	const char *k = "L2hvbGRmYXN0L3Njb3BlL2JlbmNoLWJhcmU=";
	char v[700]; /* a value of an allocation's size */
	memset(v, 'e', 560);
	v[560] = '\0';
	char body[4096], id[32], rev[32], range[256];
	snprintf(range, sizeof range, "{\"key\":\"%s\",\"range_end\":\"%s\"}", pre, end);
	int64_t t0 = mono_us();
	for (int i = 0; i < n; i++) {
		bare_grant(c, base, id, sizeof id);
		field(post(c, base, "/v3/kv/range", range), "revision", rev, sizeof rev);
		snprintf(body, sizeof body,
			 "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":"
			 "\"EQUAL\",\"create_revision\":\"0\"},{\"key\":\"%s\",\"range_end\":"
			 "\"%s\",\"target\":\"MOD\",\"result\":\"LESS\",\"mod_revision\":"
			 "\"%lld\"}],\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":"
			 "\"%s\",\"lease\":\"%s\"}}]}",
			 k, pre, end, atoll(rev) + 1, k, v, id);
		if (!strstr(post(c, base, "/v3/kv/txn", body), "\"succeeded\":true"))
			die("scope bare txn");
		bare_revoke(c, base, id);
	}
	double us = (double)(mono_us() - t0) / n;
	curl_easy_cleanup(c);
	return us;
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Release while another process waits; the time until it holds. */
static double handoff(int n, const char *uri, int poll_ms)
{
	int64_t *lat = calloc((size_t)n, sizeof *lat);
	for (int i = 0; i < n; i++) {
		hf_lock *a = lk(uri, "/bench/handoff.lock");
		if (hf_lock_acquire(a) < 0)
			die("handoff: acquire");
		int p[2];
		if (pipe(p) < 0)
			die("pipe");
		fflush(NULL);
		pid_t c = fork();
		if (c == 0) {
			hf_lock *b = lk(uri, "/bench/handoff.lock");
			if (poll_ms)
				for (;;) { /* the polling waiter */
					if (hf_lock_acquire(b) == 0)
						break;
					struct timespec t = { 0, poll_ms * 1000000L };
					nanosleep(&t, NULL);
				}
			else {
				hf_lock_set(b, HF_OPT_WAIT_MS, -1);
				if (hf_lock_acquire(b) < 0)
					_exit(1);
			}
			int64_t t1 = mono_us();
			if (write(p[1], &t1, sizeof t1) != sizeof t1)
				_exit(1);
			hf_lock_free(b);
			_exit(0);
		}
		close(p[1]);
		/* let it wait; released at a phase of its polling that varies */
		struct timespec t = { 0, (300 + (i * 37) % 100) * 1000000L };
		nanosleep(&t, NULL);
		int64_t t0 = mono_us(), t1 = 0;
		if (hf_lock_release(a) < 0)
			die("handoff: release");
		if (read(p[0], &t1, sizeof t1) != sizeof t1)
			die("handoff: no waiter");
		waitpid(c, NULL, 0);
		close(p[0]);
		lat[i] = t1 - t0;
		hf_lock_free(a);
	}
	qsort(lat, (size_t)n, sizeof *lat, cmp);
	double med = (double)lat[n / 2];
	free(lat);
	return med;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		die("usage: bench-etcd lib|bare|bare-noepoch|v3lock|scopelib|scopebare|handoff|poll N URI [MS]");
	int n = atoi(argv[2]);
	const char *uri = argv[3];
	char base[128];
	snprintf(base, sizeof base, "http://%s", uri + strlen("etcd://"));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	double us;
	if (!strcmp(argv[1], "lib"))
		us = lib(n, uri);
	else if (!strcmp(argv[1], "bare"))
		us = bare(n, base, true);
	else if (!strcmp(argv[1], "bare-noepoch"))
		us = bare(n, base, false);
	else if (!strcmp(argv[1], "v3lock"))
		us = v3lock(n, base);
	else if (!strcmp(argv[1], "scopelib"))
		us = scopelib(n, uri);
	else if (!strcmp(argv[1], "scopebare"))
		us = scopebare(n, base);
	else if (!strcmp(argv[1], "handoff"))
		us = handoff(n, uri, 0);
	else if (!strcmp(argv[1], "poll") && argc > 4)
		us = handoff(n, uri, atoi(argv[4]));
	else
		die("unknown mode");
	printf("%s %.0f\n", argv[1], us);
	return 0;
}
