/*
 * test_lease.c - scope leases and reasons on etcd (etcdscope.c ES7), from
 * real shells: a leased pod outlives the process that registered it (its key
 * on an etcd lease nobody keeps alive), `scope renew` from another process
 * extends it, an expired lease is reaped by etcd and its part returned to
 * the parent (A->B->D), reasons appear in refusals, list and --json. Waits
 * for a lease's end are polls bounded on /proc/uptime (the boot clock).
 */
#include "et.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ET_SUITE(etcd_lease, 240);

#define BIN_H "H=\"$HOLDFAST_BIN\"\n"
/* until the boot clock passes its second $1 from now: a bound, not a timing */
#define BOUND "bound() { [ \"$(cut -d. -f1 /proc/uptime)\" -lt \"$end\" ]; }\n"

/* The pod L's entry in the `scope list --json` file f (in et_dir). */
static json_t *entry(const char *f, const char *name)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", et_dir, f);
	char *t = hft_slurp(p);
	cr_assert_not_null(t, "%s", p);
	json_t *o = json_loads(t, 0, NULL);
	cr_assert_not_null(o, "%s", t);
	free(t);
	json_t *e, *found = NULL;
	size_t i;
	json_array_foreach(json_object_get(o, "allocations"), i, e)
		if (!strcmp(json_string_value(json_object_get(e, "name")), name))
			found = json_incref(e);
	json_decref(o);
	return found;
}

/* Registered by a holdfast that exits: still held, its lease and reason
 * listed, a conflicting pod refused naming the reason and the lease. */
Test(etcd_lease, leased_pod_outlives_its_process_and_reasons_shown)
{
	struct et_out r = et_run(
		"sh",
		BIN_H
		"mkdir -p p/src\n"
		"\"$H\" scope register LA p:write:recursive --lease 60s --reason 'the parser' >reg.out || exit 10\n"
		"\"$H\" scope list --json >list.json || exit 11\n"
		"\"$H\" scope list; echo \"list=$?\"\n"
		"sleep 1000 </dev/null >/dev/null 2>&1 & o=$!\n"
		"\"$H\" scope register LB p/src:write --pid $o; echo \"conflict=$?\"\n"
		"\"$H\" scope register LB p/src:write --pid $o --json 2>/dev/null >conflict.json\n"
		"\"$H\" scope check p/src/f; echo \"check=$?\"\n"
		"kill $o; wait $o 2>/dev/null\n"
		"\"$H\" scope release LA; echo \"release=$?\"\n"
		"exit 0\n");
	char *out = r.out, *err = r.err;
	json_t *e = entry("list.json", "LA");
	cr_assert_not_null(e, "the pod outlived its process: %s", out);
	cr_assert_eq(json_integer_value(json_object_get(e, "lease_ms")), 60000);
	cr_assert(json_is_string(json_object_get(e, "lease_until")));
	cr_assert_str_eq(json_string_value(json_object_get(e, "reason")), "the parser");
	json_decref(e);
	ET_HAS(out, "list=0\n", "the parser", "conflict=1\n", "check=1\n", "release=0\n");
	ET_HAS(err, "of LA (", "leased until", "reason: the parser");
	char p[600];
	snprintf(p, sizeof p, "%s/conflict.json", et_dir);
	char *t = hft_slurp(p);
	cr_assert(t && strstr(t, "\"holder_reason\":\"the parser\""), "%s", t);
	free(t);
	et_out_free(&r);
}

/* `scope renew` by other processes moves the end: a 2 s lease renewed
 * (each renewal one keep-alive of the key's lease, its length kept) is still
 * held after the boot clock passed 4 s; a renewal of another length is
 * refused (etcd keeps a lease's TTL); renewing nothing is 69. */
Test(etcd_lease, renew_extends)
{
	struct et_out r = et_run(
		"sh",
		BIN_H BOUND
		"mkdir -p q\n"
		"\"$H\" scope register RA q:write --lease 2s --reason r >/dev/null || exit 10\n"
		"end=$(( $(cut -d. -f1 /proc/uptime) + 5 ))\n"
		"ok=0; while bound; do \"$H\" scope renew RA >/dev/null || ok=$?; sleep 0.3; done\n"
		"echo \"renew=$ok\"\n"
		"\"$H\" scope list --json >list.json\n"
		"\"$H\" scope renew RA --lease 1h 2>/dev/null; echo \"length=$?\"\n"
		"\"$H\" scope renew NOPE 2>/dev/null; echo \"none=$?\"\n"
		"\"$H\" scope release RA; echo \"release=$?\"\n"
		"exit 0\n");
	char *out = r.out;
	ET_HAS(out, "renew=0\n", "none=69\n", "release=0\n");
	cr_assert_null(strstr(out, "length=0\n"), "%s", out);
	json_t *e = entry("list.json", "RA");
	cr_assert_not_null(e, "renewed: still held past its first end: %s", out);
	cr_assert_eq(json_integer_value(json_object_get(e, "lease_ms")), 2000, "%s", out);
	json_decref(e);
	et_out_free(&r);
}

/* A -> B (leased 1 s) -> D: B's lease ends, etcd drops its key; D is A's
 * child, A has B's part back minus D's; renew of B then finds nothing. */
Test(etcd_lease, expired_reaped_and_returned_to_the_parent)
{
	struct et_out r = et_run(
		"sh",
		BIN_H BOUND
		"mkdir -p c/b/d\n"
		"sleep 1000 </dev/null >/dev/null 2>&1 & a=$!; trap 'kill $a 2>/dev/null' EXIT\n"
		"\"$H\" scope register EA c:write:recursive --pid $a >/dev/null || exit 10\n"
		"\"$H\" scope register EB c/b:write:recursive --from EA --lease 1s --reason short >/dev/null || exit 11\n"
		"\"$H\" scope register ED c/b/d:write:recursive --from EB --pid $a >/dev/null || exit 12\n"
		"\"$H\" scope check c/b/x --pod EA; echo \"before=$?\"\n"
		"end=$(( $(cut -d. -f1 /proc/uptime) + 30 ))\n"
		"while bound && ! \"$H\" scope check c/b/x --pod EA >/dev/null; do sleep 0.1; done\n"
		"\"$H\" scope check c/b/x --pod EA; echo \"regained=$?\"\n"
		"\"$H\" scope check c/b/d/y --pod EA; echo \"delegated=$?\"\n"
		"\"$H\" scope list --json >list.json\n"
		"\"$H\" scope renew EB 2>/dev/null; echo \"renew=$?\"\n"
		"kill $a; wait $a 2>/dev/null\n"
		"exit 0\n");
	char *out = r.out;
	ET_HAS(out, "before=1\n", "regained=0\n", "delegated=1\n", "renew=69\n");
	json_t *b = entry("list.json", "EB"), *d = entry("list.json", "ED");
	cr_assert_null(b, "EB reaped: %s", out);
	cr_assert_not_null(d, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(d, "delegated_from")), "EA");
	json_decref(d);
	et_out_free(&r);
}
