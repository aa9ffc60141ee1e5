/*
 * text.c - text the lock kinds write and read: tokens, ISO-8601 times,
 * UTF-8 checks, JSON string escapes, what a message may show, and the one
 * string hash of the tree (FNV-1a).
 *
 * Invariants:
 *  (TX1) hf_time_format and hf_time_parse round-trip every time from year
 *        0000 to 9999 at millisecond precision, without the C library's
 *        time-zone machinery (no /etc/localtime is ever read).
 *  (TX2) hf_text_ok accepts only valid UTF-8 without control characters:
 *        what it accepts can be printed to a terminal and written into JSON
 *        with only '"' and '\\' escaped.
 *  (TX3) hf_json_escape is the one JSON string escaper: what it writes is
 *        valid inside a JSON string for any input without NUL, and for text
 *        (TX2) it is the text with only '"' and '\\' escaped.
 *  (TX4) hf_time_parse accepts only dates of the calendar: a day past its
 *        month's last (2020-02-30, 2021-02-29) is refused, never rolled
 *        into the next month; a leap second only as 23:59:60.
 *  (TX5) hf_parse_u64 accepts decimal digits only: no sign, no white
 *        space, no "0x", nothing after them; a value past max is -ERANGE,
 *        never wrapped.
 *  (TX6) Random bytes (tokens, unique names) come from getrandom(2) through
 *        a per-thread pool of POOL bytes, each byte handed out once: a
 *        token or name costs no system call but every POOL/n-th, and a
 *        forked child never hands out its parent's bytes (the pool is
 *        emptied in the child, pthread_atfork). An error of getrandom is
 *        the caller's, and leaves the pool empty.
 */
#include "text.h"

#include "sys.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define POOL 256
static __thread unsigned char pool[POOL];
static __thread size_t pool_left; /* the last pool_left bytes are unused */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_forget(void)
{
	pool_left = 0; /* TX6: the child's pool is not the parent's */
}

static void pool_init(void)
{
	pthread_atfork(NULL, NULL, pool_forget);
}

/* n random bytes (n <= POOL) into out: 0 or -errno (TX6). */
static int pool_take(unsigned char *out, size_t n)
{
	pthread_once(&pool_once, pool_init);
	if (pool_left < n) {
		pool_left = 0;
		int rc = hf_sys_getrandom(pool, POOL);
		if (rc < 0)
			return rc;
		pool_left = POOL;
	}
	unsigned char *from = pool + POOL - pool_left;
	memcpy(out, from, n);
	memset(from, 0, n); /* handed out once */
	pool_left -= n;
	return 0;
}

int hf_random_hex(char *buf, size_t nbytes)
{
	unsigned char raw[64];
	if (nbytes > sizeof raw)
		return -EINVAL;
	int rc = pool_take(raw, nbytes);
	if (rc < 0)
		return rc;
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < nbytes; i++) {
		unsigned b = raw[i];
		buf[2 * i] = hex[b >> 4];
		buf[2 * i + 1] = hex[b & 15];
	}
	buf[2 * nbytes] = '\0';
	return 0;
}

/* UTC calendar arithmetic (H. Hinnant's days_from_civil / civil_from_days,
 * proleptic Gregorian). gmtime_r and timegm would do, but glibc loads
 * /etc/localtime on their first use: seven system calls in every short
 * `holdfast` process, for a zone that is never used. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

void hf_copy_str(char *dst, size_t n, const char *s)
{
	if (!n)
		return;
	size_t l = strnlen(s, n - 1);
	memcpy(dst, s, l);
	dst[l] = '\0';
}

void hf_time_format(int64_t ms, char *buf, size_t n)
{
	int64_t s = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
	int frac = (int)(ms - s * 1000);
	int64_t days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
	int64_t sod = s - days * 86400, y;
	int mon, mday;
	civil_from_days(days, &y, &mon, &mday);
	int h = (int)(sod / 3600), mi = (int)(sod / 60 % 60), sec = (int)(sod % 60);
	if (y < 0 || y > 9999 || n < HF_TIME_MAX) {
		/* outside what four digits say (or a short buffer): the slow way */
		if (frac)
			snprintf(buf, n, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, mon,
				 mday, h, mi, sec, frac);
		else
			snprintf(buf, n, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, mon, mday,
				 h, mi, sec);
		return;
	}
	/* by hand: this runs in every acquisition, and stdio's padding costs
	 * more than the system calls around it */
	char *p = buf;
	p = hf_put_u64w(p, (uint64_t)y, 4);
	*p++ = '-';
	p = hf_put_u64w(p, (uint64_t)mon, 2);
	*p++ = '-';
	p = hf_put_u64w(p, (uint64_t)mday, 2);
	*p++ = 'T';
	p = hf_put_u64w(p, (uint64_t)h, 2);
	*p++ = ':';
	p = hf_put_u64w(p, (uint64_t)mi, 2);
	*p++ = ':';
	p = hf_put_u64w(p, (uint64_t)sec, 2);
	if (frac) {
		*p++ = '.';
		p = hf_put_u64w(p, (uint64_t)frac, 3);
	}
	*p++ = 'Z';
	*p = '\0';
	assert(p - buf < HF_TIME_MAX && "TX1");
}

static int days_in_month(int y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : days[m - 1];
}

int hf_parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;
	if (!s || !*s || s[strspn(s, "0123456789")])
		return -EINVAL; /* TX5: no sign, no white space, nothing empty */
	for (; *s; s++)
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return -ERANGE;
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

static int digits(const char **p, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -EINVAL;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

int hf_time_parse(const char *s, int64_t *ret_ms)
{
	const char *p = s;
	int Y, M, D, h, m, sec;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
	    digits(&p, 2, &D) || (*p != 'T' && *p != 't' && *p != ' '))
		return -EINVAL;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
	    digits(&p, 2, &sec))
		return -EINVAL;
	/* TX4: a date of the calendar (no 2020-02-30 rolled into March); a
	 * leap second only as 23:59:60 */
	if (M < 1 || M > 12 || D < 1 || D > days_in_month(Y, M) || h > 23 || m > 59 ||
	    (sec > 59 && (sec > 60 || h != 23 || m != 59)))
		return -EINVAL;
	int ms = 0;
	if (*p == '.' || *p == ',') {
		p++;
		int nd = 0;
		while (*p >= '0' && *p <= '9') {
			if (nd < 3)
				ms = ms * 10 + (*p - '0');
			nd++;
			p++;
		}
		if (nd == 0)
			return -EINVAL;
		for (; nd < 3; nd++)
			ms *= 10;
	}
	int64_t off_s = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om;
		if (digits(&p, 2, &oh))
			return -EINVAL;
		if (*p == ':')
			p++;
		if (digits(&p, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		off_s = sign * (oh * 3600 + om * 60);
	} else {
		return -EINVAL; /* a time without a zone is ambiguous: refuse */
	}
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p)
		return -EINVAL;
	int64_t t = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec - off_s;
	/* TX1: only what hf_time_format writes back as four-digit years - an
	 * offset cannot carry 0000-01-01T00:30+01:00 to year -1 */
	if (t < days_from_civil(0, 1, 1) * 86400 || t >= days_from_civil(10000, 1, 1) * 86400)
		return -EINVAL;
	*ret_ms = t * 1000 + ms;
	return 0;
}

size_t hf_utf8_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
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

bool hf_text_ok(const char *s, size_t max)
{
	size_t n = 0;
	while (*s) {
		unsigned char c = (unsigned char)*s;
		size_t l = hf_utf8_len(s);
		if (l == 0 || c < 0x20 || c == 0x7f)
			return false;
		s += l;
		n += l;
		if (n > max)
			return false;
	}
	return true;
}

const char *hf_text_show(const char *s, char *buf, size_t n, bool keep_nl)
{
	static const char hex[] = "0123456789abcdef";
	size_t at = 0;
	if (!n)
		return "";
	for (; *s && at + 5 < n;) {
		unsigned char c = (unsigned char)*s;
		size_t l = hf_utf8_len(s);
		if (l == 0 || (l == 1 && (c < 0x20 || c == 0x7f) && !(keep_nl && c == '\n'))) {
			buf[at++] = '\\';
			buf[at++] = 'x';
			buf[at++] = hex[c >> 4];
			buf[at++] = hex[c & 15];
			s++;
			continue;
		}
		if (at + l >= n)
			break;
		memcpy(buf + at, s, l);
		at += l;
		s += l;
	}
	buf[at] = '\0';
	return buf;
}

char *hf_json_escape(char *p, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			*p++ = '\\';
			*p++ = 'u';
			*p++ = '0';
			*p++ = '0';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		} else {
			*p++ = (char)c;
		}
	}
	return p;
}

uint64_t hf_fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int hf_why(char *why, size_t n, int rc, const char *fmt, ...)
{
	if (why && n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return rc;
}
