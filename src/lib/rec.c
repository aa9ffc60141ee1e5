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

#include "dirlock.h"
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
		if (!dot)
			return json_object_get(o, p);
		o = json_object_getn(o, p, (size_t)(dot - p));
		if (!json_is_object(o))
			return NULL;
		p = dot + 1;
	}
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
	[HF_LOCK_SKEW] = "skew",
};

hf_rec *hf_rec_from_dirlock(const struct hf_dirlock_info *i, const char *path)
{
	json_t *o;
	if (i->owner.token[0] && !i->partial) {
		o = hf_owner_to_json(&i->owner, "acquired");
		if (!o)
			return NULL;
		json_object_set_new(o, "fence", json_integer((json_int_t)i->fence));
		json_object_set_new(o, "max_hold_ms", json_integer(i->max_hold_ms));
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
	char line[2048];
	int n = r->legacy ? 0 : hf_session_format(r, line, sizeof line);
	json_t *o = n > 0 ? json_loadb(line, (size_t)n, 0, NULL) : NULL;
	if (r->legacy) {
		/* a bare timestamp: no JSON of its own */
		char when[HF_TIME_MAX];
		hf_time_format(r->started_ms, when, sizeof when);
		o = json_pack("{s:s, s:i}", "started", when, "legacy", 1);
	}
	if (!o)
		return NULL;
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
