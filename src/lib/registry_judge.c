/*
 * registry_judge.c - what both backends' scope registries decide the same
 * way, whatever holds the table: the checks of a registration's request
 * (hf_scopereg_request_check), a refusal's holder (hf_scopereg_holder_fill),
 * a registration's age, and the judge of a table (hf_registry_judge): each
 * owner alive or dead (RG7: by pid on this kernel and pid namespace, one
 * proof per distinct owner; RG9: an owner of another pid namespace only by
 * the backend's probe - the file system's live file, fs/registry.c; etcd
 * has none and waits for the lease), then each entry's parent, its nearest
 * live ancestor (registry_table.c, RT). The file's registry
 * (fs/registry.c) and etcd's (etcd/etcdscope.c) call these; the invariants
 * cited are fs/registry.c's (RG) and registry_table.c's (RT).
 */
#include "registry.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reason into err (may be NULL); -EINVAL. */
static int bad_input(struct hf_scopereg_holder *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int bad_input(struct hf_scopereg_holder *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->reason, sizeof err->reason, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------------
 * Judging: liveness (one proof per distinct owner), then the tree.
 * --------------------------------------------------------------------- */

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
 * its kernel lock can prove its death (RG9). An entry without pidns (written
 * before it was recorded) is taken for one of this namespace: its pid
 * decides (owner.c). */
static bool pid_is_ours(const struct hf_alloc *a)
{
	if (!a->pidns)
		return true;
	uint64_t mine = hf_self_pidns();
	return mine != HF_PIDNS_UNKNOWN && a->pidns == mine;
}

/* ------------------------------------------------------------------------
 * Reasons (RG14) and leases (RG15).
 * --------------------------------------------------------------------- */

int hf_scopereg_reason_check(const char *s, char *why, size_t n)
{
	size_t len = strlen(s);
	if (len > HF_SCOPE_REASON_MAX) {
		snprintf(why, n, "a reason is at most %d bytes; this one has %zu",
			 HF_SCOPE_REASON_MAX, len);
		return -EINVAL;
	}
	for (size_t i = 0; i < len;) {
		const unsigned char *c = (const unsigned char *)s + i;
		size_t l = hf_utf8_len(s + i);
		/* C0 and DEL; C1 (U+0080-U+009F: 8-bit CSI and friends); the
		 * bidirectional embeddings, overrides and isolates (U+202A-U+202E,
		 * U+2066-U+2069) that reorder what a terminal shows */
		bool bad = l == 0 || (l == 1 && (c[0] < 0x20 || c[0] == 0x7f)) ||
			   (l == 2 && c[0] == 0xc2 && c[1] < 0xa0) ||
			   (l == 3 && c[0] == 0xe2 && c[1] == 0x80 && c[2] >= 0xaa && c[2] <= 0xae) ||
			   (l == 3 && c[0] == 0xe2 && c[1] == 0x81 && c[2] >= 0xa6 && c[2] <= 0xa9);
		if (bad) {
			snprintf(why, n, "a reason is UTF-8 text without control characters or "
				 "bidirectional overrides; byte %zu (0x%02x) is not", i, c[0]);
			return -EINVAL;
		}
		i += l;
	}
	return 0;
}

/* RG15: may a's lease end be judged by this kernel's CLOCK_BOOTTIME? Only
 * on the kernel (boot id) and in the time namespace that wrote it. */
static bool lease_boot_ours(const struct hf_alloc *a)
{
	const char *boot = hf_boot_id();
	return a->lease_boot_until > 0 && boot[0] && !strcmp(a->boot_id, boot) && a->timens &&
	       a->timens == hf_self_timens();
}

int64_t hf_scopereg_lease_left(const struct hf_alloc *a, int64_t now_ms)
{
	if (a->lease_ms <= 0)
		return INT64_MAX;
	if (lease_boot_ours(a)) /* a wall-clock step moves this neither way */
		return a->lease_boot_until - hf_sys_boot_ms();
	/* another kernel or namespace: the wall clock, late rather than early */
	return a->lease_until_ms + HF_SCOPE_LEASE_SKEW_MS - now_ms;
}

void hf_scopereg_lease_start(struct hf_alloc *a, int64_t lease_ms)
{
	a->lease_ms = lease_ms;
	a->lease_until_ms = hf_sys_now_ms() + lease_ms;
	int64_t boot = hf_sys_boot_ms();
	const char *me = hf_boot_id();
	/* the boottime end only when the entry's boot id and time namespace
	 * are ours: a renewer elsewhere leaves the wall clock to judge */
	a->lease_boot_until = boot > 0 && me[0] && !strcmp(a->boot_id, me) && a->timens &&
				      a->timens == hf_self_timens()
				      ? boot + lease_ms
				      : 0;
}

int hf_registry_judge(struct hf_scopereg_table *t, hf_registry_probe_fn probe, void *ctx,
		      bool keep)
{
	size_t size = 16;
	while (size < 2 * t->n + 1)
		size <<= 1;
	struct live_slot *cache = calloc(size, sizeof *cache);
	const char *boot = hf_boot_id();
	for (size_t i = 0; i < t->n; i++) {
		struct hf_alloc *a = &t->a[i];
		if (a->lease_ms > 0) { /* RG15: its lease alone, never a process */
			a->live = hf_scopereg_lease_left(a, hf_sys_now_ms()) > 0 ? HF_ALIVE
										 : HF_DEAD;
			continue;
		}
		struct hf_owner o;
		owner_of(a, &o);
		if (!pid_is_ours(a)) {
			/* RG9: a pid of another namespace proves nothing; the
			 * backend's probe (the file's live file lock) does, on this
			 * kernel only */
			int fd = -1;
			if (probe && boot[0] && !strcmp(a->boot_id, boot))
				fd = probe(a, ctx);
			a->live = hf_owner_liveness_fd(&o, fd >= 0 ? fd : -1); /* RG7 */
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
		a->live = hf_owner_liveness(&o); /* RG7 */
		if (s)
			*s = (struct live_slot){ .pid = a->pid, .start = a->pid_start,
						 .pidns = a->pidns, .boot = a->boot_id,
						 .host = a->host, .live = a->live, .used = true };
	}
	free(cache);
	return hf_regtable_link(t);
}

static void fill_holder(struct hf_scopereg_holder *h, const struct hf_alloc *a, const char *scope)
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
	h->fs[0] = h->request_fs[0] = h->outside[0] = '\0';
	snprintf(h->pod_reason, sizeof h->pod_reason, "%s", a->reason ? a->reason : ""); /* RG14 */
	h->lease_ms = a->lease_ms;
	h->lease_until_ms = a->lease_until_ms;
}

int64_t hf_scopereg_age_ms(const struct hf_scopereg_table *t, size_t i, int64_t now_ms)
{
	struct hf_owner o;
	owner_of(&t->a[i], &o);
	return t->a[i].registered_ms ? hf_owner_age_ms(&o, now_ms) : -1;
}

void hf_scopereg_holder_fill(struct hf_scopereg_holder *h, const struct hf_alloc *a,
			     const char *scope)
{
	fill_holder(h, a, scope);
}

int hf_scopereg_request_check(const struct hf_scopereg_request *req,
			      struct hf_scopereg_holder *err)
{
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
	if (req->nspecs == 0 || req->nspecs > HF_REG_MAX_SPECS)
		return bad_input(err, "give 1 to 1024 specs PATH:MODE[:recursive]");
	if (req->lock_wait_ms < 0)
		return bad_input(err, "lock_wait_ms is 0 (the default) or a bound");
	if (req->lease_ms < 0 || (req->lease_ms > 0 && req->lease_ms < 1000) ||
	    req->lease_ms > 365LL * 86400 * 1000)
		return bad_input(err, "a lease is 1 s to 365 days");
	char why[160];
	if (req->reason && hf_scopereg_reason_check(req->reason, why, sizeof why) < 0)
		return bad_input(err, "%s", why); /* RG14 */
	return 0;
}
