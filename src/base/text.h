/*
 * text.h - tokens, ISO-8601 times, UTF-8 and JSON text, a string hash
 * (text.c).
 */
#ifndef HF_TEXT_H
#define HF_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* n random bytes as 2n lowercase hex characters plus NUL (buf: 2n+1). */
int hf_random_hex(char *buf, size_t nbytes);

/* "2026-09-22T10:00:00Z" (seconds) or with ".123" when ms is not whole. */
#define HF_TIME_MAX 32 /* bytes a formatted time needs, NUL included */
void hf_time_format(int64_t unix_ms, char *buf, size_t n);
/* v in decimal at p, zero-padded to width digits (at most 20); returns the
 * end (not NUL-terminated). No stdio: hot paths format with these. */
static inline char *hf_put_u64w(char *p, uint64_t v, int width)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";
	char tmp[20], *end = tmp + sizeof tmp, *q = end;
	while (v >= 100) { /* two digits a division */
		q -= 2;
		memcpy(q, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, pairs + 2 * v, 2);
	} else {
		*--q = (char)('0' + v);
	}
	int n = (int)(end - q);
	if (width > (int)sizeof tmp)
		width = (int)sizeof tmp;
	if (n < width) {
		memset(p, '0', (size_t)(width - n));
		p += width - n;
	}
	while (q < end) /* a few bytes: no call to memcpy */
		*p++ = *q++;
	return p;
}

/* s at p (not NUL-terminated); returns the end. */
static inline char *hf_put_str(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

/* A string literal at p (not NUL-terminated), inline; the end. */
#define HF_PUT_LIT(p, lit) (memcpy((p), "" lit, sizeof(lit) - 1), (p) + sizeof(lit) - 1)
/* s into dst[n], cut to fit, always NUL-terminated. */
void hf_copy_str(char *dst, size_t n, const char *s);
/* ISO-8601 / RFC 3339: date 'T' time, optional fraction, 'Z' or +hh:mm.
 * Leading/trailing white space allowed. 0 and *ret_ms, or -EINVAL. */
int hf_time_parse(const char *s, int64_t *ret_ms);
/* A decimal number: only the digits 0-9 (at least one; leading zeros
 * allowed), nothing else - no sign, space, "0x" or unit. 0 and *ret;
 * -EINVAL when s is not such a number, -ERANGE when it exceeds max. (TX5) */
int hf_parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* The length of the UTF-8 sequence at s (1-4), or 0 when it is not one. */
size_t hf_utf8_len(const char *s);
/* Is s valid UTF-8 without control characters, at most max bytes? (TX2) */
bool hf_text_ok(const char *s, size_t max);
/* s for a message into buf (n bytes): control characters (and '\n' unless
 * keep_nl) and bytes that are not UTF-8 as \xNN, cut to fit. Returns buf. */
const char *hf_text_show(const char *s, char *buf, size_t n, bool keep_nl);
/* s as the inside of a JSON string at p ('"' and '\\' escaped, control
 * characters and DEL as \u00XX; at most 6 bytes per byte of s), not
 * NUL-terminated; returns the end. The one JSON escaper (TX3). */
char *hf_json_escape(char *p, const char *s);
/* FNV-1a, 64 bits, of n bytes at p (a digest for identity and hashing,
 * not for security). */
uint64_t hf_fnv1a(const void *p, size_t n);

/* A refusal's reason: fmt into why (n bytes; nothing when why is NULL or n
 * is 0), and rc back, so `return hf_why(why, n, -EINVAL, "…", …);` says and
 * fails in one step. */
int hf_why(char *why, size_t n, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
