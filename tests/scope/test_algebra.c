/* spec.c: specs, whole-component overlap, cover, canonical paths. */
#include "hft.h"
#include "registry.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct hf_spec spec(const char *s)
{
	struct hf_spec r;
	cr_assert_eq(hf_spec_parse_canonical(s, strlen(s), &r), 0, "'%s' must parse", s);
	return r;
}

static bool overlap(const char *a, const char *b)
{
	struct hf_spec x = spec(a), y = spec(b);
	bool r = hf_spec_overlap(&x, &y);
	cr_assert_eq(r, hf_spec_overlap(&y, &x), "overlap must be symmetric: %s / %s", a, b);
	return r;
}

static bool covers(const char *outer, const char *inner)
{
	struct hf_spec x = spec(outer), y = spec(inner);
	return hf_spec_covers(&x, &y);
}

Test(algebra, split_from_the_right)
{
	size_t pl;
	bool w, r;
	cr_assert_eq(hf_spec_split("/p/a:b:write:recursive", 22, &pl, &w, &r), 0);
	cr_assert_eq(pl, 6, "a path may hold ':'");
	cr_assert(w && r);
	cr_assert_eq(hf_spec_split("/p:read", 7, &pl, &w, &r), 0);
	cr_assert(!w && !r && pl == 2);
	cr_assert_eq(hf_spec_split("/p:recursive:write", 18, &pl, &w, &r), 0);
	cr_assert(w && !r && pl == 12, "':recursive' counts only last");
	const char *bad[] = { "/p", "/p:", "/p:Write", "/p:write:rec", ":write", "/p:recursive",
			      "/p:write:recursive:recursive", "" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_assert_eq(hf_spec_split(bad[i], strlen(bad[i]), &pl, &w, &r), -EINVAL,
			     "'%s' must be refused", bad[i]);
}

Test(algebra, normal_paths_only)
{
	unsigned d;
	cr_assert(hf_path_normal("/", 1, &d) && d == 0);
	cr_assert(hf_path_normal("/a/b.c/..d", 10, &d) && d == 3);
	const char *bad[] = { "", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/..", "/." };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_assert(!hf_path_normal(bad[i], strlen(bad[i]), &d), "'%s' is not normal", bad[i]);
}

Test(algebra, overlap_is_whole_component)
{
	cr_assert(!overlap("/p/src:write:recursive", "/p/src2:write:recursive"),
		  "/p/src never covers /p/src2");
	cr_assert(!overlap("/p/src:write:recursive", "/p/sr:write:recursive"));
	cr_assert(overlap("/p/src:write:recursive", "/p/src/a/b:write"));
	cr_assert(overlap("/p/src:write", "/p/src:write"));
	cr_assert(overlap("/:write:recursive", "/x/y:write"), "the root covers everything");
	cr_assert(!overlap("/a:write:recursive", "/b:write:recursive"));
}

Test(algebra, non_recursive_is_path_and_direct_children)
{
	cr_assert(overlap("/p:write", "/p/a:write:recursive"), "a direct child is covered");
	cr_assert(!overlap("/p:write", "/p/a/b:write:recursive"), "a grandchild is not");
	cr_assert(overlap("/p:write:recursive", "/p/a/b:write"));
	cr_assert(!overlap("/p/a:write", "/p/b:write"), "siblings' children differ");
}

Test(algebra, cover)
{
	cr_assert(covers("/p:write:recursive", "/p/a/b:write"));
	cr_assert(covers("/p:write:recursive", "/p:write:recursive"));
	cr_assert(!covers("/p/a:write:recursive", "/p:write:recursive"));
	cr_assert(!covers("/p/src:write:recursive", "/p/src2:write"));
	cr_assert(covers("/p:write", "/p:write"));
	cr_assert(!covers("/p:write", "/p:write:recursive"), "grandchildren are outside");
	cr_assert(!covers("/p:write", "/p/a:write"), "the child's children are outside");
}

Test(algebra, contains_a_path)
{
	struct hf_spec r = spec("/p:write:recursive"), n = spec("/p:write");
	cr_assert(hf_spec_contains(&r, "/p/a/b", 6, 3));
	cr_assert(hf_spec_contains(&n, "/p/a", 4, 2));
	cr_assert(!hf_spec_contains(&n, "/p/a/b", 6, 3));
	cr_assert(!hf_spec_contains(&r, "/p2", 3, 1));
}

Test(algebra, pod_names)
{
	cr_assert(hf_pod_name_ok("agent-1.b_c@x"));
	cr_assert(hf_pod_name_ok("エージェント"));
	char longname[HF_POD_NAME_MAX + 2];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	const char *bad[] = { "", "-x", "a b", "a\"b", "a'b", "a\\b", "a/b", "a\tb", "a\x01",
			      "\xff\xfe", longname };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_assert(!hf_pod_name_ok(bad[i]), "name %zu must be refused", i);
}

/* --- canonical paths, on a real tree ---------------------------------- */

static char *dir;
static void mk(void)
{
	dir = hft_tmpdir();
	char *real = realpath(dir, NULL);
	free(dir);
	dir = real;
}
static void rm(void)
{
	hft_rmtree(dir);
	free(dir);
}

static const char *canon(const char *p)
{
	static char buf[PATH_MAX];
	int rc = hf_path_canonicalize(p, buf, sizeof buf);
	cr_assert_eq(rc, 0, "canonicalize '%s': %s", p, strerror(-rc));
	return buf;
}

static char *at(const char *rel)
{
	static char ring[8][PATH_MAX];
	static int n;
	char *s = ring[n++ % 8];
	snprintf(s, PATH_MAX, "%s/%s", dir, rel);
	return s;
}

Test(canonical, relative_dots_slashes, .init = mk, .fini = rm)
{
	char *src = at("p/src"), *exp = at("p/src");
	cr_assert_eq(mkdir(at("p"), 0700), 0);
	cr_assert_eq(mkdir(src, 0700), 0);
	cr_assert_eq(chdir(dir), 0);
	cr_assert_str_eq(canon("p/src"), exp);
	cr_assert_str_eq(canon("./p//src/"), exp);
	cr_assert_str_eq(canon("p/src/../src/."), exp);
	cr_assert_str_eq(canon("/"), "/");
	cr_assert_str_eq(canon("/.."), "/");
}

Test(canonical, symlinked_prefix_resolved, .init = mk, .fini = rm)
{
	cr_assert_eq(mkdir(at("real"), 0700), 0);
	cr_assert_eq(mkdir(at("real/sub"), 0700), 0);
	cr_assert_eq(symlink(at("real"), at("link")), 0);
	cr_assert_eq(symlink("real/sub", at("rel")), 0);
	char *exp = at("real/sub/new/file");
	cr_assert_str_eq(canon(at("link/sub/new/file")), exp, "absolute link resolved");
	cr_assert_str_eq(canon(at("rel/new/file")), exp, "relative link resolved");
	cr_assert_str_eq(canon(at("link/sub/../sub/new/file")), exp,
			 "'..' after a link goes up from its target");
}

Test(canonical, not_existing_yet, .init = mk, .fini = rm)
{
	char *exp = at("a/b/c");
	cr_assert_str_eq(canon(at("a/b/c")), exp, "nothing exists below the tmpdir");
	cr_assert_str_eq(canon(at("a/x/../b/c/")), exp);
	/* a dangling link is followed to its target's name */
	cr_assert_eq(symlink(at("later"), at("dangling")), 0);
	exp = at("later/f");
	cr_assert_str_eq(canon(at("dangling/f")), exp);
}

Test(canonical, loops_and_garbage_refused, .init = mk, .fini = rm)
{
	char buf[PATH_MAX];
	cr_assert_eq(symlink(at("l2"), at("l1")), 0);
	cr_assert_eq(symlink(at("l1"), at("l2")), 0);
	cr_assert_eq(hf_path_canonicalize(at("l1/x"), buf, sizeof buf), -ELOOP);
	cr_assert_eq(hf_path_canonicalize("", buf, sizeof buf), -EINVAL);
	cr_assert_eq(hf_path_canonicalize("/a\x01", buf, sizeof buf), -EINVAL);
	cr_assert_eq(hf_path_canonicalize("/a\xff", buf, sizeof buf), -EINVAL);
	cr_assert_eq(hf_path_canonicalize("/a/b", buf, 3), -ENAMETOOLONG);
}

Test(canonical, spec_canonicalized, .init = mk, .fini = rm)
{
	cr_assert_eq(symlink(dir, at("self")), 0);
	char buf[HF_SCOPE_SPEC_MAX], *given = at("self/./x/:write:recursive");
	struct hf_spec s;
	cr_assert_eq(hf_spec_canonicalize(given, buf, sizeof buf, &s), 0);
	char *exp = at("x:write:recursive");
	cr_assert_str_eq(buf, exp);
	cr_assert(s.write && s.recursive);
	cr_assert_eq(hf_spec_canonicalize("/x:delete", buf, sizeof buf, &s), -EINVAL);
}
