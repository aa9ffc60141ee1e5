/*
 * spec_glob.c - glob specs: their syntax, and overlap, cover and contains
 * decided exactly on them (the design, SC7-SC12 and the hazards are in
 * spec.c's header, "Glob specs"). Pure: no file system, no kernel call.
 *
 * Every spec, glob or prefix, and every kernel identity becomes a pattern
 * here: a list of tokens over path components (segments):
 *   SEG  one segment matching a segment pattern (a literal, or chars with
 *        '*', '?' and classes)
 *   ANY  any run of segments, none included ('**'; a recursive spec's tail)
 *   OPT  none or one segment (a non-recursive prefix spec's children)
 * Overlap is the product of the two token lists (memoized pairs, and a
 * memoized product of the two segment patterns for each pair of segments);
 * cover is the inclusion of the two languages over a finite alphabet of
 * segment classes (SC10).
 */
#include "spec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- syntax --------------------------------------------------------------- */

static bool glob_char(char c)
{
	return c == '*' || c == '?' || c == '[';
}

bool hf_glob_has(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (glob_char(p[i]))
			return true;
	return false;
}

bool hf_glob_special(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (glob_char(p[i]) || p[i] == ']' || p[i] == '{' || p[i] == '}' || p[i] == '\\')
			return true;
	return false;
}

/* One class "[...]" at c[i] (c[i] == '['), of a component ending at n: the
 * index just past its ']', or -1 with *pos and *why. */
static long class_end(const char *c, size_t i, size_t n, size_t *pos, const char **why)
{
	size_t open = i++;
	if (i < n && (c[i] == '!' || c[i] == '^'))
		i++;
	size_t first = i;
	while (i < n && c[i] != ']') {
		unsigned char ch = (unsigned char)c[i];
		if (ch >= 0x80 || ch < 0x20 || ch == 0x7f) {
			*pos = i;
			*why = "a class holds printable ASCII characters only";
			return -1;
		}
		if (ch == '\\' || ch == '{' || ch == '}') {
			*pos = i;
			*why = ch == '\\' ? "escapes are not supported" : "braces are not supported";
			return -1;
		}
		if (i + 2 < n && c[i + 1] == '-' && c[i + 2] != ']') {
			unsigned char hi = (unsigned char)c[i + 2];
			if (hi >= 0x80 || hi < 0x20 || hi == 0x7f || hi == '\\') {
				*pos = i + 2;
				*why = "a class holds printable ASCII characters only";
				return -1;
			}
			if (hi < ch) {
				*pos = i;
				*why = "an empty range";
				return -1;
			}
			i += 3;
			continue;
		}
		i++;
	}
	if (i >= n) {
		*pos = open;
		*why = "an unclosed '['";
		return -1;
	}
	if (i == first) {
		*pos = i;
		*why = "an empty class";
		return -1;
	}
	return (long)i + 1;
}

int hf_glob_check(const char *p, size_t len, bool *ret_glob, size_t *ret_pos, const char **ret_why)
{
	bool glob = false;
	size_t pos = 0;
	const char *why = NULL;
	if (!hf_glob_has(p, len)) { /* a prefix spec, whatever else it holds */
		if (ret_glob)
			*ret_glob = false;
		return 0;
	}
	for (size_t s = 0; s < len && !why;) {
		while (s < len && p[s] == '/')
			s++;
		size_t e = s;
		while (e < len && p[e] != '/')
			e++;
		size_t n = e - s;
		const char *c = p + s;
		bool g = n == 2 && c[0] == '*' && c[1] == '*';
		for (size_t i = 0; !g && i < n && !why;) {
			if (c[i] == '*' && i + 1 < n && c[i + 1] == '*') {
				pos = s + i;
				why = "'**' must be a whole component";
			} else if (c[i] == '{' || c[i] == '}') {
				pos = s + i;
				why = "braces are not supported";
			} else if (c[i] == '\\') {
				pos = s + i;
				why = "escapes are not supported";
			} else if (c[i] == ']') {
				pos = s + i;
				why = "a ']' outside a class";
			} else if (c[i] == '[') {
				size_t at = i;
				long end = class_end(c, i, n, &at, &why);
				if (end < 0) {
					pos = s + at;
					break;
				}
				i = (size_t)end;
				glob = true;
				continue;
			} else if (c[i] == '*' || c[i] == '?') {
				glob = true;
			}
			i++;
		}
		if (g)
			glob = true;
		if (!why && glob && ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))) {
			pos = s;
			why = "'.' or '..' after a glob component";
		}
		s = e;
	}
	if (why) {
		if (ret_pos)
			*ret_pos = pos;
		if (ret_why)
			*ret_why = why;
		return -EINVAL;
	}
	if (ret_glob)
		*ret_glob = glob;
	return 0;
}

/* The literal prefix of a checked pattern p: the length of the part before
 * its first glob component (no trailing '/'; "/" kept), its depth. */
static size_t literal_prefix(const char *p, size_t len, unsigned *ret_depth)
{
	size_t at = 0;
	unsigned d = 0;
	for (size_t s = 0; s < len;) {
		while (s < len && p[s] == '/')
			s++;
		size_t e = s;
		while (e < len && p[e] != '/')
			e++;
		bool g = false;
		for (size_t i = s; i < e && !g; i++)
			g = glob_char(p[i]);
		if (g || s == e)
			break;
		at = e;
		d++;
		s = e;
	}
	*ret_depth = d;
	return at == 0 && len && p[0] == '/' ? 1 : at;
}

int hf_glob_parse(const char *p, size_t len, size_t *ret_litlen, unsigned *ret_litdepth,
		  unsigned *ret_depth)
{
	bool glob;
	if (hf_glob_check(p, len, &glob, NULL, NULL) < 0 || !glob || !len || p[0] != '/' ||
	    p[len - 1] == '/' || len >= PATH_MAX)
		return -EINVAL;
	unsigned ld;
	size_t ll = literal_prefix(p, len, &ld), d = 0;
	unsigned lnd;
	if (!hf_path_normal(p, ll, &lnd) || lnd != ld) /* SC2: the literal part is normal */
		return -EINVAL;
	/* the tail: single '/' between non-empty components (SC8) */
	for (size_t i = ll == 1 ? 0 : ll; i < len; i++) {
		if (p[i] != '/')
			continue;
		if (i + 1 >= len || p[i + 1] == '/')
			return -EINVAL;
		d++;
	}
	if (memchr(p, '\0', len))
		return -EINVAL;
	*ret_litlen = ll;
	*ret_litdepth = ld;
	*ret_depth = ld + (unsigned)d;
	return 0;
}

/* --- patterns ------------------------------------------------------------- */

/* A set of characters: printable ASCII by bit, and the rest by na. */
enum { NA_NONE, NA_ALL, NA_ONE };
struct cset {
	uint64_t a[2];
	uint8_t na;
	uint32_t cp; /* NA_ONE */
};
struct gchr {
	bool star;
	struct cset cs;
};
enum { GK_SEG, GK_ANY, GK_OPT };
struct gseg {
	uint8_t kind;
	bool lit;           /* every char literal: s[0..n) is the segment      */
	const char *s;      /* the component's text                             */
	size_t n;
	struct gchr *c;     /* GK_SEG                                          */
	size_t nc;
};
struct gpat {
	struct gseg *t;
	size_t n;
	struct gchr *pool;
};

/* The characters of a path component: printable ASCII but '/', and every
 * other character that is not a control character (SC9). */
static struct cset allowed(void)
{
	struct cset c = { .na = NA_ALL };
	for (unsigned ch = 0x20; ch < 0x7f; ch++)
		if (ch != '/')
			c.a[ch >> 6] |= 1ull << (ch & 63);
	return c;
}

static bool cset_has(const struct cset *c, uint32_t cp)
{
	if (cp < 128)
		return c->a[cp >> 6] >> (cp & 63) & 1;
	return c->na == NA_ALL || (c->na == NA_ONE && c->cp == cp);
}

static bool cset_meets(const struct cset *x, const struct cset *y)
{
	if ((x->a[0] & y->a[0]) || (x->a[1] & y->a[1]))
		return true;
	if (x->na == NA_NONE || y->na == NA_NONE)
		return false;
	if (x->na == NA_ONE && y->na == NA_ONE)
		return x->cp == y->cp;
	return true;
}

/* Decode one UTF-8 character of s[0..n) (text already checked): its code
 * point; *adv its length. A malformed byte stands for itself. */
static uint32_t utf8_at(const char *s, size_t n, size_t *adv)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned len = u[0] < 0x80 ? 1 : u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3 : u[0] >= 0xc0 ? 2 : 1;
	if (len > n)
		len = 1;
	uint32_t cp = len == 1 ? u[0] : u[0] & (0x3f >> (len - 1));
	for (unsigned i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80) {
			*adv = 1;
			return u[0] | 0x80000000u; /* a byte that is no character */
		}
		cp = cp << 6 | (u[i] & 0x3f);
	}
	*adv = len;
	return cp;
}

/* Compile component c[0..n) (glob syntax when glob, else literal) into
 * chars at *pool. */
static void compile_segment(struct gseg *g, const char *c, size_t n, bool glob, struct gchr *pool)
{
	*g = (struct gseg){ .kind = GK_SEG, .lit = true, .s = c, .n = n, .c = pool };
	if (glob && n == 2 && c[0] == '*' && c[1] == '*') {
		g->kind = GK_ANY;
		g->lit = false;
		return;
	}
	for (size_t i = 0; i < n;) {
		struct gchr *x = &g->c[g->nc++];
		*x = (struct gchr){ 0 };
		if (glob && c[i] == '*') {
			x->star = true;
			g->lit = false;
			i++;
		} else if (glob && c[i] == '?') {
			x->cs = allowed();
			g->lit = false;
			i++;
		} else if (glob && c[i] == '[') {
			g->lit = false;
			bool neg = false;
			i++;
			if (c[i] == '!' || c[i] == '^') {
				neg = true;
				i++;
			}
			struct cset m = { .na = NA_NONE };
			while (c[i] != ']') {
				unsigned lo = (unsigned char)c[i], hi = lo;
				if (i + 2 < n && c[i + 1] == '-' && c[i + 2] != ']') {
					hi = (unsigned char)c[i + 2];
					i += 3;
				} else {
					i++;
				}
				for (unsigned ch = lo; ch <= hi; ch++)
					if (ch != '/')
						m.a[ch >> 6] |= 1ull << (ch & 63);
			}
			i++;
			if (neg) {
				struct cset al = allowed();
				m.a[0] = al.a[0] & ~m.a[0];
				m.a[1] = al.a[1] & ~m.a[1];
				m.na = NA_ALL;
			}
			x->cs = m;
		} else {
			size_t adv;
			uint32_t cp = utf8_at(c + i, n - i, &adv);
			if (cp < 128)
				x->cs.a[cp >> 6] |= 1ull << (cp & 63);
			else
				x->cs = (struct cset){ .na = NA_ONE, .cp = cp };
			i += adv;
		}
	}
}

static void gpat_free(struct gpat *p)
{
	free(p->t);
	free(p->pool);
	memset(p, 0, sizeof *p);
}

/* The pattern of the set path[0..len) of kind: 'r' (recursive prefix),
 * 'c' (prefix and children), 'e' (the path alone), 'g' (a glob's matches),
 * 'G' (a glob's matches and everything below them). Prefix kinds read
 * every component literally. 0 or -ENOMEM. */
static int gpat_compile(const char *path, size_t len, char kind, struct gpat *ret)
{
	bool glob = kind == 'g' || kind == 'G';
	memset(ret, 0, sizeof *ret);
	ret->t = malloc((len / 2 + 3) * sizeof *ret->t);
	ret->pool = malloc((len + 1) * sizeof *ret->pool);
	if (!ret->t || !ret->pool) {
		gpat_free(ret);
		return -ENOMEM;
	}
	size_t used = 0;
	for (size_t s = 0; s < len;) {
		while (s < len && path[s] == '/')
			s++;
		size_t e = s;
		while (e < len && path[e] != '/')
			e++;
		if (e > s) {
			struct gseg *g = &ret->t[ret->n++];
			compile_segment(g, path + s, e - s, glob, ret->pool + used);
			used += g->nc;
		}
		s = e;
	}
	if (kind == 'r' || kind == 'G')
		ret->t[ret->n++] = (struct gseg){ .kind = GK_ANY, .s = "**", .n = 2 };
	else if (kind == 'c')
		ret->t[ret->n++] = (struct gseg){ .kind = GK_OPT, .s = "*", .n = 1 };
	return 0;
}

static char spec_kind(const struct hf_spec *s)
{
	return s->glob ? (s->recursive ? 'G' : 'g') : (s->recursive ? 'r' : 'c');
}

/* --- one segment ------------------------------------------------------------ */

/* Does segment pattern g match the component w[0..n)? (SC7) */
static bool seg_match(const struct gseg *g, const char *w, size_t n)
{
	if (g->kind != GK_SEG)
		return true;
	if (g->lit)
		return g->n == n && !memcmp(g->s, w, n);
	size_t pi = 0, si = 0, mark = 0;
	long star = -1;
	while (si < n) {
		size_t adv;
		uint32_t cp = utf8_at(w + si, n - si, &adv);
		if (pi < g->nc && !g->c[pi].star && cset_has(&g->c[pi].cs, cp)) {
			pi++;
			si += adv;
		} else if (pi < g->nc && g->c[pi].star) {
			star = (long)pi++;
			mark = si;
		} else if (star >= 0) {
			pi = (size_t)star + 1;
			utf8_at(w + mark, n - mark, &adv);
			mark += adv;
			si = mark;
		} else {
			return false;
		}
	}
	while (pi < g->nc && g->c[pi].star)
		pi++;
	return pi == g->nc;
}

/* Is there a component (non-empty) both a and b match? The product of the
 * two char lists, each state (i, j, non-empty) visited once. */
static int seg_meet(const struct gseg *a, const struct gseg *b)
{
	if (a->kind != GK_SEG || b->kind != GK_SEG)
		return 1; /* every segment pattern matches some component (SC9) */
	if (a->lit)
		return seg_match(b, a->s, a->n);
	if (b->lit)
		return seg_match(a, b->s, b->n);
	size_t na = a->nc + 1, nb = b->nc + 1, ns = na * nb * 2;
	uint8_t *seen = calloc(ns, 1);
	size_t *stack = malloc(ns * sizeof *stack);
	if (!seen || !stack) {
		free(seen);
		free(stack);
		return -ENOMEM;
	}
	size_t sp = 0;
	int found = 0;
	stack[sp++] = 0;
	seen[0] = 1;
	struct cset any = allowed();
	while (sp && !found) {
		size_t st = stack[--sp];
		size_t ne = st & 1, ij = st >> 1, i = ij / nb, j = ij % nb;
		if (i == a->nc && j == b->nc && ne) {
			found = 1;
			break;
		}
		size_t next[4];
		int k = 0;
		/* a star may end (epsilon) */
		if (i < a->nc && a->c[i].star)
			next[k++] = ((i + 1) * nb + j) << 1 | ne;
		if (j < b->nc && b->c[j].star)
			next[k++] = (i * nb + j + 1) << 1 | ne;
		/* one character both take */
		if (i < a->nc && j < b->nc) {
			const struct cset *x = a->c[i].star ? &any : &a->c[i].cs;
			const struct cset *y = b->c[j].star ? &any : &b->c[j].cs;
			if (cset_meets(x, y))
				next[k++] = ((i + !a->c[i].star) * nb + j + !b->c[j].star) << 1 | 1;
		}
		for (int q = 0; q < k; q++)
			if (!seen[next[q]]) {
				seen[next[q]] = 1;
				stack[sp++] = next[q];
			}
	}
	free(seen);
	free(stack);
	return found;
}

/* --- contains --------------------------------------------------------------- */

/* Does the pattern match the normal path p[0..len)? Position sets. */
static int gpat_matches(const struct gpat *g, const char *p, size_t len)
{
	uint8_t *cur = calloc(2 * (g->n + 1), 1);
	if (!cur)
		return -ENOMEM;
	uint8_t *nxt = cur + g->n + 1;
	cur[0] = 1;
	for (size_t s = 0;;) {
		for (size_t i = 0; i < g->n; i++) /* closure: ANY and OPT may take nothing */
			if (cur[i] && g->t[i].kind != GK_SEG)
				cur[i + 1] = 1;
		while (s < len && p[s] == '/')
			s++;
		if (s >= len)
			break;
		size_t e = s;
		while (e < len && p[e] != '/')
			e++;
		memset(nxt, 0, g->n + 1);
		bool any = false;
		for (size_t i = 0; i < g->n; i++) {
			if (!cur[i] || !seg_match(&g->t[i], p + s, e - s))
				continue;
			nxt[g->t[i].kind == GK_ANY ? i : i + 1] = 1;
			any = true;
		}
		memcpy(cur, nxt, g->n + 1);
		s = e;
		if (!any)
			break;
	}
	int r = cur[g->n];
	free(cur);
	return r;
}

/* --- overlap ---------------------------------------------------------------- */

/* Do two patterns match a common path? The product (i, j) of the two token
 * lists, each pair visited once; a pair of segments meets at most once
 * computed (SC10). <0: out of memory. */
static int gpat_meet(const struct gpat *a, const struct gpat *b)
{
	size_t na = a->n + 1, nb = b->n + 1, ns = na * nb;
	uint8_t *seen = calloc(ns, 1);
	int8_t *memo = malloc(ns);
	size_t *stack = malloc(ns * sizeof *stack);
	if (!seen || !memo || !stack) {
		free(seen);
		free(memo);
		free(stack);
		return -ENOMEM;
	}
	memset(memo, -1, ns);
	size_t sp = 0;
	int found = 0;
	stack[sp++] = 0;
	seen[0] = 1;
	while (sp && found == 0) {
		size_t st = stack[--sp], i = st / nb, j = st % nb;
		if (i == a->n && j == b->n) {
			found = 1;
			break;
		}
		size_t next[3];
		int k = 0;
		if (i < a->n && a->t[i].kind != GK_SEG)
			next[k++] = (i + 1) * nb + j;
		if (j < b->n && b->t[j].kind != GK_SEG)
			next[k++] = i * nb + j + 1;
		if (i < a->n && j < b->n) {
			if (memo[st] < 0) {
				int m = seg_meet(&a->t[i], &b->t[j]);
				if (m < 0) {
					found = m;
					break;
				}
				memo[st] = (int8_t)m;
			}
			if (memo[st])
				next[k++] = (i + (a->t[i].kind != GK_ANY)) * nb + j +
					    (b->t[j].kind != GK_ANY);
		}
		for (int q = 0; q < k; q++)
			if (!seen[next[q]]) {
				seen[next[q]] = 1;
				stack[sp++] = next[q];
			}
	}
	free(seen);
	free(memo);
	free(stack);
	return found;
}

/* --- cover: inclusion over segment classes (SC10) ---------------------------- */

/* A store of states, each w words, found by hash; with the state each came
 * from and by what (the witness). */
struct sstore {
	size_t w, n, cap, hcap;
	uint64_t *v;
	int32_t *par, *via;
	int32_t *ht;
};

static void ss_free(struct sstore *s)
{
	free(s->v);
	free(s->par);
	free(s->via);
	free(s->ht);
}

static uint64_t ss_hash(const uint64_t *v, size_t w)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < w; i++)
		h = (h ^ v[i]) * 1099511628211ull + (h >> 29);
	return h;
}

/* Add state v (par, via): its index, *isnew; -ENOMEM; -E2BIG past max. */
static long ss_add(struct sstore *s, const uint64_t *v, int32_t par, int32_t via, size_t max,
		   bool *isnew)
{
	*isnew = false;
	if (s->hcap == 0 || 2 * (s->n + 1) > s->hcap) {
		size_t hc = s->hcap ? 2 * s->hcap : 64;
		int32_t *ht = malloc(hc * sizeof *ht);
		if (!ht)
			return -ENOMEM;
		memset(ht, -1, hc * sizeof *ht);
		for (size_t i = 0; i < s->n; i++) {
			size_t h = ss_hash(s->v + i * s->w, s->w) & (hc - 1);
			while (ht[h] >= 0)
				h = (h + 1) & (hc - 1);
			ht[h] = (int32_t)i;
		}
		free(s->ht);
		s->ht = ht;
		s->hcap = hc;
	}
	size_t h = ss_hash(v, s->w) & (s->hcap - 1);
	while (s->ht[h] >= 0) {
		if (!memcmp(s->v + (size_t)s->ht[h] * s->w, v, s->w * 8))
			return s->ht[h];
		h = (h + 1) & (s->hcap - 1);
	}
	if (s->n >= max)
		return -E2BIG;
	if (s->n == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 64;
		uint64_t *nv = realloc(s->v, c * s->w * 8);
		if (nv)
			s->v = nv;
		int32_t *np = realloc(s->par, c * sizeof *np);
		if (np)
			s->par = np;
		int32_t *nw = realloc(s->via, c * sizeof *nw);
		if (nw)
			s->via = nw;
		if (!nv || !np || !nw)
			return -ENOMEM;
		s->cap = c;
	}
	memcpy(s->v + s->n * s->w, v, s->w * 8);
	s->par[s->n] = par;
	s->via[s->n] = via;
	s->ht[h] = (int32_t)s->n;
	*isnew = true;
	return (long)s->n++;
}

#define BIT(v, i) ((v)[(i) >> 6] >> ((i) & 63) & 1)
#define SETBIT(v, i) ((v)[(i) >> 6] |= 1ull << ((i) & 63))

/* The segment patterns of a cover question, each a char automaton with its
 * positions at off[k].. off[k] + nc. */
struct segset {
	const struct gseg **s;
	size_t n, *off, npos;
};

/* Char-level closure: a star may end. */
static void seg_close(const struct segset *ss, uint64_t *v)
{
	for (size_t k = 0; k < ss->n; k++)
		for (size_t i = 0; i < ss->s[k]->nc; i++)
			if (BIT(v, ss->off[k] + i) && ss->s[k]->c[i].star)
				SETBIT(v, ss->off[k] + i + 1);
}

static void cp_put(char *buf, size_t *at, size_t n, uint32_t cp)
{
	char u[4];
	size_t l;
	if (cp & 0x80000000u) {
		u[0] = (char)(cp & 0xff);
		l = 1;
	} else if (cp < 0x80) {
		u[0] = (char)cp;
		l = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		l = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		l = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		l = 4;
	}
	if (*at + l < n) {
		memcpy(buf + *at, u, l);
		*at += l;
	}
}

#define HF_GLOB_STATES_MAX 65536

/* The classes of components: every membership vector (over ss's patterns)
 * some component has, each with a component that has it (SC10). Chars:
 * every printable ASCII but '/', each non-ASCII char a pattern names, and
 * one it does not (every other behaves as that one). 0, -ENOMEM, -E2BIG. */
struct atoms {
	size_t n, w;           /* atoms, words of a vector                    */
	uint64_t *vec;         /* n * w                                       */
	char (*text)[256];     /* a component of each                         */
};

static int atoms_make(const struct segset *ss, struct atoms *ret)
{
	memset(ret, 0, sizeof *ret);
	uint32_t *alpha = NULL;
	size_t na = 0, cap = 100;
	for (size_t k = 0; k < ss->n; k++)
		cap += ss->s[k]->nc;
	alpha = malloc(cap * sizeof *alpha);
	if (!alpha)
		return -ENOMEM;
	/* letters and digits first: the witness named reads as a name */
	for (uint32_t ch = 'a'; ch <= 'z'; ch++)
		alpha[na++] = ch;
	for (uint32_t ch = 0x20; ch < 0x7f; ch++)
		if (ch != '/' && !(ch >= 'a' && ch <= 'z'))
			alpha[na++] = ch;
	for (size_t k = 0; k < ss->n; k++)
		for (size_t i = 0; i < ss->s[k]->nc; i++) {
			const struct gchr *c = &ss->s[k]->c[i];
			if (!c->star && c->cs.na == NA_ONE) {
				bool have = false;
				for (size_t q = 0; q < na && !have; q++)
					have = alpha[q] == c->cs.cp;
				if (!have)
					alpha[na++] = c->cs.cp;
			}
		}
	for (uint32_t fresh = 0xe9;; fresh++) { /* one unnamed character */
		bool have = false;
		for (size_t q = 0; q < na && !have; q++)
			have = alpha[q] == fresh;
		if (!have) {
			alpha[na++] = fresh;
			break;
		}
	}
	struct sstore st = { .w = (ss->npos + 63) / 64 + 1 };
	size_t aw = (ss->n + 63) / 64 + 1;
	uint64_t *cur = calloc(2 * st.w, 8), *nxt = cur + st.w;
	struct sstore at = { .w = aw };
	uint64_t *vec = calloc(aw, 8);
	int rc = cur && vec ? 0 : -ENOMEM;
	bool isnew;
	if (rc == 0) {
		for (size_t k = 0; k < ss->n; k++)
			SETBIT(cur, ss->off[k]);
		seg_close(ss, cur);
		long r = ss_add(&st, cur, -1, -1, HF_GLOB_STATES_MAX, &isnew);
		if (r < 0)
			rc = (int)r;
	}
	/* breadth first: the first component of a class found is a shortest */
	for (size_t q = 0; rc == 0 && q < st.n; q++) {
		for (size_t c = 0; rc == 0 && c < na; c++) {
			memset(nxt, 0, st.w * 8);
			const uint64_t *v = st.v + q * st.w;
			for (size_t k = 0; k < ss->n; k++) {
				const struct gseg *g = ss->s[k];
				for (size_t i = 0; i < g->nc; i++) {
					if (!BIT(v, ss->off[k] + i))
						continue;
					if (g->c[i].star)
						SETBIT(nxt, ss->off[k] + i);
					else if (cset_has(&g->c[i].cs, alpha[c]))
						SETBIT(nxt, ss->off[k] + i + 1);
				}
			}
			seg_close(ss, nxt);
			SETBIT(nxt, ss->npos); /* a component: at least one char */
			long r = ss_add(&st, nxt, (int32_t)q, (int32_t)c, HF_GLOB_STATES_MAX, &isnew);
			if (r < 0) {
				rc = (int)r;
				break;
			}
			if (!isnew)
				continue;
			memset(vec, 0, aw * 8);
			for (size_t k = 0; k < ss->n; k++)
				if (BIT(nxt, ss->off[k] + ss->s[k]->nc))
					SETBIT(vec, k);
			long a = ss_add(&at, vec, (int32_t)r, -1, HF_GLOB_STATES_MAX, &isnew);
			if (a < 0)
				rc = (int)a;
		}
	}
	if (rc == 0) {
		ret->n = at.n;
		ret->w = aw;
		ret->vec = at.v;
		at.v = NULL;
		ret->text = calloc(at.n ? at.n : 1, sizeof *ret->text);
		if (!ret->text)
			rc = -ENOMEM;
		for (size_t a = 0; rc == 0 && a < at.n; a++) {
			/* the chars from the start to the state that first showed it */
			uint32_t path[256];
			size_t np = 0;
			for (int32_t s = at.par[a]; s > 0 && np < 255; s = st.par[s])
				path[np++] = alpha[st.via[s]];
			size_t o = 0;
			while (np)
				cp_put(ret->text[a], &o, sizeof ret->text[a], path[--np]);
			ret->text[a][o] = '\0';
		}
	}
	free(alpha);
	free(cur);
	free(vec);
	ss_free(&st);
	ss_free(&at);
	if (rc < 0) {
		free(ret->vec);
		free(ret->text);
		memset(ret, 0, sizeof *ret);
	}
	return rc;
}

/* One step of pattern g's positions cur (bits base..base+g->n) on a
 * component of class vec (idx: g's tokens' indices among the segments). */
static void pat_close(const struct gpat *g, uint64_t *v, size_t base)
{
	for (size_t i = 0; i < g->n; i++)
		if (BIT(v, base + i) && g->t[i].kind != GK_SEG)
			SETBIT(v, base + i + 1);
}

static void pat_step(const struct gpat *g, const uint64_t *cur, uint64_t *nxt, size_t base,
		     const uint64_t *vec, const size_t *idx)
{
	for (size_t i = 0; i < g->n; i++) {
		if (!BIT(cur, base + i))
			continue;
		const struct gseg *t = &g->t[i];
		if (t->kind == GK_ANY)
			SETBIT(nxt, base + i);
		else if (t->kind == GK_OPT || BIT(vec, idx[i]))
			SETBIT(nxt, base + i + 1);
	}
}

/* Is every path of inner one of outer's? 1, 0 with a path of inner outside
 * outer in why (n bytes), or -ENOMEM / -E2BIG (too many states to decide). */
static int gpat_within(const struct gpat *outer, const struct gpat *inner, char *why, size_t n)
{
	/* the segment patterns of both, one index per token */
	size_t nt = outer->n + inner->n;
	struct segset ss = { 0 };
	ss.s = malloc((nt + 1) * sizeof *ss.s);
	ss.off = malloc((nt + 1) * sizeof *ss.off);
	size_t *idx = malloc((nt + 1) * sizeof *idx);
	struct atoms at = { 0 };
	struct sstore st = { 0 };
	uint64_t *cur = NULL;
	int rc = ss.s && ss.off && idx ? 0 : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < nt; i++) {
		const struct gseg *g = i < outer->n ? &outer->t[i] : &inner->t[i - outer->n];
		idx[i] = 0;
		if (g->kind != GK_SEG)
			continue;
		size_t k = 0;
		while (k < ss.n && !(ss.s[k]->n == g->n && !memcmp(ss.s[k]->s, g->s, g->n) &&
				     ss.s[k]->lit == g->lit))
			k++;
		if (k == ss.n) {
			ss.s[ss.n] = g;
			ss.off[ss.n++] = ss.npos;
			ss.npos += g->nc + 1;
		}
		idx[i] = k;
	}
	if (rc == 0)
		rc = atoms_make(&ss, &at);
	/* a state: outer's positions, then inner's */
	size_t base = outer->n + 1;
	st.w = (base + inner->n + 1 + 63) / 64 + 1;
	if (rc == 0 && !(cur = calloc(2 * st.w, 8)))
		rc = -ENOMEM;
	bool isnew;
	if (rc == 0) {
		SETBIT(cur, 0);
		SETBIT(cur, base);
		pat_close(outer, cur, 0);
		pat_close(inner, cur, base);
		long r = ss_add(&st, cur, -1, -1, HF_GLOB_STATES_MAX, &isnew);
		if (r < 0)
			rc = (int)r;
	}
	long bad = -1;
	uint64_t *nxt = cur + st.w;
	for (size_t q = 0; rc == 0 && bad < 0 && q < st.n; q++) {
		const uint64_t *v = st.v + q * st.w;
		if (BIT(v, base + inner->n) && !BIT(v, outer->n)) {
			bad = (long)q;
			break;
		}
		for (size_t a = 0; a < at.n; a++) {
			memset(nxt, 0, st.w * 8);
			const uint64_t *vec = at.vec + a * at.w;
			pat_step(outer, v, nxt, 0, vec, idx);
			pat_step(inner, v, nxt, base, vec, idx + outer->n);
			bool alive = false;
			for (size_t i = 0; i <= inner->n && !alive; i++)
				alive = BIT(nxt, base + i);
			if (!alive)
				continue; /* no path of inner goes on this way */
			pat_close(outer, nxt, 0);
			pat_close(inner, nxt, base);
			long r = ss_add(&st, nxt, (int32_t)q, (int32_t)a, HF_GLOB_STATES_MAX,
					&isnew);
			if (r < 0) {
				rc = (int)r;
				break;
			}
			v = st.v + q * st.w; /* the store may have moved */
		}
	}
	if (rc == 0 && bad >= 0 && why && n) {
		/* the witness: the components from the start to the bad state */
		size_t comps[PATH_MAX / 2], nc = 0, o = 0;
		for (int32_t s = (int32_t)bad; s > 0 && nc < PATH_MAX / 2; s = st.par[s])
			comps[nc++] = (size_t)st.via[s];
		if (!nc)
			o = (size_t)snprintf(why, n, "/");
		while (nc && o + 1 < n) {
			int w = snprintf(why + o, n - o, "/%s", at.text[comps[--nc]]);
			o += w > 0 ? (size_t)w : 0;
		}
		if (o >= n)
			why[n - 1] = '\0';
	}
	int res = rc < 0 ? rc : bad < 0;
	free(ss.s);
	free(ss.off);
	free(idx);
	free(at.vec);
	free(at.text);
	free(cur);
	ss_free(&st);
	return res;
}

/* --- the entry points ---------------------------------------------------------- */

static int meet(const char *ap, size_t al, char ak, const char *bp, size_t bl, char bk)
{
	struct gpat a, b;
	if (gpat_compile(ap, al, ak, &a) < 0)
		return -ENOMEM;
	if (gpat_compile(bp, bl, bk, &b) < 0) {
		gpat_free(&a);
		return -ENOMEM;
	}
	int r = gpat_meet(&a, &b);
	gpat_free(&a);
	gpat_free(&b);
	return r;
}

static int within(const char *op, size_t ol, char ok, const char *ip, size_t il, char ik,
		  char *why, size_t n)
{
	struct gpat o, i;
	if (gpat_compile(op, ol, ok, &o) < 0)
		return -ENOMEM;
	if (gpat_compile(ip, il, ik, &i) < 0) {
		gpat_free(&o);
		return -ENOMEM;
	}
	int r = gpat_within(&o, &i, why, n);
	gpat_free(&o);
	gpat_free(&i);
	return r;
}

/* The literal parts of two sets lie on one line (one under the other)?
 * When not, the sets are disjoint: the fast refusal of most pairs. */
static bool on_one_line(const char *a, size_t al, const char *b, size_t bl)
{
	return al <= bl ? hf_path_under(a, al, b, bl) : hf_path_under(b, bl, a, al);
}

bool hf_glob_overlap(const struct hf_spec *a, const struct hf_spec *b)
{
	size_t al = a->glob ? a->lit_len : a->len, bl = b->glob ? b->lit_len : b->len;
	if (!on_one_line(a->path, al, b->path, bl))
		return false;
	int r = meet(a->path, a->len, spec_kind(a), b->path, b->len, spec_kind(b));
	return r != 0; /* out of memory: they may overlap (refused, never admitted) */
}

int hf_glob_covers(const struct hf_spec *outer, const struct hf_spec *inner, char *why, size_t n)
{
	if (why && n)
		why[0] = '\0';
	size_t ol = outer->glob ? outer->lit_len : outer->len;
	if (!outer->glob && outer->recursive && inner->glob &&
	    hf_path_under(outer->path, ol, inner->path, inner->lit_len))
		return 1; /* below a recursive prefix: inside whatever its tail */
	int r = within(outer->path, outer->len, spec_kind(outer), inner->path, inner->len,
		       spec_kind(inner), why, n);
	if (r < 0 && why && n)
		snprintf(why, n, "%s", r == -E2BIG ? "(too many states to decide the inclusion)"
						    : "(out of memory)");
	return r;
}

bool hf_glob_contains(const struct hf_spec *s, const char *p, size_t len)
{
	if (!hf_path_under(s->path, s->lit_len, p, len))
		return false;
	struct gpat g;
	if (gpat_compile(s->path, s->len, spec_kind(s), &g) < 0)
		return true; /* out of memory: held, never wrongly free */
	int r = gpat_matches(&g, p, len);
	gpat_free(&g);
	return r != 0;
}

bool hf_glob_fsid_overlap(const struct hf_fsid *a, const struct hf_fsid *b)
{
	return meet(a->path, a->len, a->kind, b->path, b->len, b->kind) != 0;
}

bool hf_glob_fsid_covers(const struct hf_fsid *outer, const struct hf_fsid *inner)
{
	return within(outer->path, outer->len, outer->kind, inner->path, inner->len, inner->kind,
		      NULL, 0) == 1;
}

int hf_glob_reach(const struct hf_spec *s, const char *below, size_t blen, char *buf, size_t n,
		  size_t *ret_n)
{
	/* the states of s's pattern after the components of below beyond s's
	 * literal prefix; each a tail of its tokens, written to buf (NUL
	 * separated; "" for the end) */
	struct gpat g;
	*ret_n = 0;
	if (gpat_compile(s->path, s->len, spec_kind(s), &g) < 0)
		return -ENOMEM;
	uint8_t *cur = calloc(2 * (g.n + 1), 1);
	if (!cur) {
		gpat_free(&g);
		return -ENOMEM;
	}
	uint8_t *nxt = cur + g.n + 1;
	cur[0] = 1;
	for (size_t st = 0;;) {
		for (size_t i = 0; i < g.n; i++)
			if (cur[i] && g.t[i].kind != GK_SEG)
				cur[i + 1] = 1;
		while (st < blen && below[st] == '/')
			st++;
		if (st >= blen)
			break;
		size_t e = st;
		while (e < blen && below[e] != '/')
			e++;
		memset(nxt, 0, g.n + 1);
		for (size_t i = 0; i < g.n; i++)
			if (cur[i] && seg_match(&g.t[i], below + st, e - st))
				nxt[g.t[i].kind == GK_ANY ? i : i + 1] = 1;
		memcpy(cur, nxt, g.n + 1);
		st = e;
	}
	size_t o = 0;
	int rc = 0;
	for (size_t i = 0; i <= g.n && rc == 0; i++) {
		if (!cur[i])
			continue;
		/* tokens i.. as text */
		for (size_t k = i; k < g.n; k++) {
			if (o + g.t[k].n + 2 > n) {
				rc = -ENAMETOOLONG;
				break;
			}
			if (k > i)
				buf[o++] = '/';
			memcpy(buf + o, g.t[k].s, g.t[k].n);
			o += g.t[k].n;
		}
		if (rc == 0 && o + 1 <= n) {
			buf[o++] = '\0';
			(*ret_n)++;
		}
	}
	free(cur);
	gpat_free(&g);
	return rc;
}
