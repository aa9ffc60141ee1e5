/* holdfast edit: no lost update, never a torn file, CMD's failure leaves the
 * file untouched, the mode kept, no temporaries left. */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

HFT_SCRATCH_SUITE(edit, 60);

static const char incr[] = "read n; echo $((n+1))";

/* Start the binary with stdin /dev/null, stdout to /dev/null, stderr
 * appended to errlog, and environment additions ("K=V;K2=V2", NULL: none;
 * HOLDFAST_FAULTS only when given there). */
static pid_t start_env(const char *errlog, const char *env, const char *const *argv)
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
		char *copy = strdup(env ? env : ""), *save = NULL;
		for (char *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
			char *eq = strchr(kv, '=');
			if (eq) {
				*eq = '\0';
				setenv(kv, eq + 1, 1);
			}
		}
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

static pid_t start(const char *errlog, const char *const *argv)
{
	return start_env(errlog, NULL, argv);
}

/* Under ASan every holdfast process costs ~15x a release one (its shadow
 * memory, and LeakSanitizer's pass at exit): the sanitized run checks the
 * same property on fewer processes or points; the release run does all. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED_STEP 4
#else
#define SANITIZED_STEP 1
#endif

Test(edit, concurrent_edits_add_up_exactly)
{
	enum { N = 200 / SANITIZED_STEP };
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
	char want[16];
	snprintf(want, sizeof want, "%d\n", (int)N);
	cr_assert_str_eq(s, want, "no update lost");
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
	/* every call in the release run; every 4th (each a different one in
	 * each run, by its offset) under ASan */
	int first = 1 + (SANITIZED_STEP > 1 ? (int)(getpid() % SANITIZED_STEP) : 0);
	for (int n = first;; n += SANITIZED_STEP) {
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
		int lrc = hf_dirlock_acquire(&o, &info, &holder);
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
	cr_assert_gt(crashes, 10 / SANITIZED_STEP, "the edit was killed at many points (%d)", crashes);
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
	hft_reap_group(&c); /* the trap's `kill $!` can miss a job still between fork and exec */
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


/* The lock of an edit is CMD's, not holdfast's: SIGKILL the edit wrapper
 * while CMD runs (held up by a pipe the test holds) and the lock stays held
 * until CMD has ended; only then does the next edit get in. */
Test(edit, killed_wrapper_leaves_the_lock_with_cmd)
{
	char *F = rt_path(dir, "f"), *lock = rt_path(dir, "f.lock");
	hft_write(F, "1\n");
	int gate[2], errp[2];
	cr_assert_eq(pipe2(gate, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(errp, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t wrapper = fork();
	cr_assert_geq(wrapper, 0);
	if (wrapper == 0) {
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(errp[1], 2);
		dup2(gate[0], 7); /* CMD inherits fd 7: it waits there */
		unsetenv("HOLDFAST_FAULTS");
		execl(hft_bin(), "holdfast", "edit", F, "--", "sh", "-c",
		      "echo \"ready $$\" >&2; read x <&7; read n; echo $((n+1))", (char *)NULL);
		_exit(127);
	}
	close(gate[0]);
	close(errp[1]);
	char *line = rt_line(errp[0]);
	cr_assert_not_null(line, "CMD started");
	int cmdpid = 0;
	cr_assert_eq(sscanf(line, "ready %d", &cmdpid), 1, "'%s'", line);
	free(line);
	cr_assert_eq(kill(wrapper, SIGKILL), 0);
	int st;
	cr_assert_eq(waitpid(wrapper, &st, 0), wrapper);
	cr_assert(WIFSIGNALED(st));

	/* CMD runs on without its wrapper: the lock is still held, by CMD */
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", "-n", F, "--", "sh", "-c", incr)), 1,
		     "the lock lives as long as CMD: %s", err);
	char want[64];
	snprintf(want, sizeof want, "pid %d", cmdpid);
	cr_assert(strstr(err, want), "held by CMD (%s): %s", want, err);
	free(err);

	/* A waiting edit gets in only once CMD has ended (exited: gone, or a
	 * zombie that nobody acts for); its own CMD checks that. */
	char check[512], *log = rt_path(dir, "second.err");
	snprintf(check, sizeof check,
		 "s=$(cut -d' ' -f3 /proc/%d/stat 2>/dev/null); "
		 "if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo \"overlap: $s\" >&2; exit 9; fi; "
		 "read n; echo $((n+10))",
		 cmdpid);
	pid_t second = start(log, RT_ARGV("edit", "-w", "30", F, "--", "sh", "-c", check));
	close(gate[1]); /* CMD goes on: it reads its input, prints, ends */
	cr_assert_eq(waitpid(second, &st, 0), second);
	char *errs = hft_slurp(log);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the second edit: status %d, %s", st,
		  errs ? errs : "");
	free(errs);
	rt_await_exit(cmdpid);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "11\n", "the killed edit committed nothing; the second did");
	free(s);
	cr_assert(rt_lock_free(lock));
	close(errp[0]);
	free(log);
	free(F);
	free(lock);
}

/* An edit commits only while it provably still holds its lock (hf_dirlock_hold),
 * never by its own idea of its age: paused after CMD ran, its lock is reaped
 * as leaked (it allowed itself 10 ms; the reaper's stale window is as short),
 * another edit updates FILE, and the first must then refuse (exit 1). */
Test(edit, lock_reaped_while_cmd_ran_commits_nothing)
{
	char *F = rt_path(dir, "f"), *lock = rt_path(dir, "f.lock");
	hft_write(F, "0\n");
	struct hft_child c;
	hft_spawn_cli(&c, "pause:edit.output.read",
		      RT_ARGV("edit", "--max-hold", "10ms", F, "--", "sh", "-c", incr), NULL);
	hft_expect(&c, "edit.output.read");
	char *out, *err;
	cr_assert_eq(hft_cli(&out, &err, RT_ARGV("lock", "acquire", lock, "--stale", "10ms", "-w", "10")),
		     0, "reap the first edit's lock as leaked: %s", err);
	free(err);
	char token[64];
	cr_assert_eq(sscanf(out, "%63s", token), 1, "'%s'", out);
	free(out);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", lock, "--token", token)), 0);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", F, "--", "sh", "-c", "read n; echo $((n+10))")),
		     0, "%s", err);
	free(err);
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 1, "the first edit refuses");
	err = hft_read_all(c.err_rd);
	cr_assert(strstr(err, "no longer ours"), "%s", err);
	free(err);
	close(c.out_rd);
	close(c.err_rd);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "10\n", "FILE keeps the other's update");
	free(s);
	cr_assert_eq(hft_count_prefix(dir, "f.tmp-"), 0);
	cr_assert(rt_lock_free(lock));
	free(F);
	free(lock);
}

/* Editors whose wall clocks disagree by more than max-hold (every other one
 * 700 s ahead): an editor judged leaked by a skewed one may be refused
 * (exit 1, "no longer ours"), but no update is ever lost: the counter is
 * exactly the number of edits that said they succeeded. */
Test(edit, skewed_clocks_lose_no_update)
{
	enum { N = 10 };
	char *F = rt_path(dir, "counter"), *log = rt_path(dir, "errors");
	hft_write(F, "0\n");
	pid_t pids[N];
	for (int i = 0; i < N; i++)
		pids[i] = start_env(log, i % 2 ? "HOLDFAST_FAULTS=skew:wall:+700000" : NULL,
				    RT_ARGV("edit", "-w", "60", F, "--", "sh", "-c", incr));
	int ok = 0, refused = 0;
	for (int i = 0; i < N; i++) {
		int st;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st), "edit %d: status %d", i, st);
		if (WEXITSTATUS(st) == 0)
			ok++;
		else if (WEXITSTATUS(st) == 1)
			refused++;
		else
			cr_assert_fail("edit %d: exit %d", i, WEXITSTATUS(st));
	}
	char *errs = hft_slurp(log);
	if (refused) {
		int lost = 0;
		for (char *p = errs; (p = strstr(p, "no longer ours")); p++)
			lost++;
		cr_assert_eq(lost, refused, "every refusal is a lost lock: %s", errs);
	}
	char *s = hft_slurp(F);
	cr_assert_eq(atoi(s), ok, "no update lost: counter '%s', %d edits succeeded, %d refused (%s)",
		     s, ok, refused, errs ? errs : "");
	cr_assert_gt(ok, 0);
	free(s);
	free(errs);
	free(F);
	free(log);
}

/* CMD printed nothing: FILE is not emptied (65) unless --allow-empty. A
 * missing FILE is not created from nothing. */
Test(edit, empty_output_refused_unless_allowed)
{
	char *F = rt_path(dir, "f"), *G = rt_path(dir, "missing");
	hft_write(F, "keep\n");
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", F, "--", "sh", "-c", "cat >/dev/null")), 65);
	cr_assert(strstr(err, "printed nothing") && strstr(err, "--allow-empty"), "%s", err);
	free(err);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "keep\n", "FILE untouched");
	free(s);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", G, "--", "true")), 65);
	cr_assert(strstr(err, "--init"), "a missing FILE: --init is suggested: %s", err);
	free(err);
	cr_assert_not(hft_exists(G), "no empty file created");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", "--allow-empty", F, "--", "true")), 0);
	s = hft_slurp(F);
	cr_assert_str_eq(s, "", "--allow-empty empties it");
	free(s);
	cr_assert_eq(hft_count_prefix(dir, "f.tmp-"), 0);
	free(F);
	free(G);
}

/* --init TEXT is CMD's input when FILE does not exist, only then. */
Test(edit, init_text_for_a_missing_file)
{
	char *F = rt_path(dir, "n");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", "--init", "41", F, "--", "sh", "-c", incr)), 0);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "42\n");
	free(s);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", F, "--init", "0", "--", "sh", "-c", incr)), 0);
	s = hft_slurp(F);
	cr_assert_str_eq(s, "43\n", "FILE exists: --init is not used");
	free(s);
	free(F);
}

/* The issue's own example: `holdfast edit state.json -- jq '.n += 1'`. */
Test(edit, jq_state_file_with_init)
{
	if (system("command -v jq >/dev/null 2>&1") != 0)
		cr_skip("jq is not installed");
	char *F = rt_path(dir, "state.json"), *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", F, "--", "jq", "-c", ".n += 1")), 65,
		     "jq prints nothing on empty input: %s", err);
	free(err);
	cr_assert_not(hft_exists(F));
	for (int i = 0; i < 2; i++)
		cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("edit", "--init", "{\"n\":0}", F, "--", "jq",
							 "-c", ".n += 1")),
			     0);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "{\"n\":2}\n");
	free(s);
	free(F);
}

/* Issue 16: a FILE whose name leaves no room for its staged copy
 * ("FILE.tmp-" and 16 hex digits, at most 255 bytes) is refused before CMD
 * runs (64) - 0.2.0 ran CMD, then refused at the commit. */
Test(edit, name_too_long_for_its_staged_copy_is_refused_before_cmd)
{
	char name[256];
	memset(name, 'n', 238); /* the lock FILE.lock fits; FILE.tmp-… does not */
	name[238] = '\0';
	char *F = rt_path(dir, name), *ran = rt_path(dir, "ran");
	char *cmd;
	cr_assert_geq(asprintf(&cmd, "touch '%s'; cat", ran), 0);
	char *err;
	int st = hft_cli(NULL, &err, RT_ARGV("edit", F, "--init", "x", "--", "sh", "-c", cmd));
	cr_assert_eq(st, 64, "exit %d: %s", st, err);
	cr_assert(strstr(err, "too long") && strstr(err, "nothing ran"), "%s", err);
	cr_assert(!hft_exists(ran), "CMD ran before the refusal");
	cr_assert(!hft_exists(F));
	free(err);
	free(cmd);
	free(F);
	free(ran);
}
