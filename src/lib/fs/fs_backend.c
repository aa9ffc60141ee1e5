/*
 * fs_backend.c - the file system's entry in the backend table
 * (backend.h): the directory lock (dirlock.c), the session lock
 * (session_file.c) and the scope registry (registry.c) behind one table of
 * operations per kind, with the waits the handles do on this backend (an
 * inotify waiter between whole attempts: wait.c).
 *
 * Invariants:
 *  (FB1) Every attempt of a wait is a whole protocol operation
 *        (hf_sessionlock_take, hf_scopereg_register): waiting adds no step
 *        to a protocol, only sleeps between attempts, never past the
 *        deadline, ended at once by a readable cancel descriptor (WT1, WT4).
 *  (FB2) A lock's directories stay open from an acquisition to its
 *        release in the state's kept (DL17); nothing held, nothing kept.
 *  (FB3) A registration is released in the registry it was registered in
 *        (RG13), whatever HF_OPT_REGISTRY or the specs say by then.
 *  (FB4) A lock's status names every holder: L's directory and the shared
 *        and slot holders' entries (dirlock.c DS2). L's directory beside a
 *        live entry, or in a mode other than exclusive, is an acquisition
 *        standing at L (DS1), "waiting": true; the lock's own fields are
 *        then its first live entry's (by fence).
 */
#include "backend.h"
#include "dirlock.h"
#include "fslist.h"
#include "internal.h"
#include "rec.h"
#include "registry.h"
#include "session.h"
#include "wait.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- the directory lock ------------------------------------------------ */

struct fs_lock {
	const char *path;             /* the handle's                         */
	struct hf_dirlock_kept kept;  /* FB2                                  */
};

static int lock_open(const char *path, const struct hf_backend_opts *b,
		     const struct hf_lock_opts *o, void **ret)
{
	struct fs_lock *st = malloc(sizeof *st);
	if (!st)
		return -ENOMEM;
	st->path = path;
	st->kept = HF_DIRLOCK_KEPT_NONE;
	*ret = st;
	return 0;
}

static void lock_close(void *p)
{
	struct fs_lock *st = p;
	if (st)
		hf_dirlock_kept_close(&st->kept);
	free(st);
}

static hf_rec *lock_rec(void *p, const struct hf_lock_info *i, bool self)
{
	struct fs_lock *st = p;
	return hf_rec_from_dirlock(i, st->path);
}

static int lock_acquire(void *p, const struct hf_lock_opts *o, struct hf_lock_info *got,
			hf_rec **holder)
{
	struct fs_lock *st = p;
	struct hf_lock_opts mine = *o;
	mine.kept = &st->kept;
	hf_dirlock_kept_close(&st->kept); /* FB2: nothing held, nothing kept */
	struct hf_lock_info h;
	memset(&h, 0, sizeof h);
	h.live_fd = -1;
	int rc = hf_dirlock_acquire(&mine, got, &h);
	if (rc < 0)
		hf_rec_put(holder, hf_lock_names_holder(rc) &&
					   (h.owner.token[0] || h.reason[0] || h.partial)
				   ? hf_rec_from_dirlock(&h, st->path)
				   : NULL);
	return rc;
}

static int lock_release(void *p, const struct hf_lock_info *held, bool adopted, hf_rec **holder,
			bool *still_held)
{
	struct fs_lock *st = p;
	struct hf_lock_info h;
	memset(&h, 0, sizeof h);
	h.live_fd = -1;
	int rc = adopted ? hf_dirlock_release(st->path, held->owner.token, &h)
			 : hf_dirlock_release_kept(st->path, held, &st->kept, &h);
	*still_held = false;
	hf_rec_put(holder, rc == HF_ENOTYOURS || rc == HF_EUNREADABLE
				   ? hf_rec_from_dirlock(&h, st->path)
				   : NULL);
	return rc;
}

static int lock_renew(void *p, const struct hf_lock_info *held, bool adopted, int64_t max_hold_ms,
		      struct hf_lock_info *got, hf_rec **holder)
{
	struct fs_lock *st = p;
	struct hf_lock_info h;
	memset(&h, 0, sizeof h);
	h.live_fd = -1;
	int rc = hf_dirlock_renew(st->path, held->owner.token, max_hold_ms, got, &h);
	if (rc < 0)
		hf_rec_put(holder, h.owner.token[0] || h.partial ? hf_rec_from_dirlock(&h, st->path)
								 : NULL);
	return rc;
}

/* FB4: the lock at path now, and its holders. */
int hf_fs_lock_status(const char *path, struct hf_lock_info *now, hf_rec **all)
{
	*all = NULL;
	struct hf_lock_info *e = NULL;
	size_t n = 0;
	int rc = hf_dirlock_status_all(path, now, &e, &n);
	if (rc < 0)
		return rc;
	/* L's directory beside live entries, or in a mode other than
	 * exclusive, is an acquisition standing at L (DS1): it waits. The
	 * lock's own fields are then its first live entry's. */
	bool live = false;
	for (size_t i = 0; i < n; i++)
		live = live || e[i].state == HF_LOCK_HELD || e[i].state == HF_LOCK_SKEW;
	bool at_l = now->state != HF_LOCK_FREE && !now->partial;
	json_t *holders = json_array();
	if (at_l) {
		hf_rec *r = hf_rec_from_dirlock(now, NULL);
		if (r) {
			json_t *o = json_incref(hf_rec_object(r));
			if (n > 0 || now->mode != HF_MODE_EXCLUSIVE)
				json_object_set_new(o, "waiting",
						    json_boolean(live || now->mode != HF_MODE_EXCLUSIVE));
			json_array_append_new(holders, o);
			hf_rec_free(r);
		}
	}
	const struct hf_lock_info *top = NULL;
	for (size_t i = 0; i < n; i++) {
		hf_rec *r = hf_rec_from_dirlock(&e[i], NULL);
		if (r)
			json_array_append(holders, hf_rec_object(r));
		hf_rec_free(r);
		if (!top && (e[i].state == HF_LOCK_HELD || e[i].state == HF_LOCK_SKEW))
			top = &e[i];
	}
	int claims = now->claims;
	if (top && (now->state == HF_LOCK_FREE || live))
		*now = *top;
	else if (n > 0 && now->state == HF_LOCK_FREE)
		*now = e[0];
	now->claims = claims;
	free(e);
	bool named = now->state != HF_LOCK_FREE && !now->partial;
	json_t *o = json_pack("{s:s?, s:o}", "mode", named ? hf_lock_mode_name(now->mode) : NULL,
			      "holders", holders);
	if (o && named && now->mode == HF_MODE_SLOTS)
		json_object_set_new(o, "slots", json_integer(now->slots));
	*all = hf_rec_take(o);
	return *all ? 0 : -ENOMEM;
}

static int lock_status(void *p, struct hf_lock_info *now, hf_rec **all, hf_rec **holder)
{
	struct fs_lock *st = p;
	return hf_fs_lock_status(st->path, now, all);
}

static int lock_hold(void *p, const struct hf_lock_info *held, int *guard)
{
	struct fs_lock *st = p;
	return hf_dirlock_hold(st->path, held, guard);
}

static void lock_unhold(void *p, int guard)
{
	hf_dirlock_unhold(guard);
}

static void lock_detach(void *p)
{
	struct fs_lock *st = p;
	hf_dirlock_kept_close(&st->kept);
}

/* The locks under the handle's path (fslist.c, FL1-FL4). */
static int lock_list(void *p, const struct hf_lock_opts *o, hf_rec **ret, hf_rec **holder)
{
	struct fs_lock *st = p;
	json_t *items = NULL, *errors = NULL;
	bool truncated = false;
	int rc = hf_fs_list(st->path, o->list_depth, &items, &errors, &truncated);
	if (rc < 0)
		return rc; /* the directory itself (FL3): nobody to name */
	return hf_rec_out(hf_rec_take(json_pack("{s:s, s:o, s:o, s:b}", "dir", st->path, "locks", items,
					  "errors", errors, "truncated", truncated)), ret);
}

static const struct hf_lock_ops fs_lock_ops = {
	.open = lock_open,
	.close = lock_close,
	.acquire = lock_acquire,
	.release = lock_release,
	.renew = lock_renew,
	.status = lock_status,
	.hold = lock_hold,
	.unhold = lock_unhold,
	.detach = lock_detach,
	.list = lock_list,
	.rec = lock_rec,
};

/* ---- the session lock -------------------------------------------------- */

/* The state is the handle's path (nothing to keep between verbs). */
static int session_open(const char *path, const struct hf_backend_opts *b, void **ret)
{
	*ret = (void *)path;
	return 0;
}

static void session_close(void *p)
{
}

static void session_holder(const char *path, hf_rec **holder, const struct hf_sessionlock_status *h)
{
	hf_rec_put(holder, h ? hf_rec_from_session_status(h, path) : NULL);
}

static int session_take(void *p, const struct hf_sessionlock_opts *o, int64_t wait_ms,
			int cancel_fd, struct hf_sessionlock_record *taken, hf_rec **holder)
{
	const char *path = p;
	char dir[PATH_MAX], name[NAME_MAX + 1];
	int rc = hf_path_split(path, dir, sizeof dir, name, sizeof name);
	if (rc < 0)
		return rc;
	struct hf_sessionlock_status h;
	struct hf_waiter w;
	hf_wait_init(&w, dir, name, wait_ms);
	hf_wait_set_cancel(&w, cancel_fd);
	for (;;) {
		memset(&h, 0, sizeof h);
		rc = hf_sessionlock_take(o, taken, &h); /* FB1 */
		if (rc != HF_EHELD)
			break;
		session_holder(path, holder, &h);
		/* a session ends by a release or a break, both renaming it away
		 * from its name (an event), never by its taker's end; one in an
		 * aside comes back unseen: the short backoff (WT6) */
		if (!h.in_aside)
			hf_wait_holder(&w, 0);
		int wrc = hf_wait_next(&w); /* FB1 */
		if (wrc == HF_ETIMEDOUT) {
			rc = wait_ms != 0 ? HF_ETIMEDOUT : HF_EHELD;
			break;
		}
		if (wrc < 0) {
			rc = wrc;
			break;
		}
	}
	hf_wait_done(&w);
	if (rc == HF_EUNREADABLE)
		session_holder(path, holder, &h);
	else if (rc < 0 && rc != HF_ETIMEDOUT && rc != HF_EHELD && rc != HF_ECANCELED)
		session_holder(path, holder, NULL); /* a wait that ended keeps its holder */
	return rc;
}

static int session_release(void *p, const struct hf_sessionlock_opts *o, hf_rec **holder)
{
	struct hf_sessionlock_status h;
	memset(&h, 0, sizeof h);
	int rc = hf_sessionlock_release(o, &h);
	session_holder(p, holder, hf_session_names_holder(rc) ? &h : NULL);
	return rc;
}

static int session_renew(void *p, const struct hf_sessionlock_opts *o,
			 struct hf_sessionlock_record *ret, hf_rec **holder)
{
	struct hf_sessionlock_status h;
	memset(&h, 0, sizeof h);
	int rc = hf_sessionlock_renew(o, ret, &h);
	if (rc < 0)
		session_holder(p, holder, hf_session_names_holder(rc) && h.state ? &h : NULL);
	return rc;
}

static int session_status(void *p, int64_t stale_ms, hf_rec **ret, hf_rec **holder)
{
	const char *path = p;
	struct hf_sessionlock_status st;
	int rc = hf_sessionlock_status(path, stale_ms, &st);
	if (rc < 0)
		return rc;
	return hf_rec_out(hf_rec_from_session_status(&st, path), ret);
}

static hf_rec *session_rec(void *p, const struct hf_sessionlock_record *r)
{
	return hf_rec_from_session(r, p);
}

static const struct hf_session_ops fs_session_ops = {
	.open = session_open,
	.close = session_close,
	.take = session_take,
	.release = session_release,
	.renew = session_renew,
	.status = session_status,
	.rec = session_rec,
};

/* ---- the scope registry ------------------------------------------------ */

struct fs_scope {
	char held_registry[PATH_MAX]; /* FB3: where the registration lives   */
};

static int scope_open(const struct hf_backend_opts *b, void **ret)
{
	struct fs_scope *st = calloc(1, sizeof *st);
	if (!st)
		return -ENOMEM;
	*ret = st;
	return 0;
}

static void scope_close(void *p)
{
	free(p);
}

/* RG12, RG13: the registry file a works on - HF_OPT_REGISTRY's; else the
 * one of its specs' paths, one for all of them; else the current
 * directory's - into path (PATH_MAX bytes). 0; HF_EUNSAFE (no default: h's
 * reason and request_index); -EINVAL (two specs in two registries: the
 * second's request_index); -errno. h zeroed first. */
static int scope_registry(const struct hf_scope_args *a, char *path, struct hf_scopereg_holder *h)
{
	memset(h, 0, sizeof *h);
	if (a->registry)
		return snprintf(path, PATH_MAX, "%s", a->registry) < PATH_MAX ? 0 : -ENAMETOOLONG;
	if (!a->nspecs)
		return hf_scopereg_path_for(".", path, PATH_MAX, h->reason, sizeof h->reason);
	char other[PATH_MAX], sp[PATH_MAX];
	for (size_t i = 0; i < a->nspecs; i++) {
		size_t pl;
		bool w, r;
		const char *spec = a->specs[i];
		h->request_index = i;
		if (hf_spec_split(spec, strlen(spec), &pl, &w, &r) < 0)
			return -EINVAL; /* hf_scope_add let only specs in */
		if (pl >= sizeof sp)
			return -ENAMETOOLONG;
		memcpy(sp, spec, pl);
		sp[pl] = '\0';
		int rc = hf_scopereg_path_for(sp, i ? other : path, PATH_MAX, h->reason,
					      sizeof h->reason);
		if (rc < 0)
			return rc;
		if (i && strcmp(other, path)) /* RG13 */
			return hf_regfile_say(h, -EINVAL,
					      "its registry is %s, the first spec's is %s: one "
					      "registration lives in one registry (register them "
					      "apart, or set HOLDFAST_REGISTRY)",
					      other, path);
	}
	h->request_index = 0;
	return 0;
}

/* The registry's directory, for the waiter: "" when it cannot be named. */
static void registry_dir(const char *path, char *dir, size_t n)
{
	char base[PATH_MAX];
	if (hf_path_split(path, dir, n, base, sizeof base) < 0)
		dir[0] = '\0';
}

static int scope_register(void *p, const struct hf_scope_args *a, uint64_t *gen, int *fd,
			  struct hf_scopereg_holder *h, int *h_rc)
{
	struct fs_scope *st = p;
	char path[PATH_MAX];
	int rc = scope_registry(a, path, h); /* RG12, RG13 */
	if (rc < 0) {
		*h_rc = rc;
		return rc;
	}
	struct hf_scopereg_request req = {
		.registry = path, .name = a->name, .specs = a->specs, .nspecs = a->nspecs,
		.pid = a->pid, .socket = a->socket, .from = a->from,
		.lock_wait_ms = a->lock_wait_ms, .has_cancel = a->cancel_fd >= 0,
		.cancel_fd = a->cancel_fd, .lease_ms = a->lease_ms, .reason = a->reason,
	};
	/* The table is replaced by a rename of a temporary in its directory and
	 * live files are removed there: any removal or move out of the directory
	 * wakes the waiter (name ""). */
	char dir[PATH_MAX];
	registry_dir(path, dir, sizeof dir);
	struct hf_waiter w;
	hf_wait_init(&w, dir[0] ? dir : ".", "", a->wait_ms);
	hf_wait_set_cancel(&w, a->cancel_fd);
	int refused = 0;
	bool waited_out = false;
	for (;;) {
		rc = hf_scopereg_register(&req, gen, fd, h); /* FB1 */
		if (rc != HF_ECONFLICT && rc != HF_EHELD)
			break;
		refused = rc;
		if (a->wait_ms == 0)
			break;
		/* the holder's release rewrites the table (an event); its end, in
		 * our pid namespace on this host, is a pidfd event (WT5) - the next
		 * attempt reaps it */
		bool local = !h->foreign_pidns && !strcmp(h->host, hf_host_name());
		hf_wait_holder(&w, local && h->pid > 0 && h->pid <= 0x7fffffff ? (pid_t)h->pid : 0);
		hf_sys_point(HF_PT_SCOPE_REGISTER_WAITING);
		int wrc = hf_wait_next(&w); /* FB1 */
		if (wrc < 0) {
			rc = wrc; /* HF_ETIMEDOUT, HF_ECANCELED: the last holder seen stays */
			waited_out = true;
			break;
		}
	}
	hf_wait_done(&w);
	if (rc == 0)
		snprintf(st->held_registry, sizeof st->held_registry, "%s", path);
	*h_rc = waited_out ? refused : rc;
	return rc;
}

/* The registry a release or a renewal acts on: the one the handle holds
 * its registration in (FB3), else its specs' (RG12). */
static int scope_held_registry(const struct fs_scope *st, const struct hf_scope_args *a,
			       char *path, struct hf_scopereg_holder *h)
{
	if (!a->holds)
		return scope_registry(a, path, h);
	strcpy(path, st->held_registry); /* FB3 */
	return 0;
}

static int scope_release(void *p, const struct hf_scope_args *a, struct hf_scopereg_holder *h)
{
	char path[PATH_MAX];
	int rc = scope_held_registry(p, a, path, h);
	return rc < 0 ? rc : hf_scopereg_release(path, a->name, a->generation, h);
}

static int scope_renew(void *p, const struct hf_scope_args *a, int64_t lease_ms,
		       struct hf_scopereg_holder *h)
{
	char path[PATH_MAX];
	int rc = scope_held_registry(p, a, path, h);
	return rc < 0 ? rc : hf_scopereg_renew(path, a->name, a->generation, lease_ms, h); /* RG15 */
}

static int scope_table(void *p, const struct hf_scope_args *a, bool reap,
		       struct hf_scopereg_table **ret, struct hf_scopereg_holder *h)
{
	char path[PATH_MAX];
	int rc = scope_registry(a, path, h); /* RG12, RG13 */
	if (rc < 0)
		return rc;
	return reap ? hf_scopereg_reap(path, ret, h) : hf_scopereg_read(path, ret, h);
}

static const struct hf_scope_ops fs_scope_ops = {
	.open = scope_open,
	.close = scope_close,
	.register_ = scope_register,
	.release = scope_release,
	.renew = scope_renew,
	.table = scope_table,
};

const struct hf_backend hf_fs_backend = {
	.name = "file",
	.lock = &fs_lock_ops,
	.session = &fs_session_ops,
	.scope = &fs_scope_ops,
};
