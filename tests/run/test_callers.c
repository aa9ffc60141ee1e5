/* A detached `holdfast lock acquire L` from every caller's idiom (issue 16,
 * owner_find.c O1-O5): the real program calls holdfast - make, python3's
 * subprocess(shell=True), node's execSync, an agent's separate `bash -c`
 * tool calls, a pipeline with tee, xargs, find -exec, tmux run-shell, a
 * background subshell whose script exits first - and then does its work in
 * the next step. While that work runs, the lock must be held: from outside,
 * `lock acquire -n` is refused (exit 1) and `lock status` says held, not
 * stale. After the caller has ended, the lock is reapable at once.
 *
 * The caller's work step is "echo working > $D/ready; read x < $D/go": the
 * test waits for the line on the FIFO ready, looks from outside, then lets
 * the work end by writing to the FIFO go. No sleeps. */
#include "rt.h"

#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static char *dir, *lock;
static pid_t caller; /* the row's caller: its process group is ended in teardown */
/* pidfds of the holder's processes (the record's owner and chain), opened
 * during the work: "the caller ended" is their end, not an EOF */
static int holder_fd[1 + 16];
static pid_t holder_pid[1 + 16];
static int nholder;

static void setup(void)
{
	dir = hft_tmpdir();
	lock = rt_path(dir, "L");
	char *r = rt_path(dir, "ready"), *g = rt_path(dir, "go");
	cr_assert_eq(mkfifo(r, 0600), 0);
	cr_assert_eq(mkfifo(g, 0600), 0);
	free(r);
	free(g);
}

static void teardown(void)
{
	/* a row that failed half way leaves its caller's processes (a work
	 * step waiting on a FIFO): its whole process group goes; their
	 * keepers end with them */
	if (caller > 0)
		kill(-caller, SIGKILL);
	caller = 0;
	for (int i = 0; i < nholder; i++)
		close(holder_fd[i]);
	nholder = 0;
	/* a tmux server the test started daemonizes (a session of its own, out
	 * of reach of the harness's process-group kill): a test that failed
	 * half way still ends it here */
	char *sock = rt_path(dir, "tmux.sock"), *cmd;
	if (hft_exists(sock) && asprintf(&cmd, "tmux -S '%s' kill-server 2>/dev/null", sock) >= 0) {
		if (system(cmd) < 0)
			perror("tmux kill-server");
		free(cmd);
	}
	free(sock);
	hft_rmtree(dir);
	free(dir);
	free(lock);
}

TestSuite(callers, .init = setup, .fini = teardown, .timeout = 120);

/* Wait (bounded) for the caller to reach its work step: a line on ready.
 * The caller itself may end first (a script whose background subshell does
 * the work): its end says nothing. Only when nothing of the caller's holds
 * its stdout any more (EOF on the pipe: the caller and every process it
 * left behind are gone) and no line came can the work step never come. */
static void await_work(const char *what, struct hft_child *c)
{
	char *r = rt_path(dir, "ready");
	int fd = open(r, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	int ofd = c ? c->out_rd : -1;
	if (ofd >= 0)
		cr_assert_eq(fcntl(ofd, F_SETFL, fcntl(ofd, F_GETFL) | O_NONBLOCK), 0);
	char buf[64], out[4096];
	size_t nout = 0;
	ssize_t n = 0;
	int64_t deadline = hf_sys_mono_ns() + 60 * 1000000000LL;
	while (n <= 0 && hf_sys_mono_ns() < deadline) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = ofd, .events = POLLIN } };
		if (poll(p, ofd >= 0 ? 2 : 1, 100) <= 0)
			continue;
		if (p[0].revents & POLLIN)
			n = read(fd, buf, sizeof buf - 1);
		if (n <= 0 && ofd >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
			ssize_t k = read(ofd, out + nout, sizeof out - 1 - nout);
			if (k > 0 && nout + (size_t)k < sizeof out - 1)
				nout += (size_t)k;
			else if (k == 0) {
				out[nout] = '\0';
				char *err = hft_read_all(c->err_rd);
				cr_assert_fail("%s: the caller and all it started ended before its work "
					       "step:\n%s\n%s",
					       what, out, err);
			}
		}
	}
	cr_assert_gt(n, 0, "%s: the caller never reached its work step", what);
	if (ofd >= 0)
		cr_assert_eq(fcntl(ofd, F_SETFL, fcntl(ofd, F_GETFL) & ~O_NONBLOCK), 0);
	close(fd);
	free(r);
}

/* Let the work step end. */
static void end_work(void)
{
	char *g = rt_path(dir, "go");
	int fd = open(g, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "go\n", 3), 3);
	close(fd);
	free(g);
}

/* Keep a pidfd of process pid when it is still the process that started
 * at start (its pid not reused). */
static void watch_holder(int64_t pid, uint64_t start)
{
	uint64_t now;
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (fd < 0) {
		cr_assert_eq(errno, ESRCH, "pidfd_open(%lld): %s", (long long)pid, strerror(errno));
		return;
	}
	if (hf_pid_start((pid_t)pid, &now) == 0 && now == start &&
	    nholder < (int)(sizeof holder_fd / sizeof *holder_fd))
		holder_pid[nholder] = (pid_t)pid, holder_fd[nholder++] = fd;
	else
		close(fd);
}

/* From outside, during the work: held by a live owner, not takeable. The
 * record's owner and chain are watched, so that assert_reapable knows when
 * they have all ended. */
static void assert_held(const char *what)
{
	char *out, *err;
	int st = hft_cli(&out, &err, RT_ARGV("lock", "status", lock));
	cr_assert_eq(st, 0, "%s: status exit %d: %s", what, st, err);
	cr_assert(!strncmp(out, "held:", 5), "%s: during the work the lock is not held: %s", what,
		  out);
	free(out);
	free(err);
	st = hft_cli(&out, &err, RT_ARGV("lock", "status", lock, "--json"));
	cr_assert_eq(st, 0, "%s: status --json exit %d: %s", what, st, err);
	json_error_t je;
	json_t *rec = json_loads(out, 0, &je);
	cr_assert_not_null(rec, "%s: status --json: %s: %s", what, je.text, out);
	json_int_t pid = json_integer_value(json_object_get(rec, "pid"));
	cr_assert_gt(pid, 0, "%s: status --json names no pid: %s", what, out);
	watch_holder(pid, (uint64_t)json_integer_value(json_object_get(rec, "pid_start")));
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(rec, "chain"), i, e)
		watch_holder(json_integer_value(json_array_get(e, 0)),
			     (uint64_t)json_integer_value(json_array_get(e, 1)));
	json_decref(rec);
	free(out);
	free(err);
	st = hft_cli(&out, &err, RT_ARGV("lock", "acquire", lock, "-n", "--pid", "1"));
	cr_assert_eq(st, 1, "%s: another acquirer got the lock during the work (exit %d): %s%s",
		     what, st, out, err);
	free(out);
	free(err);
}

/* After the caller (and all it started) ended: the lock is reaped at once.
 * Ended means exited: a process closes its descriptors (the EOF that
 * hft_collect saw) before the kernel counts it as exited, and until then
 * /proc shows it running - so first each watched holder's pidfd, bounded. */
static void assert_reapable(const char *what)
{
	for (int i = 0; i < nholder; i++) {
		struct pollfd p = { .fd = holder_fd[i], .events = POLLIN };
		int r;
		do
			r = poll(&p, 1, 60000);
		while (r < 0 && errno == EINTR);
		cr_assert_eq(r, 1, "%s: a holder's process still runs 60 s after the caller ended",
			     what);
		close(holder_fd[i]);
		/* exited; collected by its parent - init, or a subreaper that
		 * may take a moment (a zombie whose parent lives counts as
		 * alive): polled from /proc, bounded */
		uint64_t st;
		int64_t end = hf_sys_mono_ns() + 60 * 1000000000LL;
		while (hf_pid_start(holder_pid[i], &st) == 0 && hf_sys_mono_ns() < end)
			sched_yield();
		cr_assert_neq(hf_pid_start(holder_pid[i], &st), 0,
			      "%s: holder %d exited, but its parent has not collected it in 60 s",
			      what, (int)holder_pid[i]);
	}
	nholder = 0;
	char *out, *err;
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	int st = hft_cli(&out, &err, RT_ARGV("lock", "acquire", lock, "-n", "--pid", pid));
	cr_assert_eq(st, 0, "%s: after the caller ended, the lock is still held (exit %d): %s",
		     what, st, err);
	char tok[64];
	cr_assert_eq(sscanf(out, "%63s", tok), 1);
	free(out);
	free(err);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", lock, "--token", tok)), 0);
}

/* Run argv (the caller) with H, L, D in its environment; the row's checks. */
static void row(const char *what, const char *const *argv)
{
	char *env;
	cr_assert_geq(asprintf(&env, "H=%s;L=%s;D=%s", hft_bin(), lock, dir), 0);
	struct hft_child c;
	hft_spawn_cmd(&c, argv, env);
	caller = c.pid;
	await_work(what, &c);
	assert_held(what);
	end_work();
	char *out, *err;
	int st = hft_collect(c.pid, c.out_rd, c.err_rd, &out, &err);
	cr_assert_eq(st, 0, "%s: the caller failed (exit %d):\n%s\n%s", what, st, out, err);
	hft_reap_group(&c);
	free(out);
	free(err);
	free(env);
}

/* A script file run by bash (the caller of the row's idiom), from a shell
 * that waits for it, as a terminal's would: an exited script is collected
 * at once, not left a zombie of this test (which counts as alive). */
static void script_row(const char *what, const char *body)
{
	char *path = rt_path(dir, "script.sh");
	hft_write(path, body);
	row(what, (const char *const[]){ "sh", "-c", "bash \"$0\"; exit $?", path, NULL });
	assert_reapable(what);
	free(path);
}

#define WORK "echo working > \"$D/ready\"; read x < \"$D/go\""

Test(callers, make_recipe_line_then_work_on_the_next)
{
	char *mk = rt_path(dir, "Makefile");
	/* each recipe line is its own `sh -c`; the work is on the next line */
	hft_write(mk, "all:\n"
		      "\t\"$$H\" lock acquire \"$$L\" > \"$$D/tok\"\n"
		      "\t" "echo working > \"$$D/ready\"; read x < \"$$D/go\"\n");
	row("make", (const char *const[]){ "make", "-s", "-f", mk, NULL });
	assert_reapable("make");
	free(mk);
}

Test(callers, python_subprocess_shell_true)
{
	row("python3 subprocess(shell=True)",
	    (const char *const[]){ "python3", "-c",
				   "import os, subprocess\n"
				   "subprocess.run('\"$H\" lock acquire \"$L\" > \"$D/tok\" && true',"
				   " shell=True, check=True)\n"
				   "d = os.environ['D']\n"
				   "open(d + '/ready', 'w').write('working\\n')\n"
				   "open(d + '/go').read()\n",
				   NULL });
	assert_reapable("python3");
}

Test(callers, node_exec_sync)
{
	row("node execSync",
	    (const char *const[]){ "node", "-e",
				   "const cp = require('child_process'), fs = require('fs');\n"
				   "cp.execSync('\"$H\" lock acquire \"$L\" > \"$D/tok\"; true');\n"
				   "const d = process.env.D;\n"
				   "fs.writeFileSync(d + '/ready', 'working\\n');\n"
				   "fs.readFileSync(d + '/go');\n",
				   NULL });
	assert_reapable("node");
}

/* An agent's shell tool: each call a new `bash -c` under the agent; the
 * lock in one call, the work in the next. */
Test(callers, agent_shell_tool_calls)
{
	row("agent bash -c calls",
	    (const char *const[]){ "python3", "-c",
				   "import subprocess\n"
				   "def tool(cmd):\n"
				   "    subprocess.run(['bash', '-c', cmd], check=True,"
				   " stdout=subprocess.DEVNULL)\n"
				   "tool('eval \"\\\"$H\\\" lock acquire \\\"$L\\\" > \\\"$D/tok\\\"\" && pwd')\n"
				   "tool('" WORK "')\n",
				   NULL });
	assert_reapable("agent");
}

Test(callers, pipeline_with_tee_then_work)
{
	script_row("pipeline", "sh -c '\"$H\" lock acquire \"$L\"' 2>&1 | tee \"$D/log\" >/dev/null\n"
			       WORK "\n");
}

Test(callers, xargs)
{
	script_row("xargs", "echo \"$L\" | xargs \"$H\" lock acquire > \"$D/tok\"\n" WORK "\n");
}

Test(callers, find_exec)
{
	script_row("find -exec", "mkdir \"$D/x\"\n"
				 "find \"$D/x\" -maxdepth 0 -exec \"$H\" lock acquire \"$L\" \\; > \"$D/tok\"\n"
				 WORK "\n");
}

/* `( holdfast lock acquire L; work ) &` in a script that exits first: the
 * subshell outlives its script and keeps the lock (O5). */
Test(callers, background_subshell_of_a_script_that_exits_first)
{
	/* the script lives until the subshell has acquired (so the rule sees
	 * the subshell as its fork copy), then exits; the subshell's work
	 * begins once the script is gone (EOF on the FIFO only the script
	 * holds open for writing) */
	script_row("background subshell",
		   "mkfifo \"$D/acquired\" \"$D/gone\"\n"
		   "exec 3<> \"$D/gone\"\n"
		   "( exec 4< \"$D/gone\" 3>&-; \"$H\" lock acquire \"$L\" > \"$D/tok\"\n"
		   "  echo > \"$D/acquired\"; cat <&4 >/dev/null; " WORK " ) &\n"
		   "read x < \"$D/acquired\"\nexit 0\n");
}

/* tmux's job shell: `tmux run-shell` runs the line in `sh -c` under the
 * tmux server, which runs the next step: the lock lives while the server
 * does (a liveness cost, bounded by max-hold), never shorter. */
Test(callers, tmux_run_shell)
{
	char *sock = rt_path(dir, "tmux.sock");
	char *env;
	cr_assert_geq(asprintf(&env, "H=%s;L=%s;D=%s;TMUX=", hft_bin(), lock, dir), 0);
	struct hft_child c;
	hft_spawn_cmd(&c, (const char *const[]){ "tmux", "-S", sock, "-f", "/dev/null",
						 "new-session", "-d", NULL },
		      env);
	cr_assert_eq(hft_collect(c.pid, c.out_rd, c.err_rd, NULL, NULL), 0);
	hft_spawn_cmd(&c, (const char *const[]){ "tmux", "-S", sock, "run-shell",
						 "\"$H\" lock acquire \"$L\" > \"$D/tok\"", NULL },
		      env);
	char *err;
	int st = hft_collect(c.pid, c.out_rd, c.err_rd, NULL, &err);
	cr_assert_eq(st, 0, "tmux run-shell: %s", err);
	free(err);
	/* the next step: another job of the same server */
	hft_spawn_cmd(&c, (const char *const[]){ "tmux", "-S", sock, "run-shell", "-b", WORK,
						 NULL },
		      env);
	cr_assert_eq(hft_collect(c.pid, c.out_rd, c.err_rd, NULL, NULL), 0);
	await_work("tmux run-shell", NULL);
	assert_held("tmux run-shell");
	end_work();
	char *tok = rt_path(dir, "tok"), *t = hft_slurp(tok);
	cr_assert_eq(strlen(t) > 32, true, "tok: %s", t);
	free(t);
	free(tok);
	/* the server ends: nothing of the caller's is left */
	char *out;
	hft_spawn_cmd(&c, (const char *const[]){ "tmux", "-S", sock, "display-message", "-p",
						 "#{pid}", NULL },
		      env);
	cr_assert_eq(hft_collect(c.pid, c.out_rd, c.err_rd, &out, NULL), 0);
	pid_t server = (pid_t)atoi(out);
	free(out);
	cr_assert_gt(server, 0);
	int pfd = (int)syscall(SYS_pidfd_open, server, 0);
	cr_assert_geq(pfd, 0, "pidfd_open(%d): %s", (int)server, strerror(errno));
	hft_spawn_cmd(&c, (const char *const[]){ "tmux", "-S", sock, "kill-server", NULL }, env);
	cr_assert_eq(hft_collect(c.pid, c.out_rd, c.err_rd, NULL, NULL), 0);
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 30000), 1, "the tmux server did not end");
	close(pfd);
	assert_reapable("tmux");
	free(env);
	free(sock);
}
