/* holdfast edit: no lost update, never a torn file, CMD's failure leaves the
 * file untouched, the mode kept, no temporaries left. */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;

static void setup(void)
{
	dir = hft_tmpdir();
}

static void teardown(void)
{
	hft_rmtree(dir);
	free(dir);
}

TestSuite(edit, .init = setup, .fini = teardown, .timeout = 60);

static const char incr[] = "read n; echo $((n+1))";

/* Start the binary with stdin /dev/null, stdout to /dev/null, stderr
 * appended to errlog. */
static pid_t start(const char *errlog, const char *const *argv)
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		int e = open(errlog, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(e, 2);
		unsetenv("HOLDFAST_FAULTS");
		char *av[16];
		size_t n = 0;
		av[n++] = (char *)hft_bin();
		for (size_t i = 1; argv[i] && n < 15; i++)
			av[n++] = (char *)argv[i];
		av[n] = NULL;
		execv(av[0], av);
		_exit(127);
	}
	return pid;
}

Test(edit, concurrent_edits_add_up_exactly)
{
	enum { N = 200 };
	char *F = rt_path(dir, "counter"), *log = rt_path(dir, "errors");
	hft_write(F, "0\n");
	pid_t pids[N];
	for (int i = 0; i < N; i++)
		pids[i] = start(log, RT_ARGV("edit", F, "--", "sh", "-c", incr));
	int failed = 0;
	for (int i = 0; i < N; i++) {
		int st;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	char *errs = hft_slurp(log);
	cr_assert_eq(failed, 0, "%d edits failed: %s", failed, errs ? errs : "");
	free(errs);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "200\n", "no update lost");
	free(s);
	cr_assert_eq(hft_count_prefix(dir, "counter.tmp-"), 0, "no temporaries left");
	char *lock = rt_path(dir, "counter.lock");
	cr_assert(rt_lock_free(lock));
	free(lock);
	free(F);
	free(log);
}

/* Kill an edit at its Nth system call, for N = 1, 2, ... until one
 * completes: FILE holds the old or the new number, never a mix; the next
 * edit (which sweeps what a killed one left) succeeds and leaves no
 * temporary. */
Test(edit, killed_anywhere_leaves_old_or_new)
{
	char *F = rt_path(dir, "counter"), *lock = rt_path(dir, "counter.lock");
	hft_write(F, "5\n");
	long v = 5;
	int crashes = 0;
	for (int n = 1;; n++) {
		cr_assert_lt(n, 2000, "the edit never completed");
		char env[64];
		snprintf(env, sizeof env, "HOLDFAST_FAULTS=crash:*:%d", n);
		int rc = hft_cli_env(NULL, NULL, env, NULL, RT_ARGV("edit", F, "--", "sh", "-c", incr));
		char *s = hft_slurp(F);
		cr_assert_not_null(s);
		char old[32], new[32];
		snprintf(old, sizeof old, "%ld\n", v);
		snprintf(new, sizeof new, "%ld\n", v + 1);
		cr_assert(!strcmp(s, old) || !strcmp(s, new),
			  "killed at call %d: '%s' is neither '%ld' nor '%ld'", n, s, v, v + 1);
		v = atol(s);
		free(s);
		if (rc == 0)
			break;
		cr_assert_eq(rc, 128 + SIGKILL, "call %d: exit %d", n, rc);
		crashes++;
		/* A kill between the lock's mkdir and its record's publication
		 * leaves a lock no one can attribute: dirlock reaps it after the
		 * stale window (60 s by default). The test shortens that window
		 * through the library, from a live process of its own. */
		struct hf_lock_opts o = { .path = lock, .wait_ms = 5000, .stale_ms = 1 };
		struct hf_lock_info info, holder;
		int lrc = hf_lock_acquire(&o, &info, &holder);
		cr_assert_eq(lrc, 0, "recover the lock after a kill at call %d: %s", n,
			     hf_strerror(lrc));
		rt_release(lock, &info);
		char *err;
		rc = hft_cli(NULL, &err, RT_ARGV("edit", "-w", "30", F, "--", "sh", "-c", incr));
		cr_assert_eq(rc, 0, "the edit after a kill at call %d: %s", n, err);
		free(err);
		v++;
		s = hft_slurp(F);
		cr_assert_eq(atol(s), v);
		free(s);
		cr_assert_eq(hft_count_prefix(dir, "counter.tmp-"), 0,
			     "a temporary left after the kill at call %d and the next edit", n);
	}
	cr_assert_gt(crashes, 10, "the edit was killed at many points (%d)", crashes);
	free(F);
	free(lock);
}

Test(edit, failing_cmd_leaves_file_untouched)
{
	char *F = rt_path(dir, "state");
	hft_write(F, "keep\n");
	char *lock = rt_path(dir, "state.lock");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "--", "sh", "-c", "cat; echo more; exit 3")),
		     3, "CMD's status comes back");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "--", "sh", "-c", "echo torn; kill -9 $$")),
		     128 + SIGKILL);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "--", "/nonexistent/cmd")), 127);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "keep\n");
	free(s);
	cr_assert_eq(hft_count_prefix(dir, "state.tmp-"), 0);
	cr_assert(rt_lock_free(lock), "the lock was released each time");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "--", "sh", "-c", "cat; echo more")), 0);
	s = hft_slurp(F);
	cr_assert_str_eq(s, "keep\nmore\n");
	free(s);
	free(F);
	free(lock);
}

Test(edit, mode_kept_and_new_file_from_umask)
{
	char *F = rt_path(dir, "conf"), *G = rt_path(dir, "new");
	hft_write(F, "a\n");
	cr_assert_eq(chmod(F, 0640), 0);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "--", "sh", "-c", "cat; echo b")), 0);
	struct stat st;
	cr_assert_eq(stat(F, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	mode_t old = umask(027);
	char *out;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("edit", G, "--", "sh", "-c", "wc -c; echo x")), 0);
	umask(old);
	char *s = hft_slurp(G);
	cr_assert_not_null(s);
	cr_assert_eq(atoi(s), 0, "a missing FILE is fed as empty: '%s'", s);
	cr_assert(strstr(s, "x\n"));
	free(s);
	free(out);
	cr_assert_eq(stat(G, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "0666 minus umask 027, got %o", st.st_mode & 07777);
	free(F);
	free(G);
}

Test(edit, symlink_refused)
{
	char *T = rt_path(dir, "target"), *S = rt_path(dir, "link");
	hft_write(T, "t\n");
	cr_assert_eq(symlink(T, S), 0);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", S, "--", "sh", "-c", "echo x")), 77);
	cr_assert(strstr(err, "symlink"), "stderr: %s", err);
	free(err);
	char *s = hft_slurp(T);
	cr_assert_str_eq(s, "t\n");
	free(s);
	struct stat st;
	cr_assert_eq(lstat(S, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the link is untouched");
	free(T);
	free(S);
}

Test(edit, conflict_names_holder_and_honours_E)
{
	char *F = rt_path(dir, "f"), *lock = rt_path(dir, "f.lock");
	hft_write(F, "1\n");
	struct hf_lock_info held = rt_hold(lock);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", "-n", F, "--", "sh", "-c", incr)), 1);
	char want[64];
	snprintf(want, sizeof want, "pid %d", (int)getpid());
	cr_assert(strstr(err, want), "names the holder: %s", err);
	cr_assert(strstr(err, lock), "names the lock: %s", err);
	free(err);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "-n", "-E", "9", "--", "sh", "-c", incr)),
		     9, "options after FILE too");
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "1\n");
	free(s);
	rt_release(lock, &held);
	free(F);
	free(lock);
}

Test(edit, sweeps_only_its_own_leftover_temporaries)
{
	char *F = rt_path(dir, "f");
	char *ours = rt_path(dir, "f.tmp-0123456789abcdef"), *notours = rt_path(dir, "f.tmp-backup");
	hft_write(F, "1\n");
	hft_write(ours, "half-writ");
	hft_write(notours, "user's file");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "--", "sh", "-c", incr)), 0);
	cr_assert_not(hft_exists(ours), "a killed edit's temporary is swept");
	cr_assert(hft_exists(notours), "a name edit never makes is left alone");
	free(F);
	free(ours);
	free(notours);
}

Test(edit, sigterm_forwarded_file_untouched)
{
	char *F = rt_path(dir, "f"), *lock = rt_path(dir, "f.lock");
	hft_write(F, "1\n");
	struct hft_child c;
	hft_spawn_cli(&c, NULL,
		      RT_ARGV("edit", F, "--", "sh", "-c",
			      "trap 'kill $!; echo partial; exit 42' TERM; sleep 1000 & echo ready >&2; wait"),
		      NULL);
	char *line = rt_line(c.err_rd);
	cr_assert_not_null(line);
	cr_assert_str_eq(line, "ready");
	cr_assert_eq(kill(c.pid, SIGTERM), 0);
	cr_assert_eq(hft_wait(&c), 42);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "1\n");
	free(s);
	cr_assert(rt_lock_free(lock));
	free(line);
	free(F);
	free(lock);
}

Test(edit, usage_errors_and_help)
{
	char *F = rt_path(dir, "f"), *out;
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F)), 64, "no command");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", "--", "cat")), 64, "no FILE");
	char *sub = rt_path(dir, "sub");
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", sub, "--", "cat")), 64, "a directory");
	free(sub);
	char *slash = rt_path(dir, "");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", slash, "--", "cat")), 64, "FILE/");
	free(slash);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", "-w", "x", F, "--", "cat")), 64);
	cr_assert_not(hft_exists(F), "nothing was created");
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("edit", "--help")), 0);
	cr_assert(strstr(out, "usage: holdfast edit FILE"));
	cr_assert(strstr(out, "FILE.lock"));
	free(out);
	free(F);
}

/* A refusal never runs CMD, whatever -E says: -E 0 only changes the exit
 * code of the conflict. */
Test(edit, conflict_with_E0_never_runs_cmd)
{
	char *F = rt_path(dir, "f"), *lock = rt_path(dir, "f.lock"), *marker = rt_path(dir, "ran");
	hft_write(F, "1\n");
	struct hf_lock_info held = rt_hold(lock);
	char script[512];
	snprintf(script, sizeof script, "touch '%s'; read n; echo $((n+1))", marker);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", "-n", "-E", "0", F, "--", "sh", "-c", script)),
		     0, "-E 0: the conflict exits 0");
	cr_assert(strstr(err, lock), "the conflict is still reported: %s", err);
	free(err);
	cr_assert_not(hft_exists(marker), "CMD never ran");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", "-w", "0.05", "-E", "0", F, "--", "sh", "-c",
						 script)),
		     0, "a timed-out wait likewise");
	cr_assert_not(hft_exists(marker), "CMD never ran after the timeout either");
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "1\n", "FILE unchanged");
	free(s);
	rt_release(lock, &held);
	free(F);
	free(lock);
	free(marker);
}
