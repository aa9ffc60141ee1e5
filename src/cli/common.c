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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	fprintf(stderr, "holdfast: %s\n", hf_text_show(buf, shown, sizeof shown, true));
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

const char *cli_token_form(const char *arg, char *buf, size_t n)
{
	size_t k = strcspn(arg, " \t\n");
	const char *rest = arg + k + strspn(arg + k, " \t\n");
	size_t digits = strspn(rest, "0123456789");
	/* "TOKEN", or "TOKEN FENCE" with one trailing newline at most */
	bool fence = digits > 0 && (!rest[digits] || !strcmp(rest + digits, "\n"));
	if (k < n && (!*rest || fence)) {
		memcpy(buf, arg, k);
		buf[k] = '\0';
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

int cli_json_print(json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(obj);
	if (!s)
		return -ENOMEM;
	int rc = cli_write_out(s);
	if (rc == 0)
		rc = cli_write_out("\n");
	free(s);
	return rc;
}

int cli_write_out(const char *s)
{
	fflush(stdout); /* what printf buffered goes first */
	ssize_t w = hf_sys_write(1, s, strlen(s));
	return w < 0 ? (int)w : 0;
}
