/*
 * cmd_flock.c - `holdfast flock`: util-linux flock(1)'s command line over
 * holdfast's directory lock, so that a script switches by replacing `flock`
 * with `holdfast flock`.
 *
 *   holdfast flock [-x] [-n | -w SECS] [-E CODE] [-o] [-F] [--verbose] FILE|DIR CMD [ARG...]
 *   holdfast flock [-x] [-n | -w SECS] [-E CODE] [-o] [-F] [--verbose] FILE|DIR -c CMD
 *   holdfast flock [-x] [-n | -w SECS] [-E CODE] [--verbose] FD
 *   holdfast flock -u FD | FILE
 *
 * On-disk artifacts
 * -----------------
 *   FILE.holdfast-lock/     the directory lock (dirlock.c) standing for FILE;
 *                           DIR given: realpath(DIR).holdfast-lock
 *   FILE.holdfast-lock.holdfast/   its state directory
 *   FILE itself is never created, opened or locked: it may exist (a script
 *   that runs `exec 9>FILE` first), be a directory, or be absent.
 *
 * Steps
 * -----
 *   Command form: `holdfast run --lock FILE.holdfast-lock [-n|-w] [-E] --
 *     CMD` (cmd_run.c, supervise.c, acquire.c): the lock held on behalf of
 *     CMD's pid while it runs, released when it ends, CMD's status passed.
 *     -c CMD runs `$SHELL -c CMD` ($SHELL unset: /bin/sh), as flock(1).
 *   -F (no fork): acquired for holdfast's own pid (cli_lock_take), its kernel
 *     lock's descriptor kept across exec, then CMD execs in place: CMD is
 *     the owner; nobody releases, the next acquirer reaps the dead owner's
 *     lock after CMD is gone.
 *   Descriptor form (FD, no command): FD's file (/proc/self/fd/FD) names the
 *     lock; it is acquired for the calling shell (owner_find.c, as `lock
 *     acquire`), its kernel lock kept by a keeper (keeper.c) while that
 *     shell lives. It stays held after holdfast returns, until `holdfast
 *     flock -u FD` (the same shell) or the shell's exit.
 *   -u: the lock FD's (or FILE's) file names is released if the calling
 *     shell holds it - its record's pid and pid_start are the shell's.
 *
 * Invariants
 * ----------
 *   (FL1) Never a silent downgrade: -s (shared) and --fcntl are refused with
 *         exit 64; holdfast has exclusive directory locks only.
 *   (FL2) The FILE form and the FD form of the same file are the same lock:
 *         both are FILE.holdfast-lock of the path the kernel names.
 *   (FL3) A refusal never runs CMD, whatever -E says (RUN7).
 *   (FL4) In the FD form a lock the calling shell already holds is success
 *         at once (as flock(2) on the same open file): never a wait for
 *         itself, never a second acquisition.
 *   (FL5) -u releases only the calling shell's lock: another holder's is
 *         left alone (said on stderr; exit 0, as flock -u on an unlocked
 *         descriptor).
 *   (FL6) In the FD form "the calling shell" is the process that holds the
 *         descriptor's file open longest: the topmost ancestor that has it
 *         open (owner_find.c, OD1) - the script after `exec 9>L`, the
 *         subshell of `( ... ) 9>L` - so the lock ends where flock(2)'s
 *         would, with the last holder of the file. When only holdfast has
 *         it (the shell exec'd `holdfast flock 9` as its last command) the
 *         lock is taken and released before holdfast exits, as flock(1)'s.
 *
 * Hazards
 * -------
 *   - flock(1) and holdfast flock do not exclude each other (one takes
 *     flock(2) on FILE, the other a directory lock beside it): switch every
 *     script that uses one lock at once.
 *   - Closing FD (`exec 9>&-`) in the owner releases nothing: the lock is
 *     the owner's until -u or the owner's exit. Ending it with the
 *     descriptor's last close would need a process that notices the close
 *     at once; a watcher blocked in flock(2) on the file notices it, but
 *     holding that flock even briefly makes a concurrent -n fail, and its
 *     release comes after the close, so a next acquirer may still see it
 *     held: not done.
 *   - The owner is judged by the open file description (kcmp, OD2); where
 *     the kernel cannot compare (no CONFIG_KCMP), by the file's device and
 *     inode, so another open of the same file by an ancestor counts as
 *     holding it (erring upwards: the lock may outlive the critical
 *     section, never end inside it).
 */
#include "cli.h"
#include "proc.h"
#include "run.h"
#include "sys.h"

#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FLOCK_SUFFIX ".holdfast-lock"
/* held as long as its owner lives, like flock(1)'s: never leaked by age */
#define FLOCK_MAX_HOLD_MS HF_MAX_HOLD_NONE

static const char usage[] =
	"usage: holdfast flock [options] FILE|DIR CMD [ARG...]\n"
	"       holdfast flock [options] FILE|DIR -c CMD\n"
	"       holdfast flock [options] FD\n"
	"       holdfast flock -u FD|FILE\n"
	"\n"
	"util-linux flock(1)'s command line over holdfast's directory lock: replace\n"
	"`flock` with `holdfast flock`. The lock is the directory FILE.holdfast-lock\n"
	"beside FILE (DIR: its real path + .holdfast-lock); FILE itself is never\n"
	"created, opened or locked. On conflict the holder is named (pid, command,\n"
	"host, age); a holder that died is reaped by the next acquirer.\n"
	"\n"
	"  -x, -e, --exclusive   an exclusive lock (the only kind: the default)\n"
	"  -s, --shared          refused (exit 64): holdfast has no shared locks\n"
	"  -n, --nonblock, --nb  fail at once (exit 1, or -E) if it is held (also\n"
	"                        --nonblocking, as flock(1) accepts)\n"
	"  -w, --wait, --timeout SECS   wait at most SECS (0.5, 30, 2m); default forever\n"
	"  -E, --conflict-exit-code CODE   exit code when held or timed out (default 1)\n"
	"  -o, --close           accepted: always so (the lock ends with CMD; CMD's\n"
	"                        background children never keep it)\n"
	"  -c, --command CMD     run CMD with $SHELL -c (after FILE, as flock(1))\n"
	"  -F, --no-fork         exec CMD in place: the lock is CMD's, reaped once it\n"
	"                        is gone (no release at its exit)\n"
	"  -u, --unlock          release the calling shell's lock on FD's (FILE's) file\n"
	"      --verbose         say how long getting the lock took, and what runs\n"
	"      --fcntl           refused (exit 64): no fcntl(2) locks\n"
	"      --json            one JSON object on stdout: the lock's record (FD form;\n"
	"                        \"result\": acquired or held_already), -u's answer\n"
	"                        (\"result\": released, not_held, not_yours), run's object\n"
	"                        (the command form), or the error object (README:\n"
	"                        Machine output)\n"
	"  -h, --help            this text\n"
	"  -V, --version         holdfast's version\n"
	"\n"
	"FD form (`exec 9>FILE; holdfast flock -n 9`): the lock is taken for the\n"
	"process that opened fd 9's file - the script after `exec 9>FILE`, the subshell\n"
	"of `( holdfast flock -n 9; ... ) 9>FILE` - and stays held after holdfast\n"
	"returns, until `holdfast flock -u 9` or that process's exit, as flock(1)'s\n"
	"lock lasts as long as the open file; closing fd 9 alone does not release\n"
	"it. Taking it again from the same process succeeds at once. When only\n"
	"holdfast has the file open (a shell that runs `holdfast flock 9` as its last\n"
	"command execs it), the lock is taken and released before holdfast exits.\n"
	"\n"
	"flock(1) and holdfast flock do not exclude each other: switch every script\n"
	"sharing a lock at once.\n"
	"Exit: CMD's status (128+N if it died of signal N; 126 cannot run, 127 not\n"
	"found); 1 (or -E CODE) held or timed out; 64 usage; 65 unreadable record;\n"
	"73 cannot create the lock; 77 refused for safety; 70/71/74 internal/OS/I-O.\n";

struct fl_args {
	int64_t wait_ms;     /* -1 forever, 0 -n, >0 -w */
	const char *wait_arg;
	int conflict_exit;
	const char *econflict_arg;
	bool unlock, nofork, verbose, json;
};

/* --json: the lock's record with its absolute "path" (FD form, -F; the
 * command form prints run's object), or the answer of -u. */
static void fl_json_rec(const char *lock, const hf_rec *r, const char *what)
{
	json_t *o = r ? cli_rec_json(r) : NULL;
	if (!o)
		o = json_object();
	char abs[PATH_MAX];
	json_object_set_new(o, "path", json_string(cli_abs_path(lock, abs, sizeof abs)));
	if (what)
		json_object_set_new(o, "result", json_string(what));
	cli_json_print(o);
}

/* The lock standing for file (FL2): realpath(DIR).holdfast-lock for a
 * directory, FILE.holdfast-lock otherwise. 0 or an exit code (said). */
static int lock_for(const char *file, char *out, size_t n)
{
	char given[PATH_MAX];
	size_t len = strlen(file);
	if (!len || len >= sizeof given) {
		cli_err("flock: '%s' is not a file name", CLI_SHOW(file));
		return HF_EXIT_USAGE;
	}
	memcpy(given, file, len + 1);
	while (len > 1 && given[len - 1] == '/')
		given[--len] = '\0';
	struct stat st;
	char real[PATH_MAX], parent[PATH_MAX + 2];
	const char *base = given;
	if (hf_sys_fstatat(AT_FDCWD, given, &st, 0) == 0) {
		/* FL2: the file the kernel names - a symlink's target, as the FD
		 * form reads it from /proc - so that one file is one lock */
		if (hf_sys_realpath(given, real) < 0 || !strcmp(real, "/")) {
			cli_err("flock %s: no lock beside it: give a file or a directory other than /",
				CLI_SHOW(file));
			return HF_EXIT_USAGE;
		}
		base = real;
	} else {
		/* not there yet (flock(1) would create it): its directory's real
		 * path, the same one the FD form sees once it exists */
		char *slash = strrchr(given, '/');
		const char *name = slash ? slash + 1 : given;
		if (!slash)
			snprintf(parent, sizeof parent, ".");
		else if (slash == given)
			snprintf(parent, sizeof parent, "/");
		else
			snprintf(parent, sizeof parent, "%.*s", (int)(slash - given), given);
		if (*name && hf_sys_realpath(parent, real) == 0 &&
		    (size_t)snprintf(parent, sizeof parent, "%s/%s", strcmp(real, "/") ? real : "",
				     name) < sizeof parent)
			base = parent;
	}
	if ((size_t)snprintf(out, n, "%s%s", base, FLOCK_SUFFIX) >= n) {
		cli_err("flock %s: name too long", CLI_SHOW(file));
		return HF_EXIT_USAGE;
	}
	return 0;
}

/* The file descriptor fd names: its lock (lock_for). 0 or an exit code. */
static int lock_for_fd(int fd, char *out, size_t n)
{
	struct stat st;
	int rc = hf_sys_fstat(fd, &st);
	if (rc < 0) {
		cli_err("flock %d: file descriptor %d is not open (open it first: exec %d>FILE)", fd,
			fd, fd);
		return HF_EXIT_USAGE;
	}
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t len = hf_sys_readlinkat(AT_FDCWD, link, path, sizeof path - 1);
	if (len < 0) {
		cli_err("flock %d: cannot tell which file descriptor %d is (%s)", fd, fd,
			hf_strerror((int)len));
		return HF_EXIT_OSERR;
	}
	path[len] = '\0';
	if (path[0] != '/' || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
		cli_err("flock %d: file descriptor %d is %s, not a file or directory: holdfast's "
			"lock is named by the file (exec %d>FILE)",
			fd, fd, CLI_SHOW(path), fd);
		return HF_EXIT_USAGE;
	}
	if (st.st_nlink == 0) {
		cli_err("flock %d: the file of descriptor %d (%s) was removed: it names no lock",
			fd, fd, CLI_SHOW(path));
		return HF_EXIT_USAGE;
	}
	return lock_for(path, out, n);
}

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s) && strlen(s) < 10;
}

/* Does the record h name owner (pid and start time)? */
static bool is_owner(const hf_rec *h, pid_t owner)
{
	int64_t pid, start;
	uint64_t now;
	const char *host = hf_rec_str(h, "host");
	if (hf_rec_int(h, "pid", &pid) < 0 || pid != owner || !host ||
	    strcmp(host, hf_host_name()))
		return false;
	if (hf_pid_start(owner, &now) < 0)
		return false;
	return hf_rec_int(h, "pid_start", &start) < 0 || (uint64_t)start == now;
}

/* The calling shell (owner_find.c): 0 or an exit code (said). For the FD
 * form (fd >= 0) the topmost ancestor holding fd's file (OD1, FL6); *owner
 * 0 when none but holdfast has it. */
static int find_owner(const char *what, int fd, pid_t *owner, char *comm, size_t n)
{
	if (fd >= 0) {
		int rc = cli_owner_find_holding(fd, owner, comm, n);
		if (rc == -ENOENT) {
			*owner = 0;
			return 0;
		}
		if (rc == 0)
			return 0;
	}
	struct cli_owner o;
	if (cli_owner_find(&o) == 0) {
		*owner = o.pid;
		snprintf(comm, n, "%s", o.comm);
	} else {
		cli_err("flock %s: no process to hold the lock: holdfast's caller is init or "
			"outside this pid namespace (use the command form)",
			what);
		return HF_EXIT_USAGE;
	}
	return 0;
}

/* -u: release the calling shell's lock (FL5). */
static int fl_unlock(const struct fl_args *a, int fd, const char *what, const char *lock)
{
	pid_t owner;
	char comm[HF_COMM_MAX + 1] = "";
	int code = find_owner(what, fd, &owner, comm, sizeof comm);
	if (code)
		return code;
	if (!owner) { /* FL6: nobody holds the file, so nobody holds its lock */
		cli_err("flock -u %s: note: %s is not held through this descriptor: nothing to release",
			what, lock);
		if (a->json)
			fl_json_rec(lock, NULL, "not_held");
		return HF_EXIT_OK;
	}
	hf_rec *st;
	int rc = hf_lock_status(lock, &st);
	if (rc < 0) {
		if ((code = cli_lock_refused("flock -u", lock, rc)) != 0)
			return code;
		cli_err("flock -u %s: %s: %s", what, lock, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	const char *state = hf_rec_str(st, "state");
	const char *token = hf_rec_str(st, "token");
	if (!state || !strcmp(state, "free") || !token) {
		hf_rec_free(st);
		cli_err("flock -u %s: note: %s is not held: nothing to release", what, lock);
		if (a->json)
			fl_json_rec(lock, NULL, "not_held");
		return HF_EXIT_OK; /* as flock -u on an unlocked descriptor */
	}
	if (!is_owner(st, owner)) {
		char who[400];
		cli_holder_words(st, who, sizeof who);
		cli_err("flock -u %s: %s is held by %s, not by pid %d (%s): left alone", what, lock,
			who, (int)owner, comm);
		if (a->json) { /* another's: nested, never in the shape of ours */
			json_t *o = json_object();
			char abs[PATH_MAX];
			json_object_set_new(o, "path", json_string(cli_abs_path(lock, abs, sizeof abs)));
			json_object_set_new(o, "result", json_string("not_yours"));
			json_t *h = cli_rec_json(st);
			json_object_set_new(o, "holder", h ? h : json_null());
			cli_json_print(o);
		}
		hf_rec_free(st);
		return HF_EXIT_OK;
	}
	hf_lock *l;
	rc = hf_lock_new(lock, &l);
	if (rc == 0)
		rc = hf_lock_adopt(l, token);
	hf_rec_free(st);
	if (rc == 0)
		rc = hf_lock_release(l);
	hf_lock_free(l);
	if (rc < 0 && rc != HF_ENOTHELD) {
		cli_err("flock -u %s: release %s: %s", what, lock, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	if (a->json)
		fl_json_rec(lock, NULL, rc == 0 ? "released" : "not_held");
	return HF_EXIT_OK;
}

/* FL6: only holdfast has the file open (its shell exec'd it as the last
 * command), so the lock lasts as long as holdfast, as flock(1)'s would: taken
 * (a held lock refused or waited for as asked), then released. */
static int fl_fd_fleeting(const struct fl_args *a, const char *what, const char *lock)
{
	cli_err("flock %s: note: no process but this holdfast has descriptor %s's file open "
		"(a shell runs its last command in place): as with flock(1), the lock ends "
		"with holdfast; keep the shell alive (end the line with `; exit`) to hold it",
		what, what);
	hf_lock *l;
	int code, rc = hf_lock_new(lock, &l);
	if (rc < 0) {
		if ((code = cli_lock_refused("flock", lock, rc)) != 0)
			return code;
		cli_err("flock %s: %s: %s", what, lock, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	code = cli_lock_take(l, lock, cli_deadline(a->wait_ms), NULL);
	if (code) {
		hf_lock_free(l);
		return code == HF_EXIT_CONFLICT ? a->conflict_exit : code; /* FL3 */
	}
	if (a->json)
		fl_json_rec(lock, hf_lock_holder(l), "acquired_and_released");
	rc = hf_lock_release(l);
	hf_lock_free(l);
	if (rc < 0) {
		cli_err("flock %s: release %s: %s", what, lock, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	return HF_EXIT_OK;
}

/* The FD form: acquire for the calling shell, keep it (FL4). */
static int fl_fd(const struct fl_args *a, int fd, const char *what, const char *lock)
{
	pid_t owner;
	char comm[HF_COMM_MAX + 1] = "";
	int code = find_owner(what, fd, &owner, comm, sizeof comm);
	if (code)
		return code;
	if (!owner) /* FL6 */
		return fl_fd_fleeting(a, what, lock);
	int64_t t0 = hf_sys_mono_ns();
	hf_rec *st;
	if (hf_lock_status(lock, &st) == 0) {
		const char *s = hf_rec_str(st, "state");
		bool mine = s && (!strcmp(s, "held") || !strcmp(s, "skew")) && is_owner(st, owner);
		if (mine && a->json)
			fl_json_rec(lock, st, "held_already");
		hf_rec_free(st);
		if (mine) {
			if (a->verbose)
				cli_err("flock %s: %s is held by pid %d (%s) already", what, lock,
					(int)owner, comm);
			return HF_EXIT_OK;
		}
	}
	hf_lock *l;
	int rc = hf_lock_new(lock, &l);
	if (rc < 0) {
		if ((code = cli_lock_refused("flock", lock, rc)) != 0)
			return code;
		cli_err("flock %s: %s: %s", what, lock, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	hf_lock_set(l, HF_OPT_PID, owner);
	hf_lock_set(l, HF_OPT_MAX_HOLD_MS, FLOCK_MAX_HOLD_MS);
	code = cli_lock_take(l, lock, cli_deadline(a->wait_ms), NULL);
	if (code) {
		hf_lock_free(l);
		return code == HF_EXIT_CONFLICT ? a->conflict_exit : code; /* FL3 */
	}
	uint64_t fence = hf_lock_fence(l);
	if (a->json)
		fl_json_rec(lock, hf_lock_holder(l), "acquired");
	int live = hf_lock_detach(l);
	hf_lock_free(l);
	int keeper = live >= 0 ? cli_keep_for((int)owner, NULL, 0, &live, 1) : -EBADF;
	if (live >= 0)
		hf_sys_close(live);
	if (keeper < 0 && keeper != -ESRCH)
		cli_err("warning: flock %s: no keeper for its kernel lock (%s): a process in another "
			"pid namespace may take pid %d for dead",
			what, hf_strerror(keeper), (int)owner);
	if (a->verbose) {
		int64_t ns = hf_sys_mono_ns() - t0;
		cli_err("getting lock took %" PRId64 ".%06" PRId64 " seconds", ns / 1000000000,
			ns / 1000 % 1000000);
		cli_err("flock %s: %s held for pid %d (%s), fence %" PRIu64 ", until `holdfast "
			"flock -u %s` or that process ends",
			what, lock, (int)owner, comm, fence, what);
	}
	return HF_EXIT_OK;
}

/* -F: acquire for ourselves, exec CMD in place with the kernel lock. */
static int fl_nofork(const struct fl_args *a, const char *lock, char **cmd)
{
	hf_lock *l;
	int64_t t0 = hf_sys_mono_ns();
	int rc = hf_lock_new(lock, &l), code;
	if (rc < 0) {
		if ((code = cli_lock_refused("flock", lock, rc)) != 0)
			return code;
		cli_err("flock: %s: %s", lock, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	hf_lock_set(l, HF_OPT_MAX_HOLD_MS, FLOCK_MAX_HOLD_MS);
	code = cli_lock_take(l, lock, cli_deadline(a->wait_ms), NULL);
	if (code) {
		hf_lock_free(l);
		return code == HF_EXIT_CONFLICT ? a->conflict_exit : code; /* FL3 */
	}
	char fence[40];
	snprintf(fence, sizeof fence, "%" PRIu64, hf_lock_fence(l));
	setenv("HOLDFAST_FENCE", fence, 1);
	if (hf_lock_fd(l) >= 0)
		hf_sys_fcntl_setfd(hf_lock_fd(l), 0); /* RUN8: CMD keeps the kernel lock */
	if (a->verbose) {
		int64_t ns = hf_sys_mono_ns() - t0;
		cli_err("getting lock took %" PRId64 ".%06" PRId64 " seconds", ns / 1000000000,
			ns / 1000 % 1000000);
		cli_err("executing %s", CLI_SHOW(cmd[0]));
	}
	fflush(NULL);
	rc = hf_sys_execvp(cmd[0], cmd);
	/* not run: nothing to hold it for */
	hf_lock_release(l);
	hf_lock_free(l);
	if (rc == -ENOENT) {
		cli_err("%s: command not found", CLI_SHOW(cmd[0]));
		return 127;
	}
	cli_err("%s: cannot run: %s", CLI_SHOW(cmd[0]), hf_strerror(rc));
	return 126;
}

enum { OPT_VERBOSE = 1000, OPT_FCNTL, OPT_JSON };

int cmd_flock(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "shared", no_argument, NULL, 's' },
		{ "exclusive", no_argument, NULL, 'x' },
		{ "unlock", no_argument, NULL, 'u' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "nonblocking", no_argument, NULL, 'n' },
		{ "nb", no_argument, NULL, 'n' },
		{ "wait", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "conflict-exit-code", required_argument, NULL, 'E' },
		{ "close", no_argument, NULL, 'o' },
		{ "no-fork", no_argument, NULL, 'F' },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "fcntl", no_argument, NULL, OPT_FCNTL },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct fl_args a = { .wait_ms = -1, .conflict_exit = HF_EXIT_CONFLICT };
	bool nonblock = false;
	optind = 1;
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "+sxenow:E:FuhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			cli_err("flock: -s (shared) is refused: holdfast's locks are exclusive only, "
				"and taking an exclusive lock where a shared one was asked would "
				"serialize readers silently");
			return HF_EXIT_USAGE;
		case OPT_FCNTL:
			cli_err("flock: --fcntl is refused: holdfast takes a directory lock, not "
				"fcntl(2) record locks");
			return HF_EXIT_USAGE;
		case 'x':
		case 'e':
		case 'o': /* always so: see the usage */
			break;
		case 'n':
			nonblock = true;
			break;
		case 'w': {
			struct cli_wait_opts w = { -1, 1 };
			int code = cli_wait_opt(&w, 'w', optarg);
			if (code)
				return code;
			a.wait_ms = w.wait_ms;
			a.wait_arg = optarg;
			break;
		}
		case 'E': {
			struct cli_wait_opts w = { -1, 1 };
			int code = cli_wait_opt(&w, 'E', optarg);
			if (code)
				return code;
			a.conflict_exit = w.conflict_exit;
			a.econflict_arg = optarg;
			break;
		}
		case 'F':
			a.nofork = true;
			break;
		case 'u':
			a.unlock = true;
			break;
		case OPT_VERBOSE:
			a.verbose = true;
			break;
		case OPT_JSON:
			a.json = true;
			cli_json_enable();
			break;
		case 'h':
			fputs(usage, stdout);
			return HF_EXIT_OK;
		case 'V':
			printf("holdfast flock (holdfast %s)\n", hf_version());
			return HF_EXIT_OK;
		default:
			cli_err("flock: unknown option or missing argument: %s (see 'holdfast flock "
				"--help')",
				CLI_SHOW(argv[optind - 1]));
			return HF_EXIT_USAGE;
		}
	}
	if (nonblock)
		a.wait_ms = 0; /* -n wins over -w, as in flock(1) */
	if (optind >= argc) {
		cli_err("flock: FILE, DIR or FD is missing (see 'holdfast flock --help')");
		return HF_EXIT_USAGE;
	}
	const char *target = argv[optind];
	char lock[PATH_MAX + sizeof FLOCK_SUFFIX];
	int code;
	bool fdform = optind + 1 == argc && all_digits(target);
	if (fdform)
		code = lock_for_fd(atoi(target), lock, sizeof lock);
	else
		code = lock_for(target, lock, sizeof lock);
	if (code)
		return code;

	if (a.unlock) {
		if (optind + 1 != argc) {
			cli_err("flock: -u takes a descriptor or FILE and no command");
			return HF_EXIT_USAGE;
		}
		return fl_unlock(&a, fdform ? atoi(target) : -1, target, lock);
	}
	if (fdform) {
		if (a.nofork) {
			cli_err("flock %s: -F needs a command", target);
			return HF_EXIT_USAGE;
		}
		return fl_fd(&a, atoi(target), target, lock);
	}
	if (optind + 1 >= argc) {
		cli_err("flock %s: no command given (holdfast flock [options] FILE CMD [ARG...], or "
			"FD alone)",
			CLI_SHOW(target));
		return HF_EXIT_USAGE;
	}
	/* the command: CMD [ARG...], or -c CMD as flock(1) ($SHELL -c CMD) */
	char **cmd = argv + optind + 1;
	char *shcmd[4];
	if (!strcmp(cmd[0], "-c") || !strcmp(cmd[0], "--command")) {
		if (optind + 3 != argc) {
			cli_err("flock %s: -c takes exactly one argument, the command line", target);
			return HF_EXIT_USAGE;
		}
		const char *sh = getenv("SHELL");
		shcmd[0] = (char *)(sh && *sh ? sh : "/bin/sh");
		shcmd[1] = (char *)"-c";
		shcmd[2] = cmd[1];
		shcmd[3] = NULL;
		cmd = shcmd;
	}
	if (a.nofork && a.json) {
		cli_err("flock %s: -F and --json exclude each other: CMD replaces holdfast, so "
			"nothing is left to print the answer (the command form prints it)",
			CLI_SHOW(target));
		return HF_EXIT_USAGE;
	}
	if (a.nofork)
		return fl_nofork(&a, lock, cmd);

	/* `holdfast run --lock LOCK [-n|-w] [-E] [--verbose] -- CMD...` */
	size_t ncmd = 0;
	while (cmd[ncmd])
		ncmd++;
	char **rv = calloc(ncmd + 12, sizeof *rv);
	if (!rv) {
		cli_err("out of memory");
		return HF_EXIT_OSERR;
	}
	size_t k = 0;
	rv[k++] = (char *)"run";
	rv[k++] = (char *)"--lock";
	rv[k++] = lock;
	if (a.wait_ms == 0)
		rv[k++] = (char *)"-n";
	else if (a.wait_arg) {
		rv[k++] = (char *)"-w";
		rv[k++] = (char *)a.wait_arg;
	}
	if (a.econflict_arg) {
		rv[k++] = (char *)"-E";
		rv[k++] = (char *)a.econflict_arg;
	}
	if (a.verbose)
		rv[k++] = (char *)"--verbose";
	if (a.json)
		rv[k++] = (char *)"--json";
	rv[k++] = (char *)"--";
	for (size_t i = 0; i < ncmd; i++)
		rv[k++] = cmd[i];
	rv[k] = NULL;
	code = cmd_run((int)k, rv);
	free(rv);
	return code;
}
