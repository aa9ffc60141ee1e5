/* Bind mounts: one
 * directory reached through two paths is one scope. Real bind mounts and a
 * real tmpfs in a private mount namespace of the test process (nothing is
 * seen outside it; everything is unmounted before the directory goes), the
 * real binary in it. */
#include "hft.h"
#include "scope_support.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char mounted[4][1024];
static int nmounted;
static struct sc_sleeper owner;

static void start(void)
{
	sc_setup();
	nmounted = 0;
	owner.pid = 0;
}

static void stop(void)
{
	if (owner.pid > 0)
		sc_sleeper_end(&owner, SIGKILL);
	while (nmounted > 0)
		cr_assert_eq(umount2(mounted[--nmounted], MNT_DETACH), 0, "umount %s: %s",
			     mounted[nmounted], strerror(errno));
	sc_teardown();
}

TestSuite(mounts, .init = start, .fini = stop, .timeout = 60);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

static void mk(const char *rel)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", sc_path(rel));
	cr_assert_eq(system(cmd), 0);
}

static void bind(const char *from, const char *to)
{
	cr_assert_eq(mount(sc_path(from), sc_path(to), NULL, MS_BIND, NULL), 0, "bind %s %s: %s",
		     from, to, strerror(errno));
	snprintf(mounted[nmounted++], sizeof mounted[0], "%s", sc_path(to));
}

static void tmpfs(const char *at)
{
	cr_assert_eq(mount("tmpfs", sc_path(at), "tmpfs", 0, "mode=0700"), 0, "tmpfs %s: %s", at,
		     strerror(errno));
	snprintf(mounted[nmounted++], sizeof mounted[0], "%s", sc_path(at));
}

/* Register name for the test's one owner process (started on first use). */
static int reg(const char *name, const char *spec_rel, const char *from, char **err)
{
	if (owner.pid <= 0)
		sc_sleeper_start(&owner);
	char spec[1200];
	snprintf(spec, sizeof spec, "%s", sc_path(spec_rel));
	return from ? sc_cli(NULL, err, "scope", "register", name, spec, "--pid", sc_num(owner.pid),
			     "--from", from, NULL)
		    : sc_cli(NULL, err, "scope", "register", name, spec, "--pid", sc_num(owner.pid),
			     NULL);
}

/* A/src held recursively, then B/src where B is a bind
 * mount of A - the same files, so refused naming the holder. */
Test(mounts, bind_mount_of_a_held_directory_is_refused)
{
	sc_private_mounts(false);
	mk("A/src/lib");
	mk("B");
	mk("C/src");
	bind("A", "B");
	struct sc_sleeper s;
	sc_sleeper_start(&s);
	char *err, *out;
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "X", sc_path("A/src:write:recursive"),
			    "--pid", sc_num(s.pid), NULL),
		     0, "%s", err);
	free(err);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "Y", sc_path("B/src:write"), "--pid",
			    sc_num(s.pid), NULL),
		     1, "B/src is A/src: %s", err);
	HAS(err, "of X (pid ");
	HAS(err, "through another path (a bind mount)");
	free(err);
	/* deeper, non-recursive, through the alias: refused too */
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "Y", sc_path("B/src/lib/f:write"),
			    "--pid", sc_num(s.pid), NULL),
		     1, "%s", err);
	free(err);
	/* another directory with the same name is no alias */
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "Z", sc_path("C/src:write:recursive"),
			    "--pid", sc_num(s.pid), NULL),
		     0, "%s", err);
	free(err);
	/* check follows the same identity */
	cr_assert_eq(sc_cli(&out, NULL, "scope", "check", sc_path("B/src/lib/f.c"), NULL), 1);
	HAS(out, "held by X");
	HAS(out, "the same files through another path");
	free(out);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "check", sc_path("B/src/lib/f.c"), "--json", NULL),
		     1);
	json_t *o = json_loads(out, 0, NULL);
	cr_assert_not_null(o, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "held");
	const char *fs = json_string_value(json_object_get(o, "fs"));
	cr_assert_not_null(fs, "the path's identity is shown");
	HAS(fs, "/A/src/lib/f.c"); /* named by the file system's path, not B's */
	json_decref(o);
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("B/src/lib/f.c"), "--pod", "X",
			    NULL),
		     0, "X may write there through B too");
	sc_sleeper_end(&s, SIGKILL);
}

/* A6: a recursive scope reaches the mounts below it. P is held; P/m is a
 * tmpfs, bound again at Q: Q/d is inside P/m, so inside P. */
Test(mounts, mount_below_a_recursive_scope_is_in_it)
{
	sc_private_mounts(false);
	mk("P/m");
	mk("Q");
	tmpfs("P/m");
	mk("P/m/d");
	bind("P/m", "Q");
	char *err;
	cr_assert_eq(reg("X", "P:write:recursive", NULL, &err), 0, "%s", err);
	free(err);
	cr_assert_eq(reg("W", "Q/d:write", NULL, &err), 1, "Q/d is P/m/d: %s", err);
	HAS(err, "of X (pid ");
	HAS(err, "through another path");
	free(err);
	json_t *root = sc_registry_json();
	json_t *fs = json_object_get(sc_alloc(root, "X"), "scope_fs");
	cr_assert_eq(json_array_size(json_array_get(fs, 0)), 2,
		     "X's spec records its own identity and the tmpfs below it");
	json_decref(root);
}

/* Delegation, effective scope and check --pod follow the identity: a child
 * may take part of its parent's scope through the alias. */
Test(mounts, delegation_through_an_alias_is_inside)
{
	sc_private_mounts(false);
	mk("A/src/c");
	mk("B");
	bind("A", "B");
	struct sc_sleeper a, c;
	sc_sleeper_start(&a);
	sc_sleeper_start(&c);
	char *err, *out;
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "X", sc_path("A/src:write:recursive"),
			    "--pid", sc_num(a.pid), NULL),
		     0, "%s", err);
	free(err);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "C", sc_path("B/src/c:write"), "--pid",
			    sc_num(c.pid), "--from", "X", NULL),
		     0, "inside X's scope by identity: %s", err);
	free(err);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "effective", "X", "--json", NULL), 0);
	json_t *e = json_loads(out, 0, NULL);
	cr_assert_eq(json_array_size(json_object_get(e, "scope_deny")), 1, "X minus C: %s", out);
	json_decref(e);
	free(out);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "check", sc_path("A/src/c/f"), "--pod", "X", NULL),
		     1, "delegated away, reached by A's path");
	HAS(out, "held by C");
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("A/src/c/f"), "--pod", "C", NULL),
		     0, "C's through A's path");
	/* a sibling cannot take C's directory through the other path */
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "D", sc_path("A/src/c/g:write"),
			    "--pid", sc_num(c.pid), "--from", "X", NULL),
		     1);
	HAS(err, "of C (pid ");
	free(err);
	sc_sleeper_end(&a, SIGKILL);
	sc_sleeper_end(&c, SIGKILL);
}
