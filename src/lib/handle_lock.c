/*
 * handle_lock.c - the directory lock's public handle (holdfast.h, hf_lock):
 * options, the verbs over the protocol functions of dirlock.c, and what a
 * handle remembers between them (its token, fence, kernel-lock descriptor,
 * the last holder seen).
 *
 * Invariants:
 *  (HL1) A handle holds at most one acquisition: its token, fence and
 *        descriptor belong to it until release, detach or free.
 *  (HL2) hf_lock_free releases only what this process acquired with the
 *        handle: a forked child that frees an inherited handle, or a handle
 *        that adopted a token, releases nothing by freeing.
 *  (HL3) The descriptor that holds the owner's kernel lock is closed only
 *        after the release (or handed over by detach), never before: while
 *        the record exists, its owner's liveness object stays locked.
 *  (HL4) A handle with HF_OPT_BACKEND "etcd://..." does every verb on etcd
 *        (etcdlock.c) and none on the file system; its etcd options take
 *        effect at the next verb that holds nothing (the lock is made anew
 *        from them), never under a held lease. A renewal on etcd keeps the
 *        lease (EL7): the keep-alive goes on as before.
 *  (HL5) A thread never waits for a lock it holds itself: every acquisition
 *        a handle of this process holds is listed with the thread it is
 *        held for (HF_OPT_THREAD, default the thread that acquired), and a
 *        wait whose holder's token is listed for the waiting thread is
 *        refused at once (-EDEADLK, the holder named): only that thread
 *        could release it (dirlock.c DL13, etcdlock.c step 5). Another
 *        thread's hold is waited for: that thread may release it. So is
 *        one that will be leaked (reaped) before a bounded wait's end.
 */
#include "internal.h"
#include "etcd.h"
#include "handle.h"
#include "dirlock.h"
#include "rec.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* HL5: the acquisitions this process holds, each with its thread. */
struct self_hold {
	char token[HF_TOKEN_LEN + 1];
	pid_t pid; /* getpid() when listed: a forked child's copy is not its own */
	pid_t tid;
};
static pthread_mutex_t holds_mu = PTHREAD_MUTEX_INITIALIZER;
static struct self_hold *holds;
static size_t nholds, capholds;
static pthread_once_t holds_once = PTHREAD_ONCE_INIT;

static void holds_child(void)
{
	/* a fork's child has one thread: a mutex another thread held at the
	 * fork would never be unlocked there */
	pthread_mutex_init(&holds_mu, NULL);
}

static void holds_init(void)
{
	pthread_atfork(NULL, NULL, holds_child);
}

/* This thread's id, read once per thread and process: a thread's id never
 * changes, and a fork's child (another pid) reads its own. */
static pid_t self_tid(pid_t pid)
{
	static __thread pid_t for_pid, tid;
	if (for_pid != pid) {
		tid = gettid();
		for_pid = pid;
	}
	return tid;
}

static void holds_add(const char *token, pid_t pid, pid_t tid)
{
	pthread_once(&holds_once, holds_init);
	pthread_mutex_lock(&holds_mu);
	if (nholds == capholds) {
		size_t cap = capholds ? 2 * capholds : 8;
		struct self_hold *n = realloc(holds, cap * sizeof *n);
		if (!n) {
			pthread_mutex_unlock(&holds_mu);
			return; /* unlisted: a wait for it waits, as before HL5 */
		}
		holds = n;
		capholds = cap;
	}
	struct self_hold *h = &holds[nholds++];
	snprintf(h->token, sizeof h->token, "%s", token);
	h->pid = pid;
	h->tid = tid;
	pthread_mutex_unlock(&holds_mu);
}

static void holds_drop(const char *token)
{
	pthread_once(&holds_once, holds_init);
	pthread_mutex_lock(&holds_mu);
	for (size_t i = 0; i < nholds; i++)
		if (!strcmp(holds[i].token, token)) {
			holds[i] = holds[--nholds];
			break;
		}
	pthread_mutex_unlock(&holds_mu);
}

bool hf_lock_self_wait(const struct hf_lock_info *h, int64_t wait_ms, int64_t stale_ms)
{
	if (wait_ms == 0 || h->partial)
		return false;
	/* a bounded wait that outlasts the hold's leak (max(max-hold, stale)
	 * old: reaped) can end without this thread: it waits, as before HL5 */
	if (wait_ms > 0 && h->max_hold_ms > 0 && h->max_hold_ms < INT64_MAX) {
		int64_t window = h->max_hold_ms > stale_ms ? h->max_hold_ms : stale_ms;
		if (window - h->age_ms < wait_ms)
			return false;
	}
	return hf_lock_held_by_caller(h->owner.token);
}

bool hf_lock_held_by_caller(const char *token)
{
	if (!token || !token[0])
		return false;
	pthread_once(&holds_once, holds_init);
	pid_t pid = getpid(), tid = self_tid(pid);
	bool found = false;
	pthread_mutex_lock(&holds_mu);
	for (size_t i = 0; i < nholds && !found; i++)
		found = holds[i].pid == pid && holds[i].tid == tid && !strcmp(holds[i].token, token);
	pthread_mutex_unlock(&holds_mu);
	return found;
}

struct hf_lock {
	char *path;
	struct hf_lock_opts o;
	struct hf_lock_info held;  /* valid while has_token               */
	bool has_token;               /* acquired, adopted or detached        */
	bool holds;                   /* acquired or adopted, not released    */
	bool adopted;
	pid_t acquired_by;            /* getpid() of the acquisition (HL2)    */
	int guard;                    /* hf_dirlock_hold's, -1               */
	struct hf_dirlock_kept kept;  /* the lock's directories while it holds
					 (DL17): the release opens nothing    */
	hf_rec *holder;
	bool holder_is_self;          /* hf_lock_holder builds our own record
					 when asked (none on the fast path)  */
	/* HL4: the etcd backend, when set; el made from these at a verb */
	char *backend, *etcd_user, *etcd_pwfile, *etcd_ca;
	int64_t ttl_ms, timeout_ms;
	struct hf_etcdlock *el;
	bool el_dirty;
	pid_t thread;                 /* HF_OPT_THREAD (HL5); 0: the acquirer  */
	bool listed;                  /* in the holds list (HL5)              */
};

/* HL5: l no longer holds for this process. */
static void unlist(hf_lock *l)
{
	if (l->listed)
		holds_drop(l->held.owner.token);
	l->listed = false;
}

/* HL4: the etcd lock of l, made anew from its options when they changed
 * and nothing is held. 0 (l->el NULL: the file system), -errno. */
static int etcd_ready(hf_lock *l)
{
	if (!l->backend) {
		if (!l->holds && l->el) {
			hf_etcdlock_free(l->el);
			l->el = NULL;
		}
		return 0;
	}
	if (l->el && (!l->el_dirty || l->holds))
		return 0;
	struct hf_etcd_cfg cfg;
	int rc = hf_etcd_cfg_make(l->backend, l->etcd_user, l->etcd_pwfile, l->etcd_ca,
				  l->timeout_ms, &cfg);
	struct hf_etcdlock *el = NULL;
	if (rc == 0)
		rc = hf_etcdlock_new(l->path, &cfg, &el);
	hf_etcd_cfg_clear(&cfg);
	if (rc < 0)
		return rc;
	hf_etcdlock_set_ttl(el, l->o.lease_ms > 0 ? l->o.lease_ms : l->ttl_ms);
	hf_etcdlock_free(l->el);
	l->el = el;
	l->el_dirty = false;
	return 0;
}

/* An etcd lock's record: the directory lock's fields (rec.c) and the
 * backend's own: "backend", "key", "lease", "ttl_ms". */
static hf_rec *etcd_rec(const hf_lock *l, const struct hf_lock_info *i, int64_t lease)
{
	hf_rec *r = hf_rec_from_dirlock(i, l->path);
	json_t *o = r ? hf_rec_object(r) : NULL;
	if (o) {
		json_object_set_new(o, "backend", json_string("etcd"));
		json_object_set_new(o, "key", json_string(hf_etcdlock_key(l->el)));
		if (lease)
			json_object_set_new(o, "lease", json_integer(lease));
		/* the holder's lease's, as it recorded it; ours for our own */
		json_object_set_new(o, "ttl_ms", json_integer(i->ttl_ms > 0 ? i->ttl_ms
									: hf_etcdlock_ttl_ms(l->el)));
	}
	return r;
}

/* A failure of the etcd client: its reason as the holder record. */
static int etcd_fail(hf_lock *l, int rc)
{
	const char *why = l->el ? hf_etcdlock_why(l->el) : "";
	l->holder_is_self = false;
	hf_rec_put(&l->holder, why[0] ? hf_rec_reason(why, l->path) : NULL);
	return rc;
}

static bool name_ok(const char *path)
{
	char dir[PATH_MAX], base[NAME_MAX + 1];
	if (hf_path_split(path, dir, sizeof dir, base, sizeof base) < 0)
		return false;
	size_t n = strlen(base), s = strlen(".holdfast");
	return !(n >= s && !strcmp(base + n - s, ".holdfast")) && n + s <= NAME_MAX;
}

int hf_lock_new(const char *path, hf_lock **ret)
{
	if (!path || !ret)
		return -EINVAL;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (!name_ok(path))
		return -EINVAL;
	hf_lock *l = calloc(1, sizeof *l);
	if (!l || !(l->path = strdup(path))) {
		free(l);
		return -ENOMEM;
	}
	l->o.path = l->path;
	l->o.wait_ms = 0;
	l->o.cancel_fd = -1; /* none (has_cancel false) */
	l->held.live_fd = -1;
	l->guard = -1;
	l->kept = HF_DIRLOCK_KEPT_NONE;
	l->o.kept = &l->kept;
	*ret = l;
	return 0;
}

int hf_lock_set(hf_lock *l, int opt, int64_t v)
{
	int rc = hf_opt_check(l, opt, v);
	if (rc < 0)
		return rc;
	if (hf_opt_wait(opt, v, &l->o.wait_ms, &l->o.cancel_fd)) {
		if (opt == HF_OPT_CANCEL_FD)
			l->o.has_cancel = v >= 0;
		return 0;
	}
	switch (opt) {
	case HF_OPT_STALE_MS:
		l->o.stale_ms = v;
		return 0;
	case HF_OPT_MAX_HOLD_MS:
		l->o.max_hold_ms = v;
		return 0;
	case HF_OPT_PID:
		l->o.pid = (pid_t)v;
		return 0;
	case HF_OPT_CHAIN_PID: /* OW5 */
		if (v == 0) {
			l->o.nchain = 0;
			return 0;
		}
		if (l->o.nchain >= HF_OWNER_CHAIN_MAX)
			return -E2BIG;
		l->o.chain[l->o.nchain++] = (pid_t)v;
		return 0;
	case HF_OPT_TTL_MS:
		l->ttl_ms = v;
		l->el_dirty = true;
		return 0;
	case HF_OPT_TIMEOUT_MS:
		l->timeout_ms = v;
		l->el_dirty = true;
		return 0;
	case HF_OPT_LEASE_MS: /* OW6; on etcd also the key's lease's TTL */
		l->o.lease_ms = v;
		l->el_dirty = true;
		return 0;
	case HF_OPT_THREAD: /* HL5: a hold already listed moves to the thread */
		l->thread = (pid_t)v;
		if (l->listed) {
			holds_drop(l->held.owner.token);
			pid_t me = getpid();
			holds_add(l->held.owner.token, me, l->thread ? l->thread : self_tid(me));
		}
		return 0;
	}
	return -EINVAL;
}

int hf_lock_set_str(hf_lock *l, int opt, const char *value)
{
	if (!l)
		return -EINVAL;
	char **slot;
	switch (opt) {
	case HF_OPT_BACKEND:
		slot = &l->backend;
		if (value && !strcmp(value, "file"))
			value = NULL;
		if (value) {
			struct hf_etcd_cfg cfg;
			int rc = hf_etcd_cfg_parse(value, &cfg);
			hf_etcd_cfg_clear(&cfg);
			if (rc < 0)
				return rc;
		}
		break;
	case HF_OPT_ETCD_USER:
		slot = &l->etcd_user;
		break;
	case HF_OPT_ETCD_PASSWORD_FILE:
		slot = &l->etcd_pwfile;
		break;
	case HF_OPT_ETCD_CA_FILE:
		slot = &l->etcd_ca;
		break;
	default:
		return -EINVAL;
	}
	if (value && (!*value || strlen(value) >= PATH_MAX))
		return -EINVAL;
	if (l->holds && opt == HF_OPT_BACKEND)
		return -EBUSY; /* HL4: the held lock is on the backend it was taken on */
	char *c = value ? strdup(value) : NULL;
	if (value && !c)
		return -ENOMEM;
	free(*slot);
	*slot = c;
	l->el_dirty = true;
	return 0;
}

static void holder_set(hf_lock *l, const struct hf_lock_info *h)
{
	l->holder_is_self = false;
	if (h || l->holder)
		hf_rec_put(&l->holder, h ? hf_rec_from_dirlock(h, l->path) : NULL);
}

/* A holder worth naming after rc: someone holds it, or the reason why not. */
static bool names_holder(int rc)
{
	return rc == HF_EHELD || rc == HF_ETIMEDOUT || rc == HF_ECANCELED || rc == HF_EBARRIER ||
	       rc == HF_EUNREADABLE || rc == HF_ENOTYOURS || rc == -EDEADLK;
}

int hf_lock_acquire(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (l->holds)
		return -EALREADY; /* HL1 */
	struct hf_lock_info got, h;
	memset(&h, 0, sizeof h);
	h.live_fd = -1;
	hf_dirlock_kept_close(&l->kept); /* none: nothing held (HL1) */
	int rc = etcd_ready(l);
	if (rc < 0)
		return etcd_fail(l, rc);
	if (l->el) {
		rc = hf_etcdlock_acquire(l->el, &l->o, &got, &h);
		if (rc < 0 && names_holder(rc) && h.owner.token[0]) {
			l->holder_is_self = false;
			hf_rec_put(&l->holder, etcd_rec(l, &h, 0));
			return rc;
		}
		if (rc < 0)
			return etcd_fail(l, rc);
	} else
		rc = hf_dirlock_acquire(&l->o, &got, &h);
	if (rc < 0) {
		holder_set(l, names_holder(rc) && (h.owner.token[0] || h.reason[0] || h.partial)
				      ? &h
				      : NULL);
		return rc;
	}
	/* HL1, HL3: nothing held, so no descriptor left (closed by the release,
	 * or handed over by detach) */
	assert(l->held.live_fd < 0 && "HL3");
	l->held = got;
	l->has_token = l->holds = true;
	l->adopted = false;
	l->acquired_by = getpid();
	holds_add(l->held.owner.token, l->acquired_by,
		  l->thread ? l->thread : self_tid(l->acquired_by)); /* HL5 */
	l->listed = true;
	holder_set(l, NULL);
	l->holder_is_self = true;
	return 0;
}

int hf_lock_release(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (!l->holds)
		return HF_ENOTHELD;
	hf_lock_unhold(l);
	struct hf_lock_info h;
	memset(&h, 0, sizeof h);
	h.live_fd = -1;
	int rc = etcd_ready(l);
	if (rc < 0)
		return etcd_fail(l, rc);
	if (l->el) {
		rc = hf_etcdlock_release(l->el, l->held.owner.token, &h);
		if (rc != 0 && rc != HF_ENOTHELD && rc != HF_ENOTYOURS)
			return etcd_fail(l, rc); /* still ours: release may be tried again */
		unlist(l);
		l->holds = false;
		l->holder_is_self = false;
		hf_rec_put(&l->holder, rc == HF_ENOTYOURS ? etcd_rec(l, &h, 0) : NULL);
		return rc;
	}
	rc = l->adopted ? hf_dirlock_release(l->path, l->held.owner.token, &h)
			: hf_dirlock_release_kept(l->path, &l->held, &l->kept, &h);
	if (l->held.live_fd >= 0)
		hf_sys_close(l->held.live_fd); /* HL3: after the release */
	l->held.live_fd = -1;
	unlist(l);
	l->holds = false;
	holder_set(l, rc == HF_ENOTYOURS || rc == HF_EUNREADABLE ? &h : NULL);
	return rc;
}

int hf_lock_adopt(hf_lock *l, const char *token)
{
	if (!l || !token || strlen(token) != HF_TOKEN_LEN ||
	    strspn(token, "0123456789abcdef") != HF_TOKEN_LEN)
		return -EINVAL;
	if (l->holds)
		return -EALREADY;
	memset(&l->held, 0, sizeof l->held);
	l->held.live_fd = -1;
	memcpy(l->held.owner.token, token, HF_TOKEN_LEN + 1);
	l->has_token = l->holds = l->adopted = true;
	return 0;
}

int hf_lock_check(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (!l->has_token)
		return HF_ENOTHELD;
	struct hf_lock_info now;
	int rc = etcd_ready(l);
	if (rc < 0)
		return etcd_fail(l, rc);
	if (l->el) {
		if ((rc = hf_etcdlock_status(l->el, &now)) < 0)
			return etcd_fail(l, rc);
		bool mine = now.owner.token[0] && !strcmp(now.owner.token, l->held.owner.token) &&
			    (now.state == HF_LOCK_HELD || now.state == HF_LOCK_SKEW) &&
			    !(l->holds && !l->adopted && hf_etcdlock_lost(l->el));
		l->holder_is_self = false;
		hf_rec_put(&l->holder, now.state != HF_LOCK_FREE ? etcd_rec(l, &now, 0) : NULL);
		return mine ? 0 : HF_ELOST;
	}
	rc = hf_dirlock_status(l->path, &now);
	if (rc < 0)
		return rc;
	bool ours = now.owner.token[0] && !now.partial && !now.in_claim &&
		    !strcmp(now.owner.token, l->held.owner.token) &&
		    (now.state == HF_LOCK_HELD || now.state == HF_LOCK_SKEW);
	holder_set(l, now.state != HF_LOCK_FREE ? &now : NULL);
	return ours ? 0 : HF_ELOST;
}

int hf_lock_renew(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (!l->holds)
		return HF_ENOTHELD;
	struct hf_lock_info got, h;
	memset(&h, 0, sizeof h);
	h.live_fd = -1;
	int rc = etcd_ready(l);
	if (rc < 0)
		return etcd_fail(l, rc);
	if (l->el && !l->adopted && hf_etcdlock_lost(l->el)) {
		l->holder_is_self = false; /* EL8: its keep-alive gave up: not renewed */
		hf_rec_put(&l->holder, NULL);
		return HF_ELOST;
	}
	if (l->el) { /* HL4: the same verb on etcd (etcdlock.c R1-R3); the lease stays */
		rc = hf_etcdlock_renew(l->el, l->held.owner.token, l->adopted ? 0 : l->held.fence,
				       l->o.max_hold_ms, &got, &h);
		if (rc < 0 && (rc == HF_ENOTHELD || rc == HF_ENOTYOURS || rc == HF_ELOST)) {
			l->holder_is_self = false;
			hf_rec_put(&l->holder, h.owner.token[0] ? etcd_rec(l, &h, 0) : NULL);
			return rc;
		}
		if (rc < 0)
			return etcd_fail(l, rc);
	} else {
		rc = hf_dirlock_renew(l->path, l->held.owner.token, l->o.max_hold_ms, &got, &h);
	}
	if (rc < 0) {
		holder_set(l, h.owner.token[0] || h.partial ? &h : NULL);
		return rc;
	}
	if (!l->adopted) { /* HL1: the same acquisition, its window restarted */
		l->held.owner = got.owner;
		l->held.max_hold_ms = got.max_hold_ms;
	} else {
		int fd = l->held.live_fd;
		l->held = got;
		l->held.live_fd = fd;
	}
	holder_set(l, NULL);
	l->holder_is_self = true;
	return 0;
}

int hf_lock_detach(hf_lock *l)
{
	if (!l || !l->holds)
		return -1;
	hf_lock_unhold(l);
	hf_dirlock_kept_close(&l->kept);
	if (l->el)
		hf_etcdlock_unkeep(l->el); /* the lease stays: hf_lock_keep, or its TTL */
	int fd = l->held.live_fd;
	l->held.live_fd = -1;
	unlist(l);
	l->holds = false; /* the token stays readable (has_token) */
	return fd;
}

const char *hf_lock_token(const hf_lock *l)
{
	return l && l->has_token ? l->held.owner.token : NULL;
}

uint64_t hf_lock_fence(const hf_lock *l)
{
	return l && l->has_token ? l->held.fence : 0;
}

int hf_lock_fd(const hf_lock *l)
{
	return l && l->holds ? l->held.live_fd : -1;
}

const hf_rec *hf_lock_holder(const hf_lock *l)
{
	if (!l)
		return NULL;
	if (l->holder_is_self && !l->holder && l->has_token) {
		hf_lock *m = (hf_lock *)l; /* a cache: the record is made on first use */
		struct hf_lock_info self = l->held;
		self.state = HF_LOCK_HELD;
		self.live_fd = -1;
		m->holder = l->el ? etcd_rec(l, &self, hf_etcdlock_lease(l->el))
				  : hf_rec_from_dirlock(&self, l->path);
	}
	return l->holder;
}

int hf_lock_hold(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (!l->holds || l->adopted)
		return l->holds ? -EINVAL : HF_ENOTHELD; /* an adopted token has no fence */
	if (l->guard >= 0)
		return 0;
	if (l->el) /* etcd: no hold-off, the lock is only checked (README) */
		return hf_lock_check(l);
	return hf_dirlock_hold(l->path, &l->held, &l->guard);
}

void hf_lock_unhold(hf_lock *l)
{
	if (l && l->guard >= 0) {
		hf_dirlock_unhold(l->guard);
		l->guard = -1;
	}
}

void hf_lock_free(hf_lock *l)
{
	if (!l)
		return;
	if (l->holds && !l->adopted && l->acquired_by == getpid())
		hf_lock_release(l); /* HL2 */
	unlist(l);
	hf_lock_unhold(l);
	hf_dirlock_kept_close(&l->kept);
	if (l->held.live_fd >= 0)
		hf_sys_close(l->held.live_fd);
	hf_rec_free(l->holder);
	hf_etcdlock_free(l->el);
	free(l->backend);
	free(l->etcd_user);
	free(l->etcd_pwfile);
	free(l->etcd_ca);
	free(l->path);
	free(l);
}

/* The start of a read of l's backend into *ret: 0, or the failure. */
static int read_begin(hf_lock *l, hf_rec **ret)
{
	if (!l || !ret)
		return -EINVAL;
	int rc = etcd_ready(l);
	return rc < 0 ? etcd_fail(l, rc) : 0;
}

int hf_lock_query(hf_lock *l, hf_rec **ret)
{
	int rc = read_begin(l, ret);
	if (rc < 0)
		return rc;
	if (!l->el)
		return hf_lock_status(l->path, ret);
	struct hf_lock_info i;
	if ((rc = hf_etcdlock_status(l->el, &i)) < 0)
		return etcd_fail(l, rc);
	hf_rec *r = etcd_rec(l, &i, 0);
	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}

int hf_lock_list(hf_lock *l, hf_rec **ret)
{
	int rc = read_begin(l, ret);
	if (rc < 0)
		return rc;
	if (!l->el)
		return -EOPNOTSUPP; /* the file system's: the CLI walks the tree */
	const char *dir = hf_etcdlock_key(l->el) + strlen(HF_ETCD_KEY_PREFIX);
	json_t *items = NULL;
	char why[HF_ETCD_WHY_MAX] = "";
	rc = hf_etcd_list(hf_etcdlock_cfg(l->el), dir, &items, why, sizeof why);
	if (rc < 0) {
		l->holder_is_self = false;
		hf_rec_put(&l->holder, why[0] ? hf_rec_reason(why, l->path) : NULL);
		return rc;
	}
	hf_rec *r = hf_rec_take(json_pack("{s:s, s:o}", "dir", dir, "locks", items));
	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}

int hf_lock_keep(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (!l->el)
		return -EOPNOTSUPP; /* the file system's lock: its descriptor (keeper.c) */
	if (!l->has_token || l->adopted || !hf_etcdlock_lease(l->el))
		return HF_ENOTHELD;
	int rc = hf_etcdlock_keep(l->el, &l->held.owner);
	if (rc < 0)
		etcd_fail(l, rc);
	unlist(l);
	l->holds = false; /* kept to its end: nothing is held any more */
	return rc;
}

int hf_lock_status(const char *path, hf_rec **ret)
{
	if (!path || !ret)
		return -EINVAL;
	struct hf_lock_info i;
	int rc = hf_dirlock_status(path, &i);
	if (rc < 0)
		return rc;
	hf_rec *r = hf_rec_from_dirlock(&i, path);
	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}

const struct hf_lock_info *hf_lock_held(const hf_lock *l)
{
	return l && l->holds && !l->adopted ? &l->held : NULL;
}

const char *hf_lock_path(const hf_lock *l)
{
	return l ? l->path : NULL;
}
