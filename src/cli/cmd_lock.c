/*
 * cmd_lock.c - `holdfast lock acquire|release|renew|check|status PATH`: the
 * short directory lock (hf_lock, holdfast.h) from the shell - taken for a
 * process (a keeper holds its kernel lock), released or renewed by token,
 * checked by token or fence, judged.
 */
#include "cli.h"
#include "proc.h"
#include "run.h"
#include "sys.h"
#include "text.h"

#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
	"usage: holdfast lock acquire PATH [-n | -w SECS] [-E CODE] [--stale DUR] [--max-hold DUR]\n"
	"                                  [--pid PID | --lease DUR] [--shared | --slots N]\n"
	"                                  [-v] [--json]\n"
	"       holdfast lock release PATH --token TOKEN [--json]\n"
	"       holdfast lock renew PATH --token TOKEN [--max-hold DUR|none] [--json]\n"
	"       holdfast lock check PATH [--token TOKEN | --fence N] [--json]\n"
	"       holdfast lock status PATH [-v] [--json]\n"
	"\n"
	"A short lock: the directory PATH, made by mkdir, with its owner record\n"
	"PATH/owner; PATH.holdfast/ beside it keeps the fence counter and the claims\n"
	"(with its own .gitignore: git never shows it; while held, PATH/owner shows -\n"
	"ignore PATH in git if that matters). Never delete PATH.holdfast/ in use.\n"
	"\n"
	"acquire   take the lock for PID (default: the process that runs the\n"
	"          caller's next step - holdfast's parent, skipping subshells,\n"
	"          wrappers such as xargs and one-line `sh -c` shells, each of which\n"
	"          holds it too; a keeper holds it for them, exit 71 when none can\n"
	"          start) and print 'TOKEN FENCE'. The fence is strictly\n"
	"          greater than every earlier acquisition's of PATH: give it to the\n"
	"          resource you protect, so it can refuse a holder that was reaped.\n"
	"          Waits forever by default; -n tries once, -w SECS waits at most SECS.\n"
	"          A dead owner is reaped at once; a lock without a complete owner\n"
	"          record after --stale (default 60s); a live owner older than\n"
	"          max(--max-hold, --stale) as leaked (--max-hold default 10m; it is\n"
	"          recorded, so it is the holder's own ceiling; 'none': never leaked\n"
	"          while PID lives).\n"
	"          -E CODE: the exit code for held or timed out (1-255, default 1;\n"
	"          0 is refused: it would tell the caller the lock is theirs).\n"
	"          Without -w, a lock PID holds already is refused at once (exit 1):\n"
	"          waiting for itself would last forever.\n"
	"          --lease DUR (or HOLDFAST_LEASE=DUR when neither --pid nor --lease is\n"
	"          given): held by no process - for callers whose steps are separate\n"
	"          processes, such as an agent's tool calls - until `lock release`, or\n"
	"          until DUR (1s to 365d) after the acquisition or the last `lock renew`:\n"
	"          then it is expired and the next acquirer takes it.\n"
	"          --shared: one of any number of shared holders (readers), never\n"
	"          beside an exclusive one; --slots N (1-1024): one of at most N slot\n"
	"          holders that each asked for N. Each holder has its own token and\n"
	"          fence. A waiting acquirer stands at PATH: later ones, shared too,\n"
	"          queue behind it, so a waiting writer is never starved by readers.\n"
	"release   release the lock acquired with TOKEN.\n"
	"renew     restart the window (a lease: its DUR) of the lock acquired with\n"
	"          TOKEN (same fence); an expired lease nobody took yet renews;\n"
	"          --max-hold none: never leaked while its owner lives. Exit 1 when\n"
	"          another holds it or it was reaped meanwhile, 69 when nothing is held.\n"
	"check     exit 0 when PATH is held by a live holder or being acquired;\n"
	"          with --token, 0 only when held by the acquisition of TOKEN (\"do I\n"
	"          still hold it?\") and 1 when another holds it; 69 when free or\n"
	"          stale; 65 unreadable. Prints nothing (--json: the answer as an\n"
	"          object); changes nothing.\n"
	"          With --fence N: 0 only while the acquisition whose fence is N holds\n"
	"          it (a resource's check before it writes), 1 another's, 69 free.\n"
	"status    one line: 'free', or 'held: pid P (CMD) on HOST, AGE old, fence F', ...;\n"
	"          a shared or slot lock one line per holder, its mode at the end\n"
	"          ('(shared)', '(slots N)'), and 'waiting: ...' for an acquirer\n"
	"          standing at PATH until they leave; -v adds each holder's token.\n"
	"\n"
	"Backend (every subcommand): --backend etcd://HOST:PORT[,HOST:PORT...] (or\n"
	"etcds:// for https; default: HOLDFAST_BACKEND, else 'file', the file system)\n"
	"keeps the lock in etcd under /holdfast/lock/ + PATH made absolute; --ttl DUR\n"
	"the lease (default 10s: how long a dead host's or a killed keeper's lock\n"
	"lasts), --etcd-user USER with --etcd-password-file FILE (or\n"
	"HOLDFAST_ETCD_USER, HOLDFAST_ETCD_PASSWORD_FILE), --etcd-ca FILE (or\n"
	"HOLDFAST_ETCD_CA_FILE), --etcd-timeout DUR (one request; default 5s).\n"
	"\n"
	"TOKEN may be given as acquire printed it, 'TOKEN FENCE' (token=$(holdfast\n"
	"lock acquire L) works as is); a fence that is not that\n"
	"token's refuses release and renew (exit 1).\n"
	"\n"
	"--json prints one JSON object: the owner record's fields (acquire, status),\n"
	"the answer (check, release), or on failure {\"error\",\"exit\",\"message\",\n"
	"\"path\",\"holder\"} (holdfast(1): JSON OUTPUT).\n"
	"-v, --verbose: say what the wait waits for, how long it took, what was acquired.\n"
	"-h, --help; -V, --version.\n"
	"Durations: 500ms, 30s (or 30), 5m, 2h, 1d.\n"
	"Exit: 0 done; 1 held by another or timed out (release: another token holds\n"
	"it); 64 usage; 65 unreadable owner record; 69 release or check: not held;\n"
	"71 no keeper could start (nothing held); 77 unsafe.\n";

enum { OPT_STALE = 1000, OPT_MAXHOLD, OPT_PID, OPT_JSON, OPT_TOKEN, OPT_HELP, OPT_VERSION,
       OPT_FENCE, OPT_LEASE, OPT_SHARED, OPT_SLOTS };

static const struct option longopts[] = {
	{ "verbose", no_argument, NULL, 'v' },
	{ "stale", required_argument, NULL, OPT_STALE },
	{ "max-hold", required_argument, NULL, OPT_MAXHOLD },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "token", required_argument, NULL, OPT_TOKEN },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, 'V' },
	{ "fence", required_argument, NULL, OPT_FENCE },
	{ "lease", required_argument, NULL, OPT_LEASE },
	{ "shared", no_argument, NULL, OPT_SHARED },
	{ "slots", required_argument, NULL, OPT_SLOTS },
	CLI_BACKEND_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *path, *token;
	char token_buf[64];
	uint64_t token_fence; /* "TOKEN FENCE": the fence given with it; 0 none */
	int64_t wait_ms, stale_ms, max_hold_ms, lease_ms;
	long pid;
	int conflict_exit;
	int mode;   /* HF_MODE_EXCLUSIVE, _SHARED, _SLOTS */
	int slots;  /* HF_MODE_SLOTS's N                  */
	int64_t fence;
	bool json, nowait, waitset, pidset, verbose, fenceset;
};

/* --token as acquire printed it: "TOKEN" or "TOKEN FENCE" (what
 * token=$(holdfast lock acquire L) holds); the token alone into a. */
static void token_arg(struct args *a, const char *arg)
{
	a->token = cli_token_form(arg, a->token_buf, sizeof a->token_buf, &a->token_fence);
}

/* A lease's length (OW6): 1 s to 365 days. 0, or 1 (said). */
static int lease_arg(const char *what, const char *arg, int64_t *ret)
{
	if (cli_duration_arg(what, arg, ret))
		return 1;
	if (*ret < 1000 || *ret > 365LL * 86400 * 1000) {
		cli_err("lock acquire: %s %s: a lease lasts 1s to 365d", what, CLI_SHOW(arg));
		return 1;
	}
	return 0;
}

/* 0, or an exit code (usage printed). */
static int parse(int argc, char **argv, const char *sub, struct args *a)
{
	memset(a, 0, sizeof *a);
	a->wait_ms = -1;
	a->conflict_exit = HF_EXIT_CONFLICT;
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "nw:E:hvV", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			a->verbose = true;
			break;
		case 'n':
			a->nowait = true;
			a->wait_ms = 0;
			break;
		case 'w': {
			if (cli_duration_arg("-w", optarg, &a->wait_ms))
				return HF_EXIT_USAGE;
			a->waitset = true;
			break;
		}
		case OPT_STALE:
		case OPT_MAXHOLD: {
			int64_t *dst = c == OPT_STALE ? &a->stale_ms : &a->max_hold_ms;
			const char *what = c == OPT_STALE ? "--stale" : "--max-hold";
			if (c == OPT_MAXHOLD && !strcmp(optarg, "none")) {
				*dst = HF_MAX_HOLD_NONE; /* bound to its owner's life */
				break;
			}
			if (cli_duration_arg(what, optarg, dst))
				return HF_EXIT_USAGE;
			if (*dst == 0) {
				cli_err("lock %s: %s 0: give a positive duration", sub, what);
				return HF_EXIT_USAGE;
			}
			break;
		}
		case OPT_PID: {
			uint64_t v;
			a->pid = hf_parse_u64(optarg, 0x7fffffff, &v) == 0 ? (long)v : 0;
			if (a->pid <= 0) { /* digits only */
				cli_err("lock %s: bad --pid '%s'", sub, optarg);
				return HF_EXIT_USAGE;
			}
			a->pidset = true;
			break;
		}
		case OPT_LEASE:
			if (strcmp(sub, "acquire")) {
				cli_err("lock %s: only acquire takes --lease (renew restarts the "
					"lease it has)", sub);
				return HF_EXIT_USAGE;
			}
			if (lease_arg("--lease", optarg, &a->lease_ms))
				return HF_EXIT_USAGE;
			break;
		case OPT_SHARED:
		case OPT_SLOTS:
			if (cli_mode_arg("lock", sub, c == OPT_SHARED ? NULL : optarg, &a->mode,
					 &a->slots))
				return HF_EXIT_USAGE;
			break;
		case OPT_JSON:
			a->json = true;
			cli_json_enable();
			break;
		case OPT_TOKEN:
			token_arg(a, optarg);
			break;
		case 'E': {
			uint64_t v;
			if (strcmp(sub, "acquire") || hf_parse_u64(optarg, 255, &v) < 0 || v < 1) {
				/* 0 would tell the script it holds a lock another holds */
				cli_err("lock %s: -E %s: %s", sub, CLI_SHOW(optarg),
					strcmp(sub, "acquire")
						? "only acquire takes -E"
						: "not an exit code for a refusal (1-255: 0 would say "
						  "the lock is yours)");
				return HF_EXIT_USAGE;
			}
			a->conflict_exit = (int)v;
			break;
		}
		case 'h':
		case OPT_HELP:
			fputs(usage, stdout);
			return -1;
		case 'V':
			cli_version();
			return -1;
		case OPT_FENCE: {
			char *end;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (strcmp(sub, "check") || !*optarg || *end || errno || v < 1) {
				cli_err("lock %s: --fence %s: %s", sub, CLI_SHOW(optarg),
					strcmp(sub, "check") ? "only check takes --fence"
							     : "not a fence (1 or more)");
				return HF_EXIT_USAGE;
			}
			a->fence = v;
			a->fenceset = true;
			break;
		}
		default: {
			int b = cli_backend_opt(c, optarg);
			if (b < 0)
				break;
			if (b)
				return b;
			cli_err("lock %s: unknown option '%s' (see 'holdfast lock --help')", sub,
				argv[optind - 1]);
			return HF_EXIT_USAGE;
		}
		}
	}
	if (a->nowait && a->waitset) {
		cli_err("lock %s: -n and -w exclude each other", sub);
		return HF_EXIT_USAGE;
	}
	if (optind != argc - 1) {
		cli_err("lock %s: %s", sub, optind >= argc ? "PATH is missing" : "one PATH only");
		return HF_EXIT_USAGE;
	}
	a->path = argv[optind];
	cli_subject(a->path);
	return 0;
}

/* A record as --json prints it: the record's own fields, "path" absolute. */
static json_t *rec_json(const hf_rec *r, const char *path)
{
	json_t *j = json_loads(hf_rec_json(r), 0, NULL);
	char abs[PATH_MAX];
	if (j && path)
		json_object_set_new(j, "path", json_string(cli_abs_path(path, abs, sizeof abs)));
	return j;
}

static int print_rec(const hf_rec *r, const char *path)
{
	json_t *j = rec_json(r, path);
	return j ? cli_json_print(j) : -ENOMEM;
}

static int64_t rec_int(const hf_rec *r, const char *field)
{
	int64_t v;
	return hf_rec_int(r, field, &v) == 0 ? v : 0;
}

/* Who holds it, in the words every command uses (acquire.c). */
static void describe(const hf_rec *r, char *buf, size_t n)
{
	cli_holder_words(r, buf, n);
}

static int conflict(const char *path, int rc, const hf_rec *h)
{
	char d[400];
	cli_refusal_words(path, h, d, sizeof d);
	const char *why = hf_rec_str(h, "reason");
	if (rc == HF_ETIMEDOUT)
		cli_err("lock %s: timed out; held by %s", path, d);
	else if (rc == HF_EBARRIER)
		cli_err("lock %s: a claim beside it denies entry (held by %s)", path, d);
	else if (rc == HF_EUNREADABLE && why)
		cli_err("lock %s: refused: %s (%s)", path, CLI_SHOW(why), d);
	else if (rc == HF_EUNREADABLE)
		cli_err("lock %s: the owner record is unreadable (%s); refused until it is past the "
			"stale window",
			path, d);
	else
		cli_err("lock %s: held by %s", path, d);
	/* JS2: the holder's record goes nested in the error object, never in
	 * the shape of a success (its token is not the caller's) */
	return cli_fail_json(cli_exit_for(rc), hf_error_name(rc), path, h ? rec_json(h, path) : NULL);
}

/* Messages for the errors of acquire that are not conflicts. */
static int acquire_error_words(const char *path, int rc, pid_t owner, const hf_rec *h)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t bl = strlen(base);
	switch (rc) {
	case -EDEADLK: {
		char d[400];
		describe(h, d, sizeof d);
		cli_err("lock acquire %s: already held by pid %d itself (%s): waiting would last as "
			"long as it does; release it first (lock release --token) or use -n",
			path, (int)owner, d);
		return HF_EXIT_CONFLICT;
	}
	case -ESRCH:
		cli_err("lock acquire %s: no process %d to hold it", path, (int)owner);
		return HF_EXIT_USAGE;
	case -EINVAL:
		if (bl >= 9 && !strcmp(base + bl - 9, ".holdfast"))
			cli_err("lock acquire %s: names ending in .holdfast are reserved (the state "
				"directory beside every lock)", path);
		else
			cli_err("lock acquire %s: not a lock name: give the path of a directory to "
				"create (its parent must exist), e.g. ./build.lock", path);
		return HF_EXIT_USAGE;
	case HF_EUNSAFE:
	case -EACCES:
	case -EPERM: {
		int code = cli_lock_refused("lock acquire", path, rc);
		if (code)
			return code;
		if (rc != HF_EUNSAFE)
			break;
		cli_err("lock acquire %s: refused: %s.holdfast is not a private directory of "
			"this user (or is a symlink)", path, path);
		return HF_EXIT_NOPERM;
	}
	case -EOPNOTSUPP:
		cli_err("lock acquire %s: the file system refuses RENAME_NOREPLACE or flock(2), "
			"which holdfast needs (it never emulates them)", path);
		return HF_EXIT_OSERR;
	case -EBUSY:
		cli_err("lock acquire %s: the fence counter %s.holdfast/fence stayed locked for 5 s: "
			"a process is stopped in the middle of acquiring it", path, path);
		return HF_EXIT_CONFLICT;
	case -EOVERFLOW:
		cli_err("lock acquire %s: its fences are exhausted (the counter in %s.holdfast/fence "
			"reached 2^63-1)", path, path);
		return HF_EXIT_SOFTWARE;
	case HF_EUNREADABLE: {
		const char *why = hf_rec_str(h, "reason");
		if (why) {
			cli_err("lock acquire %s: refused: %s", path, CLI_SHOW(why));
			return HF_EXIT_DATAERR;
		}
		break;
	}
	}
	const char *why = hf_rec_str(h, "reason");
	cli_err("lock acquire %s: %s%s%s", path, hf_strerror(rc), why ? ": " : "",
		why ? CLI_SHOW(why) : "");
	return cli_exit_for(rc);
}

static int acquire_error(const char *path, int rc, pid_t owner, const hf_rec *h)
{
	int code = acquire_error_words(path, rc, owner, h);
	bool who = rc == -EDEADLK || rc == HF_EUNREADABLE || hf_rec_str(h, "reason");
	return cli_fail_json(code, rc == -ESRCH ? "no_process" : hf_error_name(rc), path,
			     who && h ? rec_json(h, path) : NULL);
}

/* Release the acquisition of token at path on the backend in force (a
 * detached acquisition that failed after all): 0, or what the release
 * said. */
static int release_token(const char *path, const char *token)
{
	hf_lock *r;
	int rc = hf_lock_new(path, &r);
	if (rc < 0)
		return rc;
	if (cli_backend_apply(r, path) != 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = hf_lock_adopt(r, token);
	if (rc == 0)
		rc = hf_lock_release(r);
	hf_lock_free(r);
	return rc;
}

static int do_acquire(int argc, char **argv)
{
	struct args a;
	int rc = parse(argc, argv, "acquire", &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (a.token) {
		cli_err("lock acquire: --token belongs to release");
		return HF_EXIT_USAGE;
	}
	const char *env_lease = getenv("HOLDFAST_LEASE");
	if (a.lease_ms && a.pidset) {
		cli_err("lock acquire %s: --pid and --lease exclude each other (a process's life, "
			"or a lease held by none)", a.path);
		return HF_EXIT_USAGE;
	}
	if (!a.lease_ms && !a.pidset && env_lease && *env_lease &&
	    lease_arg("HOLDFAST_LEASE", env_lease, &a.lease_ms))
		return HF_EXIT_USAGE;
	/* holdfast itself exits at once: the lock belongs to the script that
	 * ran this line (owner_find.c), or to --pid; a lease (OW6) to no
	 * process: the caller found is recorded only to say who took it */
	struct cli_owner who = { .pid = (pid_t)a.pid };
	if (a.lease_ms && cli_owner_find(&who) < 0) {
		memset(&who, 0, sizeof who);
		who.pid = getpid();
	}
	if (a.lease_ms) {
		who.nchain = 0; /* no process holds it */
		who.one_line = false;
	} else if (!a.pidset && cli_owner_find(&who) < 0) {
		cli_err("lock acquire %s: no process to hold the lock: holdfast's caller is init or "
			"outside this pid namespace; give --pid PID",
			a.path);
		return cli_fail(HF_EXIT_USAGE, "no_process", a.path, NULL);
	}
	pid_t owner = who.pid;
	char *comm = who.comm;
	hf_lock *l;
	rc = hf_lock_new(a.path, &l);
	if (rc < 0)
		return acquire_error(a.path, rc, owner, NULL);
	if ((rc = cli_backend_apply(l, a.path)) != 0) {
		hf_lock_free(l);
		return rc;
	}
	hf_lock_set(l, HF_OPT_WAIT_MS, a.wait_ms);
	if (a.stale_ms)
		hf_lock_set(l, HF_OPT_STALE_MS, a.stale_ms);
	if (a.max_hold_ms)
		hf_lock_set(l, HF_OPT_MAX_HOLD_MS, a.max_hold_ms);
	hf_lock_set(l, HF_OPT_PID, owner);
	for (size_t i = 0; i < who.nchain; i++)
		hf_lock_set(l, HF_OPT_CHAIN_PID, who.chain[i]); /* O5, OW5 */
	if (a.lease_ms)
		hf_lock_set(l, HF_OPT_LEASE_MS, a.lease_ms); /* OW6 */
	/* the mode goes to the library whatever the backend: one that has no
	 * modes refuses it, and that refusal is what is said */
	if (a.mode != HF_MODE_EXCLUSIVE &&
	    (rc = hf_lock_set(l, HF_OPT_MODE, a.mode)) == 0 && a.mode == HF_MODE_SLOTS)
		rc = hf_lock_set(l, HF_OPT_SLOTS, a.slots);
	if (rc < 0) {
		hf_lock_free(l);
		return rc == -EOPNOTSUPP ? cli_mode_refused("lock acquire", a.path, a.mode, NULL)
					 : acquire_error(a.path, rc, owner, NULL);
	}
	cli_verbose = a.verbose;
	int64_t start = hf_sys_mono_ns();
	if (a.wait_ms != 0 && cli_waitline_wanted()) {
		/* a first try says whether this is a wait (waitline.c) */
		int64_t deadline = cli_deadline(a.wait_ms);
		hf_lock_set(l, HF_OPT_WAIT_MS, 0);
		rc = hf_lock_acquire(l);
		if (cli_lock_waitable(rc)) {
			struct cli_waitline wl;
			cli_waitline_init(&wl, a.path, cli_lock_holder_now, a.path);
			char d[400] = "";
			const hf_rec *h = hf_lock_holder(l);
			if (!(a.wait_ms < 0 && rec_int(h, "pid") == owner)) /* else DL13 says it */
				describe(h, d, sizeof d);
			if (d[0])
				cli_waitline_begin(&wl, d);
			hf_lock_set(l, HF_OPT_WAIT_MS, cli_wait_left(deadline));
			rc = hf_lock_acquire(l);
			cli_waitline_end(&wl);
		}
	} else {
		rc = hf_lock_acquire(l);
	}
	if (rc < 0) {
		const hf_rec *h = hf_lock_holder(l);
		int code;
		if (rc == HF_EHELD || rc == HF_ETIMEDOUT || rc == HF_EBARRIER ||
		    (rc == HF_EUNREADABLE && (hf_rec_str(h, "token") || rec_int(h, "partial")))) {
			code = conflict(a.path, rc, h);
			if (code == HF_EXIT_CONFLICT)
				code = a.conflict_exit; /* -E: the code of held or timed out */
		}
		else if (rc == -EOPNOTSUPP && a.mode != HF_MODE_EXCLUSIVE && cli_backend())
			code = cli_mode_refused("lock acquire", a.path, a.mode, h);
		else
			code = acquire_error(a.path, rc, owner, h);
		hf_lock_free(l);
		return code;
	}

	/* Either it succeeds or it holds nothing. The directory's kernel lock
	 * (on etcd: the lease) must be held as long as the owner and its chain
	 * live, and we exit now: a keeper holds it (keeper.c), for judges in
	 * another pid namespace. A keeper that cannot start (RLIMIT_NPROC, no
	 * memory) fails the acquisition: it is released again, exit 71. Owners
	 * all gone meanwhile (-ESRCH) leave a dead owner's lock: reapable,
	 * nothing to keep. */
	uint64_t fence = hf_lock_fence(l);
	char token[64];
	snprintf(token, sizeof token, "%s", hf_lock_token(l));
	json_t *self = a.json ? rec_json(hf_lock_holder(l), a.path) : NULL;
	int live = hf_lock_detach(l); /* ours now: the handle releases nothing */
	hf_sys_point(HF_PT_LOCK_ACQUIRE_KEEPER);
	int keeper = a.lease_ms ? 0 /* OW6: no process holds a lease, none keeps it */
		     : live >= 0 ? cli_keep_for((int)owner, who.chain, who.nchain, &live, 1)
		     : cli_backend() ? cli_keep_lock((int)owner, who.chain, who.nchain,
						     l) /* etcd: its lease */
				     : -EBADF;
	hf_lock_free(l);
	if (keeper < 0 && keeper != -ESRCH) {
		int rrc = release_token(a.path, token);
		if (live >= 0)
			hf_sys_close(live); /* HL3: after the release */
		json_decref(self);
		cli_err("lock acquire %s: no keeper could start to hold it for pid %d (%s): %s",
			a.path, (int)owner, hf_strerror(keeper),
			rrc == 0 ? "released again, nothing is held"
				 : "and releasing it failed too: it is free when that process ends");
		return cli_fail(HF_EXIT_OSERR, "no_keeper", a.path, NULL);
	}
	if (live >= 0)
		hf_sys_close(live);

	/* The token goes out last, and a write that fails (a reader gone:
	 * `holdfast lock acquire L | true`) releases the lock. SIGPIPE is
	 * blocked so the write fails with EPIPE instead of killing us with the
	 * lock held and its token lost. */
	sigset_t pipe_sig;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	hf_sys_sigprocmask(SIG_BLOCK, &pipe_sig, NULL);
	hf_sys_point(HF_PT_LOCK_ACQUIRE_PRINT);
	if (a.json) {
		rc = self ? cli_json_print(self) : -ENOMEM; /* takes self */
		self = NULL;
	} else {
		char line[128];
		snprintf(line, sizeof line, "%s %" PRIu64 "\n", token, fence);
		rc = cli_write_out(line);
	}
	json_decref(self);
	if (rc < 0) {
		int rrc = release_token(a.path, token);
		cli_err("lock acquire %s: the token could not be written to standard output (%s): %s",
			a.path, hf_strerror(rc),
			rrc == 0 ? "released again, nothing is held" : "and releasing it failed too");
		return cli_fail(HF_EXIT_IOERR, "io", a.path, NULL);
	}
	cli_wait_took(start);
	if (who.one_line)
		cli_err("warning: lock %s: held for pid %d (%s), a one-line shell whose caller is "
			"init: the lock ends with that line; for work that follows it give --pid PID",
			a.path, (int)owner, comm);
	if (a.lease_ms && (a.verbose || isatty(2))) {
		char dur[32];
		cli_format_age(a.lease_ms, dur, sizeof dur);
		cli_err("lock %s: acquired by a lease of %s, fence %" PRIu64 " (held by no process: "
			"until `holdfast lock release` with the token, or %s after the acquisition "
			"or the last `holdfast lock renew`)",
			a.path, dur, fence, dur);
	} else if (a.verbose || isatty(2)) {
		if (!comm[0])
			hf_pid_comm(owner, comm, sizeof who.comm);
		char chain[HF_CHAIN_MAX * 32] = "";
		size_t used = 0;
		for (size_t i = 0; i < who.nchain && used < sizeof chain; i++) {
			char c[HF_COMM_MAX + 1] = "";
			hf_pid_comm(who.chain[i], c, sizeof c);
			int w = snprintf(chain + used, sizeof chain - used, "%s%d%s%s%s",
					 i ? ", " : " and while any of pids ", (int)who.chain[i],
					 c[0] ? " (" : "", c, c[0] ? ")" : "");
			used += w > 0 ? (size_t)w : 0;
		}
		cli_err("lock %s: acquired for pid %d%s%s%s%s, fence %" PRIu64 " (held until %s "
			"or `holdfast lock release` with the token)",
			a.path, (int)owner, comm[0] ? " (" : "", comm, comm[0] ? ")" : "", chain, fence,
			who.nchain ? "they have all ended" : "that process ends");
	}
	return HF_EXIT_OK;
}

static int token_fence_refused(hf_lock *l, const struct args *a, const char *sub);

static int do_release(int argc, char **argv)
{
	struct args a;
	int rc = parse(argc, argv, "release", &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.token) {
		cli_err("lock release %s: --token TOKEN is required (printed by lock acquire)",
			a.path);
		return HF_EXIT_USAGE;
	}
	hf_lock *l;
	rc = hf_lock_new(a.path, &l);
	if (rc < 0) {
		int code = cli_lock_refused("lock release", a.path, rc);
		if (code)
			return code;
		cli_err("lock release %s: %s", a.path, hf_strerror(rc));
		return cli_fail_rc(rc, a.path, NULL);
	}
	if ((rc = cli_backend_apply(l, a.path)) != 0) {
		hf_lock_free(l);
		return rc;
	}
	if (hf_lock_adopt(l, a.token) < 0) {
		cli_err("lock release %s: --token %s is not a token (the 32 hex digits `lock acquire` "
			"printed)",
			a.path, CLI_SHOW(a.token));
		hf_lock_free(l);
		return cli_fail(HF_EXIT_USAGE, "usage", a.path, NULL);
	}
	int code = token_fence_refused(l, &a, "release");
	if (code) {
		hf_lock_free(l);
		return code;
	}
	rc = hf_lock_release(l);
	if (rc == HF_ENOTHELD) {
		cli_err("lock release %s: not held (no record with token %s)", a.path,
			CLI_SHOW(a.token));
		code = HF_EXIT_NOTHELD;
	} else if (rc == HF_EUNREADABLE && hf_rec_str(hf_lock_holder(l), "reason")) {
		char d[400];
		describe(hf_lock_holder(l), d, sizeof d);
		cli_err("lock release %s: refused: %s (%s)", a.path,
			CLI_SHOW(hf_rec_str(hf_lock_holder(l), "reason")), d);
		code = HF_EXIT_DATAERR;
	} else if (rc == HF_ENOTYOURS && !hf_rec_str(hf_lock_holder(l), "token")) {
		/* no owner record to read at PATH: whose it is cannot be told */
		char d[400];
		describe(hf_lock_holder(l), d, sizeof d);
		cli_err("lock release %s: the owner record is unreadable or not complete; nothing "
			"released (%s)",
			a.path, d);
		code = HF_EXIT_DATAERR;
		rc = HF_EUNREADABLE; /* the error object's name */
	} else if (rc == HF_ENOTYOURS) {
		char d[400];
		describe(hf_lock_holder(l), d, sizeof d);
		cli_err("lock release %s: held by another owner: %s", a.path, d);
		code = HF_EXIT_CONFLICT;
	} else if ((code = cli_lock_refused("lock release", a.path, rc)) != 0) {
		/* said: what occupies the path, or whose it is */
	} else if (rc == HF_EUNSAFE) {
		cli_err("lock release %s: refused: %s.holdfast is not a private directory of "
			"this user (or is a symlink)", a.path, a.path);
		code = HF_EXIT_NOPERM;
	} else if (rc < 0) {
		const char *why = hf_rec_str(hf_lock_holder(l), "reason");
		cli_err("lock release %s: %s%s%s", a.path, hf_strerror(rc), why ? ": " : "",
			why ? CLI_SHOW(why) : "");
		code = cli_exit_for(rc);
	}
	if (rc < 0)
		cli_fail_json(code, hf_error_name(rc), a.path,
			      rc == HF_ENOTYOURS ? rec_json(hf_lock_holder(l), a.path) : NULL);
	else if (a.json) {
		char abs[PATH_MAX];
		cli_json_print(json_pack("{s:s, s:s, s:b}", "path",
					 cli_abs_path(a.path, abs, sizeof abs), "token",
					 a.token, "released", 1));
	}
	hf_lock_free(l);
	return code;
}

/* `lock renew`: every outcome's words and code in one place: the message,
 * then (--json) the renewed record or the error object naming the holder. */
static int renew_outcome(const struct args *a, int rc, hf_lock *l)
{
	char d[400];
	const hf_rec *h = hf_lock_holder(l);
	int code;
	switch (rc) {
	case 0:
		if (a->json)
			cli_json_print(rec_json(h, a->path));
		return HF_EXIT_OK;
	case HF_ENOTHELD:
		cli_err("lock renew %s: not held (nothing at PATH: released or reaped); nothing "
			"renewed", a->path);
		code = HF_EXIT_NOTHELD;
		break;
	case HF_ENOTYOURS:
		describe(h, d, sizeof d);
		cli_err("lock renew %s: not yours any more: held by %s; nothing renewed", a->path, d);
		code = HF_EXIT_CONFLICT;
		break;
	case HF_ELOST:
		if (h) {
			describe(h, d, sizeof d);
			cli_err("lock renew %s: lost: %s; nothing renewed", a->path, d);
		} else {
			cli_err("lock renew %s: lost: reaped or released while it was renewed; the "
				"lock is not held", a->path);
		}
		code = HF_EXIT_CONFLICT;
		break;
	default:
		if ((code = cli_lock_refused("lock renew", a->path, rc)) != 0)
			break; /* said: what occupies the path, or whose it is */
		if (rc == HF_EUNSAFE) {
			cli_err("lock renew %s: refused: %s.holdfast is not a private directory of "
				"this user (or is a symlink)", a->path, a->path);
			code = HF_EXIT_NOPERM;
		} else { /* on etcd: the client's reason (the endpoint, etcd's words) */
			const char *why = hf_rec_str(h, "reason");
			cli_err("lock renew %s: %s%s%s", a->path, hf_strerror(rc), why ? ": " : "",
				why ? CLI_SHOW(why) : "");
			code = cli_exit_for(rc);
		}
	}
	return cli_fail_json(code, hf_error_name(rc), a->path,
			     h && (rc == HF_ENOTYOURS || rc == HF_ELOST) ? rec_json(h, a->path) : NULL);
}

/* --token "TOKEN FENCE" names one acquisition twice: when PATH holds
 * TOKEN's record and its fence is not FENCE, the pair is not an acquisition
 * (a token and a fence from two of them): refused, exit 1, nothing changed.
 * A fence never changes for a token (renew keeps it), so the look before
 * the change is the answer. 0: go on. */
static int token_fence_refused(hf_lock *l, const struct args *a, const char *sub)
{
	if (!a->token_fence)
		return 0;
	hf_rec *r = NULL;
	if (hf_lock_query(l, &r) < 0)
		return 0; /* the verb says what it finds */
	const char *t = hf_rec_str(r, "token");
	int64_t f;
	int code = 0;
	if (t && !strcmp(t, a->token) && hf_rec_int(r, "fence", &f) == 0 &&
	    (uint64_t)f != a->token_fence) {
		cli_err("lock %s %s: --token %s was acquired with fence %" PRId64 ", not %" PRIu64
			": refused, nothing changed (a token and a fence of two acquisitions?)",
			sub, a->path, a->token, f, a->token_fence);
		code = cli_fail(HF_EXIT_CONFLICT, "not_yours", a->path, NULL);
	}
	hf_rec_free(r);
	return code;
}

static int do_renew(int argc, char **argv)
{
	struct args a;
	int rc = parse(argc, argv, "renew", &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.token) {
		cli_err("lock renew %s: --token TOKEN is required (printed by lock acquire)", a.path);
		return cli_fail(HF_EXIT_USAGE, "usage", a.path, NULL);
	}
	hf_lock *l;
	rc = hf_lock_new(a.path, &l);
	if (rc < 0) {
		int code = cli_lock_refused("lock renew", a.path, rc);
		if (code)
			return code;
		cli_err("lock renew %s: %s", a.path, hf_strerror(rc));
		return cli_fail_rc(rc, a.path, NULL);
	}
	if ((rc = cli_backend_apply(l, a.path)) != 0) {
		hf_lock_free(l);
		return rc;
	}
	if (hf_lock_adopt(l, a.token) < 0) {
		cli_err("lock renew %s: --token %s is not a token (the 32 hex digits `lock acquire` "
			"printed)", a.path, CLI_SHOW(a.token));
		hf_lock_free(l);
		return cli_fail(HF_EXIT_USAGE, "usage", a.path, NULL);
	}
	int code = token_fence_refused(l, &a, "renew");
	if (code) {
		hf_lock_free(l);
		return code;
	}
	if (a.max_hold_ms)
		hf_lock_set(l, HF_OPT_MAX_HOLD_MS, a.max_hold_ms);
	code = renew_outcome(&a, hf_lock_renew(l), l);
	hf_lock_free(l);
	return code;
}

/* `lock check --json`: the answer as an object, with the same exit code:
 * {"path", "answer": held|yours|another|free|unreadable, "exit", "state",
 * "holder": the lock's record (nested: it is not the caller's) or null}. */
static void check_answer(const char *path, int code, bool token, const hf_rec *r)
{
	const char *answer = code == HF_EXIT_OK	       ? (token ? "yours" : "held")
			     : code == HF_EXIT_CONFLICT ? "another"
			     : code == HF_EXIT_DATAERR  ? "unreadable"
							: "free";
	const char *st = r ? hf_rec_str(r, "state") : NULL;
	char abs[PATH_MAX];
	json_t *h = r && (st ? strcmp(st, "free") : code == HF_EXIT_OK) ? rec_json(r, path) : NULL;
	json_t *o = json_pack("{s:s, s:s, s:i, s:s?, s:o}", "path",
			      cli_abs_path(path, abs, sizeof abs), "answer", answer, "exit", code,
			      "state", st                                 ? st
				       : token && code == HF_EXIT_OK     ? "held"
				       : code == HF_EXIT_NOTHELD ? "free"
								  : NULL,
			      "holder", h ? h : json_null());
	cli_json_print(o);
}

/* Is one of a status's holders (FB4: a shared lock has several) entered,
 * live, with fence N? An acquisition waiting at L has its fence but does
 * not hold yet. */
static bool holder_has_fence(const hf_rec *r, int64_t n)
{
	for (size_t k = 0; k < hf_rec_len(r, "holders"); k++) {
		char f[48];
		int64_t v = 0;
		snprintf(f, sizeof f, "holders.%zu.waiting", k);
		if (hf_rec_int(r, f, &v) == 0 && v)
			continue;
		snprintf(f, sizeof f, "holders.%zu.state", k);
		const char *st = hf_rec_str(r, f);
		if (!st || (strcmp(st, "held") && strcmp(st, "skew")))
			continue;
		snprintf(f, sizeof f, "holders.%zu.fence", k);
		if (hf_rec_int(r, f, &v) == 0 && v == n)
			return true;
	}
	return false;
}

/* `lock check`: the answer is the exit code (see the usage). */
static int do_check(int argc, char **argv)
{
	struct args a;
	int rc = parse(argc, argv, "check", &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	int code0;
	if (a.token && a.fenceset) {
		cli_err("lock check %s: --token and --fence exclude each other", a.path);
		return HF_EXIT_USAGE;
	}
	if (a.token) {
		hf_lock *l;
		rc = hf_lock_new(a.path, &l);
		if (rc == 0 && (code0 = cli_backend_apply(l, a.path)) != 0) {
			hf_lock_free(l);
			return code0;
		}
		if (rc == 0 && hf_lock_adopt(l, a.token) < 0) {
			cli_err("lock check %s: --token %s is not a token (the 32 hex digits `lock "
				"acquire` printed)",
				a.path, CLI_SHOW(a.token));
			hf_lock_free(l);
			return cli_fail(HF_EXIT_USAGE, "usage", a.path, NULL);
		}
		if (rc < 0) {
			cli_err("lock check %s: %s", a.path, hf_strerror(rc));
			return cli_fail_rc(rc, a.path, NULL);
		}
		rc = hf_lock_check(l); /* 0: ours; HF_ELOST: not (holder: who is) */
		int code = HF_EXIT_OK;
		if (rc == HF_ELOST) {
			const char *st = hf_rec_str(hf_lock_holder(l), "state");
			/* another holds it, or is acquiring it (partial): not free */
			code = st && (!strcmp(st, "held") || !strcmp(st, "skew") ||
				      !strcmp(st, "partial"))
				       ? HF_EXIT_CONFLICT
				       : HF_EXIT_NOTHELD;
		} else if (rc < 0) {
			const char *why = hf_rec_str(hf_lock_holder(l), "reason");
			cli_err("lock check %s: %s%s%s", a.path, hf_strerror(rc), why ? ": " : "",
				why ? CLI_SHOW(why) : "");
			code = cli_fail_rc(rc, a.path, why ? hf_lock_holder(l) : NULL);
		}
		if (a.json && (rc == 0 || rc == HF_ELOST))
			check_answer(a.path, code, true, hf_lock_holder(l));
		hf_lock_free(l);
		return code;
	}
	hf_rec *i;
	rc = cli_lock_status(a.path, &i);
	if (rc > 0)
		return rc; /* said and recorded */
	if (rc < 0) {
		int code = cli_lock_refused("lock check", a.path, rc);
		if (code)
			return code;
		cli_err("lock check %s: %s", a.path, hf_strerror(rc));
		return cli_fail_rc(rc, a.path, NULL);
	}
	const char *st = hf_rec_str(i, "state");
	/* held, held with a clock ahead, or being acquired by a live maker */
	int code = st && (!strcmp(st, "held") || !strcmp(st, "skew") || !strcmp(st, "partial"))
			   ? HF_EXIT_OK
		   : hf_rec_str(i, "reason") && !hf_rec_str(i, "token") ? HF_EXIT_DATAERR
									: HF_EXIT_NOTHELD;
	int64_t fence;
	/* --fence: "yours" only for a held lock whose record has fence N; one
	 * being acquired (partial) is another acquisition's, coming in */
	if (a.fenceset && code == HF_EXIT_OK &&
	    (!strcmp(st, "partial") || hf_rec_int(i, "fence", &fence) < 0 || fence != a.fence) &&
	    !holder_has_fence(i, a.fence))
		code = HF_EXIT_CONFLICT; /* held, or being entered, by another acquisition */
	if (a.json)
		check_answer(a.path, code, a.fenceset, i);
	hf_rec_free(i);
	return code;
}

/* A lock's (or a holder's) state in status's words. */
static const char *state_words(const char *st)
{
	return !strcmp(st, "dead")        ? "stale (owner dead)"
	       : !strcmp(st, "leaked")    ? "stale (leaked)"
	       : !strcmp(st, "expired")   ? "stale (lease expired)"
	       : !strcmp(st, "abandoned") ? "stale (abandoned)"
	       : !strcmp(st, "partial")   ? "being acquired or partial"
					  : "held";
}

static int do_status(int argc, char **argv)
{
	struct args a;
	int rc = parse(argc, argv, "status", &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	struct stat fst;
	if (hf_sys_fstatat(AT_FDCWD, a.path, &fst, 0) == 0 && S_ISREG(fst.st_mode))
		return cli_flock_status(a.path, a.json); /* a file: its kernel locks (FK3) */
	hf_rec *i;
	rc = cli_lock_status(a.path, &i);
	if (rc > 0)
		return rc; /* said and recorded */
	if (rc < 0) {
		int code = cli_lock_refused("lock status", a.path, rc);
		if (code)
			return code;
		cli_err("lock status %s: %s", a.path, hf_strerror(rc));
		return cli_fail_rc(rc, a.path, NULL);
	}
	if (a.json) {
		print_rec(i, a.path);
		hf_rec_free(i);
		return HF_EXIT_OK;
	}
	char d[400], extra[64] = "";
	int64_t claims = rec_int(i, "claims");
	if (claims)
		snprintf(extra, sizeof extra, " (%" PRId64 " claim%s beside it)", claims,
			 claims == 1 ? "" : "s");
	const char *st = hf_rec_str(i, "state");
	if (!st)
		st = "unknown";
	/* FB4: one line per holder when it is shared, slotted or has an
	 * acquisition waiting at L; an exclusive holder alone: one line, as
	 * before modes */
	size_t nh = hf_rec_len(i, "holders");
	const char *mode = hf_rec_str(i, "mode");
	int64_t waiting0 = 0;
	hf_rec_int(i, "holders.0.waiting", &waiting0);
	if (nh > 1 || (nh == 1 && (waiting0 || (mode && strcmp(mode, "exclusive"))))) {
		for (size_t k = 0; k < nh; k++) {
			char pre[32];
			snprintf(pre, sizeof pre, "holders.%zu.", k);
			char f[48];
			int64_t w = 0;
			snprintf(f, sizeof f, "%swaiting", pre);
			hf_rec_int(i, f, &w);
			snprintf(f, sizeof f, "%sstate", pre);
			const char *hst = hf_rec_str(i, f);
			cli_holder_words_at(i, pre, d, sizeof d);
			printf("%s: %s%s", w ? "waiting" : state_words(hst ? hst : "unknown"), d,
			       k ? "" : extra);
			snprintf(f, sizeof f, "%stoken", pre);
			if (a.verbose && hf_rec_str(i, f))
				printf(", token %s", hf_rec_str(i, f));
			putchar('\n');
		}
		hf_rec_free(i);
		return HF_EXIT_OK;
	}
	if (!strcmp(st, "free")) {
		printf("free%s\n", extra);
		hf_rec_free(i);
		return HF_EXIT_OK;
	}
	describe(i, d, sizeof d);
	printf("%s: %s%s", state_words(st), d, extra);
	if (a.verbose && hf_rec_str(i, "token"))
		printf(", token %s", hf_rec_str(i, "token"));
	putchar('\n');
	hf_rec_free(i);
	return HF_EXIT_OK;
}

int cmd_lock(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? HF_EXIT_USAGE : HF_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return cli_version();
	const char *sub = argv[1];
	if (!strcmp(sub, "acquire"))
		return do_acquire(argc - 1, argv + 1);
	if (!strcmp(sub, "release"))
		return do_release(argc - 1, argv + 1);
	if (!strcmp(sub, "status"))
		return do_status(argc - 1, argv + 1);
	if (!strcmp(sub, "check"))
		return do_check(argc - 1, argv + 1);
	if (!strcmp(sub, "renew"))
		return do_renew(argc - 1, argv + 1);
	cli_err("lock: unknown subcommand '%s' (acquire, release, renew, check, status)", sub);
	return HF_EXIT_USAGE;
}
