/*
 * etcd.h - the etcd backend's declarations: the client over the JSON
 * gateway (etcd.c), the lock kept in etcd and its fence epoch (etcdlock.c),
 * the listing (etcdlist.c) and the session lock kept in etcd
 * (etcdsession.c). The lease is in etcdlease.h, the scope registry in
 * etcdscope.h. Not part of the public API; each protocol, its invariants
 * and hazards are in its .c file's header.
 */
#ifndef HF_ETCD_H
#define HF_ETCD_H

#include "lock.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hf_lock_opts;
struct hf_lock_info;

#define HF_ETCD_ENDPOINTS_MAX 16
#define HF_ETCD_WHY_MAX 256
#define HF_ETCD_TTL_MS_DEFAULT (10LL * 1000)     /* a lease's TTL             */
#define HF_ETCD_CONNECT_MS_DEFAULT (2LL * 1000)  /* connecting to one endpoint */
#define HF_ETCD_REQUEST_MS_DEFAULT (5LL * 1000)  /* one whole request         */
#define HF_ETCD_KEY_PREFIX "/holdfast/lock"

/* Where and how to reach etcd: what a backend URI and the lock's options
 * say. Strings are the config's (heap), freed by hf_etcd_cfg_clear. */
struct hf_etcd_cfg {
	char *endpoints[HF_ETCD_ENDPOINTS_MAX]; /* "http://h:p" or "https://h:p" */
	size_t n;
	char *user;          /* NULL: no auth                                   */
	char *password_file; /* the user's password, first line                 */
	char *ca_file;       /* https: the CA bundle (NULL: the system's)       */
	int64_t connect_ms, request_ms;
};

/* Parse "etcd://HOST:PORT[,HOST:PORT...]" (http; "etcds://" for https; an
 * item may carry its own "http://" or "https://") into cfg (cleared
 * first). 0; -EINVAL not such a URI (cfg left empty); -ENOMEM. */
int hf_etcd_cfg_parse(const char *uri, struct hf_etcd_cfg *cfg);
/* Replace *slot with a copy of s (NULL: none). 0 or -ENOMEM. */
int hf_etcd_cfg_str(char **slot, const char *s);
void hf_etcd_cfg_clear(struct hf_etcd_cfg *cfg);
/* A handle's config: the backend's endpoints (hf_etcd_cfg_parse), the
 * user, password file and CA file given (NULL: none), and a request
 * timeout (0: the default; a connect timeout never longer). 0, or -errno
 * with cfg cleared. Every handle kind makes its client this way. */
static inline int hf_etcd_cfg_make(const char *backend, const char *user, const char *pwfile,
				   const char *ca, int64_t timeout_ms, struct hf_etcd_cfg *cfg)
{
	int rc = hf_etcd_cfg_parse(backend, cfg);
	if (rc == 0)
		rc = hf_etcd_cfg_str(&cfg->user, user);
	if (rc == 0)
		rc = hf_etcd_cfg_str(&cfg->password_file, pwfile);
	if (rc == 0)
		rc = hf_etcd_cfg_str(&cfg->ca_file, ca);
	if (rc == 0 && timeout_ms) {
		cfg->request_ms = timeout_ms;
		if (cfg->connect_ms > timeout_ms)
			cfg->connect_ms = timeout_ms;
	}
	if (rc < 0)
		hf_etcd_cfg_clear(cfg);
	return rc;
}

/* A connection (one curl handle, reused: keep-alive) to the endpoints of
 * cfg (copied). No I/O. */
struct hf_etcd;
int hf_etcd_open(const struct hf_etcd_cfg *cfg, struct hf_etcd **ret);
void hf_etcd_close(struct hf_etcd *e);
/* In a child forked while e was open: forget the parent's connection (its
 * socket is the parent's too) without touching it; the next call connects
 * anew. */
void hf_etcd_forget(struct hf_etcd *e);
/* A waiting operation's request or watch failed (-EIO) for the broken-th
 * time in a row: 0 to try again after a pause (100 ms times broken, within
 * deadline_ns, CLOCK_MONOTONIC, < 0: none), or -EIO (more than
 * HF_ETCD_RETRIES, or the deadline passed: the failure stands),
 * HF_ECANCELED / -EBADF (cancel_fd >= 0 readable / not open). */
#define HF_ETCD_RETRIES 3
int hf_etcd_again(int64_t deadline_ns, int cancel_fd, int broken);
/* The endpoint e sends its next request to first (the one that answered
 * last), as an index into its configuration's list. */
size_t hf_etcd_endpoint(const struct hf_etcd *e);
/* Send the next request to endpoint i (mod their number) first. */
void hf_etcd_prefer(struct hf_etcd *e, size_t i);
/* Bound each connect and each request of e to at most ms (a keep-alive
 * must fail over to another member within its lease's TTL). */
void hf_etcd_cap_ms(struct hf_etcd *e, int64_t ms);

/* POST req (stolen) to api ("/v3/kv/txn") at the first endpoint that
 * answers, authenticating first when cfg has a user. 0 and *ret (the
 * answer, the caller's). Failures, with why (n bytes; never a password or
 * an auth token) saying what happened: -EIO (no endpoint could be reached,
 * or a request timed out: not retried elsewhere once sent), -EACCES
 * (authentication refused or permission denied), -ENOENT (etcd's "not
 * found", e.g. a lease), -EPROTO (an error answer or one that is not JSON),
 * -ENOMEM. */
int hf_etcd_call(struct hf_etcd *e, const char *api, json_t *req, json_t **ret, char *why,
		 size_t n);
/* The same with ret NULL allowed (the answer dropped) and *ret set only on
 * success: what every protocol on etcd calls. */
int hf_etcd_request(struct hf_etcd *e, const char *api, json_t *req, json_t **ret, char *why,
		    size_t n);
/* Watch key (klen bytes) from revision from_rev on: 0 when an event on it
 * arrives (a delete, a put: the caller looks again), HF_ETIMEDOUT at
 * deadline_ns (CLOCK_MONOTONIC; < 0: none), HF_ECANCELED when cancel_fd
 * (>= 0) is readable, -EBADF when it is not open, -EIO (why) when the
 * stream could not be opened or broke. */
int hf_etcd_watch(struct hf_etcd *e, const char *key, size_t klen, int64_t from_rev,
		  int64_t deadline_ns, int cancel_fd, char *why, size_t n);
/* The same for every key in [key, end) (elen bytes; end NULL: key alone):
 * 0 on an event of any of them. */
int hf_etcd_watch_range(struct hf_etcd *e, const char *key, size_t klen, const char *end,
			size_t elen, int64_t from_rev, int64_t deadline_ns, int cancel_fd,
			char *why, size_t n);

/* path made absolute lexically (".", ".." and "//" resolved without the
 * file system; symbolic links kept) into *ret (malloc'd): 0; -EINVAL (no
 * working directory, or "/"), -ENOMEM. */
int hf_etcd_abs_lexical(const char *path, char **ret);

/* base64 of p (n bytes), malloc'd; NULL: no memory. */
char *hf_b64_encode(const void *p, size_t n);
/* Decode s: 0, *ret (malloc'd, NUL-terminated) and *ret_n; -EINVAL. */
int hf_b64_decode(const char *s, char **ret, size_t *ret_n);
/* An int64 field of the gateway (a JSON string of digits, or a number):
 * 0 and *ret; -ENOENT absent (proto3 omits zero: the caller decides what
 * absent means); -EINVAL malformed. */
int hf_etcd_i64(const json_t *obj, const char *field, int64_t *ret);

/* ---- the lock on etcd (etcdlock.c) --------------------------------------- */
struct hf_etcdlock;

/* A lock for path (made absolute lexically: the key is
 * HF_ETCD_KEY_PREFIX + that path) on the etcd of cfg (taken: the caller's
 * cfg is left empty). 0; -EINVAL (no absolute path can be made), -ENOMEM. */
int hf_etcdlock_new(const char *path, struct hf_etcd_cfg *cfg, struct hf_etcdlock **ret);
void hf_etcdlock_free(struct hf_etcdlock *el);
struct hf_etcd_cfg *hf_etcdlock_cfg(struct hf_etcdlock *el);
/* A new connection after the cfg changed. 0 or -ENOMEM. */
int hf_etcdlock_reopen(struct hf_etcdlock *el);
void hf_etcdlock_set_ttl(struct hf_etcdlock *el, int64_t ttl_ms);
/* The key and the reason of the last failure ("" when none). */
const char *hf_etcdlock_key(const struct hf_etcdlock *el);
const char *hf_etcdlock_why(const struct hf_etcdlock *el);
/* The lease of what el holds (0: none) and its TTL. */
int64_t hf_etcdlock_lease(const struct hf_etcdlock *el);
int64_t hf_etcdlock_ttl_ms(const struct hf_etcdlock *el);

/* As hf_dirlock_acquire, on etcd: 0 and *ret (owner, fence = the epoch +
 * the key's create_revision, EL10); the lease is kept alive by a thread of el's until
 * release, detach or free. Failures: HF_EHELD, HF_ETIMEDOUT, HF_ECANCELED
 * (the holder in *reterr_holder), -ESRCH, -EDEADLK, -EBADF, -EOVERFLOW (the
 * fence would pass INT64_MAX: nothing held), and the client's (-EIO, -EACCES, -EPROTO: hf_etcdlock_why). */
int hf_etcdlock_acquire(struct hf_etcdlock *el, const struct hf_lock_opts *o,
			struct hf_lock_info *ret, struct hf_lock_info *reterr_holder);
/* Release the acquisition of token (held by el: by its lease; adopted: the
 * record's). 0; HF_ENOTHELD; HF_ENOTYOURS (*reterr_holder); the client's. */
int hf_etcdlock_release(struct hf_etcdlock *el, const char *token,
			struct hf_lock_info *reterr_holder);
/* The lock's state: 0 and *ret (state HF_LOCK_FREE when no key); the
 * client's failures. */
int hf_etcdlock_status(struct hf_etcdlock *el, struct hf_lock_info *ret);
/* Has el's keep-alive seen its lease end (expired, revoked elsewhere)? */
bool hf_etcdlock_lost(struct hf_etcdlock *el);
/* Stop keeping the lease alive here (detach): the lease stays, with its
 * TTL running. */
void hf_etcdlock_unkeep(struct hf_etcdlock *el);
/* Keep the lease of the acquisition el holds or detached alive for its
 * owner (o's pid and start time, and its chain, OW5): until the owner and
 * its chain have all ended (then the lease is revoked: 0), the lease ends
 * elsewhere (a release: HF_ENOTHELD), or it could not be renewed within its
 * TTL (HF_ELOST). */
struct hf_owner;
int hf_etcdlock_keep(struct hf_etcdlock *el, const struct hf_owner *o);
/* Renew the acquisition of token (fence: the handle's own, 0 for an adopted
 * token) as hf_dirlock_renew does, on etcd (R1-R3, EL6, EL7): 0 and *ret
 * (the renewed record, the same fence and lease); HF_ENOTHELD (no key),
 * HF_ENOTYOURS (another's: *reterr_holder), HF_ELOST (another acquisition,
 * its owner dead, or changed meanwhile: *reterr_holder the holder now, if
 * any); the client's. */
int hf_etcdlock_renew(struct hf_etcdlock *el, const char *token, uint64_t fence,
		      int64_t max_hold_ms, struct hf_lock_info *ret,
		      struct hf_lock_info *reterr_holder);
/* ---- the fence epoch (etcdlock.c, EL10) ----------------------------------- */
#define HF_ETCD_EPOCH_KEY "/holdfast/epoch"
#define HF_ETCD_EPOCH_MAX (INT64_C(1) << 62) /* an epoch's largest value     */
/* The cluster's fence epoch as read in a txn: the key's value (decimal
 * microseconds of the wall clock at its creation) and its create_revision;
 * both 0 when there is no epoch key. */
struct hf_etcd_epoch {
	int64_t value, rev;
};
/* The epoch in a txn's response_range of HF_ETCD_EPOCH_KEY (range NULL or
 * without kvs: none, {0, 0}): 0 and *ep; -EPROTO (why: the key holds no
 * epoch of the form its writer writes). */
int hf_etcd_epoch_parse(const json_t *range, struct hf_etcd_epoch *ep, char *why, size_t n);
/* The fence of a lock key with create_revision cr under epoch ep (EL10):
 * ep->value + cr for a key made after the epoch key, cr for one made
 * before it (an older holdfast's acquisition, or no epoch yet). 0 and
 * *ret; -EOVERFLOW (past INT64_MAX). */
int hf_etcd_fence(const struct hf_etcd_epoch *ep, int64_t cr, uint64_t *ret);

/* A kv of the gateway (a lock's key, read with epoch ep in one txn) into
 * *i (owner, fence, state, age) and *lease: 0; HF_EUNREADABLE (the value
 * is no owner record, or its fence would pass INT64_MAX: *i held, with a
 * reason). */
int hf_etcdlock_kv_info(const json_t *kv, const struct hf_etcd_epoch *ep,
			struct hf_lock_info *i, int64_t *lease);

/* ---- the holders of a lock on etcd (etcdlock.c, EL11-EL14) --------------- */
/* One key of a lock: K (an exclusive acquisition's) or a shared or slot
 * acquisition's K "//" TOKEN, judged. */
struct hf_etcdlock_key {
	struct hf_lock_info i;  /* its record (unreadable: held, a reason, exclusive) */
	char *key;              /* the key (malloc'd)                                  */
	int64_t cr, lease;      /* its create_revision and lease                       */
	const json_t *kv;       /* the gateway's kv, while the kvs judged live         */
	bool own;               /* K itself                                            */
	bool admitted;          /* a holder: no key before it that it waits for (EL13) */
};
struct hf_rec;
/* The keys kvs (the gateway's, of [K, K "/0") minus the siblings, read with
 * epoch ep in one txn) judged, in create_revision order, each admitted or
 * not (EL13): 0, *ret and *n (hf_etcdlock_keys_free); -ENOMEM, -EPROTO. */
int hf_etcdlock_keys(const json_t *kvs, const struct hf_etcd_epoch *ep,
		     struct hf_etcdlock_key **ret, size_t *n);
void hf_etcdlock_keys_free(struct hf_etcdlock_key *k, size_t n);
/* Does the acquisition of key x wait for key b, made before it, with
 * slots_before slot keys before x (EL13, EL14)? */
bool hf_etcdlock_waits_for(const struct hf_etcdlock_key *x, const struct hf_etcdlock_key *b,
			   int slots_before);
/* What a lock's status adds: {"holders": [rec(ctx, k) of every waiting
 * key, with "waiting": true, then of every admitted key (EL15)], "mode"
 * and, for slots, "slots" (of the first holder) when held}; NULL: no
 * memory. */
json_t *hf_etcdlock_all(const struct hf_etcdlock_key *k, size_t n,
			struct hf_rec *(*rec)(void *ctx, const struct hf_etcdlock_key *k), void *ctx);
/* As hf_etcdlock_status, with every key of the lock (*keys, *n:
 * hf_etcdlock_keys_free); *ret is the first holder (an exclusive one when
 * one holds). */
int hf_etcdlock_status_all(struct hf_etcdlock *el, struct hf_lock_info *ret,
			   struct hf_etcdlock_key **keys, size_t *n);

/* ---- listing (etcdlist.c) ------------------------------------------------ */
/* The locks and sessions on the etcd of cfg whose path is dir (absolute,
 * lexical) or below it, one range read each: 0 and *ret (a JSON array,
 * each item a record's fields plus "kind", "backend", "key"); the client's
 * failures (why). */
int hf_etcd_list(const struct hf_etcd_cfg *cfg, const char *dir, json_t **ret, char *why,
		 size_t n);

/* ---- the session lock on etcd (etcdsession.c) --------------------------- */
#define HF_ETCD_SESSION_PREFIX "/holdfast/session"
struct hf_etcdsession;
struct hf_sessionlock_opts;
struct hf_sessionlock_record;
struct hf_sessionlock_status;

/* A session for the session file path (its key: HF_ETCD_SESSION_PREFIX +
 * path made absolute lexically) on the etcd of cfg (copied). 0; -EINVAL,
 * -ENOMEM. */
int hf_etcdsession_new(const char *path, struct hf_etcd_cfg *cfg, struct hf_etcdsession **ret);
void hf_etcdsession_free(struct hf_etcdsession *es);
const char *hf_etcdsession_key(const struct hf_etcdsession *es);
const char *hf_etcdsession_why(const struct hf_etcdsession *es);
/* As hf_sessionlock_take/_release/_renew/_status, on etcd (ENT1-ENT3); take's
 * *ret_rev (may be NULL) is the revision it judged a live holder at (for
 * hf_etcdsession_watch). Failures add the client's (-EIO, -EACCES,
 * -EPROTO: hf_etcdsession_why). */
int hf_etcdsession_take(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			struct hf_sessionlock_record *ret_taken,
			struct hf_sessionlock_status *reterr_holder, int64_t *ret_rev);
int hf_etcdsession_release(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			   struct hf_sessionlock_status *reterr_holder);
int hf_etcdsession_renew(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			 struct hf_sessionlock_record *ret,
			 struct hf_sessionlock_status *reterr_holder);
int hf_etcdsession_status(struct hf_etcdsession *es, int64_t stale_ms,
			  struct hf_sessionlock_status *ret);
/* A wait's first take is next (a new owner token), or the last take went
 * unanswered and the next one may find it applied (EN4). */
void hf_etcdsession_wait_begin(struct hf_etcdsession *es);
void hf_etcdsession_wait_unanswered(struct hf_etcdsession *es);
/* Watch the key after revision rev (hf_etcd_watch's outcomes). */
int hf_etcdsession_watch(struct hf_etcdsession *es, int64_t rev, int64_t deadline_ns,
			 int cancel_fd);

#endif
