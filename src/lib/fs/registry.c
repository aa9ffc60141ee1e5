/*
 * registry.c - the scope registry of a tree: the protocol of a change
 * (register, release, reap) and of a read, and the judgement of every
 * allocation's owner. The files are registry_file.c's, the table in memory
 * registry_table.c's, its format registry_json.c's.
 *
 * On-disk artifacts
 * -----------------
 *   <dir>/                  $HOLDFAST_REGISTRY's directory (or
 *                           HF_OPT_REGISTRY's), else the paths' tree's
 *                           (RG12): <git common dir>/holdfast, else
 *                           <mount root>/.holdfast; created 0700, ours, not
 *                           group/world-writable.
 *   <dir>/<base>            the table, one JSON object (0600):
 *     {"version":1,"generation":17,"allocations":[
 *     {"name":"a","pid":12345,"pid_start":…,"boot_id":"…","host":"box",
 *      "pidns":4026531836,"timens":4026531834,"boottime_ms":81234,
 *      "comm":"agent","token":"<32 hex>","socket":null,
 *      "scope_allow":["/p/src:write:recursive"],
 *      "scope_fs":[["259:1:r:/p/src","0:48:r:/"]],
 *      "delegated_from":null,"generation":12,"registered":"2026-…Z"}, …]}
 *     pidns … token and scope_fs are absent in entries of holdfast 0.1.
 *     A leased pod (RG15) adds "lease_ms":N,"lease_until":"<ISO end>" and,
 *     when written on the entry's own kernel and time namespace,
 *     "lease_boottime_until":<CLOCK_BOOTTIME ms of the end>; it has no
 *     token (no live file). A reason (RG14) adds "reason":"…". Both are
 *     written only when set: the parser of 0.2 ignores fields it does not
 *     know (it looks each known one up, json_object_get; nothing checks
 *     for unknown keys), so it still reads such a table.
 *     scope_fs[i] lists spec i's kernel identities (spec.c: the mount's
 *     device, the path within its file system, the mounts below).
 *   <dir>/<base>.flock      the lock file (0600, empty). Never renamed, never
 *                           replaced, never deleted: flock(2) is taken on it.
 *   <dir>/<base>.live-<token>  an allocation's liveness file (0600, empty):
 *                           the registering side holds flock(LOCK_SH) on it
 *                           for the owner's whole life.
 *   <dir>/<base>.tmp-<hex>  a table being written; left only by a crash and
 *                           swept by the next change.
 *
 * Steps of a change (register, release, reap)
 * -------------------------------------------
 *   0. Find the registry (registry_where.c, RG12, RG13): the one named, else
 *      the one of the request's paths (the working directory's for a verb
 *      without a path); none: HF_EUNSAFE, why said, nothing created.
 *   1. Open and verify the directory (O_NOFOLLOW; owner; mode), creating it.
 *   2. Open (O_NOFOLLOW|O_NONBLOCK, creating) and verify the lock file;
 *      flock(LOCK_EX), waiting a bounded time; then check that the lock file
 *      at its name is still the one locked.
 *   3. Open the table (O_NONBLOCK), verify it is a regular file of ours, read
 *      and parse it. Sweep crash temporaries, and live files that no entry
 *      names and no one holds (a crash between creating one and writing the
 *      table, or between writing the table and removing one).
 *   4. Judge every allocation's owner (RG7, RG9); reap the dead: each one's
 *      live children go to its nearest live ancestor.
 *   5. Decide the change on the judged table (conflicts by path and by
 *      identity, delegation). A registration creates its live file now
 *      (O_CREAT|O_EXCL|O_NOFOLLOW, 0600) and takes LOCK_SH on it.
 *   6. Write the new table: temporary, fsync, rename, fsync of the directory
 *      (hf_replace_file_at). Then remove the live files of the entries it
 *      no longer names, close the judges' probes; unlock by closing the lock
 *      file.
 *   Reads (list, effective, check) do 1 and 3-4 without the lock and without
 *   writing: the table file is only ever replaced whole, so a read sees one
 *   table, old or new. Their probes are let go at once.
 *
 * Named points (hf_sys_point: tests pause or crash a process there)
 * ------------------------------------------------------------------
 *   scope.open.locked        step 2: locked, before the name is checked again
 *   scope.register.judged    a registration after step 4, under the lock
 *   scope.live.created       step 5: its live file made and locked
 *   scope.register.decided   step 5 done, before step 6
 *   scope.release.decided    a release decided, before step 6
 *   scope.store.formatted    step 6: the new table formatted, not yet written
 *   scope.live.removed       after step 6: the gone entries' live files removed
 *   scope.register.waiting   hf_scope_register (handle_scope.c), refused, before
 *                            each wait for the registry to change
 *
 * Invariants
 * ----------
 *   (RG1) One writer at a time: every change is made under flock(LOCK_EX) of
 *         the lock file, which no one renames or replaces; a locker whose file
 *         was swapped at the name since it opened it (a user deleting it)
 *         drops it and locks the new one.
 *   (RG2) The table file is only replaced whole (temporary, fsync, rename,
 *         fsync dir): a crash at any instant leaves the old table or the new.
 *   (RG3) A table that does not parse is never written over, nor are its
 *         allocations judged: HF_EUNREADABLE, nothing changed, the path said.
 *   (RG4) Two live allocations of which neither descends from the other never
 *         hold write specs that overlap by path or by kernel identity (one
 *         directory through two mounts is one directory: spec.c, SC5, SC6).
 *   (RG5) A delegated allocation's write specs lie inside its parent's
 *         effective write scope, its read specs inside its parent's specs
 *         (by path or by identity); re-parenting to an ancestor keeps that
 *         true (scopes only nest).
 *   (RG6) The registry's generation strictly increases with every change (+1
 *         per allocation registered, released or reaped), is never reused,
 *         and each allocation keeps the generation it was granted.
 *   (RG7) An allocation is reaped only on proof of death; anything unknown is
 *         alive.
 *   (RG8) Directory 0700 when created and files 0600 whatever the umask; a
 *         directory or file not ours (its owner's uid named),
 *         group/world-writable, not of its type or a symbolic link is refused
 *         (HF_EUNSAFE), never used.
 *   (RG9) A pid is proof only in its own pid namespace: an owner recorded in
 *         another one (or in none known) is dead only when its live file's
 *         flock is free (hf_owner_liveness_fd, probed under the registry
 *         lock for a change); a live file is created before the table names
 *         it and removed only after the table no longer does, so a judge
 *         never finds an entry's file missing because of its own protocol.
 *   (RG10) Nothing is written that this version would refuse to read: a
 *         generation past 2^63-1 (-EOVERFLOW), a table past HF_REG_MAX_BYTES
 *         (-EFBIG), text that is not UTF-8 without control characters.
 *   (RG11) Nothing the registry opens can block: every open is O_NONBLOCK,
 *         and a table, lock or live file that is not a regular file is
 *         refused before it is read or locked; the flock(LOCK_EX) wait is
 *         bounded (HF_SCOPE_LOCK_WAIT_MS while one holder keeps it) and
 *         ends when the caller's cancel descriptor is readable.
 *   (RG12) The default registry of a path is found from the path's own file
 *         system, never from the process's environment or its /tmp, so that
 *         every process that sees the path - in any mount namespace, any
 *         worktree - finds the same one: HOLDFAST_REGISTRY (HF_OPT_REGISTRY)
 *         when set; else <common>/holdfast/scope.lock, common the git
 *         common directory of the work tree enclosing the path (.git a
 *         directory holding HEAD, or a "gitdir: X" file and X/commondir;
 *         the walk up stops at a file system's boundary, as git's); else
 *         <mount>/.holdfast/scope.lock, mount the root of the mount holding
 *         the path, only when that mount shows its file system's root (not
 *         a bind of a subdirectory, which another namespace may see under
 *         another root), is not / and is not writable by everyone (not a
 *         /tmp, which may be private to a namespace or another user's);
 *         else there is none: HF_EUNSAFE with why, nothing created.
 *   (RG13) One registration lives in one registry: the default registries of
 *         all its specs are one, or it is refused (-EINVAL naming both)
 *         before anything is opened; a handle releases where it registered;
 *         the verbs without a path use the working directory's.
 *   (RG14) A pod's reason is at most HF_SCOPE_REASON_MAX (256) bytes of
 *         UTF-8 without C0/C1 control characters or bidirectional
 *         overrides (hf_scopereg_reason_check): refused when given
 *         (-EINVAL, 64, naming the length or the byte), refused when read
 *         from a table (HF_EUNREADABLE), so no reason reaches a terminal
 *         raw; it is named in every refusal the pod causes.
 *   (RG15) A leased pod (lease_ms > 0) is held by no process: no pid, live
 *         file or keeper judges it; it is alive while its lease has time
 *         left (hf_scopereg_lease_left) and dead after - then reaped on the
 *         next change like any dead pod, its live children re-parented to
 *         its nearest live ancestor (A->B->D with a leased B: A->D). A
 *         renewal moves only its end (same generation, RG6 unchanged), and
 *         only under the lock after the reap: an expired lease is reaped,
 *         never brought back (HF_ELOST). Clock: the end is stored twice,
 *         as a wall-clock time (Unix ms, ISO) and as CLOCK_BOOTTIME of the
 *         writer's kernel; a judge on that kernel (boot id) and in that
 *         time namespace uses CLOCK_BOOTTIME, which no wall-clock step
 *         moves and which counts suspend; any other judge (another host or
 *         container with its own time namespace, this host after a reboot)
 *         uses its wall clock with HF_SCOPE_LEASE_SKEW_MS (5 s) of grace, so
 *         a reader whose clock is behind judges later, never earlier.
 *
 * Hazards
 * -------
 *   - A zombie keeps its pid and start time: a pod whose process exited but
 *     was not waited for counts as alive until its parent reaps it.
 *   - Deleting the table file by hand restarts the generation at 0: fencing
 *     tokens handed out before can come again. The lock file alone survives.
 *   - The registry is advisory: it tells cooperating pods
 *     who may write where; it cannot stop a process that does not ask.
 *   - A read (check) may be stale the instant it returns; the generation it
 *     reports is what a pod compares before acting.
 *   - The kernel lock proves death only if the registering side kept the
 *     live file's descriptor for the owner's life: a caller that closes it
 *     early (or a keeper killed) makes a live owner in another pid namespace
 *     look dead to judges outside it. A live file deleted by hand makes such
 *     an owner unprovable: alive until released.
 *   - Paths still compare as strings across mount namespaces (a container's
 *     /src and the host's /src are one scope to the registry, a refusal on
 *     the safe side); identities only add conflicts.
 *   - A tree's registry is one user's: in a tree several users share, the
 *     first to register owns <common>/holdfast and the others are refused
 *     (77, naming the owner), never let in; they need HOLDFAST_REGISTRY
 *     (and then do not exclude each other).
 *   - Processes that work on one tree's files through two git directories
 *     (a copy or a clone bind-mounted over another, not a worktree) find
 *     two registries: paths that are one by identity are then not compared
 *     at all. HOLDFAST_REGISTRY set alike in both is the remedy.
 *   - A spec's path is resolved when the registry is found and again when
 *     the spec is made canonical: a tree moved or a .git created in
 *     between can put the two in different places (a race with the user,
 *     not with another pod).
 *   - A lease judged by the wall clock (another kernel or time namespace)
 *     ends early for a reader whose clock is more than 5 s ahead of the
 *     renewer's, or whose clock jumps forward more than that: the judge
 *     on the writer's kernel never does (CLOCK_BOOTTIME). Keep shared
 *     hosts' clocks synchronized; renew well before the end (a third of
 *     the lease, as locks do).
 *   - A renewal from another kernel or time namespace than the entry's
 *     writes no boottime end: from then on every judge uses the wall
 *     clock for it.
 *   - A reader of holdfast 0.2 ignores "lease_ms" and judges a leased pod
 *     by its pid - the process that registered it, gone at once - and
 *     reaps it on its next change: do not mix 0.2 writers with leased
 *     pods.
 *   - release NAME, list, effective and reap find the working directory's
 *     registry: run from outside the tree they look at another one (the
 *     message names the registry read).
 */
#include "registry_fs.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define bad_input(err, ...) hf_regfile_say(err, -EINVAL, __VA_ARGS__)

/* ------------------------------------------------------------------------
 * Judging (registry_judge.c) with the file's probe: the live file.
 * --------------------------------------------------------------------- */

struct live_dir {
	int dirfd;
	const char *base;
};

/* RG9: an owner of another pid namespace is proven dead by its live file
 * <base>.live-<token>'s lock alone (hf_registry_probe_fn). */
static int live_probe(const struct hf_alloc *a, void *ctx)
{
	const struct live_dir *d = ctx;
	if (!a->token)
		return -1;
	char live[NAME_MAX + 1];
	hf_regfile_live_name(d->base, a->token, live);
	return hf_regfile_live_open(d->dirfd, live);
}

/* hf_registry_judge with the live files of the registry in dirfd (-1:
 * none) named after base. */
static int judge(struct hf_scopereg_table *t, int dirfd, const char *base, bool keep)
{
	struct live_dir d = { dirfd, base };
	return hf_registry_judge(t, dirfd >= 0 ? live_probe : NULL, &d, keep);
}

/* Remove the dead (RG7): live children go to their nearest live ancestor.
 * Appends the reaped entries to *reaped when not NULL, and each one's live
 * file to r's gone list. The number reaped, or -ENOMEM. */
static int sweep(struct hf_scopereg_table *t, struct hf_scopereg_table *reaped,
		 struct hf_regfile *r)
{
	size_t w = 0;
	int count = 0;
	uint64_t before = t->generation;
	for (size_t i = 0; i < t->n; i++) {
		struct hf_alloc *a = &t->a[i];
		const char *to = a->parent >= 0 ? t->a[a->parent].name : NULL;
		/* RG9: only a probe that proved death keeps its lock */
		assert((a->live == HF_DEAD || a->probe_fd < 0) && "RG9");
		if (a->live == HF_DEAD) {
			count++;
			t->generation++; /* RG6 */
			if (reaped) {
				struct hf_alloc *g;
				if (hf_regtable_push(reaped, &g) == 0) {
					*g = *a;
					g->returned_to = to;
					g->parent = -1;
					g->probe_fd = -1; /* the gone list owns it */
				}
			}
			if (a->token || a->probe_fd >= 0)
				hf_regfile_gone(r, a->token, a->probe_fd);
			a->probe_fd = -1;
			continue;
		}
		a->from = to; /* re-parent (also drops a name that is gone) */
		t->a[w++] = *a;
	}
	t->n = w;
	assert(t->generation == before + (uint64_t)count && "RG6"); /* +1 per reaped */
	/* indices moved (RT3); liveness stays judged */
	int rc = count ? hf_regtable_link(t) : 0;
	return rc < 0 ? rc : count;
}

/* Steps 1-4 for a change. */
static int reg_begin(const char *registry, int64_t lock_wait_ms, int cancel_fd,
		     struct hf_regfile *r, struct hf_scopereg_table *t,
		     struct hf_scopereg_table *reaped, int *ret_nreaped,
		     struct hf_scopereg_holder *err)
{
	r->lock_wait_ms = lock_wait_ms;
	r->cancel_fd = cancel_fd;
	int rc = hf_regfile_open(registry, true, true, r, err);
	if (rc < 0)
		return rc;
	rc = hf_regfile_load(r, true, t, err);
	if (rc < 0) {
		hf_regfile_close(r);
		return rc;
	}
	rc = judge(t, r->dirfd, r->base, true);
	if (rc == 0)
		rc = sweep(t, reaped, r);
	if (rc < 0) {
		hf_regfile_close(r);
		hf_regtable_clear(t);
		return rc;
	}
	*ret_nreaped = rc;
	return 0;
}

/* ------------------------------------------------------------------------
 * Operations.
 * --------------------------------------------------------------------- */

int hf_scopereg_register(const struct hf_scopereg_request *req, uint64_t *ret_generation,
			 int *ret_live_fd, struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	int rc = hf_scopereg_request_check(req, err);
	if (rc < 0)
		return rc;

	/* Canonicalize and identify every spec before taking the lock:
	 * look-ups are slow. */
	struct hf_regreq *q;
	rc = hf_regreq_make(req, &q, err);
	if (rc < 0)
		return rc;
	const struct hf_spec *specs = q->specs;
	struct hf_owner me;
	rc = hf_owner_init(&me, req->pid);
	if (rc == -ESRCH && err)
		snprintf(err->reason, sizeof err->reason, "no process has pid %d", (int)req->pid);
	if (rc < 0) {
		hf_regreq_free(q);
		return rc;
	}
	if (!hf_text_ok(me.host, HF_HOST_MAX))
		me.host[0] = '\0'; /* RG10 */

	struct hf_regfile r;
	struct hf_scopereg_table t;
	int nreaped, live_fd = -1;
	bool pushed = false;
	char token[HF_REG_TOKEN_HEX + 1];
	rc = reg_begin(req->registry, req->lock_wait_ms, req->has_cancel ? req->cancel_fd : -1, &r,
		       &t, NULL, &nreaped, err);
	if (rc < 0) {
		hf_regreq_free(q);
		return rc;
	}
	hf_sys_point(HF_PT_SCOPE_REGISTER_JUDGED);

	long parent = -1;
	long same = hf_regtable_find(&t, req->name);
	if (same >= 0) {
		hf_scopereg_holder_fill(err, &t.a[same], t.a[same].spec_text[0]);
		rc = HF_EHELD;
		goto out;
	}
	if (req->from) {
		parent = hf_regtable_find(&t, req->from);
		if (parent < 0) {
			if (err)
				snprintf(err->name, sizeof err->name, "%s", req->from);
			rc = HF_ELOST;
			goto out;
		}
	}
	struct hf_regtable_refusal no;
	rc = hf_regtable_admit(&t, specs, req->nspecs, parent, &no); /* RG4, RG5 */
	if (rc < 0) {
		const struct hf_alloc *who = &t.a[no.who];
		hf_scopereg_holder_fill(err, who, who->spec_text[rc == HF_ECONFLICT ? no.who_spec : 0]);
		if (err) {
			err->request_index = no.index;
			snprintf(err->request, sizeof err->request, "%s", q->canon[no.index]);
			snprintf(err->outside, sizeof err->outside, "%s", no.outside);
		}
		if (err && rc == HF_ECONFLICT) {
			err->others = no.others;
			snprintf(err->fs, sizeof err->fs, "%s", no.who_fs ? no.who_fs : "");
			snprintf(err->request_fs, sizeof err->request_fs, "%s",
				 no.req_fs ? no.req_fs : "");
		}
	}
	if (rc < 0)
		goto out;

	struct hf_alloc *a;
	rc = hf_regtable_push(&t, &a);
	if (rc < 0)
		goto out;
	pushed = true;
	a->name = hf_regtable_strndup(&t, req->name, strlen(req->name));
	a->pid = me.pid;
	a->pid_start = me.pid_start;
	a->boot_id = hf_regtable_strndup(&t, me.boot_id, strlen(me.boot_id));
	a->host = hf_regtable_strndup(&t, me.host, strlen(me.host));
	a->pidns = me.pidns; /* RG9: whose pid it is */
	a->timens = me.timens;
	a->boot_ms = me.boot_ms > 0 ? me.boot_ms : 0;
	a->comm = hf_regtable_strndup(&t, me.comm, strlen(me.comm));
	a->socket = req->socket ? hf_regtable_strndup(&t, req->socket, strlen(req->socket)) : NULL;
	a->from = parent >= 0 ? t.a[parent].name : NULL;
	a->generation = ++t.generation; /* RG6 */
	a->registered_ms = me.time_ms;
	a->live = HF_ALIVE;
	if (req->lease_ms > 0) /* RG15: held by its lease, by no process */
		hf_scopereg_lease_start(a, req->lease_ms);
	if (req->reason) /* RG14 (hf_scopereg_request_check) */
		a->reason = hf_regtable_strndup(&t, req->reason, strlen(req->reason));
	if (!a->name || !a->boot_id || !a->host || !a->comm || (req->socket && !a->socket) ||
	    (req->reason && !a->reason)) {
		rc = -ENOMEM;
		goto out;
	}
	rc = hf_regreq_store(&t, a, q);
	if (rc < 0)
		goto out;
	if (ret_live_fd && req->lease_ms > 0)
		*ret_live_fd = -1; /* RG15: no process, no liveness file */
	if (ret_live_fd && req->lease_ms <= 0) {
		/* RG9: the file exists before the table names it */
		live_fd = hf_regfile_live_create(&r, token);
		if (live_fd < 0) {
			rc = live_fd;
			goto out;
		}
		a->token = hf_regtable_strndup(&t, token, HF_REG_TOKEN_HEX);
		if (!a->token) {
			rc = -ENOMEM;
			goto out;
		}
	}
	hf_sys_point(HF_PT_SCOPE_REGISTER_DECIDED);
	assert((!ret_live_fd || req->lease_ms > 0 || (a->token && live_fd >= 0)) &&
	       "RG9"); /* its file exists first */
	assert((req->lease_ms <= 0 || !a->token) && "RG15"); /* a lease has no live file */
	rc = hf_regfile_store(&r, &t, err);
	if (rc == 0) {
		if (ret_generation)
			*ret_generation = a->generation;
		if (ret_live_fd)
			*ret_live_fd = live_fd;
		live_fd = -1;
	}
out:;
	bool stored = rc == 0;
	if (live_fd >= 0) { /* not named by any table: ours to remove */
		char live[NAME_MAX + 1];
		hf_regfile_live_name(r.base, token, live);
		hf_sys_unlinkat(r.dirfd, live, 0);
		hf_sys_close(live_fd);
	}
	if (rc < 0 && pushed) {
		t.generation--;
		t.n--; /* the refusal records nothing of the request */
	}
	if (rc < 0 && nreaped > 0 && rc != -ENOMEM && rc != -EOVERFLOW) {
		/* the refusal stands, but the reaping it did is kept */
		stored = hf_regfile_store(&r, &t, NULL) == 0;
	}
	hf_regfile_finish(&r, &t, stored);
	hf_regfile_close(&r);
	hf_regtable_clear(&t);
	hf_regreq_free(q);
	return rc;
}

int hf_scopereg_release(const char *registry, const char *name, uint64_t generation,
			struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	if (!name || !hf_pod_name_ok(name))
		return bad_input(err, "not a valid pod name");
	struct hf_regfile r;
	struct hf_scopereg_table t;
	int nreaped;
	int rc = reg_begin(registry, 0, -1, &r, &t, NULL, &nreaped, err);
	if (rc < 0)
		return rc;
	long i = hf_regtable_find(&t, name);
	if (i < 0) {
		rc = HF_ENOTHELD;
	} else if (generation && t.a[i].generation != generation) {
		hf_scopereg_holder_fill(err, &t.a[i], t.a[i].spec_text[0]);
		rc = HF_ENOTYOURS;
	} else {
		/* as if it died: its children go to its parent (RG5 keeps) */
		t.a[i].live = HF_DEAD;
		for (size_t j = 0; j < t.n; j++)
			if (t.a[j].parent == i)
				t.a[j].parent = t.a[i].parent;
		int src = sweep(&t, NULL, &r); /* RG6: +1 */
		if (src < 0)
			rc = src;
		hf_sys_point(HF_PT_SCOPE_RELEASE_DECIDED);
	}
	bool stored = false;
	if (rc == 0 || nreaped > 0) {
		int src = hf_regfile_store(&r, &t, err);
		stored = src == 0;
		if (rc == 0)
			rc = src;
	}
	hf_regfile_finish(&r, &t, stored);
	hf_regfile_close(&r);
	hf_regtable_clear(&t);
	return rc;
}

/* reg_begin with a table for what it reaps (*ret_reaped, the caller's to
 * free): 0, or <0 with nothing left open. */
static int reg_begin_reaping(const char *registry, struct hf_regfile *r,
			     struct hf_scopereg_table *t, struct hf_scopereg_table **ret_reaped,
			     int *nreaped, struct hf_scopereg_holder *err)
{
	struct hf_scopereg_table *reaped = calloc(1, sizeof *reaped);
	if (!reaped)
		return -ENOMEM;
	int rc = reg_begin(registry, 0, -1, r, t, reaped, nreaped, err);
	if (rc < 0) {
		hf_scopereg_free(reaped);
		return rc;
	}
	*ret_reaped = reaped;
	return 0;
}

int hf_scopereg_renew(const char *registry, const char *name, uint64_t generation,
		      int64_t lease_ms, struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	if (!name || !hf_pod_name_ok(name))
		return bad_input(err, "not a valid pod name");
	if (lease_ms < 0 || (lease_ms > 0 && lease_ms < 1000) || lease_ms > 365LL * 86400 * 1000)
		return bad_input(err, "a lease is 1 s to 365 days");
	struct hf_scopereg_table *reaped;
	struct hf_regfile r;
	struct hf_scopereg_table t;
	int nreaped;
	int rc = reg_begin_reaping(registry, &r, &t, &reaped, &nreaped, err);
	if (rc < 0)
		return rc;
	bool changed = nreaped > 0;
	long i = hf_regtable_find(&t, name);
	long gone = -1;
	for (size_t k = 0; i < 0 && k < reaped->n; k++)
		if (!strcmp(reaped->a[k].name, name))
			gone = (long)k;
	if (gone >= 0) {
		/* RG15: expired (reaped just now): never brought back */
		hf_scopereg_holder_fill(err, &reaped->a[gone], reaped->a[gone].spec_text[0]);
		rc = HF_ELOST;
	} else if (i < 0) {
		rc = HF_ENOTHELD;
	} else if (generation && t.a[i].generation != generation) {
		hf_scopereg_holder_fill(err, &t.a[i], t.a[i].spec_text[0]);
		rc = HF_ENOTYOURS;
	} else if (t.a[i].lease_ms <= 0) {
		hf_scopereg_holder_fill(err, &t.a[i], t.a[i].spec_text[0]);
		hf_regfile_say(err, -EINVAL, "%s is not leased: it is held by the life of pid "
			       "%lld, not renewed", name, (long long)t.a[i].pid);
		rc = -EINVAL;
	} else {
		/* RG15: the end moves, nothing else; the generation stays (RG6
		 * counts registrations, releases and reaps, and a renewal hands
		 * out no scope) */
		hf_scopereg_lease_start(&t.a[i], lease_ms > 0 ? lease_ms : t.a[i].lease_ms);
		hf_scopereg_holder_fill(err, &t.a[i], t.a[i].spec_text[0]);
		changed = true;
	}
	bool stored = false;
	if (changed) {
		int src = hf_regfile_store(&r, &t, rc == 0 ? err : NULL);
		stored = src == 0;
		if (rc == 0)
			rc = src;
	}
	hf_regfile_finish(&r, &t, stored);
	hf_regfile_close(&r);
	hf_regtable_clear(&t); /* the reaped entries' strings were in t's arena */
	reaped->arena = NULL;
	hf_scopereg_free(reaped);
	return rc;
}

int hf_scopereg_reap(const char *registry, struct hf_scopereg_table **ret,
		     struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	struct hf_scopereg_table *reaped;
	struct hf_regfile r;
	struct hf_scopereg_table t;
	int nreaped;
	int rc = reg_begin_reaping(registry, &r, &t, &reaped, &nreaped, err);
	if (rc < 0)
		return rc;
	if (nreaped > 0)
		rc = hf_regfile_store(&r, &t, err);
	hf_regfile_finish(&r, &t, nreaped > 0 && rc == 0);
	hf_regfile_close(&r);
	/* the reaped entries' strings live in t's arena: hand it over */
	reaped->arena = t.arena;
	reaped->generation = t.generation;
	t.arena = NULL;
	hf_regtable_clear(&t);
	if (rc == 0 && ret)
		rc = hf_regtable_index(reaped, NULL); /* RT3 */
	if (rc < 0 || !ret) {
		hf_scopereg_free(reaped);
		return rc < 0 ? rc : nreaped;
	}
	*ret = reaped;
	return nreaped;
}

int hf_scopereg_read(const char *registry, struct hf_scopereg_table **ret,
		     struct hf_scopereg_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	struct hf_scopereg_table *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	struct hf_regfile r;
	r.lock_wait_ms = 0;
	r.cancel_fd = -1;
	int rc = hf_regfile_open(registry, false, false, &r, err);
	if (rc == 0) {
		rc = hf_regfile_load(&r, false, t, err);
		if (rc == 0) /* probes let go at once */
			rc = judge(t, r.dirfd, r.base, false);
		hf_regfile_close(&r);
	} else if (rc == -ENOENT) {
		/* no directory yet: an empty registry */
		rc = judge(t, -1, "", false);
	}
	if (rc < 0) {
		hf_scopereg_free(t);
		return rc;
	}
	*ret = t;
	return 0;
}

