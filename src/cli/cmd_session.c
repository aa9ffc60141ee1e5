/*
 * cmd_session.c - `holdfast session take|release|renew|status|assert-held|race`.
 *
 * The words on the screen are the library's: take, release, stale, broke,
 * aside. Every refusal names the path and the holder (lane, pid, host, age);
 * an unreadable lock prints its mtime as evidence and how to clear it (the
 * path quoted for a shell). Nothing read from the file system or given on
 * the command line reaches the terminal raw: messages go through cli_err,
 * paths through SHOWN (newlines too), stdout lines through cli_shown.
 */
#include "cli.h"
#include "file.h"
#include "sys.h"
#include "text.h"

#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
	"usage: holdfast session take        --lane LANE [--owner TOKEN] [--stale DUR] [--file PATH] [--json]\n"
	"       holdfast session release     --lane LANE [--owner TOKEN] [--file PATH] [--stale DUR]\n"
	"                                    [--json]\n"
	"       holdfast session renew       --lane LANE [--owner TOKEN] [--file PATH] [--json]\n"
	"       holdfast session status      [--file PATH] [--stale DUR] [--json]\n"
	"       holdfast session assert-held LANE [--file PATH] [--stale DUR] [--json]\n"
	"       holdfast session race        [--procs N] [--runs R] [--naive] [--json] [--dir DIR]\n"
	"\n"
	"One session per work tree, by lane. The lock is --file, by default .session.lock\n"
	"at the top of the enclosing git work tree (else the current directory): one line\n"
	"of JSON {\"lane\",\"owner\",\"pid\",\"host\",\"started\",\"boot_id\",\"timens\",\n"
	"\"boottime_ms\",\"broke\"}, or a legacy bare ISO-8601 timestamp (honoured).\n"
	"\n"
	"  take         take the lock for LANE. A live lock refuses every lane, LANE\n"
	"               included (exit 1, the holder named). A lock older than --stale\n"
	"               (default 90m; its age is its record's: on the boot clock of the\n"
	"               machine that wrote it, elsewhere \"started\" by the wall clock;\n"
	"               never its mtime) is broken: renamed aside, verified, replaced\n"
	"               by a record that names it under \"broke\". A lock that cannot\n"
	"               be read is refused (exit 65), its mtime printed as evidence.\n"
	"               --owner TOKEN: a stable identity of the caller, checked by\n"
	"               release.\n"
	"  release      remove LANE's lock (and only if it carries TOKEN, with --owner).\n"
	"               Another lane's lock: exit 1. Nothing held: exit 69.\n"
	"  renew        restart LANE's window (\"started\" now, same owner): for a session\n"
	"               that outlives --stale. Another's, or broken meanwhile: exit 1.\n"
	"  status       one line: \"held by LANE, 4.1 min old\" | \"free\" | \"unreadable: ...\"\n"
	"               (exit 65 when unreadable). For git hooks.\n"
	"  assert-held  exit 0 only if LANE holds a live lock (1: another lane or stale,\n"
	"               69: free, 65: unreadable). Run it before staging.\n"
	"  race         measure: N processes start together and take a fresh lock, R runs;\n"
	"               prints the holders of each run (--naive: the old read-then-write\n"
	"               guard). A measurement, never a verdict: it always exits 0.\n"
	"\n"
	"Backend (take, release, renew, status, assert-held): --backend\n"
	"etcd://HOST:PORT[,HOST:PORT...] (or etcds:// for https; default:\n"
	"HOLDFAST_BACKEND, else 'file') keeps the session in etcd under\n"
	"/holdfast/session + the lock file's path made absolute (no file, no lease;\n"
	"stale by its record's age, as here); --etcd-user USER with\n"
	"--etcd-password-file FILE (or HOLDFAST_ETCD_USER, HOLDFAST_ETCD_PASSWORD_FILE),\n"
	"--etcd-ca FILE (or HOLDFAST_ETCD_CA_FILE), --etcd-timeout DUR (default 5s).\n"
	"\n"
	"Asides: a break or release renames the lock to <file>.aside-<16 hex> first and\n"
	"deletes it only once verified; git users add the line '.session.lock.aside-*'\n"
	"to .gitignore. DUR: 90m, 1.5h, 30s, 500ms, 2d (a bare number is seconds).\n"
	"--json: one JSON object on stdout, the record or the answer (assert-held:\n"
	"\"answer\" and \"exit\"), or on failure the error object (holdfast(1): JSON OUTPUT).\n"

	"-h, --help; -V, --version.\n";

/* s for a message, every control character shown as \xNN (the newline
 * too: one message, one line per line it means); room for a whole path. */
#define SHOWN_MAX (4 * PATH_MAX + 64)
#define SHOWN(s) cli_shown((s), (char[SHOWN_MAX]){ 0 }, SHOWN_MAX)

enum {
	O_LANE = 1 << 0, O_OWNER = 1 << 1, O_STALE = 1 << 2, O_FILE = 1 << 3, O_JSON = 1 << 4,
	O_PROCS = 1 << 5, O_RUNS = 1 << 6, O_NAIVE = 1 << 7, O_DIR = 1 << 8, O_POS = 1 << 9,
	O_BACKEND = 1 << 10, /* --backend and its etcd options (backend.c) */
};

struct opts {
	const char *lane, *owner, *file, *dir, *pos;
	int64_t stale_ms;
	long procs, runs;
	int json, naive;
	char path[PATH_MAX];
};

static int parse_count(const char *s, long lo, long hi, long *ret)
{
	uint64_t v;
	if (hf_parse_u64(s, (uint64_t)hi, &v) < 0 || (int64_t)v < lo) /* digits only */
		return -EINVAL;
	*ret = (long)v;
	return 0;
}

/* Parse argv (argv[0] is the subcommand) allowing the options in `allowed`. */
static int parse(int argc, char **argv, unsigned allowed, struct opts *o)
{
	static const struct {
		const char *name;
		unsigned bit;
		int has_arg, backend_opt;
	} table[] = {
		{ "--backend", O_BACKEND, 1, CLI_OPT_BACKEND },
		{ "--etcd-user", O_BACKEND, 1, CLI_OPT_ETCD_USER },
		{ "--etcd-password-file", O_BACKEND, 1, CLI_OPT_ETCD_PWFILE },
		{ "--etcd-ca", O_BACKEND, 1, CLI_OPT_ETCD_CA },
		{ "--etcd-timeout", O_BACKEND, 1, CLI_OPT_ETCD_TIMEOUT },
		{ "--lane", O_LANE, 1, 0 },   { "--owner", O_OWNER, 1, 0 }, { "--stale", O_STALE, 1, 0 },
		{ "--file", O_FILE, 1, 0 },   { "--json", O_JSON, 0, 0 },   { "--procs", O_PROCS, 1, 0 },
		{ "--runs", O_RUNS, 1, 0 },   { "--naive", O_NAIVE, 0, 0 }, { "--dir", O_DIR, 1, 0 },
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		if (a[0] != '-' || !a[1]) {
			if (!(allowed & O_POS) || o->pos) {
				cli_err("session %s: unexpected argument '%s'", argv[0], a);
				return HF_EXIT_USAGE;
			}
			o->pos = a;
			continue;
		}
		size_t klen = strcspn(a, "=");
		unsigned bit = 0;
		int has_arg = 0, backend_opt = 0;
		for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
			if (strlen(table[k].name) == klen && !strncmp(a, table[k].name, klen)) {
				bit = table[k].bit;
				has_arg = table[k].has_arg;
				backend_opt = table[k].backend_opt;
			}
		if (!(bit & allowed)) {
			cli_err("session %s: unknown option '%s' (see 'holdfast session --help')",
				argv[0], a);
			return HF_EXIT_USAGE;
		}
		if (has_arg) {
			val = a[klen] == '=' ? a + klen + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!val) {
				cli_err("session %s: %s needs a value", argv[0], a);
				return HF_EXIT_USAGE;
			}
		} else if (a[klen] == '=') {
			cli_err("session %s: %.*s takes no value", argv[0], (int)klen, a);
			return HF_EXIT_USAGE;
		}
		int bad = 0;
		switch (bit) {
		case O_BACKEND: {
			int b = cli_backend_opt(backend_opt, val);
			if (b > 0)
				return b; /* refused, said */
			break;
		}
		case O_LANE:
			o->lane = val;
			bad = !*val || !hf_text_ok(val, HF_LANE_MAX);
			break;
		case O_OWNER:
			o->owner = val;
			bad = !*val || !hf_text_ok(val, HF_OWNER_MAX);
			break;
		case O_STALE:
			bad = cli_parse_duration(val, &o->stale_ms) < 0 || o->stale_ms <= 0;
			break;
		case O_FILE:
			o->file = val;
			bad = !*val;
			break;
		case O_DIR:
			o->dir = val;
			break;
		case O_PROCS:
			bad = parse_count(val, 1, 512, &o->procs) < 0;
			break;
		case O_RUNS:
			bad = parse_count(val, 1, 100000, &o->runs) < 0;
			break;
		case O_JSON:
			o->json = 1;
			cli_json_enable();
			break;
		case O_NAIVE:
			o->naive = 1;
			break;
		}
		if (bad) {
			cli_err("session %s: bad value for %.*s: '%s'", argv[0], (int)klen, a, val);
			return HF_EXIT_USAGE;
		}
	}
	return 0;
}

/* The lock's path: --file, else the default; kept for messages. */
static int resolve(struct opts *o)
{
	if (o->file) {
		snprintf(o->path, sizeof o->path, "%s", o->file);
		cli_subject(o->path);
		return 0;
	}
	int rc = hf_session_default_path(o->path, sizeof o->path);
	if (rc < 0) {
		cli_err("session: cannot find the default lock path: %s", hf_strerror(rc));
		return cli_fail_rc(rc, NULL, NULL);
	}
	cli_subject(o->path);
	return 0;
}

/* ------------------------------------------------------------------------
 * Words and JSON for a record and a status
 * ---------------------------------------------------------------------- */

static void when(int64_t ms, char *buf, size_t n)
{
	hf_time_format(ms, buf, n);
}

static int64_t rec_int(const hf_rec *r, const char *field)
{
	int64_t v;
	return hf_rec_int(r, field, &v) == 0 ? v : 0;
}

static const char *rec_str(const hf_rec *r, const char *field)
{
	const char *v = hf_rec_str(r, field);
	return v ? v : "";
}

static bool state_is(const hf_rec *r, const char *state)
{
	return !strcmp(rec_str(r, "state"), state);
}

/* "data", or "a legacy lock (a bare timestamp, no lane)" */
static const char *who(const hf_rec *r)
{
	return rec_int(r, "legacy") ? "a legacy lock (a bare timestamp, no lane)"
				    : rec_str(r, "lane");
}

/* "4.1 min old", "dated 2.0 min in the future (clock skew)" */
static void age_words(const hf_rec *r, char *buf, size_t n)
{
	char a[32];
	int64_t age = rec_int(r, "age_ms");
	cli_format_age(age < 0 ? -age : age, a, sizeof a);
	if (state_is(r, "skew"))
		snprintf(buf, n, "dated %s in the future (clock skew)", a);
	else
		snprintf(buf, n, "%s old", a);
}

/* The one status line: held by / free / unreadable. */
static void status_line(const hf_rec *r, char *buf, size_t n)
{
	char age[96], t[40];
	if (state_is(r, "free")) {
		snprintf(buf, n, "free");
		return;
	}
	if (state_is(r, "unreadable")) {
		when(rec_int(r, "mtime_ms"), t, sizeof t);
		snprintf(buf, n, "unreadable: %s (mtime %s, evidence only)", rec_str(r, "reason"), t);
		return;
	}
	age_words(r, age, sizeof age);
	size_t len = (size_t)snprintf(buf, n, "held by %s, %s%s", who(r), age,
				      state_is(r, "stale") ? " (stale: the next take breaks it)" : "");
	if (hf_rec_str(r, "aside") && len < n)
		snprintf(buf + len, n - len, " (displaced to %s)", rec_str(r, "aside"));
}

/* Who holds it, for messages: lane (pid N on host, owner T), age. */
static void holder_words(const hf_rec *r, char *buf, size_t n)
{
	char age[96];
	age_words(r, age, sizeof age);
	if (rec_int(r, "legacy")) {
		snprintf(buf, n, "%s, %s", who(r), age);
		return;
	}
	const char *host = rec_str(r, "host"), *owner = rec_str(r, "owner");
	size_t len = (size_t)snprintf(buf, n, "lane %s (pid %lld on %s, owner %s), %s",
				      rec_str(r, "lane"), (long long)rec_int(r, "pid"),
				      host[0] ? host : "an unknown host", owner[0] ? owner : "none",
				      age);
	if (hf_rec_str(r, "aside") && len < n)
		snprintf(buf + len, n - len, "; its record sits beside the lock in %s",
			 rec_str(r, "aside"));
}

/* A session record as --json prints it: the file's fields and "file" (the
 * lock's path), without the derived ones. */
static json_t *record_json(const hf_rec *r, const char *path)
{
	json_t *src = json_loads(hf_rec_json(r), 0, NULL);
	json_t *o = json_object();
	if (!src || !o) {
		json_decref(src);
		return o;
	}
	static const char *const fields[] = { "lane", "owner", "pid", "host", "started",
					      "boot_id", "timens", "boottime_ms", "broke",
					      "backend", "key" /* on etcd */ };
	if (json_object_get(src, "legacy")) {
		json_object_set_new(o, "legacy", json_true());
		json_object_set(o, "started", json_object_get(src, "started"));
	} else {
		for (size_t i = 0; i < HF_ARRAY_SIZE(fields); i++) {
			json_t *v = json_object_get(src, fields[i]);
			if (v)
				json_object_set(o, fields[i], v);
		}
	}
	json_decref(src);
	/* ages in ms, as everywhere in --json: the file's broke.age_s */
	json_t *broke = json_object_get(o, "broke"), *age = json_object_get(broke, "age_s");
	if (json_is_integer(age)) {
		broke = json_deep_copy(broke);
		json_object_set_new(broke, "age_ms", json_integer(json_integer_value(age) * 1000));
		json_object_del(broke, "age_s");
		json_object_set_new(o, "broke", broke);
	}
	char abs[PATH_MAX];
	json_object_set_new(o, "file", json_string(cli_abs_path(path, abs, sizeof abs)));
	return o;
}

/* A status record as --json prints it: the record's fields, "age_ms",
 * "state", "file", and for an unreadable lock "reason" and "mtime". */
static json_t *status_json(const hf_rec *r, const char *path)
{
	json_t *o;
	char t[40];
	bool unreadable = state_is(r, "unreadable");
	if (state_is(r, "free") || unreadable) {
		char abs[PATH_MAX];
		o = json_object();
		json_object_set_new(o, "file", json_string(cli_abs_path(path, abs, sizeof abs)));
		if (hf_rec_str(r, "key")) {
			json_object_set_new(o, "backend", json_string("etcd"));
			json_object_set_new(o, "key", json_string(rec_str(r, "key")));
		}
	} else {
		o = record_json(r, path);
		json_object_set_new(o, "age_ms", json_integer(rec_int(r, "age_ms")));
	}
	json_object_set_new(o, "state", json_string(rec_str(r, "state")));
	if (unreadable) {
		when(rec_int(r, "mtime_ms"), t, sizeof t);
		const char *reason = rec_str(r, "reason");
		json_t *why = json_string(reason); /* NULL when not UTF-8 */
		json_object_set_new(o, "reason", why ? why : json_string(CLI_SHOW(reason)));
		json_object_set_new(o, "mtime", json_string(t));
	}
	if (hf_rec_str(r, "aside"))
		json_object_set_new(o, "aside", json_string(rec_str(r, "aside")));
	return o;
}

static void print_unreadable(const char *path, const hf_rec *r, const char *verb)
{
	char t[40], target[PATH_MAX + 128];
	when(rec_int(r, "mtime_ms"), t, sizeof t);
	if (hf_rec_str(r, "aside")) {
		const char *slash = strrchr(path, '/');
		snprintf(target, sizeof target, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path,
			 rec_str(r, "aside"));
	} else {
		snprintf(target, sizeof target, "%s", path);
	}
	static char quoted[4 * sizeof target + 8];
	cli_shell_quote(target, quoted, sizeof quoted);
	cli_err("%s: unreadable: %s; %s refused, nothing changed.\n"
		"  mtime %s (evidence only: a lock's age is its record's \"started\", never its "
		"mtime).\n"
		"  If no session holds this tree, remove it by hand: rm -- %s",
		SHOWN(target), CLI_SHOW(rec_str(r, "reason")), verb, t, quoted);
}

/* ------------------------------------------------------------------------
 * take, release, status, assert-held
 * ---------------------------------------------------------------------- */

/* ": the etcd client's reason" of a failure on etcd ("" when none). */
static const char *why_of(const hf_rec *r, char *buf, size_t n)
{
	const char *why = r ? hf_rec_str(r, "reason") : NULL;
	snprintf(buf, n, "%s%s", why ? ": " : "", why ? CLI_SHOW(why) : "");
	return buf;
}
#define WHY(r) why_of((r), (char[512]){ 0 }, 512)

/* A handle for o's lock and lane with o's options: 0, or the exit code. */
static int open_session(const struct opts *o, hf_session **ret)
{
	int rc = hf_session_new(o->path, o->lane, ret);
	if (rc == 0 && o->owner)
		rc = hf_session_set_str(*ret, HF_OPT_OWNER, o->owner);
	if (rc == 0 && o->stale_ms)
		rc = hf_session_set(*ret, HF_OPT_STALE_MS, o->stale_ms);
	if (rc < 0) {
		cli_err("%s: lane %s: %s", SHOWN(o->path), SHOWN(o->lane), hf_strerror(rc));
		hf_session_free(*ret);
		*ret = NULL;
		return cli_fail_rc(rc, o->path, NULL);
	}
	if ((rc = cli_backend_session(*ret, o->path)) != 0) {
		hf_session_free(*ret);
		*ret = NULL;
		return rc; /* said, recorded */
	}
	return 0;
}

static int do_take(struct opts *o)
{
	hf_session *s;
	int rc = open_session(o, &s);
	if (rc)
		return rc;
	rc = hf_session_take(s);
	char words[512];
	if (rc >= 0) {
		/* the record only when there is something to say from it */
		const hf_rec *r = rc == 1 || o->json ? hf_session_holder(s) : NULL;
		if (rc == 1) {
			char age[32];
			cli_format_age(rec_int(r, "broke.age_s") * 1000, age, sizeof age);
			bool legacy = rec_int(r, "broke.legacy") != 0;
			const char *owner = rec_str(r, "broke.owner");
			cli_err("%s: broke a stale lock of %s%s (owner %s, started %s, %s old); "
				"it is named under \"broke\" in the new record",
				SHOWN(o->path), legacy ? "a legacy session" : "lane ",
				legacy ? "" : rec_str(r, "broke.lane"), owner[0] ? owner : "none",
				rec_str(r, "broke.started"), age);
		}
		if (o->json)
			cli_json_print(record_json(r, o->path));
		else
			cli_err("%s: taken by lane %s", SHOWN(o->path), o->lane);
		hf_session_free(s);
		return HF_EXIT_OK;
	}
	const hf_rec *r = hf_session_holder(s);
	if (rc == HF_EHELD) {
		holder_words(r, words, sizeof words);
		cli_err("%s: held by %s; take refused (a live lock refuses every lane, %s "
			"included)",
			SHOWN(o->path), words, o->lane);
	} else if (rc == HF_EUNREADABLE) {
		print_unreadable(o->path, r, "take");
	} else {
		cli_err("%s: take failed: %s%s", SHOWN(o->path), hf_strerror(rc), WHY(r));
	}
	/* the holder nested in the error object (JS2) */
	bool who = o->json && (rc == HF_EHELD || rc == HF_EUNREADABLE);
	cli_fail_json(cli_exit_for(rc), hf_error_name(rc), o->path,
		      who ? status_json(r, o->path) : NULL);
	hf_session_free(s);
	return cli_exit_for(rc);
}

/* `session renew`: every outcome's words and code in one place. */
static int do_renew(struct opts *o)
{
	hf_session *s;
	int rc = open_session(o, &s);
	if (rc)
		return rc;
	rc = hf_session_renew(s);
	const hf_rec *r = hf_session_holder(s);
	char words[512];
	switch (rc) {
	case 0:
		if (o->json)
			cli_json_print(record_json(r, o->path));
		else
			cli_err("%s: renewed by lane %s", SHOWN(o->path), o->lane);
		break;
	case HF_ENOTHELD:
		cli_err("%s: nothing to renew: the lock is free", SHOWN(o->path));
		break;
	case HF_ENOTYOURS:
		holder_words(r, words, sizeof words);
		cli_err("%s: held by %s, not by lane %s%s; renew refused (the lock is untouched)",
			SHOWN(o->path), words, o->lane, o->owner ? " with that owner" : "");
		break;
	case HF_ELOST:
		if (r) {
			holder_words(r, words, sizeof words);
			cli_err("%s: lost while renewing: now held by %s", SHOWN(o->path), words);
		} else {
			cli_err("%s: lost while renewing: broken or released meanwhile",
				SHOWN(o->path));
		}
		break;
	case HF_EUNREADABLE:
		print_unreadable(o->path, r, "renew");
		break;
	default:
		cli_err("%s: renew failed: %s%s", SHOWN(o->path), hf_strerror(rc), WHY(r));
	}
	int code = rc == HF_ELOST ? HF_EXIT_CONFLICT : cli_exit_for(rc);
	if (rc < 0) {
		bool who = o->json && r && (rc == HF_ENOTYOURS || rc == HF_EUNREADABLE || rc == HF_ELOST);
		cli_fail_json(code, hf_error_name(rc), o->path, who ? status_json(r, o->path) : NULL);
	}
	hf_session_free(s);
	return code;
}

static int do_release(struct opts *o)
{
	hf_session *s;
	int rc = open_session(o, &s);
	if (rc)
		return rc;
	rc = hf_session_release(s);
	const hf_rec *r = hf_session_holder(s);
	char words[512];
	switch (rc) {
	case 0:
		cli_err("%s: released by lane %s", SHOWN(o->path), o->lane);
		break;
	case HF_ENOTHELD:
		cli_err("%s: nothing to release: the lock is free", SHOWN(o->path));
		break;
	case HF_ENOTYOURS:
		holder_words(r, words, sizeof words);
		if (!rec_int(r, "legacy") && !strcmp(rec_str(r, "lane"), o->lane))
			cli_err("%s: held by %s, with another owner token than %s; release refused",
				SHOWN(o->path), words, o->owner ? o->owner : "(none)");
		else
			cli_err("%s: held by %s, not by lane %s; release refused (the lock is "
				"untouched)",
				SHOWN(o->path), words, o->lane);
		break;
	case HF_EUNREADABLE:
		print_unreadable(o->path, r, "release");
		break;
	default:
		cli_err("%s: release failed: %s%s", SHOWN(o->path), hf_strerror(rc), WHY(r));
	}
	if (rc < 0) {
		bool who = o->json && (rc == HF_ENOTYOURS || rc == HF_EUNREADABLE);
		cli_fail_json(cli_exit_for(rc), hf_error_name(rc), o->path,
			      who ? status_json(r, o->path) : NULL);
	} else if (o->json) {
		char abs[PATH_MAX];
		cli_json_print(json_pack("{s:s, s:s, s:b}", "file",
					 cli_abs_path(o->path, abs, sizeof abs), "lane", o->lane,
					 "released", 1));
	}
	hf_session_free(s);
	return cli_exit_for(rc);
}

static int do_status(struct opts *o, const char *assert_lane)
{
	hf_rec *r = NULL;
	hf_session *s;
	o->lane = "status"; /* a handle's lane, unused by a read */
	int rc = open_session(o, &s);
	if (rc)
		return rc;
	rc = hf_session_query(s, &r); /* on its backend */
	if (rc < 0) {
		cli_err("%s: status failed: %s%s", SHOWN(o->path), hf_strerror(rc),
			WHY(hf_session_holder(s)));
		rc = cli_fail_rc(rc, o->path, hf_session_holder(s));
		hf_session_free(s);
		return rc;
	}
	hf_session_free(s);
	char line[512];
	status_line(r, line, sizeof line);
	int code;
	if (!assert_lane) {
		code = state_is(r, "unreadable") ? HF_EXIT_DATAERR : HF_EXIT_OK;
		if (o->json) {
			json_t *j = status_json(r, o->path);
			if (code) /* an answer with a non-zero exit says so */
				json_object_set_new(j, "exit", json_integer(code));
			cli_json_print(j);
		} else {
			printf("%s\n", cli_shown(line, (char[4 * sizeof line]){ 0 }, 4 * sizeof line));
		}
	} else if ((state_is(r, "held") || state_is(r, "skew")) && !rec_int(r, "legacy") &&
		   !strcmp(rec_str(r, "lane"), assert_lane)) {
		code = HF_EXIT_OK;
	} else {
		cli_err("%s: not held by lane %s: %s", SHOWN(o->path), assert_lane, line);
		code = state_is(r, "free")	   ? HF_EXIT_NOTHELD
		       : state_is(r, "unreadable") ? HF_EXIT_DATAERR
						   : HF_EXIT_CONFLICT;
	}
	if (assert_lane && o->json) {
		/* the answer, with the same exit code (like lock check --json) */
		char abs[PATH_MAX];
		const char *answer = code == HF_EXIT_OK	       ? "yours"
				     : code == HF_EXIT_CONFLICT ? "another"
				     : code == HF_EXIT_DATAERR  ? "unreadable"
								: "free";
		cli_json_print(json_pack("{s:s, s:s, s:s, s:i, s:s, s:o}", "file",
					 cli_abs_path(o->path, abs, sizeof abs), "lane", assert_lane,
					 "answer", answer, "exit", code, "state", rec_str(r, "state"),
					 "holder", state_is(r, "free") ? json_null()
								       : status_json(r, o->path)));
	}
	hf_rec_free(r);
	return code;
}

/* ------------------------------------------------------------------------
 * race: a measurement, never a verdict
 * ---------------------------------------------------------------------- */

static int rm_entry(int dfd, const char *name, void *ctx)
{
	(void)ctx;
	hf_sys_unlinkat(dfd, name, 0);
	return 0;
}

static int scratch_dir(struct opts *o, char *buf, size_t n, int *made)
{
	*made = 0;
	if (o->dir) {
		snprintf(buf, n, "%s", o->dir);
		return 0;
	}
	const char *base = getenv("TMPDIR");
	char hex[17];
	int rc = hf_random_hex(hex, 8);
	if (rc < 0)
		return rc;
	snprintf(buf, n, "%s/holdfast-race-%s", base && *base ? base : "/tmp", hex);
	rc = hf_sys_mkdirat(AT_FDCWD, buf, 0700);
	*made = rc == 0;
	return rc;
}

/* One child: wait at the barrier, then take. 0 holder, 1 refused, 2 error. */
static void racer(int barrier, const char *path, long i, int naive)
{
	char c, lane[32];
	hf_sys_read(barrier, &c, 1); /* EOF when the parent lets all go */
	snprintf(lane, sizeof lane, "racer-%ld", i);
	int rc;
	if (naive) {
		rc = cli_naive_take(path);
	} else {
		hf_session *s = NULL; /* written only on success */
		rc = hf_session_new(path, lane, &s);
		if (rc == 0)
			rc = hf_session_take(s);
		hf_session_free(s);
	}
	_exit(rc >= 0 ? 0 : rc == HF_EHELD ? 1 : 2);
}

static int race_once(const char *dir, long run, struct opts *o, long *ret_errors)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/race-%ld.lock", dir, run);
	int p[2];
	int rc = hf_sys_pipe2(p, O_CLOEXEC);
	if (rc < 0)
		return rc;
	pid_t *kids = calloc((size_t)o->procs, sizeof *kids);
	if (!kids)
		return -ENOMEM;
	fflush(NULL);
	long started = 0;
	for (; started < o->procs; started++) {
		pid_t pid = hf_sys_fork();
		if (pid == 0) {
			hf_sys_close(p[1]);
			racer(p[0], path, started, o->naive);
		}
		if (pid < 0)
			break;
		kids[started] = pid;
	}
	hf_sys_close(p[1]); /* all start together: EOF on the barrier */
	hf_sys_close(p[0]);
	long holders = 0;
	for (long i = 0; i < started; i++) {
		int st;
		if (hf_sys_waitpid(kids[i], &st, 0) < 0)
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			holders++;
		else if (!WIFEXITED(st) || WEXITSTATUS(st) != 1)
			(*ret_errors)++;
	}
	free(kids);
	*ret_errors += o->procs - started;
	return (int)holders;
}

static int do_race(struct opts *o)
{
	char dir[PATH_MAX];
	int made;
	int rc = scratch_dir(o, dir, sizeof dir, &made);
	if (rc < 0) {
		cli_err("session race: cannot make a scratch directory %s: %s", SHOWN(dir),
			hf_strerror(rc));
		return cli_fail_rc(rc, dir, NULL);
	}
	int dfd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0) {
		cli_err("session race: %s: %s", SHOWN(dir), hf_strerror(dfd));
		return cli_fail_rc(dfd, dir, NULL);
	}
	const char *mode = o->naive ? "naive" : "atomic";
	if (!o->json)
		printf("session race: %ld processes x %ld runs, %s in %s\n", o->procs, o->runs,
		       o->naive ? "the old read-then-write guard (--naive)"
				: "the atomic take (O_TMPFILE + link)",
		       SHOWN(dir));
	json_t *list = json_array();
	long more = 0, maxh = 0, errors = 0;
	for (long run = 1; run <= o->runs; run++) {
		int h = race_once(dir, run, o, &errors);
		hf_dir_each(dfd, "race-", rm_entry, NULL);
		if (h < 0) {
			cli_err("session race: run %ld: %s", run, hf_strerror(h));
			json_decref(list);
			hf_sys_close(dfd);
			return cli_fail_rc(h, dir, NULL);
		}
		more += h > 1;
		maxh = h > maxh ? h : maxh;
		json_array_append_new(list, json_integer(h));
		if (!o->json)
			printf("run %3ld: %d holder%s\n", run, h, h == 1 ? "" : "s");
	}
	hf_sys_close(dfd);
	if (made)
		hf_sys_unlinkat(AT_FDCWD, dir, AT_REMOVEDIR);
	if (o->json) {
		cli_json_print(json_pack("{s:s, s:I, s:I, s:o, s:I, s:I, s:I}", "mode", mode,
					 "procs", (json_int_t)o->procs, "runs",
					 (json_int_t)o->runs, "holders", list,
					 "runs_with_more_than_one", (json_int_t)more, "max_holders",
					 (json_int_t)maxh, "errors", (json_int_t)errors));
	} else {
		json_decref(list);
		printf("%s: %ld of %ld runs admitted more than one holder (at most %ld)%s\n", mode,
		       more, o->runs, maxh, errors ? " - some racers failed, see errors" : "");
		printf("a measurement, not a verdict: a clean run proves nothing "
		       "('holdfast selftest' scripts the interleaving)\n");
	}
	return HF_EXIT_OK;
}

/* ------------------------------------------------------------------------ */

/* jansson's memory for one short command: a static arena, bumped and never
 * freed; past it, malloc. A `take` or `release` parses one record of a few
 * hundred bytes, and glibc's malloc would cost its first-use set-up (two brk,
 * a getrandom, fresh heap pages) in every process for that alone. Installed
 * only where no jansson memory leaves the command: cli_json_print() frees
 * json_dumps()'s string with free(), which must never see the arena. */
static _Alignas(16) unsigned char arena[32768];
static size_t arena_used;

static void *arena_alloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n <= sizeof arena - arena_used) {
		void *p = arena + arena_used;
		arena_used += n;
		return p;
	}
	return malloc(n);
}

static void arena_free(void *p)
{
	if ((unsigned char *)p < arena || (unsigned char *)p >= arena + sizeof arena)
		free(p);
}

int cmd_session(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return HF_EXIT_USAGE;
	}
	const char *sub = argv[1];
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return HF_EXIT_OK;
		} else if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
			return cli_version();
		}
	/* A lock file is at most 4 KiB of JSON: hash flooding cannot hurt, and
	 * a fixed seed spares jansson's open/read/close of /dev/urandom. */
	json_object_seed(0x9e3779b9u);
	static struct opts o; /* static: its 4 KiB path stays off the stack */
	memset(&o, 0, sizeof o);
	o.procs = 8;
	o.runs = 10;
	int rc;
	if (!strcmp(sub, "take") || !strcmp(sub, "release") || !strcmp(sub, "renew")) {
		int take = sub[0] == 't', renew = !strcmp(sub, "renew");
		rc = parse(argc - 1, argv + 1, O_LANE | O_OWNER | O_FILE | O_STALE | O_JSON | O_BACKEND,
			   &o);
		if (rc)
			return rc;
		if (!o.lane) {
			cli_err("session %s: --lane LANE is required", sub);
			return HF_EXIT_USAGE;
		}
		if ((rc = resolve(&o)))
			return rc;
		if (!o.json && !cli_backend()) /* the etcd client frees with free() */
			json_set_alloc_funcs(arena_alloc, arena_free);
		return take ? do_take(&o) : renew ? do_renew(&o) : do_release(&o);
	}
	if (!strcmp(sub, "status")) {
		if ((rc = parse(argc - 1, argv + 1, O_FILE | O_STALE | O_JSON | O_BACKEND, &o)))
			return rc;
		if ((rc = resolve(&o)))
			return rc;
		return do_status(&o, NULL);
	}
	if (!strcmp(sub, "assert-held")) {
		if ((rc = parse(argc - 1, argv + 1, O_FILE | O_STALE | O_POS | O_JSON | O_BACKEND, &o)))
			return rc;
		if (!o.pos || !*o.pos) {
			cli_err("session assert-held: LANE is required");
			return HF_EXIT_USAGE;
		}
		if ((rc = resolve(&o)))
			return rc;
		return do_status(&o, o.pos);
	}
	if (!strcmp(sub, "race")) {
		if ((rc = parse(argc - 1, argv + 1, O_PROCS | O_RUNS | O_NAIVE | O_JSON | O_DIR, &o)))
			return rc;
		return do_race(&o);
	}
	cli_err("session: unknown subcommand '%s' (take, release, renew, status, assert-held, race)",
		sub);
	return HF_EXIT_USAGE;
}
