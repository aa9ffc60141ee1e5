/*
 * common.c - exit codes, messages and parsing shared by the commands.
 */
#include "cli.h"

#include "holdfast.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
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

/* Length of the UTF-8 sequence starting at p (1-4), or 0 when it is not a
 * valid one. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t extra;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0 && c >= 0xc2)
		extra = 1;
	else if ((c & 0xf0) == 0xe0)
		extra = 2;
	else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
		extra = 3;
	else
		return 0;
	for (size_t i = 1; i <= extra; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return extra + 1;
}

/* Copy s into buf, control characters (except '\n' when keep_nl) and
 * bytes that are not UTF-8 as \xNN. */
static const char *escape(const char *s, char *buf, size_t n, bool keep_nl)
{
	size_t at = 0;
	const unsigned char *p = (const unsigned char *)s;
	while (*p && at + 5 < n) {
		size_t l = utf8_len(p);
		if (l == 0 || (l == 1 && (*p < 0x20 || *p == 0x7f) && !(keep_nl && *p == '\n'))) {
			at += (size_t)snprintf(buf + at, n - at, "\\x%02x", *p);
			p++;
			continue;
		}
		if (at + l >= n)
			break;
		memcpy(buf + at, p, l);
		at += l;
		p += l;
	}
	buf[at] = '\0';
	return buf;
}

const char *cli_shown(const char *s, char *buf, size_t n)
{
	return escape(s ? s : "", buf, n, false);
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
	fprintf(stderr, "holdfast: %s\n", escape(buf, shown, sizeof shown, true));
}

int cli_parse_duration(const char *s, int64_t *ret_ms)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	double mult;
	if (!*end || !strcmp(end, "s"))
		mult = 1000;
	else if (!strcmp(end, "ms"))
		mult = 1;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mult = 60e3;
	else if (!strcmp(end, "h"))
		mult = 3600e3;
	else if (!strcmp(end, "d"))
		mult = 86400e3;
	else
		return -EINVAL;
	double ms = v * mult;
	if (ms > 9e15)
		return -EINVAL;
	*ret_ms = (int64_t)(ms + 0.5);
	return 0;
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

void cli_json_print(json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (s) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	json_decref(obj);
	fflush(stdout);
}
