/*
 * scope.c - scope algebra: specs, canonical paths, overlap, cover, effective.
 *
 * A spec is "PATH:MODE[:recursive]" (seed 001). PATH is split from the right,
 * so a path may itself hold ':'. Everything here is pure arithmetic on
 * strings except hf_path_canonicalize, which looks paths up (lstat, readlink,
 * realpath(".")) through sys.c.
 *
 * The sets of paths
 * -----------------
 *   recursive P      {P} and every path below P
 *   non-recursive P  {P} and the direct children of P
 * Two specs overlap when their sets intersect; a spec covers another when it
 * contains the other's whole set. Sets are abstract: a non-recursive spec on
 * a file still "has" children, so only a spec equal to it covers it.
 *
 * Invariants
 * ----------
 *   (A1) Paths compare by whole components: "/p/src" is never under "/p/src2"
 *        (a prefix must end where a '/' starts the next component).
 *   (A2) Every path compared is normal (hf_path_normal): absolute, no "//",
 *        ".", "..", no trailing '/'. Canonicalization makes user paths so;
 *        the registry parser refuses stored paths that are not.
 *   (A3) Canonical paths resolve every symbolic link of the part that
 *        exists, so two spellings of one directory compare equal; the part
 *        that does not exist yet is kept by name (it has no links to resolve).
 *   (A4) Read specs never conflict: overlap is only ever asked of two write
 *        specs (callers), and effective scope only subtracts write specs.
 *
 * Hazards
 * -------
 *   - A path canonicalized today may resolve elsewhere tomorrow (a link
 *     created later inside the part that did not exist). The registry keeps
 *     what was true at registration; it is advisory, like the seed.
 */
#include "scope.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

int hf_spec_split(const char *spec, size_t len, size_t *ret_pathlen, bool *ret_write,
		  bool *ret_recursive)
{
	bool recursive = false;
	const char *colon = memrchr(spec, ':', len);
	if (!colon)
		return -EINVAL;
	size_t tail = len - (size_t)(colon + 1 - spec);
	if (tail == 9 && !memcmp(colon + 1, "recursive", 9)) {
		recursive = true;
		len = (size_t)(colon - spec);
		colon = memrchr(spec, ':', len);
		if (!colon)
			return -EINVAL;
		tail = len - (size_t)(colon + 1 - spec);
	}
	bool write;
	if (tail == 5 && !memcmp(colon + 1, "write", 5))
		write = true;
	else if (tail == 4 && !memcmp(colon + 1, "read", 4))
		write = false;
	else
		return -EINVAL;
	size_t pl = (size_t)(colon - spec);
	if (pl == 0)
		return -EINVAL;
	*ret_pathlen = pl;
	*ret_write = write;
	*ret_recursive = recursive;
	return 0;
}

bool hf_path_normal(const char *p, size_t len, unsigned *ret_depth)
{
	if (len == 0 || p[0] != '/' || len >= PATH_MAX)
		return false;
	if (len == 1) {
		*ret_depth = 0;
		return true;
	}
	if (p[len - 1] == '/')
		return false;
	unsigned depth = 0;
	size_t i = 0;
	while (i < len) {
		/* p[i] == '/': a component starts at i + 1 */
		size_t s = i + 1, e = s;
		while (e < len && p[e] != '/')
			e++;
		size_t cl = e - s;
		if (cl == 0 || (cl == 1 && p[s] == '.') || (cl == 2 && p[s] == '.' && p[s + 1] == '.'))
			return false;
		if (memchr(p + s, '\0', cl))
			return false;
		depth++;
		i = e;
	}
	*ret_depth = depth;
	return true;
}

int hf_spec_parse_canonical(const char *s, size_t len, struct hf_spec *ret)
{
	size_t pl;
	bool w, r;
	int rc = hf_spec_split(s, len, &pl, &w, &r);
	if (rc < 0)
		return rc;
	unsigned depth;
	if (!hf_path_normal(s, pl, &depth)) /* A2 */
		return -EINVAL;
	*ret = (struct hf_spec){ .path = s, .len = pl, .depth = depth, .write = w, .recursive = r };
	return 0;
}

/* Append "/" + c (cl bytes) to res (length *rlen, capacity n). */
static int push_component(char *res, size_t *rlen, size_t n, const char *c, size_t cl)
{
	size_t at = *rlen;
	bool root = at == 1; /* "/" + c, not "//" + c */
	if (at + (root ? 0 : 1) + cl + 1 > n)
		return -ENAMETOOLONG;
	if (!root)
		res[at++] = '/';
	memcpy(res + at, c, cl);
	at += cl;
	res[at] = '\0';
	*rlen = at;
	return 0;
}

static void pop_component(char *res, size_t *rlen)
{
	if (*rlen <= 1)
		return; /* ".." of "/" is "/" */
	char *slash = memrchr(res, '/', *rlen);
	size_t at = slash == res ? 1 : (size_t)(slash - res);
	res[at] = '\0';
	*rlen = at;
}

int hf_path_canonicalize(const char *path, char *buf, size_t n)
{
	if (!path[0] || !hf_text_ok(path, PATH_MAX - 1))
		return -EINVAL;
	char res[PATH_MAX];
	size_t rlen;
	/* rest holds the components still to walk; a link's target is spliced
	 * in front of what remains, so it needs room for both. */
	char rest[2 * PATH_MAX], spare[2 * PATH_MAX];
	if (path[0] == '/') {
		strcpy(res, "/");
	} else {
		int rc = hf_sys_realpath(".", res);
		if (rc < 0)
			return rc;
	}
	rlen = strlen(res);
	strcpy(rest, path);
	const char *p = rest;
	int links = 0;
	size_t missing_at = 0; /* >0: res[0..missing_at) exists, beyond does not */
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t cl = (size_t)(p - c);
		if (cl == 1 && c[0] == '.')
			continue;
		if (cl == 2 && c[0] == '.' && c[1] == '.') {
			pop_component(res, &rlen);
			if (missing_at && rlen <= missing_at)
				missing_at = 0; /* back in the part that exists */
			continue;
		}
		size_t before = rlen;
		int rc = push_component(res, &rlen, sizeof res, c, cl);
		if (rc < 0)
			return rc;
		if (missing_at)
			continue; /* A3: below a missing directory nothing exists */
		struct stat st;
		rc = hf_sys_fstatat(AT_FDCWD, res, &st, AT_SYMLINK_NOFOLLOW);
		if (rc == -ENOENT || rc == -ENOTDIR) {
			missing_at = before;
			continue;
		}
		if (rc < 0)
			return rc;
		if (!S_ISLNK(st.st_mode))
			continue;
		if (++links > 40)
			return -ELOOP;
		char target[PATH_MAX];
		ssize_t tl = hf_sys_readlinkat(AT_FDCWD, res, target, sizeof target);
		if (tl < 0)
			return (int)tl;
		if ((size_t)tl >= sizeof target || tl == 0)
			return tl == 0 ? -ENOENT : -ENAMETOOLONG;
		size_t restlen = strlen(p);
		if ((size_t)tl + 1 + restlen + 1 > sizeof spare)
			return -ENAMETOOLONG;
		memcpy(spare, target, (size_t)tl);
		spare[tl] = '/';
		memcpy(spare + tl + 1, p, restlen + 1);
		memcpy(rest, spare, (size_t)tl + 1 + restlen + 1);
		p = rest;
		if (target[0] == '/') {
			strcpy(res, "/");
			rlen = 1;
		} else {
			pop_component(res, &rlen); /* relative to the link's directory */
		}
	}
	if (!hf_text_ok(res, PATH_MAX - 1))
		return -EINVAL; /* a link's target that is not text */
	if (rlen + 1 > n)
		return -ENAMETOOLONG;
	memcpy(buf, res, rlen + 1);
	return 0;
}

int hf_spec_format(const struct hf_spec *s, char *buf, size_t n)
{
	size_t need = s->len + (s->write ? 6 : 5) + (s->recursive ? 10 : 0);
	if (need + 1 > n)
		return -ENAMETOOLONG;
	memmove(buf, s->path, s->len);
	size_t at = s->len;
	memcpy(buf + at, s->write ? ":write" : ":read", s->write ? 6 : 5);
	at += s->write ? 6 : 5;
	if (s->recursive) {
		memcpy(buf + at, ":recursive", 10);
		at += 10;
	}
	buf[at] = '\0';
	return (int)at;
}

int hf_spec_canonicalize(const char *spec, char *buf, size_t n, struct hf_spec *ret)
{
	size_t len = strlen(spec), pl;
	bool w, r;
	if (!hf_text_ok(spec, PATH_MAX + 16))
		return -EINVAL;
	int rc = hf_spec_split(spec, len, &pl, &w, &r);
	if (rc < 0)
		return rc;
	char path[PATH_MAX], canon[PATH_MAX];
	if (pl >= sizeof path)
		return -ENAMETOOLONG;
	memcpy(path, spec, pl);
	path[pl] = '\0';
	rc = hf_path_canonicalize(path, canon, sizeof canon);
	if (rc < 0)
		return rc;
	struct hf_spec s = { .path = canon, .len = strlen(canon), .write = w, .recursive = r };
	rc = hf_spec_format(&s, buf, n);
	if (rc < 0)
		return rc;
	return hf_spec_parse_canonical(buf, (size_t)rc, ret);
}

bool hf_path_under(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen == 1)
		return true; /* everything is under "/" */
	if (blen < alen || memcmp(a, b, alen) != 0)
		return false;
	return blen == alen || b[alen] == '/'; /* A1 */
}

bool hf_spec_overlap(const struct hf_spec *a, const struct hf_spec *b)
{
	if (a->depth > b->depth) {
		const struct hf_spec *t = a;
		a = b;
		b = t;
	}
	/* a is the shallower: the sets meet only if b's path is in a's set
	 * (everything in b's set is b's path or below it). */
	if (!hf_path_under(a->path, a->len, b->path, b->len))
		return false;
	unsigned d = b->depth - a->depth;
	return d == 0 || a->recursive || d == 1;
}

bool hf_spec_covers(const struct hf_spec *outer, const struct hf_spec *inner)
{
	if (inner->depth < outer->depth ||
	    !hf_path_under(outer->path, outer->len, inner->path, inner->len))
		return false;
	if (outer->recursive)
		return true;
	/* outer is {P} + children: only the same non-recursive set fits */
	return inner->depth == outer->depth && !inner->recursive;
}

bool hf_spec_contains(const struct hf_spec *s, const char *p, size_t len, unsigned depth)
{
	if (depth < s->depth || !hf_path_under(s->path, s->len, p, len))
		return false;
	unsigned d = depth - s->depth;
	return d == 0 || s->recursive || d == 1;
}

bool hf_pod_name_ok(const char *name)
{
	if (!name[0] || name[0] == '-' || !hf_text_ok(name, HF_POD_NAME_MAX))
		return false;
	for (const char *p = name; *p; p++)
		if (*p == ' ' || *p == '"' || *p == '\'' || *p == '\\' || *p == '/' || *p == '`')
			return false;
	return true;
}
