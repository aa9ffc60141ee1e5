/*
 * cmd_scope.c - `holdfast scope register|release|list|effective|check|reap`
 * and the scope side of `holdfast run --scope`.
 */
#include "cli.h"

#include "holdfast.h"
#include "internal.h"
#include "registry.h"
#include "run.h"
#include "wait.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: holdfast scope register NAME SPEC... [--pid PID] [--socket PATH] [--from PARENT] [--json]\n"
	"       holdfast scope release NAME [--generation G]\n"
	"       holdfast scope list [--json]\n"
	"       holdfast scope effective NAME [--json]\n"
	"       holdfast scope check PATH [--pod NAME [--generation G]] [--json]\n"
	"       holdfast scope reap [--json]\n"
	"\n"
	"A machine-wide registry of path scopes. SPEC is PATH:MODE[:recursive], MODE read\n"
	"or write; recursive covers PATH and everything below it, otherwise PATH and its\n"
	"direct children. Paths are made absolute and canonical (symlinks resolved).\n"
	"Write scopes of two pods never overlap unless one was delegated from the other\n"
	"(--from, default $HOLDFAST_POD); read scopes never conflict. A pod whose\n"
	"process ended is reaped on every change; its scope returns to its parent.\n"
	"\n"
	"  register   record NAME for PID (default: the calling process, our parent)\n"
	"  release    remove NAME; its children go to its parent\n"
	"  list       every allocation, alive or dead\n"
	"  effective  NAME's own scope minus what its live descendants hold\n"
	"  check      exit 0 if PATH is free (or, with --pod, NAME may write there), 1 if\n"
	"             another pod holds it or NAME lost its scope (--generation: the one\n"
	"             NAME was granted)\n"
	"  reap       remove every pod whose process is gone\n"
	"\n"
	"Paths reached through a bind mount (or from a container sharing the directory)\n"
	"are the same scope: each spec records the mount's device and the path within\n"
	"that file system. A pod's process is judged by its pid only in its own pid\n"
	"namespace; elsewhere by a kernel lock on its liveness file, held by `run` until\n"
	"CMD ends and, after `register`, by a keeper process until PID ends.\n"
	"\n"
	"Registry: $HOLDFAST_REGISTRY, else /tmp/holdfast-UID/scope.lock - one per user\n"
	"whatever the environment (login shell, cron, su, sudo, env -i). A process with a\n"
	"private /tmp (systemd PrivateTmp=yes, a container) has its own there: set\n"
	"HOLDFAST_REGISTRY to a path every process of the user sees. Exit codes: 0 done,\n"
	"1 conflict / held / lost / the registry's lock stayed busy, 64 usage, 65 corrupt\n"
	"registry (left untouched), 69 no such pod, 77 unsafe registry directory or file\n"
	"(another user's, a symbolic link, not a regular file).\n";

#define SHOW(s) CLI_SHOW(s)

static void holder_words(const struct hf_scopereg_holder *h, char *buf, size_t n)
{
	char age[32] = "";
	if (h->age_ms >= 0 && h->registered_ms)
		cli_format_age(h->age_ms, age, sizeof age);
	snprintf(buf, n, "%s (pid %lld%s%s%s, host %s, generation %llu%s%s%s)", SHOW(h->name),
		 (long long)h->pid, h->foreign_pidns ? " in another pid namespace" : "",
		 h->comm[0] ? ", command " : "", SHOW(h->comm), h->host[0] ? SHOW(h->host) : "?",
		 (unsigned long long)h->generation, age[0] ? ", registered " : "", age,
		 age[0] ? " ago" : "");
}

/* The message for a failed register/release; the exit code. */
static int report(const char *verb, const char *name, const char *const *specs, int rc,
		  const struct hf_scopereg_holder *h)
{
	char who[512], given[HF_SCOPE_SPEC_MAX + 32] = "";
	if (specs && (rc == HF_ECONFLICT || rc == HF_ENOTYOURS || rc == -EINVAL))
		snprintf(given, sizeof given, "'%s'", SHOW(specs[h->request_index]));
	switch (rc) {
	case HF_ECONFLICT:
		holder_words(h, who, sizeof who);
		if (h->fs[0])
			cli_err("scope %s %s: %s (canonical %s) reaches the same files as the write "
				"scope %s of %s%s, through another path (a bind mount): kernel "
				"identity %s meets %s (registry %s)",
				verb, SHOW(name), given, h->request, h->scope, who,
				h->others ? ", and of more live pods" : "", h->request_fs, h->fs,
				h->registry);
		else
			cli_err("scope %s %s: %s (canonical %s) overlaps the write scope %s of %s%s "
				"(registry %s)",
				verb, SHOW(name), given, h->request, h->scope, who,
				h->others ? ", and of more live pods" : "", h->registry);
		break;
	case HF_ETIMEDOUT:
		cli_err("scope %s %s: the registry %s is busy: %s", verb, SHOW(name), h->registry,
			h->reason);
		break;
	case -EOVERFLOW:
	case -EFBIG:
		cli_err("scope %s %s: refusing to write the registry %s: %s", verb, SHOW(name),
			h->registry, h->reason);
		return HF_EXIT_DATAERR;
	case HF_ENOTYOURS:
		holder_words(h, who, sizeof who);
		if (specs)
			cli_err("scope %s %s: %s (canonical %s) is not inside the effective scope of "
				"its parent %s, which holds %s",
				verb, SHOW(name), given, h->request, who, h->scope);
		else
			cli_err("scope %s %s: the name now belongs to another registration: %s",
				verb, SHOW(name), who);
		break;
	case HF_EHELD:
		holder_words(h, who, sizeof who);
		cli_err("scope %s %s: the name is taken by %s holding %s", verb, SHOW(name), who,
			h->scope);
		break;
	case HF_ELOST:
		cli_err("scope %s %s: its parent '%s' is not registered (released, or reaped "
			"after its process ended) in %s",
			verb, SHOW(name), SHOW(h->name), h->registry);
		break;
	case HF_ENOTHELD:
		cli_err("scope %s %s: no such pod in %s", verb, SHOW(name), h->registry);
		break;
	case HF_EUNREADABLE:
		cli_err("the scope registry %s is corrupt: %s. Nothing was changed. To recover, "
			"look at it, then move it aside (mv '%s' '%s.bad'): a new registry starts "
			"empty and every pod must register again",
			h->registry, h->reason, h->registry, h->registry);
		break;
	case HF_EUNSAFE:
		cli_err("refusing the scope registry %s: %s (it must be ours, not writable by "
			"group or others, and not a symbolic link)",
			h->registry, h->reason);
		break;
	case -ESRCH: /* --pid names no process */
	case -EINVAL:
		cli_err("scope %s %s: %s%s%s", verb, SHOW(name), given, given[0] ? ": " : "",
			h->reason[0] ? h->reason : "invalid argument");
		return HF_EXIT_USAGE;
	default:
		if (h->reason[0])
			cli_err("scope %s %s: %s%s%s", verb, SHOW(name), given, given[0] ? ": " : "",
				h->reason);
		else
			cli_err("scope %s %s: %s (registry %s)", verb, SHOW(name), hf_strerror(rc),
				h->registry[0] ? h->registry : "?");
	}
	return cli_exit_for(rc);
}

static json_t *alloc_json(const struct hf_scopereg_alloc *a, bool with_live)
{
	char when[40] = "";
	if (a->registered_ms)
		hf_time_format(a->registered_ms, when, sizeof when);
	json_t *specs = json_array();
	for (size_t k = 0; k < a->nscope; k++)
		json_array_append_new(specs, json_string(a->scope_allow[k]));
	json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:s, s:o, s:o, s:o, s:I}", "name", a->name,
			      "pid", (json_int_t)a->pid, "pid_start", (json_int_t)a->pid_start,
			      "boot_id", a->boot_id, "host", a->host, "socket",
			      a->socket ? json_string(a->socket) : json_null(), "scope_allow", specs,
			      "delegated_from",
			      a->delegated_from ? json_string(a->delegated_from) : json_null(),
			      "generation", (json_int_t)a->generation);
	if (when[0])
		json_object_set_new(o, "registered", json_string(when));
	/* the fields of the file, as the file has them (registry.c) */
	if (a->pidns) {
		json_object_set_new(o, "pidns", json_integer((json_int_t)a->pidns));
		json_object_set_new(o, "timens", json_integer((json_int_t)a->timens));
		json_object_set_new(o, "boottime_ms", json_integer((json_int_t)a->boot_ms));
		json_object_set_new(o, "comm", json_string(a->comm));
	}
	if (a->token)
		json_object_set_new(o, "token", json_string(a->token));
	if (a->nscope_fs) {
		json_t *fs = json_array();
		for (size_t k = 0; k < a->nscope; k++) {
			json_t *l = json_array();
			for (size_t j = 0; j < a->nscope_fs; j++)
				if (a->scope_fs_spec[j] == k)
					json_array_append_new(l, json_string(a->scope_fs[j]));
			json_array_append_new(fs, l);
		}
		json_object_set_new(o, "scope_fs", fs);
	}
	if (with_live)
		json_object_set_new(o, "live", json_boolean(a->live == HF_ALIVE));
	return o;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

enum { OPT_PID = 256, OPT_SOCKET, OPT_FROM, OPT_JSON, OPT_POD, OPT_GEN, OPT_HELP };
static const struct option opts[] = {
	{ "pid", required_argument, NULL, OPT_PID },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "pod", required_argument, NULL, OPT_POD },
	{ "generation", required_argument, NULL, OPT_GEN },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *pid, *socket, *from, *pod, *gen;
	bool json;
	int npos;
};

/* Parse options after the verb; allowed: a string of OPT_ letters. */
static int parse_args(int argc, char **argv, const char *allowed, struct args *a)
{
	memset(a, 0, sizeof *a);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		if (c == 'h' || c == OPT_HELP) {
			fputs(usage, stdout);
			return -1;
		}
		if (c == '?' || c == ':' || !strchr(allowed, c - OPT_PID + 'a')) {
			cli_err("scope %s: unknown or incomplete option '%s' (see 'holdfast scope "
				"--help')",
				argv[0], argv[optind - 1]);
			return HF_EXIT_USAGE;
		}
		switch (c) {
		case OPT_PID: a->pid = optarg; break;
		case OPT_SOCKET: a->socket = optarg; break;
		case OPT_FROM: a->from = optarg; break;
		case OPT_JSON: a->json = true; break;
		case OPT_POD: a->pod = optarg; break;
		case OPT_GEN: a->gen = optarg; break;
		}
	}
	return 0;
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
				;
		if (o && o->name && o->has_arg == required_argument && i + 1 < argc)
			rest[nr++] = argv[++i];
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

static int do_register(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "abcd", &a, &pos); /* pid socket from json */
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	if (a.npos < 2) {
		free(pos);
		cli_err("scope register: give NAME and at least one SPEC (see 'holdfast scope "
			"--help')");
		return HF_EXIT_USAGE;
	}
	struct hf_scopereg_request req = { .name = pos[0], .specs = (const char *const *)pos + 1,
					.nspecs = (size_t)a.npos - 1, .socket = a.socket };
	uint64_t pid = 0;
	if (a.pid && (parse_u64(a.pid, &pid) < 0 || pid == 0 || pid > 0x7fffffff)) {
		free(pos);
		cli_err("scope register: --pid '%s' is not a pid", SHOW(a.pid));
		return HF_EXIT_USAGE;
	}
	if (!a.pid) {
		/* holdfast exits at once: the pod is the script that ran this
		 * line (owner_find.c), never a subshell or a wrapper */
		pid_t owner;
		if (cli_owner_find(&owner, NULL, 0) < 0) {
			cli_err("scope register %s: no process to hold the pod: holdfast's caller is "
				"init or outside this pid namespace; give --pid PID",
				SHOW(pos[0]));
			free(pos);
			return HF_EXIT_USAGE;
		}
		pid = (uint64_t)owner;
	}
	req.pid = (pid_t)pid;
	const char *env = getenv("HOLDFAST_POD");
	req.from = a.from ? a.from : (env && *env ? env : NULL);
	if (req.from && !*req.from)
		req.from = NULL;
	struct hf_scopereg_holder h;
	uint64_t gen;
	int live_fd = -1;
	rc = hf_scopereg_register(&req, &gen, &live_fd, &h);
	if (rc < 0) {
		int code = report("register", req.name, req.specs, rc, &h);
		if (a.json)
			cli_json_print(json_pack("{s:s, s:s, s:i}", "error", hf_strerror(rc), "name",
						 req.name, "exit", code));
		free(pos);
		return code;
	}
	/* The liveness file must be held as long as PID lives, and we exit
	 * now: a keeper holds it (keeper.c). */
	int keeper = cli_keep_for((int)req.pid, &live_fd, 1);
	hf_sys_close(live_fd);
	if (keeper < 0)
		cli_err("warning: scope register %s: no keeper for its liveness file (%s): a "
			"process in another pid namespace may take pid %d for dead",
			SHOW(req.name), hf_strerror(keeper), (int)req.pid);
	struct hf_scopereg_table *t;
	rc = hf_scopereg_read(NULL, &t, &h);
	long i = rc == 0 ? hf_scopereg_find(t, req.name) : -1;
	struct hf_scopereg_alloc al;
	if (i >= 0)
		hf_scopereg_get(t, (size_t)i, &al);
	if (a.json) {
		json_t *o = i >= 0 ? alloc_json(&al, false)
				   : json_pack("{s:s, s:I}", "name", req.name, "generation",
					       (json_int_t)gen);
		json_object_set_new(o, "keeper", keeper > 0 ? json_integer(keeper) : json_null());
		cli_json_print(o);
	} else {
		printf("registered %s (pid %d, generation %llu%s%s)", req.name, (int)req.pid,
		       (unsigned long long)gen, req.from ? ", delegated from " : "",
		       req.from ? req.from : "");
		for (size_t k = 0; i >= 0 && k < al.nscope; k++)
			printf("%s%s", k ? ", " : ": ", al.scope_allow[k]);
		if (keeper > 0)
			printf("; liveness kept by pid %d", keeper);
		printf("\n");
	}
	if (rc == 0)
		hf_scopereg_free(t);
	free(pos);
	return HF_EXIT_OK;
}

static int do_release(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "f", &a, &pos); /* generation */
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	uint64_t gen = 0;
	if (a.npos != 1 || (a.gen && parse_u64(a.gen, &gen) < 0)) {
		free(pos);
		cli_err("scope release: give exactly one NAME (and --generation G as a number)");
		return HF_EXIT_USAGE;
	}
	struct hf_scopereg_holder h;
	rc = hf_scopereg_release(NULL, pos[0], gen, &h);
	int code = rc < 0 ? report("release", pos[0], NULL, rc, &h) : HF_EXIT_OK;
	free(pos);
	return code;
}

static int read_table(struct hf_scopereg_table **t, const char *verb, const char *name)
{
	struct hf_scopereg_holder h;
	int rc = hf_scopereg_read(NULL, t, &h);
	if (rc < 0)
		return report(verb, name, NULL, rc, &h);
	return 0;
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
	struct hf_scopereg_table *t;
	if ((rc = read_table(&t, "list", "")))
		return rc;
	char path[PATH_MAX];
	hf_scopereg_path(path, sizeof path);
	size_t n = hf_scopereg_count(t);
	if (a.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++) {
			struct hf_scopereg_alloc al;
			hf_scopereg_get(t, i, &al);
			json_array_append_new(arr, alloc_json(&al, true));
		}
		cli_json_print(json_pack("{s:s, s:I, s:o}", "registry", path, "generation",
					 (json_int_t)hf_scopereg_generation(t), "allocations", arr));
	} else {
		printf("registry %s: generation %llu, %zu allocation%s\n", path,
		       (unsigned long long)hf_scopereg_generation(t), n, n == 1 ? "" : "s");
		for (size_t i = 0; i < n; i++) {
			struct hf_scopereg_alloc al;
			hf_scopereg_get(t, i, &al);
			char age[32] = "?";
			if (al.registered_ms)
				cli_format_age(hf_sys_now_ms() - al.registered_ms, age, sizeof age);
			printf("  %-16s pid %-7lld gen %-5llu %-6s %-9s from %-12s",
			       al.name, (long long)al.pid, (unsigned long long)al.generation,
			       al.live == HF_ALIVE ? "live" : "DEAD", age,
			       al.delegated_from ? al.delegated_from : "-");
			for (size_t k = 0; k < al.nscope; k++)
				printf(" %s", al.scope_allow[k]);
			printf("\n");
		}
	}
	hf_scopereg_free(t);
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
	struct hf_scopereg_table *t;
	if ((rc = read_table(&t, "effective", name))) {
		free(pos);
		return rc;
	}
	struct hf_scopereg_deny *d = NULL;
	size_t nd = 0;
	rc = hf_scopereg_effective(t, name, &d, &nd);
	if (rc < 0) {
		char reg[PATH_MAX];
		hf_scopereg_path(reg, sizeof reg);
		if (rc == HF_ELOST)
			cli_err("scope effective %s: its process is gone; its scope returns to its "
				"parent on the next change (registry %s)",
				SHOW(name), reg);
		else
			cli_err("scope effective %s: no such pod in %s", SHOW(name), reg);
		hf_scopereg_free(t);
		free(pos);
		return cli_exit_for(rc);
	}
	struct hf_scopereg_alloc al;
	hf_scopereg_get(t, (size_t)hf_scopereg_find(t, name), &al);
	if (a.json) {
		json_t *allow = json_array(), *deny = json_array();
		for (size_t k = 0; k < al.nscope; k++)
			json_array_append_new(allow, json_string(al.scope_allow[k]));
		for (size_t k = 0; k < nd; k++)
			json_array_append_new(deny, json_pack("{s:s, s:s, s:I}", "scope", d[k].scope,
							      "name", d[k].name, "pid",
							      (json_int_t)d[k].pid));
		cli_json_print(json_pack("{s:s, s:I, s:I, s:o, s:o}", "name", al.name, "pid",
					 (json_int_t)al.pid, "generation",
					 (json_int_t)al.generation, "scope_allow", allow,
					 "scope_deny", deny));
	} else {
		printf("%s (pid %lld, generation %llu): effective scope\n", al.name,
		       (long long)al.pid, (unsigned long long)al.generation);
		for (size_t k = 0; k < al.nscope; k++)
			printf("  %s\n", al.scope_allow[k]);
		for (size_t k = 0; k < nd; k++)
			printf("    minus %s (delegated to %s, pid %lld)\n", d[k].scope, d[k].name,
			       (long long)d[k].pid);
	}
	free(d);
	hf_scopereg_free(t);
	free(pos);
	return HF_EXIT_OK;
}

static const char *state_name(int s)
{
	static const char *names[] = { "free", "held", "yours", "outside", "lost" };
	return s >= 0 && s < 5 ? names[s] : "?";
}

static int do_check(int argc, char **argv)
{
	struct args a;
	char **pos;
	int rc = collect(argc, argv, "def", &a, &pos); /* json pod generation */
	if (rc)
		return rc < 0 ? HF_EXIT_OK : rc;
	uint64_t gen = 0;
	if (a.npos != 1 || (a.gen && (!a.pod || parse_u64(a.gen, &gen) < 0 || gen == 0))) {
		free(pos);
		cli_err("scope check: give exactly one PATH (--generation G needs --pod NAME and "
			"a positive number)");
		return HF_EXIT_USAGE;
	}
	const char *given = pos[0];
	char canon[PATH_MAX];
	rc = hf_path_canonical(given, canon, sizeof canon);
	if (rc < 0) {
		cli_err("scope check: cannot resolve '%s': %s", SHOW(given), hf_strerror(rc));
		free(pos);
		return rc == -EINVAL ? HF_EXIT_USAGE : cli_exit_for(rc);
	}
	struct hf_scopereg_table *t;
	if ((rc = read_table(&t, "check", given))) {
		free(pos);
		return rc;
	}
	struct hf_scopereg_verdict v;
	rc = hf_scopereg_check(t, canon, a.pod, gen, &v);
	if (rc < 0) {
		hf_scopereg_free(t);
		free(pos);
		return cli_exit_for(rc);
	}
	struct hf_scopereg_alloc holder, pod;
	if (v.holder >= 0)
		hf_scopereg_get(t, (size_t)v.holder, &holder);
	if (v.pod >= 0)
		hf_scopereg_get(t, (size_t)v.pod, &pod);
	int code = v.state == HF_SCOPEREG_FREE || v.state == HF_SCOPEREG_YOURS ? HF_EXIT_OK
									 : HF_EXIT_CONFLICT;
	if (a.json) {
		json_t *h = json_null();
		if (v.holder >= 0)
			h = json_pack("{s:s, s:I, s:s, s:I, s:s}", "name", holder.name, "pid",
				      (json_int_t)holder.pid, "scope", v.holder_scope, "generation",
				      (json_int_t)holder.generation, "host", holder.host);
		if (v.holder >= 0 && v.holder_fs)
			json_object_set_new(h, "fs", json_string(v.holder_fs));
		char fs[HF_SCOPE_FS_MAX];
		json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:I}", "path", given, "canonical", canon,
				      "state", state_name(v.state), "holder", h, "generation",
				      (json_int_t)hf_scopereg_generation(t));
		json_object_set_new(o, "fs", hf_path_identity(canon, fs, sizeof fs) == 0
						    ? json_string(fs)
						    : json_null());
		if (a.pod) {
			json_object_set_new(o, "pod", json_string(a.pod));
			json_object_set_new(o, "pod_generation",
					    v.pod >= 0 ? json_integer((json_int_t)pod.generation)
						       : json_null());
		}
		cli_json_print(o);
	} else {
		char where[2 * PATH_MAX + 16];
		if (strcmp(given, canon))
			snprintf(where, sizeof where, "%s (canonical %s)", SHOW(given), canon);
		else
			snprintf(where, sizeof where, "%s", canon);
		char who[600 + HF_SCOPE_FS_MAX] = "";
		if (v.holder >= 0)
			snprintf(who, sizeof who, "%s (pid %lld, generation %llu) with %s%s%s%s",
				 holder.name, (long long)holder.pid,
				 (unsigned long long)holder.generation, v.holder_scope,
				 v.holder_fs ? " (the same files through another path: " : "",
				 v.holder_fs ? v.holder_fs : "", v.holder_fs ? ")" : "");
		switch (v.state) {
		case HF_SCOPEREG_FREE:
			printf("%s: free (registry generation %llu)\n", where,
			       (unsigned long long)hf_scopereg_generation(t));
			break;
		case HF_SCOPEREG_YOURS:
			printf("%s: yours (%s, generation %llu)\n", where, pod.name,
			       (unsigned long long)pod.generation);
			break;
		case HF_SCOPEREG_HELD:
			printf("%s: held by %s\n", where, who);
			break;
		case HF_SCOPEREG_OUTSIDE:
			printf("%s: outside %s's write scope (nobody holds it)\n", where, SHOW(a.pod));
			break;
		case HF_SCOPEREG_LOST:
			if (v.pod >= 0 && pod.live == HF_ALIVE)
				printf("%s: %s lost its scope: generation %s is gone, the name now "
				       "has generation %llu%s%s\n",
				       where, SHOW(a.pod), SHOW(a.gen), (unsigned long long)pod.generation,
				       who[0] ? "; the path is held by " : "", who);
			else
				printf("%s: %s lost its scope (released or reaped)%s%s\n", where,
				       SHOW(a.pod), who[0] ? "; the path is held by " : "", who);
			break;
		}
	}
	hf_scopereg_free(t);
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
	struct hf_scopereg_table *r;
	struct hf_scopereg_holder h;
	rc = hf_scopereg_reap(NULL, &r, &h);
	if (rc < 0)
		return report("reap", "", NULL, rc, &h);
	size_t n = hf_scopereg_count(r);
	if (a.json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++) {
			struct hf_scopereg_alloc al;
			hf_scopereg_get(r, i, &al);
			json_t *o = alloc_json(&al, false);
			json_object_set_new(o, "returned_to", al.returned_to
								      ? json_string(al.returned_to)
								      : json_null());
			json_array_append_new(arr, o);
		}
		cli_json_print(json_pack("{s:o, s:I}", "reaped", arr, "generation",
					 (json_int_t)hf_scopereg_generation(r)));
	} else {
		for (size_t i = 0; i < n; i++) {
			struct hf_scopereg_alloc al;
			hf_scopereg_get(r, i, &al);
			printf("reaped %s (pid %lld gone, generation %llu):", al.name,
			       (long long)al.pid, (unsigned long long)al.generation);
			for (size_t k = 0; k < al.nscope; k++)
				printf(" %s", al.scope_allow[k]);
			printf("; returned to %s\n", al.returned_to ? al.returned_to : "nobody (top level)");
		}
		if (n == 0)
			printf("nothing to reap (registry generation %llu)\n",
			       (unsigned long long)hf_scopereg_generation(r));
	}
	hf_scopereg_free(r);
	return HF_EXIT_OK;
}

int cmd_scope(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return HF_EXIT_USAGE;
	}
	const char *v = argv[1];
	if (!strcmp(v, "--help") || !strcmp(v, "-h") || !strcmp(v, "help")) {
		fputs(usage, stdout);
		return HF_EXIT_OK;
	}
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} verbs[] = {
		{ "register", do_register }, { "release", do_release }, { "list", do_list },
		{ "effective", do_effective }, { "check", do_check }, { "reap", do_reap },
	};
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (!strcmp(v, verbs[i].name))
			return verbs[i].fn(argc - 1, argv + 1);
	cli_err("scope: unknown command '%s' (see 'holdfast scope --help')", SHOW(v));
	return HF_EXIT_USAGE;
}

/* ------------------------------------------------------------------------
 * `run --scope`: one registration per process, released with the same
 * generation so a name reaped and taken by another is left alone.
 * --------------------------------------------------------------------- */

static char run_name[HF_POD_NAME_MAX + 1];
static uint64_t run_generation;

/* A wait slice: the registry's lock and the wake-up are each bounded by it,
 * so a stop signal is seen within two slices. */
#define RUN_SLICE_MS 100

int cli_scope_run_register(const char *name, const char *const *specs, size_t nspecs, int pid,
			   int64_t deadline_ns, struct cli_child *c, int *ret_live_fd,
			   char *ret_name, size_t n)
{
	const char *env = getenv("HOLDFAST_POD");
	struct hf_scopereg_request req = { .specs = specs, .nspecs = nspecs, .pid = pid,
					.from = env && *env ? env : NULL };
	char gen_name[32];
	struct hf_scopereg_holder h;
	int rc, live_fd = -1;
	/* Woken when the registry changes: the table is replaced by a rename
	 * (its temporary moves away) and live files are removed, both in the
	 * registry's directory; a holder that dies changes nothing there, so
	 * the wake-ups are also capped (hf_wait_next's backoff, at most 100 ms)
	 * and each attempt reaps it. */
	char reg[PATH_MAX];
	rc = hf_scopereg_path(reg, sizeof reg);
	if (rc < 0)
		return report("register", "(run)", NULL, rc, &h);
	char *slash = strrchr(reg, '/');
	if (slash && slash != reg)
		*slash = '\0';
	else
		strcpy(reg, slash ? "/" : ".");
	int64_t wait_ms = deadline_ns < 0 ? -1
			  : deadline_ns == 0 ? 0
					     : (deadline_ns - hf_sys_mono_ns()) / 1000000 + 1;
	struct hf_waiter w;
	hf_wait_init(&w, reg, "", wait_ms);
	int64_t lock_busy_since = 0, lock_holder = -1;
	bool timed_out = false;
	for (int attempt = 0;; attempt++) {
		if (name) {
			req.name = name;
		} else if (attempt == 0 || rc == HF_EHELD) {
			char hex[9];
			rc = hf_random_hex(hex, 4);
			if (rc < 0)
				break;
			snprintf(gen_name, sizeof gen_name, "run-%s", hex);
			req.name = gen_name;
		}
		int64_t slice = RUN_SLICE_MS;
		if (deadline_ns > 0) {
			int64_t left = (deadline_ns - hf_sys_mono_ns()) / 1000000;
			slice = left < 1 ? 1 : left < slice ? left : slice;
		}
		/* -n: the scope is tried once, but the registry's lock (a short
		 * critical section, not the thing held) gets its usual bound */
		req.lock_wait_ms = deadline_ns == 0 ? 0 : slice;
		rc = hf_scopereg_register(&req, &run_generation, &live_fd, &h);
		if (rc == HF_EHELD && !name && attempt < 4)
			continue; /* a generated name taken: draw another */
		if (rc != HF_ECONFLICT && rc != HF_EHELD && rc != HF_ETIMEDOUT)
			break;
		if (rc == HF_ETIMEDOUT) {
			/* the registry's lock: a holder that keeps it this long is
			 * stopped, not busy (registry.c, R11) */
			int64_t now = hf_sys_mono_ns();
			if (!lock_busy_since || h.pid != lock_holder)
				lock_busy_since = now;
			lock_holder = h.pid;
			if (now - lock_busy_since >= HF_SCOPE_LOCK_WAIT_MS * 1000000LL)
				break;
		} else {
			lock_busy_since = 0;
		}
		int sig = c ? cli_child_stop_pending(c) : 0;
		if (sig) {
			hf_wait_done(&w);
			cli_err("scope register %s: stopped by %s while waiting", SHOW(req.name),
				strsignal(sig));
			return 128 + sig;
		}
		if (deadline_ns == 0)
			break;
		hf_sys_point(HF_PT_RUN_SCOPE_WAITING);
		if (hf_wait_next(&w) == HF_ETIMEDOUT) {
			timed_out = true;
			break;
		}
	}
	hf_wait_done(&w);
	if (rc < 0)
		return report(timed_out ? "register (timed out waiting)" : "register", req.name, specs,
			      rc, &h);
	if (strlen(req.name) + 1 > n) {
		hf_sys_close(live_fd);
		return HF_EXIT_SOFTWARE;
	}
	snprintf(run_name, sizeof run_name, "%s", req.name);
	strcpy(ret_name, req.name);
	*ret_live_fd = live_fd;
	return HF_EXIT_OK;
}

int cli_scope_run_release(const char *name, int live_fd)
{
	uint64_t gen = !strcmp(name, run_name) ? run_generation : 0;
	struct hf_scopereg_holder h;
	int rc = hf_scopereg_release(NULL, name, gen, &h);
	if (live_fd >= 0)
		hf_sys_close(live_fd); /* after the release: the owner was alive until now */
	if (rc == HF_ENOTHELD)
		return HF_EXIT_OK; /* reaped already: CMD's pid ended before we got here */
	if (rc == HF_ENOTYOURS) {
		cli_err("run: the scope '%s' was reaped and registered again by another (pid %lld); "
			"left alone",
			SHOW(name), (long long)h.pid);
		return HF_EXIT_OK;
	}
	return rc < 0 ? report("release", name, NULL, rc, &h) : HF_EXIT_OK;
}
