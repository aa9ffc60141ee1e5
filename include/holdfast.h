/*
 * holdfast.h - cooperating processes excluding each other through the file system.
 *
 * This header is the manual of libholdfast. It offers three lock kinds:
 *
 *   session lock     one holder per work tree, by lane      hf_session_take / _release
 *   directory lock   short mkdir lock with owner record      hf_lock_acquire / _release
 *   scope registry   per-user table of path scopes           hf_scope_register / _release
 *                                                             / _reap / _check
 *
 * Error handling
 * --------------
 * Every function returns 0 (or a count) on success and a negative code on
 * failure: either a negated errno value (-ENOENT, -EACCES, ...) for a system
 * error, or one of the HF_E* codes below for a lock outcome that is not a
 * system error. hf_strerror() names either kind. Nothing here prints, exits,
 * or touches errno-visible global state the caller did not ask for. Output
 * parameters named ret_* are written only on success; those named reterr_*
 * only on the failure they document ("who holds it").
 *
 * Owners and liveness
 * -------------------
 * An owner record carries a random token (getrandom), the pid, the pid's
 * start time (/proc/<pid>/stat field 22), the boot id, the pid and time
 * namespaces the pid and times were read in, the host name, the command
 * name, the wall-clock time and the boot-relative time (CLOCK_BOOTTIME) it
 * was recorded. An owner is dead only on proof:
 *   - on this kernel (same boot id) and in the same pid namespace: no such
 *     pid, or the pid alive with another start time (pid reuse);
 *   - on this kernel in another pid namespace (a container, `unshare
 *     --pid`): a pid proves nothing there; the owner holds a kernel lock
 *     (flock(2)) on the lock's liveness object for its whole life, and the
 *     kernel drops it when the last process holding it ends: the lock being
 *     free is the proof (hf_owner_liveness_fd);
 *   - another kernel's owner (other boot id), or anything unknown, is alive.
 * Ages come from times written inside records, never from mtime; on the
 * same kernel and time namespace from CLOCK_BOOTTIME, which a step of the
 * wall clock does not move (hf_owner_age_ms).
 *
 * Threads: the library keeps no locks of its own; a process may use it from
 * several threads as long as they do not share one hf_* object.
 */
#ifndef HOLDFAST_H
#define HOLDFAST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Lock outcomes that are not system errors. All negative, far below errno.
 * ------------------------------------------------------------------------- */
#define HF_EHELD       (-1001) /* held by another (conflict); holder filled in      */
#define HF_EUNREADABLE (-1002) /* a record or the registry is unreadable or corrupt */
#define HF_ENOTHELD    (-1003) /* nothing to release                                */
#define HF_ENOTYOURS   (-1004) /* held, but by another lane / owner token           */
#define HF_ETIMEDOUT   (-1005) /* the wait reached its deadline                     */
#define HF_ECONFLICT   (-1006) /* a scope overlaps another pod's write scope        */
#define HF_EUNSAFE     (-1007) /* refused for permissions or safety (owner, mode,
                                  symlink)                                          */
#define HF_EBARRIER    (-1008) /* a claim (barrier) beside the lock denies entry    */
#define HF_ELOST       (-1009) /* the holder's lock or scope is gone (reaped)       */

/* A name for any return code of this library (HF_E* or -errno). Never NULL. */
const char *hf_strerror(int rc);

/* ---------------------------------------------------------------------------
 * Owner records
 * ------------------------------------------------------------------------- */
#define HF_TOKEN_LEN 32   /* hex characters of a generated token (128 bits)   */
#define HF_HOST_MAX  64
#define HF_BOOTID_LEN 36
#define HF_COMM_MAX  15   /* /proc/<pid>/comm, as the kernel truncates it      */
#define HF_PIDNS_UNKNOWN 1 /* no namespace inode is 1: "recorded, not known"   */

struct hf_owner {
	char token[HF_TOKEN_LEN + 1];     /* random, hex                           */
	int64_t pid;                      /* the process whose life holds the lock */
	uint64_t pid_start;               /* /proc/<pid>/stat field 22; 0: unknown */
	char boot_id[HF_BOOTID_LEN + 1];  /* /proc/sys/kernel/random/boot_id       */
	char host[HF_HOST_MAX + 1];
	int64_t time_ms;                  /* wall clock, Unix ms, when recorded    */
	uint64_t pidns;                   /* inode of the pid namespace `pid` is
					     a pid of; HF_PIDNS_UNKNOWN: not known
					     (its pid is never proof); 0: a record
					     of holdfast 0.1                       */
	uint64_t timens;                  /* inode of the time namespace boot_ms
					     was read in; 0: unknown               */
	int64_t boot_ms;                  /* CLOCK_BOOTTIME ms when recorded; 0:
					     unknown                               */
	char comm[HF_COMM_MAX + 1];       /* the owner's command name; "" unknown  */
};

/* Fill *ret for process pid (0: the caller) with a fresh token and now. */
int hf_owner_init(struct hf_owner *ret, pid_t pid);

enum hf_liveness {
	HF_ALIVE = 0,   /* proven alive, or not provably dead (other host, unknown) */
	HF_DEAD = 1,    /* proven dead: no such pid, or pid reused (start differs)  */
};
/* HF_ALIVE or HF_DEAD by pid alone; never an error: whatever cannot be
 * proven is alive (another kernel, another pid namespace, no start time). */
int hf_owner_liveness(const struct hf_owner *o);
/* The same, with the owner's kernel lock as the proof where a pid proves
 * nothing (another pid namespace of this kernel): probe_fd is a descriptor
 * the judge opened itself on the owner's liveness object. HF_DEAD when the
 * kernel lock is free - the judge then holds LOCK_EX on probe_fd until it
 * closes it, so no late taker can claim the object meanwhile. */
int hf_owner_liveness_fd(const struct hf_owner *o, int probe_fd);
/* Age of the record at wall-clock time now_ms: boot-relative on this kernel
 * and time namespace (a wall-clock step does not change it), else by the
 * wall clock (negative when dated in the future). */
int64_t hf_owner_age_ms(const struct hf_owner *o, int64_t now_ms);

/* ---------------------------------------------------------------------------
 * Session lock (seed 002) — see src/lib/session.c for the protocol.
 *
 * One holder per work tree, by lane: a file (default `.session.lock` at the
 * top of the enclosing git work tree) holding one line of JSON
 *
 *   {"lane":"data","owner":"<token>","pid":4242,"host":"box",
 *    "started":"2026-09-22T10:00:00Z","boot_id":"…","timens":4026531834,
 *    "boottime_ms":8123456,"broke":{"lane":…,"owner":…,"started":…,
 *    "age_s":5520}}
 *
 * or, in the legacy form, a bare ISO-8601 timestamp (honoured, never written).
 *
 * Calling sequence: hf_session_take() once at the start of a session,
 * hf_session_release() at its end (from any process: ownership is the lane,
 * and the owner token when the caller has a stable one), hf_session_status()
 * for a look that changes nothing. Ages come from the record, never from
 * mtime: boot-relative ("boottime_ms") for a judge on the writer's kernel
 * and time namespace, else by the wall clock from "started", where a record
 * dated in the future is live (clock skew).
 *
 * Returns of take: 0 (ret_taken filled); HF_EHELD (a live lock, whoever holds
 * it — there is no "you already hold it" outcome — or a live record beside it
 * in an aside; reterr_holder filled); HF_EUNREADABLE (the lock is garbage,
 * unparseable or cannot be read: refused, untouched; reterr_holder has the
 * reason and the mtime as evidence); -EINVAL (bad lane/owner); -errno.
 * Returns of release: 0; HF_ENOTHELD (nothing to release); HF_ENOTYOURS
 * (another lane holds it, or the owner token differs; reterr_holder filled);
 * HF_EUNREADABLE; -errno.
 *
 * Asides: breaking, releasing and withdrawing first rename the lock to
 * `<name>.aside-<16 hex>` (never unlink at the name). A successful step
 * leaves none; one left by a killed process is swept or restored by the next
 * taker. Ignore them in git with the line `.session.lock.aside-*`.
 * ------------------------------------------------------------------------- */
#define HF_LANE_MAX 64
#define HF_OWNER_MAX 64
#define HF_SESSION_STALE_MS_DEFAULT (90LL * 60 * 1000)
#define HF_SESSION_FILE ".session.lock"
#define HF_SESSION_ASIDE_INFIX ".aside-"  /* <name>.aside-<16 hex>             */

struct hf_session_record {
	char lane[HF_LANE_MAX + 1];       /* "" only for a legacy record             */
	char owner[HF_OWNER_MAX + 1];     /* the caller's token, or a generated one */
	int64_t pid;                      /* the process that wrote it (0: unknown) */
	char host[HF_HOST_MAX + 1];
	int64_t started_ms;               /* Unix ms                                */
	int legacy;                       /* 1: a bare ISO-8601 timestamp lock      */
	int has_broke;                    /* 1: this take broke a stale lock        */
	struct {
		char lane[HF_LANE_MAX + 1];
		char owner[HF_OWNER_MAX + 1];
		int64_t started_ms;
		int64_t age_s;
		int legacy;
	} broke;
	/* When "started" was, on the writer's kernel: with these its age is
	 * boot-relative for a judge on the same kernel and time namespace (a
	 * wall-clock step moves it neither way); absent in 0.1.0 records. */
	char boot_id[HF_BOOTID_LEN + 1];  /* "": unknown                            */
	uint64_t timens;                  /* time namespace inode; 0: unknown       */
	int64_t boot_ms;                  /* CLOCK_BOOTTIME ms; 0: unknown          */
};

struct hf_session_opts {
	const char *path;                 /* the lock file; NULL: the default path  */
	const char *lane;                 /* required for take and release          */
	const char *owner;                /* NULL: take generates; release: unchecked */
	int64_t stale_ms;                 /* <= 0: HF_SESSION_STALE_MS_DEFAULT      */
};

enum hf_session_state {
	HF_SESSION_FREE = 0,
	HF_SESSION_HELD = 1,              /* a live lock                            */
	HF_SESSION_STALE = 2,             /* older than the stale window            */
	HF_SESSION_SKEW = 3,              /* dated in the future: live, clock skew  */
	HF_SESSION_UNREADABLE = 4,        /* garbage, unparseable, unreadable       */
};

struct hf_session_status {
	int state;                        /* enum hf_session_state                  */
	struct hf_session_record rec;     /* valid for HELD, STALE, SKEW            */
	int64_t age_ms;                   /* from rec.started_ms, never from mtime  */
	int64_t mtime_ms;                 /* evidence only (UNREADABLE included)    */
	int in_aside;                     /* 1: the record sits in an aside         */
	char aside[256];                  /* its name, when in_aside                */
	char reason[160];                 /* UNREADABLE: what was wrong             */
};

int hf_session_take(const struct hf_session_opts *o, struct hf_session_record *ret_taken,
		    struct hf_session_status *reterr_holder);
int hf_session_release(const struct hf_session_opts *o, struct hf_session_status *reterr_holder);
/* 0 and *ret filled (any state, UNREADABLE included); -errno when the
 * directory cannot be read. path NULL: the default path; stale_ms <= 0:
 * the default window. */
int hf_session_status(const char *path, int64_t stale_ms, struct hf_session_status *ret);
/* .session.lock at the top of the enclosing git work tree (the nearest
 * ancestor of the current directory holding a .git directory or file), else
 * in the current directory. */
int hf_session_default_path(char *buf, size_t n);

/* ---------------------------------------------------------------------------
 * Directory lock (seed 000, hardened) — see src/lib/dirlock.c for the protocol.
 *
 * A lock is a directory PATH created by mkdir, holding an owner record
 * PATH/owner (JSON: token, pid, pid_start, boot_id, host, acquired, fence,
 * max_hold_ms, pidns, timens, boottime_ms, comm). Beside it, PATH.holdfast/
 * (created on first use, never removed) keeps the fence counter and the
 * claims (directories moved aside before anything is deleted). Names ending
 * in ".holdfast" are reserved.
 *
 * Liveness: the acquirer holds a shared flock(2) on the lock directory from
 * the instant after mkdir for as long as the owner lives (the descriptor is
 * handed back as hf_lock_info.live_fd). A directory whose kernel lock is
 * free has no live maker; a judge in another pid namespace proves a live
 * owner's death the same way (see hf_owner_liveness_fd).
 *
 * Staleness: an owner proven dead is reaped at once, whatever its record's
 * date; a lock without a complete owner record at once when its kernel lock
 * is free, else after stale_ms (its age from the directory's ctime, which
 * only the kernel sets: an acquirer stopped between mkdir and publication);
 * a live owner older than max(max_hold_ms, stale_ms) as leaked (its age
 * boot-relative on this kernel, so a wall-clock step cannot make it old).
 * The holder's max_hold_ms is recorded in its owner record and wins over
 * the reaper's default.
 *
 * Fencing: every successful acquisition gets a fence strictly greater than
 * every earlier acquisition's of the same lock, across reaps, process
 * crashes and reboots (a durable reservation, fsync'ed once per 1024), at
 * most INT64_MAX (then -EOVERFLOW).
 * ------------------------------------------------------------------------- */
#define HF_LOCK_STALE_MS_DEFAULT (60LL * 1000)
#define HF_LOCK_MAX_HOLD_MS_DEFAULT (10LL * 60 * 1000)

struct hf_lock_opts {
	const char *path;                 /* the lock directory                     */
	int64_t wait_ms;                  /* 0: try once; <0: forever; else deadline */
	int64_t stale_ms;                 /* 0: HF_LOCK_STALE_MS_DEFAULT            */
	int64_t max_hold_ms;              /* 0: HF_LOCK_MAX_HOLD_MS_DEFAULT         */
	pid_t pid;                        /* whose life holds the lock; 0: caller   */
};

enum hf_lock_state {
	HF_LOCK_FREE = 0,       /* no lock directory (claims may still deny entry) */
	HF_LOCK_HELD = 1,       /* a live owner                                    */
	HF_LOCK_DEAD = 2,       /* owner proven dead: the next acquirer reaps it   */
	HF_LOCK_LEAKED = 3,     /* live owner older than max(max-hold, stale)      */
	HF_LOCK_PARTIAL = 4,    /* no complete owner record; its maker lives and is
				   within the stale window                         */
	HF_LOCK_ABANDONED = 5,  /* no complete owner record, and its maker is gone
				   (its kernel lock is free) or past the window    */
	HF_LOCK_SKEW = 6,       /* dated in the future: counts as live, clock skew */
};

struct hf_lock_info {
	struct hf_owner owner;            /* owner.time_ms: when acquired           */
	uint64_t fence;                   /* strictly increasing per lock           */
	int64_t age_ms;                   /* from the record; partial: from ctime   */
	int64_t max_hold_ms;              /* recorded by the holder; 0: none        */
	int partial;                      /* 1: no complete owner record            */
	int state;                        /* enum hf_lock_state                     */
	int in_claim;                     /* 1: the holder's directory sits in a
					     claim (a barrier), not at PATH        */
	int claims;                       /* claims beside the lock (status only)   */
	int live_fd;                      /* hf_lock_acquire: the descriptor of the
					     lock directory holding its kernel
					     lock (close-on-exec). Keep it open as
					     long as the owner lives - pass it to
					     the owner when that is another process
					     - and close it after hf_lock_release.
					     -1 everywhere else.                   */
	char reason[256];                 /* HF_EUNREADABLE: what cannot be read    */
};

/* Acquire PATH for o->pid. 0 and *ret (the new owner, its fence, live_fd).
 * Failure:
 * HF_EHELD (try once: held by another; *reterr_holder), HF_EBARRIER (a
 * claim beside the lock denies entry; its owner in *reterr_holder when
 * readable), HF_EUNREADABLE (an unreadable owner record within the stale
 * window, or the fence counter's reservation lost: reason says which),
 * HF_ETIMEDOUT (the wait reached its deadline; the last holder seen),
 * HF_EUNSAFE (state directory of another user or writable by others),
 * -EINVAL (a name ending in ".holdfast", or no name: ".", "/"), -ESRCH (no
 * such pid), -EBUSY (the fence counter stayed locked for 5 s: a process
 * stopped in the middle of an acquisition), -EOVERFLOW (fences exhausted),
 * -EOPNOTSUPP (no flock on this file system), other -errno. Waiting wakes
 * on the lock's removal (inotify on PATH's parent) with a jittered backoff
 * fallback; never past the deadline. */
int hf_lock_acquire(const struct hf_lock_opts *o, struct hf_lock_info *ret,
		    struct hf_lock_info *reterr_holder);
/* Release the lock acquired with token: 0; HF_ENOTHELD when no record with
 * this token exists (nothing to release); HF_ENOTYOURS when another token
 * holds PATH (*reterr_holder). Finds the record at PATH or in a claim. Any
 * process may release with the token; the holder closes its live_fd after. */
int hf_lock_release(const char *path, const char *token, struct hf_lock_info *reterr_holder);
/* Commit under the lock: hold off every later acquisition of PATH while
 * the caller finishes work it did under the lock it acquired as *held (an
 * edit's rename). 0 and *ret_guard when the last entry into PATH was
 * held's and its record still exists (at PATH, or aside in a claim where it
 * denies every acquirer): nobody can pass the fence steps, so nobody
 * enters, until hf_lock_unhold(*ret_guard). HF_ELOST when the lock is no
 * longer the caller's (reaped as dead or leaked, released, or entered by
 * another since); -ETIMEDOUT when the counter stayed locked for 5 s (a
 * stopped acquirer); other -errno. Hold it briefly. */
int hf_lock_hold(const char *path, const struct hf_lock_info *held, int *ret_guard);
void hf_lock_unhold(int guard);
/* Read-only: 0 and *ret filled (state HF_LOCK_FREE when no lock directory;
 * claims counts claims beside it); -errno on errors. Uses the default stale
 * and max-hold windows unless the record carries its own max-hold. */
int hf_lock_status(const char *path, struct hf_lock_info *ret);

/* ---------------------------------------------------------------------------
 * Scope registry (seed 001) — see src/lib/registry.c and src/lib/scope.c.
 *
 * One JSON table per user (hf_scope_registry_path) of pods and the path
 * scopes they were granted. A spec is "PATH:MODE[:recursive]", MODE read or
 * write; recursive covers PATH and everything below it, otherwise PATH and
 * its direct children. Paths are made absolute and canonical (symbolic links
 * of the existing part resolved, "."/".." removed) and compared by whole
 * components; each spec also records the kernel's identity of what its path
 * reaches (the mount's device and the path within that file system, and the
 * mounts below a recursive spec), so one directory reached through a bind
 * mount, or from a container sharing it, is one scope. Two live pods never
 * hold write specs that overlap - by path or by identity - unless one
 * descends from the other (delegation); read specs never conflict. A pod's
 * effective scope is its own specs minus the write specs of its live
 * descendants. A pod whose owner is proven dead is reaped on every change
 * (its live children go to its nearest live ancestor). The registry's
 * generation grows with every change; each allocation keeps the one it was
 * granted (a fencing token: hf_scope_check with it tells a pod it lost its
 * scope).
 *
 * Liveness: each allocation records its owner's pid with the pid and time
 * namespaces, boot-relative time and command (as struct hf_owner), and gets
 * a random token and a liveness file "<registry>.live-<token>" beside the
 * table, on which the registering side holds flock(LOCK_SH) for the owner's
 * whole life (hf_scope_register hands that descriptor back). A judge in the
 * owner's own pid namespace proves death by pid; a judge anywhere else (a
 * container, `unshare --pid`) only by that kernel lock being free
 * (hf_owner_liveness_fd) - never by a pid, which means nothing there.
 *
 * Errors: -EINVAL (a bad name, spec, socket; reterr->reason says which),
 * HF_EHELD (the name is taken), HF_ECONFLICT (reterr names the holder: the
 * deepest live pod whose write spec overlaps), HF_ENOTYOURS (a delegated
 * spec not inside the parent's effective scope; reterr names the parent),
 * HF_ELOST (the parent is not registered), HF_ENOTHELD (nothing to release),
 * HF_EUNREADABLE (the registry does not parse: nothing changed, reason and
 * path in reterr), HF_EUNSAFE (a registry directory or file not ours - the
 * reason names its owner's uid -, group/world-writable, a symbolic link, not
 * a regular file or directory), HF_ETIMEDOUT (the registry's lock stayed
 * held for the lock wait: reterr->pid and reason name the holder when
 * /proc/locks shows it), -EOVERFLOW (the registry's generation is at
 * 2^63-1: a change would write a table no reader accepts; nothing changed),
 * other -errno.
 * ------------------------------------------------------------------------- */
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

#ifdef __cplusplus
}
#endif
#endif /* HOLDFAST_H */
