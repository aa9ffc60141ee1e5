/*
 * registry_json.c - the scope registry's file format: parse a table file's
 * bytes into a table (registry_table.c), format a table as the file's bytes.
 * The format is a contract (registry.c's header shows it); the parser is
 * strict, every field checked, and never trusts the file.
 *
 * Invariants
 * ----------
 *   (RJ1) Anything that is not a table this version wrote or would write is
 *         refused with a reason, whole: no partial table comes back.
 *   (RJ2) What format writes, parse reads back as the same table: every
 *         string written is text hf_text_ok accepts (the registry only
 *         stores such text: RG10), escaped by hf_json_escape.
 */
#include "registry.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool text_field(const json_t *v, size_t max, bool allow_empty)
{
	if (!json_is_string(v))
		return false;
	size_t len = json_string_length(v);
	const char *s = json_string_value(v);
	return len <= max && strlen(s) == len && (allow_empty || len > 0) && hf_text_ok(s, max);
}

bool hf_regtable_token_ok(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (i >= HF_REG_TOKEN_HEX || !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == HF_REG_TOKEN_HEX;
}

static int parse_alloc(const json_t *o, struct hf_scopereg_table *t, uint64_t gen_max, char *why,
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
	if (token && (!json_is_string(token) || !hf_regtable_token_ok(json_string_value(token)))) {
		snprintf(why, n, "\"token\" is not %d lowercase hex digits", HF_REG_TOKEN_HEX);
		return -EINVAL;
	}
	int64_t when_ms = 0;
	if (when && (!json_is_string(when) || hf_time_parse(json_string_value(when), &when_ms) < 0)) {
		snprintf(why, n, "\"registered\" is not an ISO-8601 time");
		return -EINVAL;
	}
	/* RG15: a lease (absent before 0.3: held by its pid) */
	const json_t *lms = json_object_get(o, "lease_ms"), *lun = json_object_get(o, "lease_until");
	const json_t *lbt = json_object_get(o, "lease_boottime_until");
	int64_t until_ms = 0;
	if (lms && (!json_is_integer(lms) || json_integer_value(lms) < 1000 ||
		    json_integer_value(lms) > 365LL * 86400 * 1000 || !json_is_string(lun) ||
		    hf_time_parse(json_string_value(lun), &until_ms) < 0 ||
		    (lbt && (!json_is_integer(lbt) || json_integer_value(lbt) < 0)))) {
		snprintf(why, n, "\"lease_ms\" is not 1 s to 365 days with an ISO-8601 "
			 "\"lease_until\"");
		return -EINVAL;
	}
	/* RG14: a reason (absent before 0.3) */
	const json_t *rsn = json_object_get(o, "reason");
	char rwhy[160];
	if (rsn && (!json_is_string(rsn) || strlen(json_string_value(rsn)) != json_string_length(rsn) ||
		    hf_scopereg_reason_check(json_string_value(rsn), rwhy, sizeof rwhy) < 0)) {
		snprintf(why, n, "\"reason\" is not short text without control characters");
		return -EINVAL;
	}
	size_t ns = json_array_size(allow);
	if (!json_is_array(allow) || ns == 0 || ns > HF_REG_MAX_SPECS) {
		snprintf(why, n, "\"scope_allow\" is not a list of 1 to %d specs", HF_REG_MAX_SPECS);
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
	int rc = hf_regtable_push(t, &a);
	if (rc < 0)
		return rc;
	a->name = hf_regtable_strndup(t, json_string_value(name), json_string_length(name));
	a->pid = json_integer_value(pid);
	a->pid_start = pst ? (uint64_t)json_integer_value(pst) : 0;
	a->boot_id = boot ? hf_regtable_strndup(t, json_string_value(boot),
					  json_string_length(boot))
			  : "";
	a->host = host ? hf_regtable_strndup(t, json_string_value(host), json_string_length(host))
		       : "";
	a->socket = sock && !json_is_null(sock)
			    ? hf_regtable_strndup(t, json_string_value(sock), json_string_length(sock))
			    : NULL;
	a->from = from && !json_is_null(from) ? hf_regtable_strndup(t, json_string_value(from),
							       json_string_length(from))
					     : NULL;
	a->generation = (uint64_t)json_integer_value(gen);
	a->registered_ms = when_ms;
	a->pidns = pidns ? (uint64_t)json_integer_value(pidns) : 0;
	a->timens = timens ? (uint64_t)json_integer_value(timens) : 0;
	a->boot_ms = bms ? (int64_t)json_integer_value(bms) : 0;
	a->comm = comm ? hf_regtable_strndup(t, json_string_value(comm), json_string_length(comm))
		       : "";
	a->token = token ? hf_regtable_strndup(t, json_string_value(token), HF_REG_TOKEN_HEX) : NULL;
	if (!a->comm || (token && !a->token))
		return -ENOMEM;
	if (lms) {
		a->lease_ms = json_integer_value(lms);
		a->lease_until_ms = until_ms;
		a->lease_boot_until = lbt ? json_integer_value(lbt) : 0;
	}
	if (rsn && !(a->reason = hf_regtable_strndup(t, json_string_value(rsn),
						     json_string_length(rsn))))
		return -ENOMEM;
	a->nspecs = ns;
	a->specs = hf_regtable_alloc(t, ns * sizeof *a->specs);
	a->spec_text = hf_regtable_alloc(t, ns * sizeof *a->spec_text);
	if (!a->name || !a->boot_id || !a->host || (sock && !json_is_null(sock) && !a->socket) ||
	    (from && !json_is_null(from) && !a->from) || !a->specs || !a->spec_text)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++) {
		const json_t *v = json_array_get(allow, i);
		if (!text_field(v, HF_SCOPE_SPEC_MAX - 1, false)) {
			snprintf(why, n, "\"scope_allow\"[%zu] is not text", i);
			return -EINVAL;
		}
		const char *s = hf_regtable_strndup(t, json_string_value(v), json_string_length(v));
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
	a->fs = hf_regtable_alloc(t, nfs * sizeof *a->fs);
	a->fs_text = hf_regtable_alloc(t, nfs * sizeof *a->fs_text);
	a->fs_spec = hf_regtable_alloc(t, nfs * sizeof *a->fs_spec);
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
			const char *txt = hf_regtable_strndup(t, json_string_value(v),
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

int hf_regtable_parse(const char *buf, size_t len, struct hf_scopereg_table *t, char *reason,
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
	long dup = -1;
	int r = hf_regtable_index(t, &dup); /* RT2 */
	if (r == -EEXIST) {
		snprintf(reason, n, "allocations[%ld]: the name \"%s\" appears twice", dup,
			 t->a[dup].name);
		goto out;
	}
	if (r < 0) {
		rc = r;
		goto out;
	}
	r = hf_regtable_check_tree(t, why, sizeof why); /* RT4 */
	if (r == -EINVAL) {
		snprintf(reason, n, "%s", why);
		goto out;
	}
	rc = r;
out:
	json_decref(root);
	if (rc < 0)
		hf_regtable_clear(t);
	return rc;
}

/* ------------------------------------------------------------------------
 * Formatting: one allocation a line.
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
	p = hf_json_escape(p, s); /* RJ2 */
	*p++ = '"';
	o->len = (size_t)(p - o->buf);
}

static void out_u64(struct out *o, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
	out_raw(o, b, (size_t)n);
}

int hf_regtable_format(const struct hf_scopereg_table *t, char **ret, size_t *ret_len)
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
		if (a->lease_ms > 0) { /* RG15: only when set, as 0.2 wrote none */
			char until[40];
			hf_time_format(a->lease_until_ms, until, sizeof until);
			OUT_LIT(&o, ",\"lease_ms\":");
			out_u64(&o, (uint64_t)a->lease_ms);
			OUT_LIT(&o, ",\"lease_until\":");
			out_str(&o, until);
			if (a->lease_boot_until > 0) {
				OUT_LIT(&o, ",\"lease_boottime_until\":");
				out_u64(&o, (uint64_t)a->lease_boot_until);
			}
		}
		if (a->reason) { /* RG14 */
			OUT_LIT(&o, ",\"reason\":");
			out_str(&o, a->reason);
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
