/*
 * cmd_scope.c - `holdfast scope register|release|list|effective|check|reap`
 * over the public API alone (hf_scope, hf_registry): parse, call, word the
 * outcome. The words it shares with `run --scope` (run_scope.c) are
 * declared in scope_words.h.
 */
#include "cli.h"
#include "scope_words.h"

#include "holdfast.h"
#include "sys.h"
#include "text.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: holdfast scope register NAME SPEC... [-w DUR] [--pid PID] [--socket PATH] [--from PARENT]\n"
	"                              [--lease DUR] [--reason TEXT] [--json]\n"
	"       holdfast scope renew NAME [--lease DUR] [--generation G] [--json]\n"
	"       holdfast scope release NAME [--generation G] [--json]\n"
	"       holdfast scope list [--json]\n"
	"       holdfast scope effective NAME [--json]\n"
	"       holdfast scope check PATH [--pod NAME [--generation G]] [--json]\n"
	"       holdfast scope check --staged [--pod NAME [--generation G]] [--json]\n"
	"       holdfast scope reap [--json]\n"
	"\n"
	"A machine-wide registry of path scopes. SPEC is PATH:MODE[:recursive], MODE read\n"
	"or write; recursive covers PATH and everything below it, otherwise PATH and its\n"
	"direct children. Paths are made absolute and canonical (symlinks resolved).\n"
	"Write scopes of two pods never overlap unless one was delegated from the other\n"
	"(--from, default $HOLDFAST_POD); read scopes never conflict. A pod whose\n"
	"process ended is reaped on every change; its scope returns to its parent.\n"
	"\n"
	"  register   record NAME for PID (default: the calling process, our parent);\n"
	"             -w, --wait DUR: while a write scope or NAME is held, wait at most\n"
	"             DUR ('forever': no bound) for it, woken by the registry's changes\n"
	"             (on etcd: a watch), then exit 1 naming the holder (default: try once);\n"
	"             --lease DUR: held by a lease, by no process (for an agent whose every\n"
	"             step is a new process): alive until DUR after the registration or the\n"
	"             last renew, then reaped on the next change, its scope back to its\n"
	"             parent (1s to 365d; on etcd the key's lease, never kept alive);\n"
	"             --reason TEXT: why, shown in list, check and every refusal it causes\n"
	"             (at most 256 bytes of UTF-8, no control characters: else 64)\n"
	"  renew      move a leased NAME's end to DUR from now (--lease; default its own\n"
	"             length), from any process; 1 if it had expired (never brought back,\n"
	"             reaped now), 64 if NAME is not leased, 69 if there is no such pod\n"
	"  release    remove NAME; its children go to its parent\n"
	"  list       every allocation, alive or dead\n"
	"  effective  NAME's own scope minus what its live descendants hold\n"
	"  check      exit 0 if PATH is free (or, with --pod, NAME may write there), 1 if\n"
	"             another pod holds it or NAME lost its scope (--generation: the one\n"
	"             NAME was granted)\n"
	"  check --staged  the commit's guard, in a git work tree: every path the index\n"
	"             would change (added, modified, deleted; a rename's old and new name)\n"
	"             checked as PATH is, against one read of the work tree's registry;\n"
	"             exit 0 if each is free or NAME's, 1 naming each other path and its\n"
	"             holder; runs git (its top-level directory, then the index's diff\n"
	"             against HEAD), 69 if git cannot run or fails\n"
	"             (contrib/git-hooks/pre-commit uses it)\n"
	"  reap       remove every pod whose process is gone\n"
	"\n"
	"Paths reached through a bind mount (or from a container sharing the directory)\n"
	"are the same scope: each spec records the mount's device and the path within\n"
	"that file system. A pod's process is judged by its pid only in its own pid\n"
	"namespace; elsewhere by a kernel lock on its liveness file, held by `run` until\n"
	"CMD ends and, after `register`, by a keeper process until PID ends.\n"
	"\n"
	"Registry: $HOLDFAST_REGISTRY; else the one of the paths' own tree, so that\n"
	"every process sharing the tree (another container with its own /tmp, another\n"
	"worktree) finds the same: inside a git work tree COMMON/holdfast/scope.lock in\n"
	"its git common directory (one for all its worktrees); else MOUNT/.holdfast/scope.lock at the root\n"
	"of the mount holding them, unless that mount is /, a bind mount of a\n"
	"subdirectory, or writable by everyone (a /tmp): then there is none and register\n"
	"exits 77 saying why. register: its specs' registry (one for all); check: PATH's;\n"
	"release, list, effective, reap: the current directory's. Exit codes: 0 done,\n"
	"1 conflict / held / lost / the registry's lock stayed busy, 64 usage, 65 corrupt\n"
	"registry (left untouched), 69 no such pod, 77 unsafe registry directory or file\n"
	"(another user's, a symbolic link, not a regular file) or no registry for the paths.\n"
	"--json: one JSON object on stdout (check: the answer with \"exit\"), or on\n"
	"failure the error object (holdfast(1): JSON OUTPUT).\n"
	"\n"
	"Backend (every subcommand): --backend etcd://HOST:PORT[,HOST:PORT...] (or\n"
	"etcds:// for https; default: HOLDFAST_BACKEND, else 'file', the registry file)\n"
	"keeps the registry in etcd, one key /holdfast/scope/NAME per pod attached to its\n"
	"lease (the generation is the key's create_revision); --ttl DUR the lease\n"
	"(register; default 10s: how long a dead host's or a killed keeper's pod lasts),\n"
	"--etcd-user USER with --etcd-password-file FILE (or HOLDFAST_ETCD_USER,\n"
	"HOLDFAST_ETCD_PASSWORD_FILE), --etcd-ca FILE (or HOLDFAST_ETCD_CA_FILE),\n"
	"--etcd-timeout DUR (one request; default 5s). On etcd specs meet by path only.\n"

	"-h, --help; -V, --version.\n";

#define SHOW(s) CLI_SHOW(s)

/* `holdfast scope` and `run --scope` take --backend (the registry may be an
 * etcd's): set by both before anything reads the registry. */
static bool scope_cmd;

void cli_scope_use_backend(void)
{
	scope_cmd = true;
}

/* The path whose registry the command works on (RG12: register's first
 * spec's, check's PATH; "." - the working directory's - for the verbs
 * without a path). */
static char reg_at[PATH_MAX] = ".";

/* SPEC's path (PATH:MODE[:recursive] without its suffixes) into buf. */
void cli_scope_spec_path(const char *spec, char *buf, size_t n)
{
	snprintf(buf, n, "%s", spec);
	for (int k = 0; k < 2; k++) {
		char *colon = strrchr(buf, ':');
		if (colon && (!strcmp(colon, ":recursive") || !strcmp(colon, ":read") ||
			      !strcmp(colon, ":write")))
			*colon = '\0';
	}
}

static const char *reg_name(char *buf, size_t n)
{
	if (scope_cmd && cli_backend())
		return cli_registry_name(buf, n);
	if (hf_registry_path_for(reg_at, buf, n) < 0)
		snprintf(buf, n, "the registry");
	return buf;
}

void cli_scope_holder_words(const hf_rec *h, char *buf, size_t n)
{
	char age[32] = "";
	int64_t age_ms = cli_scope_field_int(h, "age_ms", -1); /* present when registered is known */
	if (age_ms >= 0)
		cli_format_age(age_ms, age, sizeof age);
	/* RG14, RG15: a leased holder's end, any holder's reason (escaped) */
	char lease[96] = "", why[HF_REASON_MAX * 4 + 16] = "";
	if (cli_scope_field(h, "lease_until")[0])
		snprintf(lease, sizeof lease, ", leased until %s", cli_scope_field(h, "lease_until"));
	const char *r = cli_scope_field(h, "holder_reason"); /* "reason": the refusal's */
	if (r[0])
		snprintf(why, sizeof why, ", reason: %s", SHOW(r));
	snprintf(buf, n, "%s (pid %lld%s%s%s, host %s, generation %llu%s%s%s%s%s)", SHOW(cli_scope_field(h, "name")),
		 (long long)cli_scope_field_int(h, "pid", 0), cli_scope_field_int(h, "foreign_pidns", 0) ? " in another pid namespace" : "",
		 cli_scope_field(h, "comm")[0] ? ", command " : "", SHOW(cli_scope_field(h, "comm")),
		 cli_scope_field(h, "host")[0] ? SHOW(cli_scope_field(h, "host")) : "?", (unsigned long long)cli_scope_field_int(h, "generation", 0),
		 age[0] ? ", registered " : "", age, age[0] ? " ago" : "", lease, why);
}

/* "VERB NAME", or "VERB" for a verb without a name (list, reap): what a
 * message is about. */
static const char *subject(const char *verb, const char *name)
{
	static char b[4096 + 64];
	if (name && *name)
		snprintf(b, sizeof b, "%s %s", verb, SHOW(name));
	else
		snprintf(b, sizeof b, "%s", verb);
	return b;
}

/* The message for a failed register/release; the exit code. given: the
 * caller's spec the refusal is about (NULL: none). */
int cli_scope_report_words(const char *verb, const char *name, const char *spec, int rc,
			const hf_rec *h)
{
	char who[2048], given[4096 + 32] = "";
	if (spec && (rc == HF_ECONFLICT || rc == HF_ENOTYOURS || rc == -EINVAL))
		snprintf(given, sizeof given, "'%s'", SHOW(spec));
	const char *reg = cli_scope_field(h, "registry"), *reason = cli_scope_field(h, "reason");
	switch (rc) {
	case HF_ECONFLICT:
		cli_scope_holder_words(h, who, sizeof who);
		if (cli_scope_field(h, "fs")[0])
			cli_err("scope %s: %s (canonical %s) reaches the same files as the write "
				"scope %s of %s%s, through another path (a bind mount): kernel "
				"identity %s meets %s (registry %s)",
				subject(verb, name), given, cli_scope_field(h, "request"), cli_scope_field(h, "scope"), who,
				cli_scope_field_int(h, "others", 0) ? ", and of more live pods" : "", cli_scope_field(h, "request_fs"),
				cli_scope_field(h, "fs"), reg);
		else
			cli_err("scope %s: %s (canonical %s) overlaps the write scope %s of %s%s "
				"(registry %s)",
				subject(verb, name), given, cli_scope_field(h, "request"), cli_scope_field(h, "scope"), who,
				cli_scope_field_int(h, "others", 0) ? ", and of more live pods" : "", reg);
		break;
	case HF_ETIMEDOUT:
		cli_err("scope %s: the registry %s is busy: %s", subject(verb, name), reg, reason);
		break;
	case -EOVERFLOW:
	case -EFBIG:
		cli_err("scope %s: refusing to write the registry %s: %s", subject(verb, name), reg,
			reason);
		return HF_EXIT_DATAERR;
	case HF_ENOTYOURS:
		cli_scope_holder_words(h, who, sizeof who);
		if (spec)
			cli_err("scope %s: %s (canonical %s) is not inside the effective scope of "
				"its parent %s, which holds %s%s%s%s",
				subject(verb, name), given, cli_scope_field(h, "request"), who, cli_scope_field(h, "scope"),
				cli_scope_field(h, "outside")[0] ? ": " : "",
				SHOW(cli_scope_field(h, "outside")),
				cli_scope_field(h, "outside")[0] ? " is outside it" : "");
		else
			cli_err("scope %s: the name now belongs to another registration: %s",
				subject(verb, name), who);
		break;
	case HF_EHELD:
		cli_scope_holder_words(h, who, sizeof who);
		cli_err("scope %s: the name is taken by %s holding %s", subject(verb, name), who,
			cli_scope_field(h, "scope"));
		break;
	case HF_ELOST:
		cli_err("scope %s: its parent '%s' is not registered (released, or reaped "
			"after its process ended) in %s",
			subject(verb, name), SHOW(cli_scope_field(h, "name")), reg);
		break;
	case HF_ENOTHELD:
		cli_err("scope %s: no such pod in %s", subject(verb, name), reg);
		break;
	case HF_EUNREADABLE:
		cli_err("the scope registry %s is corrupt: %s. Nothing was changed. To recover, "
			"look at it, then move it aside (mv '%s' '%s.bad'): a new registry starts "
			"empty and every pod must register again",
			reg, reason, reg, reg);
		break;
	case HF_EUNSAFE: {
		if (!reg[0]) { /* RG12: no default registry for the paths */
			cli_err("scope %s: no scope registry: %s. Set HOLDFAST_REGISTRY to a file "
				"that every process sharing these paths sees at the same path (or "
				"work inside a git work tree: its registry is in the git common "
				"directory)",
				subject(verb, name), reason[0] ? reason : "none can be placed");
			break;
		}
		char named[1400]; /* "uid 1001" as "user bob (uid 1001)" */
		cli_name_uid(reason, named, sizeof named);
		cli_err("refusing the scope registry %s: %s (it must be ours, not writable by "
			"group or others, and not a symbolic link)",
			reg, named);
		break;
	}
	case -ESRCH: /* --pid names no process */
	case -EINVAL:
		cli_err("scope %s: %s%s%s", subject(verb, name), given, given[0] ? ": " : "",
			reason[0] ? reason : "invalid argument");
		return HF_EXIT_USAGE;
	default:
		if (reason[0])
			cli_err("scope %s: %s%s%s", subject(verb, name), given, given[0] ? ": " : "",
				reason);
		else
			cli_err("scope %s: %s (registry %s)", subject(verb, name), hf_strerror(rc),
				reg[0] ? reg : "?");
	}
	return cli_exit_for(rc);
}

/* report_words, and the failure recorded for --json: the registry's path,
 * the holder when the refusal names one. */
int cli_scope_report(const char *verb, const char *name, const char *spec, int rc, const hf_rec *h)
{
	int code = cli_scope_report_words(verb, name, spec, rc, h);
	char reg[PATH_MAX] = "";
	if (cli_scope_field(h, "registry")[0])
		snprintf(reg, sizeof reg, "%s", cli_scope_field(h, "registry"));
	else
		reg_name(reg, sizeof reg);
	bool who = rc == HF_ECONFLICT || rc == HF_EHELD || rc == HF_ENOTYOURS;
	return cli_fail(code, rc == -ESRCH ? "no_process" : code == HF_EXIT_USAGE ? "usage"
										 : hf_error_name(rc),
			reg, who ? h : NULL);
}

/* The spec of specs (n) that holder record h is about, or NULL. */
const char *cli_scope_spec_of(const char *const *specs, size_t n, const hf_rec *h)
{
	int64_t i = cli_scope_field_int(h, "request_index", -1);
	return specs && i >= 0 && (size_t)i < n ? specs[i] : NULL;
}

/* What a refusal of the last attempt was, when the wait ended on it. */
int cli_scope_refusal_of(int rc, const hf_rec *h)
{
	const char *was = cli_scope_field(h, "refused");
	if ((rc == HF_ETIMEDOUT || rc == HF_ECANCELED) && !strcmp(was, hf_error_name(HF_ECONFLICT)))
		return HF_ECONFLICT;
	if ((rc == HF_ETIMEDOUT || rc == HF_ECANCELED) && !strcmp(was, hf_error_name(HF_EHELD)))
		return HF_EHELD;
	return rc;
}

/* A refusal of the arguments before any I/O: usage. */
static int refuse(const char *verb, const char *name, const char *spec, const char *why)
{
	char given[4096 + 32] = "";
	if (spec)
		snprintf(given, sizeof given, "'%s'", SHOW(spec));
	cli_err("scope %s: %s%s%s", subject(verb, name), given, given[0] ? ": " : "", why);
	return cli_fail(HF_EXIT_USAGE, "usage", NULL, NULL);
}

/* An allocation as `--json` prints it: the file's fields (the record's, in
 * the file's order), and "live" as a boolean when with_live. */
static json_t *alloc_json(const hf_rec *a, bool with_live)
{
	json_t *o = json_loads(hf_rec_json(a), 0, NULL);
	if (!o)
		return json_object();
	bool alive = !strcmp(cli_scope_field(a, "live"), "alive");
	json_object_del(o, "live");
	json_object_del(o, "depth");
	json_object_del(o, "age_ms");
	json_object_del(o, "returned_to");
	if (with_live)
		json_object_set_new(o, "live", json_boolean(alive));
	return o;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	return hf_parse_u64(s, UINT64_MAX, ret) < 0 ? -EINVAL : 0; /* digits only */
}

enum {
	OPT_PID = 256, OPT_SOCKET, OPT_FROM, OPT_JSON, OPT_POD, OPT_GEN, OPT_HELP, OPT_VERSION,
	OPT_WAIT, OPT_LEASE, OPT_REASON, OPT_STAGED
};
static const struct option opts[] = {
	{ "pid", required_argument, NULL, OPT_PID },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "pod", required_argument, NULL, OPT_POD },
	{ "generation", required_argument, NULL, OPT_GEN },
	{ "wait", required_argument, NULL, OPT_WAIT },
	{ "lease", required_argument, NULL, OPT_LEASE },
	{ "reason", required_argument, NULL, OPT_REASON },
	{ "staged", no_argument, NULL, OPT_STAGED },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, 'V' },
	CLI_BACKEND_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *pid, *socket, *from, *pod, *gen, *wait, *lease, *reason;
	bool json, staged;
	int npos;
};

/* Parse options after the verb; allowed: a string of OPT_ letters. */
static int parse_args(int argc, char **argv, const char *allowed, struct args *a)
{
	memset(a, 0, sizeof *a);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:hVw:", opts, NULL)) != -1) {
		if (c == 'w')
			c = OPT_WAIT;
		if (c == 'h' || c == OPT_HELP) {
			fputs(usage, stdout);
			return -1;
		}
		if (c == 'V') {
			cli_version();
			return -1;
		}
		int b = c >= CLI_OPT_BACKEND ? cli_backend_opt(c, optarg) : 0;
		if (b == -1)
			continue;
		if (b)
			return b;
		if (c == '?' || c == ':' || c >= CLI_OPT_BACKEND ||
		    !strchr(allowed, c - OPT_PID + 'a')) {
			cli_err("scope %s: unknown or incomplete option '%s' (see 'holdfast scope "
				"--help')",
				argv[0], argv[optind - 1]);
			return HF_EXIT_USAGE;
		}
		switch (c) {
		case OPT_PID: a->pid = optarg; break;
		case OPT_SOCKET: a->socket = optarg; break;
		case OPT_FROM: a->from = optarg; break;
		case OPT_JSON: a->json = true; cli_json_enable(); break;
		case OPT_POD: a->pod = optarg; break;
		case OPT_GEN: a->gen = optarg; break;
		case OPT_WAIT: a->wait = optarg; break;
		case OPT_LEASE: a->lease = optarg; break;
		case OPT_REASON: a->reason = optarg; break;
		case OPT_STAGED: a->staged = true; break;
		}
	}
	/* a backend that cannot be used: said once, here */
	hf_scope *p;
	int rc = hf_scope_new("holdfast", &p);
	if (rc == 0)
		rc = cli_backend_apply_scope(p, argv[0]);
	hf_scope_free(p);
	return rc < 0 ? HF_EXIT_SOFTWARE : rc;
}

/* Read (or reap) the registry in force: the backend's, or the file of
 * reg_at (RG12). */
static int registry_op(bool reap, hf_registry **r, hf_rec **h)
{
	hf_scope *p;
	int rc = hf_scope_new("holdfast", &p);
	if (rc == 0 && scope_cmd && cli_backend_apply_scope(p, "") != 0)
		rc = -EINVAL; /* parse_args tried it already */
	char spec[PATH_MAX + 8];
	if (rc == 0 && strcmp(reg_at, ".")) { /* a handle's registry is its specs' */
		snprintf(spec, sizeof spec, "%s:read", reg_at);
		rc = hf_scope_add(p, spec);
	}
	if (rc == 0)
		rc = reap ? hf_scope_registry_reap(p, r, h) : hf_scope_registry_read(p, r, h);
	hf_scope_free(p);
	return rc;
}

/* Options and positional arguments in any order: positionals are set
 * aside ("--" ends options), the options go through getopt_long. */
static int collect(int argc, char **argv, const char *allowed, struct args *a, char ***ret_pos)
{
	char **pos = calloc((size_t)argc + 1, sizeof *pos);
	char **rest = calloc((size_t)argc + 2, sizeof *rest);
	int np = 0, nr = 0;
	rest[nr++] = argv[0];
	bool ended = false;
	for (int i = 1; i < argc; i++) {
		if (ended || argv[i][0] != '-' || !argv[i][1]) {
			pos[np++] = argv[i];
			continue;
		}
		if (!strcmp(argv[i], "--")) {
			ended = true;
			continue;
		}
		rest[nr++] = argv[i];
		const struct option *o = NULL;
		if (argv[i][1] == '-' && !strchr(argv[i], '='))
			for (o = opts; o->name && strcmp(o->name, argv[i] + 2); o++)
				; /* the backend's options too (CLI_BACKEND_LONGOPTS) */
		if (o && o->name && o->has_arg == required_argument && i + 1 < argc)
			rest[nr++] = argv[++i];
		else if (!strcmp(argv[i], "-w") && i + 1 < argc)
			rest[nr++] = argv[++i]; /* -w DUR */
	}
	int rc = parse_args(nr, rest, allowed, a);
	if (rc == 0 && optind < nr) {
		cli_err("scope %s: unexpected argument '%s'", argv[0], SHOW(rest[optind]));
		rc = HF_EXIT_USAGE;
	}
	free(rest);
	if (rc != 0) {
		free(pos);
		return rc;
	}
	a->npos = np;
	*ret_pos = pos;
	return 0;
}

#define NAME_RULE                                                                         \
	"a pod name is 1 to 128 bytes of UTF-8 text without control characters, white "    \
	"space, quotes, '\\' or '/', not starting with '-'"

/* A handle for name with specs (n) and the options common to register: 0,
 * or the exit code with the message printed. */
int cli_scope_make(const char *verb, const char *name, const char *const *specs, size_t n,
		      hf_scope **ret)
{
	hf_scope *s;
	int rc = hf_scope_new(name, &s);
	if (rc == -EINVAL)
		return refuse(verb, name, n ? specs[0] : NULL, NAME_RULE);
	if (rc < 0)
		return cli_scope_report(verb, name, NULL, rc, NULL);
	if (scope_cmd && (rc = cli_backend_apply_scope(s, name)) != 0) {
		hf_scope_free(s);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		rc = hf_scope_add(s, specs[i]);
		if (rc < 0) {
			int code = rc == -EINVAL ? refuse(verb, name, specs[i],
							   cli_scope_field(hf_scope_holder(s), "reason"))
						 : cli_scope_report(verb, name, NULL, rc, NULL);
			hf_scope_free(s);
			return code;
		}
	}
	*ret = s;
	return 0;
}

/* The allocation named name, read back (NULL: none; *ret_r to free). */
static const hf_rec *read_back(const char *name, hf_registry **ret_r)
{
	*ret_r = NULL;
	if (registry_op(false, ret_r, NULL) < 0)
		return NULL;
	long i = hf_registry_find(*ret_r, name);
	return i >= 0 ? hf_registry_get(*ret_r, (size_t)i) : NULL;
}

static int do_register(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "abcdijk", &a, &pos); /* pid socket from json wait lease reason */
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	if (a.npos < 2) {
		free(pos);
		cli_err("scope register: give NAME and at least one SPEC (see 'holdfast scope "
			"--help')");
		return HF_EXIT_USAGE;
	}
	const char *name = pos[0];
	const char *const *specs = (const char *const *)pos + 1;
	size_t nspecs = (size_t)a.npos - 1;
	cli_scope_spec_path(specs[0], reg_at, sizeof reg_at); /* RG13: all specs' registry */
	uint64_t pid = 0;
	if (a.pid && (parse_u64(a.pid, &pid) < 0 || pid == 0 || pid > 0x7fffffff)) {
		free(pos);
		cli_err("scope register: --pid '%s' is not a pid", SHOW(a.pid));
		return HF_EXIT_USAGE;
	}
	int64_t lease_ms = 0; /* RG15: 1 s to 365 days, as a lock's */
	if (a.lease && (cli_duration_arg("--lease", a.lease, &lease_ms) ||
			lease_ms < 1000 || lease_ms > 365LL * 86400 * 1000)) {
		free(pos);
		if (lease_ms)
			cli_err("scope register: --lease '%s' is not 1s to 365d", SHOW(a.lease));
		return cli_fail(HF_EXIT_USAGE, "usage", NULL, NULL);
	}
	if (!a.pid && lease_ms) {
		/* held by no process: the pid recorded is who registered it, for
		 * the reader, never judged */
		struct cli_owner owner;
		pid = cli_owner_find(&owner) == 0 ? (uint64_t)owner.pid : (uint64_t)getpid();
	} else if (!a.pid) {
		/* holdfast exits at once: the pod is the script that ran this
		 * line (owner_find.c), never a subshell or a wrapper */
		struct cli_owner owner;
		if (cli_owner_find(&owner) < 0) {
			cli_err("scope register %s: no process to hold the pod: holdfast's caller is "
				"init or outside this pid namespace; give --pid PID",
				SHOW(name));
			free(pos);
			return cli_fail(HF_EXIT_USAGE, "no_process", NULL, NULL);
		}
		pid = (uint64_t)owner.pid;
	}
	int64_t wait_ms = 0; /* -w: the library's wait (HC4; on etcd ES5) */
	if (a.wait && strcmp(a.wait, "forever") && cli_duration_arg("-w", a.wait, &wait_ms)) {
		free(pos);
		return HF_EXIT_USAGE;
	}
	if (a.wait && !strcmp(a.wait, "forever"))
		wait_ms = -1;
	const char *env = getenv("HOLDFAST_POD");
	const char *from = a.from ? a.from : (env && *env ? env : NULL);
	if (from && !*from)
		from = NULL;
	hf_scope *s = NULL;
	rc = cli_scope_make("register", name, specs, nspecs, &s);
	if (rc == 0 && a.reason && hf_scope_set_str(s, HF_OPT_REASON, a.reason) < 0) {
		/* RG14: the length or the byte named */
		rc = refuse("register", name, NULL, cli_scope_field(hf_scope_holder(s), "reason"));
		hf_scope_free(s);
		free(pos);
		return rc;
	}
	if (rc == 0 && ((rc = hf_scope_set(s, HF_OPT_LEASE_MS, lease_ms)) < 0 ||
			(rc = hf_scope_set(s, HF_OPT_PID, (int64_t)pid)) < 0 ||
			(rc = hf_scope_set_str(s, HF_OPT_FROM, from)) < 0 ||
			(rc = hf_scope_set_str(s, HF_OPT_SOCKET, a.socket)) < 0 ||
			(rc = hf_scope_set(s, HF_OPT_WAIT_MS, wait_ms)) < 0 ||
			(rc = hf_scope_register(s)) < 0)) {
		const hf_rec *h = hf_scope_holder(s);
		int was = cli_scope_refusal_of(rc, h); /* a wait that ended: its last refusal */
		int code = cli_scope_report(was != rc ? "register (timed out waiting)" : "register", name,
				  cli_scope_spec_of(specs, nspecs, h), was, h);
		hf_scope_free(s);
		free(pos);
		return code;
	}
	if (rc) {
		free(pos);
		return rc;
	}
	uint64_t gen = hf_scope_generation(s);
	/* The liveness file must be held as long as PID lives, and we exit
	 * now: a keeper holds it (keeper.c); on etcd the keeper keeps the
	 * lease alive and revokes it when PID ends. */
	int keeper = 0;
	bool leased = hf_scope_fd(s) < 0; /* on etcd: a lease, no descriptor */
	if (lease_ms) {
		hf_scope_detach(s); /* RG15: its lease holds it, no keeper */
	} else if (leased) {
		keeper = cli_keep_scope((int)pid, s);
		hf_scope_detach(s);
	} else {
		int live_fd = hf_scope_detach(s);
		keeper = cli_keep_for((int)pid, NULL, 0, &live_fd, 1);
		hf_sys_close(live_fd);
	}
	hf_scope_free(s);
	if (keeper < 0 && leased && !lease_ms)
		cli_err("warning: scope register %s: no keeper for its lease (%s): it ends "
			"after its TTL",
			SHOW(name), hf_strerror(keeper));
	else if (keeper < 0)
		cli_err("warning: scope register %s: no keeper for its liveness file (%s): a "
			"process in another pid namespace may take pid %d for dead",
			SHOW(name), hf_strerror(keeper), (int)pid);
	hf_registry *r;
	const hf_rec *al = read_back(name, &r);
	if (a.json) {
		json_t *o = al ? alloc_json(al, false)
			       : json_pack("{s:s, s:I}", "name", name, "generation", (json_int_t)gen);
		json_object_set_new(o, "keeper", keeper > 0 ? json_integer(keeper) : json_null());
		cli_json_print(o);
	} else {
		if (lease_ms)
			printf("registered %s (leased until %s, by no process; generation %llu%s%s)",
			       name, al ? cli_scope_field(al, "lease_until") : "?",
			       (unsigned long long)gen, from ? ", delegated from " : "", from ? from : "");
		else
			printf("registered %s (pid %d, generation %llu%s%s)", name, (int)pid,
			       (unsigned long long)gen, from ? ", delegated from " : "", from ? from : "");
		for (size_t k = 0; al && k < hf_rec_len(al, "scope_allow"); k++)
			printf("%s%s", k ? ", " : ": ", hf_rec_str_at(al, "scope_allow", k));
		if (keeper > 0)
			printf("; liveness kept by pid %d", keeper);
		printf("\n");
	}
	hf_registry_free(r);
	free(pos);
	return HF_EXIT_OK;
}

static int do_release(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "df", &a, &pos); /* json generation */
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	uint64_t gen = 0;
	if (a.npos != 1 || (a.gen && parse_u64(a.gen, &gen) < 0)) {
		free(pos);
		cli_err("scope release: give exactly one NAME (and --generation G as a number)");
		return HF_EXIT_USAGE;
	}
	hf_scope *s = NULL;
	rc = hf_scope_new(pos[0], &s);
	int code;
	if (rc == -EINVAL)
		code = refuse("release", pos[0], NULL, "not a valid pod name");
	else if (rc < 0)
		code = cli_scope_report("release", pos[0], NULL, rc, NULL);
	else if ((rc = cli_backend_apply_scope(s, pos[0])) != 0)
		code = rc;
	else if (gen > INT64_MAX) {
		/* no registration has it: the name's own registration, if any,
		 * is another one */
		hf_registry *r = NULL;
		rc = registry_op(false, &r, NULL);
		long i = rc == 0 ? hf_registry_find(r, pos[0]) : -1;
		char reg[PATH_MAX] = "";
		reg_name(reg, sizeof reg);
		if (i >= 0) {
			code = cli_scope_report("release", pos[0], NULL, HF_ENOTYOURS,
				      hf_registry_get(r, (size_t)i));
		} else {
			cli_err("scope release %s: no such pod in %s", SHOW(pos[0]), reg);
			code = cli_fail(cli_exit_for(HF_ENOTHELD), "not_held", reg, NULL);
		}
		hf_registry_free(r);
	} else {
		hf_scope_set(s, HF_OPT_GENERATION, (int64_t)gen);
		rc = hf_scope_release(s);
		code = rc < 0 ? cli_scope_report("release", pos[0], NULL, rc, hf_scope_holder(s)) : HF_EXIT_OK;
		if (rc == 0 && a.json) {
			char reg[PATH_MAX] = "";
			reg_name(reg, sizeof reg);
			cli_json_print(json_pack("{s:s, s:s, s:o, s:b}", "name", pos[0], "registry",
						 reg, "generation",
						 a.gen ? json_integer((json_int_t)gen) : json_null(),
						 "released", 1));
		}
	}
	hf_scope_free(s);
	free(pos);
	return code;
}

/* RG15: `scope renew NAME [--lease DUR] [--generation G]`. */
static int do_renew(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "dfj", &a, &pos); /* json generation lease */
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	uint64_t gen = 0;
	int64_t lease_ms = 0;
	if (a.npos != 1 || (a.gen && (parse_u64(a.gen, &gen) < 0 || gen > INT64_MAX))) {
		free(pos);
		cli_err("scope renew: give exactly one NAME (and --generation G as a number)");
		return HF_EXIT_USAGE;
	}
	if (a.lease && (cli_duration_arg("--lease", a.lease, &lease_ms) || lease_ms < 1000 ||
			lease_ms > 365LL * 86400 * 1000)) {
		if (lease_ms)
			cli_err("scope renew: --lease '%s' is not 1s to 365d", SHOW(a.lease));
		free(pos);
		return cli_fail(HF_EXIT_USAGE, "usage", NULL, NULL);
	}
	const char *name = pos[0];
	hf_scope *s = NULL;
	rc = hf_scope_new(name, &s);
	int code = HF_EXIT_OK;
	if (rc == -EINVAL)
		code = refuse("renew", name, NULL, NAME_RULE);
	else if (rc < 0)
		code = cli_scope_report("renew", name, NULL, rc, NULL);
	else if ((rc = cli_backend_apply_scope(s, name)) != 0)
		code = rc;
	else {
		hf_scope_set(s, HF_OPT_GENERATION, (int64_t)gen);
		hf_scope_set(s, HF_OPT_LEASE_MS, lease_ms);
		rc = hf_scope_renew(s);
		const hf_rec *h = hf_scope_holder(s);
		char reg[PATH_MAX] = "", who[2048] = "";
		if (rc < 0 && h)
			cli_scope_holder_words(h, who, sizeof who);
		if (rc < 0)
			snprintf(reg, sizeof reg, "%s", cli_scope_field(h, "registry"));
		if (rc < 0 && !reg[0])
			reg_name(reg, sizeof reg);
		if (rc == HF_ELOST) {
			cli_err("scope renew %s: its lease had expired: reaped now, its scope back "
				"to its parent, never brought back (registry %s)",
				SHOW(name), reg);
			code = cli_fail(cli_exit_for(rc), hf_error_name(rc), reg, h);
		} else if (rc == -EINVAL && h && cli_scope_field(h, "name")[0]) {
			cli_err("scope renew %s: not leased: %s is held by its process's life, "
				"nothing to renew (registry %s)",
				SHOW(name), who, reg);
			code = cli_fail(HF_EXIT_USAGE, "not_leased", reg, h);
		} else if (rc < 0) {
			code = cli_scope_report("renew", name, NULL, rc, h);
		}
	}
	if (rc == 0 && code == HF_EXIT_OK) {
		hf_registry *r;
		const hf_rec *al = read_back(name, &r);
		if (a.json) {
			json_t *o = al ? alloc_json(al, true) : json_pack("{s:s}", "name", name);
			json_object_set_new(o, "renewed", json_true());
			cli_json_print(o);
		} else {
			printf("renewed %s: leased until %s (generation %llu)\n", name,
			       al ? cli_scope_field(al, "lease_until") : "?",
			       (unsigned long long)(al ? cli_scope_field_int(al, "generation", 0) : 0));
		}
		hf_registry_free(r);
	}
	hf_scope_free(s);
	free(pos);
	return code;
}

static int read_registry(hf_registry **r, const char *verb, const char *name)
{
	hf_rec *h = NULL;
	int rc = registry_op(false, r, &h);
	int code = rc < 0 ? cli_scope_report(verb, name, NULL, rc, h) : 0;
	hf_rec_free(h);
	return code;
}

int cli_scope_read_at(const char *path, hf_registry **r, const char *verb, const char *name)
{
	snprintf(reg_at, sizeof reg_at, "%s", path);
	return read_registry(r, verb, name);
}

const char *cli_scope_reg_name(char *buf, size_t n)
{
	return reg_name(buf, n);
}

/* The Unix ms of a record's "registered", 0 when unknown. */
static int64_t registered_ms(const hf_rec *a)
{
	int64_t ms = 0;
	const char *when = hf_rec_str(a, "registered");
	if (!when || hf_time_parse(when, &ms) < 0)
		return 0;
	return ms;
}

static int do_list(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "d", &a, &pos);
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	if (a.npos) {
		free(pos);
		cli_err("scope list: takes no arguments");
		return HF_EXIT_USAGE;
	}
	free(pos);
	hf_registry *r;
	if ((rc = read_registry(&r, "list", "")))
		return rc;
	char path[PATH_MAX];
	reg_name(path, sizeof path);
	size_t n = hf_registry_count(r);
	if (a.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, alloc_json(hf_registry_get(r, i), true));
		cli_json_print(json_pack("{s:s, s:I, s:o}", "registry", path, "generation",
					 (json_int_t)hf_registry_generation(r), "allocations", arr));
	} else {
		printf("registry %s: generation %llu, %zu allocation%s\n", path,
		       (unsigned long long)hf_registry_generation(r), n, n == 1 ? "" : "s");
		for (size_t i = 0; i < n; i++) {
			const hf_rec *al = hf_registry_get(r, i);
			char age[32] = "?";
			int64_t when = registered_ms(al);
			if (when)
				cli_format_age(hf_sys_now_ms() - when, age, sizeof age);
			const char *from = hf_rec_str(al, "delegated_from");
			printf("  %-16s pid %-7lld gen %-5llu %-6s %-9s from %-12s", cli_scope_field(al, "name"),
			       (long long)cli_scope_field_int(al, "pid", 0), (unsigned long long)cli_scope_field_int(al, "generation", 0),
			       !strcmp(cli_scope_field(al, "live"), "alive") ? "live" : "DEAD", age,
			       from ? from : "-");
			for (size_t k = 0; k < hf_rec_len(al, "scope_allow"); k++)
				printf(" %s", hf_rec_str_at(al, "scope_allow", k));
			if (hf_rec_str(al, "lease_until")) { /* RG15 */
				char left[32];
				cli_format_age(cli_scope_field_int(al, "lease_left_ms", 0), left, sizeof left);
				printf("  lease until %s (%s left)", cli_scope_field(al, "lease_until"),
				       left);
			}
			if (hf_rec_str(al, "reason")) /* RG14: escaped */
				printf("  reason: %s", SHOW(cli_scope_field(al, "reason")));
			printf("\n");
		}
	}
	hf_registry_free(r);
	return HF_EXIT_OK;
}

static int do_effective(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "d", &a, &pos);
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	if (a.npos != 1) {
		free(pos);
		cli_err("scope effective: give exactly one NAME");
		return HF_EXIT_USAGE;
	}
	const char *name = pos[0];
	hf_registry *r;
	if ((rc = read_registry(&r, "effective", name))) {
		free(pos);
		return rc;
	}
	hf_rec *e;
	rc = hf_registry_effective(r, name, &e);
	if (rc < 0) {
		char reg[PATH_MAX];
		reg_name(reg, sizeof reg);
		if (rc == HF_ELOST)
			cli_err("scope effective %s: its process is gone; its scope returns to its "
				"parent on the next change (registry %s)",
				SHOW(name), reg);
		else
			cli_err("scope effective %s: no such pod in %s", SHOW(name), reg);
		hf_registry_free(r);
		free(pos);
		return cli_fail_rc(rc, reg, NULL);
	}
	json_t *o = json_loads(hf_rec_json(e), 0, NULL);
	json_t *allow = json_object_get(o, "scope"), *deny = json_object_get(o, "denied");
	if (a.json) {
		cli_json_print(json_pack("{s:s, s:I, s:I, s:O, s:O}", "name", cli_scope_field(e, "name"), "pid",
					 (json_int_t)cli_scope_field_int(e, "pid", 0), "generation",
					 (json_int_t)cli_scope_field_int(e, "generation", 0), "scope_allow", allow,
					 "scope_deny", deny));
	} else {
		printf("%s (pid %lld, generation %llu): effective scope\n", cli_scope_field(e, "name"),
		       (long long)cli_scope_field_int(e, "pid", 0), (unsigned long long)cli_scope_field_int(e, "generation", 0));
		for (size_t k = 0; k < json_array_size(allow); k++)
			printf("  %s\n", json_string_value(json_array_get(allow, k)));
		for (size_t k = 0; k < json_array_size(deny); k++) {
			json_t *d = json_array_get(deny, k);
			printf("    minus %s (delegated to %s, pid %lld)\n",
			       json_string_value(json_object_get(d, "scope")),
			       json_string_value(json_object_get(d, "name")),
			       (long long)json_integer_value(json_object_get(d, "pid")));
		}
	}
	json_decref(o);
	hf_rec_free(e);
	hf_registry_free(r);
	free(pos);
	return HF_EXIT_OK;
}

static int do_check(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "defl", &a, &pos); /* json pod generation staged */
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	uint64_t gen = 0;
	if (a.npos != !a.staged || (a.gen && (!a.pod || parse_u64(a.gen, &gen) < 0 || gen == 0))) {
		free(pos);
		cli_err("scope check: give exactly one PATH, or --staged and no PATH "
			"(--generation G needs --pod NAME and a positive number)");
		return HF_EXIT_USAGE;
	}
	if (a.staged) {
		free(pos);
		hf_scope *named = NULL; /* --pod a pod name, or refused */
		if (a.pod && hf_scope_new(a.pod, &named) == -EINVAL)
			return refuse("check --staged", a.pod, NULL, NAME_RULE);
		hf_scope_free(named);
		return cli_scope_check_staged(a.pod, gen, a.json);
	}
	const char *given = pos[0];
	char canon[PATH_MAX];
	rc = hf_path_canonical(given, canon, sizeof canon);
	if (rc < 0) {
		cli_err("scope check: cannot resolve '%s': %s", SHOW(given), hf_strerror(rc));
		int code = cli_fail(rc == -EINVAL ? HF_EXIT_USAGE : cli_exit_for(rc),
				    rc == -EINVAL ? "usage" : hf_error_name(rc), given, NULL);
		free(pos);
		return code;
	}
	snprintf(reg_at, sizeof reg_at, "%s", canon); /* RG12: PATH's registry */
	hf_registry *r;
	if ((rc = read_registry(&r, "check", given))) {
		free(pos);
		return rc;
	}
	hf_rec *v;
	int state = hf_registry_check(r, canon, a.pod, gen, &v);
	if (state < 0) {
		char reg[PATH_MAX] = "";
		reg_name(reg, sizeof reg);
		cli_err("scope check %s: %s", SHOW(given), hf_strerror(state));
		hf_registry_free(r);
		free(pos);
		return cli_fail_rc(state, reg, NULL);
	}
	const hf_rec *holder = NULL, *pod = NULL;
	long hi = hf_rec_str(v, "holder") ? hf_registry_find(r, cli_scope_field(v, "holder")) : -1;
	long pi = a.pod ? hf_registry_find(r, a.pod) : -1;
	if (hi >= 0)
		holder = hf_registry_get(r, (size_t)hi);
	if (pi >= 0)
		pod = hf_registry_get(r, (size_t)pi);
	const char *holder_scope = cli_scope_field(v, "holder_scope"), *holder_fs = hf_rec_str(v, "holder_fs");
	int code = state == HF_SCOPE_FREE || state == HF_SCOPE_YOURS ? HF_EXIT_OK
								     : HF_EXIT_CONFLICT;
	if (a.json) {
		json_t *h = json_null();
		if (holder)
			h = json_pack("{s:s, s:I, s:s, s:I, s:s}", "name", cli_scope_field(holder, "name"), "pid",
				      (json_int_t)cli_scope_field_int(holder, "pid", 0), "scope", holder_scope,
				      "generation", (json_int_t)cli_scope_field_int(holder, "generation", 0), "host",
				      cli_scope_field(holder, "host"));
		if (holder && hf_rec_str(holder, "reason")) /* RG14 */
			json_object_set_new(h, "reason", json_string(cli_scope_field(holder, "reason")));
		if (holder && hf_rec_str(holder, "lease_until")) /* RG15 */
			json_object_set_new(h, "lease_until",
					    json_string(cli_scope_field(holder, "lease_until")));
		if (holder && holder_fs)
			json_object_set_new(h, "fs", json_string(holder_fs));
		char fs[PATH_MAX + 32], abs[PATH_MAX];
		json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:o, s:I}", "path",
				      cli_abs_path(given, abs, sizeof abs), "canonical", canon,
				      "state", cli_scope_field(v, "state"), "exit", code, "holder", h, "generation",
				      (json_int_t)hf_registry_generation(r));
		json_object_set_new(o, "fs", hf_path_identity(canon, fs, sizeof fs) == 0
						    ? json_string(fs)
						    : json_null());
		if (a.pod) {
			json_object_set_new(o, "pod", json_string(a.pod));
			json_object_set_new(o, "pod_generation",
					    pod ? json_integer((json_int_t)cli_scope_field_int(pod, "generation", 0))
						: json_null());
		}
		cli_json_print(o);
	} else {
		char where[2 * PATH_MAX + 16];
		if (strcmp(given, canon))
			snprintf(where, sizeof where, "%s (canonical %s)", SHOW(given), canon);
		else
			snprintf(where, sizeof where, "%s", canon);
		char who[600 + PATH_MAX + 4 * HF_REASON_MAX + 128] = "", extra[4 * HF_REASON_MAX + 96] = "";
		if (holder && hf_rec_str(holder, "lease_until"))
			snprintf(extra, sizeof extra, ", leased until %s",
				 cli_scope_field(holder, "lease_until"));
		if (holder && hf_rec_str(holder, "reason")) /* RG14: escaped */
			snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ", reason: %s",
				 SHOW(cli_scope_field(holder, "reason")));
		if (holder)
			snprintf(who, sizeof who, "%s (pid %lld, generation %llu%s) with %s%s%s%s",
				 cli_scope_field(holder, "name"), (long long)cli_scope_field_int(holder, "pid", 0),
				 (unsigned long long)cli_scope_field_int(holder, "generation", 0), extra, holder_scope,
				 holder_fs ? " (the same files through another path: " : "",
				 holder_fs ? holder_fs : "", holder_fs ? ")" : "");
		switch (state) {
		case HF_SCOPE_FREE:
			printf("%s: free (registry generation %llu)\n", where,
			       (unsigned long long)hf_registry_generation(r));
			break;
		case HF_SCOPE_YOURS:
			printf("%s: yours (%s, generation %llu)\n", where, cli_scope_field(pod, "name"),
			       (unsigned long long)cli_scope_field_int(pod, "generation", 0));
			break;
		case HF_SCOPE_HELD:
			printf("%s: held by %s\n", where, who);
			break;
		case HF_SCOPE_OUTSIDE:
			printf("%s: outside %s's write scope (nobody holds it)\n", where, SHOW(a.pod));
			break;
		case HF_SCOPE_LOST:
			if (pod && !strcmp(cli_scope_field(pod, "live"), "alive"))
				printf("%s: %s lost its scope: generation %s is gone, the name now "
				       "has generation %llu%s%s\n",
				       where, SHOW(a.pod), SHOW(a.gen),
				       (unsigned long long)cli_scope_field_int(pod, "generation", 0),
				       who[0] ? "; the path is held by " : "", who);
			else
				printf("%s: %s lost its scope (released or reaped)%s%s\n", where,
				       SHOW(a.pod), who[0] ? "; the path is held by " : "", who);
			break;
		}
	}
	hf_rec_free(v);
	hf_registry_free(r);
	free(pos);
	return code;
}

static int do_reap(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "d", &a, &pos);
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	free(pos);
	if (a.npos) {
		cli_err("scope reap: takes no arguments");
		return HF_EXIT_USAGE;
	}
	hf_registry *r;
	hf_rec *h = NULL;
	rc = registry_op(true, &r, &h);
	if (rc < 0) {
		int code = cli_scope_report("reap", "", NULL, rc, h);
		hf_rec_free(h);
		return code;
	}
	size_t n = hf_registry_count(r);
	if (a.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++) {
			const hf_rec *al = hf_registry_get(r, i);
			json_t *o = alloc_json(al, false);
			const char *to = hf_rec_str(al, "returned_to");
			json_object_set_new(o, "returned_to", to ? json_string(to) : json_null());
			json_array_append_new(arr, o);
		}
		cli_json_print(json_pack("{s:o, s:I}", "reaped", arr, "generation",
					 (json_int_t)hf_registry_generation(r)));
	} else {
		for (size_t i = 0; i < n; i++) {
			const hf_rec *al = hf_registry_get(r, i);
			printf("reaped %s (pid %lld gone, generation %llu):", cli_scope_field(al, "name"),
			       (long long)cli_scope_field_int(al, "pid", 0), (unsigned long long)cli_scope_field_int(al, "generation", 0));
			for (size_t k = 0; k < hf_rec_len(al, "scope_allow"); k++)
				printf(" %s", hf_rec_str_at(al, "scope_allow", k));
			const char *to = hf_rec_str(al, "returned_to");
			printf("; returned to %s\n", to ? to : "nobody (top level)");
		}
		if (n == 0)
			printf("nothing to reap (registry generation %llu)\n",
			       (unsigned long long)hf_registry_generation(r));
	}
	hf_registry_free(r);
	return HF_EXIT_OK;
}

int cmd_scope(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return HF_EXIT_USAGE;
	}
	scope_cmd = true;
	const char *v = argv[1];
	if (!strcmp(v, "--help") || !strcmp(v, "-h") || !strcmp(v, "help")) {
		fputs(usage, stdout);
		return HF_EXIT_OK;
	}
	if (!strcmp(v, "--version") || !strcmp(v, "-V"))
		return cli_version();
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} verbs[] = {
		{ "register", do_register }, { "release", do_release }, { "renew", do_renew },
		{ "list", do_list },
		{ "effective", do_effective }, { "check", do_check }, { "reap", do_reap },
	};
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (!strcmp(v, verbs[i].name))
			return verbs[i].fn(argc - 1, argv + 1);
	cli_err("scope: unknown command '%s' (see 'holdfast scope --help')", SHOW(v));
	return HF_EXIT_USAGE;
}
