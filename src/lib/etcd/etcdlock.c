/*
 * etcdlock.c - the lock kept in etcd: the same verbs, records, fences and
 * outcomes as the file system's directory lock (fs/dirlock.c), with a key in
 * place of the directory and a lease (etcdlease.c) in place of the kernel
 * lock (hf_lock with HF_OPT_BACKEND); the fence epoch (EL10).
 *
 * Artifacts
 * ---------
 *   key     HF_ETCD_KEY_PREFIX + the lock's path made absolute lexically
 *           ("/holdfast/lock/srv/build.lock"; ".", ".." and "//" resolved
 *           without the file system, symbolic links kept): hosts that
 *           share a tree mount it at the same path, or name the lock by the
 *           same absolute path. Nothing is made on the file system.
 *   value   the owner record as JSON (owner.c: token, pid, pid_start,
 *           boot_id, host, acquired, pidns, timens, boottime_ms, comm) and
 *           max_hold_ms, ttl_ms. No fence: the fence is made of the
 *           key's create_revision and the epoch (EL10).
 *   lease   one per acquisition, TTL ttl_ms (default 10 s, rounded up to a
 *           second), attached to the key: the key lives while the lease is
 *           kept alive. Kept alive every TTL/3 by a thread of the handle
 *           (a program holding the lock), or by `holdfast lock acquire`'s
 *           keeper (hf_etcdlock_keep) for a shell script.
 *   epoch   HF_ETCD_EPOCH_KEY ("/holdfast/epoch"), one per etcd, no lease:
 *           decimal microseconds of the wall clock when the first
 *           acquisition of this holdfast made it (at least the store's
 *           revision then + 1; at most HF_ETCD_EPOCH_MAX), put by a txn
 *           whose compare is create_revision == 0, never rewritten nor
 *           deleted by holdfast.
 *   fence   epoch + the key's create_revision (etcd's store-wide revision
 *           at the put that created it); for a key made before the epoch
 *           key (an older holdfast's acquisition) its create_revision alone
 *           (EL10). About 1.8e15, far below INT64_MAX.
 *   holder keys  K "//" TOKEN (K: the key above; TOKEN the acquisition's
 *           owner token), one per shared or slot acquisition (HF_OPT_MODE),
 *           its value the owner record with "mode" ("shared", or "slots"
 *           and "slots": N) as the file system's record says it (EL12), on
 *           the acquisition's own lease - made when it starts to wait, so
 *           it keeps its place (EL13). K itself stays an exclusive
 *           acquisition's alone. No lock's key holds "//" (a path made
 *           lexically has none), so [K "//", K "/0") holds exactly the
 *           lock's holder keys (EL11).
 *
 * Steps of an acquisition (hf_etcdlock_acquire)
 * ---------------------------------------------
 *   1. The owner record for o->pid (-ESRCH: no such process).
 *   2. Grant a lease.
 *   3. One txn: if create_revision(key) == 0 (absent) and the epoch key
 *      exists, put key = value with the lease and range the epoch key, else
 *      range key and the epoch key. Succeeded: the fence is the epoch + the
 *      txn's header.revision (the put's revision, the key's
 *      create_revision: EL10); the keep-alive starts. Done. Failed with no
 *      epoch key (the first acquisition of this etcd, or of a cluster
 *      rebuilt from nothing): make it (a txn: put it if absent; another's
 *      made first is as good) and go to 3 (at most HF_ETCD_RETRIES times:
 *      one that keeps vanishing is -EPROTO).
 *   4. Failed: the holder is the kv read in the same txn, judged as
 *      dirlock.c judges a record: its owner proven dead on its own kernel
 *      (owner.c), or older than max(max-hold, stale): revoke the holder's
 *      lease (its key goes with it) and go to 3.
 *   5. Try once: revoke ours, HF_EHELD. A wait without a deadline for a
 *      lock the process it is for holds already: -EDEADLK (DL13's rule).
 *   6. Wait: watch key from the revision after the txn's (so a delete
 *      between the txn and the watch is delivered); an event, the deadline
 *      (HF_ETIMEDOUT) or the cancel descriptor (HF_ECANCELED) ends it. Our
 *      lease is granted again when half its TTL went by waiting. Go to 3.
 *      A watch whose stream broke (its member went away), or a grant or
 *      txn that failed (an election outlasting the request's timeout, a
 *      member that vanished), goes to 2 again after a pause, at most
 *      HF_ETCD_RETRIES times in a row and only within the deadline (EL9):
 *      another endpoint answers, or the client's error stands.
 *
 * Modes (EL11-EL14; etcd's RWMutex recipe - every acquirer a key of its
 * own on its lease, ordered by create_revision, waiting by watch for the
 * keys before it that it cannot share with - with K kept for exclusive):
 *   Exclusive: steps 1-6 above; step 3's txn also counts the holder keys
 *      at its put. None: held at once (today's one txn, fence and all).
 *      Some: K is put and stays while step 7 waits - every later shared
 *      or slot acquirer then finds K before its own key and queues behind
 *      it (EL13: a waiting writer is not starved by new readers).
 *   S3 (shared, slots, after steps 1-2): one txn: if our key K "//" TOKEN
 *      is absent and the epoch key exists, put it with our lease and range
 *      K, the holder keys and the epoch key (the lock as of our put), else
 *      range our key and the epoch key. Our key there on our lease already
 *      is an earlier txn's put (ET1); on another lease (a lease this
 *      acquisition let go), that lease is revoked and S3 runs again; no
 *      epoch: made as in step 3. Our fence: epoch + our key's
 *      create_revision (EL14).
 *   7. (every mode, once our key is put) Judge the keys in create_revision
 *      order (EL13): ours is admitted when no key before it is one it
 *      waits for - an exclusive acquisition waits for every earlier key, a
 *      shared one for earlier exclusive and slot keys, a slot one for
 *      earlier exclusive and shared keys and, while N or more earlier slot
 *      keys remain, for those (N: its own HF_OPT_SLOTS). A key it waits for
 *      whose owner is proven dead, or an admitted one older than its window
 *      (step 4's verdicts), has its lease revoked; then judge again. Try
 *      once: revoke ours (our key goes), HF_EHELD naming the key waited for.
 *      Else watch [K, K "/0") from the revision after the one judged (K and
 *      every holder key: a release, an expiry, a reap is an event), keeping
 *      our lease alive every TTL/3 meanwhile (its key keeps its place);
 *      an event: range them all again (one txn with the epoch) and judge.
 *      Our key gone (our lease expired, or revoked by a judge that proved
 *      us dead): again from step 2, at the end of the queue. The deadline,
 *      the cancel descriptor, -EDEADLK and EL9's failures as in step 6.
 *   8. Admitted after a wait: our record is put again with "acquired" now
 *      (guarded by our key's create_revision, on our lease), so its window
 *      (max-hold) runs from the entry, not from the queueing.
 *
 * Release: revoke the lease (the key goes with it) - one request; one that
 * got no answer once more at the next member (a revoke is idempotent: "no
 * such lease" then means ours is gone). An adopted token: range K, the
 * holder keys and the epoch key (one txn), take the key whose record has
 * the token, revoke its lease. Status and check: the same one txn (EL10);
 * the state is the first key's in create_revision order (an exclusive
 * holder's when one holds: EL13), and "holders" every key's record (its
 * "mode", "key" and "lease"): the waiting ones first, with "waiting":
 * true, then the admitted (EL15); reads never make the epoch (a key
 * without one is an older holdfast's: its fence is its create_revision).
 *
 * Renew (hf_etcdlock_renew; the handle that acquired, or an adopted token:
 * dirlock.c's DR1-DR5 with a txn in place of the replace):
 *   R1. Range K, the holder keys and the epoch (one txn); ours is the key
 *       whose record has our token (K, or a shared or slot holder's:
 *       R2-R3 work on that key, its "mode" kept): no key HF_ENOTHELD; none
 *       with our token (or no owner record) HF_ENOTYOURS; the handle's
 *       own fence given and the key's fence (EL10) another: HF_ELOST; its
 *       owner proven dead HF_ELOST (the next acquirer reaps it; a leaked
 *       but live owner may renew).
 *   R2. The same record - owner, token, ttl_ms - with "acquired" (and
 *       boottime_ms, on the owner's kernel) now and max_hold_ms as asked
 *       (0: the recorded one).                   [etcdlock.renew.judged]
 *   R3. One txn: if create_revision == the one read, mod_revision == the
 *       one read and the epoch key's create_revision == the one read (the
 *       fence keeps its form, EL10), put the record with the key's own lease (EL6, EL7),
 *       else range. Failed: HF_ELOST (the holder now, if any) unless the
 *       key holds our renewed bytes already (a repeated txn, ET1). A lease
 *       gone meanwhile (etcd: "lease not found") is HF_ELOST too.
 *
 * Invariants
 * ----------
 *   (EL1) At most one key per lock, created only by a txn whose compare
 *         is create_revision == 0: two holders never both succeed.
 *   (EL2) Every acquisition's fence is strictly greater than every earlier
 *         one's of the same lock: etcd's revision grows with every write of
 *         the store, and the fence is the epoch (constant while its key
 *         lives) + the revision of the put that made the key - across
 *         releases, expiries, reaps and restarts of members; across a
 *         rebuild of the cluster by EL10.
 *   (EL3) A holder's key is deleted only by the revoke of its own lease
 *         (release, the keeper seeing its owner die, a reaper that proved
 *         it dead) or by the lease's expiry: a revoke names a lease, never
 *         the key, so a late revoke cannot delete a newer holder's key.
 *   (EL4) A wait is a watch, never a poll: it wakes on an event of the key
 *         after the revision it was judged at, its deadline or its cancel
 *         descriptor.
 *   The lease's keep-alive (LE1) and a holder's belief in its lease (LE2)
 *         are the lease module's (etcdlease.c), which every lease on etcd a
 *         handle holds shares.
 *   (EL6) A renewal writes only the acquisition it judged: its put is
 *         guarded by create_revision == the fence and mod_revision == the
 *         revision it read, so it never writes over a newer acquisition's
 *         key, nor over a record changed since (another renewal), nor makes
 *         a deleted key again (an absent key's create_revision is 0).
 *   (EL7) A renewal keeps the acquisition's fence and lease: the put goes to
 *         the existing key (create_revision unchanged) and names the key's
 *         own lease - a put without it would detach the key from its lease
 *         and leave it forever, whatever became of its owner.
 *   (EL9) A waiting acquisition outlives a failed request only within its
 *         deadline and HF_ETCD_RETRIES failures in a row: a txn that may have
 *         been applied is judged again, never assumed lost, and step 3
 *         recognises our own put (ET1); a try-once acquisition fails at
 *         once with the request's error.
 *   (EL10) Fences never repeat, even across a cluster rebuilt from an empty
 *          data dir (its revisions restart at 1): a fence is epoch +
 *          create_revision, the epoch read in the same txn as the key it
 *          dates (never cached, so a client that outlives a rebuild reads
 *          the new epoch), and the put of an acquisition is guarded by the
 *          epoch key's existence. The epoch is made once per store, by a
 *          txn that puts it only if absent, at the wall clock in
 *          microseconds: so the new store's first fence is above every
 *          fence of the old one as long as the old store made fewer
 *          revisions than microseconds passed between its epoch and the new
 *          one's (etcd commits far fewer than 10^6 writes a second) and the
 *          wall clock did not step back between the two (fence.c FC2's argument),
 *          and at least the store's revision + 1: above every fence an
 *          older holdfast handed out (a create_revision), so fences grow
 *          across the upgrade too. A key made before the epoch key keeps
 *          its create_revision as its fence (its holder's "TOKEN FENCE"
 *          still checks); every other is epoch + create_revision. A fence
 *          past INT64_MAX is -EOVERFLOW (the put's lease revoked: nothing
 *          held), never a wrap; an epoch key of another form is -EPROTO,
 *          never a number taken from junk (fence.c, FC3).
 *   (EL11) One key per acquisition: an exclusive one's is K (EL1), a shared
 *          or slot one's K "//" TOKEN, put by a txn whose compare is its
 *          create_revision == 0 and deleted only with its lease (EL3). A
 *          status, a release, a renewal and a wait read K and the holder
 *          keys in one txn, so they see one revision of the whole lock.
 *   (EL12) A holder key's record says its mode as the file system's does
 *          ("mode": "shared"; "slots" with "slots": 1 to HF_SLOTS_MAX); a
 *          mode this version does not know, or a record that cannot be
 *          read, is judged an exclusive holder (unreadable, held, never
 *          shared with). K's key is exclusive whatever its record says.
 *   (EL13) Admission is by create_revision order: an acquisition is
 *          admitted only when no key made before its own is one it waits
 *          for (step 7), and keys are only ever made after every key that
 *          exists (a new create_revision is the store's next), so the keys
 *          before ours can only go, never come: a verdict "admitted" stays
 *          true, and two acquisitions that cannot share are never both
 *          admitted (the later one's key is after the earlier one's, which
 *          it waits for). The first key is always admitted. Shared and
 *          slot acquisitions that find K before their own key wait for it,
 *          K's owner admitted or still waiting: a waiting exclusive
 *          acquisition is not starved by new shared ones, and among
 *          shared, slot and K keys the order is FIFO. A waiting key's
 *          owner is judged dead or alive, never by its age.
 *   (EL14) Fences: every holder's fence is epoch + its own key's
 *          create_revision (EL10), so every fence is distinct and EL2
 *          holds for every key. An exclusive holder's fence is above every
 *          fence handed out before it: every holder admitted before it has
 *          a key made before K (a key made after K waits for K, EL13), and
 *          none is admitted while it holds. Slots: when a slot acquisition
 *          is admitted fewer than its N slot keys are before it, and those
 *          after it are admitted only with fewer than their N before
 *          them: at most N slot holders that each asked for N.
 *   (EL15) A status and a listing name every acquisition that has a key:
 *          the admitted ones (EL13) as holders, and every one still
 *          waiting (its key put, step 3 or S3, not admitted) first, with
 *          "waiting": true - as the file system's status names the
 *          acquisition standing at L (fs_backend.c FB4), so a writer
 *          waiting for readers is seen (`lock status`, `list`) on either
 *          backend. The lock's own fields stay its first key's, which is
 *          always admitted (EL13).
 *
 * Hazards
 * -------
 *   - A pid proves death only on its own kernel: a holder on another host
 *     that died is free only when its lease expires (its TTL); a host that
 *     is cut off keeps believing it holds the lock until its keep-alive
 *     fails - a resource must check the fence (Kleppmann; etcd#11457).
 *   - The lease's (etcdlease.c): a killed keeper or a paused holder loses
 *     the lock after the TTL while its owner may live on.
 *   - Age on another host is by the wall clock (skew counts).
 *   - A lease grant whose answer was lost and that EL9 grants again leaves
 *     the first lease, with no key, until its TTL: harmless, not reused.
 *   - A wall clock stepped backwards before a cluster is rebuilt (or the
 *     epoch key deleted) can make the new epoch, and so its fences, lower
 *     than old fences: a resource that remembers a greater fence refuses
 *     every new holder until the clock passes it (safe, not live). Never
 *     delete /holdfast/epoch while a lock is held: the held keys' fences
 *     change (their holders' checks then fail, nothing repeats).
 *   - Modes: a reader's SIGKILLed or cut-off host frees its place only at
 *     its lease's expiry (its TTL), as an exclusive holder's does. An
 *     exclusive acquisition waiting at K (step 7) is judged by its age by
 *     another exclusive acquirer, which sees K alone: one that waits longer
 *     than max(max-hold, stale) for readers can be reaped as leaked and
 *     start again. A status can show a holder admitted a moment before its
 *     own acquisition sees it (its watch's event in flight). A wait's
 *     watch of [K, K "/0") also wakes on the keys of sibling locks named K
 *     plus a byte below '/' ("a.lock" for "a"): a spurious look, no harm.
 *     An older holdfast ignores holder keys: upgrade every host before
 *     using shared or slot modes (it would take K beside readers, and list
 *     K "//" TOKEN as a lock below K).
 *   - Mixed versions: an older holdfast acquiring after the epoch exists
 *     reports create_revision as its fence, this one epoch + it: upgrade
 *     every host of an etcd together. A user whose role cannot read and
 *     write /holdfast/epoch cannot acquire (-EACCES, etcd's reason).
 */
#include "etcd.h"
#include "etcdlease.h"
#include "floor.h"
#include "holds.h"
#include "lock.h"
#include "rec.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SKEW_MS 1000

struct hf_etcdlock {
	struct hf_etcd_cfg cfg;
	struct hf_etcd *conn;
	char *key;
	size_t klen;
	char *key64;
	char *hold64, *hend64;  /* the holders' keys, [K "//", K "/0") (EL11) */
	char *hend;             /* K "/0": the end of a wait's watch (EL4)   */
	char *epoch64;          /* HF_ETCD_EPOCH_KEY in base64 (EL10)        */
	struct hf_etcdlease lease; /* what the handle holds, its keep-alive (LE1) */
	char why[HF_ETCD_WHY_MAX];
};

int hf_etcd_abs_lexical(const char *path, char **ret)
{
	char cwd[PATH_MAX] = "";
	if (path[0] != '/' && hf_sys_getcwd(cwd, sizeof cwd) < 0)
		return -EINVAL;
	size_t cap = strlen(cwd) + strlen(path) + 3;
	char *in = malloc(cap), *out = malloc(cap);
	if (!in || !out) {
		free(in);
		free(out);
		return -ENOMEM;
	}
	snprintf(in, cap, "%s/%s", cwd, path);
	size_t o = 0;
	for (char *s = in; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (!n)
			break;
		if (n == 1 && s[0] == '.') {
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (o > 0 && out[--o] != '/')
				;
		} else {
			out[o++] = '/';
			memcpy(out + o, s, n);
			o += n;
		}
		s += n;
	}
	free(in);
	if (!o) { /* "/" is no lock name */
		free(out);
		return -EINVAL;
	}
	out[o] = '\0';
	*ret = out;
	return 0;
}

/* EL11: the range of the shared and slot holders' keys, K "//" TOKEN:
 * [K "//", K "/0") in base64 ('0' follows '/'). */
static void hold_range(struct hf_etcdlock *el)
{
	char *k = malloc(el->klen + 3);
	if (!k)
		return;
	memcpy(k, el->key, el->klen);
	memcpy(k + el->klen, "//", 2);
	el->hold64 = hf_b64_encode(k, el->klen + 2);
	k[el->klen + 1] = '0';
	el->hend64 = hf_b64_encode(k, el->klen + 2);
	k[el->klen + 2] = '\0';
	el->hend = k;
}

int hf_etcdlock_new(const char *path, struct hf_etcd_cfg *cfg, struct hf_etcdlock **ret)
{
	struct hf_etcdlock *el = calloc(1, sizeof *el);
	if (!el)
		return -ENOMEM;
	char *abs = NULL;
	int rc = hf_etcd_abs_lexical(path, &abs);
	if (rc == 0) {
		size_t n = strlen(HF_ETCD_KEY_PREFIX) + strlen(abs) + 1;
		el->key = malloc(n);
		if (el->key) {
			snprintf(el->key, n, "%s%s", HF_ETCD_KEY_PREFIX, abs);
			el->klen = strlen(el->key);
			el->key64 = hf_b64_encode(el->key, el->klen);
			hold_range(el);
		}
		el->epoch64 = hf_b64_encode(HF_ETCD_EPOCH_KEY, strlen(HF_ETCD_EPOCH_KEY));
		rc = el->key && el->key64 && el->hold64 && el->hend64 && el->hend && el->epoch64
			     ? 0
			     : -ENOMEM;
	}
	free(abs);
	if (rc == 0)
		rc = hf_etcd_open(cfg, &el->conn);
	if (rc < 0) {
		free(el->key);
		free(el->key64);
		free(el->hold64);
		free(el->hend64);
		free(el->hend);
		free(el->epoch64);
		free(el);
		return rc;
	}
	el->cfg = *cfg; /* taken */
	memset(cfg, 0, sizeof *cfg);
	hf_etcdlease_init(&el->lease, &el->cfg);
	*ret = el;
	return 0;
}

struct hf_etcd_cfg *hf_etcdlock_cfg(struct hf_etcdlock *el)
{
	return &el->cfg;
}

int hf_etcdlock_reopen(struct hf_etcdlock *el)
{
	struct hf_etcd *c;
	int rc = hf_etcd_open(&el->cfg, &c);
	if (rc < 0)
		return rc;
	hf_etcd_close(el->conn);
	el->conn = c;
	return 0;
}

void hf_etcdlock_set_ttl(struct hf_etcdlock *el, int64_t ttl_ms)
{
	hf_etcdlease_set_ttl(&el->lease, ttl_ms);
}

const char *hf_etcdlock_key(const struct hf_etcdlock *el)
{
	return el->key;
}

const char *hf_etcdlock_why(const struct hf_etcdlock *el)
{
	return el->why;
}

int64_t hf_etcdlock_lease(const struct hf_etcdlock *el)
{
	return el->lease.id;
}

int64_t hf_etcdlock_ttl_ms(const struct hf_etcdlock *el)
{
	return hf_etcdlease_ttl_ms(&el->lease);
}

bool hf_etcdlock_lost(struct hf_etcdlock *el)
{
	return hf_etcdlease_lost(&el->lease); /* LE2 */
}

/* ---- requests ---------------------------------------------------------------- */

static int call(struct hf_etcdlock *el, struct hf_etcd *c, const char *api, json_t *req,
		json_t **ret)
{
	return hf_etcd_request(c, api, req, ret, el->why, sizeof el->why);
}

/* A kv of the gateway into *i (owner, fence, state, age) and *lease. */
int hf_etcdlock_kv_info(const json_t *kv, const struct hf_etcd_epoch *ep,
			struct hf_lock_info *i, int64_t *lease)
{
	memset(i, 0, sizeof *i);
	i->live_fd = -1;
	*lease = 0;
	hf_etcd_i64(kv, "lease", lease);
	int64_t cr = 0;
	hf_etcd_i64(kv, "create_revision", &cr);
	bool fence_ok = hf_etcd_fence(ep, cr, &i->fence) == 0; /* EL10 */
	const char *v64 = json_string_value(json_object_get(kv, "value"));
	char *v = NULL;
	size_t vn = 0;
	json_t *j = v64 && hf_b64_decode(v64, &v, &vn) == 0 ? json_loadb(v, vn, 0, NULL) : NULL;
	free(v);
	int rc = j ? hf_owner_from_json(j, "acquired", &i->owner) : -EINVAL;
	/* EL12: the mode as the file system's record says it; one this
	 * version does not know is no holder it could share with */
	const json_t *md = json_object_get(j, "mode"), *sl = json_object_get(j, "slots");
	const char *mv = json_string_value(md);
	if (rc == 0 && md) {
		if (mv && !strcmp(mv, "shared")) {
			i->mode = HF_MODE_SHARED;
		} else if (mv && !strcmp(mv, "slots") && json_is_integer(sl) &&
			   json_integer_value(sl) >= 1 && json_integer_value(sl) <= HF_SLOTS_MAX) {
			i->mode = HF_MODE_SLOTS;
			i->slots = (int)json_integer_value(sl);
		} else if (!mv || strcmp(mv, "exclusive")) {
			rc = -EINVAL;
		}
	}
	if (rc < 0 || !fence_ok) {
		i->mode = HF_MODE_EXCLUSIVE;
		i->slots = 0;
		json_decref(j);
		memset(&i->owner, 0, sizeof i->owner);
		snprintf(i->reason, sizeof i->reason,
			 rc < 0 ? "the key's value is not an owner record (or of a mode "
				  "this version does not know)"
				: "its fence (the epoch + its create_revision) would pass 2^63-1");
		i->state = HF_LOCK_HELD; /* a live lease holds it: not ours to judge */
		return HF_EUNREADABLE;
	}
	json_int_t mh = json_integer_value(json_object_get(j, "max_hold_ms"));
	json_int_t ttl = json_integer_value(json_object_get(j, "ttl_ms"));
	json_decref(j);
	i->max_hold_ms = mh > 0 ? mh : 0;
	i->ttl_ms = ttl > 0 ? ttl : 0;
	i->age_ms = hf_owner_age_ms(&i->owner, hf_sys_now_ms());
	int64_t window = i->max_hold_ms ? i->max_hold_ms : HF_LOCK_MAX_HOLD_MS_DEFAULT;
	if (window < HF_LOCK_STALE_MS_DEFAULT)
		window = HF_LOCK_STALE_MS_DEFAULT;
	if (i->owner.lease_ms > 0)
		i->state = HF_LOCK_HELD; /* OW6: its key's lease alone ends it */
	else if (hf_owner_liveness(&i->owner) == HF_DEAD)
		i->state = HF_LOCK_DEAD;
	else if (i->age_ms < -SKEW_MS)
		i->state = HF_LOCK_SKEW;
	else if (i->age_ms > window)
		i->state = HF_LOCK_LEAKED;
	else
		i->state = HF_LOCK_HELD;
	return 0;
}

/* ---- the fence epoch (EL10) ------------------------------------------------------ */

int hf_etcd_epoch_parse(const json_t *range, struct hf_etcd_epoch *ep, char *why, size_t n)
{
	ep->value = ep->rev = 0;
	json_t *kv = json_array_get(json_object_get(range, "kvs"), 0);
	if (!kv)
		return 0; /* no epoch key */
	const char *v64 = json_string_value(json_object_get(kv, "value"));
	char *v = NULL;
	size_t vn = 0;
	int64_t value = 0, cr = 0;
	bool ok = v64 && hf_b64_decode(v64, &v, &vn) == 0 && vn >= 1 && vn <= 19 &&
		  strspn(v, "0123456789") == vn && v[0] != '0';
	for (size_t k = 0; ok && k < vn; k++)
		value = value * 10 + (v[k] - '0'); /* 19 digits: below 10^19, no wrap past 2^63 */
	free(v);
	ok = ok && value >= 1 && value <= HF_ETCD_EPOCH_MAX &&
	     hf_etcd_i64(kv, "create_revision", &cr) == 0 && cr > 0;
	if (!ok) { /* FC3's rule (fence.c): a number only in the form its writer writes */
		snprintf(why, n,
			 "etcd: the key " HF_ETCD_EPOCH_KEY " holds no fence epoch (decimal "
			 "microseconds, 1 to 2^62): fences cannot be made; delete it only with "
			 "every lock of this etcd free (docs/etcd.md of the source tree)");
		return -EPROTO;
	}
	ep->value = value;
	ep->rev = cr;
	return 0;
}

int hf_etcd_fence(const struct hf_etcd_epoch *ep, int64_t cr, uint64_t *ret)
{
	if (cr <= 0 || !ep || !ep->value || cr < ep->rev) {
		*ret = cr > 0 ? (uint64_t)cr : 0; /* EL10: made before the epoch */
		return 0;
	}
	if (cr > INT64_MAX - ep->value)
		return -EOVERFLOW; /* EL10: never wrap to a fence handed out before */
	*ret = (uint64_t)(ep->value + cr);
	return 0;
}

/* A request_range op of key (base64), for a txn. */
static json_t *op_range(const char *k64)
{
	return json_pack("{s:{s:s}}", "request_range", "key", k64);
}

/* The i-th response_range of txn answer a. */
static json_t *txn_range(const json_t *a, size_t i)
{
	return json_object_get(json_array_get(json_object_get(a, "responses"), i), "response_range");
}

/* The epoch in the i-th response_range of a (el->why on -EPROTO). */
static int txn_epoch(struct hf_etcdlock *el, const json_t *a, size_t i, struct hf_etcd_epoch *ep)
{
	return hf_etcd_epoch_parse(txn_range(a, i), ep, el->why, sizeof el->why);
}

/* EL10: make the epoch key if there is none - one txn putting the wall
 * clock in microseconds (and above rev, the store's revision seen last,
 * so above every fence an older holdfast handed out: its create_revisions)
 * only if the key is absent. 0 (ours, or another's made first); the
 * client's failures; -EOVERFLOW (the clock past HF_ETCD_EPOCH_MAX). */
static int epoch_make(struct hf_etcdlock *el, int64_t rev)
{
	int64_t v = hf_sys_now_us();
	if (v <= rev)
		v = rev + 1; /* a clock before 1970, or set far back */
	if (v < 1)
		v = 1;
	if (v > HF_ETCD_EPOCH_MAX) {
		snprintf(el->why, sizeof el->why, "etcd: the wall clock is past the largest epoch");
		return -EOVERFLOW;
	}
	char s[24];
	int n = snprintf(s, sizeof s, "%lld", (long long)v);
	char *v64 = hf_b64_encode(s, (size_t)n);
	if (!v64)
		return -ENOMEM;
	json_t *req = json_pack("{s:[{s:s, s:s, s:s, s:s}], s:[{s:{s:s, s:s}}]}", "compare", "key",
				el->epoch64, "target", "CREATE", "result", "EQUAL", "create_revision",
				"0", "success", "request_put", "key", el->epoch64, "value", v64);
	free(v64);
	return call(el, el->conn, "/v3/kv/txn", req, NULL); /* failed: another's first */
}

/* ---- the holders: the lock's key and the shared and slot holders' keys (EL11-EL14) ---- */

/* A range op of [k64, end64) (base64), for a txn. */
static json_t *op_range_end(const char *k64, const char *end64)
{
	return json_pack("{s:{s:s, s:s}}", "request_range", "key", k64, "range_end", end64);
}

/* Append the kvs of range r to arr (referenced). */
static void kvs_add(json_t *arr, const json_t *r)
{
	json_t *kvs = json_object_get(r, "kvs");
	for (size_t i = 0; i < json_array_size(kvs); i++)
		json_array_append(arr, json_array_get(kvs, i));
}

/* The kvs of the ranges i and j of the txn answer a, as one array (a is
 * consumed): 0 and *kvs, or -ENOMEM. */
static int kvs_two(json_t *a, int i, int j, json_t **kvs)
{
	json_t *arr = json_array();
	if (arr) {
		kvs_add(arr, txn_range(a, i));
		kvs_add(arr, txn_range(a, j));
	}
	json_decref(a);
	if (!arr)
		return -ENOMEM;
	*kvs = arr;
	return 0;
}

/* One txn reading every key of the lock - K and the holders' [K "//",
 * K "/0") - and the epoch (EL10, EL11): 0, *kvs (a new array, the
 * caller's), *ep, *rev (the header's revision; may be NULL). */
static int look_all(struct hf_etcdlock *el, json_t **kvs, struct hf_etcd_epoch *ep, int64_t *rev)
{
	json_t *req = json_pack("{s:[o, o, o]}", "success", op_range(el->key64),
				op_range_end(el->hold64, el->hend64), op_range(el->epoch64));
	json_t *a = NULL;
	int rc = call(el, el->conn, "/v3/kv/txn", req, &a);
	if (rc < 0)
		return rc;
	if ((rc = txn_epoch(el, a, 2, ep)) < 0) {
		json_decref(a);
		return rc;
	}
	if (rev) {
		*rev = 0;
		hf_etcd_i64(json_object_get(a, "header"), "revision", rev);
	}
	return kvs_two(a, 0, 1, kvs);
}

static int key_order(const void *a, const void *b)
{
	const struct hf_etcdlock_key *x = a, *y = b;
	return x->cr < y->cr ? -1 : x->cr > y->cr;
}

bool hf_etcdlock_waits_for(const struct hf_etcdlock_key *x, const struct hf_etcdlock_key *b,
			   int slots_before)
{
	int m = x->i.mode, bm = b->i.mode;
	if (m == HF_MODE_EXCLUSIVE || bm == HF_MODE_EXCLUSIVE)
		return true; /* exclusive beside nobody */
	if (m != bm)
		return true; /* shared and slots never share (as on the file system) */
	return m == HF_MODE_SLOTS && slots_before >= x->i.slots; /* EL14 */
}

int hf_etcdlock_keys(const json_t *kvs, const struct hf_etcd_epoch *ep,
		     struct hf_etcdlock_key **ret, size_t *ret_n)
{
	size_t n = json_array_size(kvs);
	struct hf_etcdlock_key *k = calloc(n ? n : 1, sizeof *k);
	if (!k)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		const json_t *kv = json_array_get(kvs, j);
		int urc = hf_etcdlock_kv_info(kv, ep, &k[j].i, &k[j].lease);
		k[j].kv = kv;
		hf_etcd_i64(kv, "create_revision", &k[j].cr);
		const char *k64 = json_string_value(json_object_get(kv, "key"));
		size_t kl = 0;
		if (!k64 || hf_b64_decode(k64, &k[j].key, &kl) < 0) {
			hf_etcdlock_keys_free(k, n);
			return -EPROTO;
		}
		/* K itself, or a holder's key K "//" TOKEN (EL11): the path
		 * after the prefix, made lexically, never holds "//" */
		k[j].own = !strstr(k[j].key + strlen(HF_ETCD_KEY_PREFIX), "//");
		if (k[j].own || urc == HF_EUNREADABLE) {
			k[j].i.mode = HF_MODE_EXCLUSIVE; /* EL12: K is exclusive's alone */
			k[j].i.slots = 0;
		}
	}
	qsort(k, n, sizeof *k, key_order);
	/* EL13: admitted when no key before it is one it waits for */
	int slots = 0;
	for (size_t j = 0; j < n; j++) {
		k[j].admitted = true;
		for (size_t b = 0; b < j && k[j].admitted; b++)
			k[j].admitted = !hf_etcdlock_waits_for(&k[j], &k[b], slots);
		slots += k[j].i.mode == HF_MODE_SLOTS;
	}
	assert((n == 0 || k[0].admitted) && "EL13"); /* the first key always holds */
	*ret = k;
	*ret_n = n;
	return 0;
}

void hf_etcdlock_keys_free(struct hf_etcdlock_key *k, size_t n)
{
	for (size_t j = 0; k && j < n; j++)
		free(k[j].key);
	free(k);
}

json_t *hf_etcdlock_all(const struct hf_etcdlock_key *k, size_t n,
			hf_rec *(*rec)(void *ctx, const struct hf_etcdlock_key *k), void *ctx)
{
	json_t *holders = json_array();
	json_t *all = holders ? json_pack("{s:o}", "holders", holders) : NULL;
	if (!all)
		return NULL;
	/* EL15: the waiting keys first, "waiting": true, then the admitted,
	 * each in create_revision order (so the admitted by fence) */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t j = 0; j < n; j++) {
			if (k[j].admitted != (pass == 1))
				continue;
			hf_rec *r = rec(ctx, &k[j]);
			json_t *o = r ? hf_rec_object(r) : NULL;
			if (o && !k[j].admitted &&
			    json_object_set_new(o, "waiting", json_true()) < 0)
				o = NULL;
			if (!o || json_array_append(holders, o) < 0) {
				hf_rec_free(r);
				json_decref(all);
				return NULL;
			}
			hf_rec_free(r);
		}
	}
	if (n) { /* the admitted share one mode (EL13): the first key's */
		json_object_set_new(all, "mode", json_string(hf_lock_mode_name(k[0].i.mode)));
		if (k[0].i.mode == HF_MODE_SLOTS)
			json_object_set_new(all, "slots", json_integer(k[0].i.slots));
	}
	return all;
}

/* Every key of the lock now, judged (EL13): 0, *kvs (the caller's; the
 * keys' kv point into it), *k and *n (hf_etcdlock_keys_free), *ep. */
static int keys_now(struct hf_etcdlock *el, json_t **kvs, struct hf_etcdlock_key **k, size_t *n,
		    struct hf_etcd_epoch *ep)
{
	int rc = look_all(el, kvs, ep, NULL);
	if (rc < 0)
		return rc;
	if ((rc = hf_etcdlock_keys(*kvs, ep, k, n)) < 0) {
		json_decref(*kvs);
		*kvs = NULL;
	}
	return rc;
}

/* The key of token's acquisition among k (n), or NULL. */
static const struct hf_etcdlock_key *key_of(const struct hf_etcdlock_key *k, size_t n,
					    const char *token)
{
	for (size_t j = 0; j < n; j++)
		if (k[j].i.owner.token[0] && !strcmp(k[j].i.owner.token, token))
			return &k[j];
	return NULL;
}

int hf_etcdlock_status_all(struct hf_etcdlock *el, struct hf_lock_info *ret,
			   struct hf_etcdlock_key **keys, size_t *n)
{
	el->why[0] = '\0';
	json_t *kvs = NULL;
	struct hf_etcd_epoch ep;
	struct hf_etcdlock_key *k = NULL;
	int rc = keys_now(el, &kvs, &k, n, &ep);
	if (rc < 0)
		return rc;
	json_decref(kvs);
	for (size_t j = 0; j < *n; j++)
		k[j].kv = NULL;
	memset(ret, 0, sizeof *ret);
	ret->live_fd = -1;
	if (*n)
		*ret = k[0].i; /* EL13: the first key holds; an exclusive one alone */
	*keys = k;
	return 0;
}

void hf_etcdlock_unkeep(struct hf_etcdlock *el)
{
	hf_etcdlease_unkeep(&el->lease, el->conn);
}

void hf_etcdlock_free(struct hf_etcdlock *el)
{
	if (!el)
		return;
	hf_etcdlease_clear(&el->lease, el->conn); /* joins the keep-alive (LE1) */
	hf_etcd_close(el->conn);
	hf_etcd_cfg_clear(&el->cfg);
	free(el->key);
	free(el->key64);
	free(el->hold64);
	free(el->hend64);
	free(el->hend);
	free(el->epoch64);
	free(el);
}

/* ---- verbs ---------------------------------------------------------------------- */

/* Step 3: 1 and *fence when the key is ours now (*holders: whether the
 * holders' range held a key at the put, EL13); 0 and the holder in *h (and
 * *lease_h, *cr_h its key's create_revision, *rev); 2 (and *rev) when
 * there is no epoch key yet (EL10: make it, then again); -errno. */
static int try_put(struct hf_etcdlock *el, const char *v64, int64_t lease, uint64_t *fence,
		   bool *holders, struct hf_lock_info *h, int64_t *lease_h, int64_t *cr_h,
		   int64_t *rev)
{
	char ls[24];
	snprintf(ls, sizeof ls, "%lld", (long long)lease);
	/* EL1: the key absent; EL10: the epoch present, read in the same txn;
	 * EL13: the holders' keys as of the put (count only) */
	json_t *req = json_pack(
		"{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}], s:[{s:{s:s, s:s, s:s}}, o, "
		"{s:{s:s, s:s, s:b}}], s:[o, o]}",
		"compare", "key", el->key64, "target", "CREATE", "result", "EQUAL",
		"create_revision", "0", "key", el->epoch64, "target", "CREATE", "result",
		"GREATER", "create_revision", "0", "success", "request_put", "key", el->key64,
		"value", v64, "lease", ls, op_range(el->epoch64), "request_range", "key",
		el->hold64, "range_end", el->hend64, "count_only", 1, "failure",
		op_range(el->key64), op_range(el->epoch64));
	json_t *a = NULL;
	int rc = call(el, el->conn, "/v3/kv/txn", req, &a);
	if (rc < 0)
		return rc;
	*rev = 0;
	hf_etcd_i64(json_object_get(a, "header"), "revision", rev);
	bool put = json_is_true(json_object_get(a, "succeeded"));
	struct hf_etcd_epoch ep;
	if ((rc = txn_epoch(el, a, 1, &ep)) < 0) {
		json_decref(a);
		return rc;
	}
	if (put) {
		int64_t count = 0;
		hf_etcd_i64(txn_range(a, 2), "count", &count);
		*holders = count > 0;
		json_decref(a);
		if (*rev <= 0 || !ep.value) {
			snprintf(el->why, sizeof el->why,
				 "etcd: a txn answered without a revision or the epoch");
			return -EPROTO;
		}
		assert(*rev > ep.rev && ep.value > 0 && "EL2, EL10");
		/* EL2: the put's revision is create_revision; EL10: + the epoch */
		if ((rc = hf_etcd_fence(&ep, *rev, fence)) < 0) {
			snprintf(el->why, sizeof el->why,
				 "etcd: the fence (epoch %lld + revision %lld) would pass 2^63-1",
				 (long long)ep.value, (long long)*rev);
			return rc; /* the caller revokes our lease: the key goes */
		}
		return 1;
	}
	if (!ep.value) {
		json_decref(a);
		return 2; /* EL10: no epoch yet */
	}
	json_t *kv = json_array_get(json_object_get(txn_range(a, 0), "kvs"), 0);
	memset(h, 0, sizeof *h);
	h->live_fd = -1;
	*lease_h = *cr_h = 0;
	rc = kv ? hf_etcdlock_kv_info(kv, &ep, h, lease_h) : 0;
	hf_etcd_i64(kv, "create_revision", cr_h);
	if (!kv)
		h->state = HF_LOCK_FREE; /* gone between the compare and the read: again */
	json_decref(a);
	return rc == HF_EUNREADABLE ? 0 : rc;
}

/* Step S3 (shared, slots): put our own key K "//" TOKEN (own64) with our
 * lease, if absent and the epoch is there, reading every key of the lock
 * in the same txn. 1, *cr (its create_revision), *kvs (the lock's keys as
 * of the put: the caller's; NULL when an earlier txn put it, ET1), *ep (the
 * epoch read with it) and *rev;
 * 2 no epoch key yet (*rev); 3 our key is there on another lease (the
 * caller revokes it: *lease_h); -errno. */
static int put_holder(struct hf_etcdlock *el, const char *own64, const char *v64, int64_t lease,
		      int64_t *cr, json_t **kvs, struct hf_etcd_epoch *ep, int64_t *rev,
		      int64_t *lease_h)
{
	char ls[24];
	snprintf(ls, sizeof ls, "%lld", (long long)lease);
	json_t *req = json_pack(
		"{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}], s:[{s:{s:s, s:s, s:s}}, o, o, o],"
		" s:[o, o]}",
		"compare", "key", own64, "target", "CREATE", "result", "EQUAL", "create_revision",
		"0", "key", el->epoch64, "target", "CREATE", "result", "GREATER",
		"create_revision", "0", "success", "request_put", "key", own64, "value", v64,
		"lease", ls, op_range(el->key64), op_range_end(el->hold64, el->hend64),
		op_range(el->epoch64), "failure", op_range(own64), op_range(el->epoch64));
	json_t *a = NULL;
	int rc = call(el, el->conn, "/v3/kv/txn", req, &a);
	if (rc < 0)
		return rc;
	*rev = 0;
	*kvs = NULL;
	hf_etcd_i64(json_object_get(a, "header"), "revision", rev);
	bool put = json_is_true(json_object_get(a, "succeeded"));
	if ((rc = txn_epoch(el, a, put ? 3 : 1, ep)) < 0) {
		json_decref(a);
		return rc;
	}
	if (put) {
		if ((rc = kvs_two(a, 1, 2, kvs)) < 0)
			return rc;
		*cr = *rev; /* EL2: the put's revision */
		assert(*cr > ep->rev && ep->value > 0 && "EL2, EL10");
		return 1;
	}
	if (!ep->value) {
		json_decref(a);
		return 2;
	}
	json_t *kv = json_array_get(json_object_get(txn_range(a, 0), "kvs"), 0);
	*lease_h = 0;
	hf_etcd_i64(kv, "lease", lease_h);
	hf_etcd_i64(kv, "create_revision", cr);
	json_decref(a);
	return *lease_h == lease ? 1 : 3; /* ours by an earlier txn (ET1), or a stale lease's */
}

/* EL9: go on after the broken-th failure in a row of a waiting
 * acquisition's request or watch (hf_etcd_again), or not. */
static int again(const struct hf_lock_opts *o, int64_t deadline, int broken)
{
	if (o->wait_ms == 0)
		return -EIO;
	return hf_etcd_again(deadline, o->has_cancel ? o->cancel_fd : -1, broken);
}

/* Step 7's verdict on the keys k (n, judged) for our key, create_revision
 * cr: 1 admitted; 0 our key is gone (its lease ended); 2 a key we wait
 * for was reaped (look again); 3 wait (*h the holder waited for: an
 * admitted one first); -EDEADLK. */
static int judge_mine(struct hf_etcdlock *el, const struct hf_lock_opts *o,
		      const struct hf_owner *me, int64_t cr, const struct hf_etcdlock_key *k,
		      size_t n, struct hf_lock_info *h)
{
	size_t j = 0;
	while (j < n && k[j].cr != cr)
		j++;
	if (j == n)
		return 0;
	assert(!strcmp(k[j].i.owner.token, me->token) && "EL11"); /* one key per acquisition */
	if (k[j].admitted)
		return 1;
	int slots = 0, reaped = 0;
	for (size_t b = 0; b < j; b++)
		slots += k[b].i.mode == HF_MODE_SLOTS;
	const struct hf_etcdlock_key *w = NULL;
	for (size_t b = 0; b < j; b++) {
		if (!hf_etcdlock_waits_for(&k[j], &k[b], slots))
			continue;
		const struct hf_lock_info *x = &k[b].i;
		/* step 4 for a key we wait for (EL3, EL13): a dead owner's, or a
		 * holder's past its window; an acquisition still waiting is not
		 * judged by its age (its wait counts in it) */
		if (k[b].lease && (x->state == HF_LOCK_DEAD ||
				   (k[b].admitted && x->state == HF_LOCK_LEAKED))) {
			hf_etcdlease_revoke(el->conn, k[b].lease, el->why, sizeof el->why);
			reaped++;
			continue;
		}
		if (o->wait_ms < 0 && o->pid && o->pid != hf_sys_getpid() && x->owner.pid == me->pid &&
		    x->owner.pid_start == me->pid_start && !strcmp(x->owner.boot_id, me->boot_id)) {
			*h = *x;
			return -EDEADLK; /* step 5: it would wait for itself */
		}
		if (hf_lock_self_wait(x, o->wait_ms, 0)) {
			*h = *x;
			return -EDEADLK; /* step 5, HL5 */
		}
		if (!w || (k[b].admitted && !w->admitted))
			w = &k[b];
	}
	if (reaped)
		return 2;
	assert(w && "EL13"); /* not admitted: a key before ours that it waits for */
	*h = w->i;
	return 3;
}

/* Step 7 (EL13): our key (create_revision cr, on lease) is put; wait until
 * no key made before it that it cannot share with is left. kvs: the
 * lock's keys as of rev (taken; NULL: look first); ep: the epoch they were
 * read with. The lease is kept alive meanwhile (every TTL/3, *alive: the
 * send of the last grant or keep-alive answered, LE2): the key keeps its
 * place. 1 admitted (*waited: after a wait); 0 our key is gone (its lease
 * ended: again from step 2); HF_EHELD, HF_ETIMEDOUT, HF_ECANCELED,
 * -EDEADLK (*h the holder waited for); the client's failures. */
static int drain(struct hf_etcdlock *el, const struct hf_lock_opts *o, const struct hf_owner *me,
		 int64_t cr, json_t *kvs, struct hf_etcd_epoch ep, int64_t rev, int64_t lease,
		 int64_t *alive, int64_t deadline, bool *waited, struct hf_lock_info *h)
{
	int broken = 0, rc = 0;
	bool judge = true;
	int64_t third = hf_etcdlock_ttl_ms(el) * 1000000LL / 3;
	for (;;) {
		if (!kvs) {
			rc = look_all(el, &kvs, &ep, &rev);
			if (rc == -EIO && (rc = again(o, deadline, ++broken)) == 0)
				continue; /* EL9 */
			if (rc < 0)
				break;
			broken = 0;
			judge = true;
		}
		if (judge) {
			struct hf_etcdlock_key *k = NULL;
			size_t n = 0;
			if ((rc = hf_etcdlock_keys(kvs, &ep, &k, &n)) < 0)
				break;
			rc = judge_mine(el, o, me, cr, k, n, h);
			hf_etcdlock_keys_free(k, n);
			if (rc == 2) {
				json_decref(kvs);
				kvs = NULL;
				continue;
			}
			if (rc != 3)
				break;
			if (deadline == 0) {
				rc = HF_EHELD; /* step 5: try once */
				break;
			}
			judge = false;
			*waited = true;
			/* EL4: a change from here on is an event after rev */
			hf_sys_point(HF_PT_ETCDLOCK_ACQUIRE_JUDGED);
		}
		int64_t until = *alive + third; /* our lease's next keep-alive */
		bool ka = deadline < 0 || until < deadline;
		rc = hf_etcd_watch_range(el->conn, el->key, el->klen, el->hend, el->klen + 2, rev + 1,
					 ka ? until : deadline, o->has_cancel ? o->cancel_fd : -1,
					 el->why, sizeof el->why);
		if (rc == HF_ETIMEDOUT && ka) { /* EL13: the key keeps its place */
			int64_t sent = hf_sys_mono_ns();
			rc = hf_etcdlease_keepalive(el->conn, lease, el->why, sizeof el->why);
			if (rc == 0) {
				*alive = sent;
				continue; /* the same watch again, from rev + 1 */
			}
			if (rc == -ENOENT) {
				rc = 0; /* expired: our key went with it */
				break;
			}
		}
		if (rc == -EIO && (rc = again(o, deadline, ++broken)) == 0)
			continue;
		if (rc < 0 || rc == HF_ETIMEDOUT || rc == HF_ECANCELED)
			break;
		broken = 0;
		json_decref(kvs); /* an event: look again */
		kvs = NULL;
	}
	json_decref(kvs);
	return rc;
}

/* Step 8: an acquisition that waited in step 7 dates its record from its
 * entry (its "acquired" now, EL13's window): a put to our own key k64 if
 * its create_revision is still cr, with its lease. 0 (or not answered: the
 * record keeps its queueing date); 1 our key is gone. */
static int restamp(struct hf_etcdlock *el, const char *k64, int64_t cr, int64_t lease,
		   const char *v64)
{
	char crs[24], ls[24];
	snprintf(crs, sizeof crs, "%lld", (long long)cr);
	snprintf(ls, sizeof ls, "%lld", (long long)lease);
	json_t *req = json_pack("{s:[{s:s, s:s, s:s, s:s}], s:[{s:{s:s, s:s, s:s}}]}", "compare",
				"key", k64, "target", "CREATE", "result", "EQUAL",
				"create_revision", crs, "success", "request_put", "key", k64,
				"value", v64, "lease", ls);
	json_t *a = NULL;
	int rc = call(el, el->conn, "/v3/kv/txn", req, &a);
	bool gone = rc == -ENOENT || (rc == 0 && !json_is_true(json_object_get(a, "succeeded")));
	json_decref(a);
	return gone ? 1 : 0;
}

/* The owner record of an acquisition, base64: the owner, max_hold_ms,
 * ttl_ms, and a shared or slot one's "mode" (and "slots"), as the file
 * system's record (EL12); an exclusive one's has no mode. NULL: no memory. */
static char *record64(const struct hf_owner *me, int64_t max_hold, int64_t ttl, int mode,
		      int slots)
{
	json_t *val = hf_owner_to_json(me, "acquired");
	if (val) {
		json_object_set_new(val, "max_hold_ms", json_integer(max_hold));
		json_object_set_new(val, "ttl_ms", json_integer(ttl));
		if (mode != HF_MODE_EXCLUSIVE)
			json_object_set_new(val, "mode", json_string(hf_lock_mode_name(mode)));
		if (mode == HF_MODE_SLOTS)
			json_object_set_new(val, "slots", json_integer(slots));
	}
	char *text = val ? json_dumps(val, JSON_COMPACT) : NULL;
	json_decref(val);
	char *v64 = text ? hf_b64_encode(text, strlen(text)) : NULL;
	free(text);
	return v64;
}

/* The acquisition is ours: *ret, the lease kept alive from now on. */
static int held(struct hf_etcdlock *el, struct hf_lock_info *ret, const struct hf_owner *me,
		uint64_t fence, int64_t max_hold, int64_t lease, int64_t granted,
		const struct hf_lock_opts *o)
{
	memset(ret, 0, sizeof *ret);
	ret->owner = *me;
	ret->fence = fence;
	ret->max_hold_ms = max_hold;
	ret->mode = o->mode;
	ret->slots = o->mode == HF_MODE_SLOTS ? o->slots : 0;
	ret->state = HF_LOCK_HELD;
	ret->live_fd = -1;
	hf_etcdlease_set(&el->lease, lease, granted); /* LE2: its life from the grant */
	if (me->lease_ms > 0)
		return 0; /* OW6: a lease that only hf_lock_renew keeps alive */
	int rc = hf_etcdlease_start(&el->lease, el->conn); /* LE1 */
	if (rc < 0) {
		snprintf(el->why, sizeof el->why, "no keep-alive thread: %s", strerror(-rc));
		hf_etcdlease_revoke(el->conn, lease, el->why, sizeof el->why);
		el->lease.id = 0;
	}
	return rc;
}

int hf_etcdlock_acquire(struct hf_etcdlock *el, const struct hf_lock_opts *o,
			struct hf_lock_info *ret, struct hf_lock_info *reterr_holder)
{
	el->why[0] = '\0';
	struct hf_owner me;
	int rc = hf_owner_init(&me, o->pid); /* step 1 */
	if (rc == 0)
		rc = hf_owner_chain_add(&me, o->chain, o->nchain); /* OW5 */
	if (rc < 0)
		return rc;
	if (o->lease_ms > 0) /* OW6: the key's lease alone holds it, TTL lease_ms */
		me.lease_ms = hf_etcdlock_ttl_ms(el);
	/* OW7: another process (a keeper) keeps its lease alive; the record
	 * says so, as the file system's does (its lease, not a kernel lock,
	 * is the proof here) */
	int64_t hold = o->max_hold_ms ? o->max_hold_ms : HF_LOCK_MAX_HOLD_MS_DEFAULT;
	me.kept = !me.lease_ms && me.pid != hf_sys_getpid() && hold != HF_MAX_HOLD_NONE;
	int64_t max_hold = o->max_hold_ms ? o->max_hold_ms : HF_LOCK_MAX_HOLD_MS_DEFAULT;
	bool excl = o->mode == HF_MODE_EXCLUSIVE;
	int slots = o->mode == HF_MODE_SLOTS ? o->slots : 0;
	char *v64 = record64(&me, max_hold, hf_etcdlock_ttl_ms(el), o->mode, slots);
	/* EL11: a shared or slot acquisition's own key, K "//" TOKEN */
	char *own64 = NULL;
	if (v64 && !excl) {
		size_t n = el->klen + 2 + strlen(me.token);
		char *own = malloc(n + 1);
		if (own) {
			snprintf(own, n + 1, "%s//%s", el->key, me.token);
			own64 = hf_b64_encode(own, n);
			free(own);
		}
	}
	if (!v64 || (!excl && !own64)) {
		free(v64);
		return -ENOMEM;
	}
	assert(!el->lease.ka_on && "LE1"); /* the handle holds nothing (HL1) */
	el->lease.id = 0; /* a detached acquisition's: its keeper's or its TTL's now */
	int64_t deadline = o->wait_ms < 0 ? -1 : o->wait_ms == 0 ? 0 :
			   hf_sys_mono_ns() + o->wait_ms * 1000000LL;
	int64_t lease = 0, granted = 0;
	int broken = 0; /* requests or watches in a row that failed (EL9) */
	int epochs = 0; /* epoch keys made (EL10)                         */
	struct hf_lock_info h;
	memset(&h, 0, sizeof h);
	for (;;) {
		int64_t now = hf_sys_mono_ns();
		if (lease && now - granted > hf_etcdlock_ttl_ms(el) * 500000LL) {
			/* half its TTL gone waiting */
			hf_etcdlease_revoke(el->conn, lease, el->why, sizeof el->why);
			lease = 0;
		}
		if (!lease) { /* step 2 */
			if ((rc = hf_etcdlease_grant(&el->lease, el->conn, &lease, el->why,
					      sizeof el->why)) < 0) {
				lease = 0;
				if (rc == -EIO && (rc = again(o, deadline, ++broken)) == 0)
					continue; /* EL9 */
				break;
			}
			granted = now;
		}
		uint64_t fence = 0;
		int64_t lease_h = 0, rev = 0, cr = 0;
		bool holders = false;
		json_t *kvs = NULL;
		struct hf_etcd_epoch ep = { 0, 0 };
		if (excl) /* step 3 */
			rc = try_put(el, v64, lease, &fence, &holders, &h, &lease_h, &cr, &rev);
		else /* step S3 */
			rc = put_holder(el, own64, v64, lease, &cr, &kvs, &ep, &rev, &lease_h);
		if (rc == 2) { /* EL10: the first acquisition of this etcd makes its epoch */
			if (++epochs > HF_ETCD_RETRIES) {
				snprintf(el->why, sizeof el->why,
					 "etcd: the key " HF_ETCD_EPOCH_KEY " vanished after it "
					 "was made, %d times: is something deleting it?", epochs - 1);
				rc = -EPROTO;
				break;
			}
			if ((rc = epoch_make(el, rev)) == 0)
				continue;
		}
		if (rc == -EIO && (rc = again(o, deadline, ++broken)) == 0)
			continue; /* EL9: the txn may have been applied; step 3 sees it */
		if (rc < 0)
			break;
		if (!excl && rc == 3) { /* our token's key on a lease we let go: not ours */
			hf_etcdlease_revoke(el->conn, lease_h, el->why, sizeof el->why);
			continue;
		}
		if (excl && rc == 0 && h.state != HF_LOCK_FREE && !strcmp(h.owner.token, me.token) &&
		    lease_h == lease) {
			rc = 1; /* our own put, applied by a repeated txn (ET1) */
			fence = h.fence;
			holders = true; /* not seen: step 7 looks */
		} else if (excl && rc == 1) {
			cr = rev; /* EL2: the put's revision is K's create_revision */
		}
		if (rc == 1 && !excl && hf_etcd_fence(&ep, cr, &fence) < 0) {
			rc = -EOVERFLOW;
			json_decref(kvs);
			snprintf(el->why, sizeof el->why, "etcd: the fence (epoch %lld + revision "
				 "%lld) would pass 2^63-1", (long long)ep.value, (long long)cr);
			break; /* EL10: our lease revoked below, the key with it */
		}
		if (rc == 1) { /* our key is put: step 7 */
			broken = 0;
			if (excl && !holders) { /* no holder's key at the put: today's one txn */
				free(v64);
				free(own64);
				return held(el, ret, &me, fence, max_hold, lease, granted, o);
			}
			bool waited = false;
			int64_t alive = granted;
			rc = drain(el, o, &me, cr, kvs, ep, rev, lease, &alive, deadline, &waited, &h);
			if (rc == 1 && waited) { /* step 8 */
				hf_owner_restart(&me);
				char *nv = record64(&me, max_hold, hf_etcdlock_ttl_ms(el), o->mode, slots);
				if (!nv) {
					rc = -ENOMEM;
					break;
				}
				free(v64);
				v64 = nv;
				if (restamp(el, excl ? el->key64 : own64, cr, lease, v64) == 1)
					rc = 0;
			}
			if (rc == 1) {
				free(v64);
				free(own64);
				return held(el, ret, &me, fence, max_hold, lease, alive, o);
			}
			if (rc == 0) { /* EL13: our key is gone with its lease: again */
				hf_etcdlease_revoke(el->conn, lease, el->why, sizeof el->why);
				lease = 0;
				continue;
			}
			break;
		}
		broken = 0;
		if (h.state == HF_LOCK_FREE)
			continue;
		if ((h.state == HF_LOCK_DEAD || h.state == HF_LOCK_LEAKED) && lease_h) {
			hf_etcdlease_revoke(el->conn, lease_h, el->why, sizeof el->why); /* step 4, EL3 */
			continue;
		}
		if (o->wait_ms < 0 && o->pid && o->pid != hf_sys_getpid() && h.owner.pid == me.pid &&
		    h.owner.pid_start == me.pid_start && !strcmp(h.owner.boot_id, me.boot_id)) {
			rc = -EDEADLK; /* step 5: it would wait for itself */
			break;
		}
		if (hf_lock_self_wait(&h, o->wait_ms, 0)) {
			rc = -EDEADLK; /* step 5, HL5: this thread holds it itself */
			break;
		}
		if (deadline == 0) {
			rc = HF_EHELD;
			break;
		}
		/* step 6, EL4: a release from here on is an event after rev */
		hf_sys_point(HF_PT_ETCDLOCK_ACQUIRE_JUDGED);
		rc = hf_etcd_watch(el->conn, el->key, el->klen, rev + 1, deadline,
				   o->has_cancel ? o->cancel_fd : -1, el->why, sizeof el->why);
		if (rc == -EIO && (rc = again(o, deadline, ++broken)) == 0)
			continue; /* its member went: judge again at the next endpoint */
		if (rc < 0)
			break;
		broken = 0;
	}
	free(v64);
	free(own64);
	if (lease)
		hf_etcdlease_revoke(el->conn, lease, el->why, sizeof el->why);
	if (rc == HF_EHELD || rc == HF_ETIMEDOUT || rc == HF_ECANCELED || rc == -EDEADLK)
		*reterr_holder = h;
	return rc;
}

int hf_etcdlock_release(struct hf_etcdlock *el, const char *token,
			struct hf_lock_info *reterr_holder)
{
	el->why[0] = '\0';
	int rc;
	if (el->lease.id) {
		hf_etcdlock_unkeep(el); /* LE1: stopped before the revoke */
		rc = hf_etcdlease_revoke(el->conn, el->lease.id, el->why, sizeof el->why); /* EL3 */
		if (rc == -EIO) {
			/* a revoke is idempotent: once more, at the next member
			 * (etcd.c step 3); gone now is gone by us or by its TTL */
			rc = hf_etcdlease_revoke(el->conn, el->lease.id, el->why, sizeof el->why);
			if (rc == -ENOENT)
				rc = 0;
		}
		if (rc != -ENOENT) {
			if (rc == 0)
				el->lease.id = 0;
			return rc;
		}
		el->lease.id = 0; /* expired or revoked elsewhere: whose is it now? */
	}
	/* by token (adopted), or ours whose lease went: its key, K or a holder's */
	json_t *kvs = NULL;
	struct hf_etcd_epoch ep;
	struct hf_etcdlock_key *k = NULL;
	size_t n = 0;
	if ((rc = keys_now(el, &kvs, &k, &n, &ep)) < 0)
		return rc;
	const struct hf_etcdlock_key *mine = key_of(k, n, token);
	int64_t lease_h = mine ? mine->lease : 0;
	if (!mine && n)
		*reterr_holder = k[0].i;
	rc = !n ? HF_ENOTHELD : !mine ? HF_ENOTYOURS : 0;
	hf_etcdlock_keys_free(k, n);
	json_decref(kvs);
	if (rc < 0)
		return rc;
	rc = hf_etcdlease_revoke(el->conn, lease_h, el->why, sizeof el->why); /* EL3 */
	return rc == -ENOENT ? HF_ENOTHELD : rc;
}

int hf_etcdlock_status(struct hf_etcdlock *el, struct hf_lock_info *ret)
{
	struct hf_etcdlock_key *k = NULL;
	size_t n = 0;
	int rc = hf_etcdlock_status_all(el, ret, &k, &n);
	hf_etcdlock_keys_free(k, n);
	return rc;
}

int hf_etcdlock_keep(struct hf_etcdlock *el, const struct hf_owner *o)
{
	el->why[0] = '\0';
	hf_etcd_forget(el->conn); /* a forked child's: the parent's socket */
	int rc = hf_etcdlock_reopen(el);
	if (rc < 0)
		return rc;
	return hf_etcdlease_keep(&el->lease, el->conn, o, el->why, sizeof el->why);
}

/* ---- renew (R1-R3) ---------------------------------------------------------- */

/* The renewed value of kv (R2) as base64, or NULL (no memory). */
static char *renewed_value(const json_t *kv, const struct hf_owner *o, int64_t max_hold)
{
	const char *v64 = json_string_value(json_object_get(kv, "value"));
	char *v = NULL;
	size_t vn = 0;
	json_t *was = v64 && hf_b64_decode(v64, &v, &vn) == 0 ? json_loadb(v, vn, 0, NULL) : NULL;
	free(v);
	json_t *val = hf_owner_to_json(o, "acquired");
	char *text = NULL;
	if (val) {
		json_object_set_new(val, "max_hold_ms", json_integer(max_hold));
		json_t *ttl = json_object_get(was, "ttl_ms");
		if (json_is_integer(ttl))
			json_object_set(val, "ttl_ms", ttl);
		/* EL12: a shared or slot holder stays one */
		json_t *md = json_object_get(was, "mode"), *sl = json_object_get(was, "slots");
		if (md)
			json_object_set(val, "mode", md);
		if (sl)
			json_object_set(val, "slots", sl);
		text = json_dumps(val, JSON_COMPACT);
	}
	json_decref(val);
	json_decref(was);
	char *r = text ? hf_b64_encode(text, strlen(text)) : NULL;
	free(text);
	return r;
}

int hf_etcdlock_renew(struct hf_etcdlock *el, const char *token, uint64_t fence,
		      int64_t max_hold_ms, struct hf_lock_info *ret,
		      struct hf_lock_info *reterr_holder)
{
	el->why[0] = '\0';
	if (!token || !*token || max_hold_ms < 0)
		return -EINVAL;
	/* R1: the keys as they are now (and the epoch, EL10), judged; ours
	 * is the one with our token - K, or a holder's (EL11) */
	json_t *a = NULL, *kv = NULL;
	struct hf_etcd_epoch ep;
	struct hf_etcdlock_key *k = NULL;
	size_t n = 0;
	int rc = keys_now(el, &a, &k, &n, &ep);
	if (rc < 0)
		return rc;
	if (!n) {
		json_decref(a);
		hf_etcdlock_keys_free(k, n);
		return HF_ENOTHELD;
	}
	const struct hf_etcdlock_key *mine = key_of(k, n, token);
	struct hf_lock_info i = mine ? mine->i : k[0].i;
	int64_t lease = mine ? mine->lease : 0, cr = 0, mr = 0;
	int urc = mine ? 0 : HF_EUNREADABLE;
	kv = mine ? (json_t *)mine->kv : NULL;
	hf_etcdlock_keys_free(k, n);
	hf_etcd_i64(kv, "create_revision", &cr);
	hf_etcd_i64(kv, "mod_revision", &mr);
	const char *k64 = json_string_value(json_object_get(kv, "key"));
	if (urc == HF_EUNREADABLE || strcmp(i.owner.token, token)) {
		*reterr_holder = i;
		json_decref(a);
		return HF_ENOTYOURS; /* another's, or no owner record: not ours */
	}
	if ((fence && i.fence != fence) || i.state == HF_LOCK_DEAD) {
		*reterr_holder = i;
		json_decref(a);
		return HF_ELOST; /* R1: another acquisition, or its owner is gone */
	}
	/* R2, DR3: the same owner, token and fence; the window starts now */
	struct hf_owner o = i.owner;
	hf_owner_restart(&o);
	int64_t hold = max_hold_ms > 0 ? max_hold_ms : i.max_hold_ms;
	if (!hold)
		hold = HF_LOCK_MAX_HOLD_MS_DEFAULT;
	char *v64 = renewed_value(kv, &o, hold);
	char *key64 = k64 ? strdup(k64) : NULL;
	json_decref(a);
	if (!v64 || !key64) {
		free(v64);
		free(key64);
		return -ENOMEM;
	}
	hf_sys_point(HF_PT_ETCDLOCK_RENEW_JUDGED);
	/* R3: EL6's compares, EL7's lease, EL10's epoch (the fence's form) */
	assert(cr > 0 && mr >= cr && "EL6");
	char crs[24], mrs[24], ls[24], ers[24];
	snprintf(crs, sizeof crs, "%lld", (long long)cr);
	snprintf(mrs, sizeof mrs, "%lld", (long long)mr);
	snprintf(ls, sizeof ls, "%lld", (long long)lease);
	snprintf(ers, sizeof ers, "%lld", (long long)ep.rev);
	json_t *req = json_pack(
		"{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}],"
		" s:[{s:{s:s, s:s, s:s}}], s:[{s:{s:s}}]}",
		"compare", "key", key64, "target", "CREATE", "result", "EQUAL",
		"create_revision", crs, "key", key64, "target", "MOD", "result", "EQUAL",
		"mod_revision", mrs, "key", el->epoch64, "target", "CREATE", "result", "EQUAL",
		"create_revision", ers, "success", "request_put", "key", key64, "value", v64,
		"lease", ls, "failure", "request_range", "key", key64);
	a = NULL;
	rc = call(el, el->conn, "/v3/kv/txn", req, &a);
	free(key64);
	if (rc == -ENOENT) { /* the lease is gone: so is the key (EL3) */
		free(v64);
		return HF_ELOST;
	}
	if (rc < 0) {
		free(v64);
		return rc;
	}
	bool ok = json_is_true(json_object_get(a, "succeeded"));
	memset(reterr_holder, 0, sizeof *reterr_holder);
	reterr_holder->live_fd = -1;
	if (!ok) {
		json_t *r = json_object_get(json_array_get(json_object_get(a, "responses"), 0),
					    "response_range");
		json_t *now = json_array_get(json_object_get(r, "kvs"), 0);
		int64_t ncr = 0, nl = 0;
		const char *nv = now ? json_string_value(json_object_get(now, "value")) : NULL;
		hf_etcd_i64(now, "create_revision", &ncr);
		if (nv && ncr == cr && !strcmp(nv, v64))
			ok = true; /* our own put, applied by a repeated txn (ET1) */
		else if (now)
			hf_etcdlock_kv_info(now, &ep, reterr_holder, &nl);
	}
	json_decref(a);
	free(v64);
	if (!ok)
		return HF_ELOST; /* changed since R1: reaped, released, or renewed elsewhere */
	if (o.lease_ms > 0) { /* OW6: a renewal is the lease's one keep-alive */
		int64_t sent = hf_sys_mono_ns();
		rc = hf_etcdlease_keepalive(el->conn, lease, el->why, sizeof el->why);
		if (rc == -ENOENT)
			return HF_ELOST; /* expired meanwhile: the key went with it (EL3) */
		if (rc < 0)
			return rc;
		if (el->lease.id == lease)
			atomic_store(&el->lease.alive_until, sent + o.lease_ms * 1000000LL);
	}
	memset(ret, 0, sizeof *ret);
	ret->owner = o;
	ret->fence = i.fence; /* EL7: the fence stays (EL10: of the epoch compared) */
	ret->max_hold_ms = hold;
	ret->state = HF_LOCK_HELD;
	ret->live_fd = -1;
	return 0;
}
