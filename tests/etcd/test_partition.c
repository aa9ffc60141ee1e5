/*
 * test_partition.c - the directory lock on a 3-member etcd cluster spread
 * over three "hosts", under load, with members killed and the leader's
 * host cut off and healed (suite etcd_partition, `make check-cluster`).
 *
 * The hosts
 * ---------
 *   Each host is a network namespace of its own (hft<PID>h0..h2), joined
 *   to a hub namespace (hft<PID>hub, a bridge) by a veth pair: host i is
 *   10.78.0.(i+1), its member listens there. A partition sets the hub's
 *   end of host i's pair down: host i's member and its clients reach
 *   nobody, the others reach each other. The test process itself lives in
 *   the hub (10.78.0.100): it sees the majority side.
 *   Clients run in "containers" on those hosts: a process that entered
 *   the host's network namespace and made new pid, mount (its own /proc)
 *   and UTS namespaces; so a holder's pid is judged by no client of
 *   another container and its lock comes back only by its lease.
 *
 * The load and the overlap detector
 * ---------------------------------
 *   Two workers per host contend for one lock (TTL 2 s, requests 2 s,
 *   waits 3 s) for the whole test. A worker that holds writes three times
 *   to a resource - a file that keeps the greatest fence it accepted and
 *   refuses a write with a smaller one (the fence check every resource is
 *   told to make) - then checks the lock (hf_lock_check, a linearizable
 *   read) and releases it. Each operation is logged with CLOCK_MONOTONIC
 *   times (one clock for every namespace). Judged at the end:
 *     - no two holds whose check confirmed them overlap: a confirmed hold
 *       [acquired, check called] had its key - its lease live - all along;
 *     - every acquisition that began after another ended has a greater
 *       fence (EL2, across leader changes and partitions);
 *     - every operation ended, succeeded or failed with a known error,
 *       within its bound (the wait plus the requests it may have in flight);
 *     - the resource's accepted fences never go down.
 *
 * The faults, in order: a holder in a container killed (its lock back
 * within the TTL for a waiter on another host), the leader killed and
 * restarted, a follower killed and restarted, the leader's host cut off
 * while a holder there keeps writing (a holder on the majority side gets
 * the lock after the TTL with a greater fence, the cut-off holder's next
 * write is refused by the resource, its `lock check --fence` never says
 * "yours", and after the heal its check and release say it lost the lock
 * and leave the new holder's alone), then the heal.
 *
 * a_watch_at_a_cut_member_ends: a waiter whose watch stream is open at a
 * member whose host is then cut off (no FIN) gets the released lock
 * within seconds, not after TCP's default minute or its deadline.
 *
 * scope_chain_with_b_host_cut: A -> B -> D, each pod's keeper on its own
 * host; B's host cut off: B's lease expires on the majority side, D is A's
 * child and A's effective scope is its own minus D's.
 */
#include "et.h"
#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NH 3
#define WORKERS 2    /* per host, on the loaded lock                    */
#define TTL_MS 2000
#define REQ_MS 2000
#define WAIT_MS 3000
/* An operation's bound: its wait and the requests it may have in flight
 * when the wait ends - at most 3 (a release: the keep-alive it joins, the
 * revoke, the revoke again at the next member) - with room for a loaded
 * 2-core machine. A request is bounded by NH * REQ_MS, not REQ_MS: a
 * connect that fails moves to the next endpoint, each at most once per
 * request (etcd.c, step 3), and on a cut-off host every connect fails
 * after its timeout (--etcd-timeout caps it too). A bound of 3 * REQ_MS
 * failed a release on the cut-off host that took 10.3 s: its check had
 * taken 4.0 s, two endpoints' connect timeouts. */
#define OP_BOUND_MS(wait) ((wait) + 3 * NH * REQ_MS + 4000)

static char tag[24], hub[40], hostns[NH][40], ip[NH][20], uri[200], cluster[300];
static char *root, *res_main;
static pid_t member[NH];

/* ---- namespaces and members ---------------------------------------------------- */

static void run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd;
	cr_assert_geq(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", cmd, st);
	free(cmd);
}

static void enter_net(const char *ns)
{
	char p[80];
	snprintf(p, sizeof p, "/run/netns/%s", ns);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "enter %s: %s\n", ns, strerror(errno));
		_exit(126);
	}
	close(fd);
}

/* Namespaces of earlier runs whose test process is gone (a timeout). */
static void sweep_netns(void)
{
	FILE *f = popen("ip netns list 2>/dev/null", "r");
	cr_assert_not_null(f);
	char line[200];
	while (fgets(line, sizeof line, f)) {
		int pid;
		char name[64];
		if (sscanf(line, "%63s", name) != 1 || sscanf(name, "hft%d", &pid) != 1 || pid <= 0)
			continue;
		if (kill(pid, 0) < 0 && errno == ESRCH) {
			char cmd[200];
			snprintf(cmd, sizeof cmd, "ip netns del %s 2>/dev/null", name);
			if (system(cmd) != 0)
				fprintf(stderr, "could not remove namespace %s\n", name);
		}
	}
	pclose(f);
}

static void start(int i)
{
	char data[600], log[600], client[64], peer[64];
	snprintf(data, sizeof data, "%s/m%d", root, i);
	snprintf(log, sizeof log, "%s/m%d.log", root, i);
	snprintf(client, sizeof client, "http://%s:2379", ip[i]);
	snprintf(peer, sizeof peer, "http://%s:2380", ip[i]);
	char name[8];
	snprintf(name, sizeof name, "m%d", i);
	fflush(NULL);
	member[i] = fork();
	cr_assert_geq(member[i], 0);
	if (member[i] == 0) {
		et_child_dies_with_parent();
		enter_net(hostns[i]);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		setpgid(0, 0);
		execlp("etcd", "etcd", "--name", name, "--data-dir", data, "--listen-client-urls", client,
		       "--advertise-client-urls", client, "--listen-peer-urls", peer,
		       "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
		       "--initial-cluster-state", "new", "--initial-cluster-token", tag, (char *)NULL);
		_exit(127);
	}
	et_note_pid(root, member[i]);
}

static void ready(int i)
{
	char u[80], who[40], log[600];
	snprintf(u, sizeof u, "etcd://%s:2379", ip[i]);
	snprintf(who, sizeof who, "member %d", i);
	snprintf(log, sizeof log, "%s/m%d.log", root, i);
	et_await(who, u, NULL, &member[i], log, et_mono_ms() + 120000);
}

static int leader(void)
{
	char e[NH][80];
	const char *ep[NH];
	for (int i = 0; i < NH; i++) {
		snprintf(e[i], sizeof e[i], "%s:2379", ip[i]);
		ep[i] = e[i];
	}
	return et_leader(ep, NH);
}

/* ---- containers on the hosts --------------------------------------------------- */

struct proc {
	pid_t pid;     /* the container's keeper, our child                  */
	int rd, wr;    /* its reports to us; our orders to it                */
};

typedef void (*proc_fn)(int h, int report, int order, void *arg);

/* fn in a new container on host h: net namespace h, new pid, mount (a
 * /proc of its own) and UTS namespaces; pid 1 there runs fn and dies with
 * the keeper, the keeper with us. */
static struct proc spawn(int h, proc_fn fn, void *arg)
{
	int up[2], down[2];
	cr_assert_eq(pipe2(up, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(down, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t k = fork();
	cr_assert_geq(k, 0);
	if (k == 0) {
		et_child_dies_with_parent();
		close(up[0]);
		close(down[1]);
		enter_net(hostns[h]);
		if (unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS) < 0)
			_exit(125);
		char name[16];
		snprintf(name, sizeof name, "h%d", h);
		if (sethostname(name, strlen(name)) < 0)
			_exit(125);
		pid_t g = fork();
		if (g < 0)
			_exit(125);
		if (g == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				_exit(124);
			fn(h, up[1], down[0], arg);
			_exit(0);
		}
		close(up[1]);
		close(down[0]);
		int st;
		while (waitpid(g, &st, 0) < 0 && errno == EINTR)
			;
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	close(up[1]);
	close(down[0]);
	et_note_pid(root, k);
	return (struct proc){ k, up[0], down[1] };
}

/* One line from p within ms (asserting): into buf, without its newline. */
static void expect_line(struct proc *p, const char *what, int ms, char *buf, size_t cap)
{
	size_t n = 0;
	int64_t until = et_mono_ms() + ms;
	for (;;) {
		int left = (int)(until - et_mono_ms());
		cr_assert_gt(left, 0, "no %s within %d ms (got \"%.*s\")", what, ms, (int)n, buf);
		struct pollfd q = { .fd = p->rd, .events = POLLIN };
		if (poll(&q, 1, left) <= 0)
			continue;
		char c;
		ssize_t r = read(p->rd, &c, 1);
		cr_assert_eq(r, 1, "%s: the container ended first", what);
		if (c == '\n')
			break;
		if (n + 1 < cap)
			buf[n++] = c;
	}
	buf[n] = '\0';
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
	char b[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	if (write(fd, b, (size_t)n) != n)
		_exit(123);
}

/* The container's next order (a line), waiting for it. */
static void order(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	char c;
	while (read(fd, &c, 1) == 1 && c != '\n')
		if (n + 1 < cap)
			buf[n++] = c;
	buf[n] = '\0';
}

static void finish(struct proc *p, int ms)
{
	if (p->wr >= 0)
		close(p->wr);
	int st = et_exit_within(p->pid, ms);
	close(p->rd);
	cr_assert_eq(st, 0, "container %d ended with %d", (int)p->pid, st);
	p->pid = 0;
}

/* ---- the resource -------------------------------------------------------------- */

/* A write with fence f: accepted (0) unless a greater fence wrote before
 * (-1); every accepted write is logged as "fence who". */
static int res_write(const char *path, uint64_t f, const char *who)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		_exit(122);
	uint64_t max = 0;
	if (pread(fd, &max, sizeof max, 0) != sizeof max)
		max = 0;
	int ok = f >= max ? 0 : -1;
	if (ok == 0) {
		char line[80];
		int n = snprintf(line, sizeof line, "%" PRIu64 " %s\n", f, who);
		if (pwrite(fd, &f, sizeof f, 0) != sizeof f)
			_exit(122);
		char lp[700];
		snprintf(lp, sizeof lp, "%s.log", path);
		int lf = open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (lf < 0 || write(lf, line, (size_t)n) != n)
			_exit(122);
		close(lf);
	}
	close(fd);
	return ok;
}

/* ---- the clients --------------------------------------------------------------- */

static hf_lock *lk(const char *name, int64_t wait_ms)
{
	char path[700];
	snprintf(path, sizeof path, "%s/%s", root, name);
	hf_lock *l;
	if (hf_lock_new(path, &l) != 0 || hf_lock_set_str(l, HF_OPT_BACKEND, uri) != 0 ||
	    hf_lock_set(l, HF_OPT_TTL_MS, TTL_MS) != 0 || hf_lock_set(l, HF_OPT_TIMEOUT_MS, REQ_MS) != 0 ||
	    hf_lock_set(l, HF_OPT_WAIT_MS, wait_ms) != 0)
		_exit(121);
	return l;
}

/* What the handle said about its last failure (the holder's "reason"). */
static const char *why(const hf_lock *l)
{
	const char *r = hf_lock_holder(l) ? hf_rec_str(hf_lock_holder(l), "reason") : NULL;
	return r ? r : "-";
}

static bool stopped(void)
{
	char p[700];
	snprintf(p, sizeof p, "%s/stop", root);
	return access(p, F_OK) == 0;
}

/* A worker on the loaded lock until the stop file appears; one log line
 * per operation:
 *   H h w call ret fence ok refused chk chk_rc chk_ret rel_rc rel_ret
 *   A h w call ret rc clear                           (acquire failed) */
static void worker(int h, int w, int logfd)
{
	hf_lock *l = lk("load", WAIT_MS);
	char who[16];
	snprintf(who, sizeof who, "h%dw%d", h, w);
	while (!stopped()) {
		int64_t call = et_mono_ms();
		int rc = hf_lock_acquire(l);
		int64_t ret = et_mono_ms();
		if (rc != 0) {
			/* a clear error: an I/O failure says which member and what */
			int clear = rc != -EIO || (strstr(why(l), "etcd ") && strstr(why(l), ":2379"));
			say(logfd, "A %d %d %" PRId64 " %" PRId64 " %d %d\n", h, w, call, ret, rc, clear);
			if (rc != HF_EHELD && rc != HF_ETIMEDOUT)
				usleep(100000); /* a cluster that refuses fast: no hot loop */
			continue;
		}
		uint64_t f = hf_lock_fence(l);
		int ok = 0, refused = 0;
		for (int k = 0; k < 3; k++) {
			if (res_write(res_main, f, who) != 0) {
				refused++;
				break;
			}
			ok++;
			usleep(20000);
		}
		int64_t chk = et_mono_ms();
		int crc = hf_lock_check(l);
		int64_t chk_ret = et_mono_ms();
		int rrc = hf_lock_release(l);
		int64_t rel_ret = et_mono_ms();
		/* a release that failed (its request timed out in an election or
		 * a cut) is tried again, as a program would: the revoke names our
		 * lease only (EL3), so a late one harms nobody */
		for (int k = 0; k < 5 && rrc != 0 && rrc != HF_ENOTHELD && rrc != HF_ELOST &&
				rrc != HF_ENOTYOURS;
		     k++) {
			usleep(100000);
			int again = hf_lock_release(l);
			if (again == 0 || again == HF_ENOTHELD || again == HF_ELOST || again == HF_ENOTYOURS)
				break;
		}
		if (hf_lock_token(l)) { /* still held: a new handle */
			hf_lock_free(l);
			l = lk("load", WAIT_MS);
		}
		say(logfd,
		    "H %d %d %" PRId64 " %" PRId64 " %" PRIu64 " %d %d %" PRId64 " %d %" PRId64 " %d %" PRId64
		    "\n",
		    h, w, call, ret, f, ok, refused, chk, crc, chk_ret, rrc, rel_ret);
	}
	hf_lock_free(l);
}

static void load_host(int h, int report, int ord, void *arg)
{
	(void)report;
	(void)ord;
	(void)arg;
	char p[700];
	snprintf(p, sizeof p, "%s/load-h%d.log", root, h);
	int logfd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (logfd < 0)
		_exit(120);
	pid_t kid[WORKERS];
	for (int w = 0; w < WORKERS; w++) {
		kid[w] = fork();
		if (kid[w] == 0) {
			worker(h, w, logfd);
			_exit(0);
		}
	}
	int bad = 0;
	for (int w = 0; w < WORKERS; w++) {
		int st;
		if (kid[w] < 0 || waitpid(kid[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	_exit(bad);
}

/* Holds lock "killed" and says its fence; then sleeps until killed. */
static void victim(int h, int report, int ord, void *arg)
{
	(void)h, (void)ord, (void)arg;
	hf_lock *l = lk("killed", 20000);
	int rc = hf_lock_acquire(l);
	say(report, "%d %" PRIu64 "\n", rc, rc ? 0 : hf_lock_fence(l));
	for (;;)
		pause();
}

/* Waits for lock "killed" (up to 30 s): says its outcome and the
 * monotonic time it got it, then releases. */
static void heir(int h, int report, int ord, void *arg)
{
	(void)h, (void)ord, (void)arg;
	hf_lock *l = lk("killed", 30000);
	say(report, "waiting\n");
	int rc = hf_lock_acquire(l);
	say(report, "%d %" PRId64 " %" PRIu64 "\n", rc, et_mono_ms(), rc ? 0 : hf_lock_fence(l));
	hf_lock_release(l);
	hf_lock_free(l);
}

/* The holder on the leader's host: holds lock "cut", writes to its
 * resource every 50 ms until a write is refused, checking the lock after
 * each write it could make during the cut; then, ordered "healed", checks
 * and releases. */
static void cut_holder(int h, int report, int ord, void *arg)
{
	(void)h;
	const char *res = arg;
	hf_lock *l = lk("cut", 20000);
	int rc = hf_lock_acquire(l);
	uint64_t f = rc ? 0 : hf_lock_fence(l);
	say(report, "%d %" PRIu64 "\n", rc, f);
	if (rc)
		return;
	int n = 0;
	while (res_write(res, f, "cut") == 0) {
		if (n++ == 0)
			say(report, "wrote\n");
		usleep(50000);
		if (n > 1200)
			break; /* a minute: the test fails on the missing report */
	}
	say(report, "refused after %d\n", n);
	int64_t t = et_mono_ms();
	int c = hf_lock_check(l);
	say(report, "check %d %" PRId64 "\n", c, et_mono_ms() - t);
	char buf[32];
	order(ord, buf, sizeof buf);
	c = hf_lock_check(l);
	int r = hf_lock_release(l);
	say(report, "healed %d %d\n", c, r);
	hf_lock_free(l);
}

/* The holder on the majority side: gets lock "cut" (up to 30 s), says
 * its fence and writes once; ordered "check", says whether the key is
 * still its own and releases. (Not hf_lock_check: with a 2 s TTL the
 * election the healed member forces may outlast what the holder can
 * prove of its lease (LE2), and it may rightly believe it lost.) */
static void cut_taker(int h, int report, int ord, void *arg)
{
	(void)h;
	const char *res = arg;
	hf_lock *l = lk("cut", 30000);
	int rc = hf_lock_acquire(l);
	uint64_t f = rc ? 0 : hf_lock_fence(l);
	say(report, "%d %" PRIu64 " %" PRId64 " %d %s\n", rc, f, et_mono_ms(),
	    rc ? -1 : res_write(res, f, "taker"), why(l));
	if (rc)
		return;
	char buf[32];
	order(ord, buf, sizeof buf);
	/* whose the key is now (a linearizable read), then the release: the
	 * revoke of its own lease, which fails if the lease is gone */
	hf_rec *r = NULL;
	int q = hf_lock_query(l, &r);
	const char *tok = r ? hf_rec_str(r, "token") : NULL;
	int mine = q == 0 && tok && !strcmp(tok, hf_lock_token(l));
	hf_rec_free(r);
	say(report, "check %d %d %d\n", q, mine, hf_lock_release(l));
	hf_lock_free(l);
}

/* `holdfast lock check LOCK --fence F` run on host h: its exit status
 * (-1: it outlived its bound) and in *ms how long it took. */
static int cli_check_on(int h, const char *name, uint64_t f, int64_t *ms)
{
	char path[700], fs[24], errf[700];
	snprintf(path, sizeof path, "%s/%s", root, name);
	snprintf(errf, sizeof errf, "%s/check.err", root);
	snprintf(fs, sizeof fs, "%" PRIu64, f);
	const char *bin = getenv("HOLDFAST_BIN");
	cr_assert_not_null(bin);
	int64_t t = et_mono_ms();
	fflush(NULL);
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		enter_net(hostns[h]);
		int null = open("/dev/null", O_WRONLY), e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(null, 1);
		dup2(e, 2);
		execl(bin, bin, "lock", "check", path, "--fence", fs, "--backend", uri, "--etcd-timeout",
		      "2s", (char *)NULL);
		_exit(127);
	}
	int st = et_exit_within(p, OP_BOUND_MS(0));
	*ms = et_mono_ms() - t;
	int efd = open(errf, O_RDONLY | O_CLOEXEC);
	char *err = efd >= 0 ? hft_read_all(efd) : NULL;
	if (efd >= 0)
		close(efd);
	cr_assert(st == 0 || (err && strstr(err, path) && strstr(err, "etcd")),
		  "the error names neither the lock nor etcd: %s", err ? err : "(none)");
	free(err);
	return st;
}

/* ---- the log's judgement ------------------------------------------------------- */

struct hold {
	int h, w;
	int64_t call, ret, chk, chk_ret, rel_ret;
	uint64_t f;
	int ok, refused, crc, rrc;
};

static int by_ret(const void *a, const void *b)
{
	const struct hold *x = a, *y = b;
	return x->ret < y->ret ? -1 : x->ret > y->ret;
}

static bool known_failure(int rc)
{
	return rc == HF_EHELD || rc == HF_ETIMEDOUT || rc == HF_ELOST || rc == HF_ENOTHELD ||
	       rc == HF_ENOTYOURS || rc == -EIO;
}

static void judge(void)
{
	size_t nh = 0, cap = 256, na = 0, nconf = 0, nacq_err[8] = { 0 };
	struct hold *H = malloc(cap * sizeof *H);
	int64_t worst_acq = 0, worst_chk = 0, worst_rel = 0;
	for (int h = 0; h < NH; h++) {
		char p[700], line[400];
		snprintf(p, sizeof p, "%s/load-h%d.log", root, h);
		FILE *f = fopen(p, "r");
		cr_assert_not_null(f, "no log of host %d", h);
		while (fgets(line, sizeof line, f)) {
			if (line[0] == 'A') {
				int hh, w, rc, clear;
				int64_t call, ret;
				cr_assert_eq(sscanf(line, "A %d %d %" SCNd64 " %" SCNd64 " %d %d", &hh, &w,
						    &call, &ret, &rc, &clear),
					     6, "%s", line);
				cr_assert(clear, "an I/O failure that names no member: %s", line);
				cr_assert(known_failure(rc), "acquire failed with %d (%s): %s", rc,
					  hf_error_name(rc), line);
				cr_assert_leq(ret - call, OP_BOUND_MS(WAIT_MS), "acquire out of bound: %s", line);
				if (ret - call > worst_acq)
					worst_acq = ret - call;
				nacq_err[rc == HF_EHELD ? 0 : rc == HF_ETIMEDOUT ? 1 : 2]++;
				na++;
				continue;
			}
			if (nh == cap)
				H = realloc(H, (cap *= 2) * sizeof *H);
			struct hold *x = &H[nh];
			cr_assert_eq(sscanf(line,
					    "H %d %d %" SCNd64 " %" SCNd64 " %" SCNu64 " %d %d %" SCNd64
					    " %d %" SCNd64 " %d %" SCNd64,
					    &x->h, &x->w, &x->call, &x->ret, &x->f, &x->ok, &x->refused, &x->chk,
					    &x->crc, &x->chk_ret, &x->rrc, &x->rel_ret),
				     12, "%s", line);
			cr_assert(x->crc == 0 || known_failure(x->crc), "check: %d: %s", x->crc, line);
			cr_assert(x->rrc == 0 || known_failure(x->rrc), "release: %d: %s", x->rrc, line);
			int64_t a = x->ret - x->call, c = x->chk_ret - x->chk, r = x->rel_ret - x->chk_ret;
			cr_assert_leq(a, OP_BOUND_MS(WAIT_MS), "acquire out of bound: %s", line);
			cr_assert_leq(c, OP_BOUND_MS(0), "check out of bound: %s", line);
			cr_assert_leq(r, OP_BOUND_MS(0), "release out of bound: %s", line);
			worst_acq = a > worst_acq ? a : worst_acq;
			worst_chk = c > worst_chk ? c : worst_chk;
			worst_rel = r > worst_rel ? r : worst_rel;
			nconf += x->crc == 0;
			nh++;
		}
		fclose(f);
	}
	cr_assert_gt(nconf, 10, "only %zu confirmed holds: the load did not run", nconf);
	qsort(H, nh, sizeof *H, by_ret);
	/* confirmed holds never overlap */
	const struct hold *last = NULL;
	for (size_t i = 0; i < nh; i++) {
		if (H[i].crc != 0)
			continue;
		if (last)
			cr_assert_geq(H[i].ret, last->chk,
				      "two holders: h%dw%d fence %" PRIu64 " [%" PRId64 ", %" PRId64
				      "] and h%dw%d fence %" PRIu64 " [%" PRId64 ", %" PRId64 "]",
				      last->h, last->w, last->f, last->ret, last->chk, H[i].h, H[i].w, H[i].f,
				      H[i].ret, H[i].chk);
		if (!last || H[i].chk > last->chk)
			last = &H[i];
	}
	/* an acquisition begun after another ended has a greater fence */
	for (size_t i = 0; i < nh; i++)
		for (size_t j = 0; j < nh; j++)
			if (H[i].ret < H[j].call)
				cr_assert_gt(H[j].f, H[i].f,
					     "fence %" PRIu64 " (h%dw%d, asked at %" PRId64
					     ") not above %" PRIu64 " (h%dw%d, got at %" PRId64 ")",
					     H[j].f, H[j].h, H[j].w, H[j].call, H[i].f, H[i].h, H[i].w,
					     H[i].ret);
	/* the resource's accepted fences never go down */
	char lp[700], line[100];
	snprintf(lp, sizeof lp, "%s.log", res_main);
	FILE *f = fopen(lp, "r");
	cr_assert_not_null(f);
	uint64_t prev = 0;
	size_t writes = 0, refused = 0;
	while (fgets(line, sizeof line, f)) {
		uint64_t v = strtoull(line, NULL, 10);
		cr_assert_geq(v, prev, "the resource accepted fence %" PRIu64 " after %" PRIu64, v, prev);
		prev = v;
		writes++;
	}
	fclose(f);
	for (size_t i = 0; i < nh; i++)
		refused += (size_t)H[i].refused;
	fprintf(stderr,
		"partition load: %zu holds (%zu confirmed by their check), %zu failed acquisitions "
		"(%zu held, %zu timed out, %zu errors), %zu resource writes accepted, %zu refused "
		"by the fence; worst acquire %" PRId64 " ms, check %" PRId64 " ms, release %" PRId64
		" ms\n",
		nh, nconf, na, nacq_err[0], nacq_err[1], nacq_err[2], writes, refused, worst_acq, worst_chk,
		worst_rel);
	free(H);
}

/* ---- the suite ----------------------------------------------------------------- */

static void setup(void)
{
	sweep_netns();
	et_sweep("hft-etcd-part.");
	char tmpl[] = "/tmp/hft-etcd-part.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	root = strdup(tmpl);
	et_own_dir(root); /* never swept while this test runs */
	cr_assert_geq(asprintf(&res_main, "%s/resource", root), 0);
	snprintf(tag, sizeof tag, "hft%d", (int)getpid());
	snprintf(hub, sizeof hub, "%shub", tag);
	run("ip netns add %s && ip -n %s link set lo up && ip -n %s link add br0 type bridge && "
	    "ip -n %s addr add 10.78.0.100/24 dev br0 && ip -n %s link set br0 up",
	    hub, hub, hub, hub, hub);
	cluster[0] = '\0';
	snprintf(uri, sizeof uri, "etcd://");
	for (int i = 0; i < NH; i++) {
		snprintf(hostns[i], sizeof hostns[i], "%sh%d", tag, i);
		snprintf(ip[i], sizeof ip[i], "10.78.0.%d", i + 1);
		run("ip netns add %s && ip -n %s link set lo up && "
		    "ip -n %s link add hv%d type veth peer name eth0 netns %s && "
		    "ip -n %s link set hv%d master br0 up && ip -n %s addr add %s/24 dev eth0 && "
		    "ip -n %s link set eth0 up",
		    hostns[i], hostns[i], hub, i, hostns[i], hub, i, hostns[i], ip[i], hostns[i]);
		snprintf(cluster + strlen(cluster), sizeof cluster - strlen(cluster), "%sm%d=http://%s:2380",
			 i ? "," : "", i, ip[i]);
		snprintf(uri + strlen(uri), sizeof uri - strlen(uri), "%s%s:2379", i ? "," : "", ip[i]);
	}
	enter_net(hub); /* the test process sees the cluster through the hub */
	for (int i = 0; i < NH; i++)
		start(i);
	for (int i = 0; i < NH; i++)
		ready(i);
}

static void teardown(void)
{
	for (int i = 0; i < NH; i++)
		et_stop_pid(&member[i], SIGTERM);
	for (int i = 0; i < NH; i++) {
		char cmd[200];
		snprintf(cmd, sizeof cmd, "ip netns del %s 2>/dev/null", hostns[i]);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", hostns[i]);
	}
	char cmd[200];
	snprintf(cmd, sizeof cmd, "ip netns del %s 2>/dev/null", hub);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", hub);
	hft_rmtree(root);
	free(root);
	free(res_main);
}

TestSuite(etcd_partition, .init = setup, .fini = teardown, .timeout = 400);

static void run_for(int ms)
{
	int64_t until = et_mono_ms() + ms;
	while (et_mono_ms() < until)
		usleep(50000); /* the load runs; nothing to coordinate */
}

Test(etcd_partition, faults_under_load)
{
	struct proc load[NH];
	for (int h = 0; h < NH; h++)
		load[h] = spawn(h, load_host, NULL);
	run_for(3000);

	/* a holder in a container killed: back within the TTL for another host */
	struct proc v = spawn(1, victim, NULL);
	char buf[200];
	uint64_t fv = 0;
	int rc;
	expect_line(&v, "the victim's lock", 30000, buf, sizeof buf);
	cr_assert_eq(sscanf(buf, "%d %" SCNu64, &rc, &fv), 2);
	cr_assert_eq(rc, 0, "the victim could not lock: %s", hf_error_name(rc));
	struct proc heir_p = spawn(2, heir, NULL);
	expect_line(&heir_p, "the heir waiting", 30000, buf, sizeof buf);
	int64_t killed = et_mono_ms();
	kill(v.pid, SIGKILL);
	expect_line(&heir_p, "the heir's lock", 30000, buf, sizeof buf);
	int64_t got;
	uint64_t fh;
	cr_assert_eq(sscanf(buf, "%d %" SCNd64 " %" SCNu64, &rc, &got, &fh), 3);
	cr_assert_eq(rc, 0, "the heir: %s", hf_error_name(rc));
	cr_assert_gt(fh, fv, "the heir's fence %" PRIu64 " is not above the victim's %" PRIu64
		     " (heir: %s; %" PRId64 " ms after the kill)", fh, fv, buf, got - killed);
	fprintf(stderr, "partition: a killed holder's lock came back after %" PRId64 " ms (TTL %d)\n",
		got - killed, TTL_MS);
	cr_assert_leq(got - killed, TTL_MS + 2000, "came back %" PRId64 " ms after the kill",
		      got - killed);
	finish(&heir_p, 10000);
	close(v.rd);
	close(v.wr);
	et_exit_within(v.pid, 10000);

	/* the leader killed, then a follower; each restarted on its data */
	int l = leader();
	cr_assert_geq(l, 0, "no leader");
	et_stop_pid(&member[l], SIGKILL);
	cr_assert_geq(leader(), 0, "no leader after the kill");
	run_for(3000);
	start(l);
	ready(l);
	l = leader();
	cr_assert_geq(l, 0);
	int fo = (l + 1) % NH;
	et_stop_pid(&member[fo], SIGKILL);
	run_for(3000);
	start(fo);
	ready(fo);

	/* the leader's host cut off while a holder there keeps writing */
	l = leader();
	cr_assert_geq(l, 0);
	char res_cut[700];
	snprintf(res_cut, sizeof res_cut, "%s/resource-cut", root);
	struct proc ch = spawn(l, cut_holder, res_cut);
	uint64_t f1 = 0, f2 = 0;
	expect_line(&ch, "the cut holder's lock", 30000, buf, sizeof buf);
	cr_assert_eq(sscanf(buf, "%d %" SCNu64, &rc, &f1), 2);
	cr_assert_eq(rc, 0, "the cut holder: %s", hf_error_name(rc));
	expect_line(&ch, "the cut holder's first write", 10000, buf, sizeof buf);
	int64_t cut = et_mono_ms();
	run("ip -n %s link set hv%d down", hub, l);
	struct proc tk = spawn((l + 1) % NH, cut_taker, res_cut);
	expect_line(&tk, "the taker's lock", 40000, buf, sizeof buf);
	int wrc;
	cr_assert_eq(sscanf(buf, "%d %" SCNu64 " %" SCNd64 " %d", &rc, &f2, &got, &wrc), 4, "%s", buf);
	cr_assert_eq(rc, 0, "the taker: %s: %s", hf_error_name(rc), buf);
	cr_assert_gt(f2, f1);
	cr_assert_eq(wrc, 0, "the resource refused the new holder");
	fprintf(stderr, "partition: the majority side got the cut-off holder's lock %" PRId64
			" ms after the cut (TTL %d)\n",
		got - cut, TTL_MS);
	expect_line(&ch, "the cut holder refused", 10000, buf, sizeof buf);
	cr_assert(!strncmp(buf, "refused after ", 14), "%s", buf);
	expect_line(&ch, "the cut holder's check", OP_BOUND_MS(0), buf, sizeof buf);
	int c;
	int64_t ms;
	cr_assert_eq(sscanf(buf, "check %d %" SCNd64, &c, &ms), 2, "%s", buf);
	cr_assert_neq(c, 0, "the cut-off holder's check said the lock is still its own");
	int st = cli_check_on(l, "cut", f1, &ms);
	cr_assert(st != 0 && st != -1, "lock check --fence on the cut-off host: exit %d", st);
	fprintf(stderr, "partition: on the cut-off host `lock check --fence` exited %d after %" PRId64
			" ms\n",
		st, ms);
	run_for(2000); /* the cut-off side's load runs into the cut */

	/* heal */
	run("ip -n %s link set hv%d up", hub, l);
	ready(l);
	say(ch.wr, "healed\n");
	expect_line(&ch, "the cut holder after the heal", OP_BOUND_MS(0) * 2, buf, sizeof buf);
	int r;
	cr_assert_eq(sscanf(buf, "healed %d %d", &c, &r), 2, "%s", buf);
	cr_assert_eq(c, HF_ELOST, "after the heal the cut-off holder's check: %d (%s)", c,
		     hf_error_name(c));
	cr_assert_neq(r, 0, "the cut-off holder's release succeeded");
	say(tk.wr, "check\n");
	expect_line(&tk, "the taker's check", OP_BOUND_MS(0) * 2, buf, sizeof buf);
	cr_assert_str_eq(buf, "check 0 1 0", "the new holder's key after the old one's release: %s", buf);
	finish(&ch, 10000);
	finish(&tk, 10000);
	run_for(3000);

	char stop[700];
	snprintf(stop, sizeof stop, "%s/stop", root);
	int fd = open(stop, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	for (int h = 0; h < NH; h++)
		finish(&load[h], OP_BOUND_MS(WAIT_MS) * 2);
	judge();
}

static int pre_host = -1;
static void enter_pre_host(void)
{
	enter_net(hostns[pre_host]);
}

/* Established TCP connections of pid (on host h) to member m's client port. */
static int conns(int h, pid_t pid, int m)
{
	char cmd[300], needle[32], line[512];
	snprintf(cmd, sizeof cmd,
		 "ip netns exec %s ss -tnpH state established dst %s:2379 2>/dev/null", hostns[h], ip[m]);
	snprintf(needle, sizeof needle, "pid=%d,", (int)pid);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, needle) != NULL;
	pclose(f);
	return n;
}

/* A waiter's watch is open at a member whose host is then cut off (no
 * FIN: its packets are dropped). The stream is silent either way; TCP
 * keep-alive probes end it within seconds (etcd.c ET3), the waiter judges
 * again at another member and gets the lock the holder released -
 * instead of waiting out its deadline on a dead stream. */
Test(etcd_partition, a_watch_at_a_cut_member_ends)
{
	int l = leader();
	cr_assert_geq(l, 0);
	int f = (l + 1) % NH, w = (l + 2) % NH; /* cut a follower: no election */
	char path[700], held_uri[200], wait_uri[200];
	snprintf(path, sizeof path, "%s/watched", root);
	snprintf(held_uri, sizeof held_uri, "etcd://%s:2379,%s:2379", ip[l], ip[w]);
	snprintf(wait_uri, sizeof wait_uri, "etcd://%s:2379,%s:2379,%s:2379", ip[f], ip[l], ip[w]);
	hf_lock *h;
	cr_assert_eq(hf_lock_new(path, &h), 0);
	cr_assert_eq(hf_lock_set_str(h, HF_OPT_BACKEND, held_uri), 0);
	cr_assert_eq(hf_lock_acquire(h), 0);
	struct hft_child c;
	const char *waiter[] = { "holdfast", "lock", "acquire", path, "-w", "60", "--etcd-timeout", "2s",
				 "--backend", wait_uri, NULL };
	pre_host = w;
	hft_spawn_cli_pre = enter_pre_host;
	hft_spawn_cli(&c, "pause:etcdlock.acquire.judged", waiter, NULL);
	hft_spawn_cli_pre = NULL;
	hft_expect(&c, "etcdlock.acquire.judged"); /* judged at member f */
	cr_assert_eq(conns(w, c.pid, f), 1, "the waiter's requests went elsewhere");
	hft_go(&c);
	int64_t until = et_mono_ms() + 10000;
	while (conns(w, c.pid, f) < 2) /* its watch: a second connection to f */
		cr_assert_lt(et_mono_ms(), until, "the waiter's watch did not open at member %d", f);
	run("ip -n %s link set hv%d down", hub, f);
	int64_t t = et_mono_ms();
	cr_assert_eq(hf_lock_release(h), 0);
	char *out = NULL, *err = NULL;
	int st = hft_collect(c.pid, c.out_rd, c.err_rd, &out, &err);
	int64_t took = et_mono_ms() - t;
	run("ip -n %s link set hv%d up", hub, f);
	et_kill_keepers(wait_uri); /* the keeper of the lock it got, for us */
	cr_assert_eq(st, 0, "the waiter: exit %d: %s", st, err);
	fprintf(stderr, "partition: a waiter whose watch was at the cut member got the lock %" PRId64
			" ms after the release\n",
		took);
	cr_assert_lt(took, 20000, "the waiter sat on a dead watch for %" PRId64 " ms", took);
	free(out);
	free(err);
	hf_lock_free(h);
}

/* The scope chain A -> B -> D with B's host cut off: A's keeper on host 0,
 * B's on host 1 talking to host 1's member only (TTL 2 s), D's on host 2.
 * B's keeper cannot renew, so B's lease expires on the majority side while
 * B's owner lives; D is then A's child and A's effective scope is its own
 * minus D's (etcdscope.c ES4), seen from the majority side; after the heal
 * the same. */
Test(etcd_partition, scope_chain_with_b_host_cut)
{
	char *env, *reg, a[40], b[40], d[40];
	cr_assert_geq(asprintf(&env, "HOLDFAST_BACKEND=etcd://%s:2379,%s:2379", ip[0], ip[2]), 0);
	/* pod names carry the test's tag: its keepers are found by it */
	snprintf(a, sizeof a, "A%s", tag);
	snprintf(b, sizeof b, "B%s", tag);
	snprintf(d, sizeof d, "D%s", tag);
	cr_assert_geq(asprintf(&reg,
			       "ip netns exec %s \"$H\" scope register %s c/src:write:recursive --pid $a "
			       "--backend etcd://%s:2379,%s:2379 >/dev/null || exit 10\n"
			       "ip netns exec %s \"$H\" scope register %s c/src/core:write:recursive "
			       "--pid $b --from %s --ttl 2s --backend etcd://%s:2379 >/dev/null || exit 11\n"
			       "ip netns exec %s \"$H\" scope register %s c/src/core/x:write:recursive "
			       "--pid $d --from %s --backend etcd://%s:2379,%s:2379 >/dev/null || exit 12\n",
			       hostns[0], a, ip[0], ip[2], hostns[1], b, a, ip[1], hostns[2], d, b, ip[2],
			       ip[0]),
		      0);
	struct et_chain c = { .a = a, .b = b, .d = d };
	et_chain_start(&c, env, root, reg);
	free(reg);
	run("ip -n %s link set hv1 down", hub);
	et_chain_judge(&c, env, root);
	run("ip -n %s link set hv1 up", hub);
	ready(1);
	et_kill_keepers(tag);
	free(env);
}
