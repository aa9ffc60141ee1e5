/* spec_glob.c: glob specs. Their syntax (refusals naming the character and
 * its position), and a property test: for random patterns over a small
 * alphabet, hf_spec_overlap says "overlap" exactly when an enumerated path
 * matches both, hf_spec_covers says "covers" exactly when every enumerated
 * path of the inner matches the outer, and hf_spec_contains agrees with an
 * independent matcher (fnmatch(3) segment by segment, '**' by recursion).
 *
 * Why the enumeration is complete (SC10's exactness shown, not sampled):
 * every pattern here is /r followed by at most 2 tokens (components), each
 * a literal, a segment glob of at most 2 char tokens from {a, b, ?, *,
 * [ab], [!a]}, or '**' (a recursive spec's tail and a non-recursive prefix
 * spec's "one child or none" count as one token each).
 *   - A segment glob of at most 2 char tokens decides a component by its
 *     first char, its last char and its length class (1, 2, 3 or more):
 *     each token reads one end, or the length. And the chars a, b and c
 *     stand for every char: each class here holds a, b, both or neither.
 *     So components of length 1..3 over {a, b, c} show every behaviour.
 *   - A pattern of at most 2 tokens decides a path below /r by its first
 *     component, its last and its depth class (0, 1, 2, 3 or more) in the
 *     same way. So paths of depth 0..3 below /r show every behaviour.
 * Any path matching both patterns (or the inner and not the outer) thus has
 * an equivalent among the enumerated ones: 1 + 39 + 39^2 + 39^3 paths. */
#include "glob_script.h"
#include "hft.h"
#include "registry.h"
#include "scope_support.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct hf_spec spec(const char *s)
{
	struct hf_spec r;
	cr_assert_eq(hf_spec_parse_canonical(s, strlen(s), &r), 0, "'%s' must parse", s);
	return r;
}

Test(glob, syntax_refusals_name_the_character)
{
	static const struct {
		const char *p;
		size_t pos;
		const char *why;
	} bad[] = {
		{ "/p/{a,b}/*.ts", 3, "braces" },     { "/p/a**b", 4, "whole component" },
		{ "/p/**.ts", 3, "whole component" }, { "/p/[ab", 3, "unclosed" },
		{ "/p/a\\*", 4, "escapes" },       { "/p/[]", 4, "empty class" },
		{ "/p/a]/*", 4, "outside a class" }, { "/p/[z-a]", 4, "empty range" },
		{ "/p/*/..", 5, "'..'" },          { "/p/[\xc3\xa9]", 4, "ASCII" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		size_t pos = 99;
		const char *why = NULL;
		bool g;
		cr_assert_eq(hf_glob_check(bad[i].p, strlen(bad[i].p), &g, &pos, &why), -EINVAL,
			     "'%s' must be refused", bad[i].p);
		cr_assert_eq(pos, bad[i].pos, "'%s': position %zu, not %zu", bad[i].p, pos,
			     bad[i].pos);
		cr_assert(why && strstr(why, bad[i].why), "'%s': %s", bad[i].p, why);
		char s[64];
		snprintf(s, sizeof s, "%s:write", bad[i].p);
		struct hf_spec sp;
		cr_assert_eq(hf_spec_parse_canonical(s, strlen(s), &sp), -EINVAL);
	}
	bool g;
	cr_assert_eq(hf_glob_check("/p/src/**/*.ts", 14, &g, NULL, NULL), 0);
	cr_assert(g);
	cr_assert_eq(hf_glob_check("/p/src", 6, &g, NULL, NULL), 0);
	cr_assert(!g, "a path without glob characters is a prefix spec");
	cr_assert_eq(hf_glob_check("/p/{a,b}\\x]", 11, &g, NULL, NULL), 0);
	cr_assert(!g, "without '*', '?' or '[': a prefix spec, as before, '{' and all");
}

Test(glob, canonical_form)
{
	struct hf_spec s = spec("/p/src/**/*.ts:write");
	cr_assert(s.glob);
	cr_assert_eq(s.lit_len, 6, "the literal prefix is /p/src");
	cr_assert_eq(s.lit_depth, 2);
	cr_assert_eq(s.depth, 4);
	char buf[256];
	cr_assert_eq(hf_spec_format(&s, buf, sizeof buf), 20);
	cr_assert_str_eq(buf, "/p/src/**/*.ts:write");
	/* canonicalization: the literal part resolved, the tail kept */
	char d[] = "/tmp/hft-glob.XXXXXX";
	cr_assert_not_null(mkdtemp(d));
	char in[256], out[512];
	snprintf(in, sizeof in, "%s/a/../src//**//*.ts:write:recursive", d);
	struct hf_spec c;
	cr_assert_eq(hf_spec_canonicalize(in, out, sizeof out, &c), 0);
	char want[256];
	snprintf(want, sizeof want, "%s/src/**/*.ts:write:recursive", d);
	cr_assert_str_eq(out, want);
	cr_assert(c.glob && c.recursive);
	rmdir(d);
	const char *refused[] = { "/p/src/{a,b}/*:write", "/p/a**b:write", "/p/[x:read" };
	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(hf_spec_canonicalize(refused[i], out, sizeof out, &c), -EINVAL, "%s",
			     refused[i]);
}

static bool overlap(const char *a, const char *b)
{
	struct hf_spec x = spec(a), y = spec(b);
	bool r = hf_spec_overlap(&x, &y);
	cr_assert_eq(r, hf_spec_overlap(&y, &x), "overlap must be symmetric: %s / %s", a, b);
	return r;
}

Test(glob, examples)
{
	cr_assert(overlap("/p/src/**/*.ts:write", "/p/src/parser/*.ts:write"));
	cr_assert(!overlap("/p/src/**/*.ts:write", "/p/src/**/*.c:write"));
	cr_assert(overlap("/p/src:write:recursive", "/p/**/x:write"));
	cr_assert(!overlap("/p/src:write", "/p/src/*/x:write"), "a non-recursive prefix: children");
	cr_assert(overlap("/p/src:write", "/p/src/*:write"));
	cr_assert(!overlap("/p/a/*.[ch]:write", "/p/a/*.ts:write"));
	cr_assert(overlap("/p/*/x:write:recursive", "/p/q/x/y/z:write"));
	struct hf_spec o = spec("/p/src:write:recursive"), i = spec("/p/src/**/*.ts:write");
	char why[256];
	cr_assert(hf_spec_covers_why(&o, &i, why, sizeof why));
	o = spec("/p/src/**/*.ts:write");
	i = spec("/p/src/parser/*.ts:write");
	cr_assert(hf_spec_covers(&o, &i));
	cr_assert(!hf_spec_covers_why(&i, &o, why, sizeof why));
	cr_assert_str_eq(why, "/p/src/.ts", "the part outside is named (a shortest): %s", why);
	o = spec("/p/src:write:recursive");
	i = spec("/p/*/x.c:write");
	cr_assert(!hf_spec_covers_why(&o, &i, why, sizeof why));
	cr_assert(strncmp(why, "/p/", 3) == 0 && strcmp(why, "/p/src/x.c") &&
			  strlen(why) > 7 && !strcmp(why + strlen(why) - 4, "/x.c"),
		  "a path of /p/*/x.c outside /p/src: %s", why);
	struct hf_spec g = spec("/p/src/**/*.ts:write");
	cr_assert(hf_spec_contains(&g, "/p/src/a.ts", 11, 3));
	cr_assert(hf_spec_contains(&g, "/p/src/x/y/a.ts", 15, 5));
	cr_assert(!hf_spec_contains(&g, "/p/src/a.c", 10, 3));
	cr_assert(!hf_spec_contains(&g, "/p/srcx/a.ts", 12, 3));
	g = spec("/p/*.d:write:recursive");
	cr_assert(hf_spec_contains(&g, "/p/x.d/y/z", 10, 4), "recursive: everything below a match");
	cr_assert(!hf_spec_contains(&g, "/p/x.e/y", 8, 3));
}

/* --- the property test --------------------------------------------------- */

#define NSEG 39 /* components of length 1..3 over {a, b, c} */
static char segs[NSEG][4];
static size_t npaths;
static char (*paths)[16];          /* relative: "" or "s1/s2/s3" */

static void enumerate(void)
{
	size_t n = 0;
	const char al[] = "abc";
	for (int l = 1; l <= 3; l++) {
		int k = l == 1 ? 3 : l == 2 ? 9 : 27;
		for (int x = 0; x < k; x++) {
			int v = x;
			for (int c = l - 1; c >= 0; c--, v /= 3)
				segs[n][c] = al[v % 3];
			segs[n][l] = '\0';
			n++;
		}
	}
	npaths = 1 + NSEG + NSEG * NSEG + NSEG * NSEG * NSEG;
	paths = calloc(npaths, sizeof *paths);
	size_t p = 1;
	for (size_t i = 0; i < NSEG; i++) {
		snprintf(paths[p++], 16, "%.3s", segs[i]);
		for (size_t j = 0; j < NSEG; j++) {
			snprintf(paths[p++], 16, "%.3s/%.3s", segs[i], segs[j]);
			for (size_t k = 0; k < NSEG; k++)
				snprintf(paths[p++], 16, "%.3s/%.3s/%.3s", segs[i], segs[j],
					 segs[k]);
		}
	}
	cr_assert_eq(p, npaths);
}

/* A random pattern: "/r/" + tokens as a spec, and the same tokens for the
 * reference matcher ('**' for a recursive tail, "?*" marks "one child or
 * none"). */
struct pat {
	char spec[64];
	char tok[3][8];
	int n;
};

static unsigned long long rng;
static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(rng >> 33) % n;
}

static void random_segment(char *s, bool lit)
{
	static const char *ch[] = { "a", "b", "?", "*", "[ab]", "[!a]" };
	int n = 1 + (int)rnd(2);
	s[0] = '\0';
	for (int i = 0; i < n; i++)
		strcat(s, ch[lit ? rnd(2) : rnd(6)]);
	if (!strcmp(s, "**"))
		strcpy(s, "*");
}

static void random_pattern(struct pat *p)
{
	memset(p, 0, sizeof *p);
	int kind = (int)rnd(4); /* 0 glob, 1 recursive glob, 2 prefix, 3 recursive prefix */
	char body[32] = "";
	if (kind <= 1) {
		int n = kind == 1 ? 1 : 1 + (int)rnd(2);
		for (int i = 0; i < n; i++) {
			if (rnd(4) == 0)
				strcpy(p->tok[i], "**");
			else
				random_segment(p->tok[i], false);
			strcat(body, "/");
			strcat(body, p->tok[i]);
		}
		p->n = n;
		bool glob = false;
		hf_glob_check(body, strlen(body), &glob, NULL, NULL);
		if (!glob) { /* make it one */
			strcpy(p->tok[n - 1], "*");
			body[0] = '\0';
			for (int i = 0; i < n; i++) {
				strcat(body, "/");
				strcat(body, p->tok[i]);
			}
		}
		if (kind == 1)
			strcpy(p->tok[p->n++], "**");
		snprintf(p->spec, sizeof p->spec, "/r%s:write%s", body, kind == 1 ? ":recursive" : "");
	} else {
		int n = (int)rnd(2);
		for (int i = 0; i < n; i++) {
			random_segment(p->tok[i], true);
			strcat(body, "/");
			strcat(body, p->tok[i]);
		}
		p->n = n;
		strcpy(p->tok[p->n++], kind == 3 ? "**" : "?*?");
		snprintf(p->spec, sizeof p->spec, "/r%s:write%s", body, kind == 3 ? ":recursive" : "");
	}
}

/* The reference: tokens t[0..n) against components c[0..m). */
static bool ref_match(const struct pat *p, int i, char c[][4], int m, int j)
{
	if (i >= p->n || i >= 3)
		return j == m;
	if (!strcmp(p->tok[i], "**")) {
		for (int k = j; k <= m; k++)
			if (ref_match(p, i + 1, c, m, k))
				return true;
		return false;
	}
	if (!strcmp(p->tok[i], "?*?")) /* one child or none */
		return ref_match(p, i + 1, c, m, j) || (j < m && ref_match(p, i + 1, c, m, j + 1));
	return j < m && fnmatch(p->tok[i], c[j], 0) == 0 && ref_match(p, i + 1, c, m, j + 1);
}

Test(glob, property_overlap_and_cover_by_enumeration, .timeout = 120)
{
	enumerate();
	unsigned long long seed = 0x5eed6c0bull;
	rng = seed;
	fprintf(stderr, "glob property test: seed %#llx\n", seed);
#ifdef __SANITIZE_ADDRESS__
	enum { NPAT = 14 };
#else
	enum { NPAT = 40 };
#endif
	struct pat pats[NPAT];
	size_t words = (npaths + 63) / 64;
	uint64_t *bits = calloc((size_t)NPAT * words, 8);
	char full[80];
	for (int k = 0; k < NPAT; k++) {
		random_pattern(&pats[k]);
		struct hf_spec s = spec(pats[k].spec);
		for (size_t x = 0; x < npaths; x++) {
			char c[3][4];
			int m = 0;
			if (paths[x][0]) {
				char tmp[16];
				memcpy(tmp, paths[x], sizeof tmp);
				for (char *tok = strtok(tmp, "/"); tok; tok = strtok(NULL, "/"))
					strcpy(c[m++], tok);
			}
			int w = snprintf(full, sizeof full, "/r%s%s", m ? "/" : "", paths[x]);
			bool mine = hf_spec_contains(&s, full, (size_t)w, (unsigned)(1 + m));
			bool ref = ref_match(&pats[k], 0, c, m, 0);
			cr_assert_eq(mine, ref, "%s contains %s: %d, the reference says %d",
				     pats[k].spec, full, mine, ref);
			if (mine)
				bits[(size_t)k * words + x / 64] |= 1ull << (x % 64);
		}
	}
	size_t overlaps = 0, covers = 0;
	for (int a = 0; a < NPAT; a++)
		for (int b = 0; b < NPAT; b++) {
			struct hf_spec x = spec(pats[a].spec), y = spec(pats[b].spec);
			const uint64_t *A = bits + (size_t)a * words, *B = bits + (size_t)b * words;
			bool meet = false, in = true;
			for (size_t w = 0; w < words; w++) {
				meet |= (A[w] & B[w]) != 0;
				in &= (B[w] & ~A[w]) == 0;
			}
			cr_assert_eq(hf_spec_overlap(&x, &y), meet, "overlap %s / %s: the paths say %d",
				     pats[a].spec, pats[b].spec, meet);
			char why[256];
			bool c = hf_spec_covers_why(&x, &y, why, sizeof why);
			cr_assert_eq(c, in, "%s covers %s: the paths say %d", pats[a].spec,
				     pats[b].spec, in);
			if (!c && (x.glob || y.glob)) {
				/* the path named is the inner's and outside the outer */
				unsigned d = 0;
				cr_assert(hf_path_normal(why, strlen(why), &d), "'%s' is a path", why);
				cr_assert(hf_spec_contains(&y, why, strlen(why), d) &&
						  !hf_spec_contains(&x, why, strlen(why), d),
					  "%s is a path of %s outside %s", why, pats[b].spec,
					  pats[a].spec);
			}
			overlaps += meet;
			covers += in;
		}
	fprintf(stderr, "glob property test: %d patterns, %zu paths, %zu of %d pairs overlap, "
			"%zu cover\n",
		NPAT, npaths, overlaps, NPAT * NPAT, covers);
	cr_assert(overlaps > (size_t)NPAT && overlaps < (size_t)NPAT * NPAT,
		  "the sample has pairs of both kinds");
	cr_assert(covers > (size_t)NPAT && covers < (size_t)NPAT * NPAT);
	free(bits);
	free(paths);
}

/* --- the CLI on the file registry (tests/etcd/test_scope.c runs the same
 * script on etcd) ----------------------------------------------------------- */

Test(glob_cli, two_agents_delegation_and_a_dead_child, .init = sc_setup, .fini = sc_teardown,
     .timeout = 120)
{
	char *out = NULL, *err = NULL;
	int rc = sc_sh(&out, &err, GLOB_SCRIPT, sc_dir, NULL);
	cr_assert_eq(rc, 0, "%s\n%s", out, err);
	GLOB_SCRIPT_CHECK(out, err);
	free(out);
	free(err);
}
