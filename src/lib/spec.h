/*
 * spec.h - path algebra (spec.c): scope specs, canonical paths, kernel
 * identities, pod names. Not part of the public API; the registry that
 * stores specs is in registry.h.
 */
#ifndef HF_SPEC_H
#define HF_SPEC_H

#include "floor.h"

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>

/* --- spec.c: specs "PATH:MODE[:recursive]" ----------------------------- */

/* A parsed spec. path is absolute and normal (no "//", ".", "..", no
 * trailing '/', "/" alone for the root); depth counts its components ("/"
 * has 0). A recursive spec covers path and everything below it; a
 * non-recursive one path and its direct children. */
struct hf_fsid;
struct hf_spec {
	const char *path;
	size_t len;
	unsigned depth;
	bool write;
	bool recursive;
	/* A glob spec (spec.c, "Glob specs"): path holds glob components;
	 * path[0..lit_len) is its literal prefix (normal, lit_depth
	 * components) and depth counts every component. A prefix spec has
	 * glob false, lit_len len, lit_depth depth. */
	bool glob;
	size_t lit_len;
	unsigned lit_depth;
	/* The kernel's identity of what the path reaches (spec.c, "Kernel
	 * identity"); filled by the registry, none for a bare parsed spec. */
	const struct hf_fsid *ids;
	const char *const *id_text;
	unsigned nids;
};

/* Split "PATH:MODE[:recursive]" from the right (PATH may hold ':'): the
 * length of PATH, the mode and the flag. -EINVAL when MODE is not read or
 * write, or PATH is empty. Pure. */
int hf_spec_split(const char *spec, size_t len, size_t *ret_pathlen, bool *ret_write,
		  bool *ret_recursive);

/* Is p[0..len) absolute and normal (see struct hf_spec)? Its depth. Pure. */
bool hf_path_normal(const char *p, size_t len, unsigned *ret_depth);

/* Parse a stored spec whose PATH must already be normal: the registry's
 * own entries. ret->path points into s. -EINVAL otherwise. Pure. */
int hf_spec_parse_canonical(const char *s, size_t len, struct hf_spec *ret);

/* Make PATH absolute and canonical into buf (n bytes, at most PATH_MAX):
 * relative to the working directory; ".", ".." and repeated or trailing
 * slashes removed; every symbolic link of the part that exists resolved
 * (a dangling link is followed to its target's name); the part that does
 * not exist yet kept by name. The only function here that touches the file
 * system (lstat, readlink and realpath(".") through sys.c). -EINVAL (empty,
 * not UTF-8 text), -ENAMETOOLONG, -ELOOP, or the -errno of a look-up that
 * failed otherwise than ENOENT/ENOTDIR. */
int hf_path_canonicalize(const char *path, char *buf, size_t n);

/* Canonicalize a user's spec into buf ("PATH:MODE[:recursive]" with the
 * canonical PATH) and parse it into *ret (pointing into buf). */
int hf_spec_canonicalize(const char *spec, char *buf, size_t n, struct hf_spec *ret);

/* "PATH:MODE[:recursive]" of a spec into buf; the length or -ENAMETOOLONG. */
int hf_spec_format(const struct hf_spec *s, char *buf, size_t n);

/* --- spec_glob.c: glob specs (spec.c, "Glob specs") --------------------- */

/* Does PATH p[0..len) hold '*', '?' or '[' (a glob spec's, SC8)? Pure. */
bool hf_glob_has(const char *p, size_t len);
/* Does PATH p[0..len) hold any character of glob syntax, supported or not
 * ('*', '?', '[', ']', '{', '}', '\')? Pure. */
bool hf_glob_special(const char *p, size_t len);
/* Check the glob syntax of a spec's PATH p[0..len) (SC8): 0 and *ret_glob
 * (a component holds '*', '?' or a class, or is '**'; a path holding none
 * of '*', '?', '[' is a prefix spec and passes, '{' or '\\' included);
 * -EINVAL with the
 * offset of the character refused in *ret_pos and why in *ret_why (each
 * may be NULL). Pure. */
int hf_glob_check(const char *p, size_t len, bool *ret_glob, size_t *ret_pos,
		  const char **ret_why);
/* Parse a stored glob PATH: absolute, its literal prefix normal, its glob
 * tail of single-'/'-separated components, at least one glob component.
 * The literal prefix's length and depth, and every component's. -EINVAL
 * otherwise. Pure. */
int hf_glob_parse(const char *p, size_t len, size_t *ret_litlen, unsigned *ret_litdepth,
		  unsigned *ret_depth);
/* The exact decisions on specs of which one at least is a glob (SC10). */
bool hf_glob_overlap(const struct hf_spec *a, const struct hf_spec *b);
/* 1; 0 with a path of inner outside outer in why (n bytes, may be NULL);
 * <0 undecided (-E2BIG: too many states; -ENOMEM), why saying so. */
int hf_glob_covers(const struct hf_spec *outer, const struct hf_spec *inner, char *why, size_t n);
bool hf_glob_contains(const struct hf_spec *s, const char *p, size_t len);
struct hf_fsid;
bool hf_glob_fsid_overlap(const struct hf_fsid *a, const struct hf_fsid *b);
bool hf_glob_fsid_covers(const struct hf_fsid *outer, const struct hf_fsid *inner);
/* The tails of glob spec s's pattern that remain after the normal path
 * below[0..blen) (at or below s's literal prefix): each as text into buf
 * (n bytes, NUL after each; "" when below itself matches), *ret_n of them
 * (none: nothing of s is at or below it). 0, -ENOMEM, -ENAMETOOLONG. */
int hf_glob_reach(const struct hf_spec *s, const char *below, size_t blen, char *buf, size_t n,
		  size_t *ret_n);

/* Is b equal to a or below it, by whole components? Pure. */
bool hf_path_under(const char *a, size_t alen, const char *b, size_t blen);

/* Do the sets of paths of a and b intersect (modes ignored)? Pure. */
bool hf_spec_overlap(const struct hf_spec *a, const struct hf_spec *b);
/* Is every path of inner also a path of outer (modes ignored)? Pure. */
bool hf_spec_covers(const struct hf_spec *outer, const struct hf_spec *inner);
/* hf_spec_covers, and when not: a path of inner outside outer in why (n
 * bytes; "" when none is named). */
bool hf_spec_covers_why(const struct hf_spec *outer, const struct hf_spec *inner, char *why,
			size_t n);
/* Does s cover the single path p (normal, depth d)? Pure. */
bool hf_spec_contains(const struct hf_spec *s, const char *p, size_t len, unsigned depth);

/* --- spec.c: kernel identity (bind mounts) ------------------------------ */

/* A set of paths of one file system, named the way every mount namespace
 * names it: the device of the mount (major:minor in /proc/self/mountinfo)
 * and the path from that file system's root (the mount's root + the rest of
 * the canonical path). Text form "MAJOR:MINOR:KIND:PATH"; KIND 'r' (PATH and
 * everything below it), 'c' (PATH and its direct children), 'e' (PATH
 * alone) or 'g' (the paths PATH, a glob pattern, matches: SC11). */
#define HF_FSID_MAX (PATH_MAX + 32)
struct hf_fsid {
	unsigned major, minor;
	char kind;
	const char *path;
	size_t len;
	unsigned depth;
};
/* Parse the text form (s[0..len), PATH normal); ret->path points into s.
 * -EINVAL otherwise. Pure. */
int hf_fsid_parse(const char *s, size_t len, struct hf_fsid *ret);
/* Do the two sets intersect (same device, whole components)? Pure. */
bool hf_fsid_overlap(const struct hf_fsid *a, const struct hf_fsid *b);
/* Is every path of inner also one of outer? Pure. */
bool hf_fsid_covers(const struct hf_fsid *outer, const struct hf_fsid *inner);

/* This process's mount table (/proc/self/mountinfo), parsed. */
struct hf_mount {
	unsigned long id, parent;
	unsigned major, minor;
	const char *root, *point;   /* decoded, normal                        */
	size_t rootlen, pointlen;
};
struct hf_mounts {
	struct hf_mount *m;
	size_t n;
	char *text;
	long top;                   /* index of the namespace's root mount; -1 */
};
/* Read and parse /proc/self/mountinfo (through sys.c). 0, or -errno (the
 * table is then empty: identities are unknown). */
int hf_mounts_load(struct hf_mounts *ret);
void hf_mounts_free(struct hf_mounts *m);
/* The mount the kernel's walk of the normal path p[0..len) ends in; NULL
 * when the table shows no root mount (a chroot). */
const struct hf_mount *hf_mount_of(const struct hf_mounts *m, const char *p, size_t len);
/* The identity of the normal path p[0..len) with kind into buf (text form):
 * the length, or -ENOENT when the mount table does not show how p is
 * reached (no root mount: a chroot), -ENAMETOOLONG. */
int hf_path_identify(const struct hf_mounts *m, const char *p, size_t len, char kind, char *buf,
		     size_t n);
/* Every identity of spec s, as text (malloc'd strings in *ret, *ret_n of
 * them, HF_SCOPE_IDS_MAX at most): first the path's own (kind 'r' for a
 * recursive spec, 'c' otherwise), then each mount below it that the spec
 * reaches: for a recursive spec every mount whose mount point lies below
 * the path (kind 'r', its root), for a non-recursive one each mount on a
 * direct child (kind 'e'). 0 with *ret_n 0 when unknown. */
#define HF_SCOPE_IDS_MAX 256
int hf_spec_identify(const struct hf_mounts *m, const struct hf_spec *s, char ***ret,
		     size_t *ret_n);
void hf_strv_free(char **v, size_t n);

/* Pod names: 1..HF_POD_NAME_MAX bytes of UTF-8 text without white space,
 * quotes, backslash or '/', not starting with '-'. Pure. */
bool hf_pod_name_ok(const char *name);

#endif
