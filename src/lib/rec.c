/*
 * rec.c - records: what a lock, a session, a scope or an allocation says,
 * read by the field names of the files (holdfast.h, "Records").
 *
 * A record is a jansson object and, once asked for, its JSON text. Builders
 * for each kind turn the protocols' structs into records with the files'
 * field names, so the library, the CLI's --json and the bindings say the
 * same thing in the same words.
 */
#include "rec.h"

#include "lock.h"
#include "registry.h"
#include "session.h"
#include "text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct hf_rec {
	json_t *obj;
	char *json; /* hf_rec_json's text, made on first use */
};

hf_rec *hf_rec_take(json_t *obj)
{
	if (!obj)
		return NULL;
	hf_rec *r = calloc(1, sizeof *r);
	if (!r) {
		json_decref(obj);
		return NULL;
	}
	r->obj = obj;
	return r;
}

json_t *hf_rec_object(const hf_rec *r)
{
	return r ? r->obj : NULL;
}

void hf_rec_put(hf_rec **slot, hf_rec *r)
{
	hf_rec_free(*slot);
	*slot = r;
}

void hf_rec_free(hf_rec *r)
{
	if (!r)
		return;
	json_decref(r->obj);
	free(r->json);
	free(r);
}

/* field, or a dotted path into nested objects ("broke.lane"). */
static json_t *lookup(const hf_rec *r, const char *field)
{
	if (!r || !field)
		return NULL;
	json_t *o = r->obj;
	const char *p = field;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (json_is_array(o)) { /* "holders.0.pid": an index, decimal */
			size_t i = 0, k = 0;
			for (; k < n && p[k] >= '0' && p[k] <= '9' && i < 100000; k++)
				i = i * 10 + (size_t)(p[k] - '0');
			o = k == n && n > 0 && (n == 1 || p[0] != '0') ? json_array_get(o, i) : NULL;
		} else {
			o = json_object_getn(o, p, n);
		}
		if (!dot || !o)
			return o;
		p = dot + 1;
	}
}

hf_rec *hf_rec_merge(hf_rec *into, hf_rec *from)
{
	if (!from)
		return into;
	if (!into) {
		into = from;
	} else {
		json_object_update(into->obj, from->obj);
		free(into->json);
		into->json = NULL;
		hf_rec_free(from);
	}
	return into;
}

const char *hf_rec_str(const hf_rec *r, const char *field)
{
	return json_string_value(lookup(r, field));
}

int hf_rec_int(const hf_rec *r, const char *field, int64_t *ret)
{
	if (!ret)
		return -EINVAL;
	json_t *v = lookup(r, field);
	if (!v)
		return -ENOENT;
	if (json_is_boolean(v)) {
		*ret = json_is_true(v); /* a flag reads as 1 or 0 */
		return 0;
	}
	if (!json_is_integer(v))
		return -EINVAL;
	*ret = json_integer_value(v);
	return 0;
}

size_t hf_rec_len(const hf_rec *r, const char *field)
{
	return json_array_size(lookup(r, field));
}

const char *hf_rec_str_at(const hf_rec *r, const char *field, size_t i)
{
	return json_string_value(json_array_get(lookup(r, field), i));
}

const char *hf_rec_json(const hf_rec *r)
{
	if (!r)
		return "{}";
	if (!r->json)
		((hf_rec *)r)->json = json_dumps(r->obj, JSON_COMPACT | JSON_ENSURE_ASCII);
	return r->json ? r->json : "{}";
}

/* --- builders ---------------------------------------------------------- */

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, json_string(v));
}

static const char *const lock_states[] = {
	[HF_LOCK_FREE] = "free",     [HF_LOCK_HELD] = "held",
	[HF_LOCK_DEAD] = "dead",     [HF_LOCK_LEAKED] = "leaked",
	[HF_LOCK_PARTIAL] = "partial", [HF_LOCK_ABANDONED] = "abandoned",
	[HF_LOCK_SKEW] = "skew",     [HF_LOCK_EXPIRED] = "expired",
};

hf_rec *hf_rec_from_dirlock(const struct hf_lock_info *i, const char *path)
{
	json_t *o;
	if (i->owner.token[0] && !i->partial) {
		o = hf_owner_to_json(&i->owner, "acquired");
		if (!o)
			return NULL;
		json_object_set_new(o, "fence", json_integer((json_int_t)i->fence));
		json_object_set_new(o, "max_hold_ms", json_integer(i->max_hold_ms));
		set_str(o, "mode", hf_lock_mode_name(i->mode));
		if (i->mode == HF_MODE_SLOTS)
			json_object_set_new(o, "slots", json_integer(i->slots));
	} else {
		o = json_object();
		if (!o)
			return NULL;
	}
	unsigned s = (unsigned)i->state;
	set_str(o, "state", s < HF_ARRAY_SIZE(lock_states) ? lock_states[s] : "unknown");
	json_object_set_new(o, "age_ms", json_integer(i->state != HF_LOCK_FREE ? i->age_ms : 0));
	json_object_set_new(o, "partial", json_boolean(i->partial));
	json_object_set_new(o, "in_claim", json_boolean(i->in_claim));
	json_object_set_new(o, "claims", json_integer(i->claims));
	if (i->reason[0])
		set_str(o, "reason", i->reason);
	set_str(o, "path", path);
	return hf_rec_take(o);
}

hf_rec *hf_rec_from_session(const struct hf_sessionlock_record *r, const char *path)
{
	/* the file's fields in the file's order (hf_session_format), built
	 * directly: no line to format and parse again */
	char when[HF_TIME_MAX];
	hf_time_format(r->started_ms, when, sizeof when);
	json_t *o = json_object();
	if (!o)
		return NULL;
	if (r->legacy) { /* a bare timestamp: no fields of its own */
		set_str(o, "started", when);
		json_object_set_new(o, "legacy", json_true());
		set_str(o, "path", path);
		return hf_rec_take(o);
	}
	set_str(o, "lane", r->lane);
	set_str(o, "owner", r->owner);
	json_object_set_new(o, "pid", json_integer(r->pid));
	set_str(o, "host", r->host);
	set_str(o, "started", when);
	if (r->boot_id[0]) {
		set_str(o, "boot_id", r->boot_id);
		json_object_set_new(o, "timens", json_integer((json_int_t)r->timens));
		json_object_set_new(o, "boottime_ms", json_integer(r->boot_ms));
	}
	if (r->has_broke) {
		json_t *b = json_object();
		if (b) {
			hf_time_format(r->broke.started_ms, when, sizeof when);
			set_str(b, "lane", r->broke.lane);
			set_str(b, "owner", r->broke.owner);
			set_str(b, "started", when);
			json_object_set_new(b, "age_s", json_integer(r->broke.age_s));
			if (r->broke.legacy)
				json_object_set_new(b, "legacy", json_true());
			json_object_set_new(o, "broke", b);
		}
	}
	set_str(o, "path", path);
	return hf_rec_take(o);
}

static const char *const session_states[] = {
	[HF_SESSION_FREE] = "free",   [HF_SESSION_HELD] = "held",
	[HF_SESSION_STALE] = "stale", [HF_SESSION_SKEW] = "skew",
	[HF_SESSION_UNREADABLE] = "unreadable",
};

hf_rec *hf_rec_from_session_status(const struct hf_sessionlock_status *st, const char *path)
{
	hf_rec *r = NULL;
	json_t *o;
	if (st->state == HF_SESSION_HELD || st->state == HF_SESSION_STALE ||
	    st->state == HF_SESSION_SKEW) {
		r = hf_rec_from_session(&st->rec, NULL);
		if (!r)
			return NULL;
		o = r->obj;
		json_object_set_new(o, "age_ms", json_integer(st->age_ms));
	} else {
		o = json_object();
		if (!o || !(r = hf_rec_take(o)))
			return NULL;
	}
	unsigned s = (unsigned)st->state;
	set_str(o, "state", s < HF_ARRAY_SIZE(session_states) ? session_states[s] : "unknown");
	if (st->state != HF_SESSION_FREE)
		json_object_set_new(o, "mtime_ms", json_integer(st->mtime_ms));
	if (st->in_aside)
		set_str(o, "aside", st->aside);
	if (st->reason[0])
		set_str(o, "reason", st->reason);
	set_str(o, "path", path);
	return r;
}

hf_rec *hf_rec_reason(const char *why, const char *path)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	set_str(o, "reason", why);
	set_str(o, "path", path);
	return hf_rec_take(o);
}

static void set_int(json_t *o, const char *k, int64_t v)
{
	json_object_set_new(o, k, json_integer((json_int_t)v));
}

static void set_str_or_null(json_t *o, const char *k, const char *v)
{
	json_object_set_new(o, k, v ? json_string(v) : json_null());
}

hf_rec *hf_rec_from_scope_holder(const struct hf_scopereg_holder *h, int rc, const char *given)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	if (h->name[0]) {
		set_str(o, "name", h->name);
		if (rc != HF_ELOST) { /* HF_ELOST names only the parent missing */
			set_int(o, "pid", h->pid);
			set_str(o, "host", h->host);
			set_int(o, "generation", (int64_t)h->generation);
			set_str(o, "scope", h->scope);
			set_str(o, "comm", h->comm);
			set_int(o, "foreign_pidns", h->foreign_pidns);
			if (h->registered_ms) {
				char when[HF_TIME_MAX];
				hf_time_format(h->registered_ms, when, sizeof when);
				set_str(o, "registered", when);
				set_int(o, "age_ms", h->age_ms);
			}
			/* the holder pod's own reason (RG14): "reason" is the
			 * refusal's */
			if (h->pod_reason[0])
				set_str(o, "holder_reason", h->pod_reason);
			if (h->lease_ms > 0) { /* RG15 */
				char until[HF_TIME_MAX];
				hf_time_format(h->lease_until_ms, until, sizeof until);
				set_int(o, "lease_ms", h->lease_ms);
				set_str(o, "lease_until", until);
			}
		}
	} else if (h->pid) {
		set_int(o, "pid", h->pid); /* the registry lock's holder */
	}
	if (rc == HF_ECONFLICT || rc == HF_ENOTYOURS || rc == -EINVAL) {
		if (h->request[0])
			set_str(o, "request", h->request);
		set_int(o, "request_index", (int64_t)h->request_index);
		set_str(o, "spec", given);
	}
	if (rc == HF_ENOTYOURS && h->outside[0])
		set_str(o, "outside", h->outside);
	if (rc == HF_ECONFLICT) {
		set_int(o, "others", (int64_t)h->others);
		if (h->fs[0]) {
			set_str(o, "fs", h->fs);
			set_str(o, "request_fs", h->request_fs);
		}
	}
	set_str(o, "refused", hf_error_name(rc));
	if (h->registry[0])
		set_str(o, "registry", h->registry);
	if (h->reason[0])
		set_str(o, "reason", h->reason);
	return hf_rec_take(o);
}

hf_rec *hf_rec_from_scope_alloc(const struct hf_scopereg_alloc *a, int64_t age_ms, bool reaped)
{
	json_t *o = json_object(), *allow = json_array();
	if (!o || !allow) {
		json_decref(o);
		json_decref(allow);
		return NULL;
	}
	/* the file's fields, in the file's order (registry_json.c) */
	set_str(o, "name", a->name);
	set_int(o, "pid", a->pid);
	set_int(o, "pid_start", (int64_t)a->pid_start);
	set_str(o, "boot_id", a->boot_id);
	set_str(o, "host", a->host);
	set_str_or_null(o, "socket", a->socket);
	for (size_t k = 0; k < a->nscope; k++)
		json_array_append_new(allow, json_string(a->scope_allow[k]));
	json_object_set_new(o, "scope_allow", allow);
	set_str_or_null(o, "delegated_from", a->delegated_from);
	set_int(o, "generation", (int64_t)a->generation);
	if (a->registered_ms) {
		char when[HF_TIME_MAX];
		hf_time_format(a->registered_ms, when, sizeof when);
		set_str(o, "registered", when);
	}
	if (a->pidns) {
		set_int(o, "pidns", (int64_t)a->pidns);
		set_int(o, "timens", (int64_t)a->timens);
		set_int(o, "boottime_ms", a->boot_ms);
		set_str(o, "comm", a->comm);
	}
	set_str(o, "token", a->token);
	if (a->lease_ms > 0) { /* RG15 */
		char until[HF_TIME_MAX];
		hf_time_format(a->lease_until_ms, until, sizeof until);
		set_int(o, "lease_ms", a->lease_ms);
		set_str(o, "lease_until", until);
		set_int(o, "lease_left_ms", a->lease_left_ms > 0 ? a->lease_left_ms : 0);
	}
	set_str(o, "reason", a->reason); /* RG14: absent when none */
	if (a->nscope_fs) {
		json_t *fs = json_array();
		for (size_t k = 0; fs && k < a->nscope; k++) {
			json_t *l = json_array();
			for (size_t j = 0; l && j < a->nscope_fs; j++)
				if (a->scope_fs_spec[j] == k)
					json_array_append_new(l, json_string(a->scope_fs[j]));
			json_array_append_new(fs, l);
		}
		json_object_set_new(o, "scope_fs", fs);
	}
	set_str(o, "live", a->live == HF_ALIVE ? "alive" : "dead");
	set_int(o, "depth", a->depth);
	if (a->registered_ms)
		set_int(o, "age_ms", age_ms);
	if (reaped)
		set_str_or_null(o, "returned_to", a->returned_to);
	return hf_rec_take(o);
}

int hf_rec_out(hf_rec *r, hf_rec **ret)
{
	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}
