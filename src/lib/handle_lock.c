/*
 * handle_lock.c - the directory lock's public handle (holdfast.h, hf_lock):
 * options, the verbs over its backend's operations (backend.h), and what a
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
 *  (HL4) A handle does every verb on the backend its options chose
 *        (HF_OPT_BACKEND: backend.h, one table of operations per backend)
 *        and none elsewhere; options changed while it holds take effect at
 *        the next verb that holds nothing (BE2). A renewal keeps what the
 *        backend holds by (an etcd lease goes on being kept alive, EL7).
 *  (HL5) A thread never waits for a lock it holds itself: every acquisition
 *        a handle of this process holds is listed with the thread it is
 *        held for (HF_OPT_THREAD, default the thread that acquired), and a
 *        wait whose holder's token is listed for the waiting thread is
 *        refused at once (-EDEADLK, the holder named): only that thread
 *        could release it (dirlock.c DL13, etcdlock.c step 5). Another
 *        thread's hold is waited for: that thread may release it. So is
 *        one that will be leaked (reaped) before a bounded wait's end.
 *        The list is holds.c's.
 */
#include "floor.h"
#include "backend.h"
#include "handle.h"
#include "holds.h"
#include "rec.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hf_lock {
	char *path;
	struct hf_lock_opts o;
	struct hf_lock_info held;     /* valid while has_token               */
	bool has_token;               /* acquired, adopted or detached        */
	bool holds;                   /* acquired or adopted, not released    */
	bool adopted;
	pid_t acquired_by;            /* hf_sys_getpid() of the acquisition (HL2)    */
	int guard;                    /* ops->hold's, -1                      */
	hf_rec *holder;
	bool holder_is_self;          /* hf_lock_holder builds our own record
					 when asked (none on the fast path)  */
	struct hf_backend_opts bo;    /* HL4: where the lock lives (BE1)      */
	const struct hf_lock_ops *ops; /* the state's backend, NULL: none yet */
	void *st;                     /* its state (BE2)                      */
	unsigned st_changes;          /* bo.changes when st was made          */
	pid_t thread;                 /* HF_OPT_THREAD (HL5); 0: the acquirer  */
	bool listed;                  /* in the holds list (HL5)              */
};

/* HL5: l no longer holds for this process. */
static void unlist(hf_lock *l)
{
	if (l->listed)
		hf_holds_drop(l->held.owner.token);
	l->listed = false;
}

/* HL4, BE2: l's backend state, made anew from its options when they
 * changed and nothing is held. 0, or -errno (the holder cleared). */
static int ready(hf_lock *l)
{
	if (l->st && (l->holds || l->st_changes == l->bo.changes))
		return 0;
	const struct hf_lock_ops *ops = hf_backend_of(&l->bo)->lock;
	void *st = NULL;
	int rc = ops->open(l->path, &l->bo, &l->o, &st);
	if (rc < 0) {
		l->holder_is_self = false;
		hf_rec_put(&l->holder, NULL);
		return rc;
	}
	if (l->st)
		l->ops->close(l->st);
	l->ops = ops;
	l->st = st;
	l->st_changes = l->bo.changes;
	return 0;
}

static bool name_ok(const char *path)
{
	char dir[PATH_MAX], base[NAME_MAX + 1];
	if (hf_path_split(path, dir, sizeof dir, base, sizeof base) < 0)
		return false;
	size_t n = strlen(base), s = strlen(".holdfast");
	return !(n >= s && !strcmp(base + n - s, ".holdfast")) && n + s <= NAME_MAX;
}

static int lock_make(const char *path, bool check_name, hf_lock **ret)
{
	if (!path || !ret)
		return -EINVAL;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (check_name && !name_ok(path))
		return -EINVAL;
	hf_lock *l = calloc(1, sizeof *l);
	if (!l || !(l->path = strdup(path))) {
		free(l);
		return -ENOMEM;
	}
	l->o.path = l->path;
	l->o.wait_ms = 0;
	l->o.cancel_fd = -1; /* none (has_cancel false) */
	l->o.list_depth = HF_LIST_DEPTH_DEFAULT;
	l->o.mode = HF_MODE_EXCLUSIVE;
	l->o.slots = 1;
	l->held.live_fd = -1;
	l->guard = -1;
	*ret = l;
	return 0;
}

int hf_lock_new(const char *path, hf_lock **ret)
{
	/* "/" has no name: a handle to read (list) the root, no lock to take
	 * (every backend refuses to acquire it, -EINVAL) */
	return lock_make(path, !path || strcmp(path, "/"), ret);
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
	if (hf_backend_set(&l->bo, opt, v) == 0) /* BE1: HF_OPT_TTL_MS, _TIMEOUT_MS */
		return 0;
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
	case HF_OPT_DEPTH:
		l->o.list_depth = (int)v;
		return 0;
	case HF_OPT_MODE: /* a held acquisition keeps the mode it was taken in */
		if (l->holds)
			return -EBUSY;
		l->o.mode = (int)v;
		return 0;
	case HF_OPT_SLOTS:
		if (l->holds)
			return -EBUSY;
		l->o.mode = HF_MODE_SLOTS;
		l->o.slots = (int)v;
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
	case HF_OPT_LEASE_MS: /* OW6; on etcd also the key's lease's TTL */
		l->o.lease_ms = v;
		l->bo.changes++;
		return 0;
	case HF_OPT_THREAD: /* HL5: a hold already listed moves to the thread */
		l->thread = (pid_t)v;
		if (l->listed) {
			hf_holds_drop(l->held.owner.token);
			hf_holds_add(l->held.owner.token, l->thread);
		}
		return 0;
	}
	return -EINVAL;
}

int hf_lock_set_str(hf_lock *l, int opt, const char *value)
{
	if (!l)
		return -EINVAL;
	int rc = hf_backend_set_str(&l->bo, opt, value, l->holds); /* BE1 */
	return rc == 1 ? -EINVAL : rc;
}

static void holder_clear(hf_lock *l)
{
	l->holder_is_self = false;
	hf_rec_put(&l->holder, NULL);
}

int hf_lock_acquire(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (l->holds)
		return -EALREADY; /* HL1 */
	struct hf_lock_info got;
	int rc = ready(l);
	if (rc < 0)
		return rc;
	l->holder_is_self = false;
	rc = l->ops->acquire(l->st, &l->o, &got, &l->holder);
	if (rc < 0)
		return rc;
	/* HL1, HL3: nothing held, so no descriptor left (closed by the release,
	 * or handed over by detach) */
	assert(l->held.live_fd < 0 && "HL3");
	l->held = got;
	l->has_token = l->holds = true;
	l->adopted = false;
	l->acquired_by = hf_sys_getpid();
	hf_holds_add(l->held.owner.token, l->thread); /* HL5 */
	l->listed = true;
	holder_clear(l);
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
	int rc = ready(l);
	if (rc < 0)
		return rc;
	bool still_held = false;
	l->holder_is_self = false;
	rc = l->ops->release(l->st, &l->held, l->adopted, &l->holder, &still_held);
	if (still_held)
		return rc; /* still ours: release may be tried again */
	if (l->held.live_fd >= 0)
		hf_sys_close(l->held.live_fd); /* HL3: after the release */
	l->held.live_fd = -1;
	unlist(l);
	l->holds = false;
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
	int rc = ready(l);
	if (rc < 0)
		return rc;
	hf_rec *all = NULL;
	if ((rc = l->ops->status(l->st, &now, &all, &l->holder)) < 0) {
		l->holder_is_self = false;
		return rc;
	}
	bool live = !(l->holds && !l->adopted && l->ops->lost && l->ops->lost(l->st));
	bool ours = now.owner.token[0] && !now.partial && !now.in_claim &&
		    !strcmp(now.owner.token, l->held.owner.token) &&
		    (now.state == HF_LOCK_HELD || now.state == HF_LOCK_SKEW);
	/* a shared or slot holder is one of "holders" (its own record, live);
	 * one listed "waiting" (standing at the lock, FB4, EL15) holds nothing
	 * yet */
	size_t n = hf_rec_len(all, "holders");
	for (size_t i = 0; !ours && i < n; i++) {
		char f[48];
		snprintf(f, sizeof f, "holders.%zu.token", i);
		const char *t = hf_rec_str(all, f);
		snprintf(f, sizeof f, "holders.%zu.state", i);
		const char *st = hf_rec_str(all, f);
		snprintf(f, sizeof f, "holders.%zu.waiting", i);
		int64_t waiting = 0;
		hf_rec_int(all, f, &waiting);
		ours = t && st && !waiting && !strcmp(t, l->held.owner.token) &&
		       (!strcmp(st, "held") || !strcmp(st, "skew"));
	}
	ours = ours && live;
	l->holder_is_self = false;
	hf_rec *r = now.state != HF_LOCK_FREE ? l->ops->rec(l->st, &now, false) : NULL;
	if (!r) { /* free: nobody to name */
		hf_rec_free(all);
		all = NULL;
	}
	hf_rec_put(&l->holder, hf_rec_merge(r, all));
	return ours ? 0 : HF_ELOST;
}

int hf_lock_renew(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	if (!l->holds)
		return HF_ENOTHELD;
	struct hf_lock_info got;
	int rc = ready(l);
	if (rc < 0)
		return rc;
	l->holder_is_self = false;
	rc = l->ops->renew(l->st, &l->held, l->adopted, l->o.max_hold_ms, &got, &l->holder);
	if (rc < 0)
		return rc;
	if (!l->adopted) { /* HL1: the same acquisition, its window restarted */
		l->held.owner = got.owner;
		l->held.max_hold_ms = got.max_hold_ms;
	} else {
		int fd = l->held.live_fd;
		l->held = got;
		l->held.live_fd = fd;
	}
	holder_clear(l);
	l->holder_is_self = true;
	return 0;
}

int hf_lock_detach(hf_lock *l)
{
	if (!l || !l->holds)
		return -1;
	hf_lock_unhold(l);
	if (l->st && l->ops->detach)
		l->ops->detach(l->st); /* an etcd lease stays: hf_lock_keep, or its TTL */
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
	if (l->holder_is_self && !l->holder && l->has_token && l->st) {
		hf_lock *m = (hf_lock *)l; /* a cache: the record is made on first use */
		struct hf_lock_info self = l->held;
		self.state = HF_LOCK_HELD;
		self.live_fd = -1;
		m->holder = l->ops->rec(l->st, &self, true);
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
	int rc = ready(l);
	if (rc < 0)
		return rc;
	if (!l->ops->hold) /* no hold-off there (etcd): the lock is only checked */
		return hf_lock_check(l);
	return l->ops->hold(l->st, &l->held, &l->guard);
}

void hf_lock_unhold(hf_lock *l)
{
	if (l && l->guard >= 0) {
		l->ops->unhold(l->st, l->guard);
		l->guard = -1;
	}
}

void hf_lock_free(hf_lock *l)
{
	if (!l)
		return;
	if (l->holds && !l->adopted && l->acquired_by == hf_sys_getpid())
		hf_lock_release(l); /* HL2 */
	unlist(l);
	hf_lock_unhold(l);
	if (l->held.live_fd >= 0)
		hf_sys_close(l->held.live_fd);
	hf_rec_free(l->holder);
	if (l->st)
		l->ops->close(l->st); /* an etcd state joins its keep-alive */
	hf_backend_clear(&l->bo);
	free(l->path);
	free(l);
}

int hf_lock_query(hf_lock *l, hf_rec **ret)
{
	if (!l || !ret)
		return -EINVAL;
	int rc = ready(l);
	if (rc < 0)
		return rc;
	struct hf_lock_info i;
	hf_rec *all = NULL;
	if ((rc = l->ops->status(l->st, &i, &all, &l->holder)) < 0) {
		l->holder_is_self = false;
		return rc;
	}
	hf_rec *r = l->ops->rec(l->st, &i, false);
	if (!all && r) { /* one holder, or none: the same words as for many */
		json_t *o = json_incref(hf_rec_object(r)), *h = json_array();
		if (i.state != HF_LOCK_FREE && !i.partial) {
			json_t *c = json_deep_copy(o);
			json_object_del(c, "path");
			json_array_append_new(h, c);
		}
		all = hf_rec_take(json_pack("{s:s?, s:o}", "mode",
					    i.state != HF_LOCK_FREE && !i.partial ? hf_lock_mode_name(i.mode)
									   : NULL,
					    "holders", h));
		json_decref(o);
	}
	return hf_rec_out(hf_rec_merge(r, all), ret);
}

int hf_lock_list(hf_lock *l, hf_rec **ret)
{
	if (!l || !ret)
		return -EINVAL;
	int rc = ready(l);
	if (rc < 0)
		return rc;
	l->holder_is_self = false;
	return l->ops->list(l->st, &l->o, ret, &l->holder);
}

int hf_lock_keep(hf_lock *l)
{
	if (!l)
		return -EINVAL;
	const struct hf_lock_ops *ops = l->st ? l->ops : hf_backend_of(&l->bo)->lock;
	if (!ops->keep)
		return -EOPNOTSUPP; /* the file system's lock: its descriptor (keeper.c) */
	if (!l->has_token || l->adopted || !l->st)
		return HF_ENOTHELD;
	bool kept = false;
	l->holder_is_self = false;
	int rc = ops->keep(l->st, &l->held, &l->holder, &kept);
	if (!kept)
		return rc;
	unlist(l);
	l->holds = false; /* kept to its end: nothing is held any more */
	return rc;
}

int hf_lock_status(const char *path, hf_rec **ret)
{
	if (!path || !ret)
		return -EINVAL;
	hf_lock *l;
	int rc = lock_make(path, false, &l); /* any name: status reads what is there */
	if (rc < 0)
		return rc;
	rc = hf_lock_query(l, ret);
	hf_lock_free(l);
	return rc;
}

const struct hf_lock_info *hf_lock_held(const hf_lock *l)
{
	return l && l->holds && !l->adopted ? &l->held : NULL;
}

const char *hf_lock_path(const hf_lock *l)
{
	return l ? l->path : NULL;
}
