/*
 * registry_table.c - the scope registry's table in memory: the arena its
 * strings live in, the index of its entries by name, the delegation tree,
 * and the pure queries over a judged table (may this registration be
 * admitted, a pod's effective scope, who may write at a path). No I/O
 * except hf_regtable_check's read of the mount table; the file format is
 * registry_json.c's, the protocol that reads and writes the file
 * registry.c's.
 *
 * Invariants
 * ----------
 *   (RT1) Every string and array of a table lives in its arena and stays
 *         valid until hf_regtable_clear: entries are copied by value and
 *         moved (reaping compacts the array), their strings never are.
 *   (RT2) Names are unique within a table: the parser refuses a duplicate,
 *         a registration a taken name, so the name index maps each name to
 *         exactly one entry.
 *   (RT3) The name index is current whenever a name is looked up: the
 *         parser builds it, and hf_regtable_link rebuilds it after every
 *         change of the entries' order (reaping, releasing).
 *   (RT4) Every delegated_from chain ends (the parser refuses a cycle; a
 *         registration delegates only from an entry already there; a
 *         re-parent only moves to an ancestor): walks up the tree end, and a
 *         depth is at most the number of entries.
 *   (RT5) An entry's parent is its nearest live ancestor (or -1): scope
 *         given back by the dead goes to the nearest one alive.
 *   (RT6) The queries (admit, effective, check, find) change nothing.
 *
 * Hazards
 * -------
 *   - Indices into the table (parent, the index's slots, a verdict's
 *     holder) are valid only until its entries move: after a reap, use
 *     names, or link again.
 */
#include "registry.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Arena: every string and array of a table lives in a few big blocks.
 * --------------------------------------------------------------------- */

struct hf_arena {
	struct hf_arena *next;
	size_t used, cap;
	char mem[];
};

void *hf_regtable_alloc(struct hf_scopereg_table *t, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	struct hf_arena *a = t->arena;
	if (!a || a->cap - a->used < n) {
		size_t cap = n > (256u << 10) ? n : (256u << 10);
		struct hf_arena *b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->next = a;
		b->used = 0;
		b->cap = cap;
		t->arena = b;
		a = b;
	}
	void *p = a->mem + a->used;
	a->used += n;
	return p;
}

const char *hf_regtable_strndup(struct hf_scopereg_table *t, const char *s, size_t len)
{
	char *p = hf_regtable_alloc(t, len + 1);
	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

void hf_regtable_clear(struct hf_scopereg_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->a[i].probe_fd >= 0)
			hf_sys_close(t->a[i].probe_fd);
	free(t->a);
	for (struct hf_arena *a = t->arena; a;) {
		struct hf_arena *n = a->next;
		free(a);
		a = n;
	}
	hf_regindex_free(&t->names);
	memset(t, 0, sizeof *t);
}

int hf_regtable_push(struct hf_scopereg_table *t, struct hf_alloc **ret)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct hf_alloc *a = realloc(t->a, cap * sizeof *a);
		if (!a)
			return -ENOMEM;
		t->a = a;
		t->cap = cap;
	}
	*ret = &t->a[t->n++];
	memset(*ret, 0, sizeof **ret);
	(*ret)->parent = -1;
	(*ret)->probe_fd = -1;
	return 0;
}

/* ------------------------------------------------------------------------
 * Index: open addressing over one string field of the entries.
 * --------------------------------------------------------------------- */

static const char *key_of(const struct hf_alloc *a, enum hf_regkey key)
{
	return key == HF_REGKEY_NAME ? a->name : a->token;
}

int hf_regindex_build(struct hf_regindex *ix, const struct hf_scopereg_table *t, enum hf_regkey key,
		      long *ret_dup)
{
	size_t size = 16;
	while (size < 2 * t->n + 1)
		size <<= 1;
	long *slot = malloc(size * sizeof *slot);
	if (!slot)
		return -ENOMEM;
	free(ix->slot);
	ix->slot = slot;
	ix->mask = size - 1;
	ix->n = t->n;
	memset(ix->slot, 0xff, size * sizeof *ix->slot);
	for (size_t i = 0; i < t->n; i++) {
		const char *k = key_of(&t->a[i], key);
		if (!k)
			continue;
		size_t h = hf_fnv1a(k, strlen(k)) & ix->mask;
		while (ix->slot[h] >= 0) {
			if (!strcmp(key_of(&t->a[ix->slot[h]], key), k)) {
				if (ret_dup)
					*ret_dup = (long)i;
				hf_regindex_free(ix);
				return -EEXIST;
			}
			h = (h + 1) & ix->mask;
		}
		ix->slot[h] = (long)i;
	}
	return 0;
}

long hf_regindex_find(const struct hf_regindex *ix, const struct hf_scopereg_table *t,
		      enum hf_regkey key, const char *k)
{
	if (!ix->slot)
		return -1;
	size_t h = hf_fnv1a(k, strlen(k)) & ix->mask;
	while (ix->slot[h] >= 0) {
		if (!strcmp(key_of(&t->a[ix->slot[h]], key), k))
			return ix->slot[h];
		h = (h + 1) & ix->mask;
	}
	return -1;
}

void hf_regindex_free(struct hf_regindex *ix)
{
	free(ix->slot);
	memset(ix, 0, sizeof *ix);
}

int hf_regtable_index(struct hf_scopereg_table *t, long *ret_dup)
{
	return hf_regindex_build(&t->names, t, HF_REGKEY_NAME, ret_dup); /* RT2 */
}

long hf_regtable_find(const struct hf_scopereg_table *t, const char *name)
{
	assert((t->names.slot || t->n == 0) && t->names.n == t->n && "RT3");
	return hf_regindex_find(&t->names, t, HF_REGKEY_NAME, name);
}

/* ------------------------------------------------------------------------
 * The delegation tree.
 * --------------------------------------------------------------------- */

int hf_regtable_check_tree(const struct hf_scopereg_table *t, char *why, size_t n)
{
	unsigned char *state = calloc(t->n ? t->n : 1, 1); /* 0 new, 1 on path, 2 done */
	if (!state)
		return -ENOMEM;
	long *path = malloc((t->n ? t->n : 1) * sizeof *path);
	if (!path) {
		free(state);
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < t->n && rc == 0; i++) {
		size_t np = 0;
		long j = (long)i;
		while (j >= 0 && state[j] == 0) {
			state[j] = 1;
			path[np++] = j;
			/* a missing name ends the chain: top level */
			j = t->a[j].from ? hf_regtable_find(t, t->a[j].from) : -1;
		}
		if (j >= 0 && state[j] == 1) {
			snprintf(why, n, "delegated_from forms a cycle through \"%s\"", t->a[j].name);
			rc = -EINVAL; /* RT4 */
		}
		while (np)
			state[path[--np]] = 2;
	}
	free(path);
	free(state);
	return rc;
}

int hf_regtable_link(struct hf_scopereg_table *t)
{
	int rc = hf_regtable_index(t, NULL);
	if (rc < 0)
		return rc;
	/* nearest live ancestor: follow delegated_from past the dead (RT5) */
	for (size_t i = 0; i < t->n; i++) {
		long j = -1;
		const char *from = t->a[i].from;
		size_t steps = 0;
		while (from) {
			assert(steps++ < t->n && "RT4");
			j = hf_regtable_find(t, from);
			if (j < 0 || t->a[j].live == HF_ALIVE)
				break;
			from = t->a[j].from;
			j = -1;
		}
		t->a[i].parent = j;
	}
	for (size_t i = 0; i < t->n; i++) {
		unsigned d = 0;
		for (long j = t->a[i].parent; j >= 0; j = t->a[j].parent) {
			assert(t->a[j].live == HF_ALIVE && "RT5");
			d++;
		}
		assert(d <= t->n && "RT4");
		t->a[i].depth = d;
	}
	return 0;
}

bool hf_regtable_descends(const struct hf_scopereg_table *t, long i, long anc)
{
	size_t steps = 0;
	for (long j = t->a[i].parent; j >= 0; j = t->a[j].parent) {
		assert(steps++ < t->n && "RT4");
		if (j == anc)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------------
 * Queries (RT6).
 * --------------------------------------------------------------------- */

/* Do a and b share a path? By path, or by kernel identity (SC5, SC6):
 * then *va / *vb are the identities that met. */
static bool spec_meet(const struct hf_spec *a, const struct hf_spec *b, const char **va,
		      const char **vb)
{
	*va = *vb = NULL;
	if (hf_spec_overlap(a, b))
		return true;
	for (unsigned i = 0; i < a->nids; i++)
		for (unsigned j = 0; j < b->nids; j++)
			if (hf_fsid_overlap(&a->ids[i], &b->ids[j])) {
				*va = a->id_text[i];
				*vb = b->id_text[j];
				return true;
			}
	return false;
}

/* Is every path of inner one of outer's, by path or by identity (the
 * identity of inner's own path inside one of outer's)? When not, why: a
 * path of inner outside outer (SC10). */
static bool spec_within(const struct hf_spec *outer, const struct hf_spec *inner, char *why,
			size_t n)
{
	if (hf_spec_covers_why(outer, inner, why, n))
		return true;
	for (unsigned i = 0; inner->nids && i < outer->nids; i++)
		if (hf_fsid_covers(&outer->ids[i], &inner->ids[0]))
			return true;
	return false;
}

int hf_regtable_admit(const struct hf_scopereg_table *t, const struct hf_spec *specs, size_t n,
		      long parent, struct hf_regtable_refusal *ret)
{
	memset(ret, 0, sizeof *ret);
	ret->who = -1;
	for (size_t i = 0; i < n; i++) {
		const struct hf_spec *s = &specs[i];
		long best = -1;
		size_t best_k = 0, others = 0;
		const char *best_vo = NULL, *best_vs = NULL;
		if (s->write) {
			/* RG4: no overlap with a live pod that is not an ancestor;
			 * read specs take nothing (SC4) */
			for (size_t j = 0; j < t->n; j++) {
				if ((long)j == parent ||
				    (parent >= 0 && hf_regtable_descends(t, parent, (long)j)))
					continue;
				for (size_t k = 0; k < t->a[j].nspecs; k++) {
					const struct hf_spec *o = &t->a[j].specs[k];
					const char *vo, *vs;
					if (!o->write || !spec_meet(o, s, &vo, &vs))
						continue;
					if (best >= 0)
						others++;
					if (best < 0 || t->a[j].depth > t->a[best].depth ||
					    (t->a[j].depth == t->a[best].depth &&
					     o->len > t->a[best].specs[best_k].len)) {
						best = (long)j;
						best_k = k;
						best_vo = vo;
						best_vs = vs;
					}
					break;
				}
			}
		}
		if (best >= 0) {
			*ret = (struct hf_regtable_refusal){ .who = best, .who_spec = best_k,
							     .index = i, .others = others,
							     .who_fs = best_vo, .req_fs = best_vs };
			return HF_ECONFLICT;
		}
		if (parent >= 0) {
			/* RG5: inside one of the parent's specs of a mode that allows
			 * it (overlap with its other descendants was refused above) */
			bool inside = false;
			char why[PATH_MAX], named[PATH_MAX] = "";
			for (size_t k = 0; k < t->a[parent].nspecs && !inside; k++) {
				if (!t->a[parent].specs[k].write && s->write)
					continue;
				inside = spec_within(&t->a[parent].specs[k], s, why, sizeof why);
				if (inside || !why[0] || named[0])
					continue;
				/* name a path outside every spec of the parent's */
				unsigned d;
				bool in_other = !hf_path_normal(why, strlen(why), &d);
				for (size_t o = 0; o < t->a[parent].nspecs && !in_other; o++)
					in_other = (t->a[parent].specs[o].write || !s->write) &&
						   hf_spec_contains(&t->a[parent].specs[o], why,
								    strlen(why), d);
				if (!in_other)
					memcpy(named, why, strlen(why) + 1);
			}
			if (!inside) {
				*ret = (struct hf_regtable_refusal){ .who = parent, .index = i };
				memcpy(ret->outside, named, strlen(named) + 1);
				return HF_ENOTYOURS;
			}
		}
	}
	return 0;
}

size_t hf_scopereg_count(const struct hf_scopereg_table *t)
{
	return t->n;
}

uint64_t hf_scopereg_generation(const struct hf_scopereg_table *t)
{
	return t->generation;
}

void hf_scopereg_get(const struct hf_scopereg_table *t, size_t i, struct hf_scopereg_alloc *ret)
{
	const struct hf_alloc *a = &t->a[i];
	*ret = (struct hf_scopereg_alloc){
		.name = a->name, .pid = a->pid, .pid_start = a->pid_start, .boot_id = a->boot_id,
		.host = a->host, .socket = a->socket, .delegated_from = a->from,
		.generation = a->generation, .registered_ms = a->registered_ms,
		.scope_allow = a->spec_text, .nscope = a->nspecs, .live = a->live,
		.depth = a->depth, .returned_to = a->returned_to, .pidns = a->pidns,
		.timens = a->timens, .boot_ms = a->boot_ms, .comm = a->comm ? a->comm : "",
		.token = a->token, .scope_fs = a->fs_text, .scope_fs_spec = a->fs_spec,
		.nscope_fs = a->nfs, .lease_ms = a->lease_ms, .lease_until_ms = a->lease_until_ms,
		.reason = a->reason,
		.lease_left_ms = a->lease_ms > 0 ? hf_scopereg_lease_left(a, hf_sys_now_ms()) : 0,
	};
}

long hf_scopereg_find(const struct hf_scopereg_table *t, const char *name)
{
	return hf_regtable_find(t, name);
}

void hf_scopereg_free(struct hf_scopereg_table *t)
{
	if (!t)
		return;
	hf_regtable_clear(t);
	free(t);
}

int hf_scopereg_effective(const struct hf_scopereg_table *t, const char *name,
			  struct hf_scopereg_deny **ret, size_t *ret_n)
{
	long me = hf_regtable_find(t, name);
	if (me < 0)
		return HF_ENOTHELD;
	if (t->a[me].live == HF_DEAD)
		return HF_ELOST;
	size_t n = 0, cap = 0;
	struct hf_scopereg_deny *d = NULL;
	for (size_t j = 0; j < t->n; j++) {
		if (t->a[j].live != HF_ALIVE || !hf_regtable_descends(t, (long)j, me))
			continue;
		for (size_t k = 0; k < t->a[j].nspecs; k++) {
			const struct hf_spec *s = &t->a[j].specs[k];
			bool mine = false;
			const char *va, *vb;
			for (size_t m = 0; m < t->a[me].nspecs && !mine; m++)
				mine = t->a[me].specs[m].write &&
				       spec_meet(&t->a[me].specs[m], s, &va, &vb);
			if (!s->write || !mine) /* SC4: reads take nothing */
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				struct hf_scopereg_deny *nd = realloc(d, cap * sizeof *nd);
				if (!nd) {
					free(d);
					return -ENOMEM;
				}
				d = nd;
			}
			d[n++] = (struct hf_scopereg_deny){ .scope = t->a[j].spec_text[k],
							 .name = t->a[j].name, .pid = t->a[j].pid };
		}
	}
	*ret = d;
	*ret_n = n;
	return 0;
}

int hf_scopereg_check(const struct hf_scopereg_table *t, const char *path, const char *pod,
		      uint64_t pod_generation, struct hf_scopereg_verdict *ret)
{
	if (!hf_path_normal(path, strlen(path), &(unsigned){ 0 }))
		return -EINVAL;
	struct hf_mounts m;
	bool have = hf_mounts_load(&m) == 0;
	int rc = hf_scopereg_check_at(t, have ? &m : NULL, path, pod, pod_generation, ret);
	hf_mounts_free(&m);
	return rc;
}

int hf_scopereg_check_at(const struct hf_scopereg_table *t, const struct hf_mounts *m,
			 const char *path, const char *pod, uint64_t pod_generation,
			 struct hf_scopereg_verdict *ret)
{
	unsigned depth;
	size_t len = strlen(path);
	if (!hf_path_normal(path, len, &depth))
		return -EINVAL;
	/* SC5: the path's identity, by this process's mount table (read once
	 * by the caller for a batch: hf_registry_check_paths) */
	char idtext[HF_FSID_MAX];
	struct hf_fsid id;
	bool have_id = false;
	if (m) {
		int w = hf_path_identify(m, path, len, 'e', idtext, sizeof idtext);
		have_id = w > 0 && hf_fsid_parse(idtext, (size_t)w, &id) == 0;
	}
	struct hf_scopereg_verdict v = { .state = HF_SCOPEREG_FREE, .holder = -1, .pod = -1 };
	/* the owner of a path is the deepest live pod whose write spec covers
	 * it: an ancestor's scope there was delegated away (effective scope) */
	for (size_t j = 0; j < t->n; j++) {
		if (t->a[j].live != HF_ALIVE)
			continue;
		for (size_t k = 0; k < t->a[j].nspecs; k++) {
			const struct hf_spec *s = &t->a[j].specs[k];
			if (!s->write)
				continue;
			const char *via = NULL;
			bool in = hf_spec_contains(s, path, len, depth);
			for (unsigned i = 0; !in && have_id && i < s->nids; i++)
				if (hf_fsid_overlap(&s->ids[i], &id)) {
					in = true;
					via = s->id_text[i];
				}
			if (!in)
				continue;
			if (v.holder < 0 || t->a[j].depth > t->a[v.holder].depth) {
				v.holder = (long)j;
				v.holder_scope = t->a[j].spec_text[k];
				v.holder_fs = via;
			}
			break;
		}
	}
	if (pod) {
		v.pod = hf_regtable_find(t, pod);
		if (v.pod < 0 || t->a[v.pod].live != HF_ALIVE ||
		    (pod_generation && t->a[v.pod].generation != pod_generation))
			v.state = HF_SCOPEREG_LOST;
		else if (v.holder == v.pod)
			v.state = HF_SCOPEREG_YOURS;
		else
			v.state = v.holder >= 0 ? HF_SCOPEREG_HELD : HF_SCOPEREG_OUTSIDE;
	} else {
		v.state = v.holder >= 0 ? HF_SCOPEREG_HELD : HF_SCOPEREG_FREE;
	}
	*ret = v;
	return 0;
}
