/*
 * registry.c - the machine-wide scope registry (seed 001, hardened).
 *
 * On-disk artifacts
 * -----------------
 *   <dir>/                  $HOLDFAST_REGISTRY's directory, else
 *                           $XDG_RUNTIME_DIR/holdfast, else /tmp/holdfast-<uid>;
 *                           created 0700, ours, not group/world-writable.
 *   <dir>/<base>            the table, one JSON object (0600):
 *     {"version":1,"generation":17,"allocations":[
 *     {"name":"a","pid":12345,"pid_start":…,"boot_id":"…","host":"box",
 *      "socket":null,"scope_allow":["/p/src:write:recursive"],
 *      "delegated_from":null,"generation":12,"registered":"2026-…Z"}, …]}
 *   <dir>/<base>.flock      the lock file (0600, empty). Never renamed, never
 *                           replaced, never deleted: flock(2) is taken on it.
 *   <dir>/<base>.tmp-<hex>  a table being written; left only by a crash and
 *                           swept by the next change.
 *
 * Steps of a change (register, release, reap)
 * -------------------------------------------
 *   1. Open and verify the directory (O_NOFOLLOW; owner; mode), creating it.
 *   2. Open (O_NOFOLLOW, creating) and verify the lock file; flock(LOCK_EX);
 *      then check that the lock file at its name is still the one locked.
 *   3. Read and verify the table file; parse it. Sweep crash temporaries.
 *   4. Judge every allocation's owner (pid, start time, boot id, host); reap
 *      the dead: each one's live children go to its nearest live ancestor.
 *   5. Decide the change on the judged table (conflicts, delegation).
 *   6. Write the new table: temporary, fsync, rename, fsync of the directory
 *      (hf_replace_file_at). Unlock by closing the lock file.
 *   Reads (list, effective, check) do 1 and 3-4 without the lock and without
 *   writing: the table file is only ever replaced whole, so a read sees one
 *   table, old or new.
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
 *        hold overlapping write specs.
 *   (R5) A delegated allocation's write specs lie inside its parent's
 *        effective write scope, its read specs inside its parent's specs;
 *        re-parenting to an ancestor keeps that true (scopes only nest).
 *   (R6) The registry's generation strictly increases with every change (+1
 *        per allocation registered, released or reaped), is never reused,
 *        and each allocation keeps the generation it was granted.
 *   (R7) An allocation is reaped only on proof of death (hf_owner_liveness);
 *        anything unknown is alive.
 *   (R8) Directory 0700 when created and file 0600 whatever the umask; a
 *        directory or file not ours, group/world-writable, not of its type
 *        or a symbolic link is refused (HF_EUNSAFE), never used.
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
 */
#include "scope.h"

#include "claim.h"

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
#include <unistd.h>

#define REG_MAX_BYTES (256u << 20)
#define REG_MAX_SPECS 1024

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
	return 0;
}

/* ------------------------------------------------------------------------
 * Name index: open addressing over the table's names (FNV-1a).
 * --------------------------------------------------------------------- */

struct name_index {
	size_t mask;
	long *slot; /* -1: empty */
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

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
		size_t h = fnv(t->a[i].name) & ix->mask;
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
	size_t h = fnv(name) & ix->mask;
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
		OUT_LIT(&o, "],\"delegated_from\":");
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
 * Judging: liveness (one proof per distinct owner), parents, depths.
 * --------------------------------------------------------------------- */

static void registry_link(struct hf_scope_table *t);

struct live_slot {
	int64_t pid;
	uint64_t start;
	const char *boot, *host;
	int live;
	bool used;
};

void hf_registry_judge(struct hf_scope_table *t)
{
	size_t size = 16;
	while (size < 2 * t->n + 1)
		size <<= 1;
	struct live_slot *cache = calloc(size, sizeof *cache);
	for (size_t i = 0; i < t->n; i++) {
		struct hf_alloc *a = &t->a[i];
		struct live_slot *s = NULL;
		if (cache) {
			size_t h = ((uint64_t)a->pid * 0x9e3779b97f4a7c15ull ^ a->pid_start) & (size - 1);
			while (cache[h].used &&
			       !(cache[h].pid == a->pid && cache[h].start == a->pid_start &&
				 !strcmp(cache[h].boot, a->boot_id) && !strcmp(cache[h].host, a->host)))
				h = (h + 1) & (size - 1);
			s = &cache[h];
			if (s->used) {
				a->live = s->live;
				continue;
			}
		}
		struct hf_owner o;
		memset(&o, 0, sizeof o);
		o.pid = a->pid;
		o.pid_start = a->pid_start;
		snprintf(o.boot_id, sizeof o.boot_id, "%s", a->boot_id);
		snprintf(o.host, sizeof o.host, "%s", a->host);
		a->live = hf_owner_liveness(&o); /* R7 */
		if (s)
			*s = (struct live_slot){ .pid = a->pid, .start = a->pid_start,
						 .boot = a->boot_id, .host = a->host,
						 .live = a->live, .used = true };
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

/* Remove the dead (R7): live children go to their nearest live ancestor.
 * Appends the reaped entries to *reaped when not NULL. The number reaped. */
static int sweep(struct hf_scope_table *t, struct hf_scope_table *reaped)
{
	size_t w = 0;
	int count = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct hf_alloc *a = &t->a[i];
		const char *to = a->parent >= 0 ? t->a[a->parent].name : NULL;
		if (a->live == HF_DEAD) {
			count++;
			t->generation++; /* R6 */
			if (reaped) {
				struct hf_alloc *r;
				if (table_push(reaped, &r) == 0) {
					*r = *a;
					r->returned_to = to;
					r->parent = -1;
				}
			}
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
	if (env && *env) {
		len = snprintf(buf, n, "%s", env);
	} else {
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		if (xdg && xdg[0] == '/')
			len = snprintf(buf, n, "%s/holdfast/scope.lock", xdg);
		else
			len = snprintf(buf, n, "/tmp/holdfast-%u/scope.lock", (unsigned)geteuid());
	}
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

struct reg {
	int dirfd;
	int lockfd;
	char base[NAME_MAX + 1];
	char lockname[NAME_MAX + 1];
	char tmpprefix[NAME_MAX + 1];
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

/* R8: ours, not writable by others, of the right type. */
static int verify_stat(const struct stat *st, bool dir, const char *what,
		       struct hf_scope_holder *err)
{
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return unsafe(err, "%s is not a %s", what, dir ? "directory" : "regular file");
	if (st->st_uid != geteuid())
		return unsafe(err, "%s belongs to another user", what);
	if (st->st_mode & 022)
		return unsafe(err, "%s is writable by group or others", what);
	return 0;
}

static void reg_close(struct reg *r)
{
	if (r->lockfd >= 0)
		hf_sys_close(r->lockfd); /* unlocks */
	if (r->dirfd >= 0)
		hf_sys_close(r->dirfd);
	r->lockfd = r->dirfd = -1;
}

/* Steps 1 (and 2 when lock): 0, or -ENOENT when !create and there is no
 * directory yet. */
static int reg_open(const char *registry, bool create, bool lock, struct reg *r,
		    struct hf_scope_holder *err)
{
	char path[PATH_MAX];
	r->dirfd = r->lockfd = -1;
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
	if (!strcmp(base, ".") || !strcmp(base, "..") || strlen(base) + 24 > NAME_MAX)
		return -EINVAL;
	size_t blen = strlen(base); /* + 24 <= NAME_MAX: every name below fits */
	memcpy(r->base, base, blen + 1);
	memcpy(r->lockname, base, blen);
	memcpy(r->lockname + blen, ".flock", 7);
	memcpy(r->tmpprefix, base, blen);
	memcpy(r->tmpprefix + blen, ".tmp-", 6);
	char dir[PATH_MAX];
	if (!slash)
		strcpy(dir, ".");
	else if (slash == path)
		strcpy(dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);

	bool made = false;
	int fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd == -ENOENT && create) {
		rc = hf_sys_mkdirat(AT_FDCWD, dir, 0700);
		if (rc < 0 && rc != -EEXIST)
			return rc;
		made = rc == 0;
		fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	}
	if (fd == -ELOOP || fd == -ENOTDIR)
		return unsafe(err, "the registry directory %s is a symbolic link or not a directory",
			      dir);
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
		fd = hf_sys_openat(r->dirfd, r->lockname, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK,
				   0600);
		if (fd == -ELOOP)
			rc = unsafe(err, "the lock file %s is a symbolic link", r->lockname);
		else if (fd == -EACCES)
			rc = unsafe(err, "the lock file %s is not ours to open", r->lockname);
		else
			rc = fd < 0 ? fd : hf_sys_fstat(fd, &st);
		if (rc == 0)
			rc = verify_stat(&st, false, "the lock file", err);
		if (rc == 0 && (st.st_mode & 07777) != 0600)
			rc = hf_sys_fchmod(fd, 0600); /* R8 */
		if (rc == 0)
			rc = hf_sys_flock(fd, LOCK_EX); /* R1 */
		if (rc < 0) {
			if (fd >= 0)
				hf_sys_close(fd);
			reg_close(r);
			return rc;
		}
		hf_sys_point("scope.open.locked");
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

static int sweep_tmp(int dirfd, const char *name, void *ctx)
{
	(void)ctx;
	hf_sys_unlinkat(dirfd, name, 0);
	return 0;
}

/* Step 3: an empty table when there is no file yet. */
static int reg_load(struct reg *r, bool locked, struct hf_scope_table *t,
		    struct hf_scope_holder *err)
{
	char *buf;
	size_t len;
	struct stat st;
	memset(t, 0, sizeof *t);
	int rc = hf_read_file_at(r->dirfd, r->base, O_NONBLOCK, REG_MAX_BYTES, &buf, &len, &st);
	if (rc == -ENOENT)
		goto sweep;
	if (rc == -ELOOP)
		return unsafe(err, "the registry %s is a symbolic link", r->base);
	if (rc == -EFBIG) {
		if (err)
			snprintf(err->reason, sizeof err->reason, "larger than %u MiB",
				 REG_MAX_BYTES >> 20);
		return HF_EUNREADABLE;
	}
	if (rc < 0)
		return rc;
	rc = verify_stat(&st, false, "the registry file", err);
	if (rc == 0) {
		char reason[sizeof err->reason];
		rc = hf_registry_parse(buf, len, t, reason, sizeof reason); /* R3 */
		if (rc == HF_EUNREADABLE && err)
			snprintf(err->reason, sizeof err->reason, "%s", reason);
	}
	free(buf);
	if (rc < 0)
		return rc;
sweep:
	if (locked)
		hf_claim_scan(r->dirfd, r->tmpprefix, sweep_tmp, NULL);
	return 0;
}

/* Step 6 (R2). */
static int reg_store(struct reg *r, const struct hf_scope_table *t)
{
	char *buf;
	size_t len;
	int rc = hf_registry_format(t, &buf, &len);
	if (rc < 0)
		return rc;
	hf_sys_point("scope.store.formatted");
	rc = hf_replace_file_at(r->dirfd, r->base, buf, len, 0600, false);
	free(buf);
	return rc;
}

/* Steps 1-4 for a change. */
static int reg_begin(const char *registry, struct reg *r, struct hf_scope_table *t,
		     struct hf_scope_table *reaped, int *ret_nreaped, struct hf_scope_holder *err)
{
	int rc = reg_open(registry, true, true, r, err);
	if (rc < 0)
		return rc;
	rc = reg_load(r, true, t, err);
	if (rc < 0) {
		reg_close(r);
		return rc;
	}
	hf_registry_judge(t);
	*ret_nreaped = sweep(t, reaped);
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

int hf_scope_register(const struct hf_scope_request *req, uint64_t *ret_generation,
		      struct hf_scope_holder *err)
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

	/* Canonicalize every spec before taking the lock: look-ups are slow. */
	char(*canon)[HF_SCOPE_SPEC_MAX] = malloc(req->nspecs * sizeof *canon);
	struct hf_spec *specs = malloc(req->nspecs * sizeof *specs);
	if (!canon || !specs) {
		free(canon);
		free(specs);
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < req->nspecs && rc == 0; i++) {
		rc = hf_spec_canonicalize(req->specs[i], canon[i], sizeof canon[i], &specs[i]);
		if (rc < 0 && err) {
			err->request_index = i;
			snprintf(err->reason, sizeof err->reason,
				 rc == -EINVAL ? "not a spec PATH:MODE[:recursive] (MODE read or write) "
						 "of UTF-8 text without control characters"
					       : "cannot resolve its path: %s",
				 hf_strerror(rc));
		}
	}
	struct hf_owner me;
	if (rc == 0) {
		rc = hf_owner_init(&me, req->pid);
		if (rc == -ESRCH && err)
			snprintf(err->reason, sizeof err->reason, "no process has pid %d",
				 (int)req->pid);
	}
	if (rc < 0) {
		free(canon);
		free(specs);
		return rc;
	}

	struct reg r;
	struct hf_scope_table t;
	int nreaped;
	rc = reg_begin(req->registry, &r, &t, NULL, &nreaped, err);
	if (rc < 0) {
		free(canon);
		free(specs);
		return rc;
	}
	hf_sys_point("scope.register.judged");

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
		if (s->write) {
			/* R4: no overlap with a live pod that is not an ancestor */
			for (size_t j = 0; j < t.n; j++) {
				if ((long)j == parent || (parent >= 0 && descends(&t, parent, (long)j)))
					continue;
				for (size_t k = 0; k < t.a[j].nspecs; k++) {
					const struct hf_spec *o = &t.a[j].specs[k];
					if (!o->write || !hf_spec_overlap(o, s))
						continue;
					if (best < 0) {
						best = (long)j;
						best_k = k;
						break;
					}
					others++;
					if (t.a[j].depth > t.a[best].depth ||
					    (t.a[j].depth == t.a[best].depth &&
					     o->len > t.a[best].specs[best_k].len)) {
						best = (long)j;
						best_k = k;
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
				snprintf(err->request, sizeof err->request, "%s", canon[i]);
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
					 hf_spec_covers(&t.a[parent].specs[k], s);
			if (!inside) {
				fill_holder(err, &t.a[parent], t.a[parent].spec_text[0]);
				if (err) {
					err->request_index = i;
					snprintf(err->request, sizeof err->request, "%s", canon[i]);
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
	a->name = arena_strndup(&t.arena, req->name, strlen(req->name));
	a->pid = me.pid;
	a->pid_start = me.pid_start;
	a->boot_id = arena_strndup(&t.arena, me.boot_id, strlen(me.boot_id));
	a->host = arena_strndup(&t.arena, me.host, strlen(me.host));
	a->socket = req->socket ? arena_strndup(&t.arena, req->socket, strlen(req->socket)) : NULL;
	a->from = parent >= 0 ? t.a[parent].name : NULL;
	a->generation = ++t.generation; /* R6 */
	a->registered_ms = me.time_ms;
	a->nspecs = req->nspecs;
	a->spec_text = arena_alloc(&t.arena, req->nspecs * sizeof *a->spec_text);
	a->specs = arena_alloc(&t.arena, req->nspecs * sizeof *a->specs);
	if (!a->name || !a->boot_id || !a->host || (req->socket && !a->socket) || !a->spec_text ||
	    !a->specs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < req->nspecs; i++) {
		size_t len = strlen(canon[i]);
		a->spec_text[i] = arena_strndup(&t.arena, canon[i], len);
		if (!a->spec_text[i]) {
			rc = -ENOMEM;
			goto out;
		}
		hf_spec_parse_canonical(a->spec_text[i], len, &a->specs[i]);
	}
	hf_sys_point("scope.register.decided");
	rc = reg_store(&r, &t);
	if (rc == 0 && ret_generation)
		*ret_generation = a->generation;
out:
	if (rc < 0 && nreaped > 0 && rc != -ENOMEM) {
		/* the refusal stands, but the reaping it did is kept */
		int src = reg_store(&r, &t);
		(void)src;
	}
	reg_close(&r);
	hf_registry_table_clear(&t);
	free(canon);
	free(specs);
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
	int rc = reg_begin(registry, &r, &t, NULL, &nreaped, err);
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
		sweep(&t, NULL); /* R6: +1 */
		hf_sys_point("scope.release.decided");
	}
	if (rc == 0 || nreaped > 0) {
		int src = reg_store(&r, &t);
		if (rc == 0)
			rc = src;
	}
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
	int rc = reg_begin(registry, &r, &t, reaped, &nreaped, err);
	if (rc < 0) {
		free(reaped);
		return rc;
	}
	if (nreaped > 0)
		rc = reg_store(&r, &t);
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
	int rc = reg_open(registry, false, false, &r, err);
	if (rc == 0) {
		rc = reg_load(&r, false, t, err);
		reg_close(&r);
	} else if (rc == -ENOENT) {
		rc = 0; /* no directory yet: an empty registry */
	}
	if (rc < 0) {
		free(t);
		return rc;
	}
	hf_registry_judge(t);
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
		.depth = a->depth, .returned_to = a->returned_to,
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
			for (size_t m = 0; m < t->a[me].nspecs && !mine; m++)
				mine = t->a[me].specs[m].write && hf_spec_overlap(&t->a[me].specs[m], s);
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
	struct hf_scope_verdict v = { .state = HF_SCOPE_FREE, .holder = -1, .pod = -1 };
	/* the owner of a path is the deepest live pod whose write spec covers
	 * it: an ancestor's scope there was delegated away (effective scope) */
	for (size_t j = 0; j < t->n; j++) {
		if (t->a[j].live != HF_ALIVE)
			continue;
		for (size_t k = 0; k < t->a[j].nspecs; k++) {
			const struct hf_spec *s = &t->a[j].specs[k];
			if (!s->write || !hf_spec_contains(s, path, len, depth))
				continue;
			if (v.holder < 0 || t->a[j].depth > t->a[v.holder].depth) {
				v.holder = (long)j;
				v.holder_scope = t->a[j].spec_text[k];
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
