/*
 * et.c - start and stop the etcd of one test (et.h).
 */
#include "et.h"
#include "holdfast.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct et E;
char *et_dir;

int64_t et_mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A loopback port nobody listens on now, below the kernel's ephemeral
 * range (ip_local_port_range): a port the kernel picked from that range
 * could be handed to another connection's local end - a cluster member's
 * own connection to a peer - before its member binds it (seen in a
 * check-cluster: "bind: address already in use"). Ports 20000 to the
 * range's start, drawn at random, the first one that binds. */
int et_free_port(void)
{
	int lo = 32768;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	if (f) {
		if (fscanf(f, "%d", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	if (lo <= 20000 + 100)
		lo = 65536; /* no room below it: the range above 20000 then */
	static unsigned seed;
	if (!seed)
		seed = (unsigned)getpid() * 2654435761u ^ (unsigned)et_mono_ms();
	for (int tries = 0; tries < 1000; tries++) {
		int port = 20000 + (int)(rand_r(&seed) % (unsigned)(lo - 20000));
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr_assert_geq(s, 0);
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
					 .sin_port = htons((uint16_t)port) };
		int ok = bind(s, (struct sockaddr *)&a, sizeof a) == 0;
		close(s);
		if (ok)
			return port;
	}
	cr_assert_fail("no free loopback port below %d", lo);
	return -1;
}

void et_child_dies_with_parent(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test that timed out leaves no etcd */
}

void et_note_pid(const char *dir, pid_t pid)
{
	char path[700], line[32];
	snprintf(path, sizeof path, "%s/pids", dir);
	snprintf(line, sizeof line, "%d\n", (int)pid);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	close(fd);
}

void et_own_dir(const char *dir)
{
	et_note_pid(dir, getpid());
}

/* fn(name, arg) for each entry of dir whose name starts with prefix (NULL:
 * with a digit, a pid's in /proc) until fn returns true: false when dir
 * could not be opened. */
static bool each_entry(const char *dir, const char *prefix, bool (*fn)(const char *, void *),
		       void *arg)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *e;
	while ((e = readdir(d)))
		if (prefix ? !strncmp(e->d_name, prefix, strlen(prefix))
			   : e->d_name[0] >= '0' && e->d_name[0] <= '9')
			if (fn(e->d_name, arg))
				break;
	closedir(d);
	return true;
}

/* /tmp/name removed when none of the processes noted in it lives. The test
 * that made it is noted first (et_own_dir): while that test runs, its dir is
 * never swept, even between stopping its etcd and starting the next one (a
 * rebuild, a restarted member), when every member noted is dead. */
static bool sweep_one(const char *name, void *arg)
{
	(void)arg;
	char path[700];
	snprintf(path, sizeof path, "/tmp/%s/pids", name);
	char *pids = hft_slurp(path);
	if (!pids)
		return false; /* being set up, or not ours: left alone */
	bool live = false;
	for (char *p = pids; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		live |= kill(atoi(p), 0) == 0 || errno != ESRCH;
	free(pids);
	if (!live) {
		snprintf(path, sizeof path, "/tmp/%s", name);
		hft_rmtree(path); /* a test killed before its teardown */
	}
	return false;
}

void et_sweep(const char *prefix)
{
	each_entry("/tmp", prefix, sweep_one, NULL);
}

/* A CA and a server certificate for 127.0.0.1 in dir (openssl). */
static void make_certs(const char *dir)
{
	char *s;
	cr_assert_geq(asprintf(&s,
			       "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=hft-ca "
			       "-keyout ca.key -out ca.pem 2>/dev/null && "
			       "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key "
			       "-out server.csr 2>/dev/null && "
			       "printf 'subjectAltName=IP:127.0.0.1\n' > ext && "
			       "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
			       "-days 2 -extfile ext -out server.pem 2>/dev/null",
			       dir),
		      0);
	char *err = NULL;
	int st = hft_sh(NULL, &err, "sh", NULL, s);
	cr_assert_eq(st, 0, "openssl (is it installed?): %s", err);
	free(err);
	free(s);
}

void et_setup(void)
{
	et_start(false);
}

void et_setup_tls(void)
{
	et_start(true);
}

static void launch(bool tls, int cp, int pp);

void et_start(bool tls)
{
	et_sweep("hft-etcd.");
	et_dir = hft_tmpdir();
	char tmpl[] = "/tmp/hft-etcd.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno));
	E.dir = strdup(tmpl);
	et_own_dir(E.dir);
	int cp = et_free_port(), pp = et_free_port();
	while (pp == cp)
		pp = et_free_port();
	if (tls)
		make_certs(E.dir);
	launch(tls, cp, pp);
}

void et_rebuild(void)
{
	cr_assert_gt(E.pid, 0, "no member to rebuild");
	et_stop_pid(&E.pid, SIGTERM);
	et_rebuild_after_stop();
}

void et_rebuild_after_stop(void)
{
	char data[512];
	snprintf(data, sizeof data, "%s/data", E.dir);
	hft_rmtree(data);
	launch(E.tls, E.client_port, E.peer_port);
}

/* Start E's member on client port cp and peer port pp, with a data dir
 * E.dir/data (made anew when absent), and wait until it answers. */
static void launch(bool tls, int cp, int pp)
{
	E.tls = tls;
	E.client_port = cp;
	E.peer_port = pp;
	char client[64], peer[64], cluster[96], data[512], log[512];
	snprintf(client, sizeof client, "%s://127.0.0.1:%d", tls ? "https" : "http", cp);
	snprintf(peer, sizeof peer, "http://127.0.0.1:%d", pp);
	snprintf(cluster, sizeof cluster, "t=%s", peer);
	snprintf(data, sizeof data, "%s/data", E.dir);
	snprintf(log, sizeof log, "%s/etcd.log", E.dir);
	snprintf(E.uri, sizeof E.uri, "%s://127.0.0.1:%d", tls ? "etcds" : "etcd", cp);
	char cert[600], key[600];
	snprintf(E.ca, sizeof E.ca, "%s/ca.pem", E.dir);
	snprintf(cert, sizeof cert, "%s/server.pem", E.dir);
	snprintf(key, sizeof key, "%s/server.key", E.dir);
	snprintf(E.endpoint, sizeof E.endpoint, "127.0.0.1:%d", cp);
	snprintf(E.env, sizeof E.env, "HOLDFAST_BACKEND=%s", E.uri);
	fflush(NULL);
	E.pid = fork();
	cr_assert_geq(E.pid, 0);
	if (E.pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		setpgid(0, 0);
		et_child_dies_with_parent();
		if (tls)
			execlp("etcd", "etcd", "--name", "t", "--data-dir", data,
			       "--listen-client-urls", client, "--advertise-client-urls", client,
			       "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			       "--initial-cluster", cluster, "--initial-cluster-state", "new",
			       "--cert-file", cert, "--key-file", key, (char *)NULL);
		else
			execlp("etcd", "etcd", "--name", "t", "--data-dir", data,
			       "--listen-client-urls", client, "--advertise-client-urls", client,
			       "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			       "--initial-cluster", cluster, "--initial-cluster-state", "new",
			       (char *)NULL);
		dprintf(2, "exec etcd: %s\n", strerror(errno));
		_exit(127);
	}
	et_note_pid(E.dir, E.pid);
	/* bounded: 90 s under load */
	et_await("etcd", E.uri, tls ? E.ca : NULL, &E.pid, log, et_mono_ms() + 90000);
}

void et_await(const char *who, const char *uri, const char *ca, pid_t *pid, const char *log,
	      int64_t until)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new("/et/ready", &l), 0);
	cr_assert_eq(hf_lock_set_str(l, HF_OPT_BACKEND, uri), 0);
	if (ca)
		cr_assert_eq(hf_lock_set_str(l, HF_OPT_ETCD_CA_FILE, ca), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_TIMEOUT_MS, 1000), 0);
	for (;;) {
		int st;
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			*pid = 0;
			char *text = hft_slurp(log);
			cr_assert_fail("%s did not start (exit %d; is etcd-server installed?): %s", who,
				       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
				       text ? text : "");
		}
		hf_rec *r = NULL;
		if (hf_lock_query(l, &r) == 0) {
			hf_rec_free(r);
			break;
		}
		cr_assert_lt(et_mono_ms(), until, "%s did not answer in time", who);
		struct timespec t = { 0, 20 * 1000000 };
		nanosleep(&t, NULL); /* waiting for a server to listen: no event to wait on */
	}
	hf_lock_free(l);
}

void et_stop_pid(pid_t *pid, int sig)
{
	if (*pid > 0) {
		kill(*pid, sig);
		if (hft_exit_within(*pid, 20000) < 0) {
			kill(*pid, SIGKILL);
			hft_exit_within(*pid, 20000);
		}
		*pid = 0;
	}
}

void et_kill(void)
{
	et_stop_pid(&E.pid, SIGKILL);
}

/* /proc/PID/what (its first cap - 1 bytes) into buf, NUL-terminated: its
 * length, or <= 0 when unreadable or empty (the process is gone). */
static ssize_t read_proc(const char *pid, const char *what, char *buf, size_t cap)
{
	char path[300];
	snprintf(path, sizeof path, "/proc/%s/%s", pid, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n > 0)
		buf[n] = '\0';
	return n;
}

/* Does one of the NUL-separated strings of /proc/PID/what hold needle? */
static bool proc_has(const char *pid, const char *what, const char *needle)
{
	char buf[16384];
	ssize_t n = read_proc(pid, what, buf, sizeof buf);
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (strstr(buf + i, needle))
			return true;
	return false;
}

/* Process pid SIGKILLed when it is a holdfast-etcd with needle (arg) in an
 * argument or its environment. */
static bool kill_keeper(const char *pid, void *needle)
{
	char exe[300], target[600];
	snprintf(exe, sizeof exe, "/proc/%s/exe", pid);
	ssize_t n = readlink(exe, target, sizeof target - 1);
	if (n < 9)
		return false;
	target[n] = '\0';
	/* holdfast-etcd (the static CLI's etcd half), or a holdfast built with
	 * the etcd client (the ASan build's) */
	if ((n < 13 || strcmp(target + n - 13, "holdfast-etcd")) && strcmp(target + n - 9, "/holdfast"))
		return false;
	if (proc_has(pid, "cmdline", needle) || proc_has(pid, "environ", needle))
		kill(atoi(pid), SIGKILL); /* a keeper of this test's locks */
	return false;
}

void et_kill_keepers(const char *needle)
{
	each_entry("/proc", NULL, kill_keeper, (void *)needle);
}

void et_teardown(void)
{
	if (E.uri[0])
		et_kill_keepers(E.uri); /* its etcd's port: in argv or HOLDFAST_BACKEND */
	et_stop_pid(&E.pid, SIGTERM);
	if (E.dir) {
		hft_rmtree(E.dir);
		free(E.dir);
		E.dir = NULL;
	}
	if (et_dir) {
		hft_rmtree(et_dir);
		free(et_dir);
		et_dir = NULL;
	}
}

int et_ctl(const char *args, char **out)
{
	char *script;
	cr_assert_geq(asprintf(&script, "ETCDCTL_API=3 etcdctl --endpoints=%s %s", E.endpoint,
			       args), 0);
	char *err = NULL;
	int st = hft_sh(out, &err, "sh", NULL, script);
	free(script);
	free(err);
	return st;
}

/* A field `"Name" : N` of etcdctl's -w fields output (its JSON holds
 * uint64 ids jansson refuses). */
static int64_t ctl_field(const char *out, const char *name)
{
	char *want = et_fmt("\"%s\" : ", name);
	const char *p = strstr(out, want);
	cr_assert_not_null(p, "no %s in %s", name, out);
	int64_t v = strtoll(p + strlen(want), NULL, 10);
	free(want);
	return v;
}

void et_lock_kv(const char *path, int64_t *lease, int64_t *create_rev, int64_t *mod_rev)
{
	char *args = et_fmt("get /holdfast/lock%s -w fields", path), *out = NULL;
	cr_assert_eq(et_ctl(args, &out), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"Key\" : "), "no key for %s: %s", path, out);
	if (lease)
		*lease = ctl_field(out, "Lease");
	if (create_rev)
		*create_rev = ctl_field(out, "CreateRevision");
	if (mod_rev)
		*mod_rev = ctl_field(out, "ModRevision");
	free(out);
	free(args);
}

int64_t et_epoch(int64_t *create_rev)
{
	char *out = NULL;
	cr_assert_eq(et_ctl("get /holdfast/epoch -w fields", &out), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"Key\" : "), "no epoch key: %s", out);
	if (create_rev)
		*create_rev = ctl_field(out, "CreateRevision");
	free(out);
	cr_assert_eq(et_ctl("get /holdfast/epoch --print-value-only", &out), 0, "%s", out);
	int64_t v = strtoll(out, NULL, 10);
	free(out);
	cr_assert_gt(v, 0, "not an epoch");
	return v;
}

void et_lock_backdate(const char *path, int64_t ms)
{
	int64_t lease = 0;
	et_lock_kv(path, &lease, NULL, NULL);
	cr_assert_gt(lease, 0, "%s has no lease", path);
	char *args = et_fmt("get /holdfast/lock%s --print-value-only", path), *out = NULL;
	cr_assert_eq(et_ctl(args, &out), 0, "%s", out);
	free(args);
	json_t *v = json_loads(out, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert(json_is_object(v), "not a record: %s", out);
	free(out);
	int64_t boot = json_integer_value(json_object_get(v, "boottime_ms"));
	/* a machine booted less than ms ago cannot date it that far back on its
	 * boot clock: then no boot time (0, unknown), and judges age it by the
	 * wall-clock time below (owner.c) - a clamp to 1 ms made it younger
	 * than asked on a freshly booted machine */
	json_object_set_new(v, "boottime_ms", json_integer(boot > ms ? boot - ms : 0));
	time_t then = time(NULL) - (time_t)(ms / 1000);
	struct tm tm;
	char when[64];
	gmtime_r(&then, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	json_object_set_new(v, "acquired", json_string(when));
	char *file = et_fmt("%s/backdated.json", et_dir);
	cr_assert_eq(json_dump_file(v, file, JSON_COMPACT), 0);
	json_decref(v);
	args = et_fmt("put /holdfast/lock%s --lease=%llx < %s", path, (unsigned long long)lease,
		      file);
	cr_assert_eq(et_ctl(args, &out), 0, "%s", out);
	free(out);
	free(args);
	free(file);
}

struct find {
	const char *const *words;
	pid_t found;
};

/* Does pid's argv hold all of f->words (in order)? Then f->found = pid. */
static bool find_one(const char *pid, void *arg)
{
	struct find *f = arg;
	char buf[4096];
	ssize_t n = read_proc(pid, "cmdline", buf, sizeof buf);
	if (n <= 0)
		return false;
	size_t w = 0;
	for (ssize_t i = 0; i < n && f->words[w]; i += (ssize_t)strlen(buf + i) + 1)
		if (!strcmp(buf + i, f->words[w]))
			w++;
	if (f->words[w])
		return false;
	f->found = atoi(pid);
	return true;
}

pid_t et_find_proc(const char *const *words)
{
	struct find f = { words, -1 };
	cr_assert(each_entry("/proc", NULL, find_one, &f), "opendir /proc: %s", strerror(errno));
	return f.found;
}

char *et_fmt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s;
	cr_assert_geq(vasprintf(&s, fmt, ap), 0);
	va_end(ap);
	return s;
}

struct et_out et_run_env(const char *env, const char *sh, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *body;
	cr_assert_geq(vasprintf(&body, fmt, ap), 0);
	va_end(ap);
	char *full = et_fmt("cd %s || exit 9\n%s", et_dir, body);
	struct et_out o = { 0, NULL, NULL };
	o.st = hft_sh(&o.out, &o.err, sh, env, full);
	free(full);
	free(body);
	cr_assert_eq(o.st, 0, "%s: exit %d\n%s\n%s", sh, o.st, o.out, o.err);
	return o;
}

void et_out_free(struct et_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

void et_has(const char *text, ...)
{
	va_list ap;
	va_start(ap, text);
	for (const char *s; (s = va_arg(ap, const char *));)
		cr_assert(text && strstr(text, s), "no \"%s\" in:\n%s", s, text);
	va_end(ap);
}

pid_t et_sleeper(void)
{
	fflush(NULL);
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		execlp("sleep", "sleep", "1000", (char *)NULL);
		_exit(127);
	}
	return p;
}

void et_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int et_exit_within(pid_t pid, int ms)
{
	int st = hft_exit_within(pid, ms);
	if (st < 0)
		kill(pid, SIGKILL), hft_exit_within(pid, 10000);
	return st;
}

int et_leader(const char *const *endpoints, int n)
{
	int64_t until = et_mono_ms() + 30000;
	do {
		char cmd[1000] = "ETCDCTL_API=3 etcdctl --dial-timeout=1s --command-timeout=2s --endpoints=";
		for (int i = 0; i < n; i++)
			snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? "," : "",
				 endpoints[i]);
		snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd),
			 " endpoint status -w simple 2>/dev/null");
		FILE *f = popen(cmd, "r");
		cr_assert_not_null(f);
		char line[300];
		int found = -1;
		while (fgets(line, sizeof line, f)) {
			/* "10.78.0.2:2379, 5a2c..., 3.4.23, 20 kB, true, false, ..." */
			char *fld[6] = { 0 };
			int k = 0;
			for (char *s = strtok(line, ","); s && k < 6; s = strtok(NULL, ","))
				fld[k++] = s + strspn(s, " ");
			if (k < 5 || strncmp(fld[4], "true", 4) != 0)
				continue;
			for (int i = 0; i < n; i++)
				if (!strcmp(fld[0], endpoints[i]))
					found = i;
		}
		pclose(f);
		if (found >= 0)
			return found;
		usleep(200000);
	} while (et_mono_ms() < until);
	return -1;
}

void et_chain_start(struct et_chain *c, const char *env, const char *dir, const char *registers)
{
	char *s, *out = NULL, *err = NULL;
	cr_assert_geq(asprintf(&s,
			       "cd %s || exit 9\n"
			       "H=\"$HOLDFAST_BIN\"\n"
			       "mkdir -p c/src/core/x c/src/core/z\n"
			       "sleep 1000 </dev/null >/dev/null 2>&1 & a=$!\n"
			       "sleep 1000 </dev/null >/dev/null 2>&1 & b=$!\n"
			       "sleep 1000 </dev/null >/dev/null 2>&1 & d=$!\n"
			       "echo \"$a $b $d\"\n%s",
			       dir, registers),
		      0);
	int st = hft_sh(&out, &err, "sh", env, s);
	free(s);
	c->pa = c->pb = c->pd = 0;
	sscanf(out ? out : "", "%d %d %d", &c->pa, &c->pb, &c->pd);
	cr_assert(c->pa > 0 && c->pb > 0 && c->pd > 0, "%s", out);
	if (st != 0) {
		kill(c->pa, SIGKILL), kill(c->pb, SIGKILL), kill(c->pd, SIGKILL);
		cr_assert_fail("exit %d: %s %s", st, out, err);
	}
	free(out);
	free(err);
}

void et_chain_judge(struct et_chain *c, const char *env, const char *dir)
{
	char *s, *out = NULL, *err = NULL;
	cr_assert_geq(asprintf(&s,
			       "cd %s || exit 9\n"
			       "H=\"$HOLDFAST_BIN\"\n"
			       "i=0; while \"$H\" scope list | grep -q ' %s '; do\n"
			       "  i=$((i+1)); [ $i -gt 300 ] && { echo b-stayed; break; }; sleep 0.1\n"
			       "done\n"
			       "\"$H\" scope list\n"
			       "\"$H\" scope effective %s --json; echo\n"
			       "\"$H\" scope check c/src/core/z --pod %s; echo \"regained=$?\"\n"
			       "\"$H\" scope check c/src/core/x/f --pod %s; echo \"dstays=$?\"\n"
			       "kill -0 %d && echo b-lives\n",
			       dir, c->b, c->a, c->a, c->d, c->pb),
		      0);
	int st = hft_sh(&out, &err, "sh", env, s);
	free(s);
	kill(c->pa, SIGKILL), kill(c->pb, SIGKILL), kill(c->pd, SIGKILL);
	cr_assert_eq(st, 0, "exit %d: %s %s", st, out, err);
	cr_assert_null(strstr(out, "b-stayed"), "B's lease outlived its end: %s", out);
	cr_assert(strstr(out, "b-lives"), "B's owner lived: only its lease ended: %s", out);
	char d[200], from[200], dn[200], bn[200];
	snprintf(d, sizeof d, " %s ", c->d);
	snprintf(from, sizeof from, "from %s", c->a);
	snprintf(dn, sizeof dn, "\"name\":\"%s\"", c->d);
	snprintf(bn, sizeof bn, "\"name\":\"%s\"", c->b);
	cr_assert(strstr(out, d) && strstr(out, from), "D under A: %s", out);
	cr_assert(strstr(out, "\"scope_deny\":[{\"scope\":") && strstr(out, dn),
		  "A's own minus D's: %s", out);
	cr_assert_null(strstr(out, bn), "%s", out);
	cr_assert(strstr(out, "regained=0\n"), "%s %s", out, err);
	cr_assert(strstr(out, "dstays=0\n"), "%s %s", out, err);
	free(out);
	free(err);
}

const char *et_str(const hf_rec *r, const char *f)
{
	const char *s = hf_rec_str(r, f);
	cr_assert_not_null(s, "no %s in %s", f, r ? hf_rec_json(r) : "(null)");
	return s;
}

int64_t et_num(const hf_rec *r, const char *f)
{
	int64_t v;
	cr_assert_eq(hf_rec_int(r, f, &v), 0, "no %s in %s", f, r ? hf_rec_json(r) : "(null)");
	return v;
}
