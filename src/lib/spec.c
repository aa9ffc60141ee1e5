/*
 * spec.c - path algebra under the scope registry: specs, canonical paths,
 * overlap, cover, kernel identities, pod names. No registry here.
 *
 * A spec is "PATH:MODE[:recursive]" PATH is split from the right,
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
 *   (SC1) Paths compare by whole components: "/p/src" is never under "/p/src2"
 *         (a prefix must end where a '/' starts the next component).
 *   (SC2) Every path compared is normal (hf_path_normal): absolute, no "//",
 *         ".", "..", no trailing '/'. Canonicalization makes user paths so;
 *         the registry parser refuses stored paths that are not.
 *   (SC3) Canonical paths resolve every symbolic link of the part that
 *         exists, so two spellings of one directory compare equal; the part
 *         that does not exist yet is kept by name (it has no links to resolve).
 *   (SC4) Read specs never conflict: overlap is only ever asked of two write
 *         specs (callers), and effective scope only subtracts write specs.
 *
 * Hazards
 * -------
 *   - A path canonicalized today may resolve elsewhere tomorrow (a link
 *     created later inside the part that did not exist). The registry keeps
 *     what was true at registration; it is advisory.
 *
 * Glob specs (spec_glob.c)
 * ------------------------
 * "PATTERN:MODE[:recursive]", PATTERN a path of which one component at
 * least is a glob:
 *   *        any run of characters within a component (none included)
 *   ?        one character (a UTF-8 character, not a byte)
 *   [...]    one character of the class; [!...] or [^...] one not in it;
 *            members printable ASCII, ranges a-z
 *   **       a whole component: any run of components, none included
 *            (src followed by a '**' component holds src itself; src, '**',
 *            x holds src/x and src/a/b/x)
 * Refused in a glob spec (-EINVAL; the CLI's usage error names the
 * character and its byte offset): '{' '}' (no alternatives), '\' (no escapes), '**' inside a
 * component ("a**b", "**.ts"), an unclosed '[', an empty class or range, a
 * ']' outside a class, a non-ASCII class member, '.' or '..' after the
 * first glob component. '*', '?' and '[' match any character a component
 * may hold: a leading '.' included.
 *
 * The sets of paths
 *   glob G            the paths G matches (exactly those: no children)
 *   glob G:recursive  the paths G matches and everything below each, i.e.
 *                     the paths of G with a '**' component added
 * A prefix spec keeps its set (above): a non-recursive one is {P} and the
 * children of P, the set of "P" + "one component or none".
 *
 * Canonical form: the literal components before the first glob component
 * are canonicalized as a prefix spec's path is (SC3; "**" alone starts at
 * the working directory); the rest is kept as written, with single '/'
 * between components and none at the end.
 *
 *   (SC7)  A glob spec's path is a list of tokens over components: a
 *          segment pattern (one component), '**' (any run). Every spec is
 *          one: a recursive prefix P is P + '**', a non-recursive one P +
 *          "one or none", a recursive glob G + '**'. contains(p) runs the
 *          tokens over p's components (position sets: linear).
 *   (SC8)  A spec whose path holds '*', '?' or '[' is a glob spec: its
 *          syntax is checked before anything else (hf_glob_check), and
 *          '{', '}', '\' and a ']' outside a class are refused anywhere in
 *          it. A path holding none of '*', '?', '[' is a prefix spec exactly
 *          as before, whatever else it holds ("{a,b}" is then a name). A
 *          canonical path holding '*', '?' or '[' (a directory named "a*b",
 *          a link's target) is refused as a prefix spec, and one holding
 *          any of the seven as a glob's literal prefix: either would read
 *          back as another glob.
 *   (SC9)  A component is a non-empty string of characters that are not
 *          '/' nor control characters; every segment pattern matches one
 *          (the syntax refuses empty classes). Sets are abstract, as for
 *          prefix specs: "." and ".." count as components.
 *   (SC10) Decided exactly, never by sampling:
 *          overlap: the product of the two token lists, state (i, j): a
 *            '**' may end (i+1) or take a component (stays); two segment
 *            patterns take one component together when their product over
 *            characters (state (i, j, non-empty), '*' a loop, classes
 *            intersected) reaches its end. Each pair is visited once and
 *            each pair of segments decided once: O(|a||b|) pairs, each
 *            O(|seg a||seg b|).
 *          covers (inner inside outer): inclusion of the two languages over
 *            a finite alphabet. The components are sorted into classes by
 *            which of the segment patterns of both specs they match (a
 *            breadth-first run of every segment pattern at once over one
 *            character of each kind: every printable ASCII, each non-ASCII
 *            character the patterns name, one they do not); then a
 *            breadth-first run of the subset automata of both specs over
 *            those classes looks for a state where inner accepts and outer
 *            does not. Found: not covered, and the classes' first
 *            components on the way spell a path of inner outside outer
 *            (the refusal names it). The runs are bounded (65536 states
 *            each); past the bound the answer is "not covered, too complex
 *            to decide" - a delegation refused, never admitted wrongly.
 *          A recursive prefix covers any glob whose literal prefix lies
 *          below it (no automaton). Two specs whose literal prefixes are
 *          not on one line (neither under the other) never overlap (no
 *          automaton): most pairs of a registry.
 *   (SC11) A glob spec's kernel identity is its literal prefix's identity
 *          (SC5) with the glob tail: "MAJ:MIN:g:ROOTPATH/TAIL" (kind 'g';
 *          a recursive glob's tail ends in a '**' component). For SC6, each mount
 *          below the literal prefix that a path of the glob reaches adds
 *          the mount root's identity with what remains of the pattern
 *          there (each state of the pattern after the mount point's
 *          components: 'g' when it holds a glob, 'e' when the rest is
 *          literal). Identities meet and cover by the same automata (SC10).
 *   (SC12) Effective scope, check and the judge see a glob spec only
 *          through overlap, covers and contains: nothing else in the
 *          registry knows a glob from a prefix.
 *
 * Glob hazards
 *   - '**' and '*' are decided on component strings, not on the tree: a
 *     glob that no file matches today still holds its paths.
 *   - A component after the first glob component is never resolved: a
 *     link there is compared by its name.
 *   - A registry written by this version with glob specs is refused as
 *     corrupt by an older holdfast (its parser requires normal paths):
 *     every process sharing a registry must run a version that knows
 *     globs before one registers a glob.
 *   - Witnesses are the shortest paths of the automata: "*.ts" is shown
 *     ".ts" (a '*' matches nothing).
 */
#include "spec.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
	if (hf_glob_has(s, pl)) { /* SC8: a glob spec, or nothing */
		size_t ll;
		unsigned ld;
		if (hf_glob_parse(s, pl, &ll, &ld, &depth) < 0)
			return -EINVAL;
		*ret = (struct hf_spec){ .path = s, .len = pl, .depth = depth, .write = w,
					 .recursive = r, .glob = true, .lit_len = ll,
					 .lit_depth = ld };
		return 0;
	}
	if (!hf_path_normal(s, pl, &depth)) /* SC2 */
		return -EINVAL;
	*ret = (struct hf_spec){ .path = s, .len = pl, .depth = depth, .write = w, .recursive = r,
				 .lit_len = pl, .lit_depth = depth };
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
			continue; /* SC3: below a missing directory nothing exists */
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
	bool glob;
	if (hf_glob_check(spec, pl, &glob, NULL, NULL) < 0)
		return -EINVAL; /* SC8 */
	/* a glob: its literal components canonical, the rest as written */
	size_t lit = pl, tail = pl;
	for (size_t c = 0; glob && c < pl;) {
		size_t e = c;
		while (e < pl && spec[e] != '/')
			e++;
		bool g = false;
		for (size_t i = c; i < e && !g; i++)
			g = spec[i] == '*' || spec[i] == '?' || spec[i] == '[';
		if (g) {
			lit = c;
			tail = c;
			break;
		}
		c = e + 1;
	}
	if (lit == 0 && glob)
		memcpy(path, ".", 2); /* "**" alone: below the working directory */
	else {
		memcpy(path, spec, lit);
		path[lit] = '\0';
	}
	rc = hf_path_canonicalize(path, canon, sizeof canon);
	if (rc < 0)
		return rc;
	size_t cl = strlen(canon);
	if (glob ? hf_glob_special(canon, cl) : hf_glob_has(canon, cl))
		return -EINVAL; /* SC8: a name glob syntax cannot write */
	unsigned depth;
	assert(hf_path_normal(canon, cl, &depth) && "SC2");
	(void)depth;
	for (size_t i = tail; i < pl; i++) {
		if (spec[i] == '/' && (cl == 0 || canon[cl - 1] == '/'))
			continue; /* SC8: single '/' between the tail's components */
		if (cl + 2 >= sizeof canon)
			return -ENAMETOOLONG;
		if (i == tail && cl > 1)
			canon[cl++] = '/';
		canon[cl++] = spec[i];
	}
	while (cl > 1 && canon[cl - 1] == '/')
		cl--;
	canon[cl] = '\0';
	struct hf_spec s = { .path = canon, .len = cl, .write = w, .recursive = r };
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
	return blen == alen || b[alen] == '/'; /* SC1 */
}

bool hf_spec_overlap(const struct hf_spec *a, const struct hf_spec *b)
{
	if (a->glob || b->glob)
		return hf_glob_overlap(a, b); /* SC10 */
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

bool hf_spec_covers_why(const struct hf_spec *outer, const struct hf_spec *inner, char *why,
			size_t n)
{
	if (why && n)
		why[0] = '\0';
	if (outer->glob || inner->glob)
		return hf_glob_covers(outer, inner, why, n) == 1; /* SC10; undecided: no */
	bool r = hf_spec_covers(outer, inner);
	if (!r && why && n) /* inner's own path, or a child of it, is outside */
		snprintf(why, n, "%.*s%s", (int)inner->len, inner->path,
			 hf_spec_contains(outer, inner->path, inner->len, inner->depth)
				 ? (inner->len > 1 ? "/..." : "...")
				 : "");
	return r;
}

bool hf_spec_covers(const struct hf_spec *outer, const struct hf_spec *inner)
{
	if (outer->glob || inner->glob)
		return hf_glob_covers(outer, inner, NULL, 0) == 1;
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
	if (s->glob)
		return hf_glob_contains(s, p, len);
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

/* ------------------------------------------------------------------------
 * Kernel identity: what a path reaches, as every mount namespace names it.
 *
 * One directory reached through a bind mount has two path strings and one
 * kernel object. /proc/self/mountinfo says, for each mount, its device
 * (major:minor of the file system, the same in every mount namespace of the
 * kernel), its root (the directory of that file system it shows) and where
 * it is mounted. A canonical path is resolved the way the kernel walks it:
 * from the namespace's root mount, into the child mount whose mount point
 * is the shortest prefix of the rest (a mount hidden by a later mount above
 * it is never reached), stacked mounts included. Its identity is that
 * mount's device and root + the rest of the path.
 *
 *   (SC5) Two specs are the same files when their identities are: the path
 *         string alone is not (bind mounts, containers sharing a directory).
 *   (SC6) A recursive spec reaches the mounts below it: each contributes its
 *         own identity (device, root, recursive), so a scope that covers a
 *         mount point conflicts with any scope reaching into that mount
 *         through another path.
 *
 * Hazards
 * -------
 *   - Identities are what the mount table said at registration. A mount
 *     made later below a registered path is not in that spec's identities.
 *   - A process that cannot read /proc/self/mountinfo, or whose table does
 *     not show its root (a chroot), records no identity: its specs compare
 *     by path only.
 *   - A non-recursive spec's identity 'c' reaches the children of the
 *     directory under a mount on one of them (hidden): a conflict there is
 *     refused, never admitted.
 * --------------------------------------------------------------------- */

int hf_fsid_parse(const char *s, size_t len, struct hf_fsid *ret)
{
	unsigned long v[2];
	size_t i = 0;
	for (int k = 0; k < 2; k++) {
		size_t start = i;
		unsigned long x = 0;
		while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < 10)
			x = x * 10 + (unsigned long)(s[i++] - '0');
		if (i == start || i >= len || s[i] != ':' || x > 0xffffffffUL)
			return -EINVAL;
		i++;
		v[k] = x;
	}
	if (i + 2 > len || (s[i] != 'r' && s[i] != 'c' && s[i] != 'e' && s[i] != 'g') ||
	    s[i + 1] != ':')
		return -EINVAL;
	char kind = s[i];
	i += 2;
	unsigned depth;
	if (kind == 'g') { /* SC11 */
		size_t ll;
		unsigned ld;
		if (hf_glob_parse(s + i, len - i, &ll, &ld, &depth) < 0)
			return -EINVAL;
	} else if (!hf_path_normal(s + i, len - i, &depth) || hf_glob_has(s + i, len - i)) {
		return -EINVAL;
	}
	*ret = (struct hf_fsid){ .major = (unsigned)v[0], .minor = (unsigned)v[1], .kind = kind,
				 .path = s + i, .len = len - i, .depth = depth };
	return 0;
}

/* Does the set of a (the shallower or equal) hold the path of b? */
static bool fsid_reaches(const struct hf_fsid *a, const struct hf_fsid *b)
{
	if (!hf_path_under(a->path, a->len, b->path, b->len))
		return false;
	unsigned d = b->depth - a->depth;
	return d == 0 || a->kind == 'r' || (a->kind == 'c' && d == 1);
}

bool hf_fsid_overlap(const struct hf_fsid *a, const struct hf_fsid *b)
{
	if (a->major != b->major || a->minor != b->minor)
		return false;
	if (a->kind == 'g' || b->kind == 'g')
		return hf_glob_fsid_overlap(a, b); /* SC11 */
	if (a->depth > b->depth) {
		const struct hf_fsid *t = a;
		a = b;
		b = t;
	}
	/* every path of b is b's path or below it: the sets meet only if a's
	 * set holds b's path */
	return fsid_reaches(a, b);
}

bool hf_fsid_covers(const struct hf_fsid *outer, const struct hf_fsid *inner)
{
	if (outer->major != inner->major || outer->minor != inner->minor)
		return false;
	if (outer->kind == 'g' || inner->kind == 'g')
		return hf_glob_fsid_covers(outer, inner); /* SC11 */
	if (inner->depth < outer->depth || !fsid_reaches(outer, inner))
		return false;
	unsigned d = inner->depth - outer->depth;
	switch (outer->kind) {
	case 'r':
		return true;
	case 'c': /* {P} + children: the same set, or a single child */
		return (d == 0 && inner->kind != 'r') || (d == 1 && inner->kind == 'e');
	default: /* {P} */
		return d == 0 && inner->kind == 'e';
	}
}

/* Decode mountinfo's octal escapes (\040 and the like) in place; the new
 * length. */
static size_t unescape(char *s, size_t len)
{
	size_t w = 0;
	for (size_t r = 0; r < len; r++) {
		if (s[r] == '\\' && r + 3 < len + 0 && s[r + 1] >= '0' && s[r + 1] <= '3' &&
		    s[r + 2] >= '0' && s[r + 2] <= '7' && s[r + 3] >= '0' && s[r + 3] <= '7') {
			s[w++] = (char)((s[r + 1] - '0') * 64 + (s[r + 2] - '0') * 8 + (s[r + 3] - '0'));
			r += 3;
		} else {
			s[w++] = s[r];
		}
	}
	s[w] = '\0';
	return w;
}

void hf_mounts_free(struct hf_mounts *m)
{
	free(m->m);
	free(m->text);
	memset(m, 0, sizeof *m);
	m->top = -1;
}

int hf_mounts_load(struct hf_mounts *ret)
{
	memset(ret, 0, sizeof *ret);
	ret->top = -1;
	char *buf;
	size_t len;
	int rc = hf_read_file_at(AT_FDCWD, "/proc/self/mountinfo", O_NONBLOCK | O_NOCTTY,
				 64u << 20, &buf, &len, NULL);
	if (rc < 0)
		return rc;
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	ret->m = calloc(lines + 1, sizeof *ret->m);
	if (!ret->m) {
		free(buf);
		return -ENOMEM;
	}
	ret->text = buf;
	char *p = buf, *end = buf + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		*nl = '\0';
		/* id parent major:minor root point ... */
		char *f[5];
		int nf = 0;
		for (char *q = p; nf < 5 && q < nl;) {
			f[nf++] = q;
			char *sp = strchr(q, ' ');
			if (!sp)
				break;
			*sp = '\0';
			q = sp + 1;
		}
		p = nl + 1;
		if (nf < 5)
			continue;
		struct hf_mount m;
		char *e1, *e2, *e3;
		m.id = strtoul(f[0], &e1, 10);
		m.parent = strtoul(f[1], &e2, 10);
		unsigned long maj = strtoul(f[2], &e3, 10), min;
		if (*e1 || *e2 || *e3 != ':')
			continue;
		min = strtoul(e3 + 1, &e1, 10);
		if (*e1 || maj > 0xffffffffUL || min > 0xffffffffUL)
			continue;
		m.major = (unsigned)maj;
		m.minor = (unsigned)min;
		m.rootlen = unescape(f[3], strlen(f[3]));
		m.pointlen = unescape(f[4], strlen(f[4]));
		m.root = f[3];
		m.point = f[4];
		unsigned d;
		if (!hf_path_normal(m.root, m.rootlen, &d) || !hf_path_normal(m.point, m.pointlen, &d))
			continue; /* "//deleted" roots and the like: not a path */
		ret->m[ret->n++] = m;
	}
	/* The namespace's root mount: mounted at "/" on a mount not shown. */
	for (size_t i = 0; i < ret->n && ret->top < 0; i++) {
		if (ret->m[i].pointlen != 1)
			continue;
		bool parent_shown = false;
		for (size_t j = 0; j < ret->n && !parent_shown; j++)
			parent_shown = j != i && ret->m[j].id == ret->m[i].parent;
		if (!parent_shown)
			ret->top = (long)i;
	}
	return 0;
}

/* The mount the kernel's walk of p ends in (SC5). */
static const struct hf_mount *mount_of(const struct hf_mounts *ms, const char *p, size_t len)
{
	if (ms->top < 0)
		return NULL;
	const struct hf_mount *cur = &ms->m[ms->top];
	for (size_t guard = 0; guard <= ms->n; guard++) {
		const struct hf_mount *next = NULL;
		for (size_t i = 0; i < ms->n; i++) {
			const struct hf_mount *m = &ms->m[i];
			if (m == cur || m->parent != cur->id ||
			    !hf_path_under(m->point, m->pointlen, p, len))
				continue;
			/* the walk crosses the first mount point it meets */
			if (!next || m->pointlen <= next->pointlen)
				next = m;
		}
		if (!next)
			break;
		cur = next;
	}
	return cur;
}

/* "MAJ:MIN:K:" + root + rest into buf. */
static int identity_of(const struct hf_mount *m, const char *p, size_t len, char kind, char *buf,
		       size_t n)
{
	const char *rest = m->pointlen == 1 ? p : p + m->pointlen; /* "" or "/..." */
	size_t restlen = len - (size_t)(rest - p);
	if (m->pointlen == 1 && len == 1)
		restlen = 0; /* p is "/" */
	bool root_only = m->rootlen == 1;
	int w = snprintf(buf, n, "%u:%u:%c:%.*s%.*s", m->major, m->minor, kind,
			 root_only && restlen ? 0 : (int)m->rootlen, m->root, (int)restlen, rest);
	if (w < 0 || (size_t)w >= n || (size_t)w >= HF_FSID_MAX)
		return -ENAMETOOLONG;
	return w;
}

const struct hf_mount *hf_mount_of(const struct hf_mounts *m, const char *p, size_t len)
{
	return mount_of(m, p, len);
}

int hf_path_identify(const struct hf_mounts *m, const char *p, size_t len, char kind, char *buf,
		     size_t n)
{
	const struct hf_mount *mt = mount_of(m, p, len);
	if (!mt)
		return -ENOENT;
	return identity_of(mt, p, len, kind, buf, n);
}

void hf_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int strv_push_unique(char ***v, size_t *n, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return 0;
	if (*n >= HF_SCOPE_IDS_MAX)
		return 0; /* the cap: see hf_spec_identify */
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* A glob's identity (SC11): "MAJ:MIN:e:PATH" of a directory (idtext) and
 * the pattern's tail t[0..tl) below it: "MAJ:MIN:g:PATH/TAIL" when the tail
 * holds a glob component, "MAJ:MIN:e:PATH/TAIL" when not. The length, or
 * -ENOENT when PATH holds glob syntax (no identity), -ENAMETOOLONG. */
static int glob_identity(const char *idtext, const char *t, size_t tl, char *buf, size_t n)
{
	const char *p = idtext;
	for (int k = 0; k < 3; k++)
		p = strchr(p, ':') + 1;
	size_t pl = strlen(p);
	if (hf_glob_special(p, pl))
		return -ENOENT;
	bool glob = false;
	hf_glob_check(t, tl, &glob, NULL, NULL);
	int w = snprintf(buf, n, "%.*s%c:%s%s%.*s", (int)(p - 2 - idtext), idtext,
			 glob ? 'g' : 'e', pl == 1 && tl ? "" : p, tl ? "/" : "", (int)tl, t);
	if (w < 0 || (size_t)w >= n || (size_t)w >= HF_FSID_MAX)
		return -ENAMETOOLONG;
	return w;
}

/* hf_spec_identify of a glob spec (SC11): its literal prefix's identity
 * with the glob tail; each mount below the prefix that a path of the glob
 * reaches, with what of the pattern remains there. */
static int glob_identify(const struct hf_mounts *m, const struct hf_spec *s, char ***ret,
			 size_t *ret_n)
{
	char **v = NULL;
	size_t n = 0;
	char id[HF_FSID_MAX], buf[HF_FSID_MAX], tail[PATH_MAX + 4];
	int w = hf_path_identify(m, s->path, s->lit_len, 'e', id, sizeof id);
	if (w == -ENOENT || w == -ENAMETOOLONG)
		return 0; /* unknown: compared by path only */
	if (w < 0)
		return w;
	const char *t = s->path + s->lit_len + (s->lit_len > 1);
	int tl = snprintf(tail, sizeof tail, "%.*s%s", (int)(s->len - (size_t)(t - s->path)), t,
			  s->recursive ? "/**" : "");
	if (tl < 0 || (size_t)tl >= sizeof tail)
		return 0;
	w = glob_identity(id, tail, (size_t)tl, buf, sizeof buf);
	if (w < 0)
		return 0;
	int rc = strv_push_unique(&v, &n, buf);
	char *tails = malloc(2 * PATH_MAX);
	if (!tails)
		rc = -ENOMEM;
	for (size_t i = 0; rc == 0 && i < m->n; i++) {
		const struct hf_mount *mt = &m->m[i];
		unsigned d;
		if (mt->pointlen <= s->lit_len && !(s->lit_len == 1 && mt->pointlen > 1))
			continue;
		if (!hf_path_under(s->path, s->lit_len, mt->point, mt->pointlen) ||
		    !hf_path_normal(mt->point, mt->pointlen, &d) || d <= s->lit_depth)
			continue;
		size_t nt;
		if (hf_glob_reach(s, mt->point, mt->pointlen, tails, 2 * PATH_MAX, &nt) < 0 ||
		    identity_of(mt, mt->point, mt->pointlen, 'e', id, sizeof id) < 0)
			continue;
		const char *tk = tails;
		for (size_t k = 0; rc == 0 && k < nt; k++, tk += strlen(tk) + 1) {
			w = glob_identity(id, tk, strlen(tk), buf, sizeof buf);
			if (w >= 0)
				rc = strv_push_unique(&v, &n, buf);
		}
	}
	free(tails);
	if (rc < 0) {
		hf_strv_free(v, n);
		return rc;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int hf_spec_identify(const struct hf_mounts *m, const struct hf_spec *s, char ***ret,
		     size_t *ret_n)
{
	char **v = NULL;
	size_t n = 0;
	char buf[HF_FSID_MAX];
	*ret = NULL;
	*ret_n = 0;
	if (s->glob)
		return glob_identify(m, s, ret, ret_n);
	int w = hf_path_identify(m, s->path, s->len, s->recursive ? 'r' : 'c', buf, sizeof buf);
	if (w == -ENOENT || w == -ENAMETOOLONG)
		return 0; /* unknown: compared by path only */
	if (w < 0)
		return w;
	int rc = strv_push_unique(&v, &n, buf);
	/* SC6: the mounts the spec reaches below its path */
	for (size_t i = 0; rc == 0 && i < m->n; i++) {
		const struct hf_mount *mt = &m->m[i];
		unsigned d;
		if (mt->pointlen <= s->len && !(s->len == 1 && mt->pointlen > 1))
			continue;
		if (!hf_path_under(s->path, s->len, mt->point, mt->pointlen) ||
		    !hf_path_normal(mt->point, mt->pointlen, &d) || d <= s->depth)
			continue;
		if (!s->recursive && d != s->depth + 1)
			continue;
		w = identity_of(mt, mt->point, mt->pointlen, s->recursive ? 'r' : 'e', buf,
				sizeof buf);
		if (w == -ENAMETOOLONG)
			continue;
		rc = w < 0 ? w : strv_push_unique(&v, &n, buf);
	}
	if (rc < 0) {
		hf_strv_free(v, n);
		return rc;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}
