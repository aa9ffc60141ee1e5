/*
 * backend.h - the seam between the public handles and the stores a lock
 * can live in. Not part of the public API.
 *
 * A backend is one entry of one table (backend.c): its name, the URI
 * schemes that select it, and one table of operations per kind - the
 * directory lock (struct hf_lock_ops), the session lock (struct
 * hf_session_ops) and the scope registry (struct hf_scope_ops) - as
 * SQLite's VFS and libgit2's refdb backends are chosen. A handle chooses
 * its backend once per set of options (HF_OPT_BACKEND), through
 * hf_backend_set_str, and from then on calls h->ops->verb: no handle file
 * names a backend, and no backend file knows a handle's struct.
 *
 * Rooms: src/lib/fs/ is the file system's (fs_backend.c: hf_fs_backend),
 * src/lib/etcd/ is etcd's (etcd_backend.c: hf_etcd_backend). A build
 * without libcurl (the static CLI) links no etcd object: its table has the
 * etcd row with no entry, and an etcd URI is refused there, in one place
 * (hf_backend_set_str), with -EPROTONOSUPPORT.
 *
 * What the operations share with the handles - an acquisition's options
 * and a holder (lock.h), a session's record (session.h), a registration's
 * request and holder (registry.h), records (rec.h) - sits above both rooms.
 *
 * Invariants:
 *  (BE1) The backend options (HF_OPT_BACKEND, HF_OPT_ETCD_USER,
 *        _PASSWORD_FILE, _CA_FILE, HF_OPT_TTL_MS, HF_OPT_TIMEOUT_MS) are
 *        parsed here, once, for every kind; a kind only says which of them
 *        it has.
 *  (BE2) A handle's backend state is made by ops->open from the options
 *        current at a verb, and made anew after they changed only when
 *        nothing is held: a held lock, session or registration stays on
 *        the state (and backend) it was taken with until it is released,
 *        detached or freed. HF_OPT_BACKEND itself cannot change while held
 *        (-EBUSY).
 *  (BE3) An operation that fails leaves in *holder what its caller names:
 *        the holder it met, or its store's reason (an etcd endpoint that
 *        did not answer), or nothing - each backend decides which, the
 *        handle only keeps it.
 */
#ifndef HF_BACKEND_H
#define HF_BACKEND_H

#include "holdfast.h"
#include "lock.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hf_sessionlock_opts;
struct hf_sessionlock_record;
struct hf_scopereg_holder;
struct hf_scopereg_table;

/* The backend options of one handle (BE1). Strings are the handle's. */
struct hf_backend_opts {
	const struct hf_backend *backend; /* the entry the URI selected        */
	char *uri;                        /* NULL: the file system             */
	char *user, *password_file, *ca_file;
	int64_t ttl_ms, timeout_ms;       /* 0: the backend's defaults         */
	unsigned changes;                 /* bumped by every change (BE2)      */
};

/* Set a string option of b (held: the handle holds something on it). 0;
 * 1 when opt is no backend option (the kind's own, or none); -EINVAL (not
 * a URI of any backend, an empty or too long value), -EPROTONOSUPPORT (a
 * backend this build has no entry for), -EBUSY (HF_OPT_BACKEND while
 * held), -ENOMEM. */
int hf_backend_set_str(struct hf_backend_opts *b, int opt, const char *v, bool held);
/* The same for HF_OPT_TTL_MS and HF_OPT_TIMEOUT_MS (ranges checked by
 * hf_opt_check first): 0, or 1 when opt is neither. */
int hf_backend_set(struct hf_backend_opts *b, int opt, int64_t v);
/* b's backend: the file system's unless a URI chose another. */
const struct hf_backend *hf_backend_of(const struct hf_backend_opts *b);
void hf_backend_clear(struct hf_backend_opts *b);

/* ---- the directory lock ------------------------------------------------ */

/* held: what the handle acquired (its token, fence, live_fd) or adopted
 * (the token only: adopted true). Every verb's *holder is the handle's
 * record slot (hf_rec_put it, BE3); on success the handle sets it. */
struct hf_lock_ops {
	/* A state for the lock at path with these options; 0 and *ret; -errno. */
	int (*open)(const char *path, const struct hf_backend_opts *b,
		    const struct hf_lock_opts *o, void **ret);
	void (*close)(void *st);
	int (*acquire)(void *st, const struct hf_lock_opts *o, struct hf_lock_info *got,
		       hf_rec **holder);
	/* 0, HF_ENOTHELD, HF_ENOTYOURS, ...; *still_held: the acquisition is
	 * still the handle's (a store that did not answer: try again). */
	int (*release)(void *st, const struct hf_lock_info *held, bool adopted, hf_rec **holder,
		       bool *still_held);
	int (*renew)(void *st, const struct hf_lock_info *held, bool adopted, int64_t max_hold_ms,
		     struct hf_lock_info *got, hf_rec **holder);
	/* The lock now: 0 and *now - an exclusive holder, else the first of
	 * the shared or slot holders - and *all (NULL: none to add) the
	 * fields the lock's record adds: {"mode", "slots", "holders": [every
	 * holder's record, with its "mode"]}. A failure leaves *holder as BE3
	 * says. */
	int (*status)(void *st, struct hf_lock_info *now, hf_rec **all, hf_rec **holder);
	/* Has the store taken back what the handle holds (a lease lost)? */
	bool (*lost)(void *st);
	/* Commit under the lock (hf_lock_hold): 0 and *guard (>= 0), or -1
	 * with 0 when the backend has no hold-off (the lock is only checked). */
	int (*hold)(void *st, const struct hf_lock_info *held, int *guard);
	void (*unhold)(void *st, int guard);
	/* The handle lets go of held without releasing it (detach). */
	void (*detach)(void *st);
	/* Keep what st holds or detached for owner o until it ends (NULL: the
	 * backend has no keeper of its own: -EOPNOTSUPP). */
	int (*keep)(void *st, const struct hf_lock_info *held, hf_rec **holder, bool *kept);
	/* Every lock and session at path or below (o->list_depth levels, where
	 * the store has levels): 0 and *ret ({"dir", "locks"}; the file
	 * system's adds "errors" and "truncated"). */
	int (*list)(void *st, const struct hf_lock_opts *o, hf_rec **ret, hf_rec **holder);
	/* The record of i: a holder met, or self (the handle's own acquisition). */
	hf_rec *(*rec)(void *st, const struct hf_lock_info *i, bool self);
};

/* ---- the session lock -------------------------------------------------- */

struct hf_session_ops {
	int (*open)(const char *path, const struct hf_backend_opts *b, void **ret);
	void (*close)(void *st);
	/* Take o->lane's session, waiting wait_ms (<0 forever, 0 once) unless
	 * cancel_fd (>= 0) becomes readable: 0 and *taken. */
	int (*take)(void *st, const struct hf_sessionlock_opts *o, int64_t wait_ms, int cancel_fd,
		    struct hf_sessionlock_record *taken, hf_rec **holder);
	int (*release)(void *st, const struct hf_sessionlock_opts *o, hf_rec **holder);
	int (*renew)(void *st, const struct hf_sessionlock_opts *o,
		     struct hf_sessionlock_record *ret, hf_rec **holder);
	/* The session now, as a record: 0 and *ret. */
	int (*status)(void *st, int64_t stale_ms, hf_rec **ret, hf_rec **holder);
	/* The record of a take of the handle's. */
	hf_rec *(*rec)(void *st, const struct hf_sessionlock_record *r);
};

/* ---- the scope registry ------------------------------------------------ */

/* What a handle asks of its registry: its name, specs and options. */
struct hf_scope_args {
	const char *name;
	const char *const *specs;
	size_t nspecs;
	const char *registry, *socket, *from; /* NULL: the default           */
	pid_t pid;
	int64_t wait_ms, lock_wait_ms;
	int cancel_fd;
	uint64_t generation;
	bool holds;                           /* registered with this state  */
	int64_t lease_ms;                     /* > 0: a lease, by no process */
	const char *reason;                   /* NULL: none                  */
};

struct hf_scope_ops {
	int (*open)(const struct hf_backend_opts *b, void **ret);
	void (*close)(void *st);
	/* Register a, waiting as it says: 0, *gen and *fd (-1: none). A
	 * failure fills *h and *h_rc, the outcome to name *h under (a wait
	 * that timed out names the last refusal it waited on). */
	int (*register_)(void *st, const struct hf_scope_args *a, uint64_t *gen, int *fd,
			 struct hf_scopereg_holder *h, int *h_rc);
	int (*release)(void *st, const struct hf_scope_args *a, struct hf_scopereg_holder *h);
	/* Read (reap false) or reap the registry: 0 and *ret. */
	int (*table)(void *st, const struct hf_scope_args *a, bool reap,
		     struct hf_scopereg_table **ret, struct hf_scopereg_holder *h);
	/* Renew a's leased pod (by name, any process): its lease ends lease_ms
	 * from now (0: its own length). */
	int (*renew)(void *st, const struct hf_scope_args *a, int64_t lease_ms,
		     struct hf_scopereg_holder *h);
	/* Let go of the registration without releasing it (NULL: nothing). */
	void (*detach)(void *st);
	/* Keep the registration for pid (NULL: -EOPNOTSUPP). */
	int (*keep)(void *st, const struct hf_scope_args *a, bool *kept);
};

/* ---- the table ---------------------------------------------------------- */

struct hf_backend {
	const char *name;                 /* "file", "etcd"                    */
	/* Is uri one this backend can use? 0, or -EINVAL saying why not. */
	int (*check)(const char *uri);
	const struct hf_lock_ops *lock;
	const struct hf_session_ops *session;
	const struct hf_scope_ops *scope;
};

extern const struct hf_backend hf_fs_backend;

#endif
