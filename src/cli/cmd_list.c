/*
 * cmd_list.c - `holdfast list [DIR]`: every lock under DIR, like lslocks.
 *
 * What it lists:
 *   lock, session, flock
 *             what hf_lock_list finds on a lock handle for DIR, on its
 *             backend: on the file system the library's walk
 *             (src/lib/fs/fslist.c: directory locks, session locks,
 *             holdfast flock locks by their records, FL1-FL4), on etcd the
 *             keys under DIR (etcdlist.c)
 *   scope     each allocation of the scope registry (hf_registry_read) with
 *             a spec whose path is DIR or below it; every one with
 *             --all-scopes (the file system's registry only)
 *
 * Invariants:
 *   (LS1) It reads, never writes: hf_lock_list (FL1: status reads only,
 *         nothing reaped, swept or made; on etcd range reads) and the
 *         registry's read.
 *   (LS3) An error names its file and does not stop the listing: each of
 *         the listing's "errors" (FL3) is a line on stderr, and an entry of
 *         "errors" with --json; the exit code is 0 unless DIR itself cannot
 *         be read (or etcd cannot: exit 74, the endpoint named).
 *   (LS4) On the file system DIR is made canonical (hf_path_canonical) and
 *         must exist; with --backend etcd://... (or HOLDFAST_BACKEND) it is
 *         given as is (the library makes it absolute lexically) and need
 *         not exist. --depth is HF_OPT_DEPTH (FL2's bound; etcd has none).
 *   (LS5) A lock's holders are its own rows (print_table): every holder
 *         of a shared or slot lock, and an acquisition waiting at it, with
 *         its mode in STATE; --json carries the library's "holders" as is.
 * The walk's rules - no symbolic link followed, nothing but directories and
 * flock records opened, .git not entered, flock records judged by FK3 - are
 * the library's (FL2, FL4).
 */
#include "cli.h"

#include "holdfast.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const char usage[] =
	"usage: holdfast list [DIR] [--depth N] [--all-scopes] [--json]\n"
	"\n"
	"Every lock under DIR (default: the current directory), one line each:\n"
	"directory locks (PATH beside PATH.holdfast/), session locks (.session.lock),\n"
	"holdfast flock locks (PATH beside its record PATH.holdfast-flock, or its shared\n"
	"holders' PATH.holdfast-flock.d/; held while the kernel's lock is; --json:\n"
	"every holder) and the allocations of DIR's scope registry (holdfast\n"
	"scope --help) with a path under DIR (--all-scopes: all of them).\n"
	"Columns: KIND STATE HOLDER PID COMMAND HOST AGE FENCE MAXHOLD PATH (HOLDER:\n"
	"a lock's token, a session's lane, a scope's name, a flock's mode); STATE is\n"
	"held, dead, leaked, expired, partial, abandoned, skew, stale, unreadable or\n"
	"free, with ',claims=N' when claims (barriers) sit beside a lock. A shared or\n"
	"slot lock has one line per holder, STATE 'held,shared' or 'held,slots=N', and\n"
	"an acquisition waiting for its holders to leave 'waiting,MODE'. It only\n"
	"reads: nothing is reaped, swept or rewritten. Symbolic links are not\n"
	"followed, .git is not entered, at most --depth levels (default 8).\n"
	"--json: one object {\"dir\",\"locks\":[...],\"errors\":[...]}, each item the\n"
	"record's fields plus \"kind\" (a lock's \"holders\": every holder's record).\n"
	"--backend etcd://HOST:PORT[,HOST:PORT...] (or etcds://; default: HOLDFAST_BACKEND,\n"
	"else 'file'): the locks and sessions kept in etcd under DIR (made absolute,\n"
	"lexically; range reads only) instead of the walk; --etcd-user USER with\n"
	"--etcd-password-file FILE, --etcd-ca FILE, --etcd-timeout DUR as for lock.\n"
	"-h, --help; -V, --version.\n"
	"Exit: 0 (errors below DIR are reported, not fatal); 64 usage; DIR unreadable:\n"
	"73 missing, 77 permission, 71/74 others.\n";

struct lister {
	json_t *items, *errors;
};

/* LS3: an error of the listing or of the registry, said and kept. */
static void list_error(struct lister *ls, const char *path, int rc)
{
	cli_err("list: %s: %s", CLI_SHOW(path), hf_strerror(rc));
	json_array_append_new(ls->errors, json_pack("{s:s,s:s,s:s}", "path", path, "error",
						    hf_error_name(rc), "message", hf_strerror(rc)));
}

/* Is spec's path dir or below it (by whole components)? */
static bool spec_under(const char *spec, const char *dir)
{
	size_t n = strlen(dir);
	if (!strcmp(dir, "/"))
		return spec[0] == '/';
	return !strncmp(spec, dir, n) && (spec[n] == '/' || spec[n] == ':');
}

static void add_scopes(struct lister *ls, const char *dir, bool all)
{
	hf_registry *reg;
	hf_rec *err = NULL;
	char where[PATH_MAX] = "";
	/* DIR's registry (RG12); none by default there: no scopes to list */
	int rc = hf_registry_path_for(dir, where, sizeof where);
	if (rc == HF_EUNSAFE)
		return;
	if (rc == 0)
		rc = hf_registry_read(where, &reg, &err);
	if (rc < 0) {
		const char *w = hf_rec_str(err, "registry");
		list_error(ls, w ? w : "the scope registry", rc);
		hf_rec_free(err);
		return;
	}
	for (size_t i = 0; i < hf_registry_count(reg); i++) {
		const hf_rec *r = hf_registry_get(reg, i);
		bool under = all;
		for (size_t k = 0; !under && k < hf_rec_len(r, "scope_allow"); k++) {
			const char *spec = hf_rec_str_at(r, "scope_allow", k);
			under = spec && spec_under(spec, dir);
		}
		if (!under)
			continue;
		json_t *j = json_loads(hf_rec_json(r), 0, NULL);
		if (!j)
			continue;
		const char *live = hf_rec_str(r, "live");
		json_object_set_new(j, "kind", json_string("scope"));
		json_object_set_new(j, "state",
				    json_string(live && !strcmp(live, "dead") ? "dead" : "held"));
		json_object_set_new(j, "registry", json_string(where));
		json_array_append_new(ls->items, j);
	}
	hf_registry_free(reg);
}

/* --- human output ------------------------------------------------------------ */

enum { C_KIND, C_STATE, C_HOLDER, C_PID, C_COMM, C_HOST, C_AGE, C_FENCE, C_MAXHOLD, C_PATH, NCOL };
static const char *const heads[NCOL] = { "KIND", "STATE", "HOLDER", "PID", "COMMAND",
					 "HOST", "AGE", "FENCE", "MAXHOLD", "PATH" };

static const char *jstr(const json_t *j, const char *k)
{
	const char *s = json_string_value(json_object_get(j, k));
	return s && *s ? s : NULL;
}

static void row_of(const json_t *j, char cells[NCOL][256])
{
	for (int c = 0; c < NCOL; c++)
		strcpy(cells[c], "-");
	const char *kind = jstr(j, "kind");
	snprintf(cells[C_KIND], 256, "%s", kind ? kind : "-");
	const char *st = jstr(j, "state");
	json_int_t claims = json_integer_value(json_object_get(j, "claims"));
	if (claims > 0)
		snprintf(cells[C_STATE], 256, "%s,claims=%lld", st ? st : "-", (long long)claims);
	else
		snprintf(cells[C_STATE], 256, "%s", st ? st : "-");
	const char *holder = !strcmp(cells[C_KIND], "session") ? jstr(j, "lane")
			     : !strcmp(cells[C_KIND], "scope") ? jstr(j, "name")
			     : !strcmp(cells[C_KIND], "flock") ? jstr(j, "mode")
								 : jstr(j, "token");
	if (holder)
		snprintf(cells[C_HOLDER], 256, "%.*s", !strcmp(cells[C_KIND], "lock") ? 8 : 64,
			 CLI_SHOW(holder)); /* a token: its first 8 hex digits */
	json_t *pid = json_object_get(j, "pid");
	if (json_is_integer(pid))
		snprintf(cells[C_PID], 256, "%lld", (long long)json_integer_value(pid));
	if (jstr(j, "comm"))
		snprintf(cells[C_COMM], 256, "%s", CLI_SHOW(jstr(j, "comm")));
	if (jstr(j, "host"))
		snprintf(cells[C_HOST], 256, "%s", CLI_SHOW(jstr(j, "host")));
	json_t *age = json_object_get(j, "age_ms");
	if (json_is_integer(age) && st && strcmp(st, "free"))
		cli_format_age(json_integer_value(age), cells[C_AGE], 256);
	json_t *fence = json_object_get(j, !strcmp(cells[C_KIND], "scope") ? "generation" : "fence");
	if (json_is_integer(fence))
		snprintf(cells[C_FENCE], 256, "%lld", (long long)json_integer_value(fence));
	json_t *mh = json_object_get(j, "max_hold_ms");
	if (json_is_integer(mh) && json_integer_value(mh) == HF_MAX_HOLD_NONE)
		strcpy(cells[C_MAXHOLD], "none");
	else if (json_is_integer(mh) && json_integer_value(mh) > 0)
		cli_format_age(json_integer_value(mh), cells[C_MAXHOLD], 256);
	if (!strcmp(cells[C_KIND], "scope")) {
		json_t *a = json_object_get(j, "scope_allow");
		size_t n = 0;
		cells[C_PATH][0] = '\0';
		for (size_t k = 0; k < json_array_size(a); k++) {
			const char *s = json_string_value(json_array_get(a, k));
			if (s)
				n += (size_t)snprintf(cells[C_PATH] + n, n < 256 ? 256 - n : 0, "%s%s",
						      k ? "," : "", CLI_SHOW(s));
			if (n >= 255)
				break;
		}
	} else if (jstr(j, "path")) {
		snprintf(cells[C_PATH], 256, "%s", CLI_SHOW(jstr(j, "path")));
	}
}

/* LS5: a lock with several holders, a mode other than exclusive or an
 * acquisition waiting at it, as rows: one per holder of its "holders"
 * (FB4), each its own pid, command, host, age, fence and token, STATE
 * "held,shared", "held,slots=N" or "waiting,MODE"; the lock's claims on the
 * first. Anything else is its one row. A new array (NULL: out of memory). */
static json_t *holder_rows(const json_t *items)
{
	json_t *rows = json_array();
	for (size_t i = 0; rows && i < json_array_size(items); i++) {
		json_t *j = json_array_get(items, i);
		json_t *hs = json_object_get(j, "holders");
		const char *kind = jstr(j, "kind"), *mode = jstr(j, "mode");
		size_t nh = json_array_size(hs);
		json_t *h0 = json_array_get(hs, 0);
		bool each = kind && !strcmp(kind, "lock") &&
			    (nh > 1 || (nh == 1 && ((mode && strcmp(mode, "exclusive")) ||
						    json_is_true(json_object_get(h0, "waiting")))));
		if (!each) {
			json_array_append(rows, j);
			continue;
		}
		for (size_t k = 0; k < nh; k++) {
			json_t *r = json_copy(json_array_get(hs, k));
			if (!r)
				continue;
			const char *hm = jstr(r, "mode"), *st = jstr(r, "state");
			bool waiting = json_is_true(json_object_get(r, "waiting"));
			char state[96];
			json_t *slots = json_object_get(r, "slots");
			if (hm && !strcmp(hm, "slots"))
				snprintf(state, sizeof state, "%s,slots=%lld",
					 waiting ? "waiting" : st ? st : "-",
					 (long long)json_integer_value(slots));
			else
				snprintf(state, sizeof state, "%s,%s", waiting ? "waiting" : st ? st : "-",
					 hm ? hm : "exclusive");
			json_object_set_new(r, "state", json_string(state));
			json_object_set_new(r, "kind", json_string("lock"));
			json_object_set(r, "path", json_object_get(j, "path"));
			json_object_set_new(r, "claims",
					    json_integer(k ? 0 : json_integer_value(json_object_get(j, "claims"))));
			json_array_append_new(rows, r);
		}
	}
	return rows;
}

static void print_table(const json_t *all)
{
	json_t *items = holder_rows(all);
	if (!items)
		return;
	size_t n = json_array_size(items);
	char (*cells)[NCOL][256] = calloc(n + 1, sizeof *cells);
	if (!cells) {
		json_decref(items);
		return;
	}
	for (int c = 0; c < NCOL; c++)
		snprintf(cells[0][c], 256, "%s", heads[c]);
	for (size_t i = 0; i < n; i++)
		row_of(json_array_get(items, i), cells[i + 1]);
	int w[NCOL] = { 0 };
	for (size_t i = 0; i <= n; i++)
		for (int c = 0; c < NCOL; c++) {
			int len = (int)strlen(cells[i][c]);
			if (len > w[c])
				w[c] = len;
		}
	for (size_t i = 0; i <= n; i++) {
		for (int c = 0; c < NCOL; c++)
			if (c == NCOL - 1)
				printf("%s\n", cells[i][c]);
			else
				printf("%-*s ", w[c], cells[i][c]);
	}
	free(cells);
	json_decref(items);
}

/* Items sorted by path (scopes by name, after the files). */
static int item_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const char *px = jstr(x, "path"), *py = jstr(y, "path");
	if (!px || !py)
		return px ? -1 : py ? 1 : strcmp(jstr(x, "name") ? jstr(x, "name") : "",
						 jstr(y, "name") ? jstr(y, "name") : "");
	return strcmp(px, py);
}

static json_t *sorted(json_t *items)
{
	size_t n = json_array_size(items);
	json_t **v = malloc((n ? n : 1) * sizeof *v);
	json_t *out = json_array();
	if (!v || !out) {
		free(v);
		json_decref(out);
		return items;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(items, i);
	qsort(v, n, sizeof *v, item_cmp);
	for (size_t i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(items);
	return out;
}

/* The listing of hf_lock_list on a handle for dir (LS1, LS4): 0 and *ret,
 * or the exit code (said, recorded). */
static int list_locks(const char *dir, const char *arg, int depth, json_t **ret)
{
	hf_lock *l;
	hf_rec *r = NULL;
	int rc = hf_lock_new(dir, &l);
	if (rc < 0) {
		cli_err("list: %s: %s", CLI_SHOW(arg), hf_strerror(rc));
		return cli_fail_rc(rc, arg, NULL);
	}
	if ((rc = cli_backend_apply(l, dir)) != 0) {
		hf_lock_free(l);
		return rc; /* said, recorded */
	}
	rc = hf_lock_set(l, HF_OPT_DEPTH, depth);
	if (rc == 0)
		rc = hf_lock_list(l, &r);
	if (rc < 0) {
		rc = cli_backend_failed("list: ", arg, l, rc); /* DIR itself (LS3) */
		hf_lock_free(l);
		return rc;
	}
	hf_lock_free(l);
	*ret = json_loads(hf_rec_json(r), 0, NULL);
	hf_rec_free(r);
	return *ret ? HF_EXIT_OK : HF_EXIT_SOFTWARE;
}

int cmd_list(int argc, char **argv)
{
	enum { OPT_JSON = 1000, OPT_DEPTH, OPT_ALL, OPT_HELP };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "all-scopes", no_argument, NULL, OPT_ALL },
		{ "backend", required_argument, NULL, CLI_OPT_BACKEND },
		{ "etcd-user", required_argument, NULL, CLI_OPT_ETCD_USER },
		{ "etcd-password-file", required_argument, NULL, CLI_OPT_ETCD_PWFILE },
		{ "etcd-ca", required_argument, NULL, CLI_OPT_ETCD_CA },
		{ "etcd-timeout", required_argument, NULL, CLI_OPT_ETCD_TIMEOUT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, all = false;
	int depth = HF_LIST_DEPTH_DEFAULT;
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		int b = cli_backend_opt(c, optarg);
		if (b > 0)
			return b; /* refused, said */
		if (b < 0)
			continue;
		switch (c) {
		case OPT_JSON:
			json = true;
			cli_json_enable();
			break;
		case OPT_ALL:
			all = true;
			break;
		case OPT_DEPTH: {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 0 || v > HF_LIST_DEPTH_MAX) {
				cli_err("list: --depth %s: give 0 to %d", CLI_SHOW(optarg),
					HF_LIST_DEPTH_MAX);
				return cli_fail(HF_EXIT_USAGE, "usage", NULL, NULL);
			}
			depth = (int)v;
			break;
		}
		case 'h':
		case OPT_HELP:
			fputs(usage, stdout);
			return HF_EXIT_OK;
		case 'V':
			return cli_version();
		default:
			cli_err("list: unknown option '%s' (see 'holdfast list --help')",
				argv[optind - 1]);
			return cli_fail(HF_EXIT_USAGE, "usage", NULL, NULL);
		}
	}
	if (argc - optind > 1) {
		cli_err("list: one DIR only");
		return cli_fail(HF_EXIT_USAGE, "usage", NULL, NULL);
	}
	const char *arg = optind < argc ? argv[optind] : ".";
	const char *etcd = cli_backend();
	char dir[PATH_MAX];
	int rc = etcd ? 0 : hf_path_canonical(arg, dir, sizeof dir); /* LS4 */
	if (rc < 0) {
		/* the one error that ends the listing */
		cli_err("list: %s: %s", CLI_SHOW(arg), hf_strerror(rc));
		return cli_fail_rc(rc, arg, NULL);
	}
	json_t *o = NULL;
	rc = list_locks(etcd ? arg : dir, arg, depth, &o);
	if (rc != HF_EXIT_OK)
		return rc;
	json_t *errs = json_object_get(o, "errors");
	struct lister ls = { .items = json_incref(json_object_get(o, "locks")),
			     .errors = json_is_array(errs) ? json_incref(errs) : json_array() };
	bool truncated = json_is_true(json_object_get(o, "truncated"));
	const char *listed = json_string_value(json_object_get(o, "dir"));
	if (!json_is_array(ls.items) || !ls.errors || !listed) {
		json_decref(ls.items);
		json_decref(ls.errors);
		json_decref(o);
		return HF_EXIT_SOFTWARE;
	}
	size_t i;
	json_t *e;
	json_array_foreach(ls.errors, i, e) /* LS3 */
		cli_err("list: %s: %s", CLI_SHOW(json_string_value(json_object_get(e, "path"))),
			json_string_value(json_object_get(e, "message")));
	if (!etcd)
		add_scopes(&ls, listed, all); /* the file system's registry */
	ls.items = sorted(ls.items);
	if (json) {
		json_t *j = etcd ? json_pack("{s:s,s:s,s:o,s:o,s:b}", "dir", listed, "backend", "etcd",
					     "locks", ls.items, "errors", ls.errors, "truncated",
					     truncated)
				 : json_pack("{s:s,s:o,s:o,s:b}", "dir", listed, "locks", ls.items,
					     "errors", ls.errors, "truncated", truncated);
		json_decref(o);
		return cli_json_print(j) < 0 ? HF_EXIT_IOERR : HF_EXIT_OK;
	}
	print_table(ls.items);
	if (truncated)
		cli_err("list: directories deeper than --depth %d below %s were not searched", depth,
			CLI_SHOW(listed));
	json_decref(ls.items);
	json_decref(ls.errors);
	json_decref(o);
	return HF_EXIT_OK;
}
