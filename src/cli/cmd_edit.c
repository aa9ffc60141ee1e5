/*
 * cmd_edit.c - `holdfast edit FILE [-n | -w SECS] [-E CODE] [--init TEXT]
 * [--allow-empty] [--max-hold DUR] -- CMD [ARG...]`: a locked, atomic
 * read-modify-write of FILE by CMD (stdin: the old content, stdout: the new).
 *
 * The protocol of the replacement is the library's (hf_edit, src/lib/edit.c:
 * ED1-ED6); this file runs CMD under FILE.lock and words the outcome.
 *
 * On-disk artifacts
 * -----------------
 *   FILE.lock/          the directory lock every edit of FILE takes, on
 *                       behalf of CMD's process; `holdfast run --lock
 *                       FILE.lock` excludes edits.
 *   (memfd)             CMD's standard input: a copy of FILE read under the
 *                       lock (or --init TEXT), an anonymous file in memory,
 *                       sealed before CMD runs (CMD cannot change it).
 *   FILE, FILE.tmp-*    hf_edit's (edit.c).
 *
 * Steps
 * -----
 *   1. Start CMD's process blocked (supervise.c), its input an empty memfd,
 *      its output a pipe.
 *   2. Acquire FILE.lock FOR THE CHILD'S PID (EC3), waiting in the library;
 *      a stop signal ends the wait. A refusal aborts the child: CMD never
 *      runs, and -E changes only the exit code.
 *   3. hf_edit_open: leftovers swept, FILE judged and opened (ED2, ED4);
 *      copy it (or --init TEXT) into the memfd and seal it.
 *   4. Let CMD run; collect its output until it exits (it stays a zombie, so
 *      its lock stays live: SV2).
 *   5. CMD exited 0 with output (or --allow-empty): hf_edit_commit (ED1,
 *      ED3, ED5, ED6).
 *   6. Release the lock; then collect CMD (EC2); exit 0, or the refusal's or
 *      CMD's status.
 *
 * Invariants
 * ----------
 *   (EC1) FILE is replaced only when CMD exited 0 and printed something (or
 *         --allow-empty was given); otherwise it is untouched and CMD's
 *         status (128+N for signal N), or 65 for an empty output, returned.
 *   (EC2) Every exit after step 2 releases the lock, and CMD is collected
 *         only after that (a zombie whose parent lives counts as alive).
 *   (EC3) The lock names CMD's pid, never holdfast's (RUN1): a SIGKILLed
 *         edit leaves it held while CMD runs, reapable once CMD is gone, so
 *         no CMD of an edit runs after its lock is gone (up to --max-hold,
 *         past which the lock may be reaped as leaked and ED1 refuses the
 *         commit). CMD runs only after the lock is held and FILE read.
 *
 * Hazards
 * -------
 *   - CMD's input is a copy of FILE in memory (the memfd) and its output is
 *     held in memory before it is written: edits are for small files.
 *   - A CMD running past --max-hold (10 min by default) may see its lock
 *     reaped as leaked while it still runs; its result is then refused (ED1)
 *     but its other side effects are its own.
 *   - With 200 edits at once on 2 cores, 1-4 are refused by ED1's safe side
 *     (edit.c, Hazards) in about half the runs: exit 1, FILE untouched.
 */
#include "cli.h"
#include "file.h"
#include "run.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
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
	"  --backend URI     where FILE.lock lives: etcd://HOST:PORT[,...] (etcds:// for\n"
	"                    https; default $HOLDFAST_BACKEND, else the file system);\n"
	"                    FILE stays where it is. --ttl, --etcd-user,\n"
	"                    --etcd-password-file, --etcd-ca, --etcd-timeout as for\n"
	"                    'holdfast lock'\n"
	"  --init TEXT       CMD's input when FILE does not exist (default: empty input)\n"
	"  --allow-empty     replace FILE even when CMD prints nothing (FILE emptied)\n"
	"  --max-hold DUR    how long the edit may hold FILE.lock before another may\n"
	"                    reap it as leaked (default 10m); its result is then refused\n"
	"  -v, --verbose     say what a wait waits for and how long getting the lock took\n"
	"  -h, --help; -V, --version\n"
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
	"70/71/73/74 internal, OS, cannot-create, I/O errors.\n"
	"--json: once CMD has ended, one JSON object on stdout (FILE, the lock with its\n"
	"token and fence, \"replaced\", CMD's exit or signal; CMD's output goes to FILE,\n"
	"never to stdout); a refusal prints the error object (holdfast(1): JSON OUTPUT).\n";

/* An edit is short: past this its lock may be reaped as leaked (ED1, EC3). */
#define EDIT_MAX_HOLD_MS (10 * 60 * 1000)

struct edit {
	const char *file;         /* as given                                 */
	char lock[PATH_MAX];      /* FILE.lock                                */
	const char *init;         /* --init TEXT, or NULL                     */
	bool allow_empty;         /* --allow-empty                            */
	int64_t max_hold_ms;      /* --max-hold                               */
	hf_lock *l;               /* FILE.lock, for CMD's pid                 */
	hf_edit *ed;              /* once opened                              */
	int input;                /* CMD's standard input (memfd)             */
	bool lost;                /* ED1 found the lock no longer ours        */
	bool ran;                 /* CMD ran and ended (--json's object)      */
	bool replaced;            /* FILE was replaced                        */
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

/* The record's integer at field, or def. */
static int64_t rec_int(const hf_rec *r, const char *field, int64_t def)
{
	int64_t v;
	return hf_rec_int(r, field, &v) == 0 ? v : def;
}

/* A refusal of FILE (hf_edit_open's record, or the commit's notes) in
 * words; the exit code. */
static int edit_refused(const struct edit *e, int rc, const hf_rec *why)
{
	const char *reason = hf_rec_str(why, "reason");
	char who[300], me[300];
	uid_t uid = (uid_t)rec_int(why, "uid", -1);
	bool shared = rec_int(why, "dir_shared", 0) != 0;
	if (!reason)
		reason = "";
	if (!strcmp(reason, "symlink")) {
		cli_err("edit %s: refused: it is a symlink (edit the file it points to)", e->file);
	} else if (!strcmp(reason, "not_regular")) {
		cli_err("edit %s: refused: not a regular file", e->file);
		return HF_EXIT_USAGE;
	} else if (!strcmp(reason, "owner")) {
		cli_err("edit %s: refused: it belongs to %s, not to %s who runs the edit%s; run the "
			"edit as its owner",
			e->file, user_shown(uid, who, sizeof who),
			user_shown(rec_int(why, "euid", geteuid()), me, sizeof me),
			shared ? ", in a directory others can write" : "");
	} else if (!strcmp(reason, "writable")) {
		unsigned mode = (unsigned)rec_int(why, "mode", 0);
		cli_err("edit %s: refused: it is writable by %s (mode %04o, owner %s) in a directory "
			"others can write",
			e->file, mode & S_IWOTH ? "everyone" : "its group", mode,
			user_shown(uid, who, sizeof who));
	} else if (!strcmp(reason, "links")) {
		cli_err("edit %s: refused: it has %lld hard links (owner %s) in a directory others "
			"can write",
			e->file, (long long)rec_int(why, "nlink", 0), user_shown(uid, who, sizeof who));
	} else if (!strcmp(reason, "replaced")) {
		cli_err("edit %s: refused: it was replaced or removed while CMD ran, by someone not "
			"holding %s; not replaced (CMD's output discarded)",
			e->file, e->lock);
	} else if (!strcmp(reason, "created")) {
		cli_err("edit %s: refused: it was created while CMD ran, by someone not holding "
			"%s; not replaced (CMD's output discarded)",
			e->file, e->lock);
	} else {
		cli_err("edit %s: refused: %s", e->file, hf_strerror(rc));
	}
	int code = rc == -EISDIR || rc == -EINVAL ? HF_EXIT_USAGE : HF_EXIT_NOPERM;
	return cli_fail(code, code == HF_EXIT_NOPERM ? "unsafe" : hf_error_name(rc), e->file, NULL);
}

/* Step 3: CMD's input, a copy of FILE (or --init TEXT) at offset 0 of the
 * memfd the child already has as its future stdin. pwrite leaves the
 * shared file offset at 0. */
static int input_fill(struct edit *e)
{
	int in = hf_edit_fd(e->ed);
	if (in < 0) {
		if (!e->init || !*e->init)
			return 0;
		ssize_t w = hf_sys_pwrite(e->input, e->init, strlen(e->init), 0);
		return w < 0 ? (int)w : 0;
	}
	char buf[65536];
	off_t off = 0;
	for (;;) {
		ssize_t r = hf_sys_pread(in, buf, sizeof buf, off);
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

/* Step 3: open and judge FILE, fill CMD's input. 0 or the exit code
 * (message printed). */
static int edit_read(struct edit *e)
{
	hf_rec *why = NULL;
	int rc = hf_edit_open(e->l, e->file, &e->ed, &why);
	if (rc < 0) {
		int code;
		if (why)
			code = edit_refused(e, rc, why); /* ED4: CMD never runs */
		else {
			cli_err("edit %s: cannot read it: %s", e->file, hf_strerror(rc));
			code = cli_fail_rc(rc, e->file, NULL);
		}
		hf_rec_free(why);
		return code;
	}
	rc = input_fill(e);
	if (rc == 0) /* CMD reads it, never writes it */
		rc = hf_sys_add_seals(e->input, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK |
							F_SEAL_SEAL);
	if (rc < 0) {
		cli_err("edit %s: cannot read it: %s", e->file, hf_strerror(rc));
		return cli_fail_rc(rc, e->file, NULL);
	}
	return 0;
}

/* Step 5: commit, and say what the replacement could not keep. */
static int edit_commit(struct edit *e, const char *out, size_t outlen)
{
	int rc = hf_edit_commit(e->ed, out, outlen);
	const hf_rec *n = hf_edit_notes(e->ed);
	int64_t dropped = rec_int(n, "dropped_mode", 0);
	if (rc == 0 && dropped) {
		unsigned mode = (unsigned)rec_int(n, "mode", 0);
		cli_err("edit %s: note: the replacement drops the setuid, setgid and sticky bits "
			"(mode %04o, now %04o)",
			e->file, mode, mode & 0777u);
	}
	if (rc == 0 && rec_int(n, "group_dropped", 0)) {
		char g[300], ng[300];
		cli_err("edit %s: note: its group %s cannot be kept (the editing user is not in it): "
			"the replacement has group %s without group permissions (mode %04o)",
			e->file, group_shown(rec_int(n, "gid", -1), g, sizeof g),
			group_shown(rec_int(n, "new_gid", -1), ng, sizeof ng),
			(unsigned)rec_int(n, "new_mode", 0));
	}
	if (rc == 0) {
		e->replaced = true;
		return 0;
	}
	if (rc == HF_ELOST) {
		e->lost = true;
		cli_err("edit %s: not replaced: the lock %s is no longer ours (reaped, or taken by "
			"another, while CMD ran); FILE keeps what the other left",
			e->file, e->lock);
		return cli_fail(HF_EXIT_CONFLICT, hf_error_name(rc), e->lock, NULL);
	}
	if (hf_rec_str(n, "reason") && (rc == HF_EUNSAFE || rc == -EISDIR || rc == -EINVAL))
		return edit_refused(e, rc, n);
	if (rec_int(n, "replaced", 0))
		cli_err("edit %s: replaced, but its directory cannot be synced: %s", e->file,
			hf_strerror(rc));
	else
		cli_err("edit %s: not replaced: %s (unchanged)", e->file, hf_strerror(rc));
	e->replaced = rec_int(n, "replaced", 0) != 0;
	return cli_fail_rc(rc, e->file, NULL);
}

/* Steps 3-5, under the lock. The exit code. */
static int edit_locked(struct edit *e, char *const cmd[], struct cli_child *child, int out_rd)
{
	int code = edit_read(e);
	if (code != 0)
		return code; /* ED4: CMD never runs */
	int live = hf_lock_fd(e->l); /* the lock's kernel lock (RUN8) */
	int rc = cli_child_go(child, NULL, 0, &live, live >= 0 ? 1 : 0);
	if (rc < 0 && rc != -EPIPE) { /* -EPIPE: killed before exec: its status says so */
		cli_err("edit %s: cannot start %s: %s", e->file, CLI_SHOW(cmd[0]), hf_strerror(rc));
		return cli_fail_rc(rc, e->file, NULL);
	}
	char *out = NULL;
	size_t outlen = 0;
	code = cli_child_wait(child, out_rd, &out, &outlen);
	if (code < 0) {
		cli_err("edit %s: waiting for %s: %s", e->file, CLI_SHOW(cmd[0]), hf_strerror(code));
		return cli_fail_rc(code, e->file, NULL);
	}
	e->ran = true;
	if (code != 0) {
		free(out);
		return code; /* EC1: FILE untouched */
	}
	hf_sys_point(HF_PT_EDIT_OUTPUT_READ);
	if (outlen == 0 && !e->allow_empty) { /* EC1 */
		free(out);
		cli_err("edit %s: not replaced: %s exited 0 but printed nothing (give --allow-empty "
			"to empty FILE%s)",
			e->file, CLI_SHOW(cmd[0]),
			hf_edit_fd(e->ed) < 0 && !e->init
				? "; FILE does not exist: --init TEXT gives CMD an input"
				: "");
		return cli_fail(HF_EXIT_DATAERR, "empty_output", e->file, NULL);
	}
	code = edit_commit(e, out, outlen);
	free(out);
	return code;
}

int cmd_edit(int argc, char **argv)
{
	enum { OPT_INIT = 0x100, OPT_ALLOW_EMPTY, OPT_MAX_HOLD };
	static const struct option longopts[] = {
		CLI_WAIT_LONGOPTS,
		CLI_BACKEND_LONGOPTS,
		{ "init", required_argument, NULL, OPT_INIT },
		{ "allow-empty", no_argument, NULL, OPT_ALLOW_EMPTY },
		{ "max-hold", required_argument, NULL, OPT_MAX_HOLD },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'J' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct cli_wait_opts w = { .wait_ms = -1, .conflict_exit = HF_EXIT_CONFLICT };
	struct edit e;
	memset(&e, 0, sizeof e);
	e.input = -1;
	e.max_hold_ms = EDIT_MAX_HOLD_MS;
	int code = 0, opt;
	optind = 1;
	opterr = 0;
	/* FILE comes first or among the options; CMD is the next operand. */
	for (;;) {
		opt = getopt_long(argc, argv, "+nw:E:hvV", longopts, NULL);
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
		case 'v':
			cli_verbose = true;
			continue;
		case 'V':
			return cli_version();
		case OPT_INIT:
			e.init = optarg;
			continue;
		case OPT_ALLOW_EMPTY:
			e.allow_empty = true;
			continue;
		case 'J':
			cli_json_enable();
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
		if ((code = cli_backend_opt(opt, optarg)) < 0) {
			code = 0;
			continue;
		}
		if (code || (code = cli_wait_opt(&w, opt, optarg)) != 0)
			return code;
	}
	if (!e.file || optind >= argc) {
		cli_err("edit: give FILE and a command (holdfast edit FILE -- CMD [ARG...])");
		return HF_EXIT_USAGE;
	}
	char *const *cmd = argv + optind;
	cli_subject(e.file);
	size_t flen = strlen(e.file);
	if (flen == 0 || e.file[flen - 1] == '/') {
		cli_err("edit %s: not a file name", e.file);
		return HF_EXIT_USAGE;
	}
	/* FILE's directory must be there before CMD is started */
	char dir[PATH_MAX], base[NAME_MAX + 1];
	struct stat dst;
	int rc = hf_path_split(e.file, dir, sizeof dir, base, sizeof base);
	if (rc == 0 && strlen(base) + strlen(".tmp-") + 16 > NAME_MAX) {
		/* its staged copy (edit.c) would not fit: refused before CMD */
		cli_err("edit %s: file name too long: its staged copy %s.tmp-XXXXXXXXXXXXXXXX beside "
			"it would pass %d bytes; nothing ran",
			CLI_SHOW(e.file), CLI_SHOW(base), NAME_MAX);
		return cli_fail(HF_EXIT_USAGE, hf_error_name(-ENAMETOOLONG), e.file, NULL);
	}
	if (rc == 0 && (size_t)snprintf(e.lock, sizeof e.lock, "%s.lock", e.file) >= sizeof e.lock)
		rc = -ENAMETOOLONG;
	if (rc == 0)
		rc = hf_sys_fstatat(AT_FDCWD, dir, &dst, 0);
	if (rc == 0 && !S_ISDIR(dst.st_mode))
		rc = -ENOTDIR;
	if (rc == 0)
		rc = hf_lock_new(e.lock, &e.l);
	if (rc < 0) {
		cli_err("edit %s: %s", e.file, hf_strerror(rc));
		return cli_fail_rc(rc, e.file, NULL);
	}
	if ((code = cli_backend_apply(e.l, e.lock)) != 0) {
		hf_lock_free(e.l);
		return code;
	}

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
		code = cli_fail_rc(rc, e.file, NULL);
		goto out;
	}
	/* Step 2: the lock lives as long as CMD (EC3); an edit is short, past
	 * max-hold it may be reaped as leaked and ED1 refuses its result. */
	hf_lock_set(e.l, HF_OPT_PID, child.pid);
	hf_lock_set(e.l, HF_OPT_MAX_HOLD_MS, e.max_hold_ms);
	int64_t start = hf_sys_mono_ns();
	code = cli_lock_take(e.l, e.lock, cli_deadline(w.wait_ms), &child);
	if (code == 0)
		cli_wait_took(start);
	if (code != 0) {
		/* a refusal: CMD never runs (RUN7); -E changes only the exit code */
		cli_child_abort(&child);
		if (code == HF_EXIT_CONFLICT)
			code = w.conflict_exit;
		goto out;
	}
	hf_sys_point(HF_PT_EDIT_LOCKED);
	char token[64];
	snprintf(token, sizeof token, "%s", hf_lock_token(e.l) ? hf_lock_token(e.l) : "");
	uint64_t fence = hf_lock_fence(e.l);
	code = edit_locked(&e, cmd, &child, out[0]);
	hf_edit_free(e.ed);
	e.ed = NULL;
	rc = hf_lock_release(e.l); /* EC2 */
	if (rc < 0 && !(e.lost && (rc == HF_ENOTHELD || rc == HF_ENOTYOURS)))
		cli_err("warning: lock %s: release: %s", e.lock, hf_strerror(rc));
	cli_child_abort(&child); /* EC2: after the release; never started: it exits */
	if (cli_json_on() && e.ran && !cli_failed()) {
		char file[PATH_MAX], lock[PATH_MAX];
		cli_json_print(json_pack("{s:s, s:{s:s, s:s, s:I}, s:b, s:i, s:o}", "file",
					 cli_abs_path(e.file, file, sizeof file), "lock", "path",
					 cli_abs_path(e.lock, lock, sizeof lock), "token", token,
					 "fence", (json_int_t)fence, "replaced", e.replaced, "exit",
					 code, "cmd", cli_child_json(&child, cmd)));
	}
out:
	cli_child_done(&child);
	if (out[0] >= 0)
		hf_sys_close(out[0]);
	if (e.input >= 0)
		hf_sys_close(e.input);
	hf_edit_free(e.ed);
	hf_lock_free(e.l);
	return code;
}
