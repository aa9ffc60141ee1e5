/*
 * scope_old.h - the registry's struct interface (registry.c), wrapped by the
 * public handles. Not part of the public API.
 */
#ifndef HF_SCOPE_OLD_H
#define HF_SCOPE_OLD_H

#include "owner.h"

#include <stddef.h>
#include <stdint.h>

#define HF_POD_NAME_MAX 128
#define HF_SCOPE_SPEC_MAX 4200            /* PATH_MAX + ":write:recursive"   */
#define HF_SCOPE_SOCKET_MAX 4095
#define HF_SCOPE_FS_MAX 4128              /* "MAJOR:MINOR:KIND:PATH"          */
#define HF_SCOPE_LOCK_WAIT_MS 5000        /* default bound on the registry's
					     flock(2): a stopped holder never
					     hangs anyone for longer            */
#define HF_SCOPE_LIVE_INFIX ".live-"      /* <registry>.live-<token>          */

struct hf_scope_request {
	const char *registry;             /* NULL: hf_scope_registry_path()         */
	const char *name;
	const char *const *specs;         /* "PATH:MODE[:recursive]", 1 or more     */
	size_t nspecs;
	pid_t pid;                        /* 0: the caller                          */
	const char *socket;               /* absolute path, or NULL                 */
	const char *from;                 /* delegating parent, or NULL             */
	int64_t lock_wait_ms;             /* the registry lock: 0 the default
					     (HF_SCOPE_LOCK_WAIT_MS), >0 at most
					     that (then HF_ETIMEDOUT)              */
};

/* What went wrong, for the message: the holder on HF_ECONFLICT (or the
 * parent on HF_ENOTYOURS, the owner of the name on HF_EHELD), the reason
 * and the registry's path on the other errors. */
struct hf_scope_holder {
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
	/* added after 0.1.0 */
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
};

/* $HOLDFAST_REGISTRY, else /tmp/holdfast-<euid>/scope.lock: one registry
 * per user whatever the environment (XDG_RUNTIME_DIR, HOME, a login shell
 * or cron, su, sudo, env -i all agree). A process whose /tmp is private (a
 * systemd unit with PrivateTmp=yes, a container with its own /tmp) sees
 * another directory there: it shares no registry with the rest of the user
 * unless it sets HOLDFAST_REGISTRY to a path both see. */
int hf_scope_registry_path(char *buf, size_t n);
/* "PATH:MODE[:recursive]" with PATH canonical, into buf (n bytes). */
int hf_scope_canonical(const char *spec, char *buf, size_t n);
/* An absolute canonical path (see above) into buf. */
int hf_scope_canonical_path(const char *path, char *buf, size_t n);
/* The kernel identity of a canonical path, "MAJOR:MINOR:e:PATH" (the
 * mount's device, the path within its file system) into buf: 0, -ENOENT
 * when the mount table does not show it (a chroot), -errno. */
int hf_scope_identity(const char *canonical_path, char *buf, size_t n);

/* Register req->name for req->pid with every spec, or nothing (all or
 * nothing); delegated from req->from when set. 0, the generation granted,
 * and in *ret_live_fd a descriptor (close-on-exec) of the allocation's
 * liveness file holding flock(LOCK_SH): THE CALLER MUST KEEP IT OPEN AS LONG
 * AS THE OWNER (req->pid) LIVES - in that process, a child it forks, or a
 * keeper - and close it after hf_scope_release; a judge in another pid
 * namespace takes the lock being free as the owner's death and reaps the
 * allocation. Clear FD_CLOEXEC to pass it to an exec'ed owner. `holdfast run
 * --scope` holds it for CMD (it is to be passed into CMD itself, so that it
 * lives exactly as long as CMD; today run keeps it open until CMD has
 * ended); `holdfast scope register` leaves it to a keeper process.
 * ret_live_fd NULL: no liveness file - then no judge outside the owner's
 * pid namespace can ever prove it dead. */
int hf_scope_register(const struct hf_scope_request *req, uint64_t *ret_generation,
		      int *ret_live_fd, struct hf_scope_holder *reterr_holder);
/* Remove name's allocation (generation 0: whatever its generation; else
 * HF_ENOTYOURS when the name now belongs to another registration). Its scope
 * returns to its parent; its live children are re-parented to it. Its
 * liveness file is removed after the table no longer names it. */
int hf_scope_release(const char *registry, const char *name, uint64_t generation,
		     struct hf_scope_holder *reterr);

/* A snapshot of the registry, each allocation judged alive or dead. */
struct hf_scope_table;
struct hf_scope_alloc {
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
	const char *returned_to;          /* hf_scope_reap: who got the scope back  */
	/* added after 0.1.0: as in struct hf_owner (0 / "" unknown: an entry of 0.1) */
	uint64_t pidns, timens;
	int64_t boot_ms;
	const char *comm;
	const char *token;                /* NULL: no liveness file                 */
	const char *const *scope_fs;      /* every spec's identities, in order      */
	const size_t *scope_fs_spec;      /* the index in scope_allow of each       */
	size_t nscope_fs;
};
/* Read the registry without changing it (a missing registry is empty). */
int hf_scope_read(const char *registry, struct hf_scope_table **ret,
		  struct hf_scope_holder *reterr);
/* Reap every pod proven dead; *ret (may be NULL) holds the reaped ones and
 * the new generation. The number reaped. */
int hf_scope_reap(const char *registry, struct hf_scope_table **ret,
		  struct hf_scope_holder *reterr);
size_t hf_scope_count(const struct hf_scope_table *t);
uint64_t hf_scope_generation(const struct hf_scope_table *t);
/* The i-th allocation; its strings live as long as the table. */
void hf_scope_get(const struct hf_scope_table *t, size_t i, struct hf_scope_alloc *ret);
/* Index of name, or -1. */
long hf_scope_find(const struct hf_scope_table *t, const char *name);
void hf_scope_free(struct hf_scope_table *t);

/* A pod's effective scope: its own specs minus these, the write specs of its
 * live descendants that overlap its own (by path or identity). *ret
 * malloc'd (free it). */
struct hf_scope_deny {
	const char *scope;
	const char *name;
	int64_t pid;
};
int hf_scope_effective(const struct hf_scope_table *t, const char *name,
		       struct hf_scope_deny **ret, size_t *ret_n);

/* May anyone, or pod, write at a canonical path? */
enum hf_scope_state {
	HF_SCOPE_FREE = 0,                /* no live write spec covers it           */
	HF_SCOPE_HELD = 1,                /* another pod's (holder set)             */
	HF_SCOPE_YOURS = 2,               /* the pod's effective write scope        */
	HF_SCOPE_OUTSIDE = 3,             /* nobody's, and not the pod's            */
	HF_SCOPE_LOST = 4,                /* the pod (or that generation) is gone   */
};
struct hf_scope_verdict {
	int state;                        /* enum hf_scope_state                    */
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
int hf_scope_check(const struct hf_scope_table *t, const char *canonical_path,
		   const char *pod, uint64_t pod_generation, struct hf_scope_verdict *ret);

#endif
