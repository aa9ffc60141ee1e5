/*
 * handle_registry.c - the registry's public snapshot (holdfast.h,
 * hf_registry): a judged table read on its scope's backend (hf_scope_table), its allocations as
 * records (made when first asked for), and the queries of
 * registry_table.c - effective scope and the write check - as records.
 */
#include "floor.h"
#include "handle.h"
#include "rec.h"
#include "registry.h"
#include "text.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)HF_SCOPE_FREE == (int)HF_SCOPEREG_FREE &&
		       (int)HF_SCOPE_HELD == (int)HF_SCOPEREG_HELD &&
		       (int)HF_SCOPE_YOURS == (int)HF_SCOPEREG_YOURS &&
		       (int)HF_SCOPE_OUTSIDE == (int)HF_SCOPEREG_OUTSIDE &&
		       (int)HF_SCOPE_LOST == (int)HF_SCOPEREG_LOST,
	       "the public verdicts are the registry's");

struct hf_registry {
	struct hf_scopereg_table *t;
	hf_rec **recs;   /* one per allocation, made by hf_registry_get */
	bool reaped;     /* a reap's table: each entry says where its scope went */
};

static int wrap(struct hf_scopereg_table *t, bool reaped, hf_registry **ret)
{
	hf_registry *r = calloc(1, sizeof *r);
	size_t n = hf_scopereg_count(t);
	if (!r || !(r->recs = calloc(n ? n : 1, sizeof *r->recs))) {
		free(r);
		hf_scopereg_free(t);
		return -ENOMEM;
	}
	r->t = t;
	r->reaped = reaped;
	*ret = r;
	return 0;
}

static void fail_rec(hf_rec **reterr, const struct hf_scopereg_holder *h, int rc)
{
	if (reterr)
		*reterr = hf_rec_from_scope_holder(h, rc, NULL);
}

/* A read's or a reap's outcome rc (a reap's: how many it reaped) and table
 * t into *ret (when asked; reaped: a reap's table) or *reterr; h freed. */
static int outcome(int rc, struct hf_scopereg_table *t, bool reaped, struct hf_scopereg_holder *h,
		   hf_registry **ret, hf_rec **reterr)
{
	if (rc < 0) {
		fail_rec(reterr, h, rc);
	} else if (ret) {
		int n = rc;
		rc = wrap(t, reaped, ret);
		rc = rc < 0 ? rc : n;
	} else {
		hf_scopereg_free(t);
	}
	free(h);
	return rc;
}

/* Read (reap false) or reap the registry file path (NULL: the working
 * directory's) through a temporary handle: as hf_scope_table. */
static int by_path(const char *path, bool reap, struct hf_scopereg_table **ret,
		   struct hf_scopereg_holder *h)
{
	hf_scope *s;
	int rc = hf_scope_new("registry", &s);
	if (rc < 0)
		return rc;
	if (path)
		rc = hf_scope_set_str(s, HF_OPT_REGISTRY, path);
	if (rc == 0)
		rc = hf_scope_table(s, reap, ret, h);
	hf_scope_free(s);
	return rc;
}

int hf_registry_read(const char *path, hf_registry **ret, hf_rec **reterr)
{
	if (!ret)
		return -EINVAL;
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	struct hf_scopereg_table *t = NULL;
	int rc = by_path(path, false, &t, h); /* before t is passed on */
	return outcome(rc, t, false, h, ret, reterr);
}

int hf_registry_reap(const char *path, hf_registry **ret, hf_rec **reterr)
{
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	struct hf_scopereg_table *t = NULL;
	int rc = by_path(path, true, ret ? &t : NULL, h);
	return outcome(rc, t, true, h, ret, reterr);
}

size_t hf_registry_count(const hf_registry *r)
{
	return r ? hf_scopereg_count(r->t) : 0;
}

uint64_t hf_registry_generation(const hf_registry *r)
{
	return r ? hf_scopereg_generation(r->t) : 0;
}

const hf_rec *hf_registry_get(const hf_registry *r, size_t i)
{
	if (!r || i >= hf_scopereg_count(r->t))
		return NULL;
	if (!r->recs[i]) { /* a cache: the record is made on first use */
		struct hf_scopereg_alloc a;
		hf_scopereg_get(r->t, i, &a);
		r->recs[i] = hf_rec_from_scope_alloc(&a, hf_scopereg_age_ms(r->t, i, hf_sys_now_ms()),
						     r->reaped);
	}
	return r->recs[i];
}

long hf_registry_find(const hf_registry *r, const char *name)
{
	return r && name ? hf_scopereg_find(r->t, name) : -1;
}

int hf_registry_effective(const hf_registry *r, const char *name, hf_rec **ret)
{
	if (!r || !name || !ret)
		return -EINVAL;
	struct hf_scopereg_deny *d = NULL;
	size_t nd = 0;
	int rc = hf_scopereg_effective(r->t, name, &d, &nd);
	if (rc < 0)
		return rc;
	struct hf_scopereg_alloc a;
	hf_scopereg_get(r->t, (size_t)hf_scopereg_find(r->t, name), &a);
	json_t *allow = json_array(), *deny = json_array();
	for (size_t k = 0; allow && k < a.nscope; k++)
		json_array_append_new(allow, json_string(a.scope_allow[k]));
	for (size_t k = 0; deny && k < nd; k++)
		json_array_append_new(deny, json_pack("{s:s, s:s, s:I}", "scope", d[k].scope, "name",
						      d[k].name, "pid", (json_int_t)d[k].pid));
	free(d);
	if (!allow || !deny) {
		json_decref(allow);
		json_decref(deny);
		return -ENOMEM;
	}
	hf_rec *rec = hf_rec_take(json_pack("{s:s, s:I, s:I, s:o, s:o}", "name", a.name, "pid",
					    (json_int_t)a.pid, "generation",
					    (json_int_t)a.generation, "scope", allow, "denied",
					    deny));
	if (!rec)
		return -ENOMEM;
	*ret = rec;
	return 0;
}

static const char *const states[] = { "free", "held", "yours", "outside", "lost" };

int hf_registry_check(const hf_registry *r, const char *path, const char *pod,
		      uint64_t pod_generation, hf_rec **ret)
{
	if (!r || !path)
		return -EINVAL;
	struct hf_scopereg_verdict v;
	int rc = hf_scopereg_check(r->t, path, pod, pod_generation, &v);
	if (rc < 0)
		return rc;
	if (ret) {
		json_t *o = json_object();
		if (!o)
			return -ENOMEM;
		json_object_set_new(o, "state", json_string(states[v.state]));
		if (v.holder >= 0) {
			struct hf_scopereg_alloc a;
			hf_scopereg_get(r->t, (size_t)v.holder, &a);
			json_object_set_new(o, "holder", json_string(a.name));
			json_object_set_new(o, "holder_scope", json_string(v.holder_scope));
			if (v.holder_fs)
				json_object_set_new(o, "holder_fs", json_string(v.holder_fs));
		}
		if (pod)
			json_object_set_new(o, "pod", json_string(pod));
		hf_rec *rec = hf_rec_take(o);
		if (!rec)
			return -ENOMEM;
		*ret = rec;
	}
	return v.state;
}

/* A refused path's entry: the verdict v of paths[i] as check's record. */
static json_t *refusal(const hf_registry *r, size_t i, const char *path,
		       const struct hf_scopereg_verdict *v)
{
	struct hf_scopereg_alloc a;
	hf_scopereg_get(r->t, (size_t)v->holder, &a);
	/* a path that is not UTF-8 (a file name is any bytes) as \xNN text:
	 * JSON holds UTF-8 only; "index" names the caller's own bytes */
	json_t *p = json_string(path);
	if (!p) {
		char shown[4 * PATH_MAX];
		p = json_string(hf_text_show(path, shown, sizeof shown, true));
	}
	json_t *o = json_pack("{s:I, s:o, s:s, s:s, s:s}", "index", (json_int_t)i, "path", p,
			      "state", states[v->state], "holder", a.name, "holder_scope",
			      v->holder_scope);
	if (o && v->holder_fs)
		json_object_set_new(o, "holder_fs", json_string(v->holder_fs));
	return o;
}

int hf_registry_check_paths(const hf_registry *r, const char *const *paths, size_t n,
			    const char *pod, uint64_t pod_generation, int *states_ret,
			    hf_rec **ret)
{
	if (!r || (n && !paths))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!paths[i] || !hf_path_normal(paths[i], strlen(paths[i]), &(unsigned){ 0 }))
			return -EINVAL; /* nothing judged: one snapshot, all or none */
	json_t *refused = ret ? json_array() : NULL;
	if (ret && !refused)
		return -ENOMEM;
	/* SC5: one mount table for every path, as one registry snapshot */
	struct hf_mounts m;
	bool have = hf_mounts_load(&m) == 0;
	int count = 0, rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct hf_scopereg_verdict v;
		rc = hf_scopereg_check_at(r->t, have ? &m : NULL, paths[i], pod, pod_generation, &v);
		if (rc < 0)
			break;
		if (states_ret)
			states_ret[i] = v.state;
		/* refused: another's (held), or the write spec of a live pod when
		 * pod lost its registration (its own old scope is now another's) */
		if (v.state != HF_SCOPEREG_HELD && !(v.state == HF_SCOPEREG_LOST && v.holder >= 0))
			continue;
		count++;
		json_t *o = refused ? refusal(r, i, paths[i], &v) : NULL;
		if (refused && (!o || json_array_append_new(refused, o) < 0))
			rc = -ENOMEM;
	}
	hf_mounts_free(&m);
	if (rc < 0) {
		json_decref(refused);
		return rc;
	}
	if (ret) {
		json_t *o = json_pack("{s:o, s:I}", "refused", refused, "count", (json_int_t)n);
		if (o && pod)
			json_object_set_new(o, "pod", json_string(pod));
		hf_rec *rec = o ? hf_rec_take(o) : NULL;
		if (!rec)
			return -ENOMEM;
		*ret = rec;
	}
	return count;
}

void hf_registry_free(hf_registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < hf_scopereg_count(r->t); i++)
		hf_rec_free(r->recs[i]);
	free(r->recs);
	hf_scopereg_free(r->t);
	free(r);
}

int hf_scope_registry_read(hf_scope *s, hf_registry **ret, hf_rec **reterr)
{
	if (!s || !ret)
		return -EINVAL;
	struct hf_scopereg_holder *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	struct hf_scopereg_table *t = NULL;
	int rc = hf_scope_table(s, false, &t, h);
	return outcome(rc, t, false, h, ret, reterr);
}

int hf_scope_registry_reap(hf_scope *s, hf_registry **ret, hf_rec **reterr)
{
	if (!s)
		return -EINVAL;
	struct hf_scopereg_holder *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	struct hf_scopereg_table *t = NULL;
	int rc = hf_scope_table(s, true, &t, h);
	return outcome(rc, t, true, h, ret, reterr);
}
