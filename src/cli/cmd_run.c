/*
 * cmd_run.c - `holdfast run`: hold locks on behalf of a command while it runs.
 *
 *   holdfast run [--session LANE] [--lock PATH]... [--scope SPEC]... [--name NAME]
 *                [-n | -w SECS] [-E CODE] -- CMD [ARG...]
 *
 * The command is started and supervised by supervise.c, the directory locks
 * taken by acquire.c (run.h); this file decides what is held, in which
 * order, and says what happened.
 *
 * On-disk artifacts
 * -----------------
 *   None of its own: the session lock file, the directory locks and the
 *   registry entry belong to their kinds. Each names CMD's pid as its owner.
 *
 * Steps
 * -----
 *   1. Block the forwarded signals and SIGCHLD, start the child blocked
 *      (supervise.c, steps 1-2).
 *   2. Acquire, ON BEHALF OF THE CHILD (owner pid = the child's pid): the
 *      session lane, then the directory locks sorted by the kernel's
 *      identity of their parent directory, then the scopes (one allocation
 *      for every --scope). Each wait is the library's, woken by the release;
 *      a forwarded signal ends it (the child's signalfd is the waits'
 *      cancel descriptor).
 *   3. Send the go message with HOLDFAST_FENCE / HOLDFAST_POD and the
 *      kernel locks' descriptors (RUN8); CMD runs.
 *   4. Wait for CMD's exit, forwarding signals; CMD stays a zombie (SV2).
 *   5. Release everything, in the reverse order of step 2; then collect CMD.
 *   6. Exit with CMD's status (128+N when it died of signal N).
 *
 * Invariants
 * ----------
 *   (RUN1) Every lock names CMD's pid as its owner, never holdfast's: the
 *          lock lives as long as CMD. A SIGKILLed holdfast leaves it held
 *          while CMD runs and reapable (dead owner) once CMD is gone -
 *          unlike dotlockfile, which records its own pid and lets a second
 *          holder in.
 *   (RUN2) CMD never runs before every lock is held: the go message is sent
 *          only after step 2 succeeded, and without it CMD never runs (SV1).
 *   (RUN3) One global order - session, directory locks by the kernel's
 *          identity of their parent directory (device, inode) and then name,
 *          scopes - so two runs never wait for each other in a cycle,
 *          however each reaches a lock (a bind mount, a symlinked parent).
 *          All or nothing: on any failure everything acquired is released
 *          first.
 *   (RUN4) Every path out after step 2 (CMD's exit, its death by a signal,
 *          a stop signal to holdfast) releases what was acquired.
 *   (RUN5) The wait never passes the deadline: every lock's wait gets the
 *          time left of one deadline for all (AQ1).
 *   (RUN6) CMD is collected only after its locks were released: a zombie
 *          whose parent lives counts as alive, so no acquirer reaps a lock
 *          in the instant between CMD's exit and run's release (SV2).
 *   (RUN7) A refusal never runs CMD, whatever -E CODE says (even 0): -E only
 *          chooses the exit code of the refusal (AQ2).
 *   (RUN8) The kernel locks that prove the locks' owner alive (each lock
 *          directory's descriptor, the scope's live file) go to CMD with the
 *          go message and stay open in CMD across exec (SV3), and in
 *          holdfast until it releases: a judge in another pid namespace,
 *          where CMD's pid proves nothing, sees them held as long as either
 *          lives - through a SIGKILL of holdfast.
 *   (RUN9) What CMD ran under and lost while it ran (a lock reaped, removed
 *          or taken by another, an etcd lease that expired, a scope reaped)
 *          is never reported as success: each loss is said on stderr, and
 *          a CMD that exited 0 makes run exit 1 (a failing CMD keeps its
 *          own status), on either backend. A scope that the file registry
 *          no longer lists at the release is not counted: a run that is pid
 *          1 of its pid namespace sees CMD's end before its release, and
 *          the registry reaps it as ended.
 *
 * On etcd (--backend, HOLDFAST_BACKEND) the session, the locks and the
 * scope are all etcd's, as `holdfast session`, `lock` and `scope` keep
 * them: the locks' and the scope's leases are kept alive by their handles'
 * threads while CMD runs (LE1), and released after it ended (RUN4).
 *
 * Hazards
 * -------
 *   - SIGKILL of holdfast itself releases nothing: the directory locks and
 *     the scope stay with CMD's pid until the next acquirer proves CMD dead.
 *     The session lock is judged by age, not pid: it stays until its stale
 *     window or a release by its lane. On etcd nobody keeps the leases alive
 *     any more: the locks and the scope go after their TTL.
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
#include <sys/stat.h>
#include <unistd.h>

/* Their fences (20 digits each) must fit the go message (RUN2). */
#define RUN_MAX_LOCKS 64
/* run's locks live as long as CMD, like flock(1)'s: recorded in the owner
 * record so that no acquirer judges a long CMD leaked (100 years). */
#define RUN_MAX_HOLD_MS HF_MAX_HOLD_NONE /* bound to CMD's life */

static const char run_usage[] =
	"usage: holdfast run [--session LANE] [--lock PATH]... [--shared | --slots N]\n"
	"                    [--scope SPEC]... [--name NAME] [-n | -w SECS] [-E CODE] -- CMD [ARG...]\n"
	"       holdfast run [OPTIONS] -c STRING\n"
	"\n"
	"Hold every lock given while CMD runs, on behalf of CMD: each lock names CMD's\n"
	"pid, so it stays held while CMD runs even if holdfast itself is killed, and is\n"
	"reapable once CMD is gone. Releases everything when CMD ends (also when CMD is\n"
	"killed, and on SIGINT/SIGTERM to holdfast, which forwards them to CMD).\n"
	"\n"
	"  --session LANE   take the session lock (.session.lock of the work tree) for LANE\n"
	"  --lock PATH      a directory lock (repeatable; taken in order of canonical path)\n"
	"  --shared         every --lock as one of any number of shared holders (readers),\n"
	"                   never beside an exclusive one; a waiting exclusive acquirer\n"
	"                   is not starved: shared ones that come after it wait behind it\n"
	"  --slots N        every --lock as one of at most N (1-1024) slot holders\n"
	"  --scope SPEC     PATH:MODE[:recursive] (repeatable): one scope allocation,\n"
	"                   delegated from $HOLDFAST_POD when set\n"
	"  --name NAME      the scope allocation's name (default: generated)\n"
	"  -v, --verbose    say what a wait waits for, how long getting the locks took,\n"
	"                   and what runs\n"
	"  -n, --nonblock   fail at once if a lock is held\n"
	"  -w, --wait SECS  wait at most SECS (also --timeout; default: wait forever)\n"
	"  -E, --conflict-exit-code CODE   exit code on conflict or timeout (default 1)\n"
	"  --backend URI    where the locks, the session and the scope live:\n"
	"                   etcd://HOST:PORT[,...] (etcds:// for https; default\n"
	"                   $HOLDFAST_BACKEND, else the file system);\n"
	"                   --ttl, --etcd-user, --etcd-password-file, --etcd-ca and\n"
	"                   --etcd-timeout as for 'holdfast lock' (see its --help)\n"
	"  --json           once CMD has ended, one JSON object on stdout: what was held\n"
	"                   (session, locks with tokens and fences, scope) and CMD's exit\n"
	"                   or signal; CMD's own output precedes it on the same stdout.\n"
	"                   A refusal (CMD never ran) prints the error object instead.\n"
		"  -c, --command STRING   run STRING with /bin/sh -c (flock's -c), not CMD\n"
	"  -h, --help; -V, --version\n"
	"\n"
	"CMD gets HOLDFAST_FENCE (each --lock's fence, space-separated, in command-line\n"
	"order) and HOLDFAST_POD (the scope allocation's name).\n"
	"Exit: CMD's status (128+N if it died of signal N; 126 cannot run, 127 not found);\n"
	"1 (or -E CODE) held by another or timed out; 64 usage; 65 unreadable record;\n"
	"77 refused for safety; 70/71/73/74 internal/OS/cannot create/I-O errors.\n";

struct run_lock {
	const char *given;        /* as on the command line              */
	char canon[PATH_MAX];     /* canonical parent + final component  */
	dev_t dev;                /* the parent directory, as the kernel */
	ino_t ino;                /* knows it (RUN3): bind mounts, links */
	const char *base;         /* the final component (in canon)      */
	hf_lock *h;               /* the handle, once acquired           */
};

/* RUN3: one global order of the objects the kernel says the locks are - the
 * parent directory's device and inode, then the name in it - so the same
 * lock reached through a bind mount or a symlinked parent sorts the same
 * for every run, and counts as given twice. */
static int lock_cmp(const struct run_lock *a, const struct run_lock *b)
{
	if (cli_backend()) /* etcd: by key, the path made absolute lexically */
		return strcmp(a->canon, b->canon);
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return strcmp(a->base, b->base);
}

/* Insertion sort: a handful of locks (glibc's qsort asks the kernel for the
 * memory size first). */
static void sort_locks(struct run_lock *l, size_t n)
{
	if (n < 2)
		return; /* one lock: used as given, never compared */
	for (size_t i = 1; i < n; i++) {
		struct run_lock t = l[i];
		size_t j = i;
		for (; j > 0 && lock_cmp(&l[j - 1], &t) > 0; j--)
			l[j] = l[j - 1];
		l[j] = t;
	}
	for (size_t i = 0; i < n; i++) /* base points into canon, which moved */
		l[i].base = strrchr(l[i].canon, '/') + 1;
}

/* The canonical path of a lock that may not exist yet: realpath of the
 * parent, then the final component; and the parent's identity. */
static int canon_path(struct run_lock *l)
{
	char dir[PATH_MAX], base[NAME_MAX + 1], real[PATH_MAX];
	int rc = hf_path_split(l->given, dir, sizeof dir, base, sizeof base);
	if (rc < 0)
		return rc;
	if ((rc = hf_sys_realpath(dir, real)) < 0)
		return rc;
	struct stat st;
	if ((rc = hf_sys_fstatat(AT_FDCWD, real, &st, 0)) < 0)
		return rc;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	if ((size_t)snprintf(l->canon, sizeof l->canon, "%s%s%s", real, strcmp(real, "/") ? "/" : "",
			     base) >= sizeof l->canon)
		return -ENAMETOOLONG;
	l->base = strrchr(l->canon, '/') + 1;
	return 0;
}

struct run_state {
	struct run_lock *locks;
	size_t nlocks;
	const char **scopes;
	size_t nscopes;
	const char *lane;
	const char *name;
	int mode, slots;          /* every --lock's: --shared, --slots N */
	struct cli_wait_opts w;
	struct cli_child child;
	char session_path[PATH_MAX];
	hf_session *session;      /* held when session_held              */
	bool session_held;
	char pod[256];
	bool pod_held;
	int pod_fd;               /* the scope's liveness file: kept until CMD ended */
};

/* "lane data (pid 4242 on box, 3.0 min old)" */
static void session_words(const hf_rec *h, char *buf, size_t n)
{
	const char *state = hf_rec_str(h, "state");
	if (state && !strcmp(state, "unreadable")) {
		const char *why = hf_rec_str(h, "reason");
		snprintf(buf, n, "an unreadable lock (%s)", why ? CLI_SHOW(why) : "?");
		return;
	}
	int64_t age = 0, pid = 0;
	hf_rec_int(h, "age_ms", &age);
	hf_rec_int(h, "pid", &pid);
	char ages[32];
	cli_format_age(age, ages, sizeof ages);
	const char *lane = hf_rec_str(h, "lane"), *host = hf_rec_str(h, "host");
	snprintf(buf, n, "lane %s (pid %lld on %s, %s old%s)", lane ? CLI_SHOW(lane) : "?",
		 (long long)pid, host && *host ? CLI_SHOW(host) : "?", ages,
		 state && !strcmp(state, "skew") ? ", dated in the future: clock skew" : "");
}

/* The session's holder now, for the waitline (ctx: the lock's path), through
 * a handle of its own on the session's backend (the waiting one is busy). */
static void session_holder_now(const void *path, char *buf, size_t n)
{
	hf_rec *r = NULL;
	buf[0] = '\0';
	hf_session *q = NULL;
	int rc = hf_session_new(path, "status", &q);
	if (rc == 0)
		rc = cli_backend_session(q, path) ? -EINVAL : hf_session_query(q, &r);
	hf_session_free(q);
	if (rc < 0)
		return;
	const char *st = hf_rec_str(r, "state");
	if (st && strcmp(st, "free"))
		session_words(r, buf, n);
	hf_rec_free(r);
}

/* Take the session lane, waiting like the directory locks (RUN5). */
static int run_session(struct run_state *s, int64_t deadline_ns)
{
	int rc = hf_session_default_path(s->session_path, sizeof s->session_path);
	if (rc < 0) {
		cli_err("session: cannot locate the session lock: %s", hf_strerror(rc));
		return cli_fail_rc(rc, NULL, NULL);
	}
	const char *path = s->session_path;
	rc = hf_session_new(path, s->lane, &s->session);
	if (rc == -EINVAL) {
		cli_err("session %s: --session '%s' is not a lane (1 to %d characters of text)", path,
			CLI_SHOW(s->lane), HF_LANE_MAX);
		return cli_fail(HF_EXIT_USAGE, "usage", path, NULL);
	}
	if (rc < 0) {
		cli_err("session %s: %s", path, hf_strerror(rc));
		return cli_fail_rc(rc, path, NULL);
	}
	if ((rc = cli_backend_session(s->session, path)) != 0)
		return rc; /* said, recorded; the handle goes with run_release */
	hf_session_set(s->session, HF_OPT_CANCEL_FD, s->child.sigfd);
	/* on a terminal or with -v, a first try says whether this is a wait */
	bool probe = deadline_ns != 0 && cli_waitline_wanted();
	char what[PATH_MAX + 16];
	snprintf(what, sizeof what, "session %s", path);
	struct cli_waitline wl;
	cli_waitline_init(&wl, what, session_holder_now, path);
	for (;;) {
		hf_session_set(s->session, HF_OPT_WAIT_MS, probe ? 0 : cli_wait_left(deadline_ns));
		rc = hf_session_take(s->session);
		if (probe) {
			probe = false;
			if (rc == HF_EHELD || rc == HF_ETIMEDOUT) {
				char who[600];
				session_words(hf_session_holder(s->session), who, sizeof who);
				cli_waitline_begin(&wl, who);
				continue;
			}
		}
		if (rc != HF_ECANCELED)
			break;
		int sig = cli_child_stop_pending(&s->child);
		if (sig) {
			cli_waitline_end(&wl);
			cli_err("session %s: stopped by %s while waiting", path, strsignal(sig));
			return cli_fail(128 + sig, "stopped_by_signal", path, NULL);
		}
		if (s->child.exited) {
			cli_waitline_end(&wl);
			cli_err("session %s: CMD's process ended (status %d) while waiting; nothing ran",
				path, s->child.code);
			return cli_fail(s->child.code ? s->child.code : HF_EXIT_SOFTWARE, /* never 0 */
					"cmd_ended", path, NULL);
		}
	}
	cli_waitline_end(&wl);
	if (rc >= 0) { /* 1: it broke a stale session */
		s->session_held = true;
		return 0;
	}
	char who[600];
	const hf_rec *h = hf_session_holder(s->session);
	session_words(h, who, sizeof who);
	if (rc == HF_EHELD || rc == HF_ETIMEDOUT) {
		cli_err("session %s is held by %s", path, who);
		return cli_fail(HF_EXIT_CONFLICT, hf_error_name(rc), path, h);
	}
	const char *why = rc != HF_EUNREADABLE ? hf_rec_str(h, "reason") : NULL; /* etcd's */
	if (rc == HF_EUNREADABLE)
		cli_err("session %s: refused, %s", path, who);
	else
		cli_err("session %s: %s%s%s", path, hf_strerror(rc), why ? ": " : "",
			why ? CLI_SHOW(why) : "");
	return cli_fail(cli_exit_for(rc), hf_error_name(rc), path,
			rc == HF_EUNREADABLE || why ? h : NULL);
}

/* Release everything held (RUN4). true when something could not be
 * released as held: it was lost while CMD ran (RUN9), said on stderr. */
static bool run_release(struct run_state *s)
{
	bool lost = false;
	if (s->pod_held) {
		lost |= cli_scope_run_release(s->pod, s->pod_fd) != HF_EXIT_OK;
		s->pod_held = false;
		s->pod_fd = -1;
	}
	for (size_t i = s->nlocks; i-- > 0;) {
		struct run_lock *l = &s->locks[i];
		if (!l->h)
			continue;
		/* RUN8: the handle closes the kernel lock after the release */
		int rc = hf_lock_release(l->h);
		if (rc < 0) {
			char who[400];
			cli_holder_words(hf_lock_holder(l->h), who, sizeof who);
			cli_err("run: lock %s was lost while CMD ran: %s%s%s", l->given,
				hf_strerror(rc), rc == HF_ENOTHELD ? "" : "; now held by ",
				rc == HF_ENOTHELD ? "" : who);
			lost = true;
		}
		hf_lock_free(l->h);
		l->h = NULL;
	}
	if (s->session_held) {
		int rc = hf_session_release(s->session);
		if (rc < 0) {
			cli_err("run: session %s was lost while CMD ran: %s", s->session_path,
				hf_strerror(rc));
			lost = true;
		}
		s->session_held = false;
	}
	hf_session_free(s->session);
	s->session = NULL;
	return lost;
}

/* --json: what is held, before CMD runs (the tokens are gone once it ended):
 * {"session": the record taken + "file" | null, "locks": [{"path", "token",
 * "fence"}] in command-line order, "scope": {"name", "specs"} | null}. */
static json_t *run_held_json(struct run_state *s, const char **order)
{
	char abs[PATH_MAX];
	json_t *session = json_null(), *scope = json_null(), *locks = json_array();
	if (s->session_held) {
		session = cli_rec_json(hf_session_holder(s->session));
		if (!session)
			session = json_object();
		json_object_set_new(session, "file",
				    json_string(cli_abs_path(s->session_path, abs, sizeof abs)));
	}
	for (size_t k = 0; k < s->nlocks; k++)
		for (size_t i = 0; i < s->nlocks; i++)
			if (s->locks[i].given == order[k])
				json_array_append_new(
					locks, json_pack("{s:s, s:s, s:I, s:s, s:o}", "path",
							 cli_abs_path(s->locks[i].canon, abs, sizeof abs),
							 "token", hf_lock_token(s->locks[i].h), "fence",
							 (json_int_t)hf_lock_fence(s->locks[i].h), "mode",
							 cli_mode_name(s->mode), "slots",
							 s->mode == HF_MODE_SLOTS ? json_integer(s->slots)
										  : json_null()));
	if (s->pod_held) {
		json_t *specs = json_array();
		for (size_t i = 0; i < s->nscopes; i++)
			json_array_append_new(specs, json_string(s->scopes[i]));
		scope = json_pack("{s:s, s:o}", "name", s->pod, "specs", specs);
	}
	return json_pack("{s:o, s:o, s:o}", "session", session, "locks", locks, "scope", scope);
}

/* Step 2: everything, for the child's pid, in the order of RUN3. */
static int run_acquire(struct run_state *s)
{
	int64_t deadline = cli_deadline(s->w.wait_ms); /* RUN5: one for all */
	int rc;
	if (s->lane && (rc = run_session(s, deadline)) != 0)
		return rc;
	for (size_t i = 0; i < s->nlocks; i++) {
		struct run_lock *l = &s->locks[i];
		hf_lock *h;
		rc = hf_lock_new(l->canon, &h);
		if (rc < 0) {
			cli_err("lock %s: %s", l->given, hf_strerror(rc));
			return cli_fail_rc(rc, l->given, NULL);
		}
		if ((rc = cli_backend_apply(h, l->given)) != 0) {
			hf_lock_free(h);
			return rc;
		}
		/* The lock's life is CMD's (RUN1): a long CMD is not a leak. */
		hf_lock_set(h, HF_OPT_PID, s->child.pid);
		hf_lock_set(h, HF_OPT_MAX_HOLD_MS, RUN_MAX_HOLD_MS);
		/* the mode goes to the library whatever the backend; its
		 * refusal is what is said */
		rc = s->mode == HF_MODE_EXCLUSIVE ? 0 : hf_lock_set(h, HF_OPT_MODE, s->mode);
		if (rc == 0 && s->mode == HF_MODE_SLOTS)
			rc = hf_lock_set(h, HF_OPT_SLOTS, s->slots);
		if (rc < 0) {
			hf_lock_free(h);
			if (rc == -EOPNOTSUPP)
				return cli_mode_refused("run: lock", l->given, s->mode, NULL);
			cli_err("lock %s: %s", l->given, hf_strerror(rc));
			return cli_fail_rc(rc, l->given, NULL);
		}
		if ((rc = cli_lock_take(h, l->canon, deadline, &s->child)) != 0) {
			hf_lock_free(h);
			return rc;
		}
		l->h = h;
	}
	if (s->nscopes) {
		rc = cli_scope_run_register(s->name, s->scopes, s->nscopes, s->child.pid, deadline,
					    &s->child, &s->pod_fd, s->pod, sizeof s->pod);
		if (rc != 0)
			return rc;
		s->pod_held = true;
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "session", required_argument, NULL, 'S' },
		{ "lock", required_argument, NULL, 'L' },
		{ "shared", no_argument, NULL, 's' },
		{ "slots", required_argument, NULL, 'M' },
		{ "scope", required_argument, NULL, 'P' },
		{ "name", required_argument, NULL, 'N' },
		CLI_WAIT_LONGOPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "command", required_argument, NULL, 'c' },
		CLI_BACKEND_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'J' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct run_state s;
	memset(&s, 0, sizeof s);
	s.pod_fd = -1;
	cli_child_reset(&s.child);
	s.w = (struct cli_wait_opts){ .wait_ms = -1, .conflict_exit = HF_EXIT_CONFLICT };
	s.locks = calloc((size_t)argc, sizeof *s.locks);
	s.scopes = calloc((size_t)argc, sizeof *s.scopes);
	if (!s.locks || !s.scopes) {
		cli_err("out of memory");
		return HF_EXIT_OSERR;
	}
	int code = 0, opt;
	const char *shell_cmd = NULL;
	optind = 1;
	opterr = 0;
	while (!code && (opt = getopt_long(argc, argv, "+nw:E:hvVc:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			cli_verbose = true;
			break;
		case 'V':
			cli_version();
			code = -1;
			break;
		case 'c':
			shell_cmd = optarg;
			break;
		case 'S':
			if (s.lane) {
				cli_err("run: --session given twice");
				code = HF_EXIT_USAGE;
			}
			s.lane = optarg;
			break;
		case 'L':
			if (s.nlocks == RUN_MAX_LOCKS) {
				cli_err("run: at most %d --lock", RUN_MAX_LOCKS);
				code = HF_EXIT_USAGE;
				break;
			}
			s.locks[s.nlocks++].given = optarg;
			break;
		case 's':
		case 'M':
			code = cli_mode_arg("run", NULL, opt == 's' ? NULL : optarg, &s.mode, &s.slots);
			break;
		case 'P':
			s.scopes[s.nscopes++] = optarg;
			break;
		case 'N':
			s.name = optarg;
			break;
		case 'n':
		case 'w':
		case 'E':
			code = cli_wait_opt(&s.w, opt, optarg);
			break;
		case 'h':
			fputs(run_usage, stdout);
			code = -1;
			break;
		case 'J':
			cli_json_enable();
			break;
		default:
			if ((code = cli_backend_opt(opt, optarg)) < 0) {
				code = 0;
				break;
			}
			if (!code) {
				cli_err("run: unknown option or missing argument: %s",
					argv[optind - 1]);
				code = HF_EXIT_USAGE;
			}
		}
	}
	/* -c STRING: flock(1)'s, run by /bin/sh -c, instead of CMD [ARG...] */
	char *sh_argv[] = { "/bin/sh", "-c", (char *)shell_cmd, NULL };
	char **cmdv = shell_cmd ? sh_argv : argv + optind; /* CMD as it runs */
	if (!code && shell_cmd && optind < argc) {
		cli_err("run: -c STRING or CMD [ARG...], not both (CMD: %s)", argv[optind]);
		code = HF_EXIT_USAGE;
	}
	if (!code && optind >= argc && !shell_cmd) {
		cli_err("run: no command given (holdfast run [OPTIONS] -- CMD [ARG...])");
		code = HF_EXIT_USAGE;
	}
	if (!code && s.mode != HF_MODE_EXCLUSIVE && !s.nlocks) {
		cli_err("run: %s applies to --lock: give --lock too",
			s.mode == HF_MODE_SHARED ? "--shared" : "--slots");
		code = HF_EXIT_USAGE;
	}
	if (!code && s.name && !s.nscopes) {
		cli_err("run: --name names the scope allocation: give --scope too");
		code = HF_EXIT_USAGE;
	}
	/* Canonical paths, one global order (RUN3), no lock twice. A single lock
	 * needs no order: it is used as given. */
	for (size_t i = 0; !code && i < s.nlocks; i++) {
		int rc = 0;
		if (s.nlocks == 1 && strlen(s.locks[i].given) < sizeof s.locks[i].canon)
			strcpy(s.locks[i].canon, s.locks[i].given);
		else if (cli_backend()) /* etcd: nothing on this host to resolve */
			cli_backend_path(s.locks[i].given, s.locks[i].canon, sizeof s.locks[i].canon);
		else
			rc = canon_path(&s.locks[i]);
		if (rc < 0) {
			cli_err("lock %s: %s", s.locks[i].given, hf_strerror(rc));
			code = cli_fail_rc(rc, s.locks[i].given, NULL);
		}
	}
	/* Fences go to CMD in command-line order: remember it before sorting. */
	const char **order = calloc(s.nlocks + 1, sizeof *order);
	if (!code) {
		for (size_t i = 0; i < s.nlocks; i++)
			order[i] = s.locks[i].given;
		sort_locks(s.locks, s.nlocks);
		for (size_t i = 1; i < s.nlocks; i++)
			if (!lock_cmp(&s.locks[i], &s.locks[i - 1])) {
				if (strcmp(s.locks[i].canon, s.locks[i - 1].canon))
					cli_err("run: lock %s given twice: %s is the same lock (the same "
						"directory, through another path)",
						s.locks[i - 1].canon, s.locks[i].canon);
				else
					cli_err("run: lock %s given twice", s.locks[i].canon);
				code = HF_EXIT_USAGE;
				break;
			}
	}
	if (code) {
		free(order);
		free(s.locks);
		free(s.scopes);
		return code < 0 ? HF_EXIT_OK : code;
	}

	json_t *held = NULL;
	int rc = cli_child_init(&s.child);
	if (rc == 0)
		rc = cli_child_spawn(&s.child, cmdv, -1, -1);
	if (rc < 0) {
		cli_err("run: cannot start %s: %s", CLI_SHOW(cmdv[0]), hf_strerror(rc));
		code = cli_fail_rc(rc, NULL, NULL);
		goto out;
	}
	int64_t start = hf_sys_mono_ns();
	code = run_acquire(&s);
	if (!code)
		cli_wait_took(start);
	if (code) {
		run_release(&s); /* RUN3: all or nothing */
		cli_child_abort(&s.child);
		/* RUN7: a refusal never runs CMD; -E only chooses its exit code,
		 * even when that code is 0 (flock -n -E 0: "skip quietly") */
		if (code == HF_EXIT_CONFLICT)
			code = s.w.conflict_exit;
		goto out;
	}
	hf_sys_point(HF_PT_RUN_ACQUIRED);
	held = cli_json_on() ? run_held_json(&s, order) : NULL; /* printed once CMD ended */
	if (cli_verbose) /* flock(1)'s --verbose words; the time: cli_wait_took */
		cli_err("executing %s", CLI_SHOW(shell_cmd ? shell_cmd : argv[optind]));

	/* Step 3: HOLDFAST_FENCE in command-line order, HOLDFAST_POD. */
	char fence[CLI_GO_MAX / 2] = "HOLDFAST_FENCE=", pod[sizeof s.pod + 16];
	const char *env[2];
	size_t nenv = 0;
	if (s.nlocks) {
		size_t fl = strlen(fence);
		for (size_t k = 0; k < s.nlocks; k++)
			for (size_t i = 0; i < s.nlocks; i++)
				if (s.locks[i].given == order[k])
					fl += (size_t)snprintf(fence + fl, sizeof fence - fl,
							       "%s%llu", k ? " " : "",
							       (unsigned long long)hf_lock_fence(s.locks[i].h));
		env[nenv++] = fence;
	}
	if (s.pod_held) {
		snprintf(pod, sizeof pod, "HOLDFAST_POD=%s", s.pod);
		env[nenv++] = pod;
	}
	int live[RUN_MAX_LOCKS + 1];
	size_t nlive = 0;
	for (size_t i = 0; i < s.nlocks; i++)
		if (hf_lock_fd(s.locks[i].h) >= 0)
			live[nlive++] = hf_lock_fd(s.locks[i].h); /* RUN8 */
	if (s.pod_fd >= 0)
		live[nlive++] = s.pod_fd; /* RUN8: the scope's live file */
	rc = cli_child_go(&s.child, env, nenv, live, nlive);
	if (rc < 0 && rc != -EPIPE) {
		cli_err("run: cannot start %s: %s", CLI_SHOW(cmdv[0]), hf_strerror(rc));
		cli_child_abort(&s.child);
		run_release(&s);
		code = cli_fail_rc(rc, NULL, NULL);
		goto out;
	}
	/* -EPIPE: the child was killed before it could run CMD; its status says so. */
	code = cli_child_wait(&s.child, -1, NULL, NULL);
	if (code < 0) {
		cli_err("run: waiting for %s: %s", CLI_SHOW(cmdv[0]), hf_strerror(code));
		code = cli_fail_rc(code, NULL, NULL);
	}
	hf_sys_point(HF_PT_RUN_EXITED);
	/* RUN4, RUN6: CMD is still a zombie: released, not reaped */
	if (run_release(&s) && code == 0) {
		cli_err("run: CMD exited 0, but what it ran under was lost meanwhile: exit %d",
			HF_EXIT_CONFLICT);
		code = HF_EXIT_CONFLICT; /* RUN9 */
	}
	cli_child_reap(&s.child);
	if (held && !cli_failed()) { /* --json: after CMD's own output, what was held and how CMD ended */
		json_object_set_new(held, "exit", json_integer(code));
		json_object_set_new(held, "cmd", cli_child_json(&s.child, cmdv));
		cli_json_print(held); /* refused after a recorded failure (JS2) */
		held = NULL;
	}
out:
	json_decref(held);
	cli_child_done(&s.child);
	free(order);
	free(s.locks);
	free(s.scopes);
	return code;
}
