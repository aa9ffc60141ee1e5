/*
 * cmd_flock.c - `holdfast flock`: util-linux flock(1) on the kernel's own
 * lock, with holdfast's record of the holder beside the file.
 *
 *   holdfast flock [options] FILE|DIR CMD [ARG...]
 *   holdfast flock [options] FILE|DIR -c CMD
 *   holdfast flock [options] FD
 *   holdfast flock [options] --fd FD CMD [ARG...] | -c CMD
 *   options: -s|-x|-u  -n  -w SECS  -E CODE  -o  -F  --fcntl  --start N
 *            --length N  --verbose  (flock(1)'s, with its meanings)
 *
 * On-disk artifacts
 * -----------------
 *   FILE                    the user's file: opened as flock(1) opens it
 *                           (O_RDONLY, --fcntl -x: O_WRONLY; O_CREAT 0666;
 *                           a directory read-only) and locked; never written
 *   FILE.holdfast-flock     the record (JSON, one object): holder "holdfast
 *                           flock", pid (the process the lock is held for),
 *                           pid_start, host, command, locker (the pid that
 *                           called flock(2): the one /proc/locks shows),
 *                           dev/ino of FILE, fence, taken_ms. FILE a
 *                           directory: realpath(DIR).holdfast-flock. It is
 *                           never removed (like FILE): it keeps the fence.
 *   FILE.holdfast-flock.tmp the next record being written (FK2)
 *   FILE.holdfast-flock.d/  the shared holders' records (FK8), one file
 *                           each: <locker>-<16 hex>.json, the exclusive
 *                           record's fields without fence, with "mode":
 *                           "shared"; <locker>-<16 hex>.tmp while it is
 *                           written. Made by the first shared holder, never
 *                           removed (a record is, when its CMD ends).
 *
 * Steps
 * -----
 *   1. FILE: open it as flock(1) does; FD or --fd FD: use the descriptor as
 *      given (its open file description is what gets locked).
 *   2. Lock: flock(fd, LOCK_EX|LOCK_SH|LOCK_UN [|LOCK_NB]), or with --fcntl
 *      (or --start/--length) fcntl(F_OFD_SETLK[W]) on [start, start+length).
 *      -w: a real-time interval timer whose SIGALRM (no SA_RESTART) ends the
 *      wait with EINTR (FK5).
 *   3. Exclusive flock(2): write the record (FK2-FK4) and export
 *      HOLDFAST_FENCE. Shared flock(2) (-s): make FILE.holdfast-flock.d if
 *      missing, sweep it (FK9), write this holder's own record there (FK8),
 *      HOLDFAST_FENCE unset. --fcntl: no record.
 *   4. CMD: fork, the child (fd closed first with -o) execs CMD, the parent
 *      waits, removes its shared record (FK8) and exits with CMD's status;
 *      -F: exec CMD in place (its shared record stays, swept once void).
 *      The FD form: exit; the lock stays with the open file description,
 *      and its record counts as long as the lock.
 *   Status (`holdfast lock status FILE`, FILE a regular file): the records
 *   read first, then the /proc/locks lines on FILE's inode; each line is
 *   one holder, named by the record that counts for it (FK3), else by its
 *   pid (src/base/flockrec.c hf_flock_holders).
 *
 * Invariants
 * ----------
 *   (FK1) The kernel lock is the lock: the flock(2) (or OFD) lock util-linux
 *         flock takes, with the same call on the same kind of open file
 *         description. holdfast takes no other lock for it, so flock(1) and
 *         holdfast flock exclude each other in both directions, and the lock
 *         lives exactly as long as its open file description (the FD form's
 *         lock outlives holdfast, as flock(1)'s does).
 *   (FK2) The record is written only by a holder of the exclusive flock(2)
 *         lock, after taking it, by rename(2) of a complete temporary file
 *         beside FILE: readers see a whole record or none; FILE itself is
 *         never written.
 *   (FK3) A record counts only while the lock it describes is held:
 *         /proc/locks lists a FLOCK WRITE lock on the record's dev:ino by the
 *         record's locker pid (a shared record, FK8: a FLOCK READ lock).
 *         Otherwise it names nobody; a holder without a record (flock(1),
 *         --fcntl, one whose directory is not writable) is named from
 *         /proc/locks alone; each record names one lock at most.
 *   (FK4) Fences never repeat for one record file: each record's fence is
 *         max(the previous record's fence + 1, the wall clock in us), the
 *         previous one read under the same exclusive lock (FK2). A record
 *         file removed by hand restarts at the wall clock.
 *   (FK5) A refusal (held with -n, timed out with -w) never runs CMD, exits
 *         with the conflict code (1, or -E), and prints nothing unless
 *         --verbose: then flock(1)'s words, and the holder.
 *   (FK6) The record is beside the lock, never in its way: failing to
 *         write it (a read-only or foreign directory, "/", a removed file)
 *         changes neither the lock nor the exit status.
 *   (FK7) The exit codes and the --verbose words are flock(1)'s: 1/-E
 *         conflict or timeout, 64 usage, 65 lock error, 66 cannot open,
 *         69 cannot run CMD, 71 OS error, 73 read-only or full file system;
 *         "flock: getting lock took S seconds", "flock: executing CMD" on
 *         standard output.
 *   (FK8) Each shared holder writes its own record, never another's: after
 *         taking the shared flock(2) lock, FILE.holdfast-flock.d/
 *         <locker>-<random>.json by rename(2) of a complete temporary file
 *         of the same unique name (holders never write one file, so they
 *         never race), and removes it when CMD ends (best effort: FK3
 *         judges what stays). A shared holder has no fence: FK4's counter
 *         is the exclusive record's, which only an exclusive holder may
 *         write, so -s exports no HOLDFAST_FENCE. FK1 and FK6 hold as for
 *         the exclusive record.
 *   (FK9) A sweep removes only records that count for nobody: the sweeping
 *         holder (under its shared lock) reads the records first and
 *         /proc/locks after: a record read was written after its holder
 *         took its lock (FK8), so that /proc/locks lists the lock unless it
 *         has ended; a record's name is written once, so the name removed
 *         is the record judged. A temporary file is removed only when its locker
 *         pid is gone.
 *
 * Hazards
 * -------
 *   - FK3 judges by pid: a record whose locker pid was reused by a new
 *     process that flock(2)s the same inode would be taken as valid (both
 *     reuses at once). The fence still differs.
 *   - OFD (--fcntl) locks write no record: they show no pid (-1) in
 *     /proc/locks; status lists them from /proc/locks.
 *   - A shared record left by a holder killed with SIGKILL (or by -F, or
 *     by the FD form) stays on disk until a later shared holder sweeps it
 *     (FK9); meanwhile FK3 judges it void. Exclusive holders do not sweep
 *     the directory. Each look reads at most HF_FLOCKREC_SHARED_MAX records.
 *   - A shared holder's record is judged by pid like the exclusive one
 *     (FK3's pid-reuse hazard), and a record names one lock: two shared
 *     locks of one process on one inode (two open files) are told apart
 *     by their records only by count.
 *   - A holdfast flock run in the background on an inherited descriptor
 *     whose lock the shell drops before holdfast has written its record
 *     writes it unlocked (FK2 broken by the caller); FK3 still judges it
 *     void, and FK4's wall-clock floor keeps the next fences above it.
 *   - The lock is the inode's, as flock(1)'s: FILE removed (or replaced)
 *     while held lets a new open lock a new inode - two holders, as with
 *     flock(1). Lock files are never removed by holdfast flock.
 *   - `holdfast list` shows a flock lock only by its records (the exclusive
 *     record, or FILE.holdfast-flock.d for shared holders): flock(1)'s
 *     locks without one are not found (the file system's listing,
 *     src/lib/fs/fslist.c FL4).
 */
#include "cli.h"
#include "file.h"
#include "flockrec.h"
#include "proc.h"
#include "sys.h"

#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#endif

#define REC_SUFFIX HF_FLOCKREC_SUFFIX
#define EX_NOINPUT_ 66
#define EX_UNAVAILABLE_ 69

static const char usage[] =
	"usage: holdfast flock [options] FILE|DIR CMD [ARG...]\n"
	"       holdfast flock [options] FILE|DIR -c CMD\n"
	"       holdfast flock [options] FD\n"
	"       holdfast flock [options] --fd FD CMD [ARG...] | -c CMD\n"
	"\n"
	"util-linux flock(1) on the kernel's own lock: the same flock(2) (or, with\n"
	"--fcntl, open-file-description) lock flock(1) takes, so flock(1) and holdfast\n"
	"flock exclude each other on the same file. Beside it holdfast writes who holds\n"
	"an exclusive flock(2) lock (FILE.holdfast-flock: pid, command, host, time, a\n"
	"fence that never repeats) and each shared one (FILE.holdfast-flock.d/, no\n"
	"fence); `holdfast lock status FILE` shows every holder.\n"
	"\n"
	"  -s, --shared             get a shared lock\n"
	"  -x, -e, --exclusive      get an exclusive lock (default)\n"
	"  -u, --unlock             remove a lock (from FD's open file)\n"
	"  -n, --nb, --nonblock, --nonblocking   fail rather than wait (exit 1, or\n"
	"                           -E; silent unless --verbose: it names the holder)\n"
	"  -w, --wait, --timeout SECS   wait at most SECS (0.5, 30); -w 0 is -n\n"
	"  -E, --conflict-exit-code CODE   exit code after conflict or timeout (1)\n"
	"  -o, --close              close the lock's descriptor before running CMD\n"
	"  -c, --command CMD        run CMD with $SHELL -c (/bin/sh if unset)\n"
	"  -F, --no-fork            exec CMD without forking (it keeps the lock)\n"
	"      --fcntl              use fcntl(F_OFD_SETLK) rather than flock(2)\n"
	"      --start N            start offset of the locked range (implies --fcntl)\n"
	"      --length N           bytes locked (0: to the end; implies --fcntl)\n"
	"      --fd FD              lock FD and run CMD with it (the lock stays with\n"
	"                           FD's open file after CMD)\n"
	"      --verbose            say how long getting the lock took, what runs, and\n"
	"                           who holds it on a conflict\n"
	"  -h, --help               this text\n"
	"  -V, --version            holdfast's version\n"
	"\n"
	"FD form (`exec 9>FILE; holdfast flock -n 9`): the lock is on fd 9's open file\n"
	"and lasts as long as some process has it open (or until `holdfast flock -u 9`),\n"
	"as with flock(1).\n"
	"Exit: CMD's status (128+N if it died of signal N); 1 (or -E CODE) held or timed\n"
	"out; 64 usage; 65 lock error; 66 cannot open FILE; 69 cannot run CMD; 71 OS\n"
	"error; 73 FILE's file system read-only or full (flock(1)'s codes).\n";

struct fl_args {
	int type;            /* LOCK_EX, LOCK_SH, LOCK_UN */
	bool nonblock, have_timeout, do_close, nofork, verbose, fcntl_api, use_fd;
	struct timeval timeout;
	int conflict_exit;
	off_t start, length;
	int fd;
	const char *filename;
	char **cmd;
};

static void fl_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* flock(1)'s own messages: "flock: ..." on standard error (FK7). */
static void fl_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("flock: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* flock(1)'s usage error: "flock: WHAT 'ARG'" (WHAT NULL: none), a hint, 64. */
static int usage_fail(const char *what, const char *arg)
{
	if (what)
		fprintf(stderr, "flock: %s '%s'\n", what, arg);
	fputs("Try 'holdfast flock --help' for more information.\n", stderr);
	return HF_EXIT_USAGE;
}

/* ---- the record ----------------------------------------------------- */

/* The record's path for the file fd has open (FK6: 0 or -errno). */
static int rec_path(int fd, char *out, size_t n)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t len = hf_sys_readlinkat(AT_FDCWD, link, path, sizeof path - 1);
	if (len < 0)
		return (int)len;
	path[len] = '\0';
	if (path[0] != '/' || !strcmp(path, "/") || strstr(path, " (deleted)"))
		return -ENOENT;
	if ((size_t)snprintf(out, n, "%s%s", path, REC_SUFFIX) >= n)
		return -ENAMETOOLONG;
	return 0;
}

/* The command words of the holder, for the record. */
static void cmd_words(char **cmd, char *out, size_t n)
{
	size_t k = 0;
	out[0] = '\0';
	for (size_t i = 0; cmd && cmd[i] && k + 1 < n; i++)
		k += (size_t)snprintf(out + k, n - k, "%s%s", i ? " " : "", cmd[i]);
}

/* The record of the lock on fd (FK2, FK8): the holder's fields, and the
 * fence (exclusive) or "mode":"shared"; NULL when it cannot be made. */
static char *rec_text(int fd, const struct fl_args *a, uint64_t fence)
{
	struct stat st;
	if (hf_sys_fstat(fd, &st) < 0)
		return NULL;
	pid_t owner = getpid();
	char comm[HF_COMM_MAX + 1] = "", what[512];
	if (a->cmd) {
		cmd_words(a->cmd, what, sizeof what);
	} else {
		/* the FD form: the process holding the open file longest */
		if (cli_owner_find_holding(fd, &owner, comm, sizeof comm) < 0) {
			owner = getpid();
			snprintf(comm, sizeof comm, "holdfast");
		}
		snprintf(what, sizeof what, "%s", comm);
	}
	uint64_t pstart = 0;
	hf_pid_start(owner, &pstart);
	json_t *o = json_object();
	json_object_set_new(o, "holder", json_string("holdfast flock"));
	json_object_set_new(o, "pid", json_integer(owner));
	json_object_set_new(o, "pid_start", json_integer((json_int_t)pstart));
	json_object_set_new(o, "host", json_string(hf_host_name()));
	json_t *c = json_string(what);
	json_object_set_new(o, "command", c ? c : json_string(CLI_SHOW(what)));
	json_object_set_new(o, "locker", json_integer(getpid()));
	json_object_set_new(o, "dev", json_integer((json_int_t)st.st_dev));
	json_object_set_new(o, "ino", json_integer((json_int_t)st.st_ino));
	if (a->type == LOCK_SH)
		json_object_set_new(o, "mode", json_string("shared")); /* FK8: no fence */
	else
		json_object_set_new(o, "fence", json_integer((json_int_t)fence));
	json_object_set_new(o, "taken_ms", json_integer(hf_sys_now_ms()));
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

/* Write text (a record) to tmp, then rename it to path (FK2): 0 or -1. */
static int rec_publish(char *text, const char *tmp, const char *path)
{
	int ok = -1;
	int t = hf_sys_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
	if (t >= 0) {
		size_t n = strlen(text);
		text[n] = '\n';
		ok = hf_sys_write(t, text, n + 1) < 0 ? -1 : 0;
		hf_sys_close(t);
		if (ok == 0)
			ok = hf_sys_renameat2(AT_FDCWD, tmp, AT_FDCWD, path, 0);
		if (ok < 0)
			hf_sys_unlinkat(AT_FDCWD, tmp, 0);
	}
	return ok;
}

/* Step 3 (FK2, FK4, FK6): under the exclusive flock(2) lock on fd, write
 * the record; the fence, or 0 when no record was written. */
static uint64_t rec_write(int fd, const struct fl_args *a)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	if (rec_path(fd, path, sizeof path) < 0)
		return 0;
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	uint64_t prev = 0;
	json_t *old = hf_flockrec_read(path);
	if (old) {
		int64_t f = hf_flockrec_int(old, "fence");
		prev = f > 0 ? (uint64_t)f : 0;
		json_decref(old);
	}
	uint64_t now = (uint64_t)hf_sys_now_us();
	uint64_t fence = prev + 1 > now ? prev + 1 : now; /* FK4 */
	char *text = rec_text(fd, a, fence);
	if (!text)
		return 0;
	int ok = rec_publish(text, tmp, path);
	free(text);
	return ok == 0 ? fence : 0;
}

/* A temporary file "<locker>-<hex>.tmp" whose locker is gone: removed. */
static int tmp_sweep_cb(int dirfd, const char *name, void *ctx)
{
	int *seen = ctx;
	if (++*seen > HF_FLOCKREC_SHARED_MAX)
		return 1;
	size_t len = strlen(name);
	char *end;
	long pid = strtol(name, &end, 10);
	if (len > 4 && !strcmp(name + len - 4, ".tmp") && *end == '-' && pid > 0 &&
	    hf_sys_kill((pid_t)pid, 0) == -ESRCH)
		hf_sys_unlinkat(dirfd, name, 0);
	return 0;
}

/* FK9: remove the records in dir (FILE.holdfast-flock.d) that count for
 * nobody - read first, judged by /proc/locks read after them - and the
 * temporary files of lockers that are gone. st: the locked file. */
static void rec_sweep(const char *dir, const struct stat *st)
{
	json_t *recs = hf_flockrec_shared_read(dir);
	if (!recs)
		return;
	struct hf_kernel_lock k[64];
	int nk = hf_kernel_locks_on(st->st_dev, st->st_ino, k, 64);
	if (nk < 0 || nk > 64) {
		json_decref(recs); /* unknown, or more than we kept: judge nothing */
		return;
	}
	int dfd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (dfd < 0) {
		json_decref(recs);
		return;
	}
	size_t i;
	json_t *r;
	json_array_foreach(recs, i, r)
	{
		bool counts = false;
		for (int j = 0; j < nk && !counts; j++)
			counts = hf_flockrec_counts(r, &k[j], st); /* FK3 */
		const json_t *f = json_object_get(r, "file");
		if (!counts && json_is_string(f))
			hf_sys_unlinkat(dfd, json_string_value(f), 0); /* a name is written once */
	}
	json_decref(recs);
	int seen = 0;
	hf_dir_each(dfd, "", tmp_sweep_cb, &seen); /* the temporary files of lockers gone */
	hf_sys_close(dfd);
}

/* Step 3 for -s (FK8, FK6, FK9): under the shared flock(2) lock on fd,
 * sweep FILE.holdfast-flock.d and write this holder's own record there
 * (made if missing); its path in out (n bytes), or "" when none was
 * written. */
static void rec_write_shared(int fd, const struct fl_args *a, char *out, size_t n)
{
	char dir[PATH_MAX + 32], path[PATH_MAX + 80], tmp[PATH_MAX + 80];
	struct stat st;
	out[0] = '\0';
	if (rec_path(fd, dir, sizeof dir - 2) < 0 || hf_sys_fstat(fd, &st) < 0)
		return;
	strcat(dir, ".d");
	int rc = hf_sys_mkdirat(AT_FDCWD, dir, 0755);
	if (rc < 0 && rc != -EEXIST)
		return; /* FK6 */
	rec_sweep(dir, &st);
	unsigned char rnd[8];
	if (hf_sys_getrandom(rnd, sizeof rnd) < 0)
		return;
	char hex[17];
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	if ((size_t)snprintf(path, sizeof path, "%s/%ld-%s.json", dir, (long)getpid(), hex) >=
		    sizeof path ||
	    (size_t)snprintf(tmp, sizeof tmp, "%s/%ld-%s.tmp", dir, (long)getpid(), hex) >= sizeof tmp)
		return;
	char *text = rec_text(fd, a, 0);
	if (!text)
		return;
	if (rec_publish(text, tmp, path) == 0)
		snprintf(out, n, "%s", path);
	free(text);
}

/* The holders of the file at path (or fd >= 0) in words, for --verbose and
 * status: 0 free, 1 held (words in out); *holders (when given) the array
 * of hf_flock_holders, or NULL when it could not be made. */
static int holder_words(int fd, const char *path, char *out, size_t n, json_t **holders)
{
	struct stat st;
	if (holders)
		*holders = NULL;
	int rc = fd >= 0 ? hf_sys_fstat(fd, &st) : hf_sys_fstatat(AT_FDCWD, path, &st, 0);
	if (rc < 0) {
		snprintf(out, n, "unknown (%s)", hf_strerror(rc));
		return 1;
	}
	char rp[PATH_MAX + 32];
	bool have_rp = false;
	if (fd >= 0) {
		have_rp = rec_path(fd, rp, sizeof rp - 2) == 0;
	} else {
		char real[PATH_MAX];
		have_rp = hf_sys_realpath(path, real) == 0 && strcmp(real, "/") &&
			  (size_t)snprintf(rp, sizeof rp - 2, "%s%s", real, REC_SUFFIX) < sizeof rp - 2;
	}
	json_t *hs = hf_flock_holders(have_rp ? rp : NULL, &st); /* FK3, FK8 */
	if (!hs) {
		snprintf(out, n, "unknown (%s)", hf_strerror(-ENOMEM));
		return 1;
	}
	if (json_array_size(hs) == 0) {
		snprintf(out, n, "free");
		if (holders)
			*holders = hs;
		else
			json_decref(hs);
		return 0;
	}
	size_t len = 0, i;
	json_t *h;
	out[0] = '\0';
	json_array_foreach(hs, i, h)
	{
		if (len + 1 >= n)
			break;
		const json_t *cm = json_object_get(h, "command");
		const char *cmd = json_is_string(cm) ? json_string_value(cm) : NULL;
		const char *api = json_string_value(json_object_get(h, "api"));
		const char *mode = json_string_value(json_object_get(h, "mode"));
		int64_t pid = hf_flockrec_int(h, "pid");
		if (json_is_true(json_object_get(h, "record"))) {
			const json_t *hst = json_object_get(h, "host");
			int64_t age = hf_sys_now_ms() - hf_flockrec_int(h, "taken_ms");
			char fence[48] = "";
			if (json_object_get(h, "fence"))
				snprintf(fence, sizeof fence, ", fence %" PRId64,
					 hf_flockrec_int(h, "fence"));
			len += (size_t)snprintf(out + len, n - len,
						"%spid %" PRId64 " (%s) on %s, %" PRId64
						".%01" PRId64 " s old%s, %s %s",
						i ? "; " : "", pid, cmd ? cmd : "?",
						json_is_string(hst) ? json_string_value(hst) : "?",
						age / 1000, age / 100 % 10, fence, api, mode);
		} else {
			const json_t *rg = json_object_get(h, "range");
			char range[64] = "";
			if (json_is_string(rg))
				snprintf(range, sizeof range, " bytes %s", json_string_value(rg));
			if (pid > 0)
				len += (size_t)snprintf(out + len, n - len,
							"%spid %" PRId64 " (%s), %s %s%s, no holdfast record",
							i ? "; " : "", pid, cmd ? cmd : "ended", api,
							mode, range);
			else
				len += (size_t)snprintf(out + len, n - len,
							"%san open file (%s %s%s; the kernel names no pid)",
							i ? "; " : "", api, mode, range);
		}
		if (len >= n)
			len = n - 1;
	}
	if (holders)
		*holders = hs;
	else
		json_decref(hs);
	return 1;
}

/* `holdfast lock status FILE` for a regular file: its kernel locks, every
 * holder named (FK3, FK8). */
int cli_flock_status(const char *path, bool json)
{
	char words[4096];
	json_t *hs = NULL;
	int held = holder_words(-1, path, words, sizeof words, json ? &hs : NULL);
	if (json) {
		json_t *o = json_object();
		char abs[PATH_MAX];
		json_object_set_new(o, "path", json_string(cli_abs_path(path, abs, sizeof abs)));
		json_object_set_new(o, "state", json_string(held ? "held" : "free"));
		if (held) {
			bool ex = false;
			size_t i;
			json_t *h;
			json_array_foreach(hs, i, h)
			{
				const json_t *m = json_object_get(h, "mode");
				ex |= json_is_string(m) && !strcmp(json_string_value(m), "exclusive");
			}
			if (hs && json_array_size(hs))
				json_object_set_new(o, "mode",
						    json_string(ex ? "exclusive" : "shared"));
			json_object_set_new(o, "holder", json_string(words));
			if (hs)
				json_object_set(o, "holders", hs);
		}
		json_decref(hs);
		cli_json_print(o);
	} else {
		printf(held ? "held (kernel lock): %s\n" : "%s\n", words);
	}
	return HF_EXIT_OK;
}

/* ---- taking the lock ------------------------------------------------ */

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

/* flock(1)'s open: 0 or exits (said). */
static int open_file(const char *name, int *flags, int *fd)
{
	int fl = (*flags == 0 ? O_RDONLY : *flags) | O_NOCTTY | O_CREAT;
	int r = hf_sys_openat(AT_FDCWD, name, fl, 0666);
	if (r == -EISDIR) {
		fl = O_RDONLY | O_NOCTTY;
		r = hf_sys_openat(AT_FDCWD, name, fl, 0);
	}
	if (r < 0) {
		fl_warn("cannot open lock file %s: %s", CLI_SHOW(name), strerror(-r));
		if (r == -ENOMEM || r == -EMFILE || r == -ENFILE)
			return HF_EXIT_OSERR;
		if (r == -EROFS || r == -ENOSPC)
			return HF_EXIT_CANTCREAT;
		return EX_NOINPUT_;
	}
	hf_sys_fcntl_setfd(r, 0); /* CMD inherits it, as flock(1)'s child does */
	*flags = fl;
	*fd = r;
	return 0;
}

static int do_lock(const struct fl_args *a, int fd, bool nb)
{
	if (!a->fcntl_api)
		return hf_sys_flock_intr(fd, a->type | (nb ? LOCK_NB : 0));
	struct flock fl = {
		.l_type = a->type == LOCK_EX ? F_WRLCK : a->type == LOCK_SH ? F_RDLCK : F_UNLCK,
		.l_whence = SEEK_SET,
		.l_start = a->start,
		.l_len = a->length,
	};
	return hf_sys_fcntl_lock(fd, nb ? F_OFD_SETLK : F_OFD_SETLKW, &fl);
}

/* Step 2: 0 locked, or -1 with *code the exit code (said as flock(1)
 * says it; -E 0 makes a refusal's code 0, still a refusal: FK5). */
static int take(struct fl_args *a, int *fd, int *open_flags, int *code);
static int take_code(struct fl_args *a, int *fd, int *open_flags);

static int take(struct fl_args *a, int *fd, int *open_flags, int *code)
{
	*code = take_code(a, fd, open_flags);
	return *code == INT_MIN ? 0 : -1;
}

/* INT_MIN locked, else the exit code. */
static int take_code(struct fl_args *a, int *fd, int *open_flags)
{
	bool nb = a->nonblock;
	if (a->have_timeout && !a->timeout.tv_sec && !a->timeout.tv_usec)
		nb = true; /* -w 0 is -n */
	bool timer = a->have_timeout && !nb;
	if (timer) {
		struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
		sigemptyset(&sa.sa_mask);
		struct itimerval it = { .it_value = a->timeout };
		if (hf_sys_sigaction(SIGALRM, &sa, NULL) < 0 || hf_sys_setitimer(&it) < 0) {
			fl_warn("cannot set up timer");
			return HF_EXIT_OSERR;
		}
	}
	int rc;
	while ((rc = do_lock(a, *fd, nb)) < 0) {
		if (rc == -EWOULDBLOCK || rc == -EACCES) {
			if (a->verbose) {
				char who[2048];
				fl_warn("failed to get lock");
				if (holder_words(*fd, NULL, who, sizeof who, NULL))
					fl_warn("%s is held by %s",
						a->filename ? CLI_SHOW(a->filename) : "the file",
						who);
			}
			return a->conflict_exit; /* FK5 */
		}
		if (rc == -EINTR) {
			if (!timed_out)
				continue;
			if (a->verbose) {
				char who[2048];
				fl_warn("timeout while waiting to get lock");
				if (holder_words(*fd, NULL, who, sizeof who, NULL))
					fl_warn("%s is held by %s",
						a->filename ? CLI_SHOW(a->filename) : "the file",
						who);
			}
			return a->conflict_exit; /* FK5 */
		}
		if ((rc == -EIO || rc == -EBADF) && !(*open_flags & O_RDWR) &&
		    a->type != LOCK_SH && a->filename &&
		    hf_sys_access(a->filename, R_OK | W_OK) == 0) {
			/* flock(2) emulated by fcntl (NFS): again read-write */
			hf_sys_close(*fd);
			*open_flags = O_RDWR;
			int code = open_file(a->filename, open_flags, fd);
			if (code)
				return code;
			continue;
		}
		if (a->filename)
			fl_warn("%s: %s", CLI_SHOW(a->filename), strerror(-rc));
		else
			fl_warn("%d: %s", *fd, strerror(-rc));
		return rc == -ENOLCK || rc == -ENOMEM ? HF_EXIT_OSERR : HF_EXIT_DATAERR;
	}
	if (timer) {
		struct itimerval off = { 0 };
		hf_sys_setitimer(&off);
	}
	return INT_MIN;
}

/* ---- the command line ----------------------------------------------- */

static int parse_num(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	if (!*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_secs(const char *s, struct timeval *tv)
{
	char *end;
	if (!*s || *s == '-')
		return -1;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || *end || d < 0 || d > 1e9)
		return -1;
	tv->tv_sec = (time_t)d;
	tv->tv_usec = (suseconds_t)((d - (double)tv->tv_sec) * 1e6);
	return 0;
}

static void run_child(char **cmd)
{
	int e = -hf_sys_execvp(cmd[0], cmd);
	fl_warn("failed to execute %s: %s", CLI_SHOW(cmd[0]), strerror(e));
	_exit(e == ENOMEM ? HF_EXIT_OSERR : EX_UNAVAILABLE_);
}

enum { OPT_VERBOSE = 1000, OPT_FCNTL, OPT_START, OPT_LENGTH, OPT_FD };

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
		{ "start", required_argument, NULL, OPT_START },
		{ "length", required_argument, NULL, OPT_LENGTH },
		{ "fd", required_argument, NULL, OPT_FD },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct fl_args a = { .type = LOCK_EX, .conflict_exit = 1, .fd = -1 };
	bool cmd_opt = false;
	unsigned long long v;
	char *shcmd[4];
	if (argc < 2) {
		fl_warn("not enough arguments");
		return usage_fail(NULL, NULL);
	}
	optind = 1;
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "+:sexnoFuw:E:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			a.type = LOCK_SH;
			break;
		case 'x':
		case 'e':
			a.type = LOCK_EX;
			break;
		case 'u':
			a.type = LOCK_UN;
			break;
		case 'o':
			a.do_close = true;
			break;
		case 'F':
			a.nofork = true;
			break;
		case 'n':
			a.nonblock = true;
			break;
		case 'w':
			if (parse_secs(optarg, &a.timeout) < 0)
				return usage_fail("invalid timeout:", optarg);
			a.have_timeout = true;
			break;
		case 'E':
			if (parse_num(optarg, 255, &v) < 0)
				return usage_fail("invalid exit code (allowed values: 0-255):",
						  optarg);
			a.conflict_exit = (int)v;
			break;
		case OPT_FCNTL:
			a.fcntl_api = true;
			break;
		case OPT_START:
			if (parse_num(optarg, INT64_MAX, &v) < 0)
				return usage_fail("invalid as start offset:", optarg);
			a.start = (off_t)v;
			a.fcntl_api = true;
			break;
		case OPT_LENGTH:
			if (parse_num(optarg, INT64_MAX, &v) < 0)
				return usage_fail("invalid as length of lock range:", optarg);
			a.length = (off_t)v;
			a.fcntl_api = true;
			break;
		case OPT_FD:
			if (parse_num(optarg, INT_MAX, &v) < 0)
				return usage_fail("invalid file descriptor:", optarg);
			a.use_fd = true;
			a.fd = (int)v;
			break;
		case OPT_VERBOSE:
			a.verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return HF_EXIT_OK;
		case 'V':
			printf("holdfast flock (holdfast %s)\n", hf_version());
			return HF_EXIT_OK;
		default: {
			const char *bad = argv[optind - 1];
			if (!strcmp(bad, "-c") || !strcmp(bad, "--command")) {
				cmd_opt = true; /* flock(1): -c among the options */
				break;
			}
			if (opt == ':')
				return usage_fail("option requires an argument:", CLI_SHOW(bad));
			return usage_fail("unrecognized option", CLI_SHOW(bad));
		}
		}
		if (cmd_opt)
			break;
	}
	if (a.nofork && a.do_close) {
		fl_warn("the --no-fork and --close options are incompatible");
		return HF_EXIT_USAGE;
	}
	int open_flags = a.fcntl_api && a.type == LOCK_EX ? O_WRONLY : 0;
	const char *sh = getenv("SHELL");
	shcmd[0] = (char *)(sh && *sh ? sh : "/bin/sh");
	shcmd[1] = (char *)"-c";
	shcmd[3] = NULL;
	if (cmd_opt) {
		if (argc != optind + 1) {
			fl_warn("%s requires exactly one command argument", argv[optind - 1]);
			return HF_EXIT_USAGE;
		}
		shcmd[2] = argv[optind];
		a.cmd = shcmd;
	} else if (argc > optind + 1 && !a.use_fd) {
		const char *c = argv[optind + 1];
		if (!strcmp(c, "-c") || !strcmp(c, "--command")) {
			if (argc != optind + 3) {
				fl_warn("%s requires exactly one command argument", c);
				return HF_EXIT_USAGE;
			}
			shcmd[2] = argv[optind + 2];
			a.cmd = shcmd;
		} else {
			a.cmd = argv + optind + 1;
		}
		a.filename = argv[optind];
		int code = open_file(a.filename, &open_flags, &a.fd);
		if (code)
			return code;
	} else if (argc > optind) {
		if (a.use_fd)
			a.cmd = argv + optind;
		else if (parse_num(argv[optind], INT_MAX, &v) < 0)
			return usage_fail("invalid file descriptor:", CLI_SHOW(argv[optind]));
		else
			a.fd = (int)v;
	} else {
		fl_warn("%s", a.use_fd ? "missing command" : "missing file descriptor, file or directory");
		return HF_EXIT_USAGE;
	}
	if (a.fd < 0) {
		fl_warn("missing file descriptor, file or directory");
		return HF_EXIT_USAGE;
	}

	int64_t t0 = hf_sys_mono_ns();
	int code;
	if (take(&a, &a.fd, &open_flags, &code) < 0)
		return code; /* FK5: never CMD, never a record */
	char shared_rec[PATH_MAX + 80] = "";
	if (a.type == LOCK_EX && !a.fcntl_api) {
		uint64_t fence = rec_write(a.fd, &a); /* FK2, FK6 */
		char f[32];
		snprintf(f, sizeof f, "%" PRIu64, fence);
		if (fence)
			setenv("HOLDFAST_FENCE", f, 1);
	} else if (a.type == LOCK_SH && !a.fcntl_api) {
		rec_write_shared(a.fd, &a, shared_rec, sizeof shared_rec); /* FK8, FK6 */
		unsetenv("HOLDFAST_FENCE"); /* FK8: a shared holder has none */
	}
	if (a.verbose) {
		int64_t ns = hf_sys_mono_ns() - t0;
		printf("flock: getting lock took %" PRId64 ".%06" PRId64 " seconds\n",
		       ns / 1000000000, ns / 1000 % 1000000);
	}
	if (!a.cmd)
		return HF_EXIT_OK; /* FK1: the lock stays with the open file */
	struct sigaction dfl = { .sa_handler = SIG_DFL }; /* clear inherited settings */
	hf_sys_sigaction(SIGCHLD, &dfl, NULL);
	if (a.verbose)
		printf("flock: executing %s\n", a.cmd[0]);
	fflush(NULL);
	if (a.nofork)
		run_child(a.cmd);
	pid_t pid = hf_sys_fork();
	if (pid < 0) {
		fl_warn("fork failed: %s", strerror(-pid));
		return HF_EXIT_OSERR;
	}
	if (pid == 0) {
		if (a.do_close)
			hf_sys_close(a.fd);
		run_child(a.cmd);
	}
	int st;
	pid_t w;
	do
		w = hf_sys_waitpid(pid, &st, 0);
	while (w == -EINTR);
	if (shared_rec[0])
		hf_sys_unlinkat(AT_FDCWD, shared_rec, 0); /* FK8: CMD ended, still locked */
	if (w < 0) {
		fl_warn("waitpid failed: %s", strerror(-w));
		return 1;
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return HF_EXIT_OSERR;
}
