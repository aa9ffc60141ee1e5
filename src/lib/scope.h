/*
 * scope.h - the scope registry's internals: scope algebra (scope.c) and the
 * registry table (registry.c). Not part of the public API; the protocol,
 * its invariants and its hazards are in registry.c's header.
 */
#ifndef HF_SCOPE_H
#define HF_SCOPE_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- scope.c: specs "PATH:MODE[:recursive]" ----------------------------- */

/* A parsed spec. path is absolute and normal (no "//", ".", "..", no
 * trailing '/', "/" alone for the root); depth counts its components ("/"
 * has 0). A recursive spec covers path and everything below it; a
 * non-recursive one path and its direct children. */
struct hf_spec {
	const char *path;
	size_t len;
	unsigned depth;
	bool write;
	bool recursive;
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

/* Is b equal to a or below it, by whole components? Pure. */
bool hf_path_under(const char *a, size_t alen, const char *b, size_t blen);

/* Do the sets of paths of a and b intersect (modes ignored)? Pure. */
bool hf_spec_overlap(const struct hf_spec *a, const struct hf_spec *b);
/* Is every path of inner also a path of outer (modes ignored)? Pure. */
bool hf_spec_covers(const struct hf_spec *outer, const struct hf_spec *inner);
/* Does s cover the single path p (normal, depth d)? Pure. */
bool hf_spec_contains(const struct hf_spec *s, const char *p, size_t len, unsigned depth);

/* Pod names: 1..HF_POD_NAME_MAX bytes of UTF-8 text without white space,
 * quotes, backslash or '/', not starting with '-'. Pure. */
bool hf_pod_name_ok(const char *name);

/* --- registry.c: the table ------------------------------------------------ */

struct hf_alloc {
	const char *name;
	int64_t pid;
	uint64_t pid_start;
	const char *boot_id;         /* "" when unknown                          */
	const char *host;            /* "" when unknown                          */
	const char *socket;          /* NULL: none                               */
	const char *from;            /* delegated_from; NULL: top level          */
	uint64_t generation;
	int64_t registered_ms;       /* 0: unknown                               */
	struct hf_spec *specs;
	const char **spec_text;      /* the stored strings, for output           */
	size_t nspecs;
	/* derived when the table is judged */
	int live;                    /* HF_ALIVE / HF_DEAD                       */
	long parent;                 /* index of the nearest live ancestor, -1   */
	unsigned depth;              /* in the delegation tree; 0: top level     */
	const char *returned_to;     /* reaped/released: who got the scope back  */
};

struct hf_arena;

struct hf_scope_table {
	uint64_t generation;
	size_t n, cap;
	struct hf_alloc *a;
	struct hf_arena *arena;      /* the strings and spec arrays              */
};

/* Parse a registry file's bytes. HF_EUNREADABLE with reason (n bytes) for
 * anything that is not a registry this version wrote or would write: not
 * JSON, wrong types, a spec that is not canonical, a bad name, a duplicate
 * name, a delegation cycle. Never crashes on any input. */
int hf_registry_parse(const char *buf, size_t len, struct hf_scope_table *t, char *reason,
		      size_t n);
/* The table as JSON text (one allocation a line), malloc'd. */
int hf_registry_format(const struct hf_scope_table *t, char **ret, size_t *ret_len);
void hf_registry_table_clear(struct hf_scope_table *t);

/* Judge liveness (hf_owner_liveness, one proof per distinct owner) and
 * derive parent/depth: each entry's parent is its nearest live ancestor. */
void hf_registry_judge(struct hf_scope_table *t);
/* Index of the entry named name, or -1. */
long hf_registry_find(const struct hf_scope_table *t, const char *name);

#endif
