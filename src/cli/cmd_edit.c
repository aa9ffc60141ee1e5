/*
 * cmd_edit.c - `holdfast edit FILE [-n | -w SECS] [-E CODE] -- CMD [ARG...]`:
 * a locked, atomic read-modify-write of FILE by CMD (stdin: the old content,
 * stdout: the new).
 *
 * On-disk artifacts
 * -----------------
 *   FILE                the file edited: replaced whole by rename, never
 *                       written in place.
 *   FILE.lock/          the directory lock (dirlock.c) every edit of FILE
 *                       takes; `holdfast run --lock FILE.lock` excludes edits.
 *   FILE.tmp-<16 hex>   the replacement being written (hf_replace_file_at),
 *                       only while the lock is held.
 *
 * Steps
 * -----
 *   1. Block the forwarded signals (run.h); acquire FILE.lock for holdfast's
 *      own pid (holdfast, not CMD, commits the result).
 *   2. Sweep FILE.tmp-<16 hex> left by an edit killed while replacing (E3).
 *   3. Open FILE (O_NOFOLLOW); a missing FILE is fed as empty input.
 *   4. Run CMD with stdin = FILE, stdout = a pipe; collect its output.
 *   5. CMD exited 0: check the lock is still ours (E4), then replace FILE
 *      with the output: temporary, fsync, rename, fsync of the directory.
 *   6. Release the lock; exit 0, or CMD's status.
 *
 * Invariants
 * ----------
 *   (E1) FILE changes only by the rename of a complete, fsynced temporary:
 *        a crash at any instant leaves the old content or the new (U2).
 *   (E2) FILE is replaced only when CMD exited 0; otherwise it is untouched
 *        and CMD's status (128+N for signal N) is returned.
 *   (E3) Temporaries are made and swept only by the lock's holder, so one
 *        found while holding it was left by a dead edit (or by one whose
 *        lock was reaped: its rename then fails and it commits nothing).
 *   (E4) The result is committed only if the lock is still ours just
 *        before the rename: an edit whose lock was reaped as leaked (it
 *        outlived its recorded max-hold window, 10 min) does not overwrite
 *        its successor's work.
 *   (E5) FILE's mode is kept; a new FILE gets 0666 minus the umask.
 *   (E6) Every exit after step 1 releases the lock.
 *
 * Hazards
 * -------
 *   - E4 narrows, it does not fence: an edit paused between its check and
 *     its rename for longer than the max-hold window could still commit
 *     after a successor's. Edits are meant to be short.
 *   - CMD's output is held in memory before it is written.
 *   - The replaced FILE belongs to the editing user (rename makes a new
 *     inode); hard links to the old FILE keep the old content.
 */
#include "cli.h"
#include "claim.h"
#include "internal.h"
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char edit_usage[] =
	"usage: holdfast edit FILE [-n | -w SECS] [-E CODE] -- CMD [ARG...]\n"
	"\n"
	"Feed FILE to CMD's standard input and replace FILE atomically with CMD's\n"
	"standard output, only if CMD exits 0, under the directory lock FILE.lock.\n"
	"Concurrent edits of FILE are serialized: no update is lost, no reader ever\n"
	"sees a mix. A missing FILE is fed as empty input and created (mode 0666 minus\n"
	"the umask); an existing FILE keeps its mode.\n"
	"\n"
	"  -n, --nonblock   fail at once if another edit holds FILE.lock\n"
	"  -w, --wait SECS  wait at most SECS (also --timeout; default: wait forever)\n"
	"  -E, --conflict-exit-code CODE   exit code on conflict or timeout (default 1)\n"
	"\n"
	"Exit: 0 replaced; CMD's status when it failed (FILE untouched; 128+N if it\n"
	"died of signal N; 126 cannot run, 127 not found); 1 (or -E CODE) held by\n"
	"another or timed out; 64 usage; 77 FILE is a symlink; 70/71/73/74 errors.\n";

/* An edit is short: past this its lock may be reaped as leaked (E4). */
#define EDIT_MAX_HOLD_MS HF_LOCK_MAX_HOLD_MS_DEFAULT

struct sweep_ctx {
	size_t plen;
	int swept;
};

/* E3: remove FILE.tmp-<16 hex>, the only names hf_replace_file_at makes. */
static int sweep_one(int dirfd, const char *name, void *ctx)
{
	struct sweep_ctx *sc = ctx;
	const char *hex = name + sc->plen;
	if (strlen(hex) != 16 || strspn(hex, "0123456789abcdef") != 16)
		return 0;
	if (hf_sys_unlinkat(dirfd, name, 0) == 0)
		sc->swept++;
	return 0;
}

struct edit {
	const char *file;         /* as given                          */
	int dirfd;                /* FILE's directory                  */
	char base[NAME_MAX + 1];  /* FILE's name in it                 */
	char lock[PATH_MAX];      /* FILE.lock                         */
	struct hf_lock_info held; /* our lock                          */
};

/* E4: is FILE.lock still ours? A live holder loses its lock only by being
 * judged leaked: older, by its record's own time, than the max-hold window
 * it recorded (dirlock D6; the same wall clock as the reapers'). Younger, it
 * is ours for sure. Older, it must still be at FILE.lock with our token
 * (while a live lock sits in a claim as a barrier, this says no: refusing
 * is the safe side). */
static bool lock_still_ours(const struct edit *e)
{
	int64_t age = hf_sys_now_ms() - e->held.owner.time_ms;
	if (age >= 0 && age < EDIT_MAX_HOLD_MS - 1000)
		return true;
	struct hf_lock_info now;
	memset(&now, 0, sizeof now);
	return hf_lock_status(e->lock, &now) == 0 && !now.partial &&
	       !strcmp(now.owner.token, e->held.owner.token);
}

/* Steps 2-5, under the lock. The exit code. */
static int edit_locked(struct edit *e, char *const cmd[], struct cli_child *child)
{
	char prefix[NAME_MAX + 8];
	snprintf(prefix, sizeof prefix, "%s.tmp-", e->base);
	struct sweep_ctx sc = { .plen = strlen(prefix) };
	int rc = hf_claim_scan(e->dirfd, prefix, sweep_one, &sc); /* E3 */
	if (rc < 0) {
		cli_err("edit %s: cannot look for leftover temporaries: %s", e->file,
			hf_strerror(rc));
		return cli_exit_for(rc);
	}

	int in = hf_sys_openat(e->dirfd, e->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (in == -ENOENT)
		in = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0);
	else if (in >= 0) {
		struct stat st;
		rc = hf_sys_fstat(in, &st);
		if (rc < 0 || !S_ISREG(st.st_mode)) {
			hf_sys_close(in);
			if (rc < 0) {
				cli_err("edit %s: %s", e->file, hf_strerror(rc));
				return cli_exit_for(rc);
			}
			cli_err("edit %s: refused: not a regular file", e->file);
			return HF_EXIT_USAGE;
		}
	}
	if (in < 0) {
		if (in == -ELOOP)
			cli_err("edit %s: refused: it is a symlink (edit the file it points to)",
				e->file);
		else
			cli_err("edit %s: cannot read it: %s", e->file, hf_strerror(in));
		return cli_exit_for(in);
	}
	int p[2];
	rc = hf_sys_pipe2(p, O_CLOEXEC);
	if (rc == 0) {
		rc = cli_child_spawn(child, cmd, in, p[1]);
		hf_sys_close(p[1]);
		if (rc < 0)
			hf_sys_close(p[0]);
	}
	hf_sys_close(in);
	if (rc == 0) {
		rc = cli_child_go(child, NULL, 0);
		if (rc == -EPIPE)
			rc = 0; /* killed before exec: its status says so */
		if (rc < 0) {
			hf_sys_close(p[0]);
			cli_child_abort(child);
		}
	}
	if (rc < 0) {
		cli_err("edit %s: cannot start %s: %s", e->file, cmd[0], hf_strerror(rc));
		return cli_exit_for(rc);
	}
	char *out = NULL;
	size_t outlen = 0;
	int code = cli_child_wait(child, p[0], &out, &outlen);
	hf_sys_close(p[0]);
	if (code < 0) {
		cli_err("edit %s: waiting for %s: %s", e->file, cmd[0], hf_strerror(code));
		return cli_exit_for(code);
	}
	if (code != 0) {
		free(out);
		return code; /* E2: FILE untouched */
	}
	hf_sys_point("edit.output.read");
	if (!lock_still_ours(e)) { /* E4 */
		free(out);
		cli_err("edit %s: not replaced: the lock %s was taken from us while %s ran "
			"(it outlived the max-hold window)",
			e->file, e->lock, cmd[0]);
		return HF_EXIT_CONFLICT;
	}
	mode_t mode = 0666 & ~hf_sys_umask_get(); /* E5: for a new FILE */
	rc = hf_replace_file_at(e->dirfd, e->base, out ? out : "", outlen, mode, true); /* E1 */
	free(out);
	if (rc < 0) {
		cli_err("edit %s: cannot replace it: %s (unchanged)", e->file, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	return 0;
}

int cmd_edit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nonblock", no_argument, NULL, 'n' },
		{ "wait", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "conflict-exit-code", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cli_wait_opts w = { .wait_ms = -1, .conflict_exit = HF_EXIT_CONFLICT };
	struct edit e;
	memset(&e, 0, sizeof e);
	e.dirfd = -1;
	int code = 0, opt;
	optind = 1;
	opterr = 0;
	/* FILE comes first or among the options; CMD is the next operand. */
	for (;;) {
		opt = getopt_long(argc, argv, "+nw:E:h", longopts, NULL);
		if (opt == -1) {
			if (!e.file && optind < argc && strcmp(argv[optind - 1], "--")) {
				e.file = argv[optind++];
				continue;
			}
			break;
		}
		if (opt == 'h') {
			fputs(edit_usage, stdout);
			return HF_EXIT_OK;
		}
		if (opt == '?' || opt == ':') {
			cli_err("edit: unknown option or missing argument: %s", argv[optind - 1]);
			return HF_EXIT_USAGE;
		}
		if ((code = cli_wait_opt(&w, opt, optarg)) != 0)
			return code;
	}
	if (!e.file || optind >= argc) {
		cli_err("edit: give FILE and a command (holdfast edit FILE -- CMD [ARG...])");
		return HF_EXIT_USAGE;
	}
	char *const *cmd = argv + optind;
	size_t flen = strlen(e.file);
	if (flen == 0 || e.file[flen - 1] == '/') {
		cli_err("edit %s: not a file name", e.file);
		return HF_EXIT_USAGE;
	}
	int rc = hf_open_parent(e.file, &e.dirfd, e.base, sizeof e.base);
	if (rc == 0 && (size_t)snprintf(e.lock, sizeof e.lock, "%s.lock", e.file) >= sizeof e.lock)
		rc = -ENAMETOOLONG;
	if (rc < 0) {
		if (e.dirfd >= 0)
			hf_sys_close(e.dirfd);
		cli_err("edit %s: %s", e.file, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	struct cli_child child;
	/* Signals first, so a stop while waiting for the lock is seen. */
	rc = cli_child_init(&child);
	if (rc == 0) {
		/* holdfast commits the result: the lock is its own (pid 0) */
		struct hf_lock_opts o = { .path = e.lock, .max_hold_ms = EDIT_MAX_HOLD_MS };
		code = cli_lock_acquire(&o, cli_deadline(w.wait_ms), &child, &e.held);
		if (code != 0) {
			/* a refusal: CMD never runs; -E changes only the exit code */
			if (code == HF_EXIT_CONFLICT)
				code = w.conflict_exit;
		} else {
			hf_sys_point("edit.locked");
			code = edit_locked(&e, cmd, &child);
			struct hf_lock_info h;
			memset(&h, 0, sizeof h);
			rc = hf_lock_release(e.lock, e.held.owner.token, &h); /* E6 */
			if (rc < 0)
				cli_err("warning: lock %s: release: %s", e.lock, hf_strerror(rc));
		}
	} else {
		cli_err("edit %s: %s", e.file, hf_strerror(rc));
		code = cli_exit_for(rc);
	}
	cli_child_done(&child);
	hf_sys_close(e.dirfd);
	return code;
}
