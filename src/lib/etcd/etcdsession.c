/*
 * etcdsession.c - the session lock kept in etcd: the same verbs, records
 * (session_record.c), outcomes and stale window as the file system's
 * (fs/session_file.c), with a key in place of the lock file and txns
 * comparing revisions in place of renames aside (hf_session with
 * HF_OPT_BACKEND).
 *
 * Artifacts
 * ---------
 *   key     HF_ETCD_SESSION_PREFIX + the session file's path made absolute
 *           lexically ("/holdfast/session/srv/tree/.session.lock"; the
 *           lock kind's rule, etcdlock.c). Nothing is made on the file
 *           system.
 *   value   the session record, byte for byte what the file system's lock
 *           file holds (session_record.c, hf_session_format: lane, owner,
 *           pid, host, started, boot_id, timens, boottime_ms, broke).
 *   lease   none. A session is not bound to a process (every `holdfast
 *           session` is a fresh one): it ends by a release or by growing
 *           older than the stale window (by its record, SL2's rule), never
 *           by a TTL.
 *
 * Steps
 * -----
 *   take (hf_etcdsession_take):
 *     ENT1 one txn: if create_revision(key) == 0 put key = our record, else
 *          range key. Succeeded: taken.
 *     ENT2 failed: judge the record read in the same txn: unreadable ->
 *          HF_EUNREADABLE; live or skew -> HF_EHELD (the holder); stale ->
 *          ENT3.                                   [etcdsession.take.judged]
 *     ENT3 one txn: if mod_revision(key) == the judged record's put our
 *          record (its "broke" naming the judged one). Succeeded: taken;
 *          failed (another breaker, a release, a renew came first): ENT1.
 *   release: range key; ours (lane, and owner when given)? one txn: if
 *     mod_revision(key) == the read one delete key; failed: again.
 *     Absent: HF_ENOTHELD; another's: HF_ENOTYOURS.
 *   renew: range key; ours?               [etcdsession.renew.read]
 *     one txn: if mod_revision(key) == the read one put the renewed
 *     record ("started" now, same lane and owner), else range key: absent
 *     or another's now -> HF_ELOST (the holder, if any); still ours (our
 *     own txn repeated, ET1) -> again.
 *   status: range key, judged as ENT2.
 *   wait (the handle's take with HF_OPT_WAIT_MS): a watch of the key from
 *     the revision after the judged one (EL4's rule).
 *
 * Invariants
 * ----------
 *   (EN1) A key is created only by a txn whose compare is
 *         create_revision == 0: two takers of a free session never both
 *         succeed.
 *   (EN2) A record is replaced or deleted only by a txn comparing
 *         mod_revision to the revision of the very record judged (stale,
 *         ours): of two breakers of one stale session exactly one wins,
 *         and a release or renew never removes a record it did not judge.
 *   (EN3) Staleness is the record's age (hf_session_judge, SL2), never an
 *         etcd revision's or a lease's.
 *   (EN4) Every take of one wait carries one owner token: after a take
 *         that went unanswered (it may have been applied), a record of
 *         this lane, token, pid and boot is that take, ours - the wait
 *         never waits for itself.
 *
 * Hazards
 * -------
 *   - Ages of another host's records are by the wall clock (skew counts).
 *   - An etcd without auth lets anyone who reaches it take or remove any
 *     session.
 *   - A try-once take whose answer was lost (-EIO) may have been applied:
 *     the session is then held under a token the caller never learnt, until
 *     released by lane (`session release --lane`) or stale. A session has
 *     no lease to take it back.
 */
#include "etcd.h"
#include "floor.h"
#include "session.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS_MAX 16

struct hf_etcdsession {
	struct hf_etcd *conn;
	char *key, *key64;
	size_t klen;
	char why[HF_ETCD_WHY_MAX];
	/* EN4: the token of the takes of one wait, and whether an earlier one
	 * went unanswered */
	char tok[HF_OWNER_MAX + 1];
	bool retry;
};

void hf_etcdsession_wait_begin(struct hf_etcdsession *es)
{
	es->tok[0] = '\0';
	es->retry = false;
}

void hf_etcdsession_wait_unanswered(struct hf_etcdsession *es)
{
	es->retry = true;
}

int hf_etcdsession_new(const char *path, struct hf_etcd_cfg *cfg, struct hf_etcdsession **ret)
{
	struct hf_etcdsession *es = calloc(1, sizeof *es);
	if (!es)
		return -ENOMEM;
	char *abs = NULL;
	int rc = hf_etcd_abs_lexical(path, &abs);
	if (rc == 0) {
		size_t n = strlen(HF_ETCD_SESSION_PREFIX) + strlen(abs) + 1;
		if ((es->key = malloc(n))) {
			snprintf(es->key, n, "%s%s", HF_ETCD_SESSION_PREFIX, abs);
			es->klen = strlen(es->key);
			es->key64 = hf_b64_encode(es->key, es->klen);
		}
		rc = es->key && es->key64 ? 0 : -ENOMEM;
	}
	free(abs);
	if (rc == 0)
		rc = hf_etcd_open(cfg, &es->conn);
	if (rc < 0) {
		hf_etcdsession_free(es);
		return rc;
	}
	*ret = es;
	return 0;
}

void hf_etcdsession_free(struct hf_etcdsession *es)
{
	if (!es)
		return;
	hf_etcd_close(es->conn);
	free(es->key);
	free(es->key64);
	free(es);
}

const char *hf_etcdsession_key(const struct hf_etcdsession *es)
{
	return es->key;
}

const char *hf_etcdsession_why(const struct hf_etcdsession *es)
{
	return es->why;
}

/* ---- requests ------------------------------------------------------------- */

static int call(struct hf_etcdsession *es, const char *api, json_t *req, json_t **ret)
{
	return hf_etcd_request(es->conn, api, req, ret, es->why, sizeof es->why);
}

/* What a read found: the record judged (st), its mod_revision (0: no key). */
struct found {
	struct hf_sessionlock_status st;
	int64_t mod;
};

/* A kv of the gateway (NULL: none) into *f, judged with stale_ms. */
static void kv_found(const json_t *kv, int64_t stale_ms, struct found *f)
{
	memset(f, 0, sizeof *f);
	if (!kv)
		return; /* HF_SESSION_FREE */
	hf_etcd_i64(kv, "mod_revision", &f->mod);
	const char *v64 = json_string_value(json_object_get(kv, "value"));
	char *v = NULL;
	size_t vn = 0;
	if (!v64 || hf_b64_decode(v64, &v, &vn) < 0) {
		f->st.state = HF_SESSION_UNREADABLE;
		snprintf(f->st.reason, sizeof f->st.reason, "the key's value is not base64");
		return;
	}
	if (vn > HF_SESSION_FILE_MAX ||
	    hf_session_parse(v, vn, &f->st.rec, f->st.reason, sizeof f->st.reason) < 0) {
		if (vn > HF_SESSION_FILE_MAX)
			snprintf(f->st.reason, sizeof f->st.reason, "larger than %d bytes",
				 HF_SESSION_FILE_MAX);
		memset(&f->st.rec, 0, sizeof f->st.rec);
		f->st.state = HF_SESSION_UNREADABLE;
	} else {
		f->st.state = hf_session_judge(&f->st.rec, hf_sys_now_ms(),
					       stale_ms > 0 ? stale_ms : HF_SESSION_STALE_MS_DEFAULT,
					       &f->st.age_ms); /* EN3 */
	}
	free(v);
}

/* The first response's range of a txn answer (a failed compare's read). */
static const json_t *txn_kv(const json_t *a)
{
	json_t *r = json_object_get(json_array_get(json_object_get(a, "responses"), 0),
				    "response_range");
	return json_array_get(json_object_get(r, "kvs"), 0);
}

static int range(struct hf_etcdsession *es, int64_t stale_ms, struct found *f, int64_t *rev)
{
	json_t *a = NULL;
	int rc = call(es, "/v3/kv/range", json_pack("{s:s}", "key", es->key64), &a);
	if (rc < 0)
		return rc;
	if (rev)
		hf_etcd_i64(json_object_get(a, "header"), "revision", rev);
	kv_found(json_array_get(json_object_get(a, "kvs"), 0), stale_ms, f);
	json_decref(a);
	return 0;
}

/* One txn: if the compare (target CREATE or MOD == rev) holds, put value64
 * (NULL: delete the key), else range the key into *f. 1 succeeded, 0 not
 * (*f, *rev the header's revision), -errno. */
static int txn(struct hf_etcdsession *es, const char *target, int64_t want, const char *value64,
	       int64_t stale_ms, struct found *f, int64_t *rev)
{
	char ws[24];
	snprintf(ws, sizeof ws, "%lld", (long long)want);
	json_t *op = value64 ? json_pack("{s:{s:s, s:s}}", "request_put", "key", es->key64,
					 "value", value64)
			     : json_pack("{s:{s:s}}", "request_delete_range", "key", es->key64);
	json_t *req = op ? json_pack("{s:[{s:s, s:s, s:s, s:s}], s:[o], s:[{s:{s:s}}]}", "compare",
				     "key", es->key64, "target", target, "result", "EQUAL",
				     !strcmp(target, "CREATE") ? "create_revision" : "mod_revision",
				     ws, "success", op, "failure", "request_range", "key",
				     es->key64)
			 : NULL;
	json_t *a = NULL;
	int rc = call(es, "/v3/kv/txn", req, &a);
	if (rc < 0)
		return rc;
	int64_t r = 0;
	hf_etcd_i64(json_object_get(a, "header"), "revision", &r);
	if (rev)
		*rev = r;
	if (json_is_true(json_object_get(a, "succeeded"))) {
		json_decref(a);
		return 1;
	}
	kv_found(txn_kv(a), stale_ms, f);
	json_decref(a);
	return 0;
}

static char *record64(const struct hf_sessionlock_record *r)
{
	char buf[HF_SESSION_FILE_MAX];
	int len = hf_session_format(r, buf, sizeof buf);
	return len > 0 ? hf_b64_encode(buf, (size_t)len) : NULL;
}

static bool same_take(const struct hf_sessionlock_record *a, const struct hf_sessionlock_record *b)
{
	return !a->legacy && !strcmp(a->lane, b->lane) && !strcmp(a->owner, b->owner) &&
	       a->started_ms == b->started_ms && a->pid == b->pid;
}

/* EN4: a take of this wait that went unanswered (another started_ms) */
static bool earlier_take(const struct hf_sessionlock_record *a,
			 const struct hf_sessionlock_record *b)
{
	return !a->legacy && !strcmp(a->lane, b->lane) && !strcmp(a->owner, b->owner) &&
	       a->pid == b->pid && !strcmp(a->boot_id, b->boot_id);
}

static bool ours(const struct found *f, const struct hf_sessionlock_opts *o)
{
	return f->st.state != HF_SESSION_FREE && f->st.state != HF_SESSION_UNREADABLE &&
	       !f->st.rec.legacy && !strcmp(f->st.rec.lane, o->lane) &&
	       (!o->owner || !strcmp(f->st.rec.owner, o->owner));
}

static void fresh_record(struct hf_sessionlock_record *r, const char *lane, const char *owner)
{
	memset(r, 0, sizeof *r);
	snprintf(r->lane, sizeof r->lane, "%s", lane);
	snprintf(r->owner, sizeof r->owner, "%s", owner);
	hf_session_stamp(r);
}

/* ---- verbs ---------------------------------------------------------------- */

int hf_etcdsession_take(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			struct hf_sessionlock_record *ret_taken,
			struct hf_sessionlock_status *reterr_holder, int64_t *ret_rev)
{
	es->why[0] = '\0';
	if (!o->lane || !*o->lane)
		return -EINVAL;
	int rc = 0;
	if (!es->tok[0]) /* EN4: one token for every take of a wait */
		rc = o->owner ? (snprintf(es->tok, sizeof es->tok, "%s", o->owner), 0)
			      : hf_random_hex(es->tok, 16);
	if (rc < 0) {
		es->tok[0] = '\0';
		return rc;
	}
	struct hf_sessionlock_record r;
	fresh_record(&r, o->lane, es->tok);
	char *v64 = record64(&r);
	if (!v64)
		return -ENOMEM;
	struct found f;
	for (int round = 0; round < ROUNDS_MAX; round++) {
		int64_t rev = 0;
		rc = txn(es, "CREATE", 0, v64, o->stale_ms, &f, &rev); /* ENT1, EN1 */
		if (rc != 0)
			goto out;
		if (f.st.state == HF_SESSION_FREE)
			continue; /* gone between the compare and the read */
		if (same_take(&f.st.rec, &r) || (es->retry && earlier_take(&f.st.rec, &r))) {
			rc = 1; /* our own put: a repeated txn's (ET1), or EN4's */
			r = f.st.rec;
			goto out;
		}
		if (f.st.state == HF_SESSION_UNREADABLE || f.st.state != HF_SESSION_STALE) {
			*reterr_holder = f.st; /* SL2, SL6: refused, untouched */
			if (ret_rev)
				*ret_rev = rev;
			rc = f.st.state == HF_SESSION_UNREADABLE ? HF_EUNREADABLE : HF_EHELD;
			goto out;
		}
		hf_sys_point(HF_PT_ETCDSESSION_TAKE_JUDGED); /* ENT2 */
		struct hf_sessionlock_record b = r;
		b.has_broke = 1;
		snprintf(b.broke.lane, sizeof b.broke.lane, "%s", f.st.rec.lane);
		snprintf(b.broke.owner, sizeof b.broke.owner, "%s", f.st.rec.owner);
		b.broke.started_ms = f.st.rec.started_ms;
		b.broke.age_s = f.st.age_ms / 1000;
		b.broke.legacy = f.st.rec.legacy;
		char *b64 = record64(&b);
		if (!b64) {
			rc = -ENOMEM;
			goto out;
		}
		struct found g;
		rc = txn(es, "MOD", f.mod, b64, o->stale_ms, &g, NULL); /* ENT3, EN2 */
		free(b64);
		if (rc == 1)
			r = b;
		if (rc != 0)
			goto out;
		/* another breaker, a release or a renew was first: ENT1 again */
	}
	rc = -EAGAIN;
out:
	free(v64);
	if (rc == 1) {
		if (ret_taken)
			*ret_taken = r;
		rc = 0;
	}
	return rc;
}

/* A release's or renew's judgement of what it read: 0 when it is o's, else
 * HF_ENOTHELD (free), HF_EUNREADABLE or HF_ENOTYOURS (*h: the holder). */
static int not_ours(const struct found *f, const struct hf_sessionlock_opts *o,
		    struct hf_sessionlock_status *h)
{
	if (f->st.state == HF_SESSION_FREE)
		return HF_ENOTHELD;
	if (f->st.state == HF_SESSION_UNREADABLE || !ours(f, o)) {
		*h = f->st;
		return f->st.state == HF_SESSION_UNREADABLE ? HF_EUNREADABLE : HF_ENOTYOURS;
	}
	return 0;
}

/* A release's or renew's read of o's lane: the key judged into *f. */
static int read_lane(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
		     struct found *f)
{
	es->why[0] = '\0';
	if (!o->lane || !*o->lane)
		return -EINVAL;
	return range(es, o->stale_ms, f, NULL);
}

int hf_etcdsession_release(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			   struct hf_sessionlock_status *reterr_holder)
{
	struct found f;
	int rc = read_lane(es, o, &f);
	for (int round = 0; rc == 0 && round < ROUNDS_MAX; round++) {
		if ((rc = not_ours(&f, o, reterr_holder)) < 0)
			return rc;
		rc = txn(es, "MOD", f.mod, NULL, o->stale_ms, &f, NULL); /* EN2 */
		if (rc == 1)
			return 0;
	}
	return rc < 0 ? rc : -EAGAIN;
}

int hf_etcdsession_renew(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			 struct hf_sessionlock_record *ret,
			 struct hf_sessionlock_status *reterr_holder)
{
	struct found f;
	int rc = read_lane(es, o, &f);
	if (rc < 0)
		return rc;
	if ((rc = not_ours(&f, o, reterr_holder)) < 0)
		return rc;
	hf_sys_point(HF_PT_ETCDSESSION_RENEW_READ);
	for (int round = 0; round < ROUNDS_MAX; round++) {
		struct hf_sessionlock_record r;
		fresh_record(&r, f.st.rec.lane, f.st.rec.owner);
		char *v64 = record64(&r);
		if (!v64)
			return -ENOMEM;
		struct hf_sessionlock_opts mine = *o;
		mine.owner = r.owner;
		rc = txn(es, "MOD", f.mod, v64, o->stale_ms, &f, NULL); /* EN2 */
		free(v64);
		if (rc == 1) {
			if (ret)
				*ret = r;
			return 0;
		}
		if (rc < 0)
			return rc;
		if (!ours(&f, &mine)) { /* released, or broken and taken meanwhile */
			*reterr_holder = f.st;
			return HF_ELOST;
		}
	}
	return -EAGAIN;
}

int hf_etcdsession_status(struct hf_etcdsession *es, int64_t stale_ms,
			  struct hf_sessionlock_status *ret)
{
	es->why[0] = '\0';
	struct found f;
	int rc = range(es, stale_ms, &f, NULL);
	if (rc == 0)
		*ret = f.st;
	return rc;
}

int hf_etcdsession_watch(struct hf_etcdsession *es, int64_t rev, int64_t deadline_ns,
			 int cancel_fd)
{
	return hf_etcd_watch(es->conn, es->key, es->klen, rev + 1, deadline_ns, cancel_fd,
			     es->why, sizeof es->why);
}
