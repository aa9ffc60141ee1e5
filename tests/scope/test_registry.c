/* The scope registry through the holdfast binary, as a user drives it, with
 * real processes owning the allocations (killed with SIGKILL where a death is
 * needed). Each test has its own registry ($HOLDFAST_REGISTRY). */
#include "hft.h"
#include "scope_support.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(registry, .init = sc_setup, .fini = sc_teardown, .timeout = 120);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

static void reg_ok(const char *name, const char *spec, pid_t pid, const char *from)
{
	char *err;
	int rc = from ? sc_cli(NULL, &err, "scope", "register", name, spec, "--pid", sc_num(pid),
			       "--from", from, NULL)
		      : sc_cli(NULL, &err, "scope", "register", name, spec, "--pid", sc_num(pid),
			       NULL);
	cr_assert_eq(rc, 0, "register %s %s: exit %d: %s", name, spec, rc, err);
	free(err);
}

/* A -> B -> D: A top level with rel_a, B from A with rel_b, D from B. */
static void chain(struct sc_sleeper s[3], const char *rel_a, const char *rel_b, const char *rel_d)
{
	for (int i = 0; i < 3; i++)
		sc_sleeper_start(&s[i]);
	reg_ok("A", sc_path(rel_a), s[0].pid, NULL);
	reg_ok("B", sc_path(rel_b), s[1].pid, "A");
	reg_ok("D", sc_path(rel_d), s[2].pid, "B");
}

static void chain_end(struct sc_sleeper s[3])
{
	for (int i = 0; i < 3; i++)
		sc_sleeper_end(&s[i], SIGKILL);
}

Test(registry, register_records_every_field)
{
	struct sc_sleeper s;
	sc_sleeper_start(&s);
	mkdir(sc_path("p"), 0700);
	char *out, *err;
	int rc = sc_cli(&out, &err, "scope", "register", "agent-a", sc_path("p/src/:write:recursive"),
			sc_path("p/docs:read"), "--pid", sc_num(s.pid), "--socket", "/run/a.sock",
			"--json", NULL);
	cr_assert_eq(rc, 0, "%s", err);
	json_t *printed = json_loads(out, 0, NULL);
	cr_assert_not_null(printed, "--json prints one object: %s", out);
	json_t *root = sc_registry_json();
	json_t *a = sc_alloc(root, "agent-a");
	cr_assert_not_null(a);
	cr_assert_eq(json_integer_value(json_object_get(a, "pid")), s.pid);
	cr_assert_gt(json_integer_value(json_object_get(a, "pid_start")), 0);
	cr_assert_eq(json_string_length(json_object_get(a, "boot_id")), 36);
	cr_assert_str_eq(json_string_value(json_object_get(a, "socket")), "/run/a.sock");
	cr_assert(json_is_null(json_object_get(a, "delegated_from")));
	cr_assert_eq(json_integer_value(json_object_get(a, "generation")), 1);
	cr_assert_eq(json_integer_value(json_object_get(root, "generation")), 1);
	json_t *allow = json_object_get(a, "scope_allow");
	cr_assert_eq(json_array_size(allow), 2);
	char exp[1024];
	snprintf(exp, sizeof exp, "%s:write:recursive", sc_path("p/src"));
	cr_assert_str_eq(json_string_value(json_array_get(allow, 0)), exp, "canonical, no '/'");
	json_t *keeper = json_object_get(printed, "keeper");
	cr_assert(json_is_integer(keeper) && json_integer_value(keeper) > 0,
		  "--json names the keeper of the liveness file");
	json_object_del(printed, "keeper");
	cr_assert(json_equal(printed, a), "--json prints the allocation as stored");
	struct stat st;
	cr_assert_eq(stat(sc_reg, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600);
	json_decref(root);
	json_decref(printed);
	free(out);
	free(err);
	sc_sleeper_end(&s, SIGKILL);
}

Test(registry, overlapping_write_refused_naming_the_deepest_holder)
{
	struct sc_sleeper c[3], x;
	chain(c, "p:write:recursive", "p/src:write:recursive", "p/src/core:write:recursive");
	sc_sleeper_start(&x);
	char *err, *out;
	cr_assert_eq(chdir(sc_dir), 0);
	int rc = sc_cli(&out, &err, "scope", "register", "X", "p/src/core/../core/x:write", "--pid",
			sc_num(x.pid), NULL);
	cr_assert_eq(rc, 1, "a conflict exits 1");
	HAS(err, "'p/src/core/../core/x:write'"); /* as given */
	char canon[1024];
	snprintf(canon, sizeof canon, "canonical %s:write", sc_path("p/src/core/x"));
	HAS(err, canon);
	HAS(err, "of D (pid ");
	HAS(err, sc_num(c[2].pid));
	HAS(err, sc_path("p/src/core:write:recursive"));
	HAS(err, "and of more live pods");
	free(err);
	free(out);
	/* nothing was recorded */
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "X"));
	cr_assert_eq(json_integer_value(json_object_get(root, "generation")), 3);
	json_decref(root);
	chain_end(c);
	sc_sleeper_end(&x, SIGKILL);
}

Test(registry, reads_never_conflict_and_names_are_unique)
{
	struct sc_sleeper a, b;
	sc_sleeper_start(&a);
	sc_sleeper_start(&b);
	reg_ok("A", sc_path("p:write:recursive"), a.pid, NULL);
	reg_ok("R1", sc_path("p/src:read:recursive"), b.pid, NULL);
	reg_ok("R2", sc_path("p:read"), b.pid, NULL);
	char *err;
	int rc = sc_cli(NULL, &err, "scope", "register", "A", sc_path("elsewhere:write"), "--pid",
			sc_num(b.pid), NULL);
	cr_assert_eq(rc, 1, "a duplicate name is refused");
	HAS(err, "name is taken by A");
	free(err);
	sc_sleeper_end(&a, SIGKILL);
	sc_sleeper_end(&b, SIGKILL);
}

Test(registry, several_specs_all_or_nothing)
{
	struct sc_sleeper a, b;
	sc_sleeper_start(&a);
	sc_sleeper_start(&b);
	reg_ok("A", sc_path("p/lib:write:recursive"), a.pid, NULL);
	char *err;
	int rc = sc_cli(NULL, &err, "scope", "register", "B", sc_path("p/bin:write:recursive"),
			sc_path("p/doc:write"), sc_path("p/lib/x:write"), "--pid", sc_num(b.pid), NULL);
	cr_assert_eq(rc, 1);
	HAS(err, "of A");
	free(err);
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "B"), "the first two specs were not recorded either");
	json_decref(root);
	/* and the free ones are still free */
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("p/bin/f"), NULL), 0);
	sc_sleeper_end(&a, SIGKILL);
	sc_sleeper_end(&b, SIGKILL);
}

Test(registry, whole_components_and_non_recursive)
{
	struct sc_sleeper a, b;
	sc_sleeper_start(&a);
	sc_sleeper_start(&b);
	reg_ok("A", sc_path("p/src:write:recursive"), a.pid, NULL);
	reg_ok("B", sc_path("p/src2:write:recursive"), b.pid, NULL); /* not under /p/src */
	reg_ok("C", sc_path("q:write"), b.pid, NULL);
	reg_ok("D", sc_path("q/x/y:write:recursive"), b.pid, NULL); /* a grandchild of q */
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "register", "E", sc_path("q/x:write"), "--pid",
			    sc_num(b.pid), NULL),
		     1, "a direct child of a non-recursive scope is in it");
	sc_sleeper_end(&a, SIGKILL);
	sc_sleeper_end(&b, SIGKILL);
}

Test(registry, symlinked_spelling_is_the_same_path)
{
	struct sc_sleeper a, b;
	sc_sleeper_start(&a);
	sc_sleeper_start(&b);
	mkdir(sc_path("real"), 0700);
	cr_assert_eq(symlink(sc_path("real"), sc_path("alias")), 0);
	reg_ok("A", sc_path("real/src:write:recursive"), a.pid, NULL);
	char *err;
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "B", sc_path("alias/src/new/:write"),
			    "--pid", sc_num(b.pid), NULL),
		     1);
	HAS(err, sc_path("real/src/new:write"));
	free(err);
	sc_sleeper_end(&a, SIGKILL);
	sc_sleeper_end(&b, SIGKILL);
}

Test(registry, delegation_inside_the_parents_effective_scope)
{
	struct sc_sleeper a, b, c;
	sc_sleeper_start(&a);
	sc_sleeper_start(&b);
	sc_sleeper_start(&c);
	reg_ok("A", sc_path("p:write:recursive"), a.pid, NULL);
	/* HOLDFAST_POD delegates like --from */
	char env[64], *err;
	snprintf(env, sizeof env, "HOLDFAST_POD=A");
	cr_assert_eq(sc_cli_env(env, NULL, &err, "scope", "register", "B",
				sc_path("p/b:write:recursive"), "--pid", sc_num(b.pid), NULL),
		     0, "%s", err);
	free(err);
	json_t *root = sc_registry_json();
	cr_assert_str_eq(json_string_value(json_object_get(sc_alloc(root, "B"), "delegated_from")),
			 "A");
	json_decref(root);
	/* a sibling cannot overlap B */
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "C", sc_path("p/b/x:write"), "--pid",
			    sc_num(c.pid), "--from", "A", NULL),
		     1);
	HAS(err, "of B");
	free(err);
	/* nor reach outside A */
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "C", sc_path("other:write"), "--pid",
			    sc_num(c.pid), "--from", "A", NULL),
		     1);
	HAS(err, "not inside the effective scope of its parent A");
	free(err);
	/* read specs: inside the parent's specs */
	reg_ok("C", sc_path("p/c:read:recursive"), c.pid, "A");
	/* a descendant does not conflict with its ancestors: D inside B inside A */
	reg_ok("D", sc_path("p/b/d:write"), c.pid, "B");
	/* an unknown parent */
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "E", sc_path("p/e:write"), "--pid",
			    sc_num(c.pid), "--from", "nobody", NULL),
		     1);
	HAS(err, "parent 'nobody' is not registered");
	free(err);
	sc_sleeper_end(&a, SIGKILL);
	sc_sleeper_end(&b, SIGKILL);
	sc_sleeper_end(&c, SIGKILL);
}

Test(registry, effective_and_check)
{
	struct sc_sleeper a, d;
	sc_sleeper_start(&a);
	sc_sleeper_start(&d);
	reg_ok("A", sc_path("p:write:recursive"), a.pid, NULL);
	reg_ok("D", sc_path("p/core:write:recursive"), d.pid, "A");
	char *out;
	cr_assert_eq(sc_cli(&out, NULL, "scope", "effective", "A", "--json", NULL), 0);
	json_t *e = json_loads(out, 0, NULL);
	cr_assert_not_null(e, "%s", out);
	cr_assert_eq(json_array_size(json_object_get(e, "scope_deny")), 1);
	json_t *deny = json_array_get(json_object_get(e, "scope_deny"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(deny, "name")), "D");
	json_decref(e);
	free(out);
	/* check without --pod: held or free */
	cr_assert_eq(sc_cli(&out, NULL, "scope", "check", sc_path("p/core/f.c"), "--json", NULL), 1);
	e = json_loads(out, 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(e, "state")), "held");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "holder"), "name")),
			 "D", "the deepest holder owns the path");
	cr_assert_eq(json_integer_value(json_object_get(e, "generation")), 2);
	json_decref(e);
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("elsewhere"), NULL), 0);
	/* with --pod */
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("p/x"), "--pod", "A", NULL), 0);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "check", sc_path("p/core/x"), "--pod", "A", NULL),
		     1, "delegated away: not A's to write");
	HAS(out, "held by D");
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("p/core/x"), "--pod", "D", NULL),
		     0);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "check", sc_path("q"), "--pod", "D", NULL), 1);
	HAS(out, "outside D's write scope");
	free(out);
	sc_sleeper_end(&a, SIGKILL);
	sc_sleeper_end(&d, SIGKILL);
}

Test(registry, release_returns_scope_and_reparents_children)
{
	struct sc_sleeper c[3];
	chain(c, "p:write:recursive", "p/b:write:recursive", "p/b/d:write:recursive");
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "release", "B", NULL), 0);
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "B"));
	cr_assert_str_eq(json_string_value(json_object_get(sc_alloc(root, "D"), "delegated_from")),
			 "A");
	cr_assert_eq(json_integer_value(json_object_get(root, "generation")), 4);
	json_decref(root);
	/* B's scope is A's again, except what D holds */
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("p/b/x"), "--pod", "A", NULL), 0);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("p/b/d/x"), "--pod", "A", NULL), 1);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "release", "B", NULL), 69, "nothing to release");
	/* releasing the top: D becomes top level */
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "release", "A", NULL), 0);
	root = sc_registry_json();
	cr_assert(json_is_null(json_object_get(sc_alloc(root, "D"), "delegated_from")));
	json_decref(root);
	chain_end(c);
}

Test(registry, chain_with_middle_killed_is_reaped)
{
	struct sc_sleeper c[3];
	chain(c, "p:write:recursive", "p/src:write:recursive", "p/src/core:write:recursive");
	sc_sleeper_end(&c[1], SIGKILL);
	char *out;
	cr_assert_eq(sc_cli(&out, NULL, "scope", "reap", "--json", NULL), 0);
	json_t *r = json_loads(out, 0, NULL);
	cr_assert_not_null(r, "%s", out);
	json_t *reaped = json_object_get(r, "reaped");
	cr_assert_eq(json_array_size(reaped), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(reaped, 0), "name")), "B");
	cr_assert_str_eq(
		json_string_value(json_object_get(json_array_get(reaped, 0), "returned_to")), "A");
	json_decref(r);
	free(out);
	json_t *root = sc_registry_json();
	cr_assert_not_null(sc_alloc(root, "A"));
	cr_assert_null(sc_alloc(root, "B"));
	cr_assert_str_eq(json_string_value(json_object_get(sc_alloc(root, "D"), "delegated_from")),
			 "A", "D re-parented to A");
	json_decref(root);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "effective", "A", "--json", NULL), 0);
	json_t *e = json_loads(out, 0, NULL);
	json_t *deny = json_object_get(e, "scope_deny");
	cr_assert_eq(json_array_size(deny), 1, "A's effective scope = A - D");
	char exp[1024];
	snprintf(exp, sizeof exp, "%s:write:recursive", sc_path("p/src/core"));
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(deny, 0), "scope")), exp);
	json_decref(e);
	free(out);
	sc_sleeper_end(&c[0], SIGKILL);
	sc_sleeper_end(&c[2], SIGKILL);
}

Test(registry, stale_reclaimed_on_every_change_and_pid_reuse_is_death)
{
	struct sc_sleeper a, b;
	sc_sleeper_start(&a);
	sc_sleeper_start(&b);
	reg_ok("A", sc_path("p:write:recursive"), a.pid, NULL);
	sc_sleeper_end(&a, SIGKILL);
	/* a register of the same path reclaims A first */
	reg_ok("B", sc_path("p/x:write"), b.pid, NULL);
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "A"));
	cr_assert_eq(json_integer_value(json_object_get(root, "generation")), 3, "+1 reap +1 reg");
	/* pid reuse: B's pid alive with another start time is dead */
	json_t *bb = sc_alloc(root, "B");
	json_object_set_new(bb, "pid_start",
			    json_integer(json_integer_value(json_object_get(bb, "pid_start")) + 1));
	cr_assert_eq(json_dump_file(root, sc_reg, 0), 0);
	json_decref(root);
	char *out;
	cr_assert_eq(sc_cli(&out, NULL, "scope", "list", "--json", NULL), 0);
	HAS(out, "\"live\":false");
	free(out);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "reap", NULL), 0);
	HAS(out, "reaped B");
	free(out);
	sc_sleeper_end(&b, SIGKILL);
}

Test(registry, generation_fences_a_pod_that_lost_its_scope)
{
	struct sc_sleeper a, b;
	sc_sleeper_start(&a);
	sc_sleeper_start(&b);
	char *out;
	cr_assert_eq(sc_cli(&out, NULL, "scope", "register", "A", sc_path("p:write:recursive"),
			    "--pid", sc_num(a.pid), "--json", NULL),
		     0);
	json_t *o = json_loads(out, 0, NULL);
	long long g = json_integer_value(json_object_get(o, "generation"));
	json_decref(o);
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("p/f"), "--pod", "A",
			    "--generation", sc_num(g), NULL),
		     0);
	/* A's process is stopped for good; it is reaped and B takes the path */
	sc_sleeper_end(&a, SIGKILL);
	reg_ok("B", sc_path("p:write:recursive"), b.pid, NULL);
	/* the same name registered again gets a new generation */
	reg_ok("A", sc_path("q:write"), b.pid, NULL);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "check", sc_path("p/f"), "--pod", "A",
			    "--generation", sc_num(g), "--json", NULL),
		     1);
	o = json_loads(out, 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "lost");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "holder"), "name")),
			 "B");
	cr_assert_gt(json_integer_value(json_object_get(o, "pod_generation")), g,
		     "generations only grow");
	json_decref(o);
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "release", "A", "--generation", sc_num(g), NULL), 1,
		     "an old registration cannot release the new one");
	sc_sleeper_end(&b, SIGKILL);
}

Test(registry, names_sockets_paths_validated)
{
	struct sc_sleeper a;
	sc_sleeper_start(&a);
	reg_ok("A", sc_path("ok:write"), a.pid, NULL);
	char *before = hft_slurp(sc_reg);
	char longname[300];
	memset(longname, 'n', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	char ctl[1024];
	snprintf(ctl, sizeof ctl, "%s:write", sc_path("a\nb"));
	char nonutf[1024];
	snprintf(nonutf, sizeof nonutf, "%s:write", sc_path("a\xff"));
	const char *cases[][3] = {
		{ "bad\"name", sc_path("x:write"), NULL },
		{ "bad\x01name", sc_path("x:write"), NULL },
		{ longname, sc_path("x:write"), NULL },
		{ "bad\xc3name", sc_path("x:write"), NULL },
		{ "B", ctl, NULL },
		{ "B", nonutf, NULL },
		{ "B", sc_path("x:write"), "relative.sock" },
		{ "B", sc_path("x:write"), "/run/a\x1b[2J.sock" },
		{ "B", sc_path("x:delete"), NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *err;
		int rc = cases[i][2] ? sc_cli(NULL, &err, "scope", "register", cases[i][0],
					      cases[i][1], "--pid", sc_num(a.pid), "--socket",
					      cases[i][2], NULL)
				     : sc_cli(NULL, &err, "scope", "register", cases[i][0],
					      cases[i][1], "--pid", sc_num(a.pid), NULL);
		cr_assert_eq(rc, 64, "case %zu: a usage error, got %d: %s", i, rc, err);
		for (const char *p = err; *p; p++)
			cr_assert(*p == '\n' || (unsigned char)*p >= 0x20,
				  "case %zu: the message carries no control characters", i);
		free(err);
	}
	char *after = hft_slurp(sc_reg);
	cr_assert_str_eq(before, after, "the file is untouched");
	free(before);
	free(after);
	/* quotes and non-ASCII in a path are fine: escaped in the file */
	reg_ok("Q", sc_path("it's \"quoted\" \\ 日本:write"), a.pid, NULL);
	json_t *root = sc_registry_json();
	char exp[1024];
	snprintf(exp, sizeof exp, "%s:write", sc_path("it's \"quoted\" \\ 日本"));
	cr_assert_str_eq(
		json_string_value(json_array_get(json_object_get(sc_alloc(root, "Q"), "scope_allow"), 0)),
		exp);
	json_decref(root);
	sc_sleeper_end(&a, SIGKILL);
}

Test(registry, usage_errors_and_help)
{
	char *out;
	cr_assert_eq(sc_cli(&out, NULL, "scope", "--help", NULL), 0);
	HAS(out, "PATH:MODE[:recursive]");
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "register", "A", NULL), 64);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "register", "A", "/x:write", "--bogus", NULL), 64);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "register", "A", "/x:write", "--pid", "abc", NULL),
		     64);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", "/x", "--generation", "3", NULL), 64);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "frobnicate", NULL), 64);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "effective", "nobody", NULL), 69);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "register", "A", "/x:write", "--pid", "999999999",
			    NULL),
		     64, "no such pid");
}
