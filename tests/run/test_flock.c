/* holdfast flock on the kernel's lock (cmd_flock.c, FK1-FK7), from real
 * bash and dash, beside Debian's /usr/bin/flock: the two exclude each other
 * both ways, the descriptor form's lock lives as long as the open file (a
 * daemon keeping fd 9 keeps it), -s/-x, --fcntl independent of flock(2) as
 * the kernel has it, a quiet -n, -E, -w, -u, the record naming the holder
 * and counting for nothing once the lock is gone. Coordination: FIFOs and
 * the lock itself, never sleeps. */
#include "rt.h"

#include <jansson.h>
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
	/* -o: CMD runs without the descriptor, so its children never keep it.
	 * Into files, not a pipe: the shell's own pipe ends would be counted
	 * when ls reads them before the shell closes them (a race) */
	cr_assert_eq(sh("bash", &out, &err, "\"$H\" flock -o L sh -c 'ls /proc/$$/fd > fd.o'; "
					   "\"$H\" flock L sh -c 'ls /proc/$$/fd > fd.n'; "
					   "wc -l < fd.o; wc -l < fd.n"),
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

/* ---- shared holders' records (FK8, FK9; FL4) ------------------------ */

/* The JSON file D/name, loaded (asserted). */
static json_t *load_json(const char *name)
{
	char *p;
	cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
	json_error_t je;
	json_t *j = json_load_file(p, 0, &je);
	cr_assert_not_null(j, "%s: %s", p, je.text);
	free(p);
	return j;
}

/* The holder of pid in the array hs, or NULL. */
static const json_t *holder_of(const json_t *hs, long pid)
{
	size_t i;
	const json_t *h;
	json_array_foreach(hs, i, h)
	{
		if (json_integer_value(json_object_get(h, "pid")) == pid)
			return h;
	}
	return NULL;
}

/* Two `holdfast flock -s` holders at once and util-linux `flock -s` beside
 * them (their own FIFOs g1-g3) share the lock; util-linux `flock -x` waits
 * (its waiter line in /proc/locks) and `holdfast flock -x -n` is refused
 * with 1, --verbose naming the shared holders; `lock status --json` lists
 * every holder with its pid and mode, the two holdfast ones from their
 * records (FK8), the flock(1) one from /proc/locks; `holdfast list` lists
 * the lock with the same holders (FL4). When CMD ends, its record is
 * removed; the waiter then gets the lock. */
Test(flock, shared_holders_each_have_a_record)
{
	if (!have_flock1())
		cr_skip_test("no /usr/bin/flock (util-linux)");
	char *out, *err;
	int st = sh("bash", &out, &err,
		    "mkfifo h1 h2 h3 g1 g2 g3\n"
		    "\"$H\" flock -s L sh -c 'echo > h1; read x < g1' & p1=$!; read x < h1\n"
		    "\"$H\" flock -s L sh -c 'echo > h2; read x < g2' & p2=$!; read x < h2\n"
		    "$F -s L sh -c 'echo > h3; read x < g3' & p3=$!; read x < h3\n"
		    "echo \"pids $p1 $p2 $p3\"\n"
		    "ls L.holdfast-flock.d | grep -c '\\.json$'\n"
		    "$F -x L touch got_x & w=$!\n"
		    /* the waiter is queued when /proc/locks shows it (a bounded look) */
		    "i=$(stat -c %%i L); n=0\n"
		    "until grep -q -- \"-> FLOCK .*:$i 0 EOF\" /proc/locks; do n=$((n+1)); "
		    "[ $n -gt 20000 ] && echo NO_WAITER && break; done\n"
		    "test -e got_x && echo X_DID_NOT_WAIT\n"
		    "\"$H\" flock -x -n --verbose L touch ran 2>refused.err; echo x=$?\n"
		    "\"$H\" lock status L --json > status.json\n"
		    "\"$H\" list . --json > list.json\n"
		    "echo > g1; wait $p1\n"
		    "ls L.holdfast-flock.d | grep -c '\\.json$'\n"
		    "echo > g2; wait $p2; echo > g3; wait $p3; wait $w; echo w=$?\n"
		    "test -e got_x && echo got_x; test -e ran && echo RAN; true\n");
	cr_assert_eq(st, 0, "%s\n%s", out, err);
	long p1 = 0, p2 = 0, p3 = 0;
	cr_assert_eq(sscanf(out, "pids %ld %ld %ld", &p1, &p2, &p3), 3, "%s", out);
	HAS(out, "\n2\nx=1\n1\nw=0\ngot_x\n");
	cr_assert(!strstr(out, "X_DID_NOT_WAIT") && !strstr(out, "RAN") && !strstr(out, "NO_WAITER"),
		  "%s", out);
	/* --verbose names the shared holders */
	char *ref;
	cr_assert_geq(asprintf(&ref, "%s/refused.err", dir), 0);
	char *e = hft_slurp(ref);
	HAS(e, "flock: failed to get lock\n");
	HAS(e, "flock(2) shared");
	char pid1[96];
	snprintf(pid1, sizeof pid1, "pid %ld (sh -c echo > h1; read x < g1)", p1);
	HAS(e, pid1);
	free(e);
	free(ref);
	/* status --json: three holders, each by its pid */
	json_t *s = load_json("status.json");
	cr_assert_str_eq(json_string_value(json_object_get(s, "state")), "held");
	cr_assert_str_eq(json_string_value(json_object_get(s, "mode")), "shared");
	const json_t *hs = json_object_get(s, "holders");
	cr_assert_eq(json_array_size(hs), 3, "%s", json_dumps(s, 0));
	for (int i = 0; i < 3; i++) {
		long p = i == 0 ? p1 : i == 1 ? p2 : p3;
		const json_t *h = holder_of(hs, p);
		cr_assert_not_null(h, "holder %ld listed", p);
		cr_assert_str_eq(json_string_value(json_object_get(h, "mode")), "shared");
		cr_assert_eq(json_is_true(json_object_get(h, "record")), i < 2,
			     "holdfast's by their records, flock(1)'s by /proc/locks");
		cr_assert_not_null(json_object_get(h, "command"));
		if (i < 2) {
			cr_assert_gt(json_integer_value(json_object_get(h, "taken_ms")), 0);
			cr_assert_not_null(json_object_get(h, "host"));
			cr_assert_null(json_object_get(h, "fence"), "no fence for -s (FK8)");
		}
	}
	json_decref(s);
	/* holdfast list: the lock by its shared records, every holder */
	json_t *l = load_json("list.json");
	const json_t *locks = json_object_get(l, "locks");
	const json_t *it = NULL;
	size_t i;
	const json_t *x;
	json_array_foreach(locks, i, x)
	{
		const char *p = json_string_value(json_object_get(x, "path"));
		if (!strcmp(json_string_value(json_object_get(x, "kind")), "flock") && p &&
		    strlen(p) >= 2 && !strcmp(p + strlen(p) - 2, "/L"))
			it = x;
	}
	cr_assert_not_null(it, "listed: %s", json_dumps(l, 0));
	cr_assert_str_eq(json_string_value(json_object_get(it, "state")), "held");
	cr_assert_str_eq(json_string_value(json_object_get(it, "mode")), "shared");
	cr_assert_eq(json_array_size(json_object_get(it, "holders")), 3);
	cr_assert_not_null(holder_of(json_object_get(it, "holders"), p1));
	cr_assert_not_null(holder_of(json_object_get(it, "holders"), p2));
	json_decref(l);
	free(out);
	free(err);
}

/* FK3, FK9: a SIGKILLed shared holder (holdfast and its CMD) leaves its
 * record, which counts for nothing: while a flock(1) -s holder keeps the
 * lock, status names only that one; the next `holdfast flock -s` sweeps the
 * dead record and writes its own; status then names the two living ones. */
Test(flock, killed_shared_holders_record_counts_for_nothing_and_is_swept)
{
	if (!have_flock1())
		cr_skip_test("no /usr/bin/flock (util-linux)");
	char *out, *err;
	int st = sh("bash", &out, &err,
		    "mkfifo h1 h2 h3 g1 g2 g3\n"
		    "$F -s L sh -c 'echo > h1; read x < g1' & pf=$!; read x < h1\n"
		    "\"$H\" flock -s L sh -c 'echo $$ > h3; exec cat g3' & k=$!; read c < h3\n"
		    "ls L.holdfast-flock.d | grep -c \"^$k-.*\\.json$\"\n"
		    "kill -9 $k $c; wait $k 2>/dev/null\n"
		    "ls L.holdfast-flock.d | grep -c \"^$k-.*\\.json$\"\n" /* left behind */
		    "\"$H\" lock status L --json > dead.json\n"
		    "\"$H\" flock -s L sh -c 'echo > h2; read x < g2' & pb=$!; read x < h2\n"
		    "ls L.holdfast-flock.d | grep -c \"^$k-\"\n" /* swept */
		    "\"$H\" lock status L --json > swept.json\n"
		    "echo > g2; wait $pb; echo > g1; wait $pf\n"
		    "echo \"pids $k $pf $pb\"\n");
	cr_assert_eq(st, 0, "%s\n%s", out, err);
	HAS(out, "1\n1\n0\npids ");
	long k = 0, pf = 0, pb = 0;
	cr_assert_eq(sscanf(strstr(out, "pids "), "pids %ld %ld %ld", &k, &pf, &pb), 3, "%s", out);
	json_t *d = load_json("dead.json");
	const json_t *hs = json_object_get(d, "holders");
	cr_assert_eq(json_array_size(hs), 1, "%s", json_dumps(d, 0));
	cr_assert_not_null(holder_of(hs, pf), "the living flock(1) holder");
	cr_assert_null(holder_of(hs, k), "the killed holder's record counts for nothing");
	json_decref(d);
	json_t *s = load_json("swept.json");
	hs = json_object_get(s, "holders");
	cr_assert_eq(json_array_size(hs), 2, "%s", json_dumps(s, 0));
	cr_assert_not_null(holder_of(hs, pf));
	cr_assert(json_is_true(json_object_get(holder_of(hs, pb), "record")));
	cr_assert_null(holder_of(hs, k));
	json_decref(s);
	free(out);
	free(err);
}

/* FK6, FK8: a shared record that cannot be written (its directory cannot
 * be made, the rename fails) changes neither the lock nor the exit status:
 * CMD runs under the shared lock (an exclusive taker is refused meanwhile)
 * and its status is holdfast's; no record and no temporary file stay. */
Test(flock, shared_record_failures_change_nothing)
{
	free(sh_expect("bash", "a=7\nb=1\nmade, 0 files\nc=0\n",
		       "HOLDFAST_FAULTS=fail:mkdir:1:EROFS \"$H\" flock -s L sh -c 'exit 7'; echo a=$?\n"
		       "test -e L.holdfast-flock.d && echo DIR\n"
		       "HOLDFAST_FAULTS=fail:rename:1:EIO \"$H\" flock -s L "
		       "sh -c '\"$0\" flock -x -n L true; echo b=$?' \"$H\"\n"
		       "test -d L.holdfast-flock.d && echo \"made, $(ls -A L.holdfast-flock.d | wc -l) files\"\n"
		       "echo c=$?\n"));
}
