/*
 * handle_session.c - the session lock's public handle (holdfast.h,
 * hf_session): options, a take that waits (woken when the lock file leaves
 * its name, or a watch on etcd), the release and renewal of what it took,
 * and the records of what it saw - over its backend's operations.
 *
 * Invariants:
 *  (HS1) A wait never passes its deadline and ends at once when the cancel
 *        descriptor is readable (the waiter's WT1, WT4; each backend's).
 *  (HS2) Every attempt is a whole take of the backend's: waiting adds no
 *        step to the protocol, only sleeps between its attempts.
 *  (HS3) A handle that took the session releases only that take: its
 *        owner token is required (unless HF_OPT_OWNER names another), so a
 *        release after the session was broken and taken by another of the
 *        same lane is refused (HF_ENOTYOURS), not a theft.
 *  (HS4) A take's own record is built only when hf_session_holder asks
 *        for it: a take that nobody asks about costs no JSON.
 *  (HS5) A handle does every verb on the backend its options chose
 *        (HF_OPT_BACKEND: backend.h) and none elsewhere; on the file system
 *        its waits are inotify waits between whole takes (fs_backend.c,
 *        FB1), on etcd watches of the key (etcd_backend.c).
 */
#include "floor.h"
#include "backend.h"
#include "handle.h"
#include "rec.h"
#include "session.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct hf_session {
	char *path;                    /* its own copy: the handle stays small */
	char lane[HF_LANE_MAX + 1];
	char owner[HF_OWNER_MAX + 1];  /* "": none set (take generates)    */
	char taken[HF_OWNER_MAX + 1];  /* the owner recorded by the last take */
	int64_t wait_ms, stale_ms;
	int cancel_fd;
	hf_rec *holder;
	struct hf_sessionlock_record took; /* the last take's record (HS4)   */
	bool holder_is_took;            /* hf_session_holder builds it       */
	struct hf_backend_opts bo;     /* HS5: where the session lives (BE1) */
	const struct hf_session_ops *ops; /* the state's backend             */
	void *st;
	unsigned st_changes;
};

/* HS5, BE2: s's backend state, made anew when its options changed (a
 * session handle holds nothing between verbs). 0 or -errno. */
static int ready(hf_session *s)
{
	if (s->st && s->st_changes == s->bo.changes)
		return 0;
	const struct hf_session_ops *ops = hf_backend_of(&s->bo)->session;
	void *st = NULL;
	int rc = ops->open(s->path, &s->bo, &st);
	if (rc < 0) {
		s->holder_is_took = false;
		hf_rec_put(&s->holder, NULL);
		return rc;
	}
	if (s->st)
		s->ops->close(s->st);
	s->ops = ops;
	s->st = st;
	s->st_changes = s->bo.changes;
	return 0;
}

static int session_make(const char *path, const char *lane, hf_session **ret)
{
	hf_session *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	int rc = 0;
	char def[PATH_MAX];
	if (path) {
		if (!*path || strlen(path) >= PATH_MAX)
			rc = *path ? -ENAMETOOLONG : -EINVAL;
	} else {
		rc = hf_session_default_path(def, sizeof def);
		path = def;
	}
	if (rc == 0 && !(s->path = strdup(path)))
		rc = -ENOMEM;
	if (rc < 0) {
		free(s);
		return rc;
	}
	strcpy(s->lane, lane);
	s->cancel_fd = -1;
	*ret = s;
	return 0;
}

int hf_session_new(const char *path, const char *lane, hf_session **ret)
{
	if (!lane || !*lane || !hf_text_ok(lane, HF_LANE_MAX) || !ret)
		return -EINVAL;
	return session_make(path, lane, ret);
}

int hf_session_set(hf_session *s, int opt, int64_t v)
{
	int rc = hf_opt_check(s, opt, v);
	if (rc < 0)
		return rc;
	if (hf_opt_wait(opt, v, &s->wait_ms, &s->cancel_fd))
		return 0;
	switch (opt) {
	case HF_OPT_STALE_MS:
		s->stale_ms = v;
		return 0;
	case HF_OPT_TIMEOUT_MS: /* BE1; a session has no lease (no TTL) */
		return hf_backend_set(&s->bo, opt, v);
	}
	return -EINVAL;
}

int hf_session_set_str(hf_session *s, int opt, const char *v)
{
	if (!s)
		return -EINVAL;
	if (opt != HF_OPT_OWNER) {
		int rc = hf_backend_set_str(&s->bo, opt, v, false); /* BE1 */
		return rc == 1 ? -EINVAL : rc;
	}
	if (!v) {
		s->owner[0] = '\0';
		return 0;
	}
	if (!*v || !hf_text_ok(v, HF_OWNER_MAX))
		return -EINVAL;
	strcpy(s->owner, v);
	return 0;
}

static void opts_of(const hf_session *s, struct hf_sessionlock_opts *o)
{
	memset(o, 0, sizeof *o);
	o->path = s->path;
	o->lane = s->lane;
	o->owner = s->owner[0] ? s->owner : NULL;
	o->stale_ms = s->stale_ms;
}

int hf_session_take(hf_session *s)
{
	if (!s)
		return -EINVAL;
	struct hf_sessionlock_opts o;
	opts_of(s, &o);
	int rc = ready(s);
	if (rc < 0)
		return rc;
	struct hf_sessionlock_record taken;
	s->holder_is_took = false;
	rc = s->ops->take(s->st, &o, s->wait_ms, s->cancel_fd, &taken, &s->holder); /* HS1, HS2 */
	if (rc != 0)
		return rc;
	strcpy(s->taken, taken.owner);
	s->took = taken;
	hf_rec_put(&s->holder, NULL);
	s->holder_is_took = true; /* HS4: built when asked for */
	return taken.has_broke ? 1 : 0; /* how many stale sessions it broke */
}

/* The start of a verb on what this handle took (release, renew): *o
 * naming its take (HS3), the backend ready. 0, or the failure. */
static int mine_begin(hf_session *s, struct hf_sessionlock_opts *o)
{
	opts_of(s, o);
	if (!o->owner && s->taken[0])
		o->owner = s->taken; /* HS3: what this handle took, only that */
	s->holder_is_took = false;
	return ready(s);
}

int hf_session_release(hf_session *s)
{
	if (!s)
		return -EINVAL;
	struct hf_sessionlock_opts o;
	int rc = mine_begin(s, &o);
	if (rc < 0)
		return rc;
	return s->ops->release(s->st, &o, &s->holder);
}

int hf_session_renew(hf_session *s)
{
	if (!s)
		return -EINVAL;
	struct hf_sessionlock_opts o;
	struct hf_sessionlock_record r;
	int rc = mine_begin(s, &o);
	if (rc < 0)
		return rc;
	rc = s->ops->renew(s->st, &o, &r, &s->holder);
	if (rc == 0) {
		s->took = r;
		strcpy(s->taken, r.owner);
		hf_rec_put(&s->holder, NULL);
		s->holder_is_took = true;
	}
	return rc;
}

const char *hf_session_owner(const hf_session *s)
{
	return s && s->taken[0] ? s->taken : NULL;
}

const hf_rec *hf_session_holder(const hf_session *s)
{
	if (!s)
		return NULL;
	if (s->holder_is_took && !s->holder && s->st) {
		hf_session *m = (hf_session *)s; /* a cache: the handle says the same */
		m->holder = s->ops->rec(s->st, &s->took);
	}
	return s->holder;
}

void hf_session_free(hf_session *s)
{
	if (!s)
		return;
	hf_rec_free(s->holder);
	if (s->st)
		s->ops->close(s->st);
	hf_backend_clear(&s->bo);
	free(s->path);
	free(s);
}

int hf_session_query(hf_session *s, hf_rec **ret)
{
	if (!s || !ret)
		return -EINVAL;
	int rc = ready(s);
	if (rc < 0)
		return rc;
	return s->ops->status(s->st, s->stale_ms, ret, &s->holder);
}

int hf_session_status(const char *path, int64_t stale_ms, hf_rec **ret)
{
	if (!ret)
		return -EINVAL;
	hf_session *s;
	int rc = session_make(path, "", &s); /* no lane: status reads any */
	if (rc < 0)
		return rc;
	s->stale_ms = stale_ms;
	rc = hf_session_query(s, ret);
	hf_session_free(s);
	return rc;
}
