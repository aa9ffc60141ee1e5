/*
 * etcdscope.c - the scope registry kept in etcd (hf_scope with
 * HF_OPT_BACKEND): the same registrations, refusals (the deepest live
 * holder named), effective scopes and verdicts as the file system's
 * registry (fs/registry.c) - the table in memory and its rules
 * (registry_table.c: hf_regtable_admit, RG4, RG5), a request's checks and
 * the judge (registry_judge.c) are shared, only where the table lives and
 * how a change is made atomic differ. Its lease: etcdlease.c.
 *
 * Artifacts
 * ---------
 *   pod key  HF_ETCD_SCOPE_PREFIX + the pod's name ("/holdfast/scope/agent-1";
 *            a name has no '/', so every pod is in the range [prefix,
 *            HF_ETCD_SCOPE_END)).
 *   value    the pod's allocation as the file writes it (registry_json.c:
 *            name, pid, pid_start, boot_id, host, pidns, timens, boottime_ms,
 *            comm, socket, scope_allow, delegated_from, registered) without
 *            "generation", without "scope_fs" (a mount's device numbers mean
 *            nothing on another host: on etcd specs meet by path only) and
 *            with "ancestors": [{"name","generation"}...], the live chain of
 *            parents at registration, nearest first.
 *   lease    one per registration, TTL (default 10 s), attached to the pod
 *            key: the pod lives while it is kept alive - by a thread of the
 *            handle (the lease module's keep-alive, etcdlease.c, LE1) or by
 *            `holdfast scope register`'s keeper (hf_etcdlease_keep), which
 *            revokes it the moment the owner ends.
 *   generation  the pod key's create_revision (a fencing token, strictly
 *            greater for every later registration in that etcd); the
 *            registry's generation is the revision it was read at.
 *
 * Steps of a registration (hf_etcdscope_register)
 * -----------------------------------------------
 *   1. The request's form, its specs canonical (hf_regreq_make), the owner
 *      record (-ESRCH). Grant a lease.
 *   2. Range the prefix at revision R: every pod, as a table. A pod's
 *      delegated_from is the first of its ancestors whose key exists with
 *      that generation (ES4); the table is judged as the file's (owners
 *      proven dead on this kernel are dead).
 *   3. Pods proven dead: revoke their leases (their keys go) and go to 2.
 *   4. Decide on the table exactly as the file does: the name taken
 *      (HF_EHELD), the parent absent (HF_ELOST), hf_regtable_admit
 *      (HF_ECONFLICT naming the deepest live holder, HF_ENOTYOURS).
 *   5. One txn: compare the pod key absent (create_revision == 0), every key
 *      of the prefix unchanged since R (a range compare, mod_revision < R+1)
 *      and, delegated, the parent key's create_revision == the parent's
 *      generation; then put the pod key with the lease. Succeeded: the
 *      generation is the txn's revision. Failed: go to 2 (at most
 *      HF_ETCD_SCOPE_ATTEMPTS times; then -EAGAIN).
 *   6. Refused at 4 (HF_ECONFLICT, HF_EHELD) with a wait (HF_OPT_WAIT_MS):
 *      (point scope.register.waiting) watch the prefix ([prefix,
 *      HF_ETCD_SCOPE_END)) from R+1, so a change between the range and the
 *      watch is delivered; any event (a put or a delete under the prefix:
 *      a release, a lease's expiry, a new registration) goes to 2, as does
 *      a stream that broke (its member went: at most
 *      HF_ETCD_SCOPE_WATCH_RETRIES times in a row, then the client's
 *      error). The deadline (HF_ETIMEDOUT) or the cancel descriptor
 *      (HF_ECANCELED) ends it, naming the last holder. Every half TTL of
 *      waiting, our lease (granted at 1) is kept alive (a new one granted
 *      if it is gone) and the watch goes on from R+1.
 *
 * Release: range the table, compare the generation, revoke the pod's lease;
 * of what the handle registered itself: revoke its lease (one request).
 * Reap: revoke the leases of the pods proven dead. Read: step 2.
 *
 * Invariants
 * ----------
 *   (ES1) A registration is written only by a txn whose compares say no pod
 *         key was put since the table it was decided on was read: a put
 *         is the only change that can make a decision wrong, because a
 *         deletion (release, revoke, expiry) only takes write specs away -
 *         except the parent's, which ES2 compares. All specs or none: one put.
 *   (ES2) A delegation is written only while the parent's key is the one it
 *         was decided against (create_revision == its generation): a stale
 *         token, or a parent that ended and came back, is refused.
 *   (ES3) A pod's key is deleted only with its lease (revoke or expiry): a
 *         late revoke names a lease, never a key, and cannot end a newer
 *         registration of the name.
 *   (ES4) Nothing is rewritten when a pod ends: a child's parent is its
 *         nearest ancestor whose key lives with the generation recorded, so
 *         A->B->D with B gone is A->D and A's effective scope is its own
 *         minus D's (the partial reclaim falls out of B's lease ending).
 *   (ES5) A wait is a watch, never a poll: after a decision refused at
 *         revision R it decides again only on an event of the prefix after
 *         R, or a watch that broke; its deadline and its cancel descriptor
 *         end it; the only other wake-up, at half the lease's TTL, renews
 *         the waiter's lease and watches on from R+1 without a decision.
 *   (ES7) A leased pod (HF_OPT_LEASE_MS, RG15) is put on an etcd lease of its
 *         length that nothing keeps alive (no thread, no keeper): etcd's
 *         clock alone ends it, the same for every reader, so a read judges
 *         a leased pod's key alive while it exists and shows what etcd
 *         says is left (lease/timetolive). A renewal is one keep-alive of
 *         that lease by the pod's name, from any process: it resets the
 *         lease to its granted TTL (another length is refused), and a
 *         lease that already ended stays ended (its key is gone).
 *   (ES6) A waiting registration outlives a failed read or txn only within
 *         its deadline and HF_ETCD_RETRIES failures in a row (hf_etcd_again):
 *         a txn that may have been applied is judged by the next read, whose
 *         step 4 finds our own put.
 *
 * Hazards
 * -------
 *   - Every registration of an etcd compares the whole prefix: two at once
 *     serialize, the loser deciding again (bounded). Fine for the pod counts
 *     of a build farm, not for thousands of registrations a second.
 *   - A pid proves death only on its own kernel; a pod on another host
 *     whose owner died lives until its lease expires (its TTL). A killed
 *     keeper stops the renewals: the pod ends after the TTL though its owner
 *     may live on.
 *   - Specs meet by path only (no identities): hosts must mount shared trees
 *     at the same paths.
 *   - A waiter is woken by every change of the registry, also one that does
 *     not concern it (it decides again and waits on): n waiters cost n
 *     reads per registration.
 *   - A generation is a bare create_revision (no epoch, unlike a lock's
 *     fence, etcdlock.c EL10): a cluster rebuilt from an empty data dir
 *     hands out generations from 2 again, as the file registry restarts at
 *     0 when its table file is deleted (fs/registry.c's hazard).
 */
#include "etcdscope.h"
#include "etcdlease.h"
#include "floor.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hf_etcdscope {
	struct hf_etcd_cfg cfg;
	struct hf_etcd *conn;
	struct hf_etcdlease lease; /* the registration's, and its keep-alive (LE1) */
	pid_t made_by;          /* hf_sys_getpid() at new: a forked child's conn is the parent's */
	char held[HF_POD_NAME_MAX + 1]; /* the name es registered last, its generation */
	uint64_t held_gen;
	char uri[512];
	char why[HF_ETCD_WHY_MAX];
};

int hf_etcdscope_new(const char *uri, struct hf_etcd_cfg *cfg, struct hf_etcdscope **ret)
{
	struct hf_etcdscope *es = calloc(1, sizeof *es);
	if (!es)
		return -ENOMEM;
	int rc = hf_etcd_open(cfg, &es->conn);
	if (rc < 0) {
		free(es);
		return rc;
	}
	es->cfg = *cfg; /* taken */
	memset(cfg, 0, sizeof *cfg);
	hf_etcdlease_init(&es->lease, &es->cfg);
	snprintf(es->uri, sizeof es->uri, "%s", uri);
	es->made_by = hf_sys_getpid();
	*ret = es;
	return 0;
}

void hf_etcdscope_free(struct hf_etcdscope *es)
{
	if (!es)
		return;
	hf_etcdlease_clear(&es->lease, es->conn); /* joins the keep-alive (LE1) */
	if (es->made_by != hf_sys_getpid())
		hf_etcd_forget(es->conn); /* a forked child: the parent's socket */
	hf_etcd_close(es->conn);
	hf_etcd_cfg_clear(&es->cfg);
	free(es);
}

void hf_etcdscope_set_ttl(struct hf_etcdscope *es, int64_t ttl_ms)
{
	hf_etcdlease_set_ttl(&es->lease, ttl_ms);
}

int64_t hf_etcdscope_ttl_ms(const struct hf_etcdscope *es)
{
	return hf_etcdlease_ttl_ms(&es->lease);
}

int64_t hf_etcdscope_lease(const struct hf_etcdscope *es)
{
	return es->lease.id;
}

void hf_etcdscope_unkeep(struct hf_etcdscope *es)
{
	hf_etcdlease_unkeep(&es->lease, es->conn);
}

int hf_etcdscope_keep(struct hf_etcdscope *es, int64_t pid, uint64_t start)
{
	es->why[0] = '\0';
	hf_etcd_forget(es->conn); /* a forked keeper's: the parent's socket */
	struct hf_etcd *c; /* a connection of its own, as the lock's keeper's */
	int rc = hf_etcd_open(&es->cfg, &c);
	if (rc < 0)
		return rc;
	hf_etcd_close(es->conn);
	es->conn = c;
	es->made_by = hf_sys_getpid();
	struct hf_owner o = { .pid = pid, .pid_start = start };
	return hf_etcdlease_keep(&es->lease, es->conn, &o, es->why, sizeof es->why);
}

/* ---- requests ------------------------------------------------------------------ */

static int say(struct hf_scopereg_holder *err, int rc, const struct hf_etcdscope *es,
	       const char *why)
{
	if (err) {
		snprintf(err->registry, sizeof err->registry, "%s", es->uri);
		if (why && why[0])
			snprintf(err->reason, sizeof err->reason, "%s", why);
	}
	return rc;
}

static int call(struct hf_etcdscope *es, const char *api, json_t *req, json_t **ret)
{
	return hf_etcd_request(es->conn, api, req, ret, es->why, sizeof es->why);
}

static int lease_revoke(struct hf_etcdscope *es, int64_t id)
{
	return hf_etcdlease_revoke(es->conn, id, es->why, sizeof es->why); /* ES3 */
}

static int lease_grant(struct hf_etcdscope *es, int64_t *ret)
{
	return hf_etcdlease_grant(&es->lease, es->conn, ret, es->why, sizeof es->why);
}

/* Step 6 (ES5): watch the prefix after revision rev until an event (0), a
 * broken stream (-EIO), deadline (ns, CLOCK_MONOTONIC; < 0 none:
 * HF_ETIMEDOUT), cancel_fd (HF_ECANCELED, -EBADF); *lease (granted at
 * *granted) kept alive every half TTL meanwhile. */
static int wait_change(struct hf_etcdscope *es, int64_t rev, int64_t deadline, int cancel_fd,
		       int64_t *lease, int64_t *granted)
{
	static const char pre[] = HF_ETCD_SCOPE_PREFIX, end[] = HF_ETCD_SCOPE_END;
	for (;;) {
		int64_t renew = *granted + hf_etcdscope_ttl_ms(es) * 500000LL;
		int64_t until = deadline >= 0 && deadline < renew ? deadline : renew;
		int rc = hf_etcd_watch_range(es->conn, pre, sizeof pre - 1, end, sizeof end - 1,
					     rev + 1, until, cancel_fd, es->why, sizeof es->why);
		if (rc != HF_ETIMEDOUT || (deadline >= 0 && hf_sys_mono_ns() >= deadline))
			return rc;
		/* half its TTL gone waiting: the waiter's lease must not end */
		int64_t sent = hf_sys_mono_ns(); /* LE2: its life counts from the send */
		rc = hf_etcdlease_keepalive(es->conn, *lease, es->why, sizeof es->why);
		if (rc == -ENOENT) {
			sent = hf_sys_mono_ns();
			rc = lease_grant(es, lease); /* gone (revoked elsewhere): anew */
		}
		if (rc < 0)
			return rc;
		*granted = sent;
	}
}

static char *b64(const char *s)
{
	return hf_b64_encode(s, strlen(s));
}

static char *pod_key64(const char *name)
{
	char k[sizeof HF_ETCD_SCOPE_PREFIX + HF_POD_NAME_MAX];
	snprintf(k, sizeof k, "%s%s", HF_ETCD_SCOPE_PREFIX, name);
	return b64(k);
}

/* The table read (step 2), with each entry's lease. */
struct loaded {
	struct hf_scopereg_table t;
	int64_t *lease; /* by index of t */
	int64_t rev;
};

static void loaded_clear(struct loaded *l)
{
	hf_regtable_clear(&l->t);
	free(l->lease);
	l->lease = NULL;
}

/* Step 2: 0 and *l; HF_EUNREADABLE (a key that is no allocation); the
 * client's failures. */
static int load(struct hf_etcdscope *es, struct loaded *l, struct hf_scopereg_holder *err)
{
	memset(l, 0, sizeof *l);
	char *k = b64(HF_ETCD_SCOPE_PREFIX), *end = b64(HF_ETCD_SCOPE_END);
	json_t *a = NULL;
	int rc = k && end ? call(es, "/v3/kv/range",
				 json_pack("{s:s, s:s}", "key", k, "range_end", end), &a)
			  : -ENOMEM;
	free(k);
	free(end);
	if (rc < 0)
		return say(err, rc, es, es->why);
	hf_etcd_i64(json_object_get(a, "header"), "revision", &l->rev);
	json_t *kvs = json_object_get(a, "kvs");
	size_t n = json_array_size(kvs);
	json_t *gens = json_object(), *allocs = json_array();
	l->lease = calloc(n ? n : 1, sizeof *l->lease);
	char reason[512] = "";
	rc = gens && allocs && l->lease ? 0 : -ENOMEM;
	json_t **vals = calloc(n ? n : 1, sizeof *vals);
	if (!vals)
		rc = -ENOMEM;
	/* every pod's generation first: ES4 resolves parents against them */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_t *kv = json_array_get(kvs, i);
		char *key = NULL, *v = NULL;
		size_t kn = 0, vn = 0;
		int64_t cr = 0;
		hf_etcd_i64(kv, "create_revision", &cr);
		hf_etcd_i64(kv, "lease", &l->lease[i]);
		const char *k64 = json_string_value(json_object_get(kv, "key"));
		const char *v64 = json_string_value(json_object_get(kv, "value"));
		if (!k64 || hf_b64_decode(k64, &key, &kn) < 0 || !v64 ||
		    hf_b64_decode(v64, &v, &vn) < 0) {
			snprintf(reason, sizeof reason, "a key of %s that is not base64",
				 HF_ETCD_SCOPE_PREFIX);
			rc = HF_EUNREADABLE;
		}
		const char *name = key ? key + strlen(HF_ETCD_SCOPE_PREFIX) : "";
		json_t *o = rc == 0 ? json_loadb(v, vn, JSON_REJECT_DUPLICATES, NULL) : NULL;
		if (rc == 0 && (!json_is_object(o) || cr <= 0 ||
				!json_is_string(json_object_get(o, "name")) ||
				strcmp(json_string_value(json_object_get(o, "name")), name))) {
			snprintf(reason, sizeof reason, "etcd key %s: not a pod's allocation", key);
			rc = HF_EUNREADABLE;
		}
		if (rc == 0) {
			json_object_set_new(o, "generation", json_integer(cr));
			json_object_set_new(gens, name, json_integer(cr));
			vals[i] = o;
		} else {
			json_decref(o);
		}
		free(key);
		free(v);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_t *o = vals[i], *anc = json_object_get(o, "ancestors"), *p;
		json_t *from = json_null();
		size_t j;
		json_array_foreach(anc, j, p) { /* ES4: the nearest that lives */
			const char *pn = json_string_value(json_object_get(p, "name"));
			json_t *g = pn ? json_object_get(gens, pn) : NULL;
			if (g && json_integer_value(g) ==
					 json_integer_value(json_object_get(p, "generation"))) {
				from = json_string(pn);
				break;
			}
		}
		json_object_set_new(o, "delegated_from", from);
		json_object_del(o, "ancestors");
		json_array_append(allocs, o);
	}
	for (size_t i = 0; i < n && vals; i++)
		json_decref(vals[i]);
	free(vals);
	json_decref(gens);
	json_decref(a);
	char *text = NULL;
	if (rc == 0) {
		json_t *doc = json_pack("{s:i, s:I, s:o}", "version", 1, "generation",
					(json_int_t)l->rev, "allocations", allocs);
		allocs = NULL;
		text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
		rc = text ? 0 : -ENOMEM;
	}
	json_decref(allocs);
	if (rc == 0)
		rc = hf_regtable_parse(text, strlen(text), &l->t, reason, sizeof reason);
	free(text);
	if (rc == 0) /* as the file's: by pid on this kernel; no probe (no live files) */
		rc = hf_registry_judge(&l->t, NULL, NULL, false);
	bool relink = false;
	for (size_t i = 0; rc == 0 && i < l->t.n; i++) {
		struct hf_alloc *e = &l->t.a[i];
		if (e->lease_ms <= 0)
			continue;
		/* ES7: a leased pod's key lives exactly as long as its etcd lease,
		 * judged by etcd's clock alone: it is alive, its end what etcd says
		 * is left (one request a leased pod; its value's end is stale
		 * after a renewal) */
		relink |= e->live != HF_ALIVE;
		e->live = HF_ALIVE;
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)l->lease[i]);
		json_t *ans = NULL;
		int64_t ttl = -1;
		if (l->lease[i] && call(es, "/v3/lease/timetolive", json_pack("{s:s}", "ID", id),
					&ans) == 0 &&
		    hf_etcd_i64(ans, "TTL", &ttl) == 0 && ttl >= 0) {
			e->lease_until_ms = hf_sys_now_ms() + ttl * 1000;
			int64_t boot = hf_sys_boot_ms();
			e->lease_boot_until = boot > 0 && e->lease_boot_until ? boot + ttl * 1000 : 0;
		}
		json_decref(ans);
	}
	if (rc == 0 && relink)
		rc = hf_regtable_link(&l->t);
	if (rc < 0) {
		loaded_clear(l);
		return say(err, rc, es, reason);
	}
	assert(l->t.n == n && "ES4"); /* one entry per key, in the order read */
	return 0;
}

/* Step 3: revoke the leases of the pods proven dead; the number revoked. */
static int reap_dead(struct hf_etcdscope *es, struct loaded *l)
{
	int count = 0;
	for (size_t i = 0; i < l->t.n; i++)
		if (l->t.a[i].live == HF_DEAD && l->lease[i]) {
			int rc = lease_revoke(es, l->lease[i]); /* ES3 */
			if (rc < 0 && rc != -ENOENT)
				return rc;
			count++;
		}
	return count;
}

/* The new pod's value: its allocation as the file writes it (ES: Artifacts). */
static char *value_of(struct hf_scopereg_table *t, size_t idx)
{
	char *text = NULL;
	size_t len = 0;
	if (hf_regtable_format(t, &text, &len) < 0)
		return NULL;
	json_t *doc = json_loadb(text, len, 0, NULL), *o = NULL;
	free(text);
	json_t *arr = json_object_get(doc, "allocations"), *e;
	size_t i;
	json_array_foreach(arr, i, e) {
		if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "", t->a[idx].name)) {
			o = e;
			break;
		}
	}
	char *v64 = NULL;
	if (o) {
		json_object_del(o, "generation");
		json_object_del(o, "scope_fs");
		json_t *anc = json_array();
		for (long p = t->a[idx].parent; anc && p >= 0; p = t->a[p].parent)
			json_array_append_new(anc,
					      json_pack("{s:s, s:I}", "name", t->a[p].name,
							"generation", (json_int_t)t->a[p].generation));
		json_object_set_new(o, "ancestors", anc);
		char *v = json_dumps(o, JSON_COMPACT);
		v64 = v ? b64(v) : NULL;
		free(v);
	}
	json_decref(doc);
	return v64;
}

/* Step 5: 1 written, 0 lost to another change, -errno. */
static int txn(struct hf_etcdscope *es, const char *name, const char *parent, uint64_t pgen,
	       int64_t rev, const char *v64, int64_t lease, int64_t *ret_rev)
{
	char *k = pod_key64(name), *pk = parent ? pod_key64(parent) : NULL;
	char *pre = b64(HF_ETCD_SCOPE_PREFIX), *end = b64(HF_ETCD_SCOPE_END);
	char ls[24], rs[24], gs[24];
	snprintf(ls, sizeof ls, "%lld", (long long)lease);
	snprintf(rs, sizeof rs, "%lld", (long long)rev + 1);
	snprintf(gs, sizeof gs, "%llu", (unsigned long long)pgen);
	json_t *cmp = k && pre && end && (!parent || pk) ? json_pack(
		"[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}]", "key", k, "target", "CREATE",
		"result", "EQUAL", "create_revision", "0", "key", pre, "range_end", end, "target",
		"MOD", "result", "LESS", "mod_revision", rs) : NULL;
	if (cmp && parent) /* ES2 */
		json_array_append_new(cmp, json_pack("{s:s, s:s, s:s, s:s}", "key", pk, "target",
						     "CREATE", "result", "EQUAL",
						     "create_revision", gs));
	json_t *req = cmp ? json_pack("{s:o, s:[{s:{s:s, s:s, s:s}}]}", "compare", cmp,
				      "success", "request_put", "key", k, "value", v64, "lease",
				      ls)
			  : NULL;
	free(k);
	free(pk);
	free(pre);
	free(end);
	json_t *a = NULL;
	int rc = call(es, "/v3/kv/txn", req, &a); /* ES1 */
	if (rc < 0)
		return rc;
	*ret_rev = 0;
	hf_etcd_i64(json_object_get(a, "header"), "revision", ret_rev);
	rc = json_is_true(json_object_get(a, "succeeded")) ? 1 : 0;
	json_decref(a);
	if (rc == 1 && *ret_rev <= 0) {
		snprintf(es->why, sizeof es->why, "etcd: a txn answered without a revision");
		return -EPROTO;
	}
	return rc;
}

int hf_etcdscope_register(struct hf_etcdscope *es, const struct hf_scopereg_request *req,
			  struct hf_etcdscope_wait *w, uint64_t *ret_generation,
			  struct hf_scopereg_holder *err)
{
	int64_t wait_ms = w ? w->wait_ms : 0;
	int64_t deadline = wait_ms < 0 ? -1 : hf_sys_mono_ns() + wait_ms * 1000000LL;
	if (w)
		w->refused = 0;
	if (err)
		memset(err, 0, sizeof *err);
	es->why[0] = '\0';
	int rc = hf_scopereg_request_check(req, err); /* step 1 */
	if (rc < 0)
		return say(err, rc, es, NULL);
	assert(!es->lease.id && !es->lease.ka_on && "LE1"); /* the handle holds nothing */
	struct hf_regreq *q;
	struct hf_scopereg_request byp = *req;
	byp.by_path = true; /* specs meet by path only on etcd */
	if ((rc = hf_regreq_make(&byp, &q, err)) < 0)
		return say(err, rc, es, NULL);
	struct hf_owner me;
	rc = hf_owner_init(&me, req->pid);
	if (rc == -ESRCH && err)
		snprintf(err->reason, sizeof err->reason, "no process has pid %d", (int)req->pid);
	if (rc < 0) {
		hf_regreq_free(q);
		return say(err, rc, es, NULL);
	}
	if (!hf_text_ok(me.host, HF_HOST_MAX))
		me.host[0] = '\0';
	int64_t lease = 0, granted = hf_sys_mono_ns();
	if (req->lease_ms > 0) /* ES7: the key's lease is the pod's, of that TTL */
		hf_etcdlease_set_ttl(&es->lease, req->lease_ms);
	rc = lease_grant(es, &lease);
	if (rc < 0) {
		hf_regreq_free(q);
		return say(err, rc, es, es->why);
	}
	struct loaded l;
	bool have = false;
	int64_t grev = 0;
	int broken = 0; /* watches in a row that broke (step 6) */
	for (int attempt = 0;; attempt++) {
		if (have)
			loaded_clear(&l);
		have = false;
		if (attempt >= HF_ETCD_SCOPE_ATTEMPTS) {
			rc = say(err, -EAGAIN, es, "the registry changed under every attempt");
			break;
		}
		if ((rc = load(es, &l, err)) < 0) { /* step 2 */
			if (rc == -EIO && wait_ms != 0 &&
			    (rc = hf_etcd_again(deadline, w->cancel_fd, ++broken)) == 0) {
				attempt = -1; /* ES6: a failed read, not a lost txn */
				continue;
			}
			break;
		}
		have = true;
		if ((rc = reap_dead(es, &l)) != 0) { /* step 3 */
			if (rc < 0) {
				rc = say(err, rc, es, es->why);
				break;
			}
			continue;
		}
		struct hf_scopereg_table *t = &l.t;
		long same = hf_regtable_find(t, req->name); /* step 4 */
		if (same >= 0 && l.lease[same] == lease) {
			grev = (int64_t)t->a[same].generation; /* our put, repeated (ET1) */
			rc = 0;
			break;
		}
		if (same >= 0) {
			hf_scopereg_holder_fill(err, &t->a[same], t->a[same].spec_text[0]);
			rc = say(err, HF_EHELD, es, NULL);
			goto refused;
		}
		long parent = -1;
		if (req->from && (parent = hf_regtable_find(t, req->from)) < 0) {
			if (err)
				snprintf(err->name, sizeof err->name, "%s", req->from);
			rc = say(err, HF_ELOST, es, NULL);
			break;
		}
		struct hf_regtable_refusal no;
		rc = hf_regtable_admit(t, q->specs, req->nspecs, parent, &no); /* RG4, RG5 */
		if (rc < 0) {
			const struct hf_alloc *who = &t->a[no.who];
			hf_scopereg_holder_fill(err, who,
						who->spec_text[rc == HF_ECONFLICT ? no.who_spec : 0]);
			if (err) {
				err->request_index = no.index;
				snprintf(err->request, sizeof err->request, "%s", q->canon[no.index]);
				snprintf(err->outside, sizeof err->outside, "%s", no.outside);
				if (rc == HF_ECONFLICT)
					err->others = no.others;
			}
			rc = say(err, rc, es, NULL);
			if (rc == HF_ENOTYOURS)
				break;
			goto refused;
		}
		struct hf_alloc *a;
		if ((rc = hf_regtable_push(t, &a)) < 0)
			break;
		a->name = hf_regtable_strndup(t, req->name, strlen(req->name));
		a->pid = me.pid;
		a->pid_start = me.pid_start;
		a->boot_id = hf_regtable_strndup(t, me.boot_id, strlen(me.boot_id));
		a->host = hf_regtable_strndup(t, me.host, strlen(me.host));
		a->pidns = me.pidns;
		a->timens = me.timens;
		a->boot_ms = me.boot_ms > 0 ? me.boot_ms : 0;
		a->comm = hf_regtable_strndup(t, me.comm, strlen(me.comm));
		a->socket = req->socket ? hf_regtable_strndup(t, req->socket, strlen(req->socket))
					: NULL;
		a->from = parent >= 0 ? t->a[parent].name : NULL;
		a->parent = parent;
		a->generation = (uint64_t)l.rev + 1; /* the file needs one; not stored */
		a->registered_ms = me.time_ms;
		a->live = HF_ALIVE;
		if (req->lease_ms > 0) /* ES7 */
			hf_scopereg_lease_start(a, req->lease_ms);
		if (req->reason) /* RG14 */
			a->reason = hf_regtable_strndup(t, req->reason, strlen(req->reason));
		if (!a->name || !a->boot_id || !a->host || !a->comm || (req->socket && !a->socket) ||
		    (req->reason && !a->reason)) {
			rc = -ENOMEM;
			break;
		}
		if ((rc = hf_regreq_store(t, a, q)) < 0)
			break;
		a->nfs = 0; /* by path only on etcd */
		char *v64 = value_of(t, t->n - 1);
		if (!v64) {
			rc = -ENOMEM;
			break;
		}
		hf_sys_point(HF_PT_SCOPE_REGISTER_DECIDED);
		rc = txn(es, req->name, parent >= 0 ? t->a[parent].name : NULL,
			 parent >= 0 ? t->a[parent].generation : 0, l.rev, v64, lease, &grev);
		free(v64);
		if (rc == -EIO && wait_ms != 0 &&
		    (rc = hf_etcd_again(deadline, w->cancel_fd, ++broken)) == 0) {
			attempt = -1; /* ES6: applied or not, the next read says (step 4) */
			continue;
		}
		if (rc < 0) {
			rc = say(err, rc, es, es->why);
			break;
		}
		if (rc == 1) {
			rc = 0;
			break;
		}
		/* lost to another change (ES1): decide again */
		continue;
	refused: /* step 6: HF_ECONFLICT, HF_EHELD, the holder in *err */
		if (wait_ms == 0)
			break;
		w->refused = rc;
		int64_t rev = l.rev;
		loaded_clear(&l);
		have = false;
		assert(rev > 0 && "ES5"); /* the watch starts after the decision's read */
		hf_sys_point(HF_PT_SCOPE_REGISTER_WAITING);
		rc = wait_change(es, rev, deadline, w->cancel_fd, &lease, &granted); /* ES5 */
		if (rc == 0 || (rc == -EIO && ++broken <= HF_ETCD_SCOPE_WATCH_RETRIES)) {
			if (rc == 0)
				broken = 0;
			attempt = -1; /* a new decision, not a txn lost */
			if (err)
				memset(err, 0, sizeof *err);
			continue;
		}
		if (rc != HF_ETIMEDOUT && rc != HF_ECANCELED)
			rc = say(err, rc, es, es->why); /* the last holder stays otherwise */
		break;
	}
	if (have)
		loaded_clear(&l);
	hf_regreq_free(q);
	if (rc == 0) { /* ours from now on, alive since its last answered send (LE2) */
		hf_etcdlease_set(&es->lease, lease, granted);
		if (req->lease_ms <= 0 && /* ES7: a leased pod is never kept alive */
		    (rc = hf_etcdlease_start(&es->lease, es->conn)) < 0) { /* LE1 */
			say(err, rc, es, "no keep-alive thread");
			hf_etcdlease_set(&es->lease, 0, 0);
		}
	}
	if (rc < 0) {
		lease_revoke(es, lease);
		return rc;
	}
	assert(grev > 0 && "ES1");
	snprintf(es->held, sizeof es->held, "%s", req->name);
	es->held_gen = (uint64_t)grev;
	if (ret_generation)
		*ret_generation = (uint64_t)grev;
	return 0;
}

/* The registry loaded into *l and pod name's index in *ret_i - or, in
 * *ret_i, HF_ENOTHELD (no such pod) or HF_ENOTYOURS (another generation,
 * err naming it), said; the caller clears l. <0: nothing loaded. */
static int load_pod(struct hf_etcdscope *es, struct loaded *l, const char *name, uint64_t generation,
		    long *ret_i, struct hf_scopereg_holder *err)
{
	int rc = load(es, l, err);
	if (rc < 0)
		return rc;
	long i = hf_regtable_find(&l->t, name);
	if (i < 0) {
		*ret_i = say(err, HF_ENOTHELD, es, NULL);
	} else if (generation && l->t.a[i].generation != generation) {
		hf_scopereg_holder_fill(err, &l->t.a[i], l->t.a[i].spec_text[0]);
		*ret_i = say(err, HF_ENOTYOURS, es, NULL);
	} else {
		*ret_i = i;
	}
	return 0;
}

int hf_etcdscope_renew(struct hf_etcdscope *es, const char *name, uint64_t generation,
		       int64_t lease_ms, struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	es->why[0] = '\0';
	if (!name || !hf_pod_name_ok(name))
		return say(err, -EINVAL, es, "not a valid pod name");
	struct loaded l;
	long i;
	int rc = load_pod(es, &l, name, generation, &i, err); /* gone: its lease ended */
	if (rc < 0)
		return rc;
	if (i < 0) {
		rc = (int)i;
	} else if (l.t.a[i].lease_ms <= 0) {
		hf_scopereg_holder_fill(err, &l.t.a[i], l.t.a[i].spec_text[0]);
		snprintf(es->why, sizeof es->why,
			 "%s is not leased: it is held by the life of pid %lld, not renewed", name,
			 (long long)l.t.a[i].pid);
		rc = say(err, -EINVAL, es, es->why);
	} else if (lease_ms > 0 && (lease_ms + 999) / 1000 != (l.t.a[i].lease_ms + 999) / 1000) {
		hf_scopereg_holder_fill(err, &l.t.a[i], l.t.a[i].spec_text[0]);
		rc = say(err, -EOPNOTSUPP, es,
			 "on etcd a renewal keeps the lease's length (one keep-alive of the "
			 "key's lease): register again for another");
	} else {
		/* ES7: one keep-alive of the pod key's lease, from any process;
		 * gone meanwhile (expired): never brought back */
		rc = hf_etcdlease_keepalive(es->conn, l.lease[i], es->why, sizeof es->why);
		hf_scopereg_holder_fill(err, &l.t.a[i], l.t.a[i].spec_text[0]);
		if (rc == -ENOENT)
			rc = HF_ELOST;
		rc = say(err, rc, es, rc < 0 && rc != HF_ELOST ? es->why : NULL);
	}
	loaded_clear(&l);
	return rc;
}

int hf_etcdscope_release(struct hf_etcdscope *es, const char *name, uint64_t generation,
			 struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	es->why[0] = '\0';
	if (!name || !hf_pod_name_ok(name))
		return say(err, -EINVAL, es, "not a valid pod name");
	int64_t mine = es->lease.id;
	if (mine && !strcmp(name, es->held) && (!generation || generation == es->held_gen)) {
		/* what es registered: its lease names that key alone (ES3) - one
		 * request; gone already (expired, revoked elsewhere): read below */
		hf_etcdlease_unkeep(&es->lease, es->conn); /* LE1: stopped before the revoke */
		hf_etcdlease_set(&es->lease, 0, 0);
		int rc = lease_revoke(es, mine);
		if (rc == -EIO) { /* idempotent: once more at the next member */
			rc = lease_revoke(es, mine);
			if (rc == -ENOENT)
				rc = 0; /* gone now: by us, or by its TTL */
		}
		es->held[0] = '\0';
		if (rc != -ENOENT)
			return rc < 0 ? say(err, rc, es, es->why) : 0;
	}
	struct loaded l;
	long i;
	int rc = load_pod(es, &l, name, generation, &i, err);
	if (rc < 0)
		return rc;
	if (i < 0) {
		rc = (int)i;
	} else {
		if (l.lease[i] == es->lease.id) { /* LE1: stopped before the revoke */
			hf_etcdlease_unkeep(&es->lease, es->conn);
			hf_etcdlease_set(&es->lease, 0, 0);
		}
		rc = lease_revoke(es, l.lease[i]); /* ES3, ES4: its children re-parent */
		rc = rc == -ENOENT ? say(err, HF_ENOTHELD, es, NULL)
		     : rc < 0	   ? say(err, rc, es, es->why)
				   : 0;
	}
	loaded_clear(&l);
	return rc;
}

int hf_etcdscope_read(struct hf_etcdscope *es, struct hf_scopereg_table **ret,
		      struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	es->why[0] = '\0';
	struct hf_scopereg_table *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	struct loaded l;
	int rc = load(es, &l, err);
	if (rc < 0) {
		free(t);
		return rc;
	}
	*t = l.t; /* the arena moves with it */
	free(l.lease);
	*ret = t;
	return 0;
}

int hf_etcdscope_reap(struct hf_etcdscope *es, struct hf_scopereg_table **ret,
		      struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	es->why[0] = '\0';
	struct loaded l;
	int rc = load(es, &l, err);
	if (rc < 0)
		return rc;
	int count = reap_dead(es, &l);
	if (count < 0) {
		loaded_clear(&l);
		return say(err, count, es, es->why);
	}
	/* the reaped ones, each naming who got its scope back */
	for (size_t i = 0; i < l.t.n; i++) {
		struct hf_alloc *a = &l.t.a[i];
		a->returned_to = a->parent >= 0 ? l.t.a[a->parent].name : NULL;
	}
	size_t w = 0;
	for (size_t i = 0; i < l.t.n; i++)
		if (l.t.a[i].live == HF_DEAD && l.lease[i])
			l.t.a[w++] = l.t.a[i];
	for (size_t i = 0; i < w; i++)
		l.t.a[i].parent = -1;
	l.t.n = w;
	l.t.generation = (uint64_t)l.rev + (uint64_t)count; /* one revision a revoke */
	free(l.lease);
	rc = hf_regtable_index(&l.t, NULL);
	if (rc < 0 || !ret) {
		hf_regtable_clear(&l.t);
		return rc < 0 ? rc : count;
	}
	struct hf_scopereg_table *t = calloc(1, sizeof *t);
	if (!t) {
		hf_regtable_clear(&l.t);
		return -ENOMEM;
	}
	*t = l.t;
	*ret = t;
	return count;
}
