/*
 * handle_scope.c - the scope's public handle (holdfast.h, hf_scope): the
 * pod's name, specs and options, a register that waits (woken when the
 * registry file changes), the release, and what a handle remembers between
 * them (its generation, liveness descriptor, the last refusal), over its
 * backend's operations (backend.h). The registry's protocols are the
 * backends' (fs/registry.c, etcd/etcdscope.c); the read-only snapshot is
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
 *        descriptor is readable (the waiter's WT1, WT4); every attempt is a
 *        whole hf_scopereg_register, so waiting adds no state of its own.
 *  (HC5) A handle registers, releases and reads on the backend its options
 *        chose (HF_OPT_BACKEND: backend.h) and nowhere else (a wait on etcd
 *        is a watch, a wait on a file an inotify wait, FB1); on etcd its
 *        registration has no descriptor (-1) but a lease, kept alive by the
 *        handle's thread until release, detach or free, or by hf_scope_keep.
 */
#include "floor.h"
#include "backend.h"
#include "handle.h"
#include "rec.h"
#include "registry.h"

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
	char *reason;                     /* HF_OPT_REASON (RG14)             */
	int64_t lease_ms;                 /* HF_OPT_LEASE_MS (RG15)           */
	struct hf_backend_opts bo;        /* HC5: where it registers (BE1)   */
	const struct hf_scope_ops *ops;   /* the state's backend             */
	void *st;                         /* its state (BE2)                 */
	unsigned st_changes;
	pid_t pid;
	int64_t wait_ms, lock_wait_ms;
	int cancel_fd;                    /* -1: none                          */
	uint64_t generation;              /* granted, or HF_OPT_GENERATION     */
	bool holds;                       /* registered, not released/detached */
	pid_t registered_by;              /* hf_sys_getpid() of the registration (HC2) */
	int fd;                           /* the liveness descriptor, -1       */
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
	size_t at;
	const char *why;
	if (hf_glob_check(spec, pl, NULL, &at, &why) < 0) { /* SC8 */
		char msg[256];
		size_t adv = 1;
		while (spec[at + adv] && ((unsigned char)spec[at + adv] & 0xc0) == 0x80)
			adv++;
		snprintf(msg, sizeof msg,
			 "unsupported glob syntax: '%.*s' at byte %zu of the path: %s (globs: '*', "
			 "'?', '[...]' within a component, '**' as a whole component)",
			 (int)adv, spec + at, at + 1, why);
		holder_reason(s, msg);
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
	case HF_OPT_LEASE_MS: /* RG15; on etcd the pod key's lease, never kept alive */
		s->lease_ms = v;
		return 0;
	case HF_OPT_TTL_MS:
	case HF_OPT_TIMEOUT_MS:
		return hf_backend_set(&s->bo, opt, v); /* BE1 */
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
		      : opt == HF_OPT_REASON ? &s->reason
					     : NULL;
	if (!slot) {
		int rc = hf_backend_set_str(&s->bo, opt, v, s->holds); /* BE1 */
		return rc == 1 ? -EINVAL : rc;
	}
	char why[160];
	if (opt == HF_OPT_REASON && v && hf_scopereg_reason_check(v, why, sizeof why) < 0) {
		holder_reason(s, why); /* RG14: refused here, named */
		return -EINVAL;
	}
	char *copy = NULL;
	if (v && !(copy = strdup(v)))
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

static void holder_set(hf_scope *s, const struct hf_scopereg_holder *h, int rc)
{
	const char *given = NULL;
	if (rc == HF_ECONFLICT || rc == HF_ENOTYOURS || rc == -EINVAL)
		given = h->request_index < s->nspecs ? s->specs[h->request_index] : NULL;
	hf_rec_put(&s->holder, hf_rec_from_scope_holder(h, rc, given));
}

/* HC5, BE2: s's backend state, made anew from its options when they
 * changed and nothing is held. 0, or -errno (the holder cleared). */
static int ready(hf_scope *s)
{
	if (s->st && (s->holds || s->st_changes == s->bo.changes))
		return 0;
	const struct hf_scope_ops *ops = hf_backend_of(&s->bo)->scope;
	void *st = NULL;
	int rc = ops->open(&s->bo, &st);
	if (rc < 0) {
		holder_reason(s, NULL);
		return rc;
	}
	if (s->st)
		s->ops->close(s->st);
	s->ops = ops;
	s->st = st;
	s->st_changes = s->bo.changes;
	return 0;
}

/* What s asks of its registry. */
static struct hf_scope_args args_of(const hf_scope *s)
{
	return (struct hf_scope_args){
		.name = s->name, .specs = (const char *const *)s->specs, .nspecs = s->nspecs,
		.registry = s->registry, .socket = s->socket, .from = s->from, .pid = s->pid,
		.wait_ms = s->wait_ms, .lock_wait_ms = s->lock_wait_ms, .cancel_fd = s->cancel_fd,
		.generation = s->generation, .holds = s->holds, .lease_ms = s->lease_ms,
		.reason = s->reason,
	};
}

int hf_scope_register(hf_scope *s)
{
	if (!s)
		return -EINVAL;
	if (s->holds)
		return -EALREADY; /* HC1 */
	int rc = ready(s);
	if (rc < 0)
		return rc;
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0, sizeof *h);
	struct hf_scope_args a = args_of(s);
	uint64_t gen = 0;
	int fd = -1, h_rc = 0;
	rc = s->ops->register_(s->st, &a, &gen, &fd, h, &h_rc); /* HC4 */
	if (rc == 0) {
		assert(gen > 0 && "HC1");
		s->holds = true;
		s->fd = fd;
		s->generation = gen;
		s->registered_by = hf_sys_getpid();
		holder_reason(s, NULL);
	} else {
		holder_set(s, h, h_rc); /* HC4: a wait keeps the last holder it saw */
	}
	free(h);
	return rc;
}

int hf_scope_release(hf_scope *s)
{
	if (!s)
		return -EINVAL;
	int rc = ready(s);
	if (rc < 0)
		return rc;
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0, sizeof *h);
	struct hf_scope_args a = args_of(s);
	rc = s->ops->release(s->st, &a, h);
	if (s->fd >= 0)
		hf_sys_close(s->fd); /* HC3: after the release */
	s->fd = -1;
	s->holds = false;
	if (rc < 0)
		holder_set(s, h, rc);
	else
		holder_reason(s, NULL);
	free(h);
	return rc;
}

int hf_scope_renew(hf_scope *s)
{
	if (!s)
		return -EINVAL;
	int rc = ready(s);
	if (rc < 0)
		return rc;
	if (!s->ops->renew)
		return -EOPNOTSUPP;
	struct hf_scopereg_holder *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0, sizeof *h);
	struct hf_scope_args a = args_of(s);
	rc = s->ops->renew(s->st, &a, s->lease_ms, h); /* RG15, ES7 */
	if (rc < 0) {
		if (rc == HF_ELOST || rc == HF_ENOTHELD)
			s->holds = false; /* expired or gone: nothing is held any more */
		holder_set(s, h, rc);
	} else {
		holder_reason(s, NULL);
	}
	free(h);
	return rc;
}

int hf_scope_detach(hf_scope *s)
{
	if (!s || !s->holds)
		return -1;
	if (s->st && s->ops->detach) /* HC5: an etcd lease stays, its TTL running */
		s->ops->detach(s->st);
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
	if (s->holds && s->registered_by == hf_sys_getpid())
		hf_scope_release(s); /* HC2 */
	if (s->fd >= 0)
		hf_sys_close(s->fd);
	for (size_t i = 0; i < s->nspecs; i++)
		free(s->specs[i]);
	free(s->specs);
	free(s->registry);
	free(s->socket);
	free(s->from);
	free(s->reason);
	if (s->st)
		s->ops->close(s->st); /* an etcd state joins its keep-alive */
	hf_backend_clear(&s->bo);
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

/* --- on the handle's registry (HC5) ------------------------------------------- */

int hf_scope_keep(hf_scope *s)
{
	if (!s)
		return -EINVAL;
	const struct hf_scope_ops *ops = s->st ? s->ops : hf_backend_of(&s->bo)->scope;
	if (!ops->keep)
		return -EOPNOTSUPP; /* the file's registry: its descriptor (keeper.c) */
	if (!s->generation || !s->st)
		return HF_ENOTHELD;
	struct hf_scope_args a = args_of(s);
	bool kept = false;
	int rc = ops->keep(s->st, &a, &kept);
	if (kept)
		s->holds = false; /* kept to its end: nothing is held any more */
	return rc;
}

int hf_scope_table(hf_scope *s, bool reap, struct hf_scopereg_table **ret,
		   struct hf_scopereg_holder *h)
{
	int rc = ready(s);
	if (rc < 0)
		return rc;
	struct hf_scope_args a = args_of(s);
	return s->ops->table(s->st, &a, reap, ret, h);
}
