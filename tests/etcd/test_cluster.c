/*
 * test_cluster.c - the directory lock on a 3-member etcd cluster, with
 * faults (suite etcd-cluster, `make check-cluster`): a member killed under
 * a holder and under a waiter, quorum lost and regained; the scope chain
 * A->B->D with B's member killed; a scope waiter whose member dies. Each test starts
 * its own three members on free loopback ports (data dirs under /tmp),
 * stopped by pid.
 */
#include "et.h"
#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 3
static struct member {
	pid_t pid;
	char name[8], client[64], peer[64], endpoint[64], data[600], log[600];
} M[N];
static char cluster[400], uri[300], *root, *dir;

static void start(int i)
{
	struct member *m = &M[i];
	fflush(NULL);
	m->pid = fork();
	cr_assert_geq(m->pid, 0);
	if (m->pid == 0) {
		int fd = open(m->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		setpgid(0, 0);
		et_child_dies_with_parent();
		execlp("etcd", "etcd", "--name", m->name, "--data-dir", m->data, "--listen-client-urls",
		       m->client, "--advertise-client-urls", m->client, "--listen-peer-urls", m->peer,
		       "--initial-advertise-peer-urls", m->peer, "--initial-cluster", cluster,
		       "--initial-cluster-state", "new", "--initial-cluster-token", "hft",
		       (char *)NULL);
		_exit(127);
	}
	et_note_pid(root, m->pid);
}

static void kill_member(int i)
{
	et_stop_pid(&M[i].pid, SIGKILL);
}

/* Every member answers (a status through it alone), bounded. */
static void ready(void)
{
	int64_t until = et_mono_ms() + 120000;
	for (int i = 0; i < N; i++) {
		if (!M[i].pid)
			continue;
		char u[80], who[16];
		snprintf(u, sizeof u, "etcd://%s", M[i].endpoint);
		snprintf(who, sizeof who, "member %d", i);
		et_await(who, u, NULL, &M[i].pid, M[i].log, until);
	}
}

static void setup(void)
{
	et_sweep("hft-etcd-cluster.");
	char tmpl[] = "/tmp/hft-etcd-cluster.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	root = strdup(tmpl);
	et_own_dir(root); /* never swept while this test runs */
	dir = hft_tmpdir();
	cluster[0] = '\0';
	snprintf(uri, sizeof uri, "etcd://");
	for (int i = 0; i < N; i++) {
		struct member *m = &M[i];
		int cp = et_free_port(), pp = et_free_port();
		snprintf(m->name, sizeof m->name, "m%d", i);
		snprintf(m->client, sizeof m->client, "http://127.0.0.1:%d", cp);
		snprintf(m->peer, sizeof m->peer, "http://127.0.0.1:%d", pp);
		snprintf(m->endpoint, sizeof m->endpoint, "127.0.0.1:%d", cp);
		snprintf(m->data, sizeof m->data, "%s/m%d", root, i);
		snprintf(m->log, sizeof m->log, "%s/m%d.log", root, i);
		snprintf(cluster + strlen(cluster), sizeof cluster - strlen(cluster), "%s%s=%s",
			 i ? "," : "", m->name, m->peer);
		snprintf(uri + strlen(uri), sizeof uri - strlen(uri), "%s%s", i ? "," : "", m->endpoint);
	}
	for (int i = 0; i < N; i++)
		start(i);
	ready();
}

static void teardown(void)
{
	et_kill_keepers(uri);
	for (int i = 0; i < N; i++)
		et_stop_pid(&M[i].pid, SIGTERM);
	hft_rmtree(root);
	hft_rmtree(dir);
	free(root);
	free(dir);
}

TestSuite(etcd_cluster, .init = setup, .fini = teardown, .timeout = 300);

static hf_lock *lk(const char *name)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	hf_lock *l;
	cr_assert_eq(hf_lock_new(path, &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, uri), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_TIMEOUT_MS, 3000), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_TTL_MS, 60000), 0);
	return l;
}

/* The member a holder talks to (the first endpoint) is killed: the lock
 * stays held, the others refuse it naming the holder, release and the next
 * acquisition (a greater fence) go through the remaining members. */
Test(etcd_cluster, member_killed_under_a_holder)
{
	hf_lock *a = lk("m"), *b = lk("m");
	cr_assert_eq(hf_lock_acquire(a), 0);
	uint64_t f = hf_lock_fence(a);
	kill_member(0);
	cr_assert_eq(hf_lock_check(a), 0, "%s",
		     hf_lock_holder(a) ? hf_rec_json(hf_lock_holder(a)) : "");
	cr_assert_eq(hf_lock_acquire(b), HF_EHELD);
	int64_t pid;
	cr_assert_eq(hf_rec_int(hf_lock_holder(b), "pid", &pid), 0);
	cr_assert_eq(pid, getpid());
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_acquire(b), 0);
	cr_assert_gt(hf_lock_fence(b), f);
	hf_lock_free(a);
	hf_lock_free(b);
}

/* Quorum lost (two of three killed): every request ends with a clear
 * error within its timeout, never a hang; regained (restarted on their
 * data): the lease held on, the lock is still the holder's, and later
 * fences are greater. */
Test(etcd_cluster, quorum_lost_and_regained)
{
	hf_lock *a = lk("q");
	cr_assert_eq(hf_lock_acquire(a), 0);
	uint64_t f = hf_lock_fence(a);
	kill_member(1);
	kill_member(2);
	int64_t t0 = et_mono_ms();
	cr_assert_eq(hf_lock_check(a), -EIO);
	cr_assert_lt(et_mono_ms() - t0, 30000, "no answer within the timeouts");
	const char *why = hf_rec_str(hf_lock_holder(a), "reason");
	cr_assert(why && strstr(why, "etcd"), "%s", why ? why : "(none)");
	char lock[700];
	snprintf(lock, sizeof lock, "%s/q", dir);
	const char *status[] = { "holdfast", "lock", "status", lock, "--etcd-timeout", "2s", "--backend",
				 uri, NULL };
	char *out = NULL, *err = NULL;
	cr_assert_eq(hft_cli(&out, &err, status), 74, "%s", err);
	free(out);
	free(err);
	start(1);
	start(2);
	ready();
	cr_assert_eq(hf_lock_check(a), 0, "the lease did not hold on through the outage: %s",
		     hf_lock_holder(a) ? hf_rec_json(hf_lock_holder(a)) : "");
	cr_assert_eq(hf_lock_release(a), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	cr_assert_gt(hf_lock_fence(a), f);
	hf_lock_free(a);
}

/* A waiter whose member dies before its watch (it judged the lock held
 * there, then the member went) judges again at another member and still
 * gets the lock the release frees. */
Test(etcd_cluster, waiter_survives_its_member)
{
	char lock[700], tok[128];
	snprintf(lock, sizeof lock, "%s/w", dir);
	const char *acq[] = { "holdfast", "lock", "acquire", lock, "-n", "--pid", "1", "--ttl", "60s",
			      "--backend", uri, NULL };
	char *out = NULL;
	cr_assert_eq(hft_cli(&out, NULL, acq), 0);
	snprintf(tok, sizeof tok, "%s", out);
	tok[strcspn(tok, "\n")] = '\0';
	free(out);
	struct hft_child w;
	const char *waiter[] = { "holdfast", "lock", "acquire", lock, "-w", "120", "--backend", uri,
				 NULL };
	hft_spawn_cli(&w, "pause:etcdlock.acquire.judged", waiter, NULL);
	hft_expect(&w, "etcdlock.acquire.judged"); /* judged at the first member */
	kill_member(0);
	const char *rel[] = { "holdfast", "lock", "release", lock, "--token", tok, "--backend", uri,
			      NULL };
	cr_assert_eq(hft_cli(NULL, NULL, rel), 0);
	hft_go(&w);
	char *err = NULL;
	int st = hft_collect(w.pid, w.out_rd, w.err_rd, &out, &err);
	cr_assert_eq(st, 0, "the waiter: exit %d: %s", st, err);
	cr_assert_gt(strlen(out), 32);
	free(out);
	free(err);
}

/* A scope waiter (`scope register -w`) refused at the first member, whose
 * member dies before its watch: the broken watch decides again at another
 * member (etcdscope.c step 6, ES5) and registers once the holder released. */
Test(etcd_cluster, scope_waiter_survives_its_member)
{
	char spec[700], sub[700], pid[16];
	snprintf(spec, sizeof spec, "%s/ws:write:recursive", dir);
	snprintf(sub, sizeof sub, "%s/ws/x:write", dir);
	pid_t owner = et_sleeper();
	snprintf(pid, sizeof pid, "%d", (int)owner);
	const char *reg[] = { "holdfast", "scope", "register", "WH", spec, "--pid", pid,
			      "--backend", uri, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, reg), 0);
	struct hft_child w;
	const char *waiter[] = { "holdfast", "scope", "register", "WW", sub, "-w", "120s", "--pid",
				 pid, "--backend", uri, NULL };
	hft_spawn_cli(&w, "pause:scope.register.waiting", waiter, NULL);
	hft_expect(&w, "scope.register.waiting"); /* refused at the first member */
	kill_member(0);
	const char *rel[] = { "holdfast", "scope", "release", "WH", "--backend", uri, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, rel), 0);
	hft_go(&w);
	char *out = NULL, *err = NULL;
	int st = hft_collect(w.pid, w.out_rd, w.err_rd, &out, &err);
	cr_assert_eq(st, 0, "the waiter: exit %d: %s", st, err);
	cr_assert(strstr(out, "registered WW"), "%s", out);
	free(out);
	free(err);
	et_reap(owner);
}

/* The scope registry: A -> B -> D, B's keeper talking to member 0 alone;
 * member 0 killed: B's lease goes unrenewed and expires (2 s), while A's
 * and D's keepers go on at the other members. Then D is A's child and A's
 * effective scope is its own minus D's (etcdscope.c ES4). */
Test(etcd_cluster, scope_chain_with_b_member_killed)
{
	char env[400], *reg;
	snprintf(env, sizeof env, "HOLDFAST_BACKEND=%s", uri);
	cr_assert_geq(asprintf(&reg,
			       "\"$H\" scope register CA c/src:write:recursive --pid $a >/dev/null || exit 10\n"
			       "\"$H\" scope register CB c/src/core:write:recursive --pid $b --from CA "
			       "--ttl 2s --backend etcd://%s >/dev/null || exit 11\n"
			       "\"$H\" scope register CD c/src/core/x:write:recursive --pid $d --from CB "
			       ">/dev/null || exit 12\n",
			       M[0].endpoint),
		      0);
	struct et_chain c = { .a = "CA", .b = "CB", .d = "CD" };
	et_chain_start(&c, env, dir, reg);
	free(reg);
	kill_member(0);
	et_chain_judge(&c, env, dir);
}

/* The members' endpoints, follower first: the URI of a client that talks
 * to member f (and fails over to the others in order), or that talks to f
 * last. */
static void uri_with(int f, bool first, char *out, size_t cap)
{
	snprintf(out, cap, "etcd://");
	if (first)
		snprintf(out + strlen(out), cap - strlen(out), "%s,", M[f].endpoint);
	for (int i = 0, n = 0; i < N; i++)
		if (i != f)
			snprintf(out + strlen(out), cap - strlen(out), "%s%s", n++ ? "," : "",
				 M[i].endpoint);
	if (!first)
		snprintf(out + strlen(out), cap - strlen(out), ",%s", M[f].endpoint);
}

static int follower(void)
{
	const char *ep[N];
	for (int i = 0; i < N; i++)
		ep[i] = M[i].endpoint;
	int l = et_leader(ep, N);
	cr_assert_geq(l, 0, "no leader");
	return (l + 1) % N;
}

/* A follower f to hang, and the URIs that talk to it first and last. */
static int to_hang(char first[300], char last[300])
{
	int f = follower();
	uri_with(f, true, first, 300);
	uri_with(f, false, last, 300);
	return f;
}

/* A lock at path on the members of uri, each request bounded by 3 s. */
static hf_lock *lk_at(const char *path, const char *at)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new(path, &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, at), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_TIMEOUT_MS, 3000), 0);
	return l;
}

/* The member a holder's keep-alive talks to hangs (SIGSTOP: connections
 * are accepted, nothing answers) - a cut-off member as its clients see it.
 * Each keep-alive is bounded by TTL/6 and goes to the next member after a
 * failure (LE2), so the lease outlives three TTLs of the hang although one
 * request's timeout (11 s) is longer than the TTL (10 s). */
Test(etcd_cluster, keepalive_fails_over_from_a_hung_member)
{
	char first[300], last[300], path[700];
	int f = to_hang(first, last);
	snprintf(path, sizeof path, "%s/ka", dir);
	hf_lock *a = lk_at(path, first), *b;
	cr_assert_eq(hf_lock_set(a, HF_OPT_TTL_MS, 10000), 0);
	cr_assert_eq(hf_lock_set(a, HF_OPT_TIMEOUT_MS, 11000), 0);
	cr_assert_eq(hf_lock_acquire(a), 0);
	kill(M[f].pid, SIGSTOP);
	int64_t until = et_mono_ms() + 3 * 10000;
	while (et_mono_ms() < until)
		usleep(100000); /* the lease's life is what is tested: three TTLs */
	b = lk_at(path, last);
	int rc = hf_lock_acquire(b);
	kill(M[f].pid, SIGCONT);
	cr_assert_eq(rc, HF_EHELD, "the holder's lease did not outlive the hang: %s",
		     hf_error_name(rc));
	const char *tok = hf_rec_str(hf_lock_holder(b), "token");
	cr_assert(tok && !strcmp(tok, hf_lock_token(a)), "held by %s", tok ? tok : "nobody");
	/* the release: 0; or not held when an election the loaded machine
	 * forced on the two members left outlasted what the holder could prove
	 * of its lease (LE2: it stops believing, etcd extended the lease, which
	 * then ends a TTL later) - reported, not this test's question */
	rc = hf_lock_release(a);
	cr_assert(rc == 0 || rc == HF_ENOTHELD, "release: %s: %s", hf_error_name(rc),
		  hf_lock_holder(a) ? hf_rec_json(hf_lock_holder(a)) : "");
	if (rc)
		fprintf(stderr, "keepalive_fails_over_from_a_hung_member: the lease ended after the "
				"hang (an election outlasted the holder's proof, LE2)\n");
	hf_lock_free(a);
	hf_lock_free(b);
}

/* A waiter whose first member hangs: its lease grant is sent there and
 * times out (1 s). A waiting acquisition goes on within its deadline
 * (EL9) and the next request starts at the next member (etcd.c step 3):
 * it waits at another member and gets the lock when the holder lets go. */
Test(etcd_cluster, waiting_acquire_outlives_a_hung_member)
{
	char first[300], last[300], lock[700];
	int f = to_hang(first, last);
	snprintf(lock, sizeof lock, "%s/hw", dir);
	hf_lock *h = lk_at(lock, last);
	cr_assert_eq(hf_lock_acquire(h), 0);
	kill(M[f].pid, SIGSTOP);
	struct hft_child w;
	const char *waiter[] = { "holdfast", "lock", "acquire", lock, "-w", "60", "--etcd-timeout",
				 "1s", "--backend", first, NULL };
	hft_spawn_cli(&w, "pause:etcdlock.acquire.judged", waiter, NULL);
	hft_expect(&w, "etcdlock.acquire.judged");
	kill(M[f].pid, SIGCONT);
	cr_assert_eq(hf_lock_release(h), 0);
	hft_go(&w);
	char *out = NULL, *err = NULL;
	int st = hft_collect(w.pid, w.out_rd, w.err_rd, &out, &err);
	cr_assert_eq(st, 0, "the waiter: exit %d: %s", st, err);
	cr_assert_gt(strlen(out), 32);
	free(out);
	free(err);
	hf_lock_free(h);
}

/* The same for a waiting session take (handle_session.c HS6): its take is
 * sent to a member that hangs and times out; it judges again at another
 * member, finds lane a holding and waits out its deadline there
 * (HF_ETIMEDOUT naming the holder), where it failed with EIO before. */
Test(etcd_cluster, waiting_session_take_outlives_a_hung_member)
{
	char first[300], last[300], path[700];
	int f = to_hang(first, last);
	snprintf(path, sizeof path, "%s/.session.lock", dir);
	hf_session *a, *b;
	cr_assert_eq(hf_session_new(path, "a", &a), 0);
	cr_assert_eq(hf_session_set_str(a, HF_OPT_BACKEND, last), 0);
	cr_assert_eq(hf_session_take(a), 0);
	kill(M[f].pid, SIGSTOP);
	cr_assert_eq(hf_session_new(path, "b", &b), 0);
	cr_assert_eq(hf_session_set_str(b, HF_OPT_BACKEND, first), 0);
	cr_assert_eq(hf_session_set(b, HF_OPT_TIMEOUT_MS, 1000), 0);
	cr_assert_eq(hf_session_set(b, HF_OPT_WAIT_MS, 3000), 0);
	int rc = hf_session_take(b);
	kill(M[f].pid, SIGCONT);
	cr_assert_eq(rc, HF_ETIMEDOUT, "%s: %s", hf_error_name(rc),
		     hf_session_holder(b) ? hf_rec_json(hf_session_holder(b)) : "");
	const char *lane = hf_rec_str(hf_session_holder(b), "lane");
	cr_assert(lane && !strcmp(lane, "a"), "held by %s", lane ? lane : "nobody");
	cr_assert_eq(hf_session_release(a), 0);
	hf_session_free(a);
	hf_session_free(b);
}
