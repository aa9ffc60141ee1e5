/* holdfast run: status passthrough, signals, conflicts, fences, and the lock
 * held on behalf of CMD (a SIGKILLed wrapper does not free it). Real
 * processes through the binary; coordination by pipes and FIFOs. */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

HFT_SCRATCH_SUITE(run, 60);

Test(run, status_passes_through_and_lock_is_released)
{
	char *L = rt_path(dir, "L");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c", "exit 7")), 7);
	cr_assert(rt_lock_free(L), "released after CMD exited 7");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c", "kill -USR1 $$")),
		     128 + SIGUSR1, "a CMD killed by signal N gives 128+N");
	cr_assert(rt_lock_free(L), "released after CMD was killed");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--lock", L, "true")), 0,
		     "CMD without -- works as with flock(1)");
	free(L);
}

Test(run, not_found_127_cannot_run_126)
{
	char *L = rt_path(dir, "L");
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "--lock", L, "--", "/nonexistent/cmd")), 127);
	cr_assert(strstr(err, "/nonexistent/cmd: command not found"), "stderr: %s", err);
	free(err);
	cr_assert(rt_lock_free(L));
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "--lock", L, "--", dir)), 126,
		     "a directory cannot run");
	cr_assert(strstr(err, "cannot run"), "stderr: %s", err);
	free(err);
	cr_assert(rt_lock_free(L));
	free(L);
}

Test(run, conflict_names_holder_and_honours_E)
{
	char *L = rt_path(dir, "L"), *marker = rt_path(dir, "ran");
	struct hf_lock_info held = rt_hold(L);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-n", "--lock", L, "--", "touch", marker)), 1);
	cr_assert_not(hft_exists(marker), "CMD never runs without its locks");
	char want[64];
	snprintf(want, sizeof want, "pid %d", (int)getpid());
	cr_assert(strstr(err, L), "the message names the path: %s", err);
	cr_assert(strstr(err, want), "the message names the holder's pid: %s", err);
	cr_assert(strstr(err, hf_host_name()), "and its host: %s", err);
	cr_assert(strstr(err, "fence"), "and its fence: %s", err);
	free(err);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "-n", "-E", "75", "--lock", L, "--", "touch",
						 marker)),
		     75);
	cr_assert_not(hft_exists(marker));
	rt_release(L, &held);
	free(L);
	free(marker);
}

static unsigned long long fence_of(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	cr_assert(end != s, "a fence in '%s'", s);
	return v;
}

/* Acquire and release path once: the fence that acquisition got. */
static uint64_t last_fence(const char *path)
{
	struct hf_lock_opts o = { .path = path, .wait_ms = 0 };
	struct hf_lock_info info, holder;
	cr_assert_eq(hf_dirlock_acquire(&o, &info, &holder), 0);
	rt_release(path, &info);
	return info.fence;
}

Test(run, fence_exported_and_increasing)
{
	char *L = rt_path(dir, "L");
	char *o1, *o2;
	cr_assert_eq(hft_cli(&o1, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c",
						"echo \"$HOLDFAST_FENCE\"")),
		     0);
	cr_assert_eq(hft_cli(&o2, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c",
						"echo \"$HOLDFAST_FENCE\"")),
		     0);
	cr_assert_gt(fence_of(o2), fence_of(o1), "fences strictly increase: %s then %s", o1, o2);
	free(o1);
	free(o2);

	/* Several locks: the fences in command-line order, space-separated.
	 * Each lock's counter starts at its own value (FC2: the wall clock at
	 * its creation), so each run's fence is told apart by being the next
	 * one of its lock: fa and fb are the last fences handed out. */
	char *A = rt_path(dir, "A"), *B = rt_path(dir, "B");
	uint64_t fa = last_fence(A), fb = last_fence(B);
	char *ab, *ba;
	cr_assert_eq(hft_cli(&ba, NULL, RT_ARGV("run", "--lock", B, "--lock", A, "--", "sh", "-c",
						"echo \"$HOLDFAST_FENCE\"")),
		     0);
	cr_assert_eq(hft_cli(&ab, NULL, RT_ARGV("run", "--lock", A, "--lock", B, "--", "sh", "-c",
						"echo \"$HOLDFAST_FENCE\"")),
		     0);
	unsigned long long b1, a1, a2, b2;
	cr_assert_eq(sscanf(ba, "%llu %llu", &b1, &a1), 2, "two fences: '%s'", ba);
	cr_assert_eq(sscanf(ab, "%llu %llu", &a2, &b2), 2, "two fences: '%s'", ab);
	cr_assert(b1 == fb + 1 && a1 == fa + 1, "B then A: '%s'", ba);
	cr_assert(a2 == fa + 2 && b2 == fb + 2, "A then B: '%s'", ab);
	free(ab);
	free(ba);
	free(A);
	free(B);
	free(L);
}

Test(run, lock_is_owned_by_cmd_pid)
{
	char *L = rt_path(dir, "L"), *fifo = rt_path(dir, "go");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	char script[600];
	snprintf(script, sizeof script, "echo $$; read x < '%s'", fifo);
	struct hft_child c;
	hft_spawn_cli(&c, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c", script), NULL);
	char *line = rt_line(c.out_rd);
	cr_assert_not_null(line, "CMD started");
	pid_t cmd = (pid_t)atoi(line);
	struct hf_lock_info st;
	cr_assert_eq(hf_dirlock_status(L, &st), 0);
	cr_assert_eq(st.owner.pid, cmd, "RUN1: the owner is CMD (%d), not holdfast (%d)", (int)cmd,
		     (int)c.pid);
	int w = open(fifo, O_WRONLY);
	cr_assert_geq(w, 0);
	cr_assert_eq(write(w, "x\n", 2), 2);
	close(w);
	cr_assert_eq(hft_wait(&c), 0);
	cr_assert(rt_lock_free(L));
	free(line);
	free(L);
	free(fifo);
}

/* SIGTERM / SIGINT to holdfast reach CMD (a trap in CMD decides the status)
 * and the lock is released after. */
static void signal_case(int sig, const char *trap, int want)
{
	char *L = rt_path(dir, "L");
	/* A runner that started us with the signal ignored would pass that on
	 * (holdfast then leaves it alone, and sh cannot trap it). */
	signal(sig, SIG_DFL);
	char script[300];
	snprintf(script, sizeof script, "trap 'kill $!; exit %d' %s; sleep 1000 & echo ready; wait",
		 want, trap);
	struct hft_child c;
	hft_spawn_cli(&c, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c", script), NULL);
	char *line = rt_line(c.out_rd);
	cr_assert_not_null(line);
	cr_assert_str_eq(line, "ready");
	cr_assert_not(rt_lock_free(L), "held while CMD runs");
	cr_assert_eq(kill(c.pid, sig), 0); /* to holdfast only, never to CMD */
	cr_assert_eq(hft_wait(&c), want, "CMD's trap ran: the signal was forwarded");
	hft_reap_group(&c); /* the trap's `kill $!` can miss a job still between fork and exec */
	cr_assert(rt_lock_free(L), "released after a forwarded %s", trap);
	free(line);
	free(L);
}

Test(run, sigterm_forwarded_and_lock_released)
{
	signal_case(SIGTERM, "TERM", 42);
}

Test(run, sigint_forwarded_and_lock_released)
{
	signal_case(SIGINT, "INT", 43);
}

Test(run, sigterm_kills_untrapping_cmd_143)
{
	char *L = rt_path(dir, "L");
	struct hft_child c;
	hft_spawn_cli(&c, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c", "echo ready; exec sleep 1000"),
		      NULL);
	char *line = rt_line(c.out_rd);
	cr_assert_not_null(line);
	cr_assert_eq(kill(c.pid, SIGTERM), 0);
	cr_assert_eq(hft_wait(&c), 128 + SIGTERM);
	cr_assert(rt_lock_free(L));
	free(line);
	free(L);
}

/* The design's point: holdfast SIGKILLed while CMD runs. The lock names CMD,
 * so it stays held until CMD ends, then a new acquirer gets it. */
Test(run, sigkill_of_wrapper_keeps_lock_until_cmd_ends)
{
	char *L = rt_path(dir, "L"), *fifo = rt_path(dir, "go");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	char script[600];
	snprintf(script, sizeof script, "echo $$; read x < '%s'", fifo);
	struct hft_child c;
	hft_spawn_cli(&c, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c", script), NULL);
	char *line = rt_line(c.out_rd);
	cr_assert_not_null(line);
	pid_t cmd = (pid_t)atoi(line);
	cr_assert_eq(kill(c.pid, SIGKILL), 0);
	cr_assert_eq(hft_wait(&c), 128 + SIGKILL);

	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-n", "--lock", L, "--", "true")), 1,
		     "CMD still runs: the lock is still held");
	char want[64];
	snprintf(want, sizeof want, "pid %d", (int)cmd);
	cr_assert(strstr(err, want), "the holder is CMD: %s", err);
	free(err);

	int w = open(fifo, O_WRONLY); /* CMD ends */
	cr_assert_geq(w, 0);
	cr_assert_eq(write(w, "x\n", 2), 2);
	close(w);
	rt_await_exit(cmd);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-n", "--lock", L, "--", "true")), 0,
		     "CMD gone: the next acquirer reaps the lock: %s", err);
	free(err);
	free(line);
	free(L);
	free(fifo);
}

Test(run, several_locks_all_or_nothing)
{
	char *A = rt_path(dir, "A"), *B = rt_path(dir, "B"), *marker = rt_path(dir, "ran");
	struct hf_lock_info held = rt_hold(B);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "-n", "--lock", A, "--lock", B, "--", "touch",
						 marker)),
		     1);
	cr_assert_not(hft_exists(marker));
	cr_assert(rt_lock_free(A), "A was released when B could not be had");
	rt_release(B, &held);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "-n", "--lock", B, "--lock", A, "--", "touch",
						 marker)),
		     0);
	cr_assert(hft_exists(marker));
	cr_assert(rt_lock_free(A));
	cr_assert(rt_lock_free(B));
	free(A);
	free(B);
	free(marker);
}

Test(run, usage_errors_and_help)
{
	char *L = rt_path(dir, "L"), *L2 = rt_path(dir, "./L");
	char *out;
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--lock", L)), 64, "no command");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "-E", "300", "--", "true")), 64);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "-w", "soon", "--", "true")), 64);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--bogus", "--", "true")), 64);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--name", "x", "--", "true")), 64,
		     "--name without --scope");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--lock", L, "--lock", L2, "--", "true")),
		     64, "the same lock twice would wait for itself");
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("run", "--help")), 0);
	cr_assert(strstr(out, "usage: holdfast run"));
	cr_assert(strstr(out, "HOLDFAST_FENCE"));
	free(out);
	free(L);
	free(L2);
}

/* flock -n -E 0 is cron's "skip quietly": with holdfast a refusal is never
 * success whatever -E says - CMD does not run, -E only picks the exit code.
 * Through a real shell, for each kind a run can hold. */
Test(run, E0_refusal_never_runs_cmd)
{
	char *L = rt_path(dir, "L"), *M = rt_path(dir, "marker"), *script;
	struct hf_lock_info held = rt_hold(L);
	cr_assert_geq(asprintf(&script,
			       "cd '%s' || exit 99\n"
			       "export HOLDFAST_REGISTRY='%s/reg/scope.lock'\n"
			       "\"$HOLDFAST_BIN\" run -n -E 0 --lock '%s' -- touch '%s'; echo lock=$?\n"
			       "\"$HOLDFAST_BIN\" session take --lane a --file .session.lock >/dev/null || exit 98\n"
			       "\"$HOLDFAST_BIN\" run -n -E 0 --session b -- touch '%s'; echo session=$?\n"
			       "\"$HOLDFAST_BIN\" scope register holder '%s/p:write:recursive' --pid $$ >/dev/null || exit 97\n"
			       "\"$HOLDFAST_BIN\" run -n -E 0 --scope '%s/p/x:write' -- touch '%s'; echo scope=$?\n",
			       dir, dir, L, M, M, dir, dir, M),
		      0);
	char *out, *err;
	int st = hft_sh(&out, &err, "sh", NULL, script);
	cr_assert_eq(st, 0, "script exit %d: %s", st, err);
	cr_assert(strstr(out, "lock=0\n") && strstr(out, "session=0\n") && strstr(out, "scope=0\n"),
		  "each refusal exits with -E 0: %s", out);
	cr_assert(!hft_exists(M), "CMD never ran after a refusal (stderr: %s)", err);
	cr_assert(strstr(err, "held by"), "the refusals still name the holder: %s", err);
	rt_release(L, &held);
	free(out);
	free(err);
	free(script);
	free(L);
	free(M);
}

/* The same directory reached through a bind mount is the same lock: given
 * twice is refused, and two runs that name it differently take their locks
 * in one order (the kernel's identity of each parent), so they never wait
 * for each other in a cycle. Real bind mount in a private mount namespace. */
Test(run, bind_mount_alias_is_the_same_lock)
{
	if (!hft_private_mounts())
		cr_skip_test("needs root and a mount namespace (unshare(CLONE_NEWNS))");
	char *z = rt_path(dir, "z"), *a = rt_path(dir, "a");
	cr_assert_eq(mkdir(z, 0700), 0);
	cr_assert_eq(mkdir(a, 0700), 0);
	hft_bind(z, a); /* a is z */
	char *zX = rt_path(z, "X"), *zY = rt_path(z, "Y"), *aY = rt_path(a, "Y"), *aX = rt_path(a, "X");
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-w", "5", "--lock", zX, "--lock", aX, "--",
						 "true")),
		     64, "the alias is given twice (not a wait for itself)");
	cr_assert(strstr(err, "given twice") && strstr(err, "same lock"), "stderr: %s", err);
	free(err);

	/* run2 names Y through the alias, which sorts first by path: "a/Y" <
	 * "z/X". By path it would take Y, then wait for X; run1 takes X, then
	 * waits for Y: a cycle. By the kernel's identity both take X first. */
	struct hft_child r2, r1;
	hft_spawn_cli(&r2, "pause:dirlock.acquire.entered",
		      RT_ARGV("run", "-w", "10", "--lock", aY, "--lock", zX, "--", "true"), NULL);
	hft_expect(&r2, "dirlock.acquire.entered"); /* r2 holds its first lock */
	hft_spawn_cli(&r1, "pause:dirlock.acquire.waiting",
		      RT_ARGV("run", "-w", "10", "--lock", zX, "--lock", zY, "--", "true"), NULL);
	hft_expect(&r1, "dirlock.acquire.waiting"); /* r1 waits for its first or second */
	hft_go(&r1);
	hft_go(&r2);
	int s2 = hft_wait(&r2), s1 = hft_wait(&r1);
	char *e2 = hft_read_all(r2.err_rd), *e1 = hft_read_all(r1.err_rd);
	cr_assert_eq(s2, 0, "run2: %d %s", s2, e2);
	cr_assert_eq(s1, 0, "run1: %d %s", s1, e1);
	free(e1);
	free(e2);
	hft_unmount(a);
	free(z);
	free(a);
	free(zX);
	free(zY);
	free(aY);
	free(aX);
}

/* A FIFO planted at L/owner: nothing opens it blocking. `run -n` is
 * refused at once (65, unreadable record), a waiting `run` answers SIGTERM
 * (its wait ends, CMD never runs), and so does a waiting `edit`. */
Test(run, fifo_planted_at_owner_never_hangs_run_or_edit)
{
	char *L = rt_path(dir, "L"), *fifo = rt_path(L, "owner"), *F = rt_path(dir, "f");
	char *FL = rt_path(dir, "f.lock"), *ffifo = rt_path(FL, "owner");
	cr_assert_eq(mkdir(L, 0700), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(mkdir(FL, 0700), 0);
	cr_assert_eq(mkfifo(ffifo, 0600), 0);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-n", "--lock", L, "--", "true")), 65,
		     "%s", err);
	free(err);
	struct hft_child r, e;
	hft_spawn_cli(&r, "pause:dirlock.acquire.waiting",
		      RT_ARGV("run", "-w", "30", "--lock", L, "--", "true"), NULL);
	hft_spawn_cli(&e, "pause:dirlock.acquire.waiting", RT_ARGV("edit", "-w", "30", F, "--", "cat"),
		      NULL);
	hft_expect(&r, "dirlock.acquire.waiting");
	hft_expect(&e, "dirlock.acquire.waiting");
	hft_go(&r);
	hft_go(&e);
	cr_assert_eq(kill(r.pid, SIGTERM), 0);
	cr_assert_eq(kill(e.pid, SIGTERM), 0);
	cr_assert_eq(hft_wait(&r), 128 + SIGTERM);
	cr_assert_eq(hft_wait(&e), 128 + SIGTERM);
	cr_assert(!hft_exists(F), "edit's CMD never ran");
	free(L);
	free(fifo);
	free(F);
	free(FL);
	free(ffifo);
}

/* RUN9: a lock lost while CMD ran is never reported as success. CMD removes
 * its own lock directory (a stray `rm -rf`), or releases it by the token
 * its record shows and another takes it: run says so, naming the lock (and
 * the new holder), and exits 1 when CMD exited 0; a failing CMD keeps its
 * status. 0.2.0 exited 0 with a warning. */
Test(run, a_lock_lost_while_cmd_ran_is_not_success)
{
	char *L = rt_path(dir, "L"), *err, *script;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "--lock", L, "--", "rm", "-rf", L)), 1, "%s",
		     err);
	cr_assert(strstr(err, L) && strstr(err, "lost while CMD ran"), "%s", err);
	free(err);
	cr_assert_gt(asprintf(&script, "rm -rf '%s'; exit 3", L), 0);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "--lock", L, "--", "sh", "-c", script)), 3,
		     "CMD's own failure: %s", err);
	cr_assert(strstr(err, "lost while CMD ran"), "%s", err);
	free(err);
	free(script);
	/* released by its token behind run's back, then taken by another */
	cr_assert_gt(asprintf(&script,
			      "t=$(\"$HOLDFAST_BIN\" lock status '%s' --json | sed 's/.*\"token\":\"\\([0-9a-f]*\\)\".*/\\1/') &&"
			      " \"$HOLDFAST_BIN\" lock release '%s' --token \"$t\" &&"
			      " \"$HOLDFAST_BIN\" lock acquire '%s' --pid %d > '%s/tok'",
			      L, L, L, (int)getpid(), dir),
		     0);
	int st = hft_cli(NULL, &err, RT_ARGV("run", "--lock", L, "--", "sh", "-c", script));
	char pid[32];
	snprintf(pid, sizeof pid, "pid %d", (int)getpid());
	cr_assert_eq(st, 1, "%s", err);
	cr_assert(strstr(err, "lost while CMD ran") && strstr(err, pid), "the new holder named: %s",
		  err);
	free(err);
	free(script);
	char *tokf = rt_path(dir, "tok"), *tok = hft_slurp(tokf);
	tok[strcspn(tok, " ")] = '\0';
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", L, "--token", tok)), 0);
	free(tok);
	free(tokf);
	free(L);
}
