/* Leased pods (RG15: held by a lease, by no process) and reasons (RG14) on
 * the file's registry: a pod registered from a shell that exits lives on
 * until its lease ends; renew moves the end; an expired lease is reaped
 * with its scope returned to its parent (A->B->D with a leased B) and never
 * brought back; a reason is kept, named in refusals, list and check, and
 * hostile ones are refused. Expiry is waited for by polling `scope check`
 * against a bound on the monotonic clock, never by a sleep of its length. */
#include "hft.h"
#include "scope_support.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TestSuite(lease, .init = sc_setup_owned, .fini = sc_teardown_owned, .timeout = 60);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

static const char *spec(const char *rel, const char *mode)
{
	static char buf[4][1024];
	static int at;
	char *b = buf[at++ % 4];
	snprintf(b, sizeof buf[0], "%s:%s", sc_path(rel), mode);
	return b;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

Test(lease, outlives_the_shell_that_registered_it)
{
	char *out, *err;
	/* the registering process and its shell are gone when sh returns */
	int rc = sc_sh(&out, &err, "\"$HF\" scope register A \"$1\" --lease 60s --reason 'the parser'",
		       spec("p", "write:recursive"), NULL);
	cr_assert_eq(rc, 0, "%s", err);
	HAS(out, "leased until");
	free(out);
	free(err);
	json_t *root = sc_registry_json();
	json_t *a = sc_alloc(root, "A");
	cr_assert_not_null(a);
	cr_assert_eq(json_integer_value(json_object_get(a, "lease_ms")), 60000);
	cr_assert(json_is_string(json_object_get(a, "lease_until")));
	cr_assert_null(json_object_get(a, "token"), "a lease has no live file");
	cr_assert_str_eq(json_string_value(json_object_get(a, "reason")), "the parser");
	json_decref(root);
	/* a change judges it: still alive, and it refuses a second pod */
	rc = sc_cli(&out, &err, "scope", "register", "B", spec("p/src", "write"), "--pid",
		    sc_num(sc_owner.pid), NULL);
	cr_assert_eq(rc, 1, "refused: %s", err);
	HAS(err, "of A (");
	HAS(err, "leased until");
	HAS(err, "reason: the parser");
	free(out);
	free(err);
	rc = sc_cli(&out, &err, "scope", "reap", NULL);
	cr_assert_eq(rc, 0, "%s", err);
	HAS(out, "nothing to reap");
	free(out);
	free(err);
}

Test(lease, renew_moves_the_end)
{
	char *out, *err;
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "A", spec("p", "write"), "--lease", "1s",
			    NULL),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "renew", "A", "--lease", "1h", "--json", NULL), 0,
		     "%s", err);
	json_t *o = json_loads(out, 0, NULL);
	cr_assert_not_null(o, "%s", out);
	cr_assert(json_is_true(json_object_get(o, "renewed")));
	cr_assert(json_is_true(json_object_get(o, "live")));
	cr_assert_eq(json_integer_value(json_object_get(o, "lease_ms")), 3600000);
	cr_assert_gt(json_integer_value(json_object_get(o, "lease_left_ms")), 3000000, "%s", out);
	json_decref(o);
	free(out);
	free(err);
	/* list shows the lease and its end */
	cr_assert_eq(sc_cli(&out, &err, "scope", "list", NULL), 0, "%s", err);
	HAS(out, "lease until ");
	free(out);
	free(err);
	/* a pod held by its process is not renewed: 64, naming it */
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "P", spec("q", "write"), "--pid",
			    sc_num(sc_owner.pid), NULL),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "renew", "P", NULL), 64);
	HAS(err, "not leased");
	HAS(err, "P (pid");
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "renew", "nobody", NULL), 69);
	HAS(err, "no such pod");
	free(out);
	free(err);
}

/* Poll `scope check PATH --pod POD` until it says want; false past the
 * bound (ms, monotonic). */
static bool check_until(const char *path, const char *pod, const char *want, int bound_ms)
{
	int64_t end = mono_ms() + bound_ms;
	for (;;) {
		char *out, *err;
		sc_cli(&out, &err, "scope", "check", path, "--pod", pod, "--json", NULL);
		json_t *o = json_loads(out, 0, NULL);
		bool got = o && !strcmp(json_string_value(json_object_get(o, "state")), want);
		json_decref(o);
		free(out);
		free(err);
		if (got)
			return true;
		if (mono_ms() > end)
			return false;
		usleep(20 * 1000); /* a poll's pace, not the lease's length */
	}
}

Test(lease, expired_is_reaped_and_returned_to_its_parent)
{
	char *out, *err;
	const char *pid = sc_num(sc_owner.pid);
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "A", spec("p", "write:recursive"),
			    "--pid", pid, NULL),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "B", spec("p/b", "write:recursive"),
			    "--from", "A", "--lease", "1s", NULL),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "D", spec("p/b/d", "write:recursive"),
			    "--from", "B", "--pid", pid, NULL),
		     0, "%s", err);
	free(out);
	free(err);
	/* while B's lease runs, p/b/x is B's, not A's */
	char x[1024];
	snprintf(x, sizeof x, "%s", sc_path("p/b/x"));
	cr_assert_eq(sc_cli(&out, &err, "scope", "check", x, "--pod", "A", NULL), 1, "%s", out);
	HAS(out, "held by B");
	free(out);
	free(err);
	/* B's lease ends: A gets p/b back, minus D's part */
	cr_assert(check_until(x, "A", "yours", 15000), "B's lease never ended");
	char y[1024];
	snprintf(y, sizeof y, "%s", sc_path("p/b/d/y"));
	cr_assert_eq(sc_cli(&out, &err, "scope", "check", y, "--pod", "A", NULL), 1, "%s", out);
	HAS(out, "held by D");
	free(out);
	free(err);
	/* an expired lease is not brought back: the renewal reaps it */
	cr_assert_eq(sc_cli(&out, &err, "scope", "renew", "B", "--json", NULL), 1, "%s", out);
	HAS(err, "expired");
	free(out);
	free(err);
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "B"), "reaped");
	json_t *d = sc_alloc(root, "D");
	cr_assert_not_null(d);
	cr_assert_str_eq(json_string_value(json_object_get(d, "delegated_from")), "A");
	json_decref(root);
	cr_assert_eq(sc_cli(&out, &err, "scope", "renew", "B", NULL), 69, "gone now: %s", err);
	free(out);
	free(err);
}

Test(lease, reasons_shown_and_hostile_ones_refused)
{
	char *out, *err;
	const char *pid = sc_num(sc_owner.pid);
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "A", spec("p", "write:recursive"),
			    "--pid", pid, "--reason", "refactoring \"the\" parser ✓", NULL),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "list", NULL), 0);
	HAS(out, "reason: refactoring \"the\" parser ✓");
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "check", sc_path("p/f"), NULL), 1);
	HAS(out, "reason: refactoring");
	free(out);
	free(err);
	/* every --json object naming the pod carries it */
	cr_assert_eq(sc_cli(&out, &err, "scope", "list", "--json", NULL), 0);
	json_t *o = json_loads(out, 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(o, "allocations"), 0), "reason")),
			 "refactoring \"the\" parser ✓");
	json_decref(o);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "check", sc_path("p/f"), "--json", NULL), 1);
	o = json_loads(out, 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "holder"), "reason")),
			 "refactoring \"the\" parser ✓", "%s", out);
	json_decref(o);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "B", spec("p/q", "write"), "--pid", pid,
			    "--json", NULL),
		     1);
	o = json_loads(out, 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "holder"),
							   "holder_reason")),
			 "refactoring \"the\" parser ✓", "%s", out);
	json_decref(o);
	free(out);
	free(err);
	/* hostile: C0 (ESC), C1 (U+009B, an 8-bit CSI), a bidi override
	 * (U+202E), too long: 64 naming the byte or the length, nothing kept */
	static const char *const bad[] = { "a\033[31mb", "a\xc2\x9b" "31mb", "a\xe2\x80\xae" "b",
					   "a\nb" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(sc_cli(&out, &err, "scope", "register", "C", spec("r", "write"),
				    "--pid", pid, "--reason", bad[i], NULL),
			     64, "reason %zu: %s", i, err);
		HAS(err, "byte 1");
		cr_assert_null(strchr(err, '\033'), "nothing raw on the terminal");
		free(out);
		free(err);
	}
	char long_reason[HF_REASON_MAX + 2];
	memset(long_reason, 'r', sizeof long_reason - 1);
	long_reason[HF_REASON_MAX + 1] = '\0';
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "C", spec("r", "write"), "--pid", pid,
			    "--reason", long_reason, NULL),
		     64);
	HAS(err, "257");
	free(out);
	free(err);
	long_reason[HF_REASON_MAX] = '\0'; /* the bound itself is kept */
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "C", spec("r", "write"), "--pid", pid,
			    "--reason", long_reason, NULL),
		     0, "%s", err);
	free(out);
	free(err);
}

Test(lease, hostile_reason_in_the_file_is_a_corrupt_registry)
{
	char *out, *err;
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "A", spec("p", "write"), "--pid",
			    sc_num(sc_owner.pid), "--reason", "ok", NULL),
		     0, "%s", err);
	free(out);
	free(err);
	/* the same entry, its reason an escape sequence */
	cr_assert_eq(sc_sh(&out, &err, "sed -i 's/\"reason\":\"ok\"/\"reason\":\"\\\\u001b[2J\"/' \"$1\"",
			   sc_reg, NULL),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(sc_cli(&out, &err, "scope", "list", NULL), 65, "%s", err);
	HAS(err, "\"reason\"");
	cr_assert_null(strchr(err, '\033'));
	free(out);
	free(err);
}

Test(lease, library_option_and_renew)
{
	hf_scope *s;
	cr_assert_eq(hf_scope_new("L", &s), 0);
	cr_assert_eq(hf_scope_add(s, spec("p", "write")), 0);
	cr_assert_eq(hf_scope_set(s, HF_OPT_LEASE_MS, 999), -EINVAL, "under 1 s");
	cr_assert_eq(hf_scope_set(s, HF_OPT_LEASE_MS, 60000), 0);
	cr_assert_eq(hf_scope_set_str(s, HF_OPT_REASON, "x\x7fy"), -EINVAL);
	cr_assert_not_null(hf_rec_str(hf_scope_holder(s), "reason"));
	cr_assert_eq(hf_scope_set_str(s, HF_OPT_REASON, "lib"), 0);
	cr_assert_eq(hf_scope_register(s), 0);
	cr_assert_eq(hf_scope_fd(s), -1, "no liveness file: held by its lease");
	uint64_t gen = hf_scope_generation(s);
	hf_scope_detach(s);
	hf_scope_free(s);
	/* another handle renews it by name and generation */
	cr_assert_eq(hf_scope_new("L", &s), 0);
	cr_assert_eq(hf_scope_set_str(s, HF_OPT_REGISTRY, sc_reg), 0);
	cr_assert_eq(hf_scope_set(s, HF_OPT_GENERATION, (int64_t)(gen + 1)), 0);
	cr_assert_eq(hf_scope_renew(s), HF_ENOTYOURS);
	cr_assert_eq(hf_scope_set(s, HF_OPT_GENERATION, (int64_t)gen), 0);
	cr_assert_eq(hf_scope_set(s, HF_OPT_LEASE_MS, 7200000), 0);
	cr_assert_eq(hf_scope_renew(s), 0);
	hf_scope_free(s);
	hf_registry *r;
	cr_assert_eq(hf_registry_read(sc_reg, &r, NULL), 0);
	const hf_rec *a = hf_registry_get(r, (size_t)hf_registry_find(r, "L"));
	int64_t ms = 0;
	cr_assert_eq(hf_rec_int(a, "lease_ms", &ms), 0);
	cr_assert_eq(ms, 7200000);
	cr_assert_str_eq(hf_rec_str(a, "reason"), "lib");
	cr_assert_str_eq(hf_rec_str(a, "live"), "alive");
	hf_registry_free(r);
}
