/*
 * holdfast.h - cooperating processes excluding each other through the file
 * system. This header is the manual of libholdfast.
 *
 * Three lock kinds, each a handle with one set of verbs:
 *
 *   directory lock   hf_lock      short mkdir lock with an owner record
 *                                 and a fence            acquire / release
 *   session lock     hf_session   one holder per work tree, by lane
 *                                                        take / release
 *   scope            hf_scope     a write scope in the per-user registry,
 *                                 with delegation        register / release
 *
 * and, on top of a held directory lock, hf_edit: a locked, atomic
 * read-modify-write of a file. hf_registry is a read-only snapshot of the
 * scope registry (who holds what; effective scopes; may I write here?).
 *
 * Calling sequence (every kind alike)
 * -----------------------------------
 *   hf_lock *l;
 *   int rc = hf_lock_new("build.lock", &l);         no I/O yet
 *   if (rc == 0) rc = hf_lock_set(l, HF_OPT_WAIT_MS, 30000);
 *   if (rc == 0) rc = hf_lock_acquire(l);
 *   int64_t pid;
 *   if ((rc == HF_EHELD || rc == HF_ETIMEDOUT) &&
 *       hf_rec_int(hf_lock_holder(l), "pid", &pid) == 0)
 *           printf("held by pid %lld on %s\n", (long long)pid,
 *                  hf_rec_str(hf_lock_holder(l), "host"));
 *   else if (rc == 0) {
 *           ... work, checking hf_lock_fence(l) where the resource keeps fences ...
 *           rc = hf_lock_release(l);
 *   }
 *   hf_lock_free(l);                                releases if still held
 *
 * A handle is created with _new (which only validates its arguments),
 * configured with _set / _set_str, used with its kind's verbs, and freed
 * with _free (NULL is a no-op). Options not set have the defaults below.
 * A handle is not shared between threads without a lock of the caller's.
 *
 * Return codes
 * ------------
 * Every function returning int returns 0 (or a count) on success and a
 * negative code on failure: a negated errno value (-ENOENT, -EACCES, ...)
 * for a system error, or one of the HF_E* outcomes below (all below -4096,
 * outside the errno range). hf_strerror() says what a code means,
 * hf_error_name() gives it a stable name ("held", "ENOENT") for programs.
 * Nothing here prints or exits; outcomes are returned, never left in
 * errno, whose value after a call is unspecified.
 * Output parameters named ret* are written only on success, those named
 * reterr* only on the failures their function documents.
 *
 * Misuse and no-ops
 * -----------------
 * A NULL handle or a NULL required argument is -EINVAL (an accessor then
 * returns NULL, 0 or -1). A verb in the wrong state says so and changes
 * nothing: acquiring with a handle that holds is -EALREADY; releasing or
 * holding with one that holds nothing is HF_ENOTHELD, and so is checking
 * with one that never had a token. No-ops:
 * _free(NULL), hf_rec_free(NULL), hf_lock_unhold without a hold. An option
 * set between two verbs applies from the next one. Why handles: no struct
 * layout is part of the ABI (a binding needs only pointers and integers, and
 * records grow fields without breaking anyone), and every kind has one verb
 * set and one option setter.
 *
 * Records
 * -------
 * Who holds a lock, what a lock's state is, a registry's allocation: each is
 * an hf_rec, read by field name - the field names of the files on disk
 * ("pid", "host", "acquired", "fence", ...) plus a few derived ones
 * ("state", "age_ms", "reason", "path"). hf_rec_json() gives the whole record
 * as one line of JSON. A record a handle returns (const hf_rec *) lives until
 * the handle's next call or its free; one returned in an hf_rec ** is the
 * caller's (hf_rec_free).
 *
 * Owners and liveness
 * -------------------
 * An owner record carries a random token (128 bits), the pid, the pid's start
 * time, the boot id, the pid and time namespaces the pid and times were read
 * in, the host name, the command name, the wall-clock time and the
 * boot-relative time (CLOCK_BOOTTIME) it was recorded. An owner is dead only
 * on proof: on this kernel and in the same pid namespace, no such pid, or the
 * pid alive with another start time (reused); on this kernel in another pid
 * namespace (a container, `unshare --pid`), its kernel lock being free - the
 * owner's side holds flock(2) on the lock's liveness object for the owner's
 * whole life (hf_lock_fd, hf_scope_fd: keep that descriptor open in the owner
 * or hand it to it); anything else (another kernel, an unknown) is alive.
 * Ages come from times inside records, boot-relative on the same kernel and
 * time namespace, so a step of the wall clock moves them neither way.
 *
 * Caveats
 * -------
 *  - Environment: the library reads HOLDFAST_REGISTRY (the scope registry's
 *    path) and nothing else from the environment; HOLDFAST_FAULTS and the
 *    other test hooks of the holdfast command have no effect on it. The
 *    etcd backend names its endpoints, user, password file and CA through
 *    options only (the CLI reads HOLDFAST_BACKEND and passes it), ignores
 *    proxy variables, and without HF_OPT_ETCD_CA_FILE leaves the system's
 *    CA to OpenSSL (which honours SSL_CERT_FILE and SSL_CERT_DIR).
 *  - Backends: every handle kind (lock, session, scope) lives on the file
 *    system unless HF_OPT_BACKEND names another store ("etcd://...").
 *    The choice is made once per set of options, through one table of
 *    backends, each with one table of operations per kind: the same verbs,
 *    outcomes and records on each (a backend adds its own fields, e.g.
 *    "backend" and "key"). A library built without the etcd client has no
 *    etcd entry: an etcd URI is refused with -EPROTONOSUPPORT. The
 *    path-named reads (hf_lock_status, hf_session_status,
 *    hf_registry_read) are the file system's, through a temporary handle.
 *  - Threads: the library keeps no global locks; handles are per thread.
 *    Waits use one inotify descriptor per thread, kept between waits
 *    (closing one costs the kernel a grace period of ~10 ms).
 *  - fork: a child inherits the descriptors of the parent's held locks; a
 *    handle freed in the child does not release the parent's lock (it only
 *    frees memory). To hand a lock to another process use _detach and pass
 *    the token (and the descriptor, for namespaces). A lock held on etcd
 *    runs a keep-alive thread: a child forked while it runs may only exec
 *    (POSIX: another thread may hold a lock of the allocator at the fork).
 *  - Signals: waits poll a cancel descriptor (HF_OPT_CANCEL_FD: a pipe,
 *    eventfd or signalfd readable means "stop": HF_ECANCELED), so a program
 *    can end a wait from a signal handler or another thread.
 *  - Pid namespaces: a lock's owner is a pid of the caller's pid namespace
 *    (HF_OPT_PID); judges in other namespaces rely on the kernel lock.
 *  - File systems: the directory lock needs renameat2(RENAME_NOREPLACE) and
 *    flock(2) (tmpfs, ext4, xfs, btrfs: yes); where they are missing it
 *    fails with -EOPNOTSUPP and emulates nothing. NFS: across hosts a pid
 *    proves nothing, so only max-hold reclaims another host's dead holder.
 *  - PATH.holdfast/ beside a lock directory keeps its fence counter and
 *    claims (and a .gitignore of "*"); deleting it (git clean -fdx) loses
 *    the claims, and the new counter starts at the wall clock in
 *    microseconds, above the old one's fences (unless the clock was set
 *    back meanwhile).
 *  - Every lock is advisory: processes that do not ask are not stopped.
 */
#ifndef HOLDFAST_H
#define HOLDFAST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "holdfast-version.h" /* HF_VERSION_MAJOR/_MINOR/_PATCH/_STRING */

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

/* The library's version at run time ("0.2.0"); HF_VERSION_STRING is the
 * header's. */
const char *hf_version(void);

/* ---------------------------------------------------------------------------
 * Outcomes that are not system errors (all < -4096).
 * ------------------------------------------------------------------------- */
#define HF_EHELD       (-4097) /* held by another (conflict); the holder is known */
#define HF_EUNREADABLE (-4098) /* a record or the registry is unreadable or corrupt;
                                  the record's "reason" says what              */
#define HF_ENOTHELD    (-4099) /* nothing to release / not held                 */
#define HF_ENOTYOURS   (-4100) /* held, but by another lane, token or pod       */
#define HF_ETIMEDOUT   (-4101) /* the wait reached its deadline                 */
#define HF_ECONFLICT   (-4102) /* a scope overlaps another pod's write scope    */
#define HF_EUNSAFE     (-4103) /* refused for permissions or safety (another
                                  user's, writable by others, a symlink)        */
#define HF_EBARRIER    (-4104) /* a claim beside the lock denies entry          */
#define HF_ELOST       (-4105) /* the caller's lock or scope is gone (reaped,
                                  released or entered by another)              */
#define HF_ECANCELED   (-4106) /* the wait was cancelled (HF_OPT_CANCEL_FD)     */

/* What rc means, for a message ("held by another", "No such file or
 * directory"). Never NULL. */
const char *hf_strerror(int rc);
/* A stable name for rc, for programs and JSON: "held", "unreadable",
 * "not_held", "not_yours", "timed_out", "conflict", "unsafe", "barrier",
 * "lost", "canceled", or the errno's symbol ("ENOENT"); "ok" for 0,
 * "unknown" otherwise. Never NULL. */
const char *hf_error_name(int rc);

/* ---------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------- */
typedef struct hf_rec hf_rec;

/* The string at field (a dotted path reaches into objects: "broke.lane",
 * and arrays by a decimal index: "holders.0.pid"), or NULL when it is
 * absent or not a string. Lives as long as r. */
const char *hf_rec_str(const hf_rec *r, const char *field);
/* The integer at field (a true/false flag reads as 1/0): 0 and *ret;
 * -ENOENT absent; -EINVAL not an integer. */
int hf_rec_int(const hf_rec *r, const char *field, int64_t *ret);
/* The length of the array at field (0 when absent or not an array) and its
 * i-th string (NULL when not a string or out of range). */
size_t hf_rec_len(const hf_rec *r, const char *field);
const char *hf_rec_str_at(const hf_rec *r, const char *field, size_t i);
/* The whole record as one line of JSON (no newline). Lives as long as r. */
const char *hf_rec_json(const hf_rec *r);
/* Free a record returned in an hf_rec ** (NULL: no-op). */
void hf_rec_free(hf_rec *r);

/* ---------------------------------------------------------------------------
 * Options (hf_<kind>_set, hf_<kind>_set_str). -EINVAL for an option the kind
 * does not have or a value out of range.
 * ------------------------------------------------------------------------- */
enum hf_opt {
	HF_OPT_WAIT_MS = 1,    /* lock, session, scope: 0 try once (default); <0
	                          wait forever; >0 wait at most that. A wait wakes
	                          on the release (inotify), on the end of a
	                          holder of this pid namespace (a pidfd), and
	                          otherwise at most once a second: a backoff
	                          capped at 1 s (from 1 ms where the release is
	                          not seen: barriers, no inotify) that sees what
	                          neither can - a holder in another namespace
	                          that died, a release made on another host     */
	HF_OPT_STALE_MS,       /* lock: a record-less lock's window (default
	                          60 s); session: a session's age before it is
	                          stale (default 90 min)                         */
	HF_OPT_MAX_HOLD_MS,    /* lock: past this a live holder is leaked and
	                          reaped (default 10 min; recorded in the
	                          owner record, so it is the holder's);
	                          HF_MAX_HOLD_NONE: never leaked while its
	                          owner lives                                    */
	HF_OPT_PID,            /* lock, scope: whose life holds it (default:
	                          the caller)                                    */
	HF_OPT_CANCEL_FD,      /* lock, session, scope: a descriptor that ends a
	                          wait with HF_ECANCELED when readable (-1, the
	                          default: none). The library only polls it; one
	                          that is not open ends the wait with -EBADF     */
	HF_OPT_LOCK_WAIT_MS,   /* scope: the bound on waiting for the registry's
	                          own lock (default 5 s; then HF_ETIMEDOUT)      */
	HF_OPT_GENERATION,     /* scope: release only this registration (0, the
	                          default: whatever generation the name has)     */
	HF_OPT_TTL_MS,         /* lock on etcd: the lease's TTL (default 10 s;
	                          rounded up to whole seconds, at least 1 s; etcd
	                          may grant more): how long a holder whose
	                          keep-alive stopped (a host that died, a keeper
	                          killed) keeps the lock                         */
	HF_OPT_TIMEOUT_MS,     /* lock on etcd: the bound of one request to etcd
	                          (default 5 s; connecting to one endpoint at most
	                          2 s of it); then -EIO, the holder's "reason"
	                          says what happened                             */
	HF_OPT_CHAIN_PID,      /* lock: one more process of the caller's pid
	                          namespace whose life also holds it (each call
	                          adds one, at most HF_CHAIN_MAX, then -E2BIG; 0 clears):
	                          the lock is dead only when HF_OPT_PID's process
	                          and every one of these has ended. The CLI
	                          gives a detached acquisition's calling chain
	                          (a `sh -c` line, make, xargs) this way      */
	HF_OPT_THREAD,         /* lock: the thread (its Linux tid) that will
	                          release what this handle acquires (default 0:
	                          the thread that acquires). A thread's wait for
	                          a lock that a handle of its own process holds
	                          for that same thread is refused at once with
	                          -EDEADLK, the holder named: it could never
	                          end (unless the hold is leaked - past its
	                          max-hold - before a bounded wait ends: then
	                          it waits). A hold for another thread is
	                          waited for.
	                          An event loop that acquires on worker threads
	                          names its own thread here (set on a handle
	                          that holds, it moves the hold to that thread) */
	HF_OPT_LEASE_MS,       /* lock: 0 (the default): held by HF_OPT_PID's
	                          life. > 0 (1 s to 365 days): held by a lease,
	                          by no process: no process's end frees it; it
	                          expires that long after the acquisition or the
	                          last hf_lock_renew (the record's "lease_ms";
	                          state "expired" then: the next acquirer reaps
	                          it). For callers whose steps are separate
	                          processes (an agent's tool calls): acquire,
	                          hf_lock_detach, print the token; renew and
	                          release by it. On etcd: the key's lease of
	                          that TTL (whole seconds), never kept alive but
	                          by hf_lock_renew.
	                          scope: the same for a pod (1 s to 365 days):
	                          held by its lease, no process judged, until
	                          it ends (then reaped on the next change, its
	                          scope back to its parent) or hf_scope_renew
	                          moves its end; the entry's "lease_until". On
	                          etcd the pod key's lease of that TTL, never
	                          kept alive but by hf_scope_renew. At
	                          hf_scope_renew: the new length (0: the pod's) */
	HF_OPT_DEPTH,          /* lock on the file system: how many directory
	                          levels below the lock's path hf_lock_list
	                          searches (0 to HF_LIST_DEPTH_MAX; default
	                          HF_LIST_DEPTH_DEFAULT); etcd lists every level */
	HF_OPT_MODE,           /* lock: how the lock is shared (enum
	                          hf_lock_mode): HF_MODE_EXCLUSIVE (the default:
	                          one holder), HF_MODE_SHARED (any number of
	                          shared holders, no exclusive one), HF_MODE_SLOTS
	                          (at most HF_OPT_SLOTS holders). Not while held
	                          (-EBUSY). See "Modes" below                    */
	HF_OPT_SLOTS,          /* lock: HF_MODE_SLOTS's bound, 1 to
	                          HF_SLOTS_MAX (default 1); setting it selects
	                          HF_MODE_SLOTS. Not while held (-EBUSY)        */
	HF_OPT_OWNER = 100,    /* session (string): the owner token to record
	                          (take) or to require (release); default: take
	                          generates one, release checks none             */
	HF_OPT_REGISTRY,       /* scope (string): the registry file (default
	                          hf_registry_path_for the specs' paths, one for
	                          all of them; with no spec, the working
	                          directory's)                                   */
	HF_OPT_SOCKET,         /* scope (string): an absolute socket path to
	                          record for the pod                             */
	HF_OPT_FROM,           /* scope (string): the delegating parent pod      */
	HF_OPT_BACKEND,        /* lock (string): where the lock lives. NULL or
	                          "file" (the default): the file system.
	                          "etcd://HOST:PORT[,HOST:PORT...]" (http) or
	                          "etcds://..." (https; an item may also carry
	                          its own http:// or https://): an etcd v3 cluster,
	                          its endpoints tried in turn. See "Directory lock
	                          on etcd" below                                 */
	HF_OPT_ETCD_USER,      /* lock on etcd (string): authenticate as this
	                          user (default: no auth)                        */
	HF_OPT_ETCD_PASSWORD_FILE, /* lock on etcd (string): the file whose first
	                          line is the user's password (read at each
	                          authentication, never kept)                    */
	HF_OPT_ETCD_CA_FILE,   /* lock on etcd (string): the CA bundle for https
	                          endpoints (default: the system's)              */
	HF_OPT_REASON,         /* scope (string): why the pod registers ("the
	                          parser refactor"): at most HF_REASON_MAX bytes
	                          of UTF-8 without control characters (C0, C1)
	                          or bidirectional overrides, else register says
	                          -EINVAL naming the length or the byte. Kept in
	                          the entry ("reason") and named by every
	                          refusal it causes ("holder_reason")            */
};

/* HF_OPT_REASON's bound, in bytes. */
#define HF_REASON_MAX 256

/* HF_OPT_MAX_HOLD_MS for a holder bound to its owner's life: recorded as
 * "max_hold_ms": 9223372036854775807, so no judge (status, acquire's stale
 * rules, `holdfast list`, holdfast 0.2 without this define) ever finds it
 * leaked by age; it goes when its owner is proven dead or releases. An owner
 * on another kernel (NFS) is never proven dead: only its release frees it. */
#define HF_MAX_HOLD_NONE INT64_MAX

/* HF_OPT_DEPTH's default and bound. */
#define HF_LIST_DEPTH_DEFAULT 8
#define HF_LIST_DEPTH_MAX 64

/* HF_OPT_MODE's values. A lock has no mode of its own: each acquisition
 * says how it shares, and is admitted only beside holders it is compatible
 * with - shared beside shared, slots beside fewer than its own N other
 * slot holders, exclusive beside nobody. */
enum hf_lock_mode {
	HF_MODE_EXCLUSIVE = 0,
	HF_MODE_SHARED = 1,
	HF_MODE_SLOTS = 2,
};
/* HF_OPT_SLOTS's bound. */
#define HF_SLOTS_MAX 1024

/* How many HF_OPT_CHAIN_PID processes one lock may name. */
#define HF_CHAIN_MAX 8

/* ---------------------------------------------------------------------------
 * Directory lock
 *
 * A lock is a directory PATH holding an owner record PATH/owner (JSON:
 * token, pid, pid_start, boot_id, host, acquired, fence, max_hold_ms, pidns,
 * timens, boottime_ms, comm). Beside it, PATH.holdfast/ (made on first use,
 * complete with a .gitignore of "*", never removed) keeps the fence counter
 * and the claims. Names ending in
 * ".holdfast" are reserved. The protocol is in src/lib/dirlock.c.
 *
 * Staleness: an owner proven dead is reaped at once; a lock without a
 * complete record at once when its maker's kernel lock is free, else after
 * the stale window; a live owner older than max(max-hold, stale) as leaked.
 * Fencing: every acquisition's fence is strictly greater than every earlier
 * one's of the same lock, across reaps, crashes and reboots, at most
 * INT64_MAX (then -EOVERFLOW); a counter made anew (its state directory
 * deleted) starts at the wall clock's microseconds, above the old one's.
 * A renewal (hf_lock_renew) keeps the fence.
 *
 * Modes (HF_OPT_MODE, HF_OPT_SLOTS): shared and slot holders each have
 * their own owner record, token and fence, judged live or dead like an
 * exclusive holder. On the file system every acquisition passes through
 * PATH as an exclusive one does; a shared or slot holder then moves its
 * directory aside into PATH.holdfast/ (r-<fence>-<token>, s-<fence>-<token>)
 * and holds from there. An acquisition that finds holders it cannot share
 * with waits for them while it stays at PATH, so every later acquisition
 * queues behind it: a waiting exclusive holder is never starved by a stream
 * of shared ones. Fences: a holder's fence is greater than every fence of
 * the holders it waited for, and no shared or slot holder enters with a
 * fence below the last exclusive holder's, so a resource can refuse anyone
 * from before the last exclusive holder. hf_lock_query and hf_lock_status
 * add "mode", "slots" (slots only) and "holders", an array of every holder's
 * record. The protocols are in src/lib/fs/dirlock.c and src/lib/etcd/etcdlock.c.
 * ------------------------------------------------------------------------- */
typedef struct hf_lock hf_lock;

/* A handle for the lock directory path (copied). -EINVAL: no name (".",
 * "") or one ending in ".holdfast"; -ENAMETOOLONG; -ENOMEM. "/" makes a
 * handle to read the root (hf_lock_list, hf_lock_query): acquiring it is
 * refused (-EINVAL), as no lock can be the root. */
int hf_lock_new(const char *path, hf_lock **ret);
/* HF_OPT_WAIT_MS, _STALE_MS, _MAX_HOLD_MS, _PID, _CHAIN_PID, _CANCEL_FD,
 * _TTL_MS, _TIMEOUT_MS, _THREAD, _LEASE_MS, _DEPTH, _MODE, _SLOTS. */
int hf_lock_set(hf_lock *l, int opt, int64_t value);
/* HF_OPT_BACKEND, _ETCD_USER, _ETCD_PASSWORD_FILE, _ETCD_CA_FILE (NULL:
 * back to the default). -EINVAL: not a backend URI, an empty string;
 * -EPROTONOSUPPORT: a library built without the etcd client; -EBUSY: the
 * backend of a handle that holds its lock. Options take effect at the next
 * verb that holds nothing. */
int hf_lock_set_str(hf_lock *l, int opt, const char *value);
/* Acquire. 0: held (hf_lock_token, hf_lock_fence, hf_lock_fd). Failure:
 * HF_EHELD (tried once: held by another; hf_lock_holder), HF_ETIMEDOUT (the
 * last holder seen in hf_lock_holder), HF_ECANCELED, HF_EBARRIER (a claim
 * beside the lock denies entry), HF_EUNREADABLE (an unreadable record
 * within the stale window, or the fence reservation lost: "reason"),
 * HF_EUNSAFE (PATH.holdfast of another user or writable by others),
 * -EALREADY (this handle holds it already), -EDEADLK (a wait without a
 * deadline on behalf of HF_OPT_PID, another process, for a lock that process
 * holds already: it would last as long as that process; hf_lock_holder says
 * who. A bounded wait runs to its deadline; a caller acquiring for itself
 * waits: another of its threads may release), -ESRCH
 * (no such pid), -EBUSY
 * (the fence counter stayed locked 5 s: a stopped acquirer), -EOVERFLOW,
 * -EOPNOTSUPP (no flock or RENAME_NOREPLACE here), other -errno. */
int hf_lock_acquire(hf_lock *l);
/* Release what this handle holds (or adopted). 0; HF_ENOTHELD when no
 * record with its token exists any more (reaped, or released elsewhere);
 * HF_ENOTYOURS when another token holds PATH (hf_lock_holder). The handle's
 * descriptor is closed either way; the handle may acquire again. */
int hf_lock_release(hf_lock *l);
/* Take over a lock acquired elsewhere by its token, to release or check it
 * (`holdfast lock release --token`). No I/O. -EINVAL: not a token. */
int hf_lock_adopt(hf_lock *l, const char *token);
/* Does the handle still hold it? 0 yes (its record is at PATH); HF_ELOST
 * (reaped or released; hf_lock_holder has who holds it now, if anyone);
 * HF_ENOTHELD when the handle has no token. */
int hf_lock_check(hf_lock *l);
/* Renew what the handle holds (acquired or adopted: a holder that outlives
 * its window, like lockfile-touch): the record is replaced whole, through
 * the descriptor of the lock directory holding it, with the same token,
 * owner and fence, "acquired" (and boottime_ms) now - the start of the new
 * window - and max_hold_ms HF_OPT_MAX_HOLD_MS when set, else the recorded
 * one. A reaper that judged the old record puts the renewed one back (a
 * record's identity is its token and its bytes). 0 (hf_lock_holder: the
 * renewed record); HF_ENOTHELD when the handle holds nothing or nothing is
 * at PATH (reaped, released); HF_ENOTYOURS when another token holds PATH
 * (hf_lock_holder); HF_ELOST when its owner is dead, or a reaper or a
 * release moved it while it was renewed (the renewed record is taken back:
 * the lock is not held any more); -errno. */
int hf_lock_renew(hf_lock *l);
/* Hand the lock over: forget it without releasing it. Returns its
 * descriptor (the caller owns it now: keep it open as long as the owner
 * lives, or pass it on), or -1 when there was none; the token stays
 * readable until the next acquire. */
int hf_lock_detach(hf_lock *l);
/* The held lock's token (NULL when none), fence (0), and the descriptor of
 * the lock directory that holds the owner's kernel lock (-1; close-on-exec,
 * owned by the handle until hf_lock_detach). */
const char *hf_lock_token(const hf_lock *l);
uint64_t hf_lock_fence(const hf_lock *l);
int hf_lock_fd(const hf_lock *l);
/* After a failed acquire, release or check: who holds it (NULL: nobody
 * known). After an acquire: the caller's own record. */
const hf_rec *hf_lock_holder(const hf_lock *l);
/* Commit under the lock: 0 when the last entry into PATH was this handle's
 * and its record still exists; until hf_lock_unhold nobody can pass the
 * fence steps, so nobody enters. HF_ELOST when the lock is no longer the
 * caller's; HF_ENOTHELD when the handle holds nothing, -EINVAL for an
 * adopted token (it has no fence of its own); -ETIMEDOUT when the counter
 * stayed locked 5 s. Hold it briefly.
 * hf_lock_unhold without a hold is a no-op. */
int hf_lock_hold(hf_lock *l);
void hf_lock_unhold(hf_lock *l);
/* Free the handle; a lock it still holds (acquired by this process) is
 * released first. NULL: no-op. */
void hf_lock_free(hf_lock *l);
/* The state of the lock at path, read-only: 0 and *ret, a record with
 * "state" ("free", "held", "dead", "leaked", "partial", "abandoned",
 * "skew", "expired": a lease past its length), the owner's fields when
 * there is a record, "age_ms", "claims" (how many claims beside it), "in_claim" (1: the holder's directory sits in
 * a claim); "reason" when unreadable. -errno on errors. */
int hf_lock_status(const char *path, hf_rec **ret);
/* The same through a handle (hf_lock_status is a temporary file-system
 * handle's), on its backend (HF_OPT_BACKEND): 0 and *ret
 * (the caller's); on etcd the record also has "backend" ("etcd"), "key"
 * and "ttl_ms". Failures: -errno; on etcd -EIO, -EACCES, -EPROTO with
 * hf_lock_holder's "reason" saying what happened. */
int hf_lock_query(hf_lock *l, hf_rec **ret);
/* The locks under l's path, read-only: 0 and *ret, {"dir", "locks": [...]},
 * each item a record's fields plus "kind". Nothing is reaped, swept or made.
 * On the file system l's path is a directory, walked HF_OPT_DEPTH levels
 * down (symbolic links not followed, .git not entered): kind "lock" and
 * "session" items are hf_lock_status / hf_session_status records, kind
 * "flock" a `holdfast flock` lock found by its record (state, lock, mode,
 * record, pid, comm, host, age_ms, fence); "dir" is l's path as given and
 * items' paths begin with it; "errors": [{"path", "error", "message"}],
 * one per file below it that could not be read (the listing goes on);
 * "truncated": true when a directory deeper than HF_OPT_DEPTH was not
 * searched. Failures: l's path itself unreadable (-ENOENT, -EACCES,
 * -ENOTDIR, ...), -ENOMEM. On etcd: the locks and sessions kept whose path
 * is l's path (made absolute lexically) or below it (one range read per
 * kind), each item with "backend" and "key" besides; the client's failures
 * with hf_lock_holder's "reason". */
int hf_lock_list(hf_lock *l, hf_rec **ret);
/* Keep the lock l acquired on etcd (held or detached) alive for its owner
 * (HF_OPT_PID at the acquisition): renew its lease every TTL/3 until the
 * owner process ends - then revoke it, the lock is free at once: 0 -, the
 * lease ends elsewhere (released with the token, expired: HF_ENOTHELD), or
 * it could not be renewed for a whole TTL (HF_ELOST). Blocks that long; for
 * a process that acquired on another's behalf and forked (the handle's
 * connections are made anew). -EOPNOTSUPP on the file system (keep
 * hf_lock_fd open instead); HF_ENOTHELD when l has no lease. */
int hf_lock_keep(hf_lock *l);

/* ---------------------------------------------------------------------------
 * Directory lock on etcd (HF_OPT_BACKEND "etcd://...")
 *
 * The same verbs, outcomes and records, with a key in place of the
 * directory: "/holdfast/lock" + PATH made absolute lexically (".", ".."
 * and "//" resolved without the file system, symbolic links kept), so
 * hosts sharing a tree must mount it at the same path (or name the lock by
 * the same absolute path). Nothing is made on the file system. The value
 * is the owner record (the fields above but "fence", plus "ttl_ms"), bound
 * to a lease of its own; the fence is the epoch + the key's create_revision
 * (strictly greater for every later acquisition of the store). The epoch is
 * the key "/holdfast/epoch", made once per etcd by its first acquisition:
 * the wall clock in microseconds then, so fences never repeat even when the
 * cluster is rebuilt from an empty data dir (its revisions restart at 1),
 * unless the wall clock was set back before the rebuild; a key made before
 * the epoch existed (an older holdfast's) keeps its create_revision as its
 * fence. A fence past INT64_MAX: -EOVERFLOW. A resource checks a fence with
 * hf_lock_query ("fence"), or by comparing the key's create_revision to it
 * minus the epoch inside its own etcd txn. Liveness is the lease: a holding
 * handle keeps it alive from a thread of its own (started by acquire,
 * stopped and joined by release, detach and free); hf_lock_keep keeps it
 * for a process that cannot. An owner proven dead on its own kernel is
 * reaped at once by the next acquirer there; on another host only its
 * lease's expiry frees it (HF_OPT_TTL_MS). Waits are watches of the key (no
 * polling), bounded by HF_OPT_WAIT_MS, ended by HF_OPT_CANCEL_FD.
 * hf_lock_hold only checks (there is no hold-off on etcd); hf_lock_fd is
 * -1. The etcd client (libcurl over etcd's JSON gateway) uses one
 * keep-alive connection per handle, and prints nothing: no password or
 * auth token appears in any record.
 * ------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------
 * Edit: replace a file under a held directory lock
 *
 *   hf_lock_new("state.json.lock"), acquire;
 *   hf_edit_open(l, "state.json", &e)      FILE judged, opened, leftovers swept
 *   read hf_edit_fd(e) (or nothing: -1 when FILE does not exist)
 *   hf_edit_commit(e, new, len)            atomic, only while the lock is ours
 *   hf_edit_free(e); hf_lock_release(l)
 *
 * FILE changes only by the rename of a complete, fsynced temporary
 * (FILE.tmp-<16 hex>, made and swept only under the lock). The replacement
 * keeps FILE's mode (without setuid, setgid and sticky bits), owner (root
 * only) and group (when the caller may; else the group bits are dropped); a
 * new FILE gets 0666 minus the umask. The protocol is in src/lib/edit.c.
 * ------------------------------------------------------------------------- */
typedef struct hf_edit hf_edit;

/* Open file for an edit under l (acquired by this handle - not adopted:
 * HF_ENOTHELD otherwise) and sweep the temporaries a dead edit left. 0 and *ret.
 * Refusals, each with *reterr (may be NULL; the caller's, hf_rec_free): a
 * record with "reason", "path", "euid" (the caller's), "dir_shared" (1: others
 * can write the directory) and FILE's "uid", "mode", "nlink":
 *   HF_EUNSAFE  "symlink"; "owner" (another user's FILE - root may edit one
 *               in a directory nobody else can write); in a directory others
 *               can write, "writable" (by group or others) or "links"
 *               (several hard links);
 *   -EISDIR / -EINVAL  "not_regular".
 * Other failures: -EINVAL (no file name, or one ending in '/'), -errno. A
 * missing FILE is not an error: the edit creates it. */
int hf_edit_open(hf_lock *l, const char *file, hf_edit **ret, hf_rec **reterr);
/* FILE as opened (read it from offset 0 with pread), or -1 when it does not
 * exist. Owned by the edit. */
int hf_edit_fd(const hf_edit *e);
/* Replace FILE with data (len bytes, may be 0). 0: replaced and its
 * directory synced. HF_ELOST: the lock is no longer ours (FILE untouched);
 * HF_ENOTHELD: the handle released it meanwhile; HF_EUNSAFE: FILE was
 * "replaced" or removed, or "created", meanwhile by someone not holding the
 * lock, or became unsafe ("owner", "writable", "links" as in
 * hf_edit_open) - FILE as the other left it; -errno (FILE untouched, except
 * when the notes say "replaced": true - then only the directory's fsync
 * failed). The notes
 * (hf_edit_notes, NULL when there is nothing to say; lives as long as e)
 * carry "reason" for each refusal, and what the replacement could not keep:
 * "dropped_mode" (the setuid/setgid/sticky bits of "mode" it dropped),
 * "group_dropped" true with "gid" (FILE's group), "new_gid" and "new_mode" (the
 * caller is not in FILE's group: the group bits were cleared). After one
 * commit (either way) the edit is spent: -EALREADY. */
int hf_edit_commit(hf_edit *e, const void *data, size_t len);
const hf_rec *hf_edit_notes(const hf_edit *e);
/* Close FILE and free the edit (NULL: no-op); the lock stays held. */
void hf_edit_free(hf_edit *e);

/* ---------------------------------------------------------------------------
 * Session lock
 *
 * One holder per work tree, by lane: a file (default `.session.lock` at the
 * top of the enclosing git work tree) holding one line of JSON
 *
 *   {"lane":"data","owner":"<token>","pid":4242,"host":"box",
 *    "started":"2026-09-22T10:00:00Z","boot_id":"…","timens":4026531834,
 *    "boottime_ms":8123456,"broke":{"lane":…,"owner":…,"started":…,
 *    "age_s":5520}}
 *
 * or, in the legacy form, a bare ISO-8601 timestamp (honoured, never
 * written). Ownership is the lane (and the owner token when the caller
 * keeps one): a release may come from any process. A session older than the
 * stale window is broken by the next taker; one dated in the future is live
 * (clock skew). Breaking, releasing and withdrawing first rename the file to
 * `<name>.aside-<16 hex>`; a killed process's aside is swept or restored by
 * the next taker (ignore `.session.lock.aside-*` in git). The protocol is in
 * src/lib/session.c.
 * ------------------------------------------------------------------------- */
#define HF_SESSION_FILE ".session.lock"
#define HF_LANE_MAX 64
#define HF_OWNER_MAX 64

typedef struct hf_session hf_session;

/* A handle for lane at the lock file path (NULL: hf_session_default_path).
 * -EINVAL: a lane that is empty, longer than HF_LANE_MAX or not text. */
int hf_session_new(const char *path, const char *lane, hf_session **ret);
/* HF_OPT_WAIT_MS, _STALE_MS, _CANCEL_FD, _TIMEOUT_MS (on etcd); set_str:
 * HF_OPT_OWNER, HF_OPT_BACKEND ("etcd://...": the session is the key
 * /holdfast/session + the lock file's path made absolute lexically, no
 * lease; every verb on etcd, none on the file system) and its
 * HF_OPT_ETCD_USER, _ETCD_PASSWORD_FILE, _ETCD_CA_FILE. */
int hf_session_set(hf_session *s, int opt, int64_t value);
int hf_session_set_str(hf_session *s, int opt, const char *value);
/* Take the session. 0, or 1 when the take broke a stale session (named
 * under "broke" in the new record): hf_session_owner is the token recorded,
 * hf_session_holder the record. HF_EHELD (a live session, whoever holds it - there is
 * no "you already hold it" -, or a live record in an aside; the holder),
 * HF_ETIMEDOUT, HF_ECANCELED, HF_EUNREADABLE (garbage or unreadable:
 * refused, untouched; "reason" and "mtime_ms" as evidence), -errno. */
int hf_session_take(hf_session *s);
/* Release the lane's session: the one whose owner token HF_OPT_OWNER
 * names, else (after a take by this handle) only that take, else whoever of
 * the lane holds it. 0; HF_ENOTHELD (nothing to release);
 * HF_ENOTYOURS (another lane, or another owner token; the holder);
 * HF_EUNREADABLE; -errno. */
int hf_session_release(hf_session *s);
/* Renew the lane's session (the one whose owner HF_OPT_OWNER names, else
 * this handle's take, else the lane's): its record replaced by one of the
 * same lane and owner with "started" now - a session that outlives its
 * stale window renews before it ends. The old record waits in an aside
 * (a live record beside the lock: a taker meanwhile is refused) until the
 * renewed one is published at the name by test-and-set. 0 (hf_session_holder:
 * the renewed record); HF_ENOTHELD (nothing at the name); HF_ENOTYOURS
 * (another lane or owner: the holder); HF_ELOST (broken as stale or
 * released while it was renewed: the holder now, if any); HF_EUNREADABLE;
 * -EAGAIN; -errno. */
int hf_session_renew(hf_session *s);
const char *hf_session_owner(const hf_session *s);
const hf_rec *hf_session_holder(const hf_session *s);
void hf_session_free(hf_session *s);
/* The session at path (NULL: default), read-only: 0 and *ret, a record
 * with "state" ("free", "held", "stale", "skew", "unreadable"), the file's
 * fields, "age_ms", "mtime_ms", "aside" (the name when the record sits in an
 * aside), "reason" (unreadable). stale_ms <= 0: the default window. */
int hf_session_status(const char *path, int64_t stale_ms, hf_rec **ret);
/* The same through a handle, on its backend (HF_OPT_BACKEND) and with its
 * HF_OPT_STALE_MS: 0 and *ret (an etcd record adds "backend" and "key");
 * -errno (on etcd the client's reason in hf_session_holder). */
int hf_session_query(hf_session *s, hf_rec **ret);
/* .session.lock at the top of the enclosing git work tree (the nearest
 * ancestor of the current directory holding .git), else in the current
 * directory, into buf (n bytes). */
int hf_session_default_path(char *buf, size_t n);

/* ---------------------------------------------------------------------------
 * Scopes and the registry
 *
 * One JSON table per tree (hf_registry_path_for) of pods and the path scopes
 * they were granted. A spec is "PATH:MODE[:recursive]", MODE read or write;
 * recursive covers PATH and everything below it, otherwise PATH and its
 * direct children. Paths are made absolute and canonical and compared by
 * whole components; each spec also records the kernel's identity of what
 * its path reaches (mount device and path within it), so one directory
 * reached through a bind mount is one scope. Two live pods never hold
 * overlapping write specs unless one descends from the other (delegation:
 * HF_OPT_FROM); read specs never conflict. A pod's effective scope is its
 * own specs minus the write specs of its live descendants. A pod whose
 * owner is proven dead is reaped on every change (its live children go to
 * its nearest live ancestor). The registry's generation grows with every
 * change; each registration keeps the one it was granted (a fencing token).
 * The protocol is in src/lib/registry.c.
 *
 *   hf_scope *s;
 *   int rc = hf_scope_new("agent-1", &s);           no I/O yet
 *   if (rc == 0) rc = hf_scope_add(s, "/p/src:write:recursive");
 *   if (rc == 0) rc = hf_scope_register(s);
 *   if (rc == HF_ECONFLICT)
 *           printf("held by %s\n", hf_rec_str(hf_scope_holder(s), "name"));
 *   else if (rc == 0) {
 *           ... work, keeping hf_scope_fd(s) open ...
 *           rc = hf_scope_release(s);
 *   }
 *   hf_scope_free(s);                               releases if still held
 * ------------------------------------------------------------------------- */
/* A pod name: 1 to HF_POD_NAME_MAX bytes of UTF-8 text without white space,
 * quotes, '\' or '/', not starting with '-'. */
#define HF_POD_NAME_MAX 128

typedef struct hf_scope hf_scope;

/* A handle for a pod named name (copied). -EINVAL: a bad name; -ENOMEM. */
int hf_scope_new(const char *name, hf_scope **ret);
/* Add a spec "PATH:MODE[:recursive]" (copied; at least one before
 * registering, at most 1024). Only its form is checked here; its path is
 * made canonical when registering. -EINVAL with the reason in
 * hf_scope_holder. */
int hf_scope_add(hf_scope *s, const char *spec);
/* HF_OPT_PID, _WAIT_MS, _CANCEL_FD, _LOCK_WAIT_MS, _GENERATION, _TTL_MS,
 * _TIMEOUT_MS; set_str: HF_OPT_REGISTRY, _SOCKET, _FROM, _BACKEND,
 * _ETCD_USER, _ETCD_PASSWORD_FILE, _ETCD_CA_FILE (NULL: back to the
 * default). Options take effect at the next register or release.
 * HF_OPT_GENERATION on a handle that holds a registration: -EBUSY (it has
 * its own); so does HF_OPT_BACKEND. With HF_OPT_BACKEND "etcd://..." the
 * registry is that etcd's (one key per pod under /holdfast/scope/, attached
 * to the pod's lease; the generation is the key's create_revision): the
 * same refusals and records, no liveness descriptor (hf_scope_fd -1) but a
 * lease kept alive by a thread of the handle until release, detach or free
 * (or by hf_scope_keep); HF_OPT_WAIT_MS other than 0 is refused there
 * (-EOPNOTSUPP) for now; -EPROTONOSUPPORT: a library without the client. */
int hf_scope_set(hf_scope *s, int opt, int64_t value);
int hf_scope_set_str(hf_scope *s, int opt, const char *value);
/* Register every spec or none. 0 (hf_scope_generation, hf_scope_fd: the
 * registration's liveness file holding flock(LOCK_SH) - keep it open as long
 * as the owner lives, in it or for it). HF_EHELD (the name is taken),
 * HF_ECONFLICT (hf_scope_holder: the deepest live pod whose write spec
 * overlaps - "name", "pid", "host", "generation", "comm", "age_ms" -,
 * "scope" its spec, "request" the spec of ours (canonical) and
 * "request_index" its place, "others" how many more pods overlap it,
 * "fs"/"request_fs" when the overlap is by identity), HF_ENOTYOURS (a
 * delegated spec outside the parent's effective scope; the parent), HF_ELOST
 * (the parent is not registered: "name" is its name), HF_ETIMEDOUT (a wait,
 * the last holder seen; or the registry's own lock: its "pid"),
 * HF_ECANCELED, HF_EUNREADABLE, HF_EUNSAFE (a registry directory or file of
 * another user, writable by others, a symlink; or no HF_OPT_REGISTRY and no
 * default registry for a spec's path: hf_registry_path_for, "reason" says
 * why), -EINVAL (no spec, or one that is not a spec, or specs whose default
 * registries differ: "request_index"), -ESRCH (no process has HF_OPT_PID),
 * -EALREADY (this handle holds a registration), -EOVERFLOW (the generation
 * is exhausted), -errno. The holder record names "registry" once it was
 * located, "reason" where there is more to say than the code, and
 * "refused": the name (hf_error_name) of the refusal it describes - after a
 * wait that timed out or was cancelled, the last one ("conflict", "held").
 * With HF_OPT_WAIT_MS, HF_EHELD and HF_ECONFLICT are waited out: each
 * attempt is a whole registration, woken when the registry file changes
 * (inotify on its directory), when the holder's process ends (a pidfd, in
 * this pid namespace) or after a backoff of at most 1 s (a holder elsewhere
 * that dies changes nothing there: the next attempt reaps it). */
int hf_scope_register(hf_scope *s);
/* Release the pod name's registration (this handle's, or - after _new and
 * HF_OPT_GENERATION - one made elsewhere; generation 0: whatever
 * registration the name has). 0; HF_ENOTHELD (no such pod); HF_ENOTYOURS
 * (the name now belongs to another registration: hf_scope_holder). Its scope
 * returns to its parent; its live children are re-parented to it. The
 * handle's descriptor is closed after the release, either way. */
int hf_scope_release(hf_scope *s);
/* Renew the lease of the leased pod the handle names (registered with
 * HF_OPT_LEASE_MS, by this handle or by any process: by name; with
 * HF_OPT_GENERATION, only that registration): its lease now ends
 * HF_OPT_LEASE_MS from now (0: its own length) - nothing else changes, the
 * generation neither. 0; HF_ENOTHELD (no such pod); HF_ELOST (its lease
 * had ended: it is reaped now, its scope back to its parent - an expired
 * lease is never brought back); HF_ENOTYOURS (the name now belongs to
 * another registration); -EINVAL (the pod is not leased: its process's
 * life holds it; hf_scope_holder names it); as hf_scope_register's
 * otherwise. The holder record names the pod on a refusal. */
int hf_scope_renew(hf_scope *s);
/* Forget a registration without releasing it; returns its descriptor (the
 * caller's now) or -1 when the handle holds none (or holds it on etcd: the
 * lease stays, its TTL running; or holds a pod leased by HF_OPT_LEASE_MS,
 * which has no descriptor: its lease holds it). The generation stays
 * readable. A caller that leaves a leased pod to its lease (to renew and
 * release it by name from later processes) detaches before hf_scope_free,
 * which would release it. */
int hf_scope_detach(hf_scope *s);
/* On etcd: keep the lease of the registration the handle holds or detached
 * alive for its owner (HF_OPT_PID, default the caller) until the owner ends
 * (then revoke it: 0), it is released elsewhere or expired (HF_ENOTHELD),
 * or it could not be renewed within its TTL (HF_ELOST). Blocks that long:
 * for a keeper process. -EOPNOTSUPP: the file's registry (keep its
 * descriptor open instead). */
int hf_scope_keep(hf_scope *s);
/* The generation granted (or set with HF_OPT_GENERATION; 0: none). */
uint64_t hf_scope_generation(const hf_scope *s);
/* The liveness descriptor while the handle holds a registration, else -1. */
int hf_scope_fd(const hf_scope *s);
/* After a failed add, register or release: what went wrong (see
 * hf_scope_register; NULL: nothing more than the code). NULL after a
 * success. */
const hf_rec *hf_scope_holder(const hf_scope *s);
/* Free; a registration it still holds (made by this process) is released -
 * a leased one too (HF_OPT_LEASE_MS): to leave it to its lease, call
 * hf_scope_detach first. NULL: no-op. */
void hf_scope_free(hf_scope *s);

/* "PATH:MODE[:recursive]" with PATH canonical, into buf (n bytes). */
int hf_scope_canonical(const char *spec, char *buf, size_t n);
/* An absolute canonical path into buf (symbolic links of the existing part
 * resolved, "." and ".." removed). */
int hf_path_canonical(const char *path, char *buf, size_t n);
/* The kernel identity of a canonical path, "MAJOR:MINOR:e:PATH", into buf:
 * 0, -ENOENT when the mount table does not show it (a chroot), -EINVAL (not
 * a canonical path), -errno. */
int hf_path_identity(const char *canonical_path, char *buf, size_t n);
/* The scope registry of path (relative to the working directory), found
 * from the path's own file system so that every process sharing the tree -
 * another container with its own /tmp, another worktree - finds the same
 * one: $HOLDFAST_REGISTRY when set; else <common>/holdfast/scope.lock, where
 * common is the git common directory of the work tree enclosing path (what
 * `git rev-parse --git-common-dir` names: one for every worktree); else
 * <mount>/.holdfast/scope.lock, mount the root of the mount holding path,
 * when that mount shows its file system's root, is not / and is not
 * writable by everyone. Otherwise there is no default: HF_EUNSAFE (set
 * HOLDFAST_REGISTRY or HF_OPT_REGISTRY). -errno: path cannot be resolved.
 * The environment (HOME, XDG_RUNTIME_DIR) never moves it. */
int hf_registry_path_for(const char *path, char *buf, size_t n);
/* hf_registry_path_for the working directory ("."). */
int hf_registry_path(char *buf, size_t n);

typedef struct hf_registry hf_registry;

/* Read the registry (path NULL: hf_registry_path, the working directory's)
 * without changing it; a missing registry is empty. 0 and *ret; failures as hf_scope_register's
 * (HF_EUNREADABLE, HF_EUNSAFE, -errno), with *reterr (may be NULL; the
 * caller's, hf_rec_free) naming "registry" and "reason". */
int hf_registry_read(const char *path, hf_registry **ret, hf_rec **reterr);
/* Reap every pod proven dead: the number reaped, *ret (may be NULL) holds
 * the reaped ones (each with "returned_to": the pod that got its scope
 * back, null for none) and the new generation. */
int hf_registry_reap(const char *path, hf_registry **ret, hf_rec **reterr);
/* The same on the registry handle s names: its HF_OPT_REGISTRY file, or the
 * etcd of its HF_OPT_BACKEND (with its etcd options). On etcd a pod's
 * "delegated_from" is its nearest live ancestor, entries have no "token" or
 * "scope_fs", and the registry's generation is the revision read at. */
int hf_scope_registry_read(hf_scope *s, hf_registry **ret, hf_rec **reterr);
int hf_scope_registry_reap(hf_scope *s, hf_registry **ret, hf_rec **reterr);
size_t hf_registry_count(const hf_registry *r);
uint64_t hf_registry_generation(const hf_registry *r);
/* The i-th allocation: the file's fields "name", "pid", "pid_start",
 * "boot_id", "host", "socket" (null: none), "scope_allow" (array),
 * "delegated_from" (null: top level), "generation", "registered" (when
 * known), "pidns", "timens", "boottime_ms", "comm" (absent in entries written
 * without them), "token" (when it has a liveness file), "scope_fs" (array
 * of arrays, when known), "lease_ms", "lease_until" (when leased: its
 * length and end, ISO-8601 by the renewer's wall clock) and "lease_left_ms"
 * (judged: by CLOCK_BOOTTIME on the kernel that wrote the end, else by the
 * wall clock with 5 s of grace), "reason" (when given: HF_OPT_REASON);
 * and "live" ("alive" / "dead"), "depth", "age_ms"
 * (when registered is known), "returned_to" (reaped ones). NULL when i is
 * out of range. Lives as long as r. */
const hf_rec *hf_registry_get(const hf_registry *r, size_t i);
/* The index of pod name, or -1. */
long hf_registry_find(const hf_registry *r, const char *name);
/* Pod name's effective scope: 0 and *ret (the caller's), a record with
 * "name", "pid", "generation", "scope" (its specs) and "denied" (an array of
 * objects {"scope","name","pid"}: the write specs of its live descendants
 * that overlap its own). HF_ENOTHELD: no such pod; HF_ELOST: its owner is
 * dead (its scope returns to its parent on the next change). */
int hf_registry_effective(const hf_registry *r, const char *name, hf_rec **ret);
/* May pod (NULL: anyone) write at canonical_path? The verdict (>= 0) and
 * *ret (may be NULL; the caller's): "state" (the verdict's name: "free",
 * "held", "yours", "outside", "lost"), "holder" and "holder_scope" (the
 * deepest live pod whose write spec covers the path, by path or by
 * identity: then "holder_fs"), "pod" (when given). pod_generation 0: any.
 * -EINVAL: not a canonical path. */
enum hf_scope_state {
	HF_SCOPE_FREE = 0,     /* no live write spec covers it                   */
	HF_SCOPE_HELD = 1,     /* another pod's                                  */
	HF_SCOPE_YOURS = 2,    /* the pod's effective write scope                */
	HF_SCOPE_OUTSIDE = 3,  /* nobody's, and not the pod's                    */
	HF_SCOPE_LOST = 4,     /* the pod (or that generation) is gone           */
};
int hf_registry_check(const hf_registry *r, const char *canonical_path, const char *pod,
		      uint64_t pod_generation, hf_rec **ret);
/* hf_registry_check of n canonical paths at once, all against the one
 * snapshot r (and one read of the mount table, for the paths' identities):
 * what `holdfast scope check --staged` asks of a commit's paths. How many
 * of them pod (NULL: anyone) may not write - each whose verdict is
 * HF_SCOPE_HELD, and each HF_SCOPE_LOST one that a live pod's write spec
 * covers (pod's registration is gone; its scope is another's now) -; free,
 * yours and outside are not refused. states (may be NULL; n of them): each
 * path's verdict. *ret (may be NULL; the caller's): {"count": n, "pod"
 * (when given), "refused": [{"index" (into paths), "path" (its bytes as
 * \xNN where they are not UTF-8), "state", "holder", "holder_scope",
 * "holder_fs" (when by identity)}, ...]} in the order of paths. -EINVAL: r
 * or paths NULL, or a path that is not canonical (nothing judged); -ENOMEM. */
int hf_registry_check_paths(const hf_registry *r, const char *const *paths, size_t n,
			    const char *pod, uint64_t pod_generation, int *states, hf_rec **ret);
/* NULL: no-op. */
void hf_registry_free(hf_registry *r);
#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* HOLDFAST_H */
