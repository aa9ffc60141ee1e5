/* holdfast flock on the kernel's lock (cmd_flock.c, FK1-FK7), from real
 * bash and dash, beside Debian's /usr/bin/flock: the two exclude each other
 * both ways, the descriptor form's lock lives as long as the open file (a
 * daemon keeping fd 9 keeps it), -s/-x, --fcntl independent of flock(2) as
 * the kernel has it, a quiet -n, -E, -w, -u, the record naming the holder
 * and counting for nothing once the lock is gone. Coordination: FIFOs and
 * the lock itself, never sleeps. */
#include "rt.h"

#include <stdarg.h>
#include <sys/stat.h>

HFT_SCRATCH_SUITE(flock, 60);

#define HAS(s, sub) cr_assert(strstr((s), (sub)), "expected '%s' in: %s", (sub), (s))

static const char *const shells[] = { "bash", "dash" };

/* Run script with shell in dir, D=dir, H=holdfast, F=flock(1): exit code;
 * out/err. */
static int vsh(const char *shell, char **out, char **err, const char *fmt, va_list ap)
{
	char body[4096], *script;
	vsnprintf(body, sizeof body, fmt, ap);
	cr_assert_geq(asprintf(&script, "D='%s'; H=\"$HOLDFAST_BIN\"; F=/usr/bin/flock; "
					"cd \"$D\" || exit 99\n%s",
			       dir, body),
		      0);
	int st = hft_sh(out, err, shell, NULL, script);
	free(script);
	return st;
}

/* Run the script in D with shell; its status and stdout. */
static int sh(const char *shell, char **out, char **err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int sh(const char *shell, char **out, char **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int st = vsh(shell, out, err, fmt, ap);
	va_end(ap);
	return st;
}

/* Run the script as sh() does, asserting exit 0 and stdout exactly want;
 * its stderr, malloc'd. */
static char *sh_expect(const char *shell, const char *want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static char *sh_expect(const char *shell, const char *want, const char *fmt, ...)
{
	char *out, *err;
	va_list ap;
	va_start(ap, fmt);
	int st = vsh(shell, &out, &err, fmt, ap);
	va_end(ap);
	cr_assert_eq(st, 0, "%s: %s\n%s", shell, out, err);
	cr_assert_str_eq(out, want, "%s: %s\n%s", shell, out, err);
	free(out);
	return err;
}

/* The script's first lines: a holder of L (taken with flock OPTS) started
 * in the background and in its section; `echo > g` lets it go. */
#define HOLDING(tool, opts) \
	"mkfifo h g\n" tool " " opts " sh -c 'echo > h; read x < g' & read x < h\n"

static bool have_flock1(void)
{
	return access("/usr/bin/flock", X_OK) == 0;
}

/* FK1: the same lock as flock(1)'s, in both directions and both forms. */
Test(flock, excludes_util_linux_flock_both_ways)
{
	if (!have_flock1())
		cr_skip_test("no /usr/bin/flock (util-linux)");
	for (size_t i = 0; i < 2; i++) {
		char *out, *err;
		int st = sh(shells[i], &out, &err,
			    /* flock(1) holds: holdfast is refused, in every form */
			    HOLDING("$F", "L")
			    "\"$H\" flock -n L true; echo a=$?\n"
			    "exec 9>L; \"$H\" flock -n 9; echo b=$?; exec 9>&-\n"
			    "\"$H\" flock -n --fd 8 true 8>L; echo c=$?\n"
			    "echo > g; wait\n"
			    /* holdfast holds: flock(1) is refused */
			    "\"$H\" flock L sh -c 'echo > h; read x < g' & read x < h\n"
			    "$F -n L true; echo d=$?\n"
			    "echo > g; wait\n"
			    "exec 9>L; \"$H\" flock -n 9 || exit 3\n"
			    "$F -n L true; echo e=$?\n"
			    "exec 9>&-\n" /* the last close releases, as flock(2)'s */
			    "$F -n L true; echo f=$?\n");
		cr_assert_eq(st, 0, "%s: %s", shells[i], err);
		cr_assert_str_eq(out, "a=1\nb=1\nc=1\nd=1\ne=1\nf=0\n", "%s: %s\n%s", shells[i],
				 out, err);
		free(out);
		free(err);
	}
}

/* FK1: `exec 9>F; holdfast flock -n 9; daemon & exit` - the lock is the
 * open file's, so it stays while the daemon keeps fd 9 after the script
 * ended, and ends with the daemon. */
Test(flock, fd_form_lives_as_long_as_the_open_file)
{
	for (size_t i = 0; i < 2; i++) {
		char *out, *err;
		int st = sh(shells[i], &out, &err,
			    "mkfifo p; exec 3<>p\n"
			    "sh -c 'exec 9>L; \"$1\" flock -n 9 || exit 2; "
			    "cat <p 3>&- >/dev/null 2>&1 & exit 0' x \"$H\"; echo script=$?\n"
			    "\"$H\" flock -n L true; echo during=$?\n"
			    "if [ -x \"$F\" ]; then $F -n L true; echo f1=$?; else echo f1=1; fi\n"
			    "exec 3>&-\n" /* the daemon ends: its fd 9 closes */
			    "\"$H\" flock -w 20 L true; echo after=$?\n");
		cr_assert_eq(st, 0, "%s: %s", shells[i], err);
		cr_assert_str_eq(out, "script=0\nduring=1\nf1=1\nafter=0\n", "%s: %s\n%s",
				 shells[i], out, err);
		free(out);
		free(err);
	}
}

/* FK5: a -n conflict prints nothing (cron must not mail); -E picks the
 * code and CMD never runs; --verbose says flock(1)'s words and the holder. */
Test(flock, quiet_nonblock_conflict_E_and_verbose_names_holder)
{
	for (size_t i = 0; i < 2; i++) {
		char *err = sh_expect(shells[i], "a=1 size=0\nb=42\nc=0\nd=1\n",
				      HOLDING("\"$H\" flock", "L")
				      "\"$H\" flock -n L touch ran 2>e1; echo a=$? size=$(wc -c < e1)\n"
				      "\"$H\" flock --nb -E 42 L touch ran 2>/dev/null; echo b=$?\n"
				      "\"$H\" flock -n -E 0 L touch ran; echo c=$?\n"
				      "test -e ran && echo RAN\n"
				      "\"$H\" flock -n --verbose L true; echo d=$?\n"
				      "echo > g; wait\n");
		HAS(err, "flock: failed to get lock\n");
		HAS(err, "flock: L is held by pid ");
		HAS(err, "(sh -c echo > h; read x < g)");
		HAS(err, ", fence ");
		free(err);
	}
}

/* -w: a wait that the release ends, and one that times out (the time is
 * the kernel's timer: not asserted on the wall clock). */
Test(flock, wait_ends_with_release_or_times_out)
{
	char *err = sh_expect("bash", "a=1\nb=5\ngot\nc=0\n",
			      HOLDING("\"$H\" flock", "L")
			      "\"$H\" flock -w 0.2 L true; echo a=$?\n"
			      "\"$H\" flock --timeout 0.1 -E 5 --verbose L true; echo b=$?\n"
			      /* a waiter, released by the holder's end */
			      "\"$H\" flock -w 30 L echo got & w=$!\n"
			      "echo > g; wait $w; echo c=$?\n"
			      "wait\n");
	HAS(err, "flock: timeout while waiting to get lock\n");
	free(err);
}

/* -s and -x as flock(2) has them: shared holders together, an exclusive
 * one refused among them; flock(1)'s -s shares with holdfast's. */
Test(flock, shared_and_exclusive)
{
	free(sh_expect("bash", "a=0\nb=1\nc=1\nd=0\ne=1\nf=0\n",
		       HOLDING("\"$H\" flock", "-s L")
		       "\"$H\" flock -s -n L true; echo a=$?\n"
		       "\"$H\" flock -x -n L true; echo b=$?\n"
		       "\"$H\" flock -n L true; echo c=$?\n"
		       "if [ -x \"$F\" ]; then $F -s -n L true; echo d=$?; $F -n L true; echo e=$?; "
		       "else echo d=0; echo e=1; fi\n"
		       "echo > g; wait\n"
		       "\"$H\" flock -x -n L true; echo f=$?\n"));
}

/* --fcntl takes an open-file-description lock: independent of flock(2)
 * locks on Linux, exclusive among OFD locks; --start/--length lock a
 * range, and disjoint ranges do not conflict. */
Test(flock, fcntl_ofd_locks_independent_of_flock)
{
	char *out, *err;
	int st = sh("bash", &out, &err,
		    HOLDING("\"$H\" flock", "--fcntl L")
		    "\"$H\" flock -n L true; echo flock=$?\n"
		    "\"$H\" flock --fcntl -n L true; echo fcntl=$?\n"
		    "\"$H\" flock --fcntl -s -n L true; echo fcntl_s=$?\n"
		    "echo > g; wait\n"
		    "\"$H\" flock --start 0 --length 4 L sh -c 'echo > h; read x < g' & read x < h\n"
		    "\"$H\" flock -n --start 4 --length 4 L true; echo apart=$?\n"
		    "\"$H\" flock -n --start 3 --length 1 L true; echo inside=$?\n"
		    "\"$H\" lock status L\n"
		    "echo > g; wait\n");
	cr_assert_eq(st, 0, "%s", err);
	HAS(out, "flock=0\nfcntl=1\nfcntl_s=1\napart=0\ninside=1\n");
	HAS(out, "fcntl OFD exclusive bytes 0-3");
	free(out);
	free(err);
}

/* -u ends the lock of FD's open file at once. */
Test(flock, unlock_ends_the_descriptors_lock)
{
	for (size_t i = 0; i < 2; i++) {
		free(sh_expect(shells[i], "a=1\nu=0\nb=0\nagain=0\n",
			       "exec 9>L; \"$H\" flock -n 9 || exit 2\n"
			       "\"$H\" flock -n L true; echo a=$?\n"
			       "\"$H\" flock -u 9; echo u=$?\n"
			       "\"$H\" flock -n L true; echo b=$?\n"
			       "\"$H\" flock -u 9; echo again=$?\n"));
	}
}

/* FK2-FK4: while held, `holdfast lock status FILE` names the holder from
 * the record (pid, command, fence), and CMD gets the fence; a flock(1)
 * holder is named from /proc/locks; after the release, and after a kill,
 * the record counts for nothing; each acquisition's fence is higher. */
Test(flock, record_names_holder_only_while_held)
{
	char *out, *err;
	int st = sh("bash", &out, &err,
		    "mkfifo h g\n"
		    "\"$H\" flock L sh -c 'echo $HOLDFAST_FENCE > h; read x < g' & read f1 < h\n"
		    "echo held1; \"$H\" lock status L\n"
		    "echo > g; wait\n"
		    "echo after1; \"$H\" lock status L\n"
		    "test -f L.holdfast-flock || echo NO_RECORD\n"
		    "grep -q '^x' L && echo WRITTEN_INTO_FILE\n"
		    /* a holder killed: its record stays on disk, counts for nothing */
		    "\"$H\" flock L sh -c 'echo $HOLDFAST_FENCE > h; exec cat' & k=$!; read f2 < h\n"
		    "kill -9 $k; pkill -9 -P $k 2>/dev/null; wait $k 2>/dev/null\n"
		    "\"$H\" flock -w 20 L true || exit 4\n" /* the kill freed it */
		    "echo after2; \"$H\" lock status L\n"
		    "test \"$f2\" -gt \"$f1\" && echo fences_up\n"
		    "if [ -x \"$F\" ]; then $F L sh -c 'echo > h; read x < g' & read x < h;\n"
		    "echo held3; \"$H\" lock status L; echo > g; wait; fi\n");
	cr_assert_eq(st, 0, "%s\n%s", out, err);
	HAS(out, "held1\nheld (kernel lock): pid ");
	HAS(out, "(sh -c echo $HOLDFAST_FENCE > h; read x < g) on ");
	HAS(out, ", fence ");
	HAS(out, "after1\nfree\n");
	HAS(out, "after2\nfree\n");
	HAS(out, "fences_up");
	cr_assert(!strstr(out, "NO_RECORD") && !strstr(out, "WRITTEN_INTO_FILE"), "%s", out);
	if (have_flock1()) {
		HAS(out, "held3\nheld (kernel lock): pid ");
		HAS(out, "(flock), flock(2) exclusive, no holdfast record");
	}
	/* the fence CMD got is the record's */
	char *f = strstr(out, ", fence ");
	cr_assert(f);
	free(out);
	free(err);
}

/* FK7: flock(1)'s words on standard output, its exit codes, its -c. */
Test(flock, flock1_words_and_exit_codes)
{
	char *out, *err;
	cr_assert_eq(sh("bash", &out, &err, "\"$H\" flock --verbose L true"), 0, "%s", err);
	cr_assert(!strncmp(out, "flock: getting lock took ", 25), "%s", out);
	HAS(out, " seconds\nflock: executing true\n");
	free(out);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock L sh -c 'exit 7'"), 7);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "SHELL=; \"$H\" flock L -c 'exit 3'"), 3);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "exec 9>L; \"$H\" flock --fd 9 -c 'exit 4'"), 4);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock L sh -c 'kill -9 $$'"), 128 + 9);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock no/such/dir/L true"), 66);
	HAS(err, "flock: cannot open lock file no/such/dir/L: ");
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock L /nonexistent/cmd"), 69);
	HAS(err, "flock: failed to execute /nonexistent/cmd");
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock -n 7"), 65);
	HAS(err, "flock: 7: Bad file descriptor");
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock -o -F L true"), 64);
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock --bogus L true"), 64);
	HAS(err, "unrecognized option");
	free(err);
	cr_assert_eq(sh("dash", NULL, &err, "\"$H\" flock -E 300 L true"), 64);
	free(err);
	cr_assert_eq(sh("dash", &out, NULL, "\"$H\" flock --help"), 0);
	HAS(out, "usage: holdfast flock");
	free(out);
	/* -o: CMD runs without the descriptor, so its children never keep it */
	cr_assert_eq(sh("bash", &out, &err, "\"$H\" flock -o L sh -c 'ls /proc/$$/fd | wc -l'; "
					   "\"$H\" flock L sh -c 'ls /proc/$$/fd | wc -l'"),
		     0, "%s", err);
	int a = 0, b = 0;
	cr_assert_eq(sscanf(out, "%d %d", &a, &b), 2, "%s", out);
	cr_assert_eq(b, a + 1, "-o closes the lock's descriptor: %s", out);
	free(out);
	free(err);
}

/* -F: CMD replaces holdfast and holds the lock through the descriptor. */
Test(flock, no_fork_execs_in_place_holding)
{
	free(sh_expect("bash", "same_pid\na=1\nb=0\n",
		       "mkfifo h g\n"
		       "\"$H\" flock -F L sh -c 'echo $$ > h; read x < g' & k=$!; read p < h\n"
		       "test \"$p\" = \"$k\" && echo same_pid\n"
		       "\"$H\" flock -n L true; echo a=$?\n"
		       "echo > g; wait\n"
		       "\"$H\" flock -n L true; echo b=$?\n"));
}

/* A directory is locked by opening it read-only, as flock(1) does. */
Test(flock, directory_is_locked_itself)
{
	free(sh_expect("dash", "a=1\nb=0\n",
		       "mkdir data\n" HOLDING("\"$H\" flock", "data")
		       "\"$H\" flock -n data/ true; echo a=$?\n"
		       "echo > g; wait\n"
		       "\"$H\" flock -n data true; echo b=$?\n"));
}

/* The seam's lock calls failing (HOLDFAST_FAULTS): a flock(2) that fails
 * for another reason than a holder names the file, exits 71 (ENOLCK) or 65
 * and never runs CMD, nor leaves a record; EIO on a file opened read-only
 * is flock(2) emulated by fcntl (NFS): opened again read-write and taken,
 * as flock(1) does; a timer that cannot be set is 71 before any wait; the
 * OFD form's failure is said the same way. */
Test(flock, failing_lock_calls_name_the_file_and_never_run_cmd)
{
	char *err = sh_expect("bash", "a=71\nb=0\nc=71\nd=65\n",
			      "HOLDFAST_FAULTS=fail:flock:1:ENOLCK \"$H\" flock L touch ran; echo a=$?\n"
			      "test -e ran && echo RAN; test -e L.holdfast-flock && echo RECORD\n"
			      "HOLDFAST_FAULTS=fail:flock:1:EIO \"$H\" flock L touch ran; echo b=$?\n"
			      "test -e ran && rm ran || echo NOT_RUN\n"
			      "HOLDFAST_FAULTS=fail:timer:1:EINVAL \"$H\" flock -w 5 L touch ran; echo c=$?\n"
			      "HOLDFAST_FAULTS=fail:flock:1:EDEADLK \"$H\" flock --fcntl L touch ran; echo d=$?\n"
			      "if test -e ran; then echo RAN; fi\n");
	HAS(err, "flock: L: No locks available\n");
	HAS(err, "flock: cannot set up timer\n");
	HAS(err, "flock: L: Resource deadlock avoided\n");
	free(err);
}
