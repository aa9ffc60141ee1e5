/*
 * registry.c - the per-user scope registry (seed 001, hardened).
 *
 * On-disk artifacts
 * -----------------
 *   <dir>/                  $HOLDFAST_REGISTRY's directory, else
 *                           /tmp/holdfast-<euid> (one per user, whatever the
 *                           environment); created 0700, ours, not
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
 *     scope_fs[i] lists spec i's kernel identities (scope.c: the mount's
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
 *   1. Open and verify the directory (O_NOFOLLOW; owner; mode), creating it.
 *   2. Open (O_NOFOLLOW|O_NONBLOCK, creating) and verify the lock file;
 *      flock(LOCK_EX), waiting a bounded time; then check that the lock file
 *      at its name is still the one locked.
 *   3. Open the table (O_NONBLOCK), verify it is a regular file of ours, read
 *      and parse it. Sweep crash temporaries, and live files that no entry
 *      names and no one holds (a crash between creating one and writing the
 *      table, or between writing the table and removing one).
 *   4. Judge every allocation's owner (R7, R9); reap the dead: each one's
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
 * Invariants
 * ----------
 *   (R1) One writer at a time: every change is made under flock(LOCK_EX) of
 *        the lock file, which no one renames or replaces; a locker whose file
 *        was swapped at the name since it opened it (a user deleting it)
 *        drops it and locks the new one.
 *   (R2) The table file is only replaced whole (temporary, fsync, rename,
 *        fsync dir): a crash at any instant leaves the old table or the new.
 *   (R3) A table that does not parse is never written over, nor are its
 *        allocations judged: HF_EUNREADABLE, nothing changed, the path said.
 *   (R4) Two live allocations of which neither descends from the other never
 *        hold write specs that overlap by path or by kernel identity (one
 *        directory through two mounts is one directory: scope.c, A5, A6).
 *   (R5) A delegated allocation's write specs lie inside its parent's
 *        effective write scope, its read specs inside its parent's specs
 *        (by path or by identity); re-parenting to an ancestor keeps that
 *        true (scopes only nest).
 *   (R6) The registry's generation strictly increases with every change (+1
 *        per allocation registered, released or reaped), is never reused,
 *        and each allocation keeps the generation it was granted.
 *   (R7) An allocation is reaped only on proof of death; anything unknown is
 *        alive.
 *   (R8) Directory 0700 when created and files 0600 whatever the umask; a
 *        directory or file not ours (its owner's uid named),
 *        group/world-writable, not of its type or a symbolic link is refused
 *        (HF_EUNSAFE), never used.
 *   (R9) A pid is proof only in its own pid namespace: an owner recorded in
 *        another one (or in none known) is dead only when its live file's
 *        flock is free (hf_owner_liveness_fd, probed under the registry
 *        lock for a change); a live file is created before the table names
 *        it and removed only after the table no longer does, so a judge
 *        never finds an entry's file missing because of its own protocol.
 *   (R10) Nothing is written that this version would refuse to read: a
 *        generation past 2^63-1 (-EOVERFLOW), a table past REG_MAX_BYTES
 *        (-EFBIG), text that is not UTF-8 without control characters.
 *   (R11) Nothing the registry opens can block: every open is O_NONBLOCK,
 *        and a table, lock or live file that is not a regular file is
 *        refused before it is read or locked; the flock(LOCK_EX) wait is
 *        bounded (HF_SCOPE_LOCK_WAIT_MS while one holder keeps it).
 *
 * Hazards
 * -------
 *   - A zombie keeps its pid and start time: a pod whose process exited but
 *     was not waited for counts as alive until its parent reaps it.
 *   - Deleting the table file by hand restarts the generation at 0: fencing
 *     tokens handed out before can come again. The lock file alone survives.
 *   - The registry is advisory, as in the seed: it tells cooperating pods
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
 *   - /tmp/holdfast-<euid> is a name in a shared directory: another user can
 *     create it first. That is refused (77, naming the owner), never used;
 *     set HOLDFAST_REGISTRY then. A process with a private /tmp (systemd
 *     PrivateTmp=) has its own registry unless HOLDFAST_REGISTRY says
 *     otherwise.
 */
#include "scope.h"

#include "claim.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define REG_MAX_BYTES (256u << 20)
#define REG_MAX_SPECS 1024
#define REG_GEN_MAX ((uint64_t)INT64_MAX) /* the largest JSON integer jansson reads */
#define TOKEN_HEX 32
/* ------------------------------------------------------------------------
 * Arena: every string and array of a table lives in a few big blocks.
 * --------------------------------------------------------------------- */

struct hf_arena {
	struct hf_arena *next;
	size_t used, cap;
	char mem[];
};

static void *arena_alloc(struct hf_arena **ap, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	struct hf_arena *a = *ap;
	if (!a || a->cap - a->used < n) {
		size_t cap = n > (256u << 10) ? n : (256u << 10);
		struct hf_arena *b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->next = a;
		b->used = 0;
		b->cap = cap;
		*ap = b;
		a = b;
	}
	void *p = a->mem + a->used;
	a->used += n;
	return p;
}

static const char *arena_strndup(struct hf_arena **ap, const char *s, size_t len)
{
	char *p = arena_alloc(ap, len + 1);
	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

static void arena_free(struct hf_arena *a)
{
	while (a) {
		struct hf_arena *n = a->next;
		free(a);
		a = n;
	}
}

void hf_registry_table_clear(struct hf_scope_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->a[i].probe_fd >= 0)
			hf_sys_close(t->a[i].probe_fd);
	free(t->a);
	arena_free(t->arena);
	memset(t, 0, sizeof *t);
}

static int table_push(struct hf_scope_table *t, struct hf_alloc **ret)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct hf_alloc *a = realloc(t->a, cap * sizeof *a);
		if (!a)
			return -ENOMEM;
		t->a = a;
		t->cap = cap;
	}
	*ret = &t->a[t->n++];
	memset(*ret, 0, sizeof **ret);
	(*ret)->parent = -1;
	(*ret)->probe_fd = -1;
	return 0;
}

/* ------------------------------------------------------------------------
 * Name index: open addressing over the table's names (FNV-1a).
 * --------------------------------------------------------------------- */

struct name_index {
	size_t mask;
	long *slot; /* -1: empty */
};

static int index_build(const struct hf_scope_table *t, struct name_index *ix, long *ret_dup)
{
	size_t size = 16;
	while (size < 2 * t->n + 1)
		size <<= 1;
	ix->slot = malloc(size * sizeof *ix->slot);
	if (!ix->slot)
		return -ENOMEM;
	ix->mask = size - 1;
	memset(ix->slot, 0xff, size * sizeof *ix->slot);
	for (size_t i = 0; i < t->n; i++) {
		size_t h = hf_hash_fnv1a(t->a[i].name, strlen(t->a[i].name)) & ix->mask;
		while (ix->slot[h] >= 0) {
			if (!strcmp(t->a[ix->slot[h]].name, t->a[i].name)) {
				if (ret_dup)
					*ret_dup = (long)i;
				free(ix->slot);
				return -EEXIST;
			}
			h = (h + 1) & ix->mask;
		}
		ix->slot[h] = (long)i;
	}
	return 0;
}

static long index_find(const struct hf_scope_table *t, const struct name_index *ix,
		       const char *name)
{
	size_t h = hf_hash_fnv1a(name, strlen(name)) & ix->mask;
	while (ix->slot[h] >= 0) {
		if (!strcmp(t->a[ix->slot[h]].name, name))
			return ix->slot[h];
		h = (h + 1) & ix->mask;
	}
	return -1;
}

long hf_registry_find(const struct hf_scope_table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->a[i].name, name))
			return (long)i;
	return -1;
}

/* ------------------------------------------------------------------------
 * Parsing: strict, every field checked; never trusts the file.
 * --------------------------------------------------------------------- */

static bool text_field(const json_t *v, size_t max, bool allow_empty)
{
	if (!json_is_string(v))
		return false;
	size_t len = json_string_length(v);
	const char *s = json_string_value(v);
	return len <= max && strlen(s) == len && (allow_empty || len > 0) && hf_text_ok(s, max);
}

static bool token_ok(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (i >= TOKEN_HEX || !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == TOKEN_HEX;
}

static int parse_alloc(const json_t *o, struct hf_scope_table *t, uint64_t gen_max, char *why,
		       size_t n)
{
	if (!json_is_object(o)) {
		snprintf(why, n, "not an object");
		return -EINVAL;
	}
	const json_t *name = json_object_get(o, "name"), *pid = json_object_get(o, "pid");
	const json_t *pst = json_object_get(o, "pid_start"), *boot = json_object_get(o, "boot_id");
	const json_t *host = json_object_get(o, "host"), *sock = json_object_get(o, "socket");
	const json_t *allow = json_object_get(o, "scope_allow");
	const json_t *from = json_object_get(o, "delegated_from");
	const json_t *gen = json_object_get(o, "generation");
	const json_t *when = json_object_get(o, "registered");
	if (!json_is_string(name) || strlen(json_string_value(name)) != json_string_length(name) ||
	    !hf_pod_name_ok(json_string_value(name))) {
		snprintf(why, n, "\"name\" missing or not a valid pod name");
		return -EINVAL;
	}
	if (!json_is_integer(pid) || json_integer_value(pid) <= 0 ||
	    json_integer_value(pid) > 0x7fffffff) {
		snprintf(why, n, "\"pid\" missing or not a positive pid");
		return -EINVAL;
	}
	if (pst && (!json_is_integer(pst) || json_integer_value(pst) < 0)) {
		snprintf(why, n, "\"pid_start\" is not a non-negative integer");
		return -EINVAL;
	}
	if ((boot && !text_field(boot, HF_BOOTID_LEN, true)) ||
	    (host && !text_field(host, HF_HOST_MAX, true))) {
		snprintf(why, n, "\"boot_id\" or \"host\" is not short text");
		return -EINVAL;
	}
	if (sock && !json_is_null(sock) && !text_field(sock, HF_SCOPE_SOCKET_MAX, false)) {
		snprintf(why, n, "\"socket\" is neither null nor text");
		return -EINVAL;
	}
	if (from && !json_is_null(from) &&
	    (!json_is_string(from) || strlen(json_string_value(from)) != json_string_length(from) ||
	     !hf_pod_name_ok(json_string_value(from)) ||
	     !strcmp(json_string_value(from), json_string_value(name)))) {
		snprintf(why, n, "\"delegated_from\" is neither null nor another pod's name");
		return -EINVAL;
	}
	if (!json_is_integer(gen) || json_integer_value(gen) <= 0 ||
	    (uint64_t)json_integer_value(gen) > gen_max) {
		snprintf(why, n, "\"generation\" missing, not positive, or above the registry's");
		return -EINVAL;
	}
	const json_t *pidns = json_object_get(o, "pidns"), *timens = json_object_get(o, "timens");
	const json_t *bms = json_object_get(o, "boottime_ms"), *comm = json_object_get(o, "comm");
	const json_t *token = json_object_get(o, "token"), *sfs = json_object_get(o, "scope_fs");
	if ((pidns && (!json_is_integer(pidns) || json_integer_value(pidns) < 0)) ||
	    (timens && (!json_is_integer(timens) || json_integer_value(timens) < 0)) ||
	    (bms && (!json_is_integer(bms) || json_integer_value(bms) < 0))) {
		snprintf(why, n, "\"pidns\", \"timens\" or \"boottime_ms\" is not a non-negative "
			 "integer");
		return -EINVAL;
	}
	if (comm && !text_field(comm, HF_COMM_MAX, true)) {
		snprintf(why, n, "\"comm\" is not short text");
		return -EINVAL;
	}
	if (token && (!json_is_string(token) || !token_ok(json_string_value(token)))) {
		snprintf(why, n, "\"token\" is not %d lowercase hex digits", TOKEN_HEX);
		return -EINVAL;
	}
	int64_t when_ms = 0;
	if (when && (!json_is_string(when) || hf_time_parse(json_string_value(when), &when_ms) < 0)) {
		snprintf(why, n, "\"registered\" is not an ISO-8601 time");
		return -EINVAL;
	}
	size_t ns = json_array_size(allow);
	if (!json_is_array(allow) || ns == 0 || ns > REG_MAX_SPECS) {
		snprintf(why, n, "\"scope_allow\" is not a list of 1 to %d specs", REG_MAX_SPECS);
		return -EINVAL;
	}
	size_t nfs = 0;
	if (sfs) {
		if (!json_is_array(sfs) || json_array_size(sfs) != ns) {
			snprintf(why, n, "\"scope_fs\" is not one list for each spec");
			return -EINVAL;
		}
		for (size_t i = 0; i < ns; i++) {
			const json_t *l = json_array_get(sfs, i);
			if (!json_is_array(l) || json_array_size(l) > HF_SCOPE_IDS_MAX) {
				snprintf(why, n, "\"scope_fs\"[%zu] is not a list of at most %d "
					 "identities", i, HF_SCOPE_IDS_MAX);
				return -EINVAL;
			}
			nfs += json_array_size(l);
		}
	}
	struct hf_alloc *a;
	int rc = table_push(t, &a);
	if (rc < 0)
		return rc;
	a->name = arena_strndup(&t->arena, json_string_value(name), json_string_length(name));
	a->pid = json_integer_value(pid);
	a->pid_start = pst ? (uint64_t)json_integer_value(pst) : 0;
	a->boot_id = boot ? arena_strndup(&t->arena, json_string_value(boot),
					  json_string_length(boot))
			  : "";
	a->host = host ? arena_strndup(&t->arena, json_string_value(host), json_string_length(host))
		       : "";
	a->socket = sock && !json_is_null(sock)
			    ? arena_strndup(&t->arena, json_string_value(sock), json_string_length(sock))
			    : NULL;
	a->from = from && !json_is_null(from) ? arena_strndup(&t->arena, json_string_value(from),
							       json_string_length(from))
					     : NULL;
	a->generation = (uint64_t)json_integer_value(gen);
	a->registered_ms = when_ms;
	a->pidns = pidns ? (uint64_t)json_integer_value(pidns) : 0;
	a->timens = timens ? (uint64_t)json_integer_value(timens) : 0;
	a->boot_ms = bms ? (int64_t)json_integer_value(bms) : 0;
	a->comm = comm ? arena_strndup(&t->arena, json_string_value(comm), json_string_length(comm))
		       : "";
	a->token = token ? arena_strndup(&t->arena, json_string_value(token), TOKEN_HEX) : NULL;
	if (!a->comm || (token && !a->token))
		return -ENOMEM;
	a->nspecs = ns;
	a->specs = arena_alloc(&t->arena, ns * sizeof *a->specs);
	a->spec_text = arena_alloc(&t->arena, ns * sizeof *a->spec_text);
	if (!a->name || !a->boot_id || !a->host || (sock && !json_is_null(sock) && !a->socket) ||
	    (from && !json_is_null(from) && !a->from) || !a->specs || !a->spec_text)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++) {
		const json_t *v = json_array_get(allow, i);
		if (!text_field(v, HF_SCOPE_SPEC_MAX - 1, false)) {
			snprintf(why, n, "\"scope_allow\"[%zu] is not text", i);
			return -EINVAL;
		}
		const char *s = arena_strndup(&t->arena, json_string_value(v), json_string_length(v));
		if (!s)
			return -ENOMEM;
		a->spec_text[i] = s;
		if (hf_spec_parse_canonical(s, json_string_length(v), &a->specs[i]) < 0) {
			snprintf(why, n, "\"scope_allow\"[%zu] is not a canonical PATH:MODE[:recursive]",
				 i);
			return -EINVAL;
		}
	}
	if (!nfs)
		return 0;
	a->nfs = nfs;
	a->fs = arena_alloc(&t->arena, nfs * sizeof *a->fs);
	a->fs_text = arena_alloc(&t->arena, nfs * sizeof *a->fs_text);
	a->fs_spec = arena_alloc(&t->arena, nfs * sizeof *a->fs_spec);
	if (!a->fs || !a->fs_text || !a->fs_spec)
		return -ENOMEM;
	size_t at = 0;
	for (size_t i = 0; i < ns; i++) {
		const json_t *l = json_array_get(sfs, i);
		size_t k = json_array_size(l);
		a->specs[i].ids = a->fs + at;
		a->specs[i].id_text = a->fs_text + at;
		a->specs[i].nids = (unsigned)k;
		for (size_t j = 0; j < k; j++, at++) {
			const json_t *v = json_array_get(l, j);
			if (!text_field(v, HF_FSID_MAX - 1, false)) {
				snprintf(why, n, "\"scope_fs\"[%zu][%zu] is not text", i, j);
				return -EINVAL;
			}
			const char *txt = arena_strndup(&t->arena, json_string_value(v),
							json_string_length(v));
			if (!txt)
				return -ENOMEM;
			if (hf_fsid_parse(txt, json_string_length(v), &a->fs[at]) < 0) {
				snprintf(why, n, "\"scope_fs\"[%zu][%zu] is not MAJOR:MINOR:KIND:PATH",
					 i, j);
				return -EINVAL;
			}
			a->fs_text[at] = txt;
			a->fs_spec[at] = i;
		}
	}
	return 0;
}

/* Every delegated_from chain must end (a missing name ends it: top level). */
static int check_cycles(const struct hf_scope_table *t, const struct name_index *ix, char *why,
			size_t n)
{
	unsigned char *state = calloc(t->n ? t->n : 1, 1); /* 0 new, 1 on path, 2 done */
	if (!state)
		return -ENOMEM;
	long *path = malloc((t->n ? t->n : 1) * sizeof *path);
	if (!path) {
		free(state);
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < t->n && rc == 0; i++) {
		size_t np = 0;
		long j = (long)i;
		while (j >= 0 && state[j] == 0) {
			state[j] = 1;
			path[np++] = j;
			j = t->a[j].from ? index_find(t, ix, t->a[j].from) : -1;
		}
		if (j >= 0 && state[j] == 1) {
			snprintf(why, n, "delegated_from forms a cycle through \"%s\"", t->a[j].name);
			rc = -EINVAL;
		}
		while (np)
			state[path[--np]] = 2;
	}
	free(path);
	free(state);
	return rc;
}

int hf_registry_parse(const char *buf, size_t len, struct hf_scope_table *t, char *reason,
		      size_t n)
{
	memset(t, 0, sizeof *t);
	json_error_t err;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!root) {
		snprintf(reason, n, "not JSON: line %d column %d: %s", err.line, err.column, err.text);
		return HF_EUNREADABLE;
	}
	int rc = HF_EUNREADABLE;
	char why[200];
	const json_t *ver = json_object_get(root, "version");
	const json_t *gen = json_object_get(root, "generation");
	const json_t *allocs = json_object_get(root, "allocations");
	if (!json_is_object(root) || !json_is_integer(ver) || json_integer_value(ver) != 1) {
		snprintf(reason, n, "not a version 1 registry (\"version\":1 missing)");
		goto out;
	}
	if (!json_is_integer(gen) || json_integer_value(gen) < 0) {
		snprintf(reason, n, "\"generation\" missing or negative");
		goto out;
	}
	if (!json_is_array(allocs)) {
		snprintf(reason, n, "\"allocations\" missing or not a list");
		goto out;
	}
	t->generation = (uint64_t)json_integer_value(gen);
	size_t na = json_array_size(allocs);
	for (size_t i = 0; i < na; i++) {
		int r = parse_alloc(json_array_get(allocs, i), t, t->generation, why, sizeof why);
		if (r == -ENOMEM) {
			rc = r;
			goto out;
		}
		if (r < 0) {
			snprintf(reason, n, "allocations[%zu]: %s", i, why);
			goto out;
		}
	}
	struct name_index ix;
	long dup = -1;
	int r = index_build(t, &ix, &dup);
	if (r == -EEXIST) {
		snprintf(reason, n, "allocations[%ld]: the name \"%s\" appears twice", dup,
			 t->a[dup].name);
		goto out;
	}
	if (r < 0) {
		rc = r;
		goto out;
	}
	r = check_cycles(t, &ix, why, sizeof why);
	free(ix.slot);
	if (r == -EINVAL) {
		snprintf(reason, n, "%s", why);
		goto out;
	}
	rc = r;
out:
	json_decref(root);
	if (rc < 0)
		hf_registry_table_clear(t);
	return rc;
}

/* ------------------------------------------------------------------------
 * Formatting: escaped by hand, one allocation a line.
 * --------------------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, cap;
	int err;
};

static void out_reserve(struct out *o, size_t more)
{
	if (o->err || o->len + more <= o->cap)
		return;
	size_t cap = o->cap ? o->cap : 4096;
	while (cap < o->len + more)
		cap *= 2;
	char *b = realloc(o->buf, cap);
	if (!b) {
		o->err = -ENOMEM;
		return;
	}
	o->buf = b;
	o->cap = cap;
}

static void out_raw(struct out *o, const char *s, size_t n)
{
	out_reserve(o, n);
	if (o->err)
		return;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

#define OUT_LIT(o, s) out_raw(o, s, sizeof(s) - 1)

static void out_str(struct out *o, const char *s)
{
	size_t n = strlen(s);
	out_reserve(o, 6 * n + 2);
	if (o->err)
		return;
	char *p = o->buf + o->len;
	*p++ = '"';
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\') {
			*p++ = '\\';
			*p++ = (char)*c;
		} else if (*c < 0x20 || *c == 0x7f) {
			static const char hex[] = "0123456789abcdef";
			memcpy(p, "\\u00", 4);
			p[4] = hex[*c >> 4];
			p[5] = hex[*c & 15];
			p += 6;
		} else {
			*p++ = (char)*c;
		}
	}
	*p++ = '"';
	o->len = (size_t)(p - o->buf);
}

static void out_u64(struct out *o, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
	out_raw(o, b, (size_t)n);
}

int hf_registry_format(const struct hf_scope_table *t, char **ret, size_t *ret_len)
{
	struct out o = { 0 };
	out_reserve(&o, 64 + t->n * 320);
	OUT_LIT(&o, "{\"version\":1,\"generation\":");
	out_u64(&o, t->generation);
	OUT_LIT(&o, ",\"allocations\":[");
	for (size_t i = 0; i < t->n; i++) {
		const struct hf_alloc *a = &t->a[i];
		if (i)
			OUT_LIT(&o, ",");
		OUT_LIT(&o, "\n{\"name\":");
		out_str(&o, a->name);
		OUT_LIT(&o, ",\"pid\":");
		out_u64(&o, (uint64_t)a->pid);
		OUT_LIT(&o, ",\"pid_start\":");
		out_u64(&o, a->pid_start);
		OUT_LIT(&o, ",\"boot_id\":");
		out_str(&o, a->boot_id);
		OUT_LIT(&o, ",\"host\":");
		out_str(&o, a->host);
		if (a->pidns) {
			OUT_LIT(&o, ",\"pidns\":");
			out_u64(&o, a->pidns);
			OUT_LIT(&o, ",\"timens\":");
			out_u64(&o, a->timens);
			OUT_LIT(&o, ",\"boottime_ms\":");
			out_u64(&o, (uint64_t)a->boot_ms);
			OUT_LIT(&o, ",\"comm\":");
			out_str(&o, a->comm);
		}
		if (a->token) {
			OUT_LIT(&o, ",\"token\":");
			out_str(&o, a->token);
		}
		OUT_LIT(&o, ",\"socket\":");
		if (a->socket)
			out_str(&o, a->socket);
		else
			OUT_LIT(&o, "null");
		OUT_LIT(&o, ",\"scope_allow\":[");
		for (size_t k = 0; k < a->nspecs; k++) {
			if (k)
				OUT_LIT(&o, ",");
			out_str(&o, a->spec_text[k]);
		}
		OUT_LIT(&o, "]");
		if (a->nfs) {
			OUT_LIT(&o, ",\"scope_fs\":[");
			for (size_t k = 0; k < a->nspecs; k++) {
				if (k)
					OUT_LIT(&o, ",");
				OUT_LIT(&o, "[");
				for (unsigned j = 0; j < a->specs[k].nids; j++) {
					if (j)
						OUT_LIT(&o, ",");
					out_str(&o, a->specs[k].id_text[j]);
				}
				OUT_LIT(&o, "]");
			}
			OUT_LIT(&o, "]");
		}
		OUT_LIT(&o, ",\"delegated_from\":");
		if (a->from)
			out_str(&o, a->from);
		else
			OUT_LIT(&o, "null");
		OUT_LIT(&o, ",\"generation\":");
		out_u64(&o, a->generation);
		if (a->registered_ms) {
			char when[40];
			hf_time_format(a->registered_ms, when, sizeof when);
			OUT_LIT(&o, ",\"registered\":");
			out_str(&o, when);
		}
		OUT_LIT(&o, "}");
	}
	if (t->n)
		OUT_LIT(&o, "\n");
	OUT_LIT(&o, "]}\n");
	if (o.err) {
		free(o.buf);
		return o.err;
	}
	*ret = o.buf;
	*ret_len = o.len;
	return 0;
}

/* ------------------------------------------------------------------------
 * String sets (tokens), open addressing.
 * --------------------------------------------------------------------- */

struct strset {
	size_t mask;
	const char **slot;
};

static int strset_init(struct strset *s, size_t n)
{
	size_t size = 16;
	while (size < 2 * n + 1)
		size <<= 1;
	s->slot = calloc(size, sizeof *s->slot);
	s->mask = size - 1;
	return s->slot ? 0 : -ENOMEM;
}

static void strset_add(struct strset *s, const char *k)
{
	size_t h = hf_hash_fnv1a(k, strlen(k)) & s->mask;
	while (s->slot[h] && strcmp(s->slot[h], k))
		h = (h + 1) & s->mask;
	s->slot[h] = k;
}

static bool strset_has(const struct strset *s, const char *k)
{
	size_t h = hf_hash_fnv1a(k, strlen(k)) & s->mask;
	while (s->slot[h]) {
		if (!strcmp(s->slot[h], k))
			return true;
		h = (h + 1) & s->mask;
	}
	return false;
}

/* The tokens of every entry of t; NULL slot array on -ENOMEM. */
static int token_set(const struct hf_scope_table *t, struct strset *s)
{
	int rc = strset_init(s, t->n);
	for (size_t i = 0; rc == 0 && i < t->n; i++)
		if (t->a[i].token)
			strset_add(s, t->a[i].token);
	return rc;
}

/* ------------------------------------------------------------------------
 * Live files: <base>.live-<token>.
 * --------------------------------------------------------------------- */

/* buf: NAME_MAX + 1 bytes; base is at most NAME_MAX - 40 (reg_open). */
static void live_name(const char *base, const char *token, char *buf)
{
	size_t bl = strnlen(base, NAME_MAX - 40), il = strlen(HF_SCOPE_LIVE_INFIX);
	size_t tl = strnlen(token, TOKEN_HEX);
	memcpy(buf, base, bl);
	memcpy(buf + bl, HF_SCOPE_LIVE_INFIX, il);
	memcpy(buf + bl + il, token, tl);
	buf[bl + il + tl] = '\0';
}

/* Open an existing live file for a probe: a regular file of ours, opened
 * without blocking (R11). The fd, or <0. */
static int live_open(int dirfd, const char *name)
{
	struct stat st, fst;
	int rc = hf_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc < 0)
		return rc;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return HF_EUNSAFE;
	int fd = hf_sys_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return fd;
	rc = hf_sys_fstat(fd, &fst);
	if (rc < 0 || !S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		hf_sys_close(fd);
		return rc < 0 ? rc : HF_EUNSAFE;
	}
	return fd;
}

/* ------------------------------------------------------------------------
 * Judging: liveness (one proof per distinct owner), parents, depths.
 * --------------------------------------------------------------------- */

static void registry_link(struct hf_scope_table *t);

struct live_slot {
	int64_t pid;
	uint64_t start, pidns;
	const char *boot, *host;
	int live;
	bool used;
};

static void owner_of(const struct hf_alloc *a, struct hf_owner *o)
{
	memset(o, 0, sizeof *o);
	o->pid = a->pid;
	o->pid_start = a->pid_start;
	snprintf(o->boot_id, sizeof o->boot_id, "%s", a->boot_id);
	snprintf(o->host, sizeof o->host, "%s", a->host);
	o->pidns = a->pidns;
	o->timens = a->timens;
	o->boot_ms = a->boot_ms;
	o->time_ms = a->registered_ms;
	snprintf(o->comm, sizeof o->comm, "%s", a->comm ? a->comm : "");
}

/* Is a's pid a pid of this process's namespace, on this kernel? Else only
 * its kernel lock can prove its death (R9). Entries of 0.1 (no pidns) are
 * judged as 0.1 judged them (liveness.c). */
static bool pid_is_ours(const struct hf_alloc *a)
{
	if (!a->pidns)
		return true;
	uint64_t mine = hf_self_pidns();
	return mine != HF_PIDNS_UNKNOWN && a->pidns == mine;
}

void hf_registry_judge(struct hf_scope_table *t, int dirfd, const char *base, bool keep)
{
	size_t size = 16;
	while (size < 2 * t->n + 1)
		size <<= 1;
	struct live_slot *cache = calloc(size, sizeof *cache);
	const char *boot = hf_boot_id();
	for (size_t i = 0; i < t->n; i++) {
		struct hf_alloc *a = &t->a[i];
		struct hf_owner o;
		owner_of(a, &o);
		if (!pid_is_ours(a)) {
			/* R9: a pid of another namespace proves nothing; the live
			 * file's lock does, on this kernel only */
			int fd = -1;
			if (dirfd >= 0 && a->token && boot[0] && !strcmp(a->boot_id, boot)) {
				char live[NAME_MAX + 1];
				live_name(base, a->token, live);
				fd = live_open(dirfd, live);
			}
			a->live = hf_owner_liveness_fd(&o, fd >= 0 ? fd : -1); /* R7 */
			if (fd >= 0 && a->live == HF_DEAD && keep)
				a->probe_fd = fd; /* LOCK_EX until the change is written */
			else if (fd >= 0)
				hf_sys_close(fd);
			continue;
		}
		struct live_slot *s = NULL;
		if (cache) {
			size_t h = ((uint64_t)a->pid * 0x9e3779b97f4a7c15ull ^ a->pid_start ^ a->pidns) &
				   (size - 1);
			while (cache[h].used &&
			       !(cache[h].pid == a->pid && cache[h].start == a->pid_start &&
				 cache[h].pidns == a->pidns && !strcmp(cache[h].boot, a->boot_id) &&
				 !strcmp(cache[h].host, a->host)))
				h = (h + 1) & (size - 1);
			s = &cache[h];
			if (s->used) {
				a->live = s->live;
				continue;
			}
		}
		a->live = hf_owner_liveness(&o); /* R7 */
		if (s)
			*s = (struct live_slot){ .pid = a->pid, .start = a->pid_start,
						 .pidns = a->pidns, .boot = a->boot_id,
						 .host = a->host, .live = a->live, .used = true };
	}
	free(cache);
	registry_link(t);
}

/* Each entry's parent: its nearest live ancestor; and its depth. */
static void registry_link(struct hf_scope_table *t)
{
	struct name_index ix;
	bool indexed = index_build(t, &ix, NULL) == 0;
	/* nearest live ancestor: follow delegated_from past the dead */
	for (size_t i = 0; i < t->n; i++) {
		long j = -1;
		const char *from = t->a[i].from;
		size_t guard = 0;
		while (from && guard++ <= t->n) {
			j = indexed ? index_find(t, &ix, from) : hf_registry_find(t, from);
			if (j < 0 || t->a[j].live == HF_ALIVE)
				break;
			from = t->a[j].from;
			j = -1;
		}
		t->a[i].parent = j;
	}
	if (indexed)
		free(ix.slot);
	for (size_t i = 0; i < t->n; i++) {
		unsigned d = 0;
		for (long j = t->a[i].parent; j >= 0 && d <= t->n; j = t->a[j].parent)
			d++;
		t->a[i].depth = d;
	}
}

/* Is anc an ancestor (through live parents) of i? */
static bool descends(const struct hf_scope_table *t, long i, long anc)
{
	size_t guard = 0;
	for (long j = t->a[i].parent; j >= 0 && guard++ <= t->n; j = t->a[j].parent)
		if (j == anc)
			return true;
	return false;
}

/* Entries a change removed: their live files go once the table written no
 * longer names them (R9); the judges' probes are closed then. */
struct gone {
	const char *token;
	int fd;
};
struct gone_list {
	struct gone *g;
	size_t n, cap;
	bool oom; /* a file could not be listed: the orphan sweep gets it later */
};

static void gone_push(struct gone_list *l, const char *token, int fd)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct gone *g = realloc(l->g, cap * sizeof *g);
		if (!g) {
			if (fd >= 0)
				hf_sys_close(fd);
			l->oom = true;
			return;
		}
		l->g = g;
		l->cap = cap;
	}
	l->g[l->n++] = (struct gone){ .token = token, .fd = fd };
}

/* Remove the dead (R7): live children go to their nearest live ancestor.
 * Appends the reaped entries to *reaped when not NULL, and each one's live
 * file to *gone. The number reaped. */
static int sweep(struct hf_scope_table *t, struct hf_scope_table *reaped, struct gone_list *gone)
{
	size_t w = 0;
	int count = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct hf_alloc *a = &t->a[i];
		const char *to = a->parent >= 0 ? t->a[a->parent].name : NULL;
		/* R9: only a probe that proved death keeps its lock */
		assert(a->live == HF_DEAD || a->probe_fd < 0);
		if (a->live == HF_DEAD) {
			count++;
			t->generation++; /* R6 */
			if (reaped) {
				struct hf_alloc *r;
				if (table_push(reaped, &r) == 0) {
					*r = *a;
					r->returned_to = to;
					r->parent = -1;
					r->probe_fd = -1; /* the gone list owns it */
				}
			}
			if (a->token || a->probe_fd >= 0)
				gone_push(gone, a->token, a->probe_fd);
			a->probe_fd = -1;
			continue;
		}
		a->from = to; /* re-parent (also drops a name that is gone) */
		t->a[w++] = *a;
	}
	t->n = w;
	if (count)
		registry_link(t); /* indices moved; liveness stays judged */
	return count;
}

/* ------------------------------------------------------------------------
 * The files: location, verification, lock, load, store.
 * --------------------------------------------------------------------- */

int hf_scope_registry_path(char *buf, size_t n)
{
	const char *env = getenv("HOLDFAST_REGISTRY");
	int len;
	if (env && *env) /* the explicit override */
		len = snprintf(buf, n, "%s", env);
	else /* one per user, whatever XDG_RUNTIME_DIR or HOME say */
		len = snprintf(buf, n, "/tmp/holdfast-%u/scope.lock", (unsigned)geteuid());
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

struct reg {
	int dirfd;
	int lockfd;
	int64_t lock_wait_ms;
	char base[NAME_MAX + 1];
	char lockname[NAME_MAX + 1];
	char dir[PATH_MAX];
	struct gone_list gone;
};

static int say(struct hf_scope_holder *err, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int say(struct hf_scope_holder *err, int rc, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->reason, sizeof err->reason, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#define unsafe(err, ...) say(err, HF_EUNSAFE, __VA_ARGS__)
#define bad_input(err, ...) say(err, -EINVAL, __VA_ARGS__)

static const char *type_name(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISREG(m) ? "a regular file" : S_ISFIFO(m) ? "a FIFO"
	       : S_ISLNK(m) ? "a symbolic link" : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "of an unknown type";
}

/* R8: ours, not writable by others, of the right type. */
static int verify_stat(const struct stat *st, bool dir, const char *what,
		       struct hf_scope_holder *err)
{
	if (st->st_uid != geteuid())
		return unsafe(err,
			      "%s belongs to uid %u, not to us (uid %u): another user made it; "
			      "remove it (as that user or root) or set HOLDFAST_REGISTRY",
			      what, (unsigned)st->st_uid, (unsigned)geteuid());
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return unsafe(err, "%s is %s, not %s", what, type_name(st->st_mode),
			      dir ? "a directory" : "a regular file");
	if (st->st_mode & 022)
		return unsafe(err, "%s is writable by group or others (mode %04o)", what,
			      (unsigned)(st->st_mode & 07777));
	return 0;
}

static void gone_close(struct gone_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->g[i].fd >= 0)
			hf_sys_close(l->g[i].fd);
	free(l->g);
	memset(l, 0, sizeof *l);
}

static void reg_close(struct reg *r)
{
	gone_close(&r->gone);
	if (r->lockfd >= 0)
		hf_sys_close(r->lockfd); /* unlocks */
	if (r->dirfd >= 0)
		hf_sys_close(r->dirfd);
	r->lockfd = r->dirfd = -1;
}

/* /proc/<pid>/stat's state letter ('T' stopped, 't' traced), or 0. */
static char pid_state(long pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	int fd = hf_sys_openat(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return 0;
	ssize_t n = hf_sys_read(fd, buf, sizeof buf - 1);
	hf_sys_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Who holds a flock on st's file, from /proc/locks: the pid (in our pid
 * namespace; 0 when the holder is not visible here), or -1 when none is
 * listed. */
static long flock_holder(const struct stat *st)
{
	char *buf;
	size_t len;
	if (hf_read_file_at(AT_FDCWD, "/proc/locks", O_NONBLOCK | O_NOCTTY, 16u << 20, &buf, &len,
			    NULL) < 0)
		return -1;
	long who = -1;
	for (char *line = buf; line && *line && who < 0;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		/* "1: FLOCK  ADVISORY  WRITE 4242 00:2a:1234 0 EOF"; waiters
		 * are listed with "->" and hold nothing */
		char type[16], adv[16], mode[16];
		long pid;
		unsigned maj, min;
		unsigned long long ino;
		if (!strstr(line, "->") &&
		    sscanf(line, "%*[^:]: %15s %15s %15s %ld %x:%x:%llu", type, adv, mode, &pid, &maj,
			   &min, &ino) == 7 &&
		    !strcmp(type, "FLOCK") && maj == major(st->st_dev) && min == minor(st->st_dev) &&
		    ino == (unsigned long long)st->st_ino)
			who = pid;
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	return who;
}

/* Step 2's wait (R11): flock(LOCK_EX) without ever blocking in the kernel,
 * retried with a growing sleep. The bound: r->lock_wait_ms when the caller
 * set one; else HF_SCOPE_LOCK_WAIT_MS while one holder keeps the lock (a
 * holder that changed since the last look means progress: another window).
 * HF_ETIMEDOUT naming the holder. */
static int lock_wait(struct reg *r, int fd, const struct stat *st, struct hf_scope_holder *err)
{
	int rc = hf_sys_flock(fd, LOCK_EX | LOCK_NB);
	if (rc != -EWOULDBLOCK)
		return rc;
	bool strict = r->lock_wait_ms > 0;
	int64_t window = strict ? r->lock_wait_ms : HF_SCOPE_LOCK_WAIT_MS;
	int64_t start = hf_sys_mono_ns(), deadline = start + window * 1000000LL;
	long holder = flock_holder(st);
	unsigned tries = 0;
	for (int windows = 1;;) {
		int64_t now = hf_sys_mono_ns();
		if (now >= deadline) {
			long h = flock_holder(st);
			if (!strict && h > 0 && h != holder && windows < 12) {
				holder = h; /* progress: the lock changed hands */
				deadline = now + window * 1000000LL;
				windows++;
				continue;
			}
			holder = h;
			break;
		}
		int64_t ms = (int64_t)(tries + 1) * (tries + 1);
		tries++;
		if (ms > 20)
			ms = 20;
		int64_t left = (deadline - now + 999999) / 1000000;
		rc = hf_sys_sleep_ms(ms < left ? ms : left);
		if (rc < 0)
			return rc;
		rc = hf_sys_flock(fd, LOCK_EX | LOCK_NB);
		if (rc != -EWOULDBLOCK)
			return rc;
	}
	double waited = (double)(hf_sys_mono_ns() - start) / 1e9;
	if (err)
		err->pid = holder > 0 ? holder : 0;
	if (holder > 0) {
		char comm[HF_COMM_MAX + 1] = "";
		hf_pid_comm((pid_t)holder, comm, sizeof comm);
		char state = pid_state(holder);
		return say(err, HF_ETIMEDOUT,
			   "its lock %s/%s stayed held for %.1f s by pid %ld (%s%s); nothing was "
			   "changed",
			   r->dir, r->lockname, waited, holder, comm[0] ? comm : "?",
			   state == 'T' || state == 't' ? ", stopped" : "");
	}
	return say(err, HF_ETIMEDOUT,
		   "its lock %s/%s stayed held for %.1f s by %s; nothing was changed", r->dir,
		   r->lockname, waited,
		   holder == 0 ? "a process of another pid namespace" : "an unknown process");
}

/* Name the owner of something at dir that could not be opened (R8). */
static int refuse_dir(const char *dir, int rc, struct hf_scope_holder *err)
{
	struct stat st;
	if (hf_sys_fstatat(AT_FDCWD, dir, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return rc;
	char what[PATH_MAX + 32];
	snprintf(what, sizeof what, "the registry directory %s", dir);
	if (st.st_uid != geteuid() || !S_ISDIR(st.st_mode))
		return verify_stat(&st, true, what, err);
	return rc;
}

/* Steps 1 (and 2 when lock): 0, or -ENOENT when !create and there is no
 * directory yet. */
static int reg_open(const char *registry, bool create, bool lock, struct reg *r,
		    struct hf_scope_holder *err)
{
	char path[PATH_MAX];
	r->dirfd = r->lockfd = -1;
	memset(&r->gone, 0, sizeof r->gone);
	int rc = registry ? (snprintf(path, sizeof path, "%s", registry) < (int)sizeof path ? 0
										  : -ENAMETOOLONG)
			  : hf_scope_registry_path(path, sizeof path);
	if (rc < 0)
		return rc;
	if (err)
		snprintf(err->registry, sizeof err->registry, "%s", path);
	size_t len = strlen(path);
	if (len == 0 || path[len - 1] == '/')
		return -EINVAL;
	char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	/* "<base>.live-<32 hex>" is the longest name made from it */
	if (!strcmp(base, ".") || !strcmp(base, "..") || strlen(base) + 40 > NAME_MAX)
		return -EINVAL;
	size_t blen = strlen(base);
	memcpy(r->base, base, blen + 1);
	memcpy(r->lockname, base, blen);
	memcpy(r->lockname + blen, ".flock", 7);
	char *dir = r->dir;
	if (!slash)
		strcpy(dir, ".");
	else if (slash == path)
		strcpy(dir, "/");
	else
		snprintf(dir, sizeof r->dir, "%.*s", (int)(slash - path), path);

	bool made = false;
	int fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd == -ENOENT && create) {
		rc = hf_sys_mkdirat(AT_FDCWD, dir, 0700);
		if (rc < 0 && rc != -EEXIST)
			return rc;
		made = rc == 0;
		fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK, 0);
	}
	if (fd == -ELOOP || fd == -ENOTDIR || fd == -EACCES || fd == -EPERM) {
		rc = refuse_dir(dir, fd, err);
		if (rc == HF_EUNSAFE || fd == -EACCES || fd == -EPERM)
			return rc;
		return unsafe(err, "the registry directory %s is a symbolic link or not a directory",
			      dir);
	}
	if (fd < 0)
		return fd;
	r->dirfd = fd;
	struct stat st;
	rc = hf_sys_fstat(fd, &st);
	if (rc == 0 && made && (st.st_mode & 07777) != 0700)
		rc = hf_sys_fchmod(fd, 0700); /* R8: whatever the umask */
	if (rc == 0 && !made) {
		char what[PATH_MAX + 32];
		snprintf(what, sizeof what, "the registry directory %s", dir);
		rc = verify_stat(&st, true, what, err);
	}
	if (rc < 0 || !lock) {
		if (rc < 0)
			reg_close(r);
		return rc;
	}

	for (int attempt = 0; attempt < 100; attempt++) {
		fd = hf_sys_openat(r->dirfd, r->lockname,
				   O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
		if (fd == -ELOOP)
			rc = unsafe(err, "the lock file %s is a symbolic link", r->lockname);
		else if (fd == -EISDIR)
			rc = unsafe(err, "the lock file %s is a directory, not a regular file",
				    r->lockname);
		else if (fd == -EACCES || fd == -EPERM) {
			struct stat lst;
			rc = hf_sys_fstatat(r->dirfd, r->lockname, &lst, AT_SYMLINK_NOFOLLOW) == 0
				     ? verify_stat(&lst, false, "the lock file", err)
				     : 0;
			if (rc == 0)
				rc = unsafe(err, "the lock file %s is not ours to open", r->lockname);
		} else
			rc = fd < 0 ? fd : hf_sys_fstat(fd, &st);
		if (rc == 0)
			rc = verify_stat(&st, false, "the lock file", err); /* R11: before flock */
		if (rc == 0 && (st.st_mode & 07777) != 0600)
			rc = hf_sys_fchmod(fd, 0600); /* R8 */
		if (rc == 0)
			rc = lock_wait(r, fd, &st, err); /* R1, R11 */
		if (rc < 0) {
			if (fd >= 0)
				hf_sys_close(fd);
			reg_close(r);
			return rc;
		}
		hf_sys_point(HF_PT_SCOPE_OPEN_LOCKED);
		struct stat now;
		rc = hf_sys_fstatat(r->dirfd, r->lockname, &now, AT_SYMLINK_NOFOLLOW);
		if (rc == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) {
			r->lockfd = fd;
			return 0;
		}
		hf_sys_close(fd); /* R1: the name now holds another file: lock that */
	}
	reg_close(r);
	return -EAGAIN;
}

struct scan_ctx {
	struct reg *r;
	const struct strset *tokens;
};

/* Step 3's sweep, under the lock: crash temporaries, and live files that no
 * entry names and whose flock is free (R9). */
static int sweep_file(int dirfd, const char *name, void *arg)
{
	struct scan_ctx *c = arg;
	const char *rest = name + strlen(c->r->base);
	if (!strncmp(rest, ".tmp-", 5)) {
		hf_sys_unlinkat(dirfd, name, 0);
		return 0;
	}
	size_t il = strlen(HF_SCOPE_LIVE_INFIX);
	if (strncmp(rest, HF_SCOPE_LIVE_INFIX, il) || !token_ok(rest + il) ||
	    strset_has(c->tokens, rest + il))
		return 0;
	int fd = live_open(dirfd, name);
	if (fd < 0)
		return 0; /* not a file of ours: not ours to remove */
	if (hf_kernel_lock_probe(fd) == 0)
		hf_sys_unlinkat(dirfd, name, 0); /* no one holds it, no entry names it */
	hf_sys_close(fd);
	return 0;
}

/* Read a regular file's whole content from fd (at most max bytes). */
static int read_fd(int fd, const struct stat *st, size_t max, char **ret, size_t *ret_len)
{
	size_t cap = st->st_size > 0 ? (size_t)st->st_size + 1 : 256, len = 0;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap > max) {
				free(buf);
				return -EFBIG;
			}
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = realloc(buf, ncap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t n = hf_sys_read(fd, buf + len, cap - len);
		if (n < 0) {
			free(buf);
			return (int)n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Step 3: an empty table when there is no file yet. */
static int reg_load(struct reg *r, bool locked, struct hf_scope_table *t,
		    struct hf_scope_holder *err)
{
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	memset(t, 0, sizeof *t);
	/* R11: never blocks (a FIFO opens at once), checked before any read */
	int fd = hf_sys_openat(r->dirfd, r->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd == -ENOENT)
		goto sweep;
	if (fd == -ELOOP)
		return unsafe(err, "the registry %s is a symbolic link", r->base);
	if (fd == -EACCES || fd == -EPERM) {
		int rc = hf_sys_fstatat(r->dirfd, r->base, &st, AT_SYMLINK_NOFOLLOW);
		if (rc == 0 && (rc = verify_stat(&st, false, "the registry file", err)) < 0)
			return rc;
		return fd;
	}
	if (fd < 0)
		return fd;
	int rc = hf_sys_fstat(fd, &st);
	if (rc == 0)
		rc = verify_stat(&st, false, "the registry file", err);
	if (rc == 0)
		rc = read_fd(fd, &st, REG_MAX_BYTES, &buf, &len);
	hf_sys_close(fd);
	if (rc == -EFBIG) {
		if (err)
			snprintf(err->reason, sizeof err->reason, "larger than %u MiB",
				 REG_MAX_BYTES >> 20);
		return HF_EUNREADABLE;
	}
	if (rc < 0)
		return rc;
	char reason[sizeof err->reason];
	rc = hf_registry_parse(buf, len, t, reason, sizeof reason); /* R3 */
	if (rc == HF_EUNREADABLE && err)
		snprintf(err->reason, sizeof err->reason, "%s", reason);
	free(buf);
	if (rc < 0)
		return rc;
sweep:
	if (locked) {
		struct strset tokens;
		if (token_set(t, &tokens) == 0) {
			char prefix[NAME_MAX + 2];
			snprintf(prefix, sizeof prefix, "%s.", r->base);
			struct scan_ctx c = { .r = r, .tokens = &tokens };
			hf_claim_scan(r->dirfd, prefix, sweep_file, &c);
			free(tokens.slot);
		}
	}
	return 0;
}

/* Step 6 (R2, R10). */
static int reg_store(struct reg *r, const struct hf_scope_table *t, struct hf_scope_holder *err)
{
	if (t->generation > REG_GEN_MAX)
		return say(err, -EOVERFLOW,
			   "its generation would pass 2^63-1, more than any reader accepts; nothing "
			   "was changed (move the registry aside to start a new one)");
	char *buf;
	size_t len;
	int rc = hf_registry_format(t, &buf, &len);
	if (rc < 0)
		return rc;
	if (len > REG_MAX_BYTES) {
		free(buf);
		return say(err, -EFBIG,
			   "the table would be larger than %u MiB, more than any reader accepts; "
			   "nothing was changed",
			   REG_MAX_BYTES >> 20);
	}
	hf_sys_point(HF_PT_SCOPE_STORE_FORMATTED);
	rc = hf_replace_file_at(r->dirfd, r->base, buf, len, 0600, false);
	free(buf);
	return rc;
}

/* After step 6: remove the live files of the entries the stored table no
 * longer names (stored), then close the judges' probes (R9). */
static void reg_finish(struct reg *r, const struct hf_scope_table *t, bool stored)
{
	struct gone_list *l = &r->gone;
	struct strset keep = { 0 };
	if (stored && l->n && token_set(t, &keep) == 0) {
		for (size_t i = 0; i < l->n; i++) {
			if (!l->g[i].token || strset_has(&keep, l->g[i].token))
				continue;
			char live[NAME_MAX + 1];
			live_name(r->base, l->g[i].token, live);
			hf_sys_unlinkat(r->dirfd, live, 0);
		}
		hf_sys_point(HF_PT_SCOPE_LIVE_REMOVED);
	}
	free(keep.slot);
	gone_close(l);
}

/* Steps 1-4 for a change. */
static int reg_begin(const char *registry, int64_t lock_wait_ms, struct reg *r,
		     struct hf_scope_table *t, struct hf_scope_table *reaped, int *ret_nreaped,
		     struct hf_scope_holder *err)
{
	r->lock_wait_ms = lock_wait_ms;
	int rc = reg_open(registry, true, true, r, err);
	if (rc < 0)
		return rc;
	rc = reg_load(r, true, t, err);
	if (rc < 0) {
		reg_close(r);
		return rc;
	}
	hf_registry_judge(t, r->dirfd, r->base, true);
	*ret_nreaped = sweep(t, reaped, &r->gone);
	return 0;
}

/* ------------------------------------------------------------------------
 * Operations.
 * --------------------------------------------------------------------- */

static void fill_holder(struct hf_scope_holder *h, const struct hf_alloc *a, const char *scope)
{
	if (!h)
		return;
	snprintf(h->name, sizeof h->name, "%s", a->name);
	h->pid = a->pid;
	snprintf(h->host, sizeof h->host, "%s", a->host);
	h->registered_ms = a->registered_ms;
	h->generation = a->generation;
	snprintf(h->scope, sizeof h->scope, "%s", scope ? scope : "");
	snprintf(h->comm, sizeof h->comm, "%s", a->comm ? a->comm : "");
	h->foreign_pidns = a->pidns && !pid_is_ours(a);
	struct hf_owner o;
	owner_of(a, &o);
	h->age_ms = a->registered_ms ? hf_owner_age_ms(&o, hf_sys_now_ms()) : -1;
	h->fs[0] = h->request_fs[0] = '\0';
}

/* Do a and b share a path (R4)? By path, or by kernel identity (A5, A6):
 * then *va / *vb are the identities that met. */
static bool spec_meet(const struct hf_spec *a, const struct hf_spec *b, const char **va,
		      const char **vb)
{
	*va = *vb = NULL;
	if (hf_spec_overlap(a, b))
		return true;
	for (unsigned i = 0; i < a->nids; i++)
		for (unsigned j = 0; j < b->nids; j++)
			if (hf_fsid_overlap(&a->ids[i], &b->ids[j])) {
				*va = a->id_text[i];
				*vb = b->id_text[j];
				return true;
			}
	return false;
}

/* Is every path of inner one of outer's (R5), by path or by identity (the
 * identity of inner's own path inside one of outer's)? */
static bool spec_within(const struct hf_spec *outer, const struct hf_spec *inner)
{
	if (hf_spec_covers(outer, inner))
		return true;
	for (unsigned i = 0; inner->nids && i < outer->nids; i++)
		if (hf_fsid_covers(&outer->ids[i], &inner->ids[0]))
			return true;
	return false;
}

int hf_scope_canonical(const char *spec, char *buf, size_t n)
{
	struct hf_spec s;
	return hf_spec_canonicalize(spec, buf, n, &s);
}

int hf_scope_canonical_path(const char *path, char *buf, size_t n)
{
	return hf_path_canonicalize(path, buf, n);
}

int hf_scope_identity(const char *path, char *buf, size_t n)
{
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

/* The request's specs with their identities, before the lock is taken. */
struct req_specs {
	char (*canon)[HF_SCOPE_SPEC_MAX];
	struct hf_spec *specs;
	char **ids_text[REG_MAX_SPECS];
	size_t nids[REG_MAX_SPECS];
	struct hf_fsid *ids[REG_MAX_SPECS];
	size_t n;
};

static void req_specs_free(struct req_specs *q)
{
	for (size_t i = 0; i < q->n; i++) {
		hf_strv_free(q->ids_text[i], q->nids[i]);
		free(q->ids[i]);
	}
	free(q->canon);
	free(q->specs);
	free(q);
}

static int req_specs_make(const struct hf_scope_request *req, struct req_specs **ret,
			  struct hf_scope_holder *err)
{
	struct req_specs *q = calloc(1, sizeof *q);
	if (!q)
		return -ENOMEM;
	q->canon = malloc(req->nspecs * sizeof *q->canon);
	q->specs = calloc(req->nspecs, sizeof *q->specs);
	if (!q->canon || !q->specs) {
		req_specs_free(q);
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < req->nspecs && rc == 0; i++) {
		rc = hf_spec_canonicalize(req->specs[i], q->canon[i], sizeof q->canon[i],
					  &q->specs[i]);
		if (rc < 0 && err) {
			err->request_index = i;
			snprintf(err->reason, sizeof err->reason,
				 rc == -EINVAL ? "not a spec PATH:MODE[:recursive] (MODE read or write) "
						 "of UTF-8 text without control characters"
					       : "cannot resolve its path: %s",
				 hf_strerror(rc));
		}
	}
	/* A5, A6: what each path reaches, by the mount table; unknown when it
	 * cannot be read (then by path only) */
	struct hf_mounts m;
	hf_mounts_load(&m);
	for (size_t i = 0; i < req->nspecs && rc == 0; i++, q->n++) {
		rc = hf_spec_identify(&m, &q->specs[i], &q->ids_text[i], &q->nids[i]);
		if (rc < 0)
			break;
		/* R10: only text a reader accepts */
		size_t w = 0;
		for (size_t k = 0; k < q->nids[i]; k++) {
			if (hf_text_ok(q->ids_text[i][k], HF_FSID_MAX - 1))
				q->ids_text[i][w++] = q->ids_text[i][k];
			else
				free(q->ids_text[i][k]);
		}
		q->nids[i] = w;
		q->ids[i] = calloc(w ? w : 1, sizeof *q->ids[i]);
		if (!q->ids[i]) {
			rc = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < w && rc == 0; k++)
			if (hf_fsid_parse(q->ids_text[i][k], strlen(q->ids_text[i][k]),
					  &q->ids[i][k]) < 0)
				rc = -EINVAL; /* never: hf_spec_identify writes this form */
		if (rc < 0)
			break;
		q->specs[i].ids = q->ids[i];
		q->specs[i].id_text = (const char *const *)q->ids_text[i];
		q->specs[i].nids = (unsigned)w;
	}
	hf_mounts_free(&m);
	if (rc < 0) {
		q->n = req->nspecs < q->n + 1 ? req->nspecs : q->n + 1;
		req_specs_free(q);
		return rc;
	}
	*ret = q;
	return 0;
}

/* Store the request's specs, identities included, in a (arena-owned). */
static int alloc_specs(struct hf_scope_table *t, struct hf_alloc *a, const struct req_specs *q)
{
	a->nspecs = q->n;
	a->spec_text = arena_alloc(&t->arena, q->n * sizeof *a->spec_text);
	a->specs = arena_alloc(&t->arena, q->n * sizeof *a->specs);
	size_t nfs = 0;
	for (size_t i = 0; i < q->n; i++)
		nfs += q->nids[i];
	a->nfs = nfs;
	if (nfs) {
		a->fs = arena_alloc(&t->arena, nfs * sizeof *a->fs);
		a->fs_text = arena_alloc(&t->arena, nfs * sizeof *a->fs_text);
		a->fs_spec = arena_alloc(&t->arena, nfs * sizeof *a->fs_spec);
		if (!a->fs || !a->fs_text || !a->fs_spec)
			return -ENOMEM;
	}
	if (!a->spec_text || !a->specs)
		return -ENOMEM;
	size_t at = 0;
	for (size_t i = 0; i < q->n; i++) {
		size_t len = strlen(q->canon[i]);
		a->spec_text[i] = arena_strndup(&t->arena, q->canon[i], len);
		if (!a->spec_text[i])
			return -ENOMEM;
		hf_spec_parse_canonical(a->spec_text[i], len, &a->specs[i]);
		a->specs[i].ids = a->fs ? a->fs + at : NULL;
		a->specs[i].id_text = a->fs_text ? a->fs_text + at : NULL;
		a->specs[i].nids = (unsigned)q->nids[i];
		for (size_t k = 0; k < q->nids[i]; k++, at++) {
			const char *s = q->ids_text[i][k];
			size_t l = strlen(s);
			a->fs_text[at] = arena_strndup(&t->arena, s, l);
			if (!a->fs_text[at])
				return -ENOMEM;
			hf_fsid_parse(a->fs_text[at], l, &a->fs[at]);
			a->fs_spec[at] = i;
		}
	}
	return 0;
}

/* Step 5 of a registration: the allocation's live file, created new (never
 * an existing one), 0600, holding LOCK_SH (R9, R11). The fd, token set. */
static int live_create(struct reg *r, char token[TOKEN_HEX + 1])
{
	int fd = -EEXIST;
	char live[NAME_MAX + 1];
	for (int attempt = 0; attempt < 8 && fd == -EEXIST; attempt++) {
		int rc = hf_random_hex(token, TOKEN_HEX / 2);
		if (rc < 0)
			return rc;
		live_name(r->base, token, live);
		fd = hf_sys_openat(r->dirfd, live,
				   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
				   0600);
	}
	if (fd < 0)
		return fd;
	struct stat st;
	int rc = hf_sys_fstat(fd, &st);
	if (rc == 0 && (st.st_mode & 07777) != 0600)
		rc = hf_sys_fchmod(fd, 0600); /* R8: whatever the umask */
	if (rc == 0)
		rc = hf_sys_flock(fd, LOCK_SH | LOCK_NB); /* new: no one else has it */
	if (rc < 0) {
		hf_sys_unlinkat(r->dirfd, live, 0);
		hf_sys_close(fd);
		return rc;
	}
	hf_sys_point(HF_PT_SCOPE_LIVE_CREATED);
	return fd;
}

int hf_scope_register(const struct hf_scope_request *req, uint64_t *ret_generation,
		      int *ret_live_fd, struct hf_scope_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	if (!req->name || !hf_pod_name_ok(req->name))
		return bad_input(err,
				 "a pod name is 1 to 128 bytes of UTF-8 text without control "
				 "characters, white space, quotes, '\\' or '/', not starting with "
				 "'-'");
	if (req->from && !hf_pod_name_ok(req->from))
		return bad_input(err, "the parent's name is not a valid pod name");
	if (req->from && !strcmp(req->from, req->name))
		return bad_input(err, "a pod cannot delegate to itself");
	if (req->socket && (req->socket[0] != '/' || !hf_text_ok(req->socket, HF_SCOPE_SOCKET_MAX)))
		return bad_input(err,
				 "the socket must be an absolute path of UTF-8 text without control "
				 "characters");
	if (req->nspecs == 0 || req->nspecs > REG_MAX_SPECS)
		return bad_input(err, "give 1 to 1024 specs PATH:MODE[:recursive]");
	if (req->lock_wait_ms < 0)
		return bad_input(err, "lock_wait_ms is 0 (the default) or a bound");

	/* Canonicalize and identify every spec before taking the lock:
	 * look-ups are slow. */
	struct req_specs *q;
	int rc = req_specs_make(req, &q, err);
	if (rc < 0)
		return rc;
	const struct hf_spec *specs = q->specs;
	struct hf_owner me;
	rc = hf_owner_init(&me, req->pid);
	if (rc == -ESRCH && err)
		snprintf(err->reason, sizeof err->reason, "no process has pid %d", (int)req->pid);
	if (rc < 0) {
		req_specs_free(q);
		return rc;
	}
	if (!hf_text_ok(me.host, HF_HOST_MAX))
		me.host[0] = '\0'; /* R10 */

	struct reg r;
	struct hf_scope_table t;
	int nreaped, live_fd = -1;
	bool pushed = false;
	char token[TOKEN_HEX + 1];
	rc = reg_begin(req->registry, req->lock_wait_ms, &r, &t, NULL, &nreaped, err);
	if (rc < 0) {
		req_specs_free(q);
		return rc;
	}
	hf_sys_point(HF_PT_SCOPE_REGISTER_JUDGED);

	long parent = -1;
	long same = hf_registry_find(&t, req->name);
	if (same >= 0) {
		fill_holder(err, &t.a[same], t.a[same].spec_text[0]);
		rc = HF_EHELD;
		goto out;
	}
	if (req->from) {
		parent = hf_registry_find(&t, req->from);
		if (parent < 0) {
			if (err)
				snprintf(err->name, sizeof err->name, "%s", req->from);
			rc = HF_ELOST;
			goto out;
		}
	}
	for (size_t i = 0; i < req->nspecs && rc == 0; i++) {
		const struct hf_spec *s = &specs[i];
		long best = -1;
		size_t best_k = 0, others = 0;
		const char *best_vo = NULL, *best_vs = NULL;
		if (s->write) {
			/* R4: no overlap with a live pod that is not an ancestor */
			for (size_t j = 0; j < t.n; j++) {
				if ((long)j == parent || (parent >= 0 && descends(&t, parent, (long)j)))
					continue;
				for (size_t k = 0; k < t.a[j].nspecs; k++) {
					const struct hf_spec *o = &t.a[j].specs[k];
					const char *vo, *vs;
					if (!o->write || !spec_meet(o, s, &vo, &vs))
						continue;
					if (best >= 0)
						others++;
					if (best < 0 || t.a[j].depth > t.a[best].depth ||
					    (t.a[j].depth == t.a[best].depth &&
					     o->len > t.a[best].specs[best_k].len)) {
						best = (long)j;
						best_k = k;
						best_vo = vo;
						best_vs = vs;
					}
					break;
				}
			}
		}
		if (best >= 0) {
			fill_holder(err, &t.a[best], t.a[best].spec_text[best_k]);
			if (err) {
				err->others = others;
				err->request_index = i;
				snprintf(err->request, sizeof err->request, "%s", q->canon[i]);
				snprintf(err->fs, sizeof err->fs, "%s", best_vo ? best_vo : "");
				snprintf(err->request_fs, sizeof err->request_fs, "%s",
					 best_vs ? best_vs : "");
			}
			rc = HF_ECONFLICT;
			break;
		}
		if (parent >= 0) {
			/* R5: inside one of the parent's specs of a mode that allows it
			 * (overlap with its other descendants was refused above) */
			bool inside = false;
			for (size_t k = 0; k < t.a[parent].nspecs && !inside; k++)
				inside = (t.a[parent].specs[k].write || !s->write) &&
					 spec_within(&t.a[parent].specs[k], s);
			if (!inside) {
				fill_holder(err, &t.a[parent], t.a[parent].spec_text[0]);
				if (err) {
					err->request_index = i;
					snprintf(err->request, sizeof err->request, "%s", q->canon[i]);
				}
				rc = HF_ENOTYOURS;
			}
		}
	}
	if (rc < 0)
		goto out;

	struct hf_alloc *a;
	rc = table_push(&t, &a);
	if (rc < 0)
		goto out;
	pushed = true;
	a->name = arena_strndup(&t.arena, req->name, strlen(req->name));
	a->pid = me.pid;
	a->pid_start = me.pid_start;
	a->boot_id = arena_strndup(&t.arena, me.boot_id, strlen(me.boot_id));
	a->host = arena_strndup(&t.arena, me.host, strlen(me.host));
	a->pidns = me.pidns; /* R9: whose pid it is */
	a->timens = me.timens;
	a->boot_ms = me.boot_ms > 0 ? me.boot_ms : 0;
	a->comm = arena_strndup(&t.arena, me.comm, strlen(me.comm));
	a->socket = req->socket ? arena_strndup(&t.arena, req->socket, strlen(req->socket)) : NULL;
	a->from = parent >= 0 ? t.a[parent].name : NULL;
	a->generation = ++t.generation; /* R6 */
	a->registered_ms = me.time_ms;
	a->live = HF_ALIVE;
	if (!a->name || !a->boot_id || !a->host || !a->comm || (req->socket && !a->socket)) {
		rc = -ENOMEM;
		goto out;
	}
	rc = alloc_specs(&t, a, q);
	if (rc < 0)
		goto out;
	if (ret_live_fd) {
		/* R9: the file exists before the table names it */
		live_fd = live_create(&r, token);
		if (live_fd < 0) {
			rc = live_fd;
			goto out;
		}
		a->token = arena_strndup(&t.arena, token, TOKEN_HEX);
		if (!a->token) {
			rc = -ENOMEM;
			goto out;
		}
	}
	hf_sys_point(HF_PT_SCOPE_REGISTER_DECIDED);
	assert(!ret_live_fd || (a->token && live_fd >= 0)); /* R9: its file exists first */
	rc = reg_store(&r, &t, err);
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
		live_name(r.base, token, live);
		hf_sys_unlinkat(r.dirfd, live, 0);
		hf_sys_close(live_fd);
	}
	if (rc < 0 && pushed) {
		t.generation--;
		t.n--; /* the refusal records nothing of the request */
	}
	if (rc < 0 && nreaped > 0 && rc != -ENOMEM && rc != -EOVERFLOW) {
		/* the refusal stands, but the reaping it did is kept */
		stored = reg_store(&r, &t, NULL) == 0;
	}
	reg_finish(&r, &t, stored);
	reg_close(&r);
	hf_registry_table_clear(&t);
	req_specs_free(q);
	return rc;
}

int hf_scope_release(const char *registry, const char *name, uint64_t generation,
		     struct hf_scope_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	if (!name || !hf_pod_name_ok(name))
		return bad_input(err, "not a valid pod name");
	struct reg r;
	struct hf_scope_table t;
	int nreaped;
	int rc = reg_begin(registry, 0, &r, &t, NULL, &nreaped, err);
	if (rc < 0)
		return rc;
	long i = hf_registry_find(&t, name);
	if (i < 0) {
		rc = HF_ENOTHELD;
	} else if (generation && t.a[i].generation != generation) {
		fill_holder(err, &t.a[i], t.a[i].spec_text[0]);
		rc = HF_ENOTYOURS;
	} else {
		/* as if it died: its children go to its parent (R5 keeps) */
		t.a[i].live = HF_DEAD;
		for (size_t j = 0; j < t.n; j++)
			if (t.a[j].parent == i)
				t.a[j].parent = t.a[i].parent;
		sweep(&t, NULL, &r.gone); /* R6: +1 */
		hf_sys_point(HF_PT_SCOPE_RELEASE_DECIDED);
	}
	bool stored = false;
	if (rc == 0 || nreaped > 0) {
		int src = reg_store(&r, &t, err);
		stored = src == 0;
		if (rc == 0)
			rc = src;
	}
	reg_finish(&r, &t, stored);
	reg_close(&r);
	hf_registry_table_clear(&t);
	return rc;
}

int hf_scope_reap(const char *registry, struct hf_scope_table **ret, struct hf_scope_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	struct hf_scope_table *reaped = calloc(1, sizeof *reaped);
	if (!reaped)
		return -ENOMEM;
	struct reg r;
	struct hf_scope_table t;
	int nreaped;
	int rc = reg_begin(registry, 0, &r, &t, reaped, &nreaped, err);
	if (rc < 0) {
		free(reaped);
		return rc;
	}
	if (nreaped > 0)
		rc = reg_store(&r, &t, err);
	reg_finish(&r, &t, nreaped > 0 && rc == 0);
	reg_close(&r);
	/* the reaped entries' strings live in t's arena: hand it over */
	reaped->arena = t.arena;
	reaped->generation = t.generation;
	t.arena = NULL;
	hf_registry_table_clear(&t);
	if (rc < 0 || !ret) {
		hf_scope_free(reaped);
		return rc < 0 ? rc : nreaped;
	}
	*ret = reaped;
	return nreaped;
}

int hf_scope_read(const char *registry, struct hf_scope_table **ret, struct hf_scope_holder *err)
{
	if (err)
		memset(err, 0, sizeof *err);
	struct hf_scope_table *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	struct reg r;
	r.lock_wait_ms = 0;
	int rc = reg_open(registry, false, false, &r, err);
	if (rc == 0) {
		rc = reg_load(&r, false, t, err);
		if (rc == 0)
			hf_registry_judge(t, r.dirfd, r.base, false); /* probes let go at once */
		reg_close(&r);
	} else if (rc == -ENOENT) {
		rc = 0; /* no directory yet: an empty registry */
		hf_registry_judge(t, -1, "", false);
	}
	if (rc < 0) {
		free(t);
		return rc;
	}
	*ret = t;
	return 0;
}

size_t hf_scope_count(const struct hf_scope_table *t)
{
	return t->n;
}

uint64_t hf_scope_generation(const struct hf_scope_table *t)
{
	return t->generation;
}

void hf_scope_get(const struct hf_scope_table *t, size_t i, struct hf_scope_alloc *ret)
{
	const struct hf_alloc *a = &t->a[i];
	*ret = (struct hf_scope_alloc){
		.name = a->name, .pid = a->pid, .pid_start = a->pid_start, .boot_id = a->boot_id,
		.host = a->host, .socket = a->socket, .delegated_from = a->from,
		.generation = a->generation, .registered_ms = a->registered_ms,
		.scope_allow = a->spec_text, .nscope = a->nspecs, .live = a->live,
		.depth = a->depth, .returned_to = a->returned_to, .pidns = a->pidns,
		.timens = a->timens, .boot_ms = a->boot_ms, .comm = a->comm ? a->comm : "",
		.token = a->token, .scope_fs = a->fs_text, .scope_fs_spec = a->fs_spec,
		.nscope_fs = a->nfs,
	};
}

long hf_scope_find(const struct hf_scope_table *t, const char *name)
{
	return hf_registry_find(t, name);
}

void hf_scope_free(struct hf_scope_table *t)
{
	if (!t)
		return;
	hf_registry_table_clear(t);
	free(t);
}

int hf_scope_effective(const struct hf_scope_table *t, const char *name,
		       struct hf_scope_deny **ret, size_t *ret_n)
{
	long me = hf_registry_find(t, name);
	if (me < 0)
		return HF_ENOTHELD;
	if (t->a[me].live == HF_DEAD)
		return HF_ELOST;
	size_t n = 0, cap = 0;
	struct hf_scope_deny *d = NULL;
	for (size_t j = 0; j < t->n; j++) {
		if (t->a[j].live != HF_ALIVE || !descends(t, (long)j, me))
			continue;
		for (size_t k = 0; k < t->a[j].nspecs; k++) {
			const struct hf_spec *s = &t->a[j].specs[k];
			bool mine = false;
			const char *va, *vb;
			for (size_t m = 0; m < t->a[me].nspecs && !mine; m++)
				mine = t->a[me].specs[m].write &&
				       spec_meet(&t->a[me].specs[m], s, &va, &vb);
			if (!s->write || !mine) /* A4: reads take nothing */
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				struct hf_scope_deny *nd = realloc(d, cap * sizeof *nd);
				if (!nd) {
					free(d);
					return -ENOMEM;
				}
				d = nd;
			}
			d[n++] = (struct hf_scope_deny){ .scope = t->a[j].spec_text[k],
							 .name = t->a[j].name, .pid = t->a[j].pid };
		}
	}
	*ret = d;
	*ret_n = n;
	return 0;
}

int hf_scope_check(const struct hf_scope_table *t, const char *path, const char *pod,
		   uint64_t pod_generation, struct hf_scope_verdict *ret)
{
	unsigned depth;
	size_t len = strlen(path);
	if (!hf_path_normal(path, len, &depth))
		return -EINVAL;
	/* A5: the path's identity, by this process's mount table */
	char idtext[HF_FSID_MAX];
	struct hf_fsid id;
	bool have_id = false;
	struct hf_mounts m;
	if (hf_mounts_load(&m) == 0) {
		int w = hf_path_identify(&m, path, len, 'e', idtext, sizeof idtext);
		have_id = w > 0 && hf_fsid_parse(idtext, (size_t)w, &id) == 0;
	}
	hf_mounts_free(&m);
	struct hf_scope_verdict v = { .state = HF_SCOPE_FREE, .holder = -1, .pod = -1 };
	/* the owner of a path is the deepest live pod whose write spec covers
	 * it: an ancestor's scope there was delegated away (effective scope) */
	for (size_t j = 0; j < t->n; j++) {
		if (t->a[j].live != HF_ALIVE)
			continue;
		for (size_t k = 0; k < t->a[j].nspecs; k++) {
			const struct hf_spec *s = &t->a[j].specs[k];
			if (!s->write)
				continue;
			const char *via = NULL;
			bool in = hf_spec_contains(s, path, len, depth);
			for (unsigned i = 0; !in && have_id && i < s->nids; i++)
				if (hf_fsid_overlap(&s->ids[i], &id)) {
					in = true;
					via = s->id_text[i];
				}
			if (!in)
				continue;
			if (v.holder < 0 || t->a[j].depth > t->a[v.holder].depth) {
				v.holder = (long)j;
				v.holder_scope = t->a[j].spec_text[k];
				v.holder_fs = via;
			}
			break;
		}
	}
	if (pod) {
		v.pod = hf_registry_find(t, pod);
		if (v.pod < 0 || t->a[v.pod].live != HF_ALIVE ||
		    (pod_generation && t->a[v.pod].generation != pod_generation))
			v.state = HF_SCOPE_LOST;
		else if (v.holder == v.pod)
			v.state = HF_SCOPE_YOURS;
		else
			v.state = v.holder >= 0 ? HF_SCOPE_HELD : HF_SCOPE_OUTSIDE;
	} else {
		v.state = v.holder >= 0 ? HF_SCOPE_HELD : HF_SCOPE_FREE;
	}
	*ret = v;
	return 0;
}
