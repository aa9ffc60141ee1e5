/*
 * etcd_backend.c - etcd's entry in the backend table (backend.h): the
 * directory lock (etcdlock.c), the session lock (etcdsession.c) and the
 * scope registry (etcdscope.c) behind one table of operations per kind,
 * each state made from the handle's backend options (its URI, user,
 * password file, CA file, request timeout and TTL) by one client config.
 *
 * Invariants:
 *  (EB1) A failure of the client (an endpoint that does not answer, a
 *        refused authentication, an answer that is not etcd's) names its
 *        reason as the handle's holder record (BE3): never a holder it did
 *        not see.
 *  (EB2) A release the store did not answer leaves the acquisition the
 *        handle's (still_held): it may be released again, and its lease
 *        keeps being renewed meanwhile.
 *  (EB3) A waiting take on etcd outlives a failed request or watch only
 *        within its deadline and HF_ETCD_RETRIES failures in a row; it waits
 *        by watching the key, from the revision it judged the holder at.
 *
 * Records of etcd's holders carry the backend's own fields beside the
 * kind's: "backend" ("etcd"), "key", and for a lock "lease" (its own, when
 * the handle holds it) and "ttl_ms".
 */
#include "backend.h"
#include "etcd.h"
#include "etcdscope.h"
#include "floor.h"
#include "rec.h"
#include "registry.h"
#include "session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The client config of b: 0, or -errno (cfg cleared). */
static int cfg_of(const struct hf_backend_opts *b, struct hf_etcd_cfg *cfg)
{
	return hf_etcd_cfg_make(b->uri, b->user, b->password_file, b->ca_file, b->timeout_ms, cfg);
}

static int check(const char *uri)
{
	struct hf_etcd_cfg cfg;
	int rc = hf_etcd_cfg_parse(uri, &cfg);
	hf_etcd_cfg_clear(&cfg);
	return rc;
}

/* EB1: a failure rc of the client, its reason (why) in *holder. */
static int fail(hf_rec **holder, const char *why, const char *path, int rc)
{
	hf_rec_put(holder, why[0] ? hf_rec_reason(why, path) : NULL);
	return rc;
}

/* ---- the directory lock ------------------------------------------------ */

struct etcd_lock {
	struct hf_etcdlock *el;
	const char *path;              /* the handle's                        */
};

static int lock_open(const char *path, const struct hf_backend_opts *b,
		     const struct hf_lock_opts *o, void **ret)
{
	struct etcd_lock *st = calloc(1, sizeof *st);
	if (!st)
		return -ENOMEM;
	struct hf_etcd_cfg cfg;
	int rc = cfg_of(b, &cfg);
	if (rc == 0)
		rc = hf_etcdlock_new(path, &cfg, &st->el);
	hf_etcd_cfg_clear(&cfg);
	if (rc < 0) {
		free(st);
		return rc;
	}
	/* a lease-held lock's key lives on a lease of its length (OW6) */
	hf_etcdlock_set_ttl(st->el, o->lease_ms > 0 ? o->lease_ms : b->ttl_ms);
	st->path = path;
	*ret = st;
	return 0;
}

static void lock_close(void *p)
{
	struct etcd_lock *st = p;
	if (st)
		hf_etcdlock_free(st->el); /* joins its keep-alive */
	free(st);
}

/* An etcd lock's record: the directory lock's fields (rec.c) and the
 * backend's own: "backend", "key", "lease", "ttl_ms". */
static hf_rec *lock_record(struct etcd_lock *st, const struct hf_lock_info *i, int64_t lease)
{
	hf_rec *r = hf_rec_from_dirlock(i, st->path);
	json_t *o = r ? hf_rec_object(r) : NULL;
	if (o) {
		json_object_set_new(o, "backend", json_string("etcd"));
		json_object_set_new(o, "key", json_string(hf_etcdlock_key(st->el)));
		if (lease)
			json_object_set_new(o, "lease", json_integer(lease));
		/* the holder's lease's, as it recorded it; ours for our own */
		json_object_set_new(o, "ttl_ms", json_integer(i->ttl_ms > 0 ? i->ttl_ms
									: hf_etcdlock_ttl_ms(st->el)));
	}
	return r;
}

static hf_rec *lock_rec(void *p, const struct hf_lock_info *i, bool self)
{
	struct etcd_lock *st = p;
	return lock_record(st, i, self ? hf_etcdlock_lease(st->el) : 0);
}

static int lock_fail(struct etcd_lock *st, hf_rec **holder, int rc)
{
	return fail(holder, hf_etcdlock_why(st->el), st->path, rc); /* EB1 */
}

static void info_init(struct hf_lock_info *h)
{
	memset(h, 0, sizeof *h);
	h->live_fd = -1;
}

static int lock_acquire(void *p, const struct hf_lock_opts *o, struct hf_lock_info *got,
			hf_rec **holder)
{
	struct etcd_lock *st = p;
	struct hf_lock_info h; /* every mode: etcdlock.c EL11-EL14 */
	info_init(&h);
	int rc = hf_etcdlock_acquire(st->el, o, got, &h);
	if (rc < 0 && hf_lock_names_holder(rc) && h.owner.token[0]) {
		hf_rec_put(holder, lock_record(st, &h, 0));
		return rc;
	}
	return rc < 0 ? lock_fail(st, holder, rc) : rc;
}

static int lock_release(void *p, const struct hf_lock_info *held, bool adopted, hf_rec **holder,
			bool *still_held)
{
	struct etcd_lock *st = p;
	struct hf_lock_info h;
	info_init(&h);
	int rc = hf_etcdlock_release(st->el, held->owner.token, &h);
	*still_held = rc != 0 && rc != HF_ENOTHELD && rc != HF_ENOTYOURS; /* EB2 */
	if (*still_held)
		return lock_fail(st, holder, rc);
	hf_rec_put(holder, rc == HF_ENOTYOURS ? lock_record(st, &h, 0) : NULL);
	return rc;
}

static int lock_renew(void *p, const struct hf_lock_info *held, bool adopted, int64_t max_hold_ms,
		      struct hf_lock_info *got, hf_rec **holder)
{
	struct etcd_lock *st = p;
	if (!adopted && hf_etcdlock_lost(st->el)) {
		hf_rec_put(holder, NULL); /* LE2: its keep-alive gave up: not renewed */
		return HF_ELOST;
	}
	/* etcdlock.c R1-R3: the lease stays */
	struct hf_lock_info h;
	info_init(&h);
	int rc = hf_etcdlock_renew(st->el, held->owner.token, adopted ? 0 : held->fence, max_hold_ms,
				   got, &h);
	if (rc < 0 && (rc == HF_ENOTHELD || rc == HF_ENOTYOURS || rc == HF_ELOST)) {
		hf_rec_put(holder, h.owner.token[0] ? lock_record(st, &h, 0) : NULL);
		return rc;
	}
	return rc < 0 ? lock_fail(st, holder, rc) : rc;
}

/* A holder's record among "holders": its own key, and its lease. */
static hf_rec *holder_record(void *p, const struct hf_etcdlock_key *k)
{
	struct etcd_lock *st = p;
	hf_rec *r = lock_record(st, &k->i, k->lease);
	json_t *o = r ? hf_rec_object(r) : NULL;
	if (o)
		json_object_set_new(o, "key", json_string(k->key));
	return r;
}

static int lock_status(void *p, struct hf_lock_info *now, hf_rec **all, hf_rec **holder)
{
	struct etcd_lock *st = p;
	*all = NULL;
	struct hf_etcdlock_key *k = NULL;
	size_t n = 0;
	int rc = hf_etcdlock_status_all(st->el, now, &k, &n);
	if (rc < 0)
		return lock_fail(st, holder, rc);
	/* {"mode", "slots", "holders"}: every waiting key, then every admitted one (EL15) */
	json_t *a = hf_etcdlock_all(k, n, holder_record, st);
	hf_etcdlock_keys_free(k, n);
	if (!a)
		return -ENOMEM;
	*all = hf_rec_take(a);
	return *all ? 0 : -ENOMEM;
}

static bool lock_lost(void *p)
{
	struct etcd_lock *st = p;
	return hf_etcdlock_lost(st->el);
}

static void lock_detach(void *p)
{
	struct etcd_lock *st = p;
	hf_etcdlock_unkeep(st->el); /* the lease stays: hf_lock_keep, or its TTL */
}

static int lock_keep(void *p, const struct hf_lock_info *held, hf_rec **holder, bool *kept)
{
	struct etcd_lock *st = p;
	if (!hf_etcdlock_lease(st->el))
		return HF_ENOTHELD;
	*kept = true;
	int rc = hf_etcdlock_keep(st->el, &held->owner);
	return rc < 0 ? lock_fail(st, holder, rc) : rc;
}

static int lock_list(void *p, const struct hf_lock_opts *o, hf_rec **ret, hf_rec **holder)
{
	struct etcd_lock *st = p;
	const char *dir = hf_etcdlock_key(st->el) + strlen(HF_ETCD_KEY_PREFIX);
	json_t *items = NULL;
	char why[HF_ETCD_WHY_MAX] = "";
	int rc = hf_etcd_list(hf_etcdlock_cfg(st->el), dir, &items, why, sizeof why);
	if (rc < 0)
		return fail(holder, why, st->path, rc);
	return hf_rec_out(hf_rec_take(json_pack("{s:s, s:o}", "dir", dir, "locks", items)), ret);
}

static const struct hf_lock_ops etcd_lock_ops = {
	.open = lock_open,
	.close = lock_close,
	.acquire = lock_acquire,
	.release = lock_release,
	.renew = lock_renew,
	.status = lock_status,
	.lost = lock_lost,
	.detach = lock_detach,
	.keep = lock_keep,
	.list = lock_list,
	.rec = lock_rec,
};

/* ---- the session lock -------------------------------------------------- */

struct etcd_session {
	struct hf_etcdsession *es;
	const char *path;              /* the handle's                        */
};

static int session_open(const char *path, const struct hf_backend_opts *b, void **ret)
{
	struct etcd_session *st = calloc(1, sizeof *st);
	if (!st)
		return -ENOMEM;
	struct hf_etcd_cfg cfg;
	int rc = cfg_of(b, &cfg);
	if (rc == 0)
		rc = hf_etcdsession_new(path, &cfg, &st->es);
	hf_etcd_cfg_clear(&cfg);
	if (rc < 0) {
		free(st);
		return rc;
	}
	st->path = path;
	*ret = st;
	return 0;
}

static void session_close(void *p)
{
	struct etcd_session *st = p;
	if (st)
		hf_etcdsession_free(st->es);
	free(st);
}

/* An etcd session's record: the file's fields and "backend", "key". */
static hf_rec *session_mark(struct etcd_session *st, hf_rec *r)
{
	json_t *o = r ? hf_rec_object(r) : NULL;
	if (o) {
		json_object_set_new(o, "backend", json_string("etcd"));
		json_object_set_new(o, "key", json_string(hf_etcdsession_key(st->es)));
	}
	return r;
}

static void session_holder(struct etcd_session *st, hf_rec **holder,
			   const struct hf_sessionlock_status *h)
{
	hf_rec_put(holder, h ? session_mark(st, hf_rec_from_session_status(h, st->path)) : NULL);
}

static int session_fail(struct etcd_session *st, hf_rec **holder, int rc)
{
	return fail(holder, hf_etcdsession_why(st->es), st->path, rc); /* EB1 */
}

static int session_take(void *p, const struct hf_sessionlock_opts *o, int64_t wait_ms,
			int cancel_fd, struct hf_sessionlock_record *taken, hf_rec **holder)
{
	struct etcd_session *st = p;
	int64_t deadline = wait_ms < 0 ? -1 : wait_ms == 0 ? 0 : hf_sys_mono_ns() + wait_ms * 1000000LL;
	int broken = 0; /* failures in a row: a waiting take outlives a few (EB3) */
	struct hf_sessionlock_status h;
	int rc;
	hf_etcdsession_wait_begin(st->es);
	for (;;) {
		int64_t rev = 0;
		memset(&h, 0, sizeof h);
		rc = hf_etcdsession_take(st->es, o, taken, &h, &rev);
		if (rc == HF_EHELD)
			session_holder(st, holder, &h);
		if (rc == -EIO && deadline != 0) {
			hf_etcdsession_wait_unanswered(st->es); /* EN4: it may be ours */
			if ((rc = hf_etcd_again(deadline, cancel_fd, ++broken)) == 0)
				continue;
		}
		if (rc != HF_EHELD || deadline == 0)
			break;
		rc = hf_etcdsession_watch(st->es, rev, deadline, cancel_fd); /* EB3 */
		if (rc == -EIO && (rc = hf_etcd_again(deadline, cancel_fd, ++broken)) == 0)
			continue; /* its member went: judge again at the next one */
		if (rc < 0 || rc == HF_ETIMEDOUT || rc == HF_ECANCELED)
			break;
		broken = 0;
	}
	if (rc == HF_EUNREADABLE)
		session_holder(st, holder, &h);
	else if (rc < 0 && rc != HF_EHELD && rc != HF_ETIMEDOUT && rc != HF_ECANCELED)
		session_fail(st, holder, rc); /* a wait that ended keeps the holder it saw */
	return rc;
}

static int session_release(void *p, const struct hf_sessionlock_opts *o, hf_rec **holder)
{
	struct etcd_session *st = p;
	struct hf_sessionlock_status h;
	memset(&h, 0, sizeof h);
	int rc = hf_etcdsession_release(st->es, o, &h);
	if (!hf_session_outcome(rc))
		return session_fail(st, holder, rc);
	session_holder(st, holder, hf_session_names_holder(rc) ? &h : NULL);
	return rc;
}

static int session_renew(void *p, const struct hf_sessionlock_opts *o,
			 struct hf_sessionlock_record *ret, hf_rec **holder)
{
	struct etcd_session *st = p;
	struct hf_sessionlock_status h;
	memset(&h, 0, sizeof h);
	int rc = hf_etcdsession_renew(st->es, o, ret, &h);
	if (!hf_session_outcome(rc))
		return session_fail(st, holder, rc);
	if (rc < 0)
		session_holder(st, holder, hf_session_names_holder(rc) && h.state ? &h : NULL);
	return rc;
}

static int session_status(void *p, int64_t stale_ms, hf_rec **ret, hf_rec **holder)
{
	struct etcd_session *st = p;
	struct hf_sessionlock_status s;
	memset(&s, 0, sizeof s);
	int rc = hf_etcdsession_status(st->es, stale_ms, &s);
	if (rc < 0)
		return session_fail(st, holder, rc);
	return hf_rec_out(session_mark(st, hf_rec_from_session_status(&s, st->path)), ret);
}

static hf_rec *session_rec(void *p, const struct hf_sessionlock_record *r)
{
	struct etcd_session *st = p;
	return session_mark(st, hf_rec_from_session(r, st->path));
}

static const struct hf_session_ops etcd_session_ops = {
	.open = session_open,
	.close = session_close,
	.take = session_take,
	.release = session_release,
	.renew = session_renew,
	.status = session_status,
	.rec = session_rec,
};

/* ---- the scope registry ------------------------------------------------ */

static int scope_open(const struct hf_backend_opts *b, void **ret)
{
	struct hf_etcd_cfg cfg;
	struct hf_etcdscope *es = NULL;
	int rc = cfg_of(b, &cfg);
	if (rc == 0)
		rc = hf_etcdscope_new(b->uri, &cfg, &es);
	hf_etcd_cfg_clear(&cfg);
	if (rc < 0)
		return rc;
	hf_etcdscope_set_ttl(es, b->ttl_ms);
	*ret = es;
	return 0;
}

static void scope_close(void *p)
{
	hf_etcdscope_free(p); /* joins its keep-alive */
}

/* A wait (HF_OPT_WAIT_MS) is a watch (ES5), with the file's outcomes: the
 * last holder kept on HF_ETIMEDOUT and HF_ECANCELED. */
static int scope_register(void *p, const struct hf_scope_args *a, uint64_t *gen, int *fd,
			  struct hf_scopereg_holder *h, int *h_rc)
{
	struct hf_etcdscope_wait w = { .wait_ms = a->wait_ms, .cancel_fd = a->cancel_fd };
	struct hf_scopereg_request req = {
		.name = a->name, .specs = a->specs, .nspecs = a->nspecs,
		.pid = a->pid, .socket = a->socket, .from = a->from,
		.lease_ms = a->lease_ms, .reason = a->reason,
	};
	int rc = hf_etcdscope_register(p, &req, &w, gen, h);
	*fd = -1; /* a lease, no descriptor */
	bool waited_out = (rc == HF_ETIMEDOUT || rc == HF_ECANCELED) && w.refused;
	*h_rc = waited_out ? w.refused : rc;
	return rc;
}

static int scope_release(void *p, const struct hf_scope_args *a, struct hf_scopereg_holder *h)
{
	return hf_etcdscope_release(p, a->name, a->generation, h);
}

static int scope_renew(void *p, const struct hf_scope_args *a, int64_t lease_ms,
		       struct hf_scopereg_holder *h)
{
	return hf_etcdscope_renew(p, a->name, a->generation, lease_ms, h); /* ES7 */
}

static int scope_table(void *p, const struct hf_scope_args *a, bool reap,
		       struct hf_scopereg_table **ret, struct hf_scopereg_holder *h)
{
	return reap ? hf_etcdscope_reap(p, ret, h) : hf_etcdscope_read(p, ret, h);
}

static void scope_detach(void *p)
{
	hf_etcdscope_unkeep(p); /* the lease stays, its TTL running */
}

static int scope_keep(void *p, const struct hf_scope_args *a, bool *kept)
{
	if (!hf_etcdscope_lease(p))
		return HF_ENOTHELD;
	*kept = true;
	pid_t pid = a->pid ? a->pid : hf_sys_getpid();
	uint64_t start = 0;
	if (hf_pid_start(pid, &start) < 0)
		start = 0; /* gone already (the keep revokes at once), or not in
			    * /proc (PR1: hf_etcdscope_keep judges by kill) */
	return hf_etcdscope_keep(p, pid, start);
}

static const struct hf_scope_ops etcd_scope_ops = {
	.open = scope_open,
	.close = scope_close,
	.register_ = scope_register,
	.release = scope_release,
	.renew = scope_renew,
	.table = scope_table,
	.detach = scope_detach,
	.keep = scope_keep,
};

const struct hf_backend hf_etcd_backend = {
	.name = "etcd",
	.check = check,
	.lock = &etcd_lock_ops,
	.session = &etcd_session_ops,
	.scope = &etcd_scope_ops,
};
