/*
 * registry.h - the scope registry above its backends: a registration's
 * request and the refusal's holder, the table in memory (registry_table.c),
 * its JSON (registry_json.c), a registration's specs (registry_request.c),
 * the checks of a request, the holder's fill and the judge of liveness
 * (registry_judge.c). The file system's registry (fs/registry.c and its
 * files, fs/registry_fs.h) and etcd's (etcd/etcdscope.c) both stand on
 * these. Not part of the public API. The file's protocol, its invariants
 * (RG) and its hazards are in fs/registry.c's header; the table's
 * invariants (RT) in registry_table.c's.
 */
#ifndef HF_REGISTRY_H
#define HF_REGISTRY_H

#include "owner.h"
#include "spec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HF_REG_MAX_BYTES (256u << 20)   /* the largest table read or written     */
#define HF_REG_MAX_SPECS 1024           /* specs of one allocation               */
#define HF_REG_GEN_MAX ((uint64_t)INT64_MAX) /* the largest JSON integer jansson reads */
#define HF_REG_TOKEN_HEX 32             /* a live file's token                   */

/* --- the operations' shared parts (registry_judge.c) -------------------- */

#define HF_SCOPE_SPEC_MAX 4200            /* PATH_MAX + ":write:recursive"   */
#define HF_SCOPE_SOCKET_MAX 4095
#define HF_SCOPE_FS_MAX 4128              /* "MAJOR:MINOR:KIND:PATH"          */
#define HF_SCOPE_REASON_MAX HF_REASON_MAX /* bytes of a pod's reason (RG14)   */
#define HF_SCOPE_LEASE_SKEW_MS 5000       /* RG15: a lease judged by the wall
					     clock (another kernel) ends this
					     much later than its writer said  */
#define HF_SCOPE_LOCK_WAIT_MS 5000        /* default bound on the registry's
					     flock(2): a stopped holder never
					     hangs anyone for longer            */

struct hf_scopereg_request {
	const char *registry;             /* the registry file                  */
	const char *name;
	const char *const *specs;         /* "PATH:MODE[:recursive]", 1 or more     */
	size_t nspecs;
	pid_t pid;                        /* 0: the caller                          */
	const char *socket;               /* absolute path, or NULL                 */
	const char *from;                 /* delegating parent, or NULL             */
	int64_t lock_wait_ms;             /* the registry lock: 0 the default
					     (HF_SCOPE_LOCK_WAIT_MS), >0 at most
					     that (then HF_ETIMEDOUT)              */
	bool has_cancel;                  /* cancel_fd is set                       */
	bool by_path;                     /* no identities (etcd: specs meet by
					     path only; the mount table unread)    */
	int cancel_fd;                    /* readable: stop waiting for the
					     registry's lock (HF_ECANCELED)        */
	int64_t lease_ms;                 /* > 0: held by a lease of that long,
					     by no process (RG15); 0: by pid      */
	const char *reason;               /* why (RG14), or NULL                */
};

/* What went wrong, for the message: the holder on HF_ECONFLICT (or the
 * parent on HF_ENOTYOURS, the owner of the name on HF_EHELD), the reason
 * and the registry's path on the other errors. */
struct hf_scopereg_holder {
	char name[HF_POD_NAME_MAX + 1];
	int64_t pid;                      /* also: the registry lock's holder on
					     HF_ETIMEDOUT (0: not known)           */
	char host[HF_HOST_MAX + 1];
	int64_t registered_ms;            /* Unix ms; 0: unknown                    */
	uint64_t generation;
	char scope[HF_SCOPE_SPEC_MAX];    /* the holder's overlapping spec          */
	size_t request_index;             /* which spec of the request              */
	char request[HF_SCOPE_SPEC_MAX];  /* that spec, canonical                   */
	size_t others;                    /* more live holders overlapping it       */
	char registry[4096];              /* the registry file                      */
	char reason[512];
	/* absent in older entries: */
	char comm[HF_COMM_MAX + 1];       /* the holder's command; "" unknown       */
	int foreign_pidns;                /* 1: pid is a pid of another pid
					     namespace than the caller's           */
	int64_t age_ms;                   /* of the registration (boot-relative on
					     this kernel); -1: unknown             */
	char fs[HF_SCOPE_FS_MAX];         /* HF_ECONFLICT by identity (another
					     path to the same files): the holder's
					     identity that met the request's;
					     "" when the paths overlap             */
	char request_fs[HF_SCOPE_FS_MAX]; /* and the request's                      */
	char pod_reason[HF_SCOPE_REASON_MAX + 1]; /* the holder's own reason (RG14) */
	int64_t lease_ms;                 /* the holder's lease (RG15); 0: none     */
	int64_t lease_until_ms;           /* its end, Unix ms by the writer's clock */
	char outside[HF_SCOPE_SPEC_MAX];  /* HF_ENOTYOURS: a path of the request's
					     spec outside the parent's scope
					     (SC10); "" when none is named         */
};

struct hf_scopereg_table;
/* The age of entry i's registration (boot-relative on this kernel, as
 * hf_owner_age_ms), -1 when unknown. */
int64_t hf_scopereg_age_ms(const struct hf_scopereg_table *t, size_t i, int64_t now_ms);

/* RG14: is s a reason the registry keeps (at most HF_SCOPE_REASON_MAX
 * bytes of UTF-8 without C0 or C1 control characters or bidirectional
 * overrides)? 0, or -EINVAL with why (n bytes). */
int hf_scopereg_reason_check(const char *s, char *why, size_t n);
struct hf_alloc;
/* RG15: the ms left of entry a's lease (<= 0: expired) at wall time
 * now_ms: by CLOCK_BOOTTIME on the kernel and time namespace that wrote
 * its end, else by the wall clock with HF_SCOPE_LEASE_SKEW_MS of grace.
 * INT64_MAX for an entry without a lease. */
int64_t hf_scopereg_lease_left(const struct hf_alloc *a, int64_t now_ms);
/* RG15: set a's lease to end lease_ms from now (wall and boot time). */
void hf_scopereg_lease_start(struct hf_alloc *a, int64_t lease_ms);

/* The checks of req's form a registration makes first (either backend's):
 * 0, or -EINVAL with err's reason. */
int hf_scopereg_request_check(const struct hf_scopereg_request *req,
			      struct hf_scopereg_holder *err);
struct hf_alloc;
/* Name entry a (its spec scope) in h, as a refusal does. */
void hf_scopereg_holder_fill(struct hf_scopereg_holder *h, const struct hf_alloc *a,
			     const char *scope);

/* A snapshot of the registry, each allocation judged alive or dead. */
struct hf_scopereg_table;
struct hf_scopereg_alloc {
	const char *name;
	int64_t pid;
	uint64_t pid_start;
	const char *boot_id;
	const char *host;
	const char *socket;               /* NULL: none                             */
	const char *delegated_from;       /* NULL: top level                        */
	uint64_t generation;
	int64_t registered_ms;
	const char *const *scope_allow;   /* canonical specs                        */
	size_t nscope;
	int live;                         /* HF_ALIVE / HF_DEAD                     */
	unsigned depth;                   /* in the delegation tree (live pods)     */
	const char *returned_to;          /* hf_scopereg_reap: who got the scope back  */
	/* as in struct hf_owner (0 / "" unknown: an entry written without them) */
	uint64_t pidns, timens;
	int64_t boot_ms;
	const char *comm;
	const char *token;                /* NULL: no liveness file                 */
	const char *const *scope_fs;      /* every spec's identities, in order      */
	const size_t *scope_fs_spec;      /* the index in scope_allow of each       */
	size_t nscope_fs;
	int64_t lease_ms;                 /* RG15: > 0 leased; 0 held by its pid    */
	int64_t lease_until_ms;           /* its end, Unix ms (the writer's clock)  */
	int64_t lease_left_ms;            /* judged when read (<= 0: expired)       */
	const char *reason;               /* RG14; NULL: none                       */
};
size_t hf_scopereg_count(const struct hf_scopereg_table *t);
uint64_t hf_scopereg_generation(const struct hf_scopereg_table *t);
/* The i-th allocation; its strings live as long as the table. */
void hf_scopereg_get(const struct hf_scopereg_table *t, size_t i, struct hf_scopereg_alloc *ret);
/* Index of name, or -1. */
long hf_scopereg_find(const struct hf_scopereg_table *t, const char *name);
void hf_scopereg_free(struct hf_scopereg_table *t);

/* A pod's effective scope: its own specs minus these, the write specs of its
 * live descendants that overlap its own (by path or identity). *ret
 * malloc'd (free it). */
struct hf_scopereg_deny {
	const char *scope;
	const char *name;
	int64_t pid;
};
int hf_scopereg_effective(const struct hf_scopereg_table *t, const char *name,
			  struct hf_scopereg_deny **ret, size_t *ret_n);

/* May anyone, or pod, write at a canonical path? */
enum hf_scopereg_state {
	HF_SCOPEREG_FREE = 0,                /* no live write spec covers it           */
	HF_SCOPEREG_HELD = 1,                /* another pod's (holder set)             */
	HF_SCOPEREG_YOURS = 2,               /* the pod's effective write scope        */
	HF_SCOPEREG_OUTSIDE = 3,             /* nobody's, and not the pod's            */
	HF_SCOPEREG_LOST = 4,                /* the pod (or that generation) is gone   */
};
struct hf_scopereg_verdict {
	int state;                        /* enum hf_scopereg_state                    */
	long holder;                      /* index of the deepest live holder, -1   */
	const char *holder_scope;         /* its spec covering the path             */
	long pod;                         /* index of the pod, -1                   */
	const char *holder_fs;            /* the holder's identity covering the
					     path when its spec's path does not
					     (another path to the same files)      */
};
/* pod may be NULL (is it held at all?); pod_generation 0: any. A spec
 * covers the path by path or by identity: the path's identity is read from
 * this process's mount table (/proc/self/mountinfo). */
int hf_scopereg_check(const struct hf_scopereg_table *t, const char *canonical_path,
		      const char *pod, uint64_t pod_generation, struct hf_scopereg_verdict *ret);
/* The same with the mount table m already read (NULL: identities unknown,
 * specs meet the path by path only): a batch reads it once. */
int hf_scopereg_check_at(const struct hf_scopereg_table *t, const struct hf_mounts *m,
			 const char *canonical_path, const char *pod, uint64_t pod_generation,
			 struct hf_scopereg_verdict *ret);

/* --- registry_table.c: the table ---------------------------------------- */

struct hf_alloc {
	const char *name;
	int64_t pid;
	uint64_t pid_start;
	const char *boot_id;         /* "" when unknown                          */
	const char *host;            /* "" when unknown                          */
	uint64_t pidns, timens;      /* as in struct hf_owner; 0: unknown       */
	int64_t boot_ms;             /* CLOCK_BOOTTIME ms at registration; 0     */
	const char *comm;            /* "" when unknown                          */
	const char *token;           /* 32 hex: its live file; NULL: none        */
	const char *socket;          /* NULL: none                               */
	const char *from;            /* delegated_from; NULL: top level          */
	int64_t lease_ms;            /* RG15: > 0 held by a lease, by no process */
	int64_t lease_until_ms;      /* the lease's end, Unix ms ("lease_until") */
	int64_t lease_boot_until;    /* its end, CLOCK_BOOTTIME ms of the kernel
					boot_id names in timens (0: unknown)    */
	const char *reason;          /* RG14: why it was registered; NULL none   */
	uint64_t generation;
	int64_t registered_ms;       /* 0: unknown                               */
	struct hf_spec *specs;
	const char **spec_text;      /* the stored strings, for output           */
	size_t nspecs;
	struct hf_fsid *fs;          /* every spec's identities, spec by spec    */
	const char **fs_text;
	size_t *fs_spec;             /* the spec each belongs to                 */
	size_t nfs;
	/* derived when the table is judged */
	int live;                    /* HF_ALIVE / HF_DEAD                       */
	long parent;                 /* index of the nearest live ancestor, -1   */
	unsigned depth;              /* in the delegation tree; 0: top level     */
	const char *returned_to;     /* reaped/released: who got the scope back  */
	int probe_fd;                /* proven dead by its live file: the judge's
					LOCK_EX on it, held until the change is
					written (-1: none)                      */
};

/* An index of a table's entries by a string key (open addressing, FNV-1a):
 * the names (each table keeps one, RT3) or the live files' tokens. */
enum hf_regkey { HF_REGKEY_NAME, HF_REGKEY_TOKEN };
struct hf_regindex {
	size_t mask;
	long *slot;                  /* entry indices; -1 empty                  */
	size_t n;                    /* the table's n when it was built          */
};

struct hf_arena;

struct hf_scopereg_table {
	uint64_t generation;
	size_t n, cap;
	struct hf_alloc *a;
	struct hf_arena *arena;      /* the strings and spec arrays (RT1)        */
	struct hf_regindex names;    /* by name (RT3)                            */
};

/* n bytes / a copy of s[0..len) in t's arena (RT1); NULL: out of memory. */
void *hf_regtable_alloc(struct hf_scopereg_table *t, size_t n);
const char *hf_regtable_strndup(struct hf_scopereg_table *t, const char *s, size_t len);
/* A new zeroed entry at the end (parent -1, probe_fd -1). */
int hf_regtable_push(struct hf_scopereg_table *t, struct hf_alloc **ret);
/* Free everything, close the probes; t is then empty. */
void hf_regtable_clear(struct hf_scopereg_table *t);

/* Index t's entries by key (entries without a token are left out). -EEXIST
 * and *ret_dup (may be NULL) when two entries have the same key. */
int hf_regindex_build(struct hf_regindex *ix, const struct hf_scopereg_table *t, enum hf_regkey key,
		      long *ret_dup);
long hf_regindex_find(const struct hf_regindex *ix, const struct hf_scopereg_table *t,
		      enum hf_regkey key, const char *k);
void hf_regindex_free(struct hf_regindex *ix);

/* (Re)build t's name index: 0, -EEXIST (*ret_dup: the second entry of a
 * name), -ENOMEM. */
int hf_regtable_index(struct hf_scopereg_table *t, long *ret_dup);
/* Index of the entry named name, or -1. */
long hf_regtable_find(const struct hf_scopereg_table *t, const char *name);
/* Does every delegated_from chain end (RT4)? 0, or -EINVAL with why. */
int hf_regtable_check_tree(const struct hf_scopereg_table *t, char *why, size_t n);
/* Derive each entry's parent (its nearest live ancestor) and depth from the
 * judged liveness, and re-index the names. 0 or -ENOMEM. */
int hf_regtable_link(struct hf_scopereg_table *t);
/* Is anc an ancestor of i through live parents? */
bool hf_regtable_descends(const struct hf_scopereg_table *t, long i, long anc);

/* Why a registration was refused (hf_regtable_admit). */
struct hf_regtable_refusal {
	long who;                    /* the entry that refused it                */
	size_t who_spec;             /* its spec that did                        */
	size_t index;                /* the request's spec refused               */
	size_t others;               /* more live holders overlapping it         */
	const char *who_fs, *req_fs; /* the identities that met (or NULL)        */
	char outside[PATH_MAX];      /* HF_ENOTYOURS: a path of the refused spec
					outside the parent's specs ("": none)   */
};
/* May specs (n of them) be registered, delegated from entry parent (-1:
 * top level)? 0; HF_ECONFLICT (RG4: who is the deepest live pod whose write
 * spec meets one of ours); HF_ENOTYOURS (RG5: a spec outside the parent's).
 * Pure. */
int hf_regtable_admit(const struct hf_scopereg_table *t, const struct hf_spec *specs, size_t n,
		      long parent, struct hf_regtable_refusal *ret);

/* --- registry_json.c: the file format ------------------------------------ */

/* Is s a live file's token (HF_REG_TOKEN_HEX lowercase hex digits)? */
bool hf_regtable_token_ok(const char *s);
/* Parse a registry file's bytes. HF_EUNREADABLE with reason (n bytes) for
 * anything that is not a registry this version wrote or would write: not
 * JSON, wrong types, a spec that is not canonical, a bad name, a duplicate
 * name, a delegation cycle. Never crashes on any input. The table comes
 * back indexed by name. */
int hf_regtable_parse(const char *buf, size_t len, struct hf_scopereg_table *t, char *reason,
		      size_t n);
/* The table as JSON text (one allocation a line), malloc'd. */
int hf_regtable_format(const struct hf_scopereg_table *t, char **ret, size_t *ret_len);

/* --- registry_request.c: a registration's specs --------------------------- */

/* The request's specs, canonical, with their identities. */
struct hf_regreq {
	char (*canon)[HF_SCOPE_SPEC_MAX];
	struct hf_spec *specs;
	char **ids_text[HF_REG_MAX_SPECS];
	size_t nids[HF_REG_MAX_SPECS];
	struct hf_fsid *ids[HF_REG_MAX_SPECS];
	size_t n;
};
/* Canonicalize and identify req's specs (without the registry's lock).
 * 0 and *ret; -EINVAL / -errno with err's request_index and reason. */
int hf_regreq_make(const struct hf_scopereg_request *req, struct hf_regreq **ret,
		   struct hf_scopereg_holder *err);
void hf_regreq_free(struct hf_regreq *q);
/* Store q's specs, identities included, in a (arena-owned: RT1). */
int hf_regreq_store(struct hf_scopereg_table *t, struct hf_alloc *a, const struct hf_regreq *q);

/* --- registry_judge.c: judging ------------------------------------------ */

/* A proof of the death of an owner in another pid namespace on this kernel
 * (RG9): a descriptor of a file whose lock the owner holds while it lives
 * (hf_owner_liveness_fd), or -1: none. The file system's registry opens
 * the entry's live file (fs/registry.c); etcd has none (its leases end). */
typedef int (*hf_registry_probe_fn)(const struct hf_alloc *a, void *ctx);

/* Judge liveness and derive parent/depth: each entry's parent is its
 * nearest live ancestor. An owner in this process's pid namespace is judged
 * by pid (hf_owner_liveness, one proof per distinct owner); one elsewhere,
 * on this kernel, by probe(a, ctx) when probe is not NULL; keep: a probe
 * that proved death keeps its LOCK_EX descriptor in probe_fd (closed by
 * hf_regtable_clear). 0 or -ENOMEM. */
int hf_registry_judge(struct hf_scopereg_table *t, hf_registry_probe_fn probe, void *ctx,
		      bool keep);

#endif
