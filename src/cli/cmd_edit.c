/*
 * cmd_edit.c - `holdfast edit FILE [-n | -w SECS] [-E CODE] [--init TEXT]
 * [--allow-empty] [--max-hold DUR] -- CMD [ARG...]`: a locked, atomic
 * read-modify-write of FILE by CMD (stdin: the old content, stdout: the new).
 *
 * On-disk artifacts
 * -----------------
 *   FILE                the file edited: replaced whole by rename, never
 *                       written in place.
 *   FILE.lock/          the directory lock (dirlock.c) every edit of FILE
 *                       takes, on behalf of CMD's process;
 *                       `holdfast run --lock FILE.lock` excludes edits.
 *   FILE.tmp-<16 hex>   the replacement being written (hf_stage_create),
 *                       only while the lock is held.
 *   (memfd)             CMD's standard input: a copy of FILE read under the
 *                       lock (or --init TEXT), an anonymous file in memory,
 *                       sealed before CMD runs (CMD cannot change it).
 *
 * Steps
 * -----
 *   1. Block the forwarded signals (run.h). Make CMD's input (an empty
 *      memfd) and output (a pipe); fork the child, blocked on the go pipe:
 *      it has not run CMD (R2).
 *   2. Acquire FILE.lock FOR THE CHILD'S PID (E8), waiting in slices that a
 *      stop signal ends. A refusal aborts the child: CMD never runs, and -E
 *      changes only the exit code.
 *   3. Sweep FILE.tmp-<16 hex> left by an edit killed while replacing (E3).
 *   4. Open FILE (O_NOFOLLOW, O_NONBLOCK) and judge it (E7); copy it into
 *      the memfd. A missing FILE: --init TEXT, or nothing, goes there.
 *   5. Send the go message; collect CMD's output until it exits (it stays a
 *      zombie, so its lock stays live: owner.c).
 *   6. CMD exited 0 with output (or --allow-empty): judge FILE again by its
 *      descriptor and stage the replacement with FILE's mode, owner and
 *      group (E5); under hf_dirlock_hold (E4) rename it over FILE only if FILE
 *      is still the object read, or over nothing when FILE was missing (E9);
 *      fsync the directory.
 *   7. Release the lock; then collect CMD (E6); exit 0, or the refusal's or
 *      CMD's status.
 *
 * Invariants
 * ----------
 *   (E1) FILE changes only by the rename of a complete, fsynced temporary:
 *        a crash at any instant leaves the old content or the new (U2).
 *   (E2) FILE is replaced only when CMD exited 0 and printed something (or
 *        --allow-empty was given); otherwise it is untouched and CMD's
 *        status (128+N for signal N), or 65 for an empty output, returned.
 *   (E3) Temporaries are made and swept only by the lock's holder, so one
 *        found while holding it was left by a dead edit (or by one whose
 *        lock was lost: E4 keeps it from committing). Only regular files of
 *        our own user with exactly that name form are swept.
 *   (E4) The result is committed only while the lock provably is ours:
 *        hf_dirlock_hold succeeds (the fence counter still shows our fence and
 *        FILE.lock still carries our token) and holds off every later
 *        acquirer's fence step until the rename is done. An edit whose lock
 *        was reaped (as leaked, or judged dead by a reaper on another clock
 *        or kernel) or acquired by another since commits nothing, exit 1.
 *        Never by its own idea of its age.
 *   (E5) The replacement grants nobody more than FILE did: FILE's mode as
 *        read from the descriptor opened in step 4 (never by name at commit
 *        time), without setuid, setgid and sticky bits; its owner and group
 *        kept (root: fchown; another user: the group when a member, else
 *        the group bits dropped). A new FILE gets 0666 minus the umask.
 *   (E6) Every exit after step 2 releases the lock, and CMD is collected
 *        only after that (a zombie whose parent lives counts as alive).
 *   (E7) FILE is refused (77, naming it and its owner) when it cannot be
 *        replaced safely: a symlink; not a regular file (64); owned by a
 *        user other than the one editing, unless that is root editing in a
 *        directory nobody else can write (the owner is then kept); or, in a
 *        directory others can write (another user's, or group/world-
 *        writable: /tmp), writable by group or others or with more than one
 *        hard link. A refusal never runs CMD.
 *   (E8) The lock names CMD's pid, never holdfast's (R1): a SIGKILLed edit
 *        leaves it held while CMD runs, reapable once CMD is gone, so no
 *        CMD of an edit runs after its lock is gone (up to --max-hold, past
 *        which the lock may be reaped as leaked and E4 refuses the commit).
 *        CMD runs only after the lock is held and FILE read (R2).
 *   (E9) The rename replaces only the object that was read: the name must
 *        still be FILE's inode (the open descriptor pins its number), or,
 *        for a missing FILE, nothing may have appeared (RENAME_NOREPLACE);
 *        otherwise 77, FILE as the other left it (U4).
 *
 * Hazards
 * -------
 *   - Between E9's look at the name and the rename, someone not holding the
 *     lock (in a directory others can write) may swap FILE: the swapped-in
 *     object is replaced by our result, which still grants nothing FILE did
 *     not (E5). Cooperating writers hold FILE.lock and cannot.
 *   - CMD's input is a copy of FILE in memory (the memfd) and its output is
 *     held in memory before it is written: edits are for small files.
 *   - The replaced FILE is a new inode (rename): hard links to the old FILE
 *     keep the old content; ACLs and extended attributes are not carried.
 *   - A CMD running past --max-hold (10 min by default) may see its lock
 *     reaped as leaked while it still runs; its result is then refused (E4)
 *     but its other side effects are its own.
 *   - E4 errs on the safe side: hf_dirlock_hold also says HF_ELOST when the
 *     lock was only moved aside and put back (a reaper that had judged the
 *     previous holder dead takes ours, sees another token, restores it)
 *     while another acquirer drew a fence and was denied, or when the put
 *     back failed and our record stays in the claim as a barrier. Nobody
 *     else entered, yet the edit exits 1 with FILE untouched. With 200 edits
 *     at once on 2 cores, 1-4 are refused so in about half the runs; the
 *     fix belongs to dirlock (tests/run/test_edit_hold.c reproduces it).
 */
#include "cli.h"
#include "claim.h"
#include "internal.h"
#include "run.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char edit_usage[] =
	"usage: holdfast edit FILE [-n | -w SECS] [-E CODE] [--init TEXT] [--allow-empty]\n"
	"                     [--max-hold DUR] -- CMD [ARG...]\n"
	"\n"
	"Feed FILE to CMD's standard input and replace FILE atomically with CMD's\n"
	"standard output, only if CMD exits 0 and prints something, under the\n"
	"directory lock FILE.lock, held on behalf of CMD's process. Concurrent edits\n"
	"of FILE are serialized: no update is lost, no reader ever sees a mix.\n"
	"\n"
	"  -n, --nonblock    fail at once if another edit holds FILE.lock\n"
	"  -w, --wait SECS   wait at most SECS (also --timeout; default: wait forever)\n"
	"  -E, --conflict-exit-code CODE   exit code on conflict or timeout (default 1);\n"
	"                    a conflict never runs CMD, whatever CODE is\n"
	"  --init TEXT       CMD's input when FILE does not exist (default: empty input)\n"
	"  --allow-empty     replace FILE even when CMD prints nothing (FILE emptied)\n"
	"  --max-hold DUR    how long the edit may hold FILE.lock before another may\n"
	"                    reap it as leaked (default 10m); its result is then refused\n"
	"\n"
	"FILE keeps its mode (without setuid/setgid bits), owner and group; when its\n"
	"group cannot be kept the group permissions are dropped. A new FILE gets 0666\n"
	"minus the umask. Refused (77): a symlink; a FILE of another user (root may\n"
	"edit one in a directory nobody else can write); in a directory others can\n"
	"write, a FILE writable by group or others or with several hard links; a FILE\n"
	"replaced by someone not holding FILE.lock while CMD ran.\n"
	"\n"
	"Exit: 0 replaced; CMD's status when it failed (FILE untouched; 128+N if it\n"
	"died of signal N; 126 cannot run, 127 not found); 1 (or -E CODE) held by\n"
	"another or timed out, and 1 when the lock was lost while CMD ran (FILE\n"
	"untouched); 65 CMD printed nothing (FILE untouched; see --allow-empty);\n"
	"64 usage or FILE not a regular file; 77 refused for safety (above);\n"
	"70/71/73/74 internal, OS, cannot-create, I/O errors.\n";

/* An edit is short: past this its lock may be reaped as leaked (E4, E8). */
#define EDIT_MAX_HOLD_MS HF_LOCK_MAX_HOLD_MS_DEFAULT

struct edit {
	const char *file;         /* as given                                 */
	int dirfd;                /* FILE's directory                         */
	char base[NAME_MAX + 1];  /* FILE's name in it                        */
	char lock[PATH_MAX];      /* FILE.lock                                */
	struct hf_dirlock_info held; /* our lock (CMD's pid)                     */
	const char *init;         /* --init TEXT, or NULL                     */
	bool allow_empty;         /* --allow-empty                            */
	int64_t max_hold_ms;      /* --max-hold                               */
	uid_t euid;
	bool dir_shared;          /* others can write FILE's directory (E7)   */
	int in;                   /* FILE as read; -1: FILE was missing       */
	struct stat st;           /* FILE when read                           */
	int input;                /* CMD's standard input (memfd)             */
	bool lost;                /* E4 found the lock no longer ours         */
};

/* The name of id in a passwd(5)/group(5)-style file ("name:x:id:..."),
 * read through the sys layer (a static binary has no NSS): "" if not found. */
static void id_name(const char *db, unsigned id, char *buf, size_t n)
{
	buf[0] = '\0';
	char *text;
	if (hf_read_file_at(AT_FDCWD, db, O_NONBLOCK, 4 << 20, &text, NULL, NULL) < 0)
		return;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		char *end;
		unsigned long v = strtoul(c2 + 1, &end, 10);
		if (end == c2 + 1 || *end != ':' || v != id)
			continue;
		*c1 = '\0';
		snprintf(buf, n, "%s", line);
		break;
	}
	free(text);
}

/* "uid 1000 (alice)" / "gid 100 (users)" */
static const char *id_shown(const char *kind, unsigned id, char *buf, size_t n)
{
	char name[128];
	id_name(!strcmp(kind, "uid") ? "/etc/passwd" : "/etc/group", id, name, sizeof name);
	if (name[0])
		snprintf(buf, n, "%s %u (%s)", kind, id, CLI_SHOW(name));
	else
		snprintf(buf, n, "%s %u", kind, id);
	return buf;
}
#define user_shown(uid, buf, n) id_shown("uid", (unsigned)(uid), buf, n)
#define group_shown(gid, buf, n) id_shown("gid", (unsigned)(gid), buf, n)

/* E7: can others than us (and root) write FILE's directory? */
static bool dir_shared(const struct stat *d, uid_t euid)
{
	return (d->st_uid != euid && d->st_uid != 0) || (d->st_mode & (S_IWGRP | S_IWOTH));
}

/* E7: may FILE, as it is now (st, from its descriptor), be replaced? 0, or
 * the exit code with a message printed. */
static int edit_judge(const struct edit *e, const struct stat *st)
{
	char who[300], me[300];
	if (!S_ISREG(st->st_mode)) {
		cli_err("edit %s: refused: not a regular file", e->file);
		return HF_EXIT_USAGE;
	}
	if (st->st_uid != e->euid && (e->euid != 0 || e->dir_shared)) {
		cli_err("edit %s: refused: it belongs to %s, not to %s who runs the edit%s; run the "
			"edit as its owner",
			e->file, user_shown(st->st_uid, who, sizeof who),
			user_shown(e->euid, me, sizeof me),
			e->dir_shared ? ", in a directory others can write" : "");
		return HF_EXIT_NOPERM;
	}
	if (e->dir_shared && (st->st_mode & (S_IWGRP | S_IWOTH))) {
		cli_err("edit %s: refused: it is writable by %s (mode %04o, owner %s) in a directory "
			"others can write",
			e->file, st->st_mode & S_IWOTH ? "everyone" : "its group",
			(unsigned)(st->st_mode & 07777), user_shown(st->st_uid, who, sizeof who));
		return HF_EXIT_NOPERM;
	}
	if (e->dir_shared && st->st_nlink != 1) {
		cli_err("edit %s: refused: it has %lu hard links (owner %s) in a directory others "
			"can write",
			e->file, (unsigned long)st->st_nlink, user_shown(st->st_uid, who, sizeof who));
		return HF_EXIT_NOPERM;
	}
	return 0;
}

struct sweep_ctx {
	size_t plen;
	uid_t euid;
	int swept;
};

/* E3: remove FILE.tmp-<16 hex>, the only names hf_stage_create makes, when
 * it is a regular file of ours. */
static int sweep_one(int dirfd, const char *name, void *ctx)
{
	struct sweep_ctx *sc = ctx;
	const char *hex = name + sc->plen;
	if (strlen(hex) != 16 || strspn(hex, "0123456789abcdef") != 16)
		return 0;
	struct stat st;
	if (hf_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != sc->euid)
		return 0;
	if (hf_sys_unlinkat(dirfd, name, 0) == 0)
		sc->swept++;
	return 0;
}

/* Step 4: CMD's input, a copy of FILE (or --init TEXT) at offset 0 of the
 * memfd the child already has as its future stdin. pwrite leaves the
 * shared file offset at 0. */
static int input_fill(struct edit *e)
{
	if (e->in < 0) {
		if (!e->init || !*e->init)
			return 0;
		ssize_t w = hf_sys_pwrite(e->input, e->init, strlen(e->init), 0);
		return w < 0 ? (int)w : 0;
	}
	char buf[65536];
	off_t off = 0;
	for (;;) {
		ssize_t r = hf_sys_pread(e->in, buf, sizeof buf, off);
		if (r < 0)
			return (int)r;
		if (r == 0)
			return 0;
		ssize_t w = hf_sys_pwrite(e->input, buf, (size_t)r, off);
		if (w < 0)
			return (int)w;
		off += r;
	}
}

/* Steps 3-4: sweep, open and judge FILE, fill CMD's input. 0 or the exit
 * code (message printed). */
static int edit_read(struct edit *e)
{
	char prefix[NAME_MAX + 8];
	snprintf(prefix, sizeof prefix, "%s.tmp-", e->base);
	struct sweep_ctx sc = { .plen = strlen(prefix), .euid = e->euid };
	int rc = hf_claim_scan(e->dirfd, prefix, sweep_one, &sc); /* E3 */
	if (rc < 0) {
		cli_err("edit %s: cannot look for leftover temporaries: %s", e->file,
			hf_strerror(rc));
		return cli_exit_for(rc);
	}
	int in = hf_sys_openat(e->dirfd, e->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (in == -ELOOP) {
		cli_err("edit %s: refused: it is a symlink (edit the file it points to)", e->file);
		return HF_EXIT_NOPERM; /* E7 */
	}
	if (in < 0 && in != -ENOENT) {
		cli_err("edit %s: cannot read it: %s", e->file, hf_strerror(in));
		return cli_exit_for(in);
	}
	e->in = in;
	if (in >= 0) {
		rc = hf_sys_fstat(in, &e->st);
		if (rc < 0) {
			cli_err("edit %s: %s", e->file, hf_strerror(rc));
			return cli_exit_for(rc);
		}
		if ((rc = edit_judge(e, &e->st)) != 0) /* E7 */
			return rc;
	}
	rc = input_fill(e);
	if (rc == 0) /* CMD reads it, never writes it */
		rc = hf_sys_add_seals(e->input, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK |
							F_SEAL_SEAL);
	if (rc < 0) {
		cli_err("edit %s: cannot read it: %s", e->file, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	return 0;
}

/* E4: the lock was lost while CMD ran. The exit code. */
static int edit_lost(struct edit *e)
{
	e->lost = true;
	cli_err("edit %s: not replaced: the lock %s is no longer ours (reaped, or taken by "
		"another, while CMD ran); FILE keeps what the other left",
		e->file, e->lock);
	return HF_EXIT_CONFLICT;
}

/* E9: FILE is no longer the object read, though the lock is ours. */
static int edit_replaced(const struct edit *e)
{
	cli_err("edit %s: refused: it was replaced or removed while CMD ran, by someone not "
		"holding %s; not replaced (CMD's output discarded)",
		e->file, e->lock);
	return HF_EXIT_NOPERM;
}

/* Step 6: stage, hold, check, rename. The exit code. */
static int edit_commit(struct edit *e, const char *out, size_t outlen)
{
	mode_t mode;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	struct stat now;
	int rc;
	if (e->in >= 0) {
		/* E5: FILE's mode, owner and group, from the descriptor read */
		rc = hf_sys_fstat(e->in, &now);
		if (rc < 0) {
			cli_err("edit %s: %s (unchanged)", e->file, hf_strerror(rc));
			return cli_exit_for(rc);
		}
		if (now.st_nlink == 0) { /* E9: gone from its name. By whom? */
			int guard = -1;
			rc = hf_dirlock_hold(e->lock, &e->held, &guard);
			hf_dirlock_unhold(guard);
			return rc == HF_ELOST ? edit_lost(e) : edit_replaced(e);
		}
		if ((rc = edit_judge(e, &now)) != 0) /* E7, again: it may have changed */
			return rc;
		mode = now.st_mode & 0777;
		if (now.st_mode & 07000)
			cli_err("edit %s: note: the replacement drops the setuid, setgid and sticky bits "
				"(mode %04o, now %04o)",
				e->file, (unsigned)(now.st_mode & 07777), (unsigned)mode);
		if (e->euid == 0)
			uid = now.st_uid;
		gid = now.st_gid;
	} else {
		mode = 0666 & ~hf_sys_umask_get(); /* E5: a new FILE */
	}
	assert(!(mode & 07000)); /* E5 */
	struct hf_stage stage;
	rc = hf_stage_create(e->dirfd, e->base, out ? out : "", outlen, mode, uid, gid, &stage);
	if (rc < 0) {
		cli_err("edit %s: cannot write its replacement: %s (unchanged)", e->file,
			hf_strerror(rc));
		return cli_exit_for(rc);
	}
	assert(stage.mode == mode || (stage.group_dropped && stage.mode == (mode & ~070u))); /* E5 */
	if (stage.group_dropped) {
		char g[300], ng[300];
		cli_err("edit %s: note: its group %s cannot be kept (the editing user is not in it): "
			"the replacement has group %s without group permissions (mode %04o)",
			e->file, group_shown(gid, g, sizeof g), group_shown(stage.gid, ng, sizeof ng),
			(unsigned)stage.mode);
	}
	hf_sys_point(HF_PT_EDIT_STAGED);
	int guard = -1;
	rc = hf_dirlock_hold(e->lock, &e->held, &guard); /* E4 */
	if (rc < 0) {
		hf_stage_discard(e->dirfd, &stage);
		if (rc == HF_ELOST)
			return edit_lost(e);
		cli_err("edit %s: not replaced: cannot make sure the lock %s is still ours: %s",
			e->file, e->lock, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	hf_sys_point(HF_PT_EDIT_HELD);
	rc = hf_stage_commit(e->dirfd, &stage, e->base, e->in >= 0 ? &e->st : NULL); /* E9, E1 */
	hf_dirlock_unhold(guard);
	if (rc < 0) {
		hf_stage_discard(e->dirfd, &stage);
		if (rc == -ESTALE)
			return edit_replaced(e);
		if (rc == -EEXIST) {
			cli_err("edit %s: refused: it was created while CMD ran, by someone not holding "
				"%s; not replaced (CMD's output discarded)",
				e->file, e->lock);
			return HF_EXIT_NOPERM;
		}
		cli_err("edit %s: cannot replace it: %s (unchanged)", e->file, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	rc = hf_sys_fsync(e->dirfd);
	if (rc < 0) {
		cli_err("edit %s: replaced, but its directory cannot be synced: %s", e->file,
			hf_strerror(rc));
		return cli_exit_for(rc);
	}
	return 0;
}

/* Steps 3-6, under the lock. The exit code. */
static int edit_locked(struct edit *e, char *const cmd[], struct cli_child *child, int out_rd)
{
	int code = edit_read(e);
	if (code != 0)
		return code; /* E7: CMD never runs */
	int rc = cli_child_go(child, NULL, 0, &e->held.live_fd, 1); /* the lock's kernel lock */
	if (rc < 0 && rc != -EPIPE) { /* -EPIPE: killed before exec: its status says so */
		cli_err("edit %s: cannot start %s: %s", e->file, CLI_SHOW(cmd[0]), hf_strerror(rc));
		return cli_exit_for(rc);
	}
	char *out = NULL;
	size_t outlen = 0;
	code = cli_child_wait(child, out_rd, &out, &outlen);
	if (code < 0) {
		cli_err("edit %s: waiting for %s: %s", e->file, CLI_SHOW(cmd[0]), hf_strerror(code));
		return cli_exit_for(code);
	}
	if (code != 0) {
		free(out);
		return code; /* E2: FILE untouched */
	}
	hf_sys_point(HF_PT_EDIT_OUTPUT_READ);
	if (outlen == 0 && !e->allow_empty) { /* E2 */
		free(out);
		cli_err("edit %s: not replaced: %s exited 0 but printed nothing (give --allow-empty "
			"to empty FILE%s)",
			e->file, CLI_SHOW(cmd[0]),
			e->in < 0 && !e->init ? "; FILE does not exist: --init TEXT gives CMD an input"
					      : "");
		return HF_EXIT_DATAERR;
	}
	code = edit_commit(e, out, outlen);
	free(out);
	return code;
}

int cmd_edit(int argc, char **argv)
{
	enum { OPT_INIT = 0x100, OPT_ALLOW_EMPTY, OPT_MAX_HOLD };
	static const struct option longopts[] = {
		{ "nonblock", no_argument, NULL, 'n' },
		{ "wait", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "conflict-exit-code", required_argument, NULL, 'E' },
		{ "init", required_argument, NULL, OPT_INIT },
		{ "allow-empty", no_argument, NULL, OPT_ALLOW_EMPTY },
		{ "max-hold", required_argument, NULL, OPT_MAX_HOLD },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cli_wait_opts w = { .wait_ms = -1, .conflict_exit = HF_EXIT_CONFLICT };
	struct edit e;
	memset(&e, 0, sizeof e);
	e.dirfd = e.in = e.input = -1;
	e.max_hold_ms = EDIT_MAX_HOLD_MS;
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
		switch (opt) {
		case 'h':
			fputs(edit_usage, stdout);
			return HF_EXIT_OK;
		case OPT_INIT:
			e.init = optarg;
			continue;
		case OPT_ALLOW_EMPTY:
			e.allow_empty = true;
			continue;
		case OPT_MAX_HOLD:
			if (cli_parse_duration(optarg, &e.max_hold_ms) < 0 || e.max_hold_ms <= 0) {
				cli_err("--max-hold %s: not a duration (e.g. 10m, 90s, 500ms)",
					CLI_SHOW(optarg));
				return HF_EXIT_USAGE;
			}
			continue;
		case '?':
		case ':':
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
	e.euid = geteuid();
	struct stat dst;
	int rc = hf_open_parent(e.file, &e.dirfd, e.base, sizeof e.base);
	if (rc == 0 && (size_t)snprintf(e.lock, sizeof e.lock, "%s.lock", e.file) >= sizeof e.lock)
		rc = -ENAMETOOLONG;
	if (rc == 0)
		rc = hf_sys_fstat(e.dirfd, &dst);
	if (rc < 0) {
		if (e.dirfd >= 0)
			hf_sys_close(e.dirfd);
		cli_err("edit %s: %s", e.file, hf_strerror(rc));
		return cli_exit_for(rc);
	}
	e.dir_shared = dir_shared(&dst, e.euid);

	/* Step 1: signals first, so a stop while waiting for the lock is seen;
	 * then the child, blocked, with its input and output. */
	struct cli_child child;
	int out[2] = { -1, -1 };
	rc = cli_child_init(&child);
	if (rc == 0)
		rc = e.input = hf_sys_memfd_create("holdfast-edit", MFD_ALLOW_SEALING);
	if (rc >= 0)
		rc = hf_sys_pipe2(out, O_CLOEXEC);
	if (rc >= 0)
		rc = cli_child_spawn(&child, cmd, e.input, out[1]);
	if (out[1] >= 0)
		hf_sys_close(out[1]);
	if (rc < 0) {
		cli_err("edit %s: cannot start %s: %s", e.file, CLI_SHOW(cmd[0]), hf_strerror(rc));
		code = cli_exit_for(rc);
		goto out;
	}
	/* Step 2: the lock lives as long as CMD (E8); an edit is short, past
	 * max-hold it may be reaped as leaked and E4 refuses its result. */
	struct hf_dirlock_opts o = { .path = e.lock, .pid = child.pid, .max_hold_ms = e.max_hold_ms };
	code = cli_lock_acquire(&o, cli_deadline(w.wait_ms), &child, &e.held);
	if (code != 0) {
		/* a refusal: CMD never runs (R2); -E changes only the exit code */
		cli_child_abort(&child);
		if (code == HF_EXIT_CONFLICT)
			code = w.conflict_exit;
		goto out;
	}
	hf_sys_point(HF_PT_EDIT_LOCKED);
	code = edit_locked(&e, cmd, &child, out[0]);
	struct hf_dirlock_info h;
	memset(&h, 0, sizeof h);
	rc = hf_dirlock_release(e.lock, e.held.owner.token, &h); /* E6 */
	hf_sys_close(e.held.live_fd);
	if (rc < 0 && !(e.lost && (rc == HF_ENOTHELD || rc == HF_ENOTYOURS)))
		cli_err("warning: lock %s: release: %s", e.lock, hf_strerror(rc));
	cli_child_abort(&child); /* E6: after the release; never started: it exits */
out:
	cli_child_done(&child);
	if (out[0] >= 0)
		hf_sys_close(out[0]);
	if (e.input >= 0)
		hf_sys_close(e.input);
	if (e.in >= 0)
		hf_sys_close(e.in);
	hf_sys_close(e.dirfd);
	return code;
}
