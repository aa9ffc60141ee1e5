/*
 * common.c - exit codes, messages and parsing shared by the commands.
 */
#include "cli.h"

#include "holdfast.h"
#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * --json: one object per invocation
 *
 *   (JS1) At most one JSON object reaches stdout per invocation: every
 *         object goes through json_emit, and cli_json_print refuses once
 *         one was printed.
 *   (JS2) A failure is never printed in the shape of a success: once
 *         cli_fail recorded one, cli_json_print refuses, and main prints
 *         the error object.
 *   (JS3) In JSON mode an invocation that ends with a non-zero code and no
 *         object prints the error object; one that ends with 0 and no
 *         object (a command's bug) prints a "software" error and exits 70 -
 *         except --help, which prints its text. A recorded failure always
 *         prints the error object, even with exit 0 (run -E 0).
 * ---------------------------------------------------------------------- */

static struct {
	bool hint;    /* --json (or an abbreviation) before any "--"          */
	bool help;    /* -h/--help before any "--"                            */
	bool on;      /* the command parsed --json                            */
	bool printed; /* an object went out (JS1)                             */
	bool failed;  /* cli_fail recorded a failure (JS2)                    */
	char code[48];
	char path[PATH_MAX];
	char subject[PATH_MAX];
	char msg[8192];  /* the message at cli_fail                           */
	char last[8192]; /* the last message cli_err printed (no warning)     */
	char *holder;    /* JSON text, malloc'd                               */
} J;

static int json_emit(json_t *obj);

/* A JSON string of text that may not be UTF-8 (a path): shown then. */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	return j ? j : json_string(CLI_SHOW(s));
}

static void json_note(const char *text)
{
	if (!J.hint || !strncmp(text, "warning:", 8) || strstr(text, ": note: ") ||
	    !strncmp(text, "internal:", 9))
		return;
	snprintf(J.last, sizeof J.last, "%s", text);
}

void cli_json_begin(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		size_t n = strlen(argv[i]);
		if (n >= 3 && !strncmp(argv[i], "--json", n))
			J.hint = true; /* getopt_long takes --js for --json */
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "help"))
			J.help = true;
	}
}

void cli_json_enable(void)
{
	J.on = J.hint = true;
}

bool cli_json_on(void)
{
	return J.on;
}

bool cli_failed(void)
{
	return J.failed;
}

const char *cli_abs_path(const char *path, char *buf, size_t n)
{
	char joined[2 * PATH_MAX + 2];
	if (strstr(path, "://")) { /* a backend's URI (etcd://...): not a path */
		snprintf(buf, n, "%s", path);
		return buf;
	}
	if (path[0] == '/') {
		snprintf(joined, sizeof joined, "%s", path);
	} else {
		char cwd[PATH_MAX];
		if (hf_sys_getcwd(cwd, sizeof cwd) < 0)
			snprintf(cwd, sizeof cwd, "/"); /* unknown: still absolute */
		snprintf(joined, sizeof joined, "%s/%s", cwd, path);
	}
	/* lexically: "//" and "/./" become "/", a trailing "/." goes */
	size_t at = 0;
	for (const char *p = joined; *p && at + 1 < n;) {
		if (*p == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || !p[2])))) {
			p += p[1] == '/' ? 1 : 2;
			continue;
		}
		buf[at++] = *p++;
	}
	if (at == 0)
		buf[at++] = '/';
	while (at > 1 && buf[at - 1] == '/')
		at--;
	buf[at] = '\0';
	return buf;
}

void cli_subject(const char *path)
{
	if (!path || !*path)
		J.subject[0] = '\0';
	else if (J.hint)
		cli_abs_path(path, J.subject, sizeof J.subject);
}

const char *cli_code_for_exit(int exit)
{
	switch (exit) {
	case HF_EXIT_CONFLICT: return "held";
	case HF_EXIT_USAGE: return "usage";
	case HF_EXIT_DATAERR: return "unreadable";
	case HF_EXIT_NOTHELD: return "not_held";
	case HF_EXIT_SOFTWARE: return "software";
	case HF_EXIT_OSERR: return "os";
	case HF_EXIT_CANTCREAT: return "cannot_create";
	case HF_EXIT_IOERR: return "io";
	case HF_EXIT_NOPERM: return "unsafe";
	}
	return exit > 128 && exit < 128 + 65 ? "stopped_by_signal" : "failed";
}

static int fail_text(int exit, const char *code, const char *path, char *holder)
{
	if (J.failed || !J.hint) {
		free(holder);
		return exit;
	}
	J.failed = true;
	snprintf(J.code, sizeof J.code, "%s", code ? code : cli_code_for_exit(exit));
	if (path && *path)
		cli_abs_path(path, J.path, sizeof J.path);
	else
		snprintf(J.path, sizeof J.path, "%s", J.subject);
	snprintf(J.msg, sizeof J.msg, "%s", J.last);
	J.holder = holder;
	return exit;
}

json_t *cli_rec_json(const hf_rec *r)
{
	json_t *o = r ? json_loads(hf_rec_json(r), 0, NULL) : NULL;
	const char *p = o ? json_string_value(json_object_get(o, "path")) : NULL;
	if (p && p[0] != '/') {
		char abs[PATH_MAX];
		json_object_set_new(o, "path", json_text(cli_abs_path(p, abs, sizeof abs)));
	}
	return o;
}

int cli_fail(int exit, const char *code, const char *path, const hf_rec *holder)
{
	if (J.failed || !J.hint)
		return exit;
	return cli_fail_json(exit, code, path, holder && J.on ? cli_rec_json(holder) : NULL);
}

int cli_fail_json(int exit, const char *code, const char *path, json_t *holder)
{
	/* J.on, not J.hint: a session without --json may have jansson on its
	 * arena (cmd_session.c), whose memory free() must never see */
	char *h = holder && J.on ? json_dumps(holder, JSON_COMPACT) : NULL;
	json_decref(holder);
	return fail_text(exit, code, path, h);
}

int cli_fail_rc(int rc, const char *path, const hf_rec *holder)
{
	return cli_fail(cli_exit_for(rc), hf_error_name(rc), path, holder);
}

int cli_json_end(int code)
{
	if (!J.on && !(J.hint && code == HF_EXIT_USAGE))
		return code; /* JSON mode, or a usage error of a line with --json */
	if (J.printed || (code == 0 && J.help && !J.failed))
		return code;
	if (code == 0 && !J.failed) { /* JS3: a command that forgot its object */
		J.failed = false;
		cli_err("internal: the command printed no JSON object");
		snprintf(J.last, sizeof J.last, "internal: the command printed no JSON object");
		fail_text(HF_EXIT_SOFTWARE, "software", NULL, NULL);
		code = HF_EXIT_SOFTWARE;
	}
	if (!J.failed)
		fail_text(code, NULL, NULL, NULL);
	json_t *holder = J.holder ? json_loads(J.holder, 0, NULL) : NULL;
	const char *msg = J.msg[0] ? J.msg : J.last;
	json_t *o = json_object();
	json_object_set_new(o, "error", json_string(J.code));
	json_object_set_new(o, "exit", json_integer(code));
	char dflt[96];
	snprintf(dflt, sizeof dflt, "%s", code == HF_EXIT_USAGE
		 ? "usage: the command line was refused (the usage is on stderr; see --help)"
		 : J.code);
	json_object_set_new(o, "message", json_text(msg[0] ? msg : dflt));
	json_object_set_new(o, "path", J.path[0] ? json_text(J.path) : json_null());
	json_object_set_new(o, "holder", holder ? holder : json_null());
	/* a reader gone must not turn the documented exit code into SIGPIPE's */
	sigset_t pipe_sig;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	hf_sys_sigprocmask(SIG_BLOCK, &pipe_sig, NULL);
	json_emit(o);
	free(J.holder);
	J.holder = NULL;
	return code;
}

int cli_version(void)
{
	J.help = true; /* like --help: its text, never a JSON object */
	printf("holdfast %s\n", hf_version());
	return HF_EXIT_OK;
}

int cli_exit_for(int rc)
{
	switch (rc) {
	case 0:
		return HF_EXIT_OK;
	case HF_EHELD:
	case HF_ETIMEDOUT:
	case HF_ECONFLICT:
	case HF_ENOTYOURS:
	case HF_EBARRIER:
	case HF_ELOST:
	case HF_ECANCELED: /* README "Error codes": 1, like a wait that timed out */
		return HF_EXIT_CONFLICT;
	case HF_EUNREADABLE:
		return HF_EXIT_DATAERR;
	case HF_ENOTHELD:
		return HF_EXIT_NOTHELD;
	case HF_EUNSAFE:
	case -EACCES:
	case -EPERM:
	case -ELOOP:
		return HF_EXIT_NOPERM;
	case -EINVAL:
	case -ENAMETOOLONG:
		return HF_EXIT_USAGE;
	case -EEXIST:
	case -ENOSPC:
	case -EDQUOT:
	case -EROFS:
	case -ENOENT:
	case -ENOTDIR:
		return HF_EXIT_CANTCREAT;
	case -EIO:
		return HF_EXIT_IOERR;
	}
	return rc < 0 && rc > -4096 ? HF_EXIT_OSERR : HF_EXIT_SOFTWARE;
}

const char *cli_shown(const char *s, char *buf, size_t n)
{
	return hf_text_show(s ? s : "", buf, n, false);
}

const char *cli_shell_quote(const char *s, char *buf, size_t n)
{
	size_t at = 0;
	if (n < 3)
		return "";
	buf[at++] = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			if (at + 5 >= n)
				goto full;
			memcpy(buf + at, "'\\''", 4);
			at += 4;
		} else {
			if (at + 2 >= n)
				goto full;
			buf[at++] = *s;
		}
	}
	buf[at++] = '\'';
	buf[at] = '\0';
	return buf;
full:
	buf[0] = '\0';
	return buf;
}

void cli_err(const char *fmt, ...)
{
	char buf[8192], shown[4 * sizeof buf];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	const char *text = hf_text_show(buf, shown, sizeof shown, true);
	fprintf(stderr, "holdfast: %s\n", text);
	json_note(text);
}

int cli_parse_duration(const char *s, int64_t *ret_ms)
{
	/* DIGITS[.DIGITS][UNIT], decimal only: no sign, no exponent, no hex
	 * ("0x10"), no "inf"; at most CLI_DURATION_MAX_MS. Integer arithmetic,
	 * so a long string of digits cannot overflow into a short wait. */
	const char *p = s;
	int64_t whole = 0, frac = 0, scale = 1;
	bool big = false;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (whole > INT64_MAX / 10 - 9)
			big = true;
		else
			whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++)
			if (scale < 1000000) { /* sub-microsecond digits are dropped */
				frac = frac * 10 + (*p - '0');
				scale *= 10;
			}
	}
	int64_t mult;
	if (!*p || !strcmp(p, "s"))
		mult = 1000;
	else if (!strcmp(p, "ms"))
		mult = 1;
	else if (!strcmp(p, "m") || !strcmp(p, "min"))
		mult = 60000;
	else if (!strcmp(p, "h"))
		mult = 3600000;
	else if (!strcmp(p, "d"))
		mult = 86400000;
	else
		return -EINVAL;
	if (big || whole > CLI_DURATION_MAX_MS / mult)
		return -ERANGE;
	int64_t ms = whole * mult + (frac * mult + scale / 2) / scale;
	if (ms > CLI_DURATION_MAX_MS)
		return -ERANGE;
	*ret_ms = ms;
	return 0;
}

const char *cli_token_form(const char *arg, char *buf, size_t n, uint64_t *fence_out)
{
	*fence_out = 0;
	size_t k = strcspn(arg, " \t\n");
	const char *rest = arg + k + strspn(arg + k, " \t\n");
	size_t digits = strspn(rest, "0123456789");
	/* "TOKEN", or "TOKEN FENCE" with one trailing newline at most */
	bool fence = digits > 0 && (!rest[digits] || !strcmp(rest + digits, "\n"));
	if (k < n && (!*rest || fence)) {
		memcpy(buf, arg, k);
		buf[k] = '\0';
		if (fence && digits <= 19)
			*fence_out = strtoull(rest, NULL, 10);
		if (fence && !*fence_out)
			*fence_out = UINT64_MAX; /* a fence no acquisition has */
		return buf;
	}
	return arg; /* not that form: the adopt says it is not a token */
}

int cli_duration_arg(const char *what, const char *arg, int64_t *ret_ms)
{
	int rc = cli_parse_duration(arg, ret_ms);
	if (rc == -ERANGE)
		cli_err("%s %s: too long (at most 100 years%s)", what, CLI_SHOW(arg),
			!strcmp(what, "-w") ? "; leave -w out to wait forever" : "");
	else if (rc < 0)
		cli_err("%s %s: not a duration (decimal seconds like 10 or 0.5, or with a unit: "
			"500ms, 30s, 5m, 2h, 1d)",
			what, CLI_SHOW(arg));
	return rc < 0 ? HF_EXIT_USAGE : 0;
}

int cli_mode_arg(const char *cmd, const char *sub, const char *slots_arg, int *mode, int *slots)
{
	const char *opt = slots_arg ? "--slots" : "--shared";
	char who[64];
	snprintf(who, sizeof who, "%s%s%s", cmd, sub ? " " : "", sub ? sub : "");
	if (sub && strcmp(sub, "acquire")) {
		cli_err("%s: only acquire takes %s (release, renew and check find a holder by its "
			"token, whatever its mode)", who, opt);
		return HF_EXIT_USAGE;
	}
	int want = slots_arg ? HF_MODE_SLOTS : HF_MODE_SHARED;
	if (*mode != HF_MODE_EXCLUSIVE && *mode != want) {
		cli_err("%s: --shared and --slots exclude each other (one mode per acquisition)",
			who);
		return HF_EXIT_USAGE;
	}
	if (slots_arg) {
		uint64_t v;
		if (hf_parse_u64(slots_arg, HF_SLOTS_MAX, &v) < 0 || v < 1) {
			cli_err("%s: --slots %s: not a number of slots (1 to %d)", who,
				CLI_SHOW(slots_arg), HF_SLOTS_MAX);
			return HF_EXIT_USAGE;
		}
		if (*mode == HF_MODE_SLOTS && *slots != (int)v) {
			cli_err("%s: --slots given twice (%d and %d)", who, *slots, (int)v);
			return HF_EXIT_USAGE;
		}
		*slots = (int)v;
	}
	*mode = want;
	return 0;
}

const char *cli_mode_name(int mode)
{
	return mode == HF_MODE_SHARED ? "shared" : mode == HF_MODE_SLOTS ? "slots" : "exclusive";
}

void cli_format_age(int64_t ms, char *buf, size_t n)
{
	if (ms < 0)
		ms = 0;
	if (ms < 60000)
		snprintf(buf, n, "%.0f s", ms / 1000.0);
	else if (ms < 3600000)
		snprintf(buf, n, "%.1f min", ms / 60000.0);
	else if (ms < 86400000)
		snprintf(buf, n, "%.1f h", ms / 3600000.0);
	else
		snprintf(buf, n, "%.1f d", ms / 86400000.0);
}

/* The one writer of a JSON object (JS1). */
static int json_emit(json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(obj);
	if (!s)
		return -ENOMEM;
	J.printed = true;
	size_t len = strlen(s);
	s[len] = '\n'; /* one write: the object and its newline together */
	fflush(stdout); /* what printf buffered goes first */
	ssize_t w = hf_sys_write(1, s, len + 1);
	json_malloc_t m;
	json_free_t f;
	json_get_alloc_funcs(&m, &f); /* the session's arena, perhaps (cmd_session.c) */
	(f ? f : free)(s);
	return w < 0 ? (int)w : 0;
}

int cli_json_print(json_t *obj)
{
	if (J.printed || J.failed) { /* JS1, JS2 */
		json_decref(obj);
		cli_err("internal: a second JSON object (or one after a failure) refused");
		return -EALREADY;
	}
	return json_emit(obj);
}

int cli_write_out(const char *s)
{
	fflush(stdout); /* what printf buffered goes first */
	ssize_t w = hf_sys_write(1, s, strlen(s));
	return w < 0 ? (int)w : 0;
}
