/*
 * handle_scope.c - the scope's public handle (holdfast.h, hf_scope): the
 * pod's name, specs and options, a register that waits (woken when the
 * registry file changes), the release, and what a handle remembers between
 * them (its generation, liveness descriptor, the last refusal). The
 * registry's protocol is registry.c's; the read-only snapshot is
 * handle_registry.c's.
 *
 * Invariants:
 *  (HC1) A handle holds at most one registration: its generation and
 *        descriptor belong to it until release, detach or free.
 *  (HC2) hf_scope_free releases only what this process registered with the
 *        handle: a forked child freeing an inherited handle releases nothing.
 *  (HC3) The liveness descriptor is closed only after the release (or
 *        handed over by detach), never before: while the table names the
 *        pod, its owner's liveness file stays locked.
 *  (HC4) A wait never passes its deadline and ends at once when the cancel
 *        descriptor is readable (the waiter's W1, W4); every attempt is a
 *        whole hf_scopereg_register, so waiting adds no state of its own.
 *  (HC5) A handle with HF_OPT_BACKEND "etcd://..." registers, releases and
 *        reads on etcd (etcdscope.c) and nowhere else (a wait there is a
 *        watch, ES5); its registration has no descriptor (-1) but a lease,
 *        kept alive by the handle's thread until release, detach or free,
 *        or by hf_scope_keep.
 */
#include "internal.h"
#include "etcdscope.h"
#include "handle.h"
#include "rec.h"
#include "registry.h"
#include "wait.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hf_scope {
	char name[HF_POD_NAME_MAX + 1];
	char **specs;
	size_t nspecs, cap;
	char *registry, *socket, *from;   /* options; NULL: the default      */
	/* HC5: the etcd backend, when set; es made from these at a verb */
	char *backend, *etcd_user, *etcd_pwfile, *etcd_ca;
	int64_t ttl_ms, timeout_ms;
	struct hf_etcdscope *es;
	bool es_dirty;
	pid_t pid;
	int64_t wait_ms, lock_wait_ms;
	int cancel_fd;                    /* -1: none                          */
	uint64_t generation;              /* granted, or HF_OPT_GENERATION     */
	bool holds;                       /* registered, not released/detached */
	pid_t registered_by;              /* getpid() of the registration (HC2) */
	int fd;                           /* the liveness descriptor, -1       */
	char held_registry[PATH_MAX];     /* where it was registered           */
	hf_rec *holder;
};

int hf_scope_new(const char *name, hf_scope **ret)
{
	if (!name || !ret || !hf_pod_name_ok(name))
		return -EINVAL;
	hf_scope *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	strcpy(s->name, name); /* hf_pod_name_ok: at most HF_POD_NAME_MAX */
	s->cancel_fd = -1;
	s->fd = -1;
	*ret = s;
	return 0;
}

static void holder_reason(hf_scope *s, const char *why)
{
	hf_rec_put(&s->holder, why ? hf_rec_reason(why, NULL) : NULL);
}

int hf_scope_add(hf_scope *s, const char *spec)
{
	if (!s || !spec)
		return -EINVAL;
	size_t pl;
	bool w, r;
	if (s->nspecs >= HF_REG_MAX_SPECS) {
		holder_reason(s, "at most 1024 specs");
		return -EINVAL;
	}
	/* the form only: a path too long is refused when registering, with
	 * the reason the look-up gives */
	if (!hf_text_ok(spec, SIZE_MAX) ||
	    hf_spec_split(spec, strlen(spec), &pl, &w, &r) < 0) {
		holder_reason(s, "not a spec PATH:MODE[:recursive] (MODE read or write) of UTF-8 "
				 "text without control characters");
		return -EINVAL;
	}
	if (s->nspecs == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;
		char **v = realloc(s->specs, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		s->specs = v;
		s->cap = cap;
	}
	if (!(s->specs[s->nspecs] = strdup(spec)))
		return -ENOMEM;
	s->nspecs++;
	holder_reason(s, NULL);
	return 0;
}

int hf_scope_set(hf_scope *s, int opt, int64_t v)
{
	int rc = hf_opt_check(s, opt, v);
	if (rc < 0)
		return rc;
	if (hf_opt_wait(opt, v, &s->wait_ms, &s->cancel_fd))
		return 0;
	switch (opt) {
	case HF_OPT_PID:
		s->pid = (pid_t)v;
		return 0;
	case HF_OPT_LOCK_WAIT_MS:
		s->lock_wait_ms = v;
		return 0;
	case HF_OPT_TTL_MS:
		s->ttl_ms = v;
		s->es_dirty = true;
		return 0;
	case HF_OPT_TIMEOUT_MS:
		s->timeout_ms = v;
		s->es_dirty = true;
		return 0;
	case HF_OPT_GENERATION:
		if (s->holds)
			return -EBUSY; /* HC1: it has its own */
		s->generation = (uint64_t)v;
		return 0;
	}
	return -EINVAL;
}

int hf_scope_set_str(hf_scope *s, int opt, const char *v)
{
	if (!s)
		return -EINVAL;
	char **slot = opt == HF_OPT_REGISTRY ? &s->registry
		      : opt == HF_OPT_SOCKET ? &s->socket
		      : opt == HF_OPT_FROM   ? &s->from
					     : NULL;
	if (!slot) {
		slot = opt == HF_OPT_BACKEND		? &s->backend
		       : opt == HF_OPT_ETCD_USER	? &s->etcd_user
		       : opt == HF_OPT_ETCD_PASSWORD_FILE ? &s->etcd_pwfile
		       : opt == HF_OPT_ETCD_CA_FILE	? &s->etcd_ca
							: NULL;
		if (!slot)
			return -EINVAL;
		if (opt == HF_OPT_BACKEND && v && !strcmp(v, "file"))
			v = NULL;
		if (opt == HF_OPT_BACKEND && v) {
			struct hf_etcd_cfg cfg;
			int rc = hf_etcd_cfg_parse(v, &cfg);
			hf_etcd_cfg_clear(&cfg);
			if (rc < 0)
				return rc;
		}
		if (v && (!*v || strlen(v) >= PATH_MAX))
			return -EINVAL;
		if (s->holds && opt == HF_OPT_BACKEND)
			return -EBUSY; /* HC5: held where it was registered */
		s->es_dirty = true;
	}
	char *copy = NULL;
	if (v && !(copy = strdup(v)))
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

/* The registry's directory, for the waiter: "" when it cannot be named. */
static void registry_dir(const char *path, char *dir, size_t n)
{
	char base[PATH_MAX];
	if (hf_path_split(path, dir, n, base, sizeof base) < 0)
		dir[0] = '\0';
}

static void holder_set(hf_scope *s, const struct hf_scopereg_holder *h, int rc)
{
	const char *given = NULL;
	if (rc == HF_ECONFLICT || rc == HF_ENOTYOURS || rc == -EINVAL)
		given = h->request_index < s->nspecs ? s->specs[h->request_index] : NULL;
	hf_rec_put(&s->holder, hf_rec_from_scope_holder(h, rc, given));
}

/* RG12, RG13: the registry file s works on - HF_OPT_REGISTRY's; else the
 * one of its specs' paths, one for all of them; else the current
 * directory's - into path (PATH_MAX bytes). 0; HF_EUNSAFE (no default: h's
 * reason and request_index); -EINVAL (two specs in two registries: the
 * second's request_index); -errno. h zeroed first. */
static int scope_registry(const hf_scope *s, char *path, struct hf_scopereg_holder *h)
{
	memset(h, 0, sizeof *h);
	if (s->registry)
		return snprintf(path, PATH_MAX, "%s", s->registry) < PATH_MAX ? 0 : -ENAMETOOLONG;
	if (!s->nspecs)
		return hf_scopereg_path_for(".", path, PATH_MAX, h->reason, sizeof h->reason);
	char other[PATH_MAX], sp[PATH_MAX];
	for (size_t i = 0; i < s->nspecs; i++) {
		size_t pl;
		bool w, r;
		const char *spec = s->specs[i];
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

/* HC5: the etcd registry of s, made anew from its options when they
 * changed and nothing is held. 0 (s->es NULL: the file), -errno. */
static int etcd_ready(hf_scope *s)
{
	if (!s->backend) {
		if (!s->holds && s->es) {
			hf_etcdscope_free(s->es);
			s->es = NULL;
		}
		return 0;
	}
	if (s->es && (!s->es_dirty || s->holds))
		return 0;
	struct hf_etcd_cfg cfg;
	int rc = hf_etcd_cfg_make(s->backend, s->etcd_user, s->etcd_pwfile, s->etcd_ca,
				  s->timeout_ms, &cfg);
	struct hf_etcdscope *es = NULL;
	if (rc == 0)
		rc = hf_etcdscope_new(s->backend, &cfg, &es);
	hf_etcd_cfg_clear(&cfg);
	if (rc < 0)
		return rc;
	hf_etcdscope_set_ttl(es, s->ttl_ms);
	hf_etcdscope_free(s->es);
	s->es = es;
	s->es_dirty = false;
	return 0;
}

/* HC5: register on etcd; a wait (HF_OPT_WAIT_MS) is a watch there (ES5),
 * with the file's outcomes (HC4): the last holder kept on HF_ETIMEDOUT and
 * HF_ECANCELED. */
static int etcd_register(hf_scope *s)
{
	struct hf_etcdscope_wait w = { .wait_ms = s->wait_ms, .cancel_fd = s->cancel_fd };
	struct hf_scopereg_request req = {
		.name = s->name, .specs = (const char *const *)s->specs, .nspecs = s->nspecs,
		.pid = s->pid, .socket = s->socket, .from = s->from,
	};
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	uint64_t gen = 0;
	int rc = hf_etcdscope_register(s->es, &req, &w, &gen, h);
	if (rc == 0) {
		assert(gen > 0 && "HC1");
		s->holds = true;
		s->fd = -1;
		s->generation = gen;
		s->registered_by = getpid();
		holder_reason(s, NULL);
	} else {
		bool waited_out = (rc == HF_ETIMEDOUT || rc == HF_ECANCELED) && w.refused;
		holder_set(s, h, waited_out ? w.refused : rc); /* HC4: the last holder seen */
	}
	free(h);
	return rc;
}

/* A failure of the etcd client before a verb ran: its reason. */
static int etcd_fail(hf_scope *s, int rc)
{
	holder_reason(s, rc == -EPROTONOSUPPORT ? "this library has no etcd client" : NULL);
	return rc;
}

int hf_scope_register(hf_scope *s)
{
	if (!s)
		return -EINVAL;
	if (s->holds)
		return -EALREADY; /* HC1 */
	int erc = etcd_ready(s);
	if (erc < 0)
		return etcd_fail(s, erc);
	if (s->es)
		return etcd_register(s);
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	char path[PATH_MAX];
	int rc = scope_registry(s, path, h); /* RG12, RG13 */
	if (rc < 0) {
		holder_set(s, h, rc);
		free(h);
		return rc;
	}
	struct hf_scopereg_request req = {
		.registry = path, .name = s->name, .specs = (const char *const *)s->specs,
		.nspecs = s->nspecs, .pid = s->pid, .socket = s->socket, .from = s->from,
		.lock_wait_ms = s->lock_wait_ms, .has_cancel = s->cancel_fd >= 0,
		.cancel_fd = s->cancel_fd,
	};
	/* The table is replaced by a rename of a temporary in its directory and
	 * live files are removed there: any removal or move out of the directory
	 * wakes the waiter (name ""). */
	char dir[PATH_MAX];
	registry_dir(path, dir, sizeof dir);
	struct hf_waiter w;
	hf_wait_init(&w, dir[0] ? dir : ".", "", s->wait_ms);
	hf_wait_set_cancel(&w, s->cancel_fd);
	uint64_t gen = 0;
	int fd = -1;
	bool waited_out = false;
	for (;;) {
		rc = hf_scopereg_register(&req, &gen, &fd, h); /* HC4 */
		if (rc != HF_ECONFLICT && rc != HF_EHELD)
			break;
		holder_set(s, h, rc);
		if (s->wait_ms == 0)
			break;
		/* the holder's release rewrites the table (an event); its end, in
		 * our pid namespace on this host, is a pidfd event (WT5) - the next
		 * attempt reaps it */
		bool local = !h->foreign_pidns && !strcmp(h->host, hf_host_name());
		hf_wait_holder(&w, local && h->pid > 0 && h->pid <= 0x7fffffff ? (pid_t)h->pid : 0);
		hf_sys_point(HF_PT_SCOPE_REGISTER_WAITING);
		int wrc = hf_wait_next(&w); /* HC4 */
		if (wrc < 0) {
			/* HF_ETIMEDOUT, HF_ECANCELED: the last holder seen stays */
			rc = wrc;
			waited_out = true;
			break;
		}
	}
	hf_wait_done(&w);
	if (rc == 0) {
		assert(fd >= 0 && gen > 0 && "HC1");
		s->holds = true;
		s->fd = fd;
		s->generation = gen;
		s->registered_by = getpid();
		snprintf(s->held_registry, sizeof s->held_registry, "%s", path);
		holder_reason(s, NULL);
	} else if (!waited_out) {
		holder_set(s, h, rc);
	}
	free(h);
	return rc;
}

int hf_scope_release(hf_scope *s)
{
	if (!s)
		return -EINVAL;
	char path[PATH_MAX];
	int rc = etcd_ready(s);
	if (rc < 0)
		return etcd_fail(s, rc);
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	if (s->es) /* HC5 */
		;
	else if (s->holds)
		strcpy(path, s->held_registry); /* RG13: where it was registered */
	else
		rc = scope_registry(s, path, h);
	if (rc < 0) {
		holder_set(s, h, rc);
		free(h);
		return rc;
	}
	if (s->es) {
		rc = hf_etcdscope_release(s->es, s->name, s->generation, h);
	} else {
		rc = hf_scopereg_release(path, s->name, s->generation, h);
		if (s->fd >= 0)
			hf_sys_close(s->fd); /* HC3: after the release */
		s->fd = -1;
	}
	s->holds = false;
	if (rc < 0)
		holder_set(s, h, rc);
	else
		holder_reason(s, NULL);
	free(h);
	return rc;
}

int hf_scope_detach(hf_scope *s)
{
	if (!s || !s->holds)
		return -1;
	if (s->es) /* HC5: the lease stays, its TTL running */
		hf_etcdscope_unkeep(s->es);
	int fd = s->fd;
	s->fd = -1;
	s->holds = false; /* the generation stays readable */
	return fd;
}

uint64_t hf_scope_generation(const hf_scope *s)
{
	return s ? s->generation : 0;
}

int hf_scope_fd(const hf_scope *s)
{
	return s && s->holds ? s->fd : -1;
}

const hf_rec *hf_scope_holder(const hf_scope *s)
{
	return s ? s->holder : NULL;
}

void hf_scope_free(hf_scope *s)
{
	if (!s)
		return;
	if (s->holds && s->registered_by == getpid())
		hf_scope_release(s); /* HC2 */
	if (s->fd >= 0)
		hf_sys_close(s->fd);
	for (size_t i = 0; i < s->nspecs; i++)
		free(s->specs[i]);
	free(s->specs);
	free(s->registry);
	free(s->socket);
	free(s->from);
	free(s->backend);
	free(s->etcd_user);
	free(s->etcd_pwfile);
	free(s->etcd_ca);
	hf_etcdscope_free(s->es); /* joins its keep-alive (EL5) */
	hf_rec_free(s->holder);
	free(s);
}

/* --- paths ---------------------------------------------------------------- */

int hf_scope_canonical(const char *spec, char *buf, size_t n)
{
	if (!spec || !buf)
		return -EINVAL;
	struct hf_spec s;
	return hf_spec_canonicalize(spec, buf, n, &s);
}

int hf_path_canonical(const char *path, char *buf, size_t n)
{
	if (!path || !buf)
		return -EINVAL;
	return hf_path_canonicalize(path, buf, n);
}

int hf_path_identity(const char *path, char *buf, size_t n)
{
	if (!path || !buf)
		return -EINVAL;
	unsigned depth;
	size_t len = strlen(path);
	if (!hf_path_normal(path, len, &depth))
		return -EINVAL;
	struct hf_mounts m;
	int rc = hf_mounts_load(&m);
	if (rc == 0) {
		rc = hf_path_identify(&m, path, len, 'e', buf, n);
		rc = rc < 0 ? rc : 0;
	}
	hf_mounts_free(&m);
	return rc;
}

int hf_registry_path(char *buf, size_t n)
{
	return buf ? hf_scopereg_path(buf, n) : -EINVAL;
}

int hf_registry_path_for(const char *path, char *buf, size_t n)
{
	return path && buf ? hf_scopereg_path_for(path, buf, n, NULL, 0) : -EINVAL;
}

/* --- on the handle's registry (HC5) ------------------------------------------- */

int hf_scope_keep(hf_scope *s)
{
	if (!s)
		return -EINVAL;
	if (!s->es)
		return -EOPNOTSUPP; /* the file's registry: its descriptor (keeper.c) */
	if (!s->generation || !hf_etcdscope_lease(s->es))
		return HF_ENOTHELD;
	pid_t pid = s->pid ? s->pid : getpid();
	uint64_t start = 0;
	if (hf_pid_start(pid, &start) < 0)
		start = 0; /* gone already: the keep revokes at once */
	int rc = hf_etcdscope_keep(s->es, pid, start);
	s->holds = false; /* kept to its end: nothing is held any more */
	return rc;
}

int hf_scope_table(hf_scope *s, bool reap, struct hf_scopereg_table **ret,
		   struct hf_scopereg_holder *h)
{
	int rc = etcd_ready(s);
	if (rc < 0)
		return etcd_fail(s, rc);
	if (s->es)
		return reap ? hf_etcdscope_reap(s->es, ret, h) : hf_etcdscope_read(s->es, ret, h);
	char path[PATH_MAX];
	rc = scope_registry(s, path, h); /* RG12, RG13 */
	if (rc < 0)
		return rc;
	return reap ? hf_scopereg_reap(path, ret, h) : hf_scopereg_read(path, ret, h);
}
