/*
 * etcdlist.c - `holdfast list --backend etcd://...`: the locks (etcdlock.c)
 * and sessions (etcdsession.c) kept in etcd under a directory, read-only.
 *
 * Steps: one range read per kind, [PREFIX + dir, PREFIX + dir with its last
 * byte + 1) (the locks' with the epoch key, EI3), keeping the keys that
 * are dir itself or below it (dir + "/"), each judged as its kind's status
 * judges it (a session's record by session_record.c).
 *
 * Invariants:
 *   (EI1) It reads, never writes: ranges only (the locks' in a txn of two
 *         ranges and nothing else; no put, no revoke, no lease).
 *   (EI2) A key whose value cannot be read is listed ("unreadable", with a
 *         reason), never skipped and never an error of the whole listing.
 *   (EI3) A lock's fence is the one its status shows (etcdlock.c EL10): the
 *         epoch key is read in the same txn as the locks, never apart.
 *   (EI4) A lock is one item however many keys it has (etcdlock.c EL11:
 *         K and its shared and slot holders' K "//" TOKEN, all in the
 *         range): the keys up to their "//" are grouped, and the item is
 *         its status's - the first holder's record with "mode", "slots"
 *         and "holders" (EL13; its waiting acquisitions first, EL15) - under
 *         the key K.
 */
#include "etcd.h"
#include "floor.h"
#include "lock.h"
#include "rec.h"
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An item: rec's object (taken) with kind, backend and key. */
static void add(json_t *items, hf_rec *r, const char *kind, const char *key)
{
	json_t *o = hf_rec_object(r);
	if (o) {
		json_incref(o);
		json_object_set_new(o, "kind", json_string(kind));
		json_object_set_new(o, "backend", json_string("etcd"));
		json_object_set_new(o, "key", json_string(key));
		json_array_append_new(items, o);
	}
	hf_rec_free(r);
}

/* One holder's record (EI2: unreadable is held, a reason): its lease and key. */
static hf_rec *holder_rec(void *ctx, const struct hf_etcdlock_key *k)
{
	hf_rec *r = hf_rec_from_dirlock(&k->i, ctx);
	json_t *o = hf_rec_object(r);
	if (o && k->lease)
		json_object_set_new(o, "lease", json_integer(k->lease));
	if (o && k->i.reason[0] && !json_object_get(o, "reason"))
		json_object_set_new(o, "reason", json_string(k->i.reason));
	if (o)
		json_object_set_new(o, "key", json_string(k->key));
	return r;
}

/* A lock's item from its keys (kvs: K and its holders' K "//" TOKEN, EI4):
 * the first holder's record with "mode", "slots" and "holders", as its
 * status shows it (etcdlock.c EL13, EL15). NULL: no memory. */
static hf_rec *lock_rec(const json_t *kvs, const struct hf_etcd_epoch *ep, const char *path)
{
	struct hf_etcdlock_key *k = NULL;
	size_t n = 0;
	if (hf_etcdlock_keys(kvs, ep, &k, &n) < 0 || !n) {
		hf_etcdlock_keys_free(k, n);
		return NULL;
	}
	hf_rec *r = holder_rec((void *)path, &k[0]);
	json_t *o = hf_rec_object(r);
	if (o)
		json_object_del(o, "key"); /* the item's key is the lock's (add) */
	json_t *all = hf_etcdlock_all(k, n, holder_rec, (void *)path);
	if (o && all)
		json_object_update(o, all);
	json_decref(all);
	hf_etcdlock_keys_free(k, n);
	return r;
}

/* The length of key's lock key: up to its "//" (a holder's key, EI4). */
static size_t lock_key_len(const char *key, size_t klen, size_t pl)
{
	const char *h = klen > pl ? strstr(key + pl, "//") : NULL;
	return h ? (size_t)(h - key) : klen;
}

static hf_rec *session_rec(const json_t *kv, const char *path)
{
	struct hf_sessionlock_status st;
	memset(&st, 0, sizeof st);
	const char *v64 = json_string_value(json_object_get(kv, "value"));
	char *v = NULL;
	size_t vn = 0;
	if (!v64 || hf_b64_decode(v64, &v, &vn) < 0 || vn > HF_SESSION_FILE_MAX ||
	    hf_session_parse(v, vn, &st.rec, st.reason, sizeof st.reason) < 0) {
		memset(&st.rec, 0, sizeof st.rec);
		if (!st.reason[0])
			snprintf(st.reason, sizeof st.reason, "the key's value is not a record");
		st.state = HF_SESSION_UNREADABLE; /* EI2 */
	} else {
		st.state = hf_session_judge(&st.rec, hf_sys_now_ms(), HF_SESSION_STALE_MS_DEFAULT,
					    &st.age_ms);
	}
	free(v);
	return hf_rec_from_session_status(&st, path);
}

/* One kind: range prefix + dir, the keys at dir or below it. */
static int list_kind(struct hf_etcd *c, const char *prefix, const char *dir, const char *kind,
		     json_t *items, char *why, size_t n)
{
	size_t dl = strcmp(dir, "/") ? strlen(dir) : 0; /* "/": everything */
	size_t pl = strlen(prefix), kl = pl + dl;
	char *from = malloc(kl + 2), *to = malloc(kl + 2);
	if (!from || !to) {
		free(from);
		free(to);
		return -ENOMEM;
	}
	snprintf(from, kl + 2, "%s%.*s", prefix, (int)dl, dir);
	if (!dl) { /* [prefix "/", prefix "0") */
		strcat(from, "/");
		kl++;
	}
	memcpy(to, from, kl + 1);
	to[kl - 1]++; /* the range's end: the first key after every "from..." */
	char *f64 = hf_b64_encode(from, kl), *t64 = hf_b64_encode(to, kl);
	free(to);
	bool locks = !strcmp(kind, "lock");
	char *e64 = hf_b64_encode(HF_ETCD_EPOCH_KEY, strlen(HF_ETCD_EPOCH_KEY));
	json_t *a = NULL, *range;
	struct hf_etcd_epoch ep = { 0, 0 };
	int rc = f64 && t64 && e64 ? 0 : -ENOMEM;
	if (rc == 0 && locks) /* EI1, EI3: the locks and the epoch in one read */
		rc = hf_etcd_call(c, "/v3/kv/txn",
				  json_pack("{s:[{s:{s:s, s:s}}, {s:{s:s}}]}", "success",
					    "request_range", "key", f64, "range_end", t64,
					    "request_range", "key", e64),
				  &a, why, n);
	else if (rc == 0)
		rc = hf_etcd_call(c, "/v3/kv/range",
				  json_pack("{s:s, s:s}", "key", f64, "range_end", t64), &a, why,
				  n); /* EI1 */
	free(f64);
	free(t64);
	free(e64);
	json_t *rs = json_object_get(a, "responses");
	range = locks ? json_object_get(json_array_get(rs, 0), "response_range") : a;
	if (rc == 0 && locks)
		rc = hf_etcd_epoch_parse(json_object_get(json_array_get(rs, 1), "response_range"),
					 &ep, why, n);
	json_t *kvs = json_object_get(range, "kvs");
	size_t nkv = json_array_size(kvs);
	char **keys = calloc(nkv ? nkv : 1, sizeof *keys);
	size_t *lens = calloc(nkv ? nkv : 1, sizeof *lens);
	if (!keys || !lens)
		rc = rc ? rc : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < nkv; i++) {
		const char *k64 = json_string_value(json_object_get(json_array_get(kvs, i), "key"));
		size_t klen = 0;
		if (!k64 || hf_b64_decode(k64, &keys[i], &klen) < 0)
			keys[i] = NULL;
		else /* a lock's keys are grouped by K (EI4) */
			lens[i] = locks ? lock_key_len(keys[i], klen, pl) : klen;
	}
	for (size_t i = 0; rc == 0 && i < nkv; i++) {
		char *key = keys[i];
		size_t klen = lens[i];
		if (!key)
			continue;
		/* dir itself or below it ("/a/b" lists "/a/b/c", not "/a/bc") */
		if (!((klen > kl && (!dl || key[kl] == '/')) || (klen == kl && dl)))
			continue;
		json_t *group = json_array();
		if (!group) {
			rc = -ENOMEM;
			break;
		}
		for (size_t j = i; j < nkv; j++) {
			if (j > i && (!keys[j] || lens[j] != klen || memcmp(keys[j], key, klen)))
				continue;
			json_array_append(group, json_array_get(kvs, j));
			if (j > i) {
				free(keys[j]);
				keys[j] = NULL;
			}
		}
		key[klen] = '\0'; /* the lock's key K */
		const char *path = key + pl;
		hf_rec *r = locks ? lock_rec(group, &ep, path)
				  : session_rec(json_array_get(group, 0), path);
		json_decref(group);
		if (!r) {
			rc = -ENOMEM;
			break;
		}
		add(items, r, kind, key);
	}
	for (size_t i = 0; keys && i < nkv; i++)
		free(keys[i]);
	free(keys);
	free(lens);
	free(from);
	json_decref(a);
	return rc;
}

int hf_etcd_list(const struct hf_etcd_cfg *cfg, const char *dir, json_t **ret, char *why,
		 size_t n)
{
	struct hf_etcd *c;
	int rc = hf_etcd_open(cfg, &c);
	if (rc < 0)
		return rc;
	json_t *items = json_array();
	rc = items ? 0 : -ENOMEM;
	if (rc == 0)
		rc = list_kind(c, HF_ETCD_KEY_PREFIX, dir, "lock", items, why, n);
	if (rc == 0)
		rc = list_kind(c, HF_ETCD_SESSION_PREFIX, dir, "session", items, why, n);
	hf_etcd_close(c);
	if (rc < 0) {
		json_decref(items);
		return rc;
	}
	*ret = items;
	return 0;
}
