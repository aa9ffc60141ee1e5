/*
 * handle_session.c - the session lock's public handle (holdfast.h,
 * hf_session): options, a take that waits (woken when the lock file leaves
 * its name: a release, a break or a withdrawal renames it to an aside), and
 * the records of session.c's structs.
 *
 * Invariants:
 *  (HS1) A wait never passes its deadline and ends at once when the cancel
 *        descriptor is readable (the waiter's WT1, WT4).
 *  (HS2) Every attempt is a whole hf_sessionlock_take: waiting adds no
 *        step to the protocol, only sleeps between its attempts.
 *  (HS3) A handle that took the session releases only that take: its
 *        owner token is required (unless HF_OPT_OWNER names another), so a
 *        release after the session was broken and taken by another of the
 *        same lane is refused (HF_ENOTYOURS), not a theft.
 *  (HS4) A take's own record is built only when hf_session_holder asks
 *        for it: a take that nobody asks about costs no JSON.
 *  (HS5) A handle with HF_OPT_BACKEND "etcd://..." does every verb on etcd
 *        (etcdsession.c) and none on the file system; its waits are
 *        watches of the key.
 *  (HS6) A waiting take on etcd outlives a failed request or watch only
 *        within its deadline and HF_ETCD_RETRIES failures in a row.
 */
#include "etcd.h"
#include "internal.h"
#include "handle.h"
#include "rec.h"
#include "session.h"
#include "wait.h"

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
	/* HS5: the etcd backend, when set; es made from these at a verb */
	char *backend, *etcd_user, *etcd_pwfile, *etcd_ca;
	int64_t timeout_ms;
	struct hf_etcdsession *es;
	bool es_dirty;
};

/* HS5: s's etcd session, made anew when its options changed. 0 (s->es
 * NULL: the file system), -errno. */
static int etcd_ready(hf_session *s)
{
	if (!s->backend) {
		hf_etcdsession_free(s->es);
		s->es = NULL;
		return 0;
	}
	if (s->es && !s->es_dirty)
		return 0;
	struct hf_etcd_cfg cfg;
	int rc = hf_etcd_cfg_make(s->backend, s->etcd_user, s->etcd_pwfile, s->etcd_ca,
				  s->timeout_ms, &cfg);
	struct hf_etcdsession *es = NULL;
	if (rc == 0)
		rc = hf_etcdsession_new(s->path, &cfg, &es);
	hf_etcd_cfg_clear(&cfg);
	if (rc < 0)
		return rc;
	hf_etcdsession_free(s->es);
	s->es = es;
	s->es_dirty = false;
	return 0;
}

int hf_session_new(const char *path, const char *lane, hf_session **ret)
{
	if (!lane || !*lane || !hf_text_ok(lane, HF_LANE_MAX) || !ret)
		return -EINVAL;
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
	case HF_OPT_TIMEOUT_MS:
		s->timeout_ms = v;
		s->es_dirty = true;
		return 0;
	}
	return -EINVAL;
}

int hf_session_set_str(hf_session *s, int opt, const char *v)
{
	if (!s)
		return -EINVAL;
	char **slot = NULL;
	switch (opt) {
	case HF_OPT_OWNER:
		break;
	case HF_OPT_BACKEND:
		slot = &s->backend;
		if (v && !strcmp(v, "file"))
			v = NULL;
		if (v) {
			struct hf_etcd_cfg cfg;
			int rc = hf_etcd_cfg_parse(v, &cfg);
			hf_etcd_cfg_clear(&cfg);
			if (rc < 0)
				return rc;
		}
		break;
	case HF_OPT_ETCD_USER:
		slot = &s->etcd_user;
		break;
	case HF_OPT_ETCD_PASSWORD_FILE:
		slot = &s->etcd_pwfile;
		break;
	case HF_OPT_ETCD_CA_FILE:
		slot = &s->etcd_ca;
		break;
	default:
		return -EINVAL;
	}
	if (slot) {
		if (v && (!*v || strlen(v) >= PATH_MAX))
			return -EINVAL;
		char *c = v ? strdup(v) : NULL;
		if (v && !c)
			return -ENOMEM;
		free(*slot);
		*slot = c;
		s->es_dirty = true;
		return 0;
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

/* An etcd session's record: the file's fields and "backend", "key". */
static hf_rec *etcd_mark(const hf_session *s, hf_rec *r)
{
	json_t *o = r && s->es ? hf_rec_object(r) : NULL;
	if (o) {
		json_object_set_new(o, "backend", json_string("etcd"));
		json_object_set_new(o, "key", json_string(hf_etcdsession_key(s->es)));
	}
	return r;
}

static void holder_set(hf_session *s, const struct hf_sessionlock_status *st)
{
	s->holder_is_took = false;
	hf_rec_put(&s->holder, st ? etcd_mark(s, hf_rec_from_session_status(st, s->path)) : NULL);
}

/* A failure of the etcd client: its reason as the holder record. */
static int etcd_fail(hf_session *s, int rc)
{
	const char *why = s->es ? hf_etcdsession_why(s->es) : "";
	s->holder_is_took = false;
	hf_rec_put(&s->holder, why[0] ? hf_rec_reason(why, s->path) : NULL);
	return rc;
}

/* HS5: a take on etcd, waiting by watch (HS1). */
static int etcd_take(hf_session *s, const struct hf_sessionlock_opts *o,
		     struct hf_sessionlock_record *taken, struct hf_sessionlock_status *h)
{
	int64_t deadline = s->wait_ms < 0 ? -1 : s->wait_ms == 0 ? 0 :
			   hf_sys_mono_ns() + s->wait_ms * 1000000LL;
	int broken = 0; /* failures in a row: a waiting take outlives a few (HS6) */
	hf_etcdsession_wait_begin(s->es);
	for (;;) {
		int64_t rev = 0;
		memset(h, 0, sizeof *h);
		int rc = hf_etcdsession_take(s->es, o, taken, h, &rev);
		if (rc == HF_EHELD)
			holder_set(s, h);
		if (rc == -EIO && deadline != 0) {
			hf_etcdsession_wait_unanswered(s->es); /* ES-4: it may be ours */
			if ((rc = hf_etcd_again(deadline, s->cancel_fd, ++broken)) == 0)
				continue;
		}
		if (rc != HF_EHELD || deadline == 0)
			return rc;
		rc = hf_etcdsession_watch(s->es, rev, deadline, s->cancel_fd);
		if (rc == -EIO && (rc = hf_etcd_again(deadline, s->cancel_fd, ++broken)) == 0)
			continue; /* its member went: judge again at the next one */
		if (rc < 0 || rc == HF_ETIMEDOUT || rc == HF_ECANCELED)
			return rc;
		broken = 0;
	}
}

int hf_session_take(hf_session *s)
{
	if (!s)
		return -EINVAL;
	struct hf_sessionlock_opts o;
	opts_of(s, &o);
	int rc = etcd_ready(s);
	if (rc < 0)
		return etcd_fail(s, rc);
	struct hf_sessionlock_record taken;
	struct hf_sessionlock_status h;
	if (s->es) {
		rc = etcd_take(s, &o, &taken, &h);
		goto done;
	}
	char dir[PATH_MAX], name[NAME_MAX + 1];
	rc = hf_path_split(s->path, dir, sizeof dir, name, sizeof name);
	if (rc < 0)
		return rc;
	struct hf_waiter w;
	hf_wait_init(&w, dir, name, s->wait_ms);
	hf_wait_set_cancel(&w, s->cancel_fd);
	for (;;) {
		memset(&h, 0, sizeof h);
		rc = hf_sessionlock_take(&o, &taken, &h); /* HS2 */
		if (rc != HF_EHELD)
			break;
		holder_set(s, &h);
		/* a session ends by a release or a break, both renaming it away
		 * from its name (an event), never by its taker's end; one in an
		 * aside comes back unseen: the short backoff (WT6) */
		if (!h.in_aside)
			hf_wait_holder(&w, 0);
		int wrc = hf_wait_next(&w); /* HS1 */
		if (wrc == HF_ETIMEDOUT) {
			rc = s->wait_ms != 0 ? HF_ETIMEDOUT : HF_EHELD;
			break;
		}
		if (wrc < 0) {
			rc = wrc;
			break;
		}
	}
	hf_wait_done(&w);
done:
	if (rc == 0) {
		strcpy(s->taken, taken.owner);
		s->took = taken;
		hf_rec_put(&s->holder, NULL);
		s->holder_is_took = true; /* HS4: built when asked for */
		return taken.has_broke ? 1 : 0; /* how many stale sessions it broke */
	} else if (rc == HF_EUNREADABLE) {
		holder_set(s, &h);
	} else if (s->es && rc < 0 && rc != HF_EHELD && rc != HF_ETIMEDOUT && rc != HF_ECANCELED) {
		etcd_fail(s, rc); /* a wait that ended keeps the holder it saw */
	} else if (rc != HF_ETIMEDOUT && rc != HF_EHELD && rc != HF_ECANCELED) {
		holder_set(s, NULL);
	}
	return rc;
}

/* The start of a verb on what this handle took (release, renew): *o
 * naming its take (HS3), *h cleared, the backend ready. 0, or the failure
 * (etcd_fail's). */
static int mine_begin(hf_session *s, struct hf_sessionlock_opts *o,
		      struct hf_sessionlock_status *h)
{
	opts_of(s, o);
	if (!o->owner && s->taken[0])
		o->owner = s->taken; /* HS3: what this handle took, only that */
	memset(h, 0, sizeof *h);
	int rc = etcd_ready(s);
	return rc < 0 ? etcd_fail(s, rc) : 0;
}

int hf_session_release(hf_session *s)
{
	if (!s)
		return -EINVAL;
	struct hf_sessionlock_opts o;
	struct hf_sessionlock_status h;
	int rc = mine_begin(s, &o, &h);
	if (rc < 0)
		return rc;
	rc = s->es ? hf_etcdsession_release(s->es, &o, &h) : hf_sessionlock_release(&o, &h);
	if (s->es && rc < 0 && rc != HF_ENOTHELD && rc != HF_ENOTYOURS && rc != HF_EUNREADABLE)
		return etcd_fail(s, rc);
	holder_set(s, rc == HF_ENOTYOURS || rc == HF_EUNREADABLE ? &h : NULL);
	return rc;
}

int hf_session_renew(hf_session *s)
{
	if (!s)
		return -EINVAL;
	struct hf_sessionlock_opts o;
	struct hf_sessionlock_record r;
	struct hf_sessionlock_status h;
	int rc = mine_begin(s, &o, &h);
	if (rc < 0)
		return rc;
	rc = s->es ? hf_etcdsession_renew(s->es, &o, &r, &h) : hf_sessionlock_renew(&o, &r, &h);
	if (s->es && rc < 0 && rc != HF_ENOTHELD && rc != HF_ENOTYOURS && rc != HF_EUNREADABLE &&
	    rc != HF_ELOST)
		return etcd_fail(s, rc);
	if (rc == 0) {
		s->took = r;
		strcpy(s->taken, r.owner);
		hf_rec_put(&s->holder, NULL);
		s->holder_is_took = true;
		return 0;
	}
	holder_set(s, (rc == HF_ENOTYOURS || rc == HF_EUNREADABLE || rc == HF_ELOST) && h.state
			      ? &h
			      : NULL);
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
	if (s->holder_is_took && !s->holder) {
		hf_session *m = (hf_session *)s; /* a cache: the handle says the same */
		m->holder = etcd_mark(s, hf_rec_from_session(&s->took, s->path));
	}
	return s->holder;
}

void hf_session_free(hf_session *s)
{
	if (!s)
		return;
	hf_rec_free(s->holder);
	hf_etcdsession_free(s->es);
	free(s->backend);
	free(s->etcd_user);
	free(s->etcd_pwfile);
	free(s->etcd_ca);
	free(s->path);
	free(s);
}

int hf_session_status(const char *path, int64_t stale_ms, hf_rec **ret)
{
	if (!ret)
		return -EINVAL;
	char def[PATH_MAX];
	int rc = hf_session_resolve_path(&path, def, sizeof def);
	if (rc < 0)
		return rc;
	struct hf_sessionlock_status st;
	rc = hf_sessionlock_status(path, stale_ms, &st);
	if (rc < 0)
		return rc;
	hf_rec *r = hf_rec_from_session_status(&st, path);
	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}

int hf_session_query(hf_session *s, hf_rec **ret)
{
	if (!s || !ret)
		return -EINVAL;
	int rc = etcd_ready(s);
	if (rc < 0)
		return etcd_fail(s, rc);
	if (!s->es)
		return hf_session_status(s->path, s->stale_ms, ret);
	struct hf_sessionlock_status st;
	memset(&st, 0, sizeof st);
	rc = hf_etcdsession_status(s->es, s->stale_ms, &st);
	if (rc < 0)
		return etcd_fail(s, rc);
	hf_rec *r = etcd_mark(s, hf_rec_from_session_status(&st, s->path));
	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}
