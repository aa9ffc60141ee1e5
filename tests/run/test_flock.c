/* holdfast flock: util-linux flock(1)'s command line over the directory
 * lock (cmd_flock.c, FL1-FL5), from real bash and dash: the command form
 * (status, -c, -n naming the holder, -w, -E), the descriptor form (held for
 * the calling shell after holdfast returns, until -u or the shell's exit;
 * a second script refused meanwhile), -F, -s and --fcntl refused, and every
 * option of flock(1)'s manual either taken or refused with a message. */
#include "rt.h"

#include <stdarg.h>
#include <sys/stat.h>

HFT_SCRATCH_SUITE(flock, 60);

#define HAS(s, sub) cr_assert(strstr((s), (sub)), "expected '%s' in: %s", (sub), (s))

static const char *const shells[] = { "bash", "dash" };

/* Run script with shell in dir, D=dir exported: exit code; out/err. */
static int sh(const char *shell, char **out, char **err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int sh(const char *shell, char **out, char **err, const char *fmt, ...)
{
	char body[4096], *script;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	cr_assert_geq(asprintf(&script, "D='%s'; H=\"$HOLDFAST_BIN\"; cd \"$D\" || exit 99\n%s",
			       dir, body), 0);
	int st = hft_sh(out, err, shell, NULL, script);
	free(script);
	return st;
}

Test(flock, command_form_passes_status_and_releases)
{
	for (size_t i = 0; i < 2; i++) {
		char *err;
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock L sh -c 'exit 7'"), 7, "%s: %s",
			     shells[i], err);
		free(err);
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock L -c 'exit 3'"), 3, "%s", err);
		free(err);
		/* FILE existing as a regular file (exec 9>L first) works; FILE untouched */
		char *out;
		cr_assert_eq(sh(shells[i], &out, &err, "exec 9>L; echo keep >&9; \"$H\" flock -x -n "
						      "L -c 'echo ran'; r=$?; cat L; exit $r"),
			     0, "%s", err);
		cr_assert_str_eq(out, "ran\nkeep\n");
		free(out);
		free(err);
		char *lock = rt_path(dir, "L.holdfast-lock");
		cr_assert(rt_lock_free(lock), "released when CMD ended");
		free(lock);
	}
}

Test(flock, nonblock_conflict_names_holder_wait_and_E)
{
	char *lock = rt_path(dir, "L.holdfast-lock");
	struct hf_dirlock_info held = rt_hold(lock);
	char want[64];
	snprintf(want, sizeof want, "held by pid %d", (int)getpid());
	for (size_t i = 0; i < 2; i++) {
		char *err;
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock -n L touch ran; r=$?; test ! -e "
						      "ran || exit 98; exit $r"),
			     1, "%s: %s", shells[i], err);
		HAS(err, want);
		HAS(err, "L.holdfast-lock");
		free(err);
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock -n -E 42 L true"), 42);
		free(err);
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock --nb --conflict-exit-code 0 L "
						      "touch ran; r=$?; test ! -e ran || exit 98; "
						      "exit $r"),
			     0, "-E 0: skipped quietly, CMD not run: %s", err);
		free(err);
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock -w 0.2 L true"), 1);
		HAS(err, "timed out");
		HAS(err, want);
		free(err);
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock --timeout 0.1 -E 5 L true"), 5);
		free(err);
	}
	rt_release(lock, &held);
	free(lock);
}

Test(flock, fd_form_held_for_the_shell_until_unlock)
{
	for (size_t i = 0; i < 2; i++) {
		char *err, *out;
		int st = sh(shells[i], &out, &err,
			    "exec 9>L\n"
			    "\"$H\" flock -n 9 || exit 10\n"
			    "\"$H\" flock -n 9 || exit 11\n" /* again from the same shell: FL4 */
			    "\"$H\" flock 9 || exit 12\n"    /* and waiting: no wait for itself */
			    "\"$H\" lock status L.holdfast-lock\n"
			    /* a second script, meanwhile, is refused, naming this shell */
			    "sh -c '\"$HOLDFAST_BIN\" flock -n \"$1\" true' x \"$D/L\"; r=$?\n"
			    "test $r = 1 || exit 13\n"
			    "\"$H\" flock -n L true 2>/dev/null && exit 14\n"
			    "\"$H\" flock -u 9 || exit 15\n"
			    "\"$H\" flock -u 9 || exit 16\n" /* not held: as flock -u, 0 */
			    "\"$H\" flock -n L -c 'echo free'\n");
		cr_assert_eq(st, 0, "%s: exit %d: %s", shells[i], st, err);
		char want[64];
		cr_assert(strstr(out, "held: pid "), "%s", out);
		int pid = atoi(strstr(out, "held: pid ") + 10);
		snprintf(want, sizeof want, "held by pid %d", pid);
		HAS(err, want);
		HAS(out, "free\n");
		free(out);
		free(err);
	}
}

Test(flock, fd_form_ends_with_the_shell)
{
	for (size_t i = 0; i < 2; i++) {
		char *out, *err;
		cr_assert_eq(sh(shells[i], &out, &err, "exec 9>L; \"$H\" flock -n 9 || exit 10; "
						      "echo $$"),
			     0, "%s", err);
		pid_t pid = (pid_t)atoi(out);
		cr_assert_gt(pid, 0);
		rt_await_exit(pid);
		free(out);
		free(err);
		/* the owner is gone: the next acquirer reaps it at once */
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock -n L true"), 0, "%s", err);
		free(err);
	}
}

/* flock(1)'s idiom: the subshell is skipped, the lock is the script's;
 * the same script takes it again, another is refused until -u. */
/* FL6: the lock is the process's that opened the descriptor's file - the
 * subshell of flock(1)'s idiom, the script past a wrapper - and ends with
 * it, as flock(2)'s lock ends with the open file. */
Test(flock, subshell_idiom_lock_ends_with_the_subshell)
{
	for (size_t i = 0; i < 2; i++) {
		char *err;
		int st = sh(shells[i], NULL, &err,
			    "other() { sh -c '\"$HOLDFAST_BIN\" flock -n \"$1\" true' x \"$D/L\"; }\n"
			    "( \"$H\" flock -n 9 || exit 1; echo in >&9; other; test $? = 1 || exit 2 ) 9>L "
			    "|| exit 10\n"
			    "other || exit 11\n" /* the subshell ended: free at once */
			    "( \"$H\" flock -n 9 || exit 1; \"$H\" flock -n 9 || exit 2 ) 9>L || exit 12\n"
			    "exec 9>L; timeout 5 \"$H\" flock -n 9 || exit 13\n" /* past a wrapper */
			    "other; test $? = 1 || exit 14\n"                   /* the script's */
			    "\"$H\" flock -u 9 || exit 15\n"
			    "other || exit 16\n");
		cr_assert_eq(st, 0, "%s: exit %d: %s", shells[i], st, err);
		free(err);
	}
}

/* FL6: a shell that runs `holdfast flock FD` as its last command execs it:
 * nobody but holdfast has the file open, so the lock ends with holdfast, as
 * flock(1)'s - never handed to the shell's parent (a cron daemon, an agent)
 * to be held for its life. */
Test(flock, fd_form_as_a_shells_last_command_ends_with_holdfast)
{
	for (size_t i = 0; i < 2; i++) {
		char *out, *err;
		int st = sh(shells[i], &out, &err,
			    "bash -c 'exec 8>\"$1\"; \"$2\" flock -n 8' x \"$D/M\" \"$H\"; echo rc=$?\n"
			    "\"$H\" lock status M.holdfast-lock\n"
			    "\"$H\" lock acquire M.holdfast-lock --pid $$ >/dev/null || exit 3\n"
			    "bash -c 'exec 8>\"$1\"; \"$2\" flock -n 8' x \"$D/M\" \"$H\"; echo rc=$?\n");
		cr_assert_eq(st, 0, "%s: exit %d: %s", shells[i], st, err);
		cr_assert_str_eq(out, "rc=0\nfree\nrc=1\n", "%s: %s\n%s", shells[i], out, err);
		HAS(err, "the lock ends with holdfast");
		HAS(err, "is held by pid");
		free(out);
		free(err);
	}
}

Test(flock, fd_form_refuses_what_names_no_file)
{
	char *err;
	cr_assert_eq(sh("bash", NULL, &err, "\"$H\" flock -n 7"), 64);
	HAS(err, "file descriptor 7 is not open");
	free(err);
	cr_assert_eq(sh("bash", NULL, &err, "echo | \"$H\" flock -n 0"), 64);
	HAS(err, "pipe:");
	free(err);
	cr_assert_eq(sh("bash", NULL, &err, "exec 9>L; rm L; \"$H\" flock -n 9"), 64);
	HAS(err, "was removed");
	free(err);
}

Test(flock, no_fork_execs_in_place)
{
	char *out, *err;
	cr_assert_eq(sh("dash", &out, &err, "\"$H\" flock -F L sh -c '\"$HOLDFAST_BIN\" lock "
					   "status L.holdfast-lock; echo pid=$$ fence=$HOLDFAST_FENCE'"),
		     0, "%s", err);
	/* CMD is the holder: the lock names CMD's own pid */
	char *p = strstr(out, "pid=");
	cr_assert(p, "%s", out);
	char want[64];
	snprintf(want, sizeof want, "held: pid %d ", atoi(p + 4));
	HAS(out, want);
	/* CMD's HOLDFAST_FENCE is the fence the lock's status names (a new
	 * counter starts at the wall clock: README, Fencing) */
	char *f = strstr(out, ", fence ");
	cr_assert(f, "%s", out);
	snprintf(want, sizeof want, "fence=%llu\n", strtoull(f + 8, NULL, 10));
	HAS(out, want);
	free(out);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock -n L true"), 0,
		     "the dead owner's lock is reaped: %s", err);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock -F L /nonexistent/cmd"), 127);
	free(err);
	char *lock = rt_path(dir, "L.holdfast-lock");
	cr_assert(rt_lock_free(lock), "a CMD that never ran leaves no lock");
	free(lock);
}

Test(flock, shared_and_fcntl_refused_never_exclusive)
{
	for (size_t i = 0; i < 2; i++) {
		char *err;
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock -s L touch ran; r=$?; test ! -e "
						      "ran || exit 98; exit $r"),
			     64);
		HAS(err, "-s (shared) is refused");
		free(err);
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock --shared -n 9"), 64);
		free(err);
		cr_assert_eq(sh(shells[i], NULL, &err, "\"$H\" flock --fcntl L true"), 64);
		HAS(err, "--fcntl is refused");
		free(err);
	}
	cr_assert_eq(hft_count_prefix(dir, "L"), 0, "nothing made for a refusal");
}

/* Every option of util-linux flock(1)'s manual: taken, or refused with a
 * message that is not "unknown option". */
Test(flock, every_flock1_option_known)
{
	static const char *const taken[] = {
		"-x", "-e", "--exclusive", "-n", "--nb", "--nonblock", "-o", "--close",
		"-w 5", "--wait 5", "--timeout 5", "-E 3", "--conflict-exit-code 3",
		"--verbose", "-F", "--no-fork",
	};
	for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
		char *err;
		int st = sh("bash", NULL, &err, "\"$H\" flock %s L true", taken[i]);
		cr_assert_eq(st, 0, "%s: exit %d: %s", taken[i], st, err);
		free(err);
	}
	char *out, *err;
	cr_assert_eq(sh("bash", NULL, &err, "\"$H\" flock L --command 'exit 4'"), 4, "%s", err);
	free(err);
	cr_assert_eq(sh("bash", NULL, &err, "exec 9>L; \"$H\" flock 9 && \"$H\" flock --unlock 9"),
		     0, "%s", err);
	free(err);
	cr_assert_eq(sh("bash", &out, NULL, "\"$H\" flock -h"), 0);
	HAS(out, "usage: holdfast flock");
	free(out);
	cr_assert_eq(sh("bash", &out, NULL, "\"$H\" flock --help"), 0);
	free(out);
	cr_assert_eq(sh("bash", &out, NULL, "\"$H\" flock -V"), 0);
	HAS(out, "holdfast flock (holdfast ");
	free(out);
	cr_assert_eq(sh("bash", &out, NULL, "\"$H\" flock --version"), 0);
	free(out);
	/* --verbose says what flock(1)'s does */
	cr_assert_eq(sh("bash", NULL, &err, "\"$H\" flock --verbose L true"), 0);
	HAS(err, "getting lock took ");
	HAS(err, "executing true");
	free(err);
	cr_assert_eq(sh("bash", NULL, &err, "\"$H\" flock --bogus L true"), 64);
	HAS(err, "unknown option");
	free(err);
}

Test(flock, directory_locks_beside_it)
{
	char *err;
	cr_assert_eq(sh("dash", NULL, &err, "mkdir data && \"$H\" flock data/ -c 'test -d "
					   "data.holdfast-lock'"),
		     0, "%s", err);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock / true"), 64);
	free(err);
}

/* OD2: a descendant's own open of the same file is another flock(2) lock:
 * it is refused while the ancestor holds, and its -u leaves the ancestor's
 * lock alone (a third script stays refused). */
Test(flock, a_childs_own_open_is_not_the_parents_lock)
{
	for (size_t i = 0; i < 2; i++) {
		char *out, *err;
		int st = sh(shells[i], &out, &err,
			    "exec 9>X; \"$H\" flock -n 9 || exit 2\n"
			    "sh -c 'exec 8>X; \"$1\" flock -n 8; echo child=$?; \"$1\" flock -u 8' x \"$H\"\n"
			    "\"$H\" flock -n X -c true; echo third=$?\n");
		cr_assert_eq(st, 0, "%s: exit %d: %s", shells[i], st, err);
		cr_assert_str_eq(out, "child=1\nthird=1\n", "%s: %s\n%s", shells[i], out, err);
		free(out);
		free(err);
	}
}

/* FL2: a symlink and its target are one file, so one lock, in every form. */
Test(flock, a_symlink_is_its_targets_lock)
{
	char *out, *err;
	int st = sh("bash", &out, &err,
		    "touch real.f; ln -s real.f sym.f\n"
		    "exec 9>sym.f; \"$H\" flock -n 9 || exit 2\n"
		    "\"$H\" flock -n sym.f -c true; echo file=$?\n"
		    "\"$H\" flock -n real.f -c true; echo target=$?\n");
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert_str_eq(out, "file=1\ntarget=1\n", "%s\n%s", out, err);
	free(out);
	free(err);
}

/* Issue 16: a waiting `holdfast flock FD` whose shell (the owner of FD's
 * lock) is killed says that its process ended while it waited, naming the
 * lock - 0.2.0 said only "No such process". The wait is reached through its
 * named pause point; the holder is `holdfast flock L CMD`. */
Test(flock, waiting_fd_form_whose_shell_is_killed_says_so)
{
	char *out, *err;
	int st = sh("bash", &out, &err,
		    "mkfifo h go n g e\n"
		    "\"$H\" flock L sh -c 'echo > h; read x < go' &\n"
		    "read x < h\n"
		    "cat e > err &\n"
		    "c=$!\n"
		    "HOLDFAST_FAULTS=pause:dirlock.acquire.waiting HOLDFAST_PAUSE_FDS=3,4 \\\n"
		    "  bash -c 'echo $$ > sp; exec 9>L; \"$0\" flock 9 3<>n 4<>g' \"$H\" 2> e &\n"
		    "read point < n\n"
		    "kill -9 \"$(cat sp)\"\n"
		    "echo > g\n"
		    "wait \"$c\"\n"
		    "echo go > go; wait\n"
		    "cat err\n");
	cr_assert_eq(st, 0, "%s%s", out, err);
	cr_assert(strstr(out, "ended while waiting") && strstr(out, "L.holdfast-lock") &&
			  strstr(out, "nothing was acquired"),
		  "%s", out);
	free(out);
	free(err);
}
