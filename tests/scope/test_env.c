/* Where users really run holdfast: one registry per
 * tree whatever the environment - a login shell with XDG_RUNTIME_DIR, a
 * cron job or `env -i` without (RG12: the tree's git common directory) -
 * and a tree shared by two users, one of whom made its registry directory
 * first. Each test gets a private mount namespace with its own tmpfs on
 * /tmp, and nothing is left in the machine's /tmp. Real shells, `env -i`,
 * a second user by setpriv. */
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

static void start(void)
{
	sc_setup();
	unsetenv("HOLDFAST_REGISTRY"); /* the default location, in our own /tmp */
}

TestSuite(env, .init = start, .fini = sc_teardown, .timeout = 60);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

Test(env, one_registry_whatever_the_environment)
{
	sc_need_root();
	sc_private_mounts(true);
	struct sc_sleeper login, cron, unit;
	sc_sleeper_start(&login);
	sc_sleeper_start(&cron);
	sc_sleeper_start(&unit);
	mkdir(sc_path("xdg-login"), 0700);
	mkdir(sc_path("xdg-unit"), 0700);
	char *out, *err;
	cr_assert_eq(sc_sh(&out, &err, "mkdir \"$1\" && cd \"$1\" && exec git init -q .",
			   sc_path("p"), NULL),
		     0, "%s", err);
	free(out);
	free(err);
	char p[1100], px[1100], py[1100];
	snprintf(p, sizeof p, "%s:write:recursive", sc_path("p"));
	snprintf(px, sizeof px, "%s:write", sc_path("p/x"));
	snprintf(py, sizeof py, "%s:write:recursive", sc_path("p/y"));
	/* a login shell: XDG_RUNTIME_DIR set */
	cr_assert_eq(sc_sh(&out, &err,
			   "XDG_RUNTIME_DIR=\"$1\" exec \"$HF\" scope register login \"$2\" --pid \"$3\"",
			   sc_path("xdg-login"), p, sc_num(login.pid), NULL),
		     0, "%s", err);
	free(out);
	free(err);
	/* a cron job: an empty environment */
	cr_assert_eq(sc_sh(&out, &err, "exec env -i \"$HF\" scope register cron \"$1\" --pid \"$2\"",
			   px, sc_num(cron.pid), NULL),
		     1, "the same registry, the same scope: refused: %s", err);
	HAS(err, "of login (pid ");
	char reg[1200];
	snprintf(reg, sizeof reg, "(registry %s/.git/holdfast/scope.lock)", sc_path("p"));
	HAS(err, reg);
	free(out);
	free(err);
	/* a unit or sudo: another XDG_RUNTIME_DIR, another HOME */
	cr_assert_eq(sc_sh(&out, &err,
			   "XDG_RUNTIME_DIR=\"$1\" HOME=/nonexistent exec \"$HF\" scope register unit "
			   "\"$2\" --pid \"$3\"",
			   sc_path("xdg-unit"), py, sc_num(unit.pid), NULL),
		     1, "%s", err);
	HAS(err, "of login (pid ");
	free(out);
	free(err);
	/* and all of them list the same table */
	cr_assert_eq(sc_sh(&out, &err, "cd \"$1\" && exec env -i \"$HF\" scope list", sc_path("p"),
			   NULL),
		     0, "%s", err);
	HAS(out, "login ");
	free(out);
	free(err);
	char xdg[1100];
	snprintf(xdg, sizeof xdg, "%s/holdfast", sc_path("xdg-login"));
	cr_assert_not(hft_exists(xdg), "nothing under XDG_RUNTIME_DIR");
	sc_sleeper_end(&login, SIGKILL);
	sc_sleeper_end(&cron, SIGKILL);
	sc_sleeper_end(&unit, SIGKILL);
	cr_assert_not(hft_exists("/tmp/holdfast-0"), "nothing in /tmp");
}

/* Run the binary (copied where any user may run it) as uid:uid. */
static int as_user(unsigned uid, char **out, char **err, const char *script, const char *arg)
{
	char u[16];
	snprintf(u, sizeof u, "%u", uid);
	return sc_sh(out, err,
		     "exec setpriv --reuid=\"$1\" --regid=\"$1\" --clear-groups sh -c \"$2\" sh \"$3\"",
		     u, script, arg ? arg : "", NULL);
}

static void install_binary(void)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "install -m 0755 '%s' /tmp/hf", hft_bin());
	cr_assert_eq(system(cmd), 0);
}

/* A tree two users share (its .git writable by both): the one who made
 * its registry directory first owns it; the other is refused (77) naming
 * that owner, never uses it, nothing is written through a link. */
/* The victim's registration is refused (77), naming mallory (uid 4242) as
 * the owner of what sits at its registry's place. */
static void victim_refused(unsigned victim)
{
	char *out, *err;
	cr_assert_eq(as_user(victim, &out, &err, "exec /tmp/hf scope register V /tmp/r/v:write",
			     NULL),
		     77, "%s", err);
	HAS(err, "is owned by uid 4242");
	free(out);
	free(err);
}

Test(env, another_users_registry_directory_refused_naming_its_owner)
{
	sc_need_root();
	sc_private_mounts(true);
	install_binary();
	const unsigned mallory = 4242, victim = 4343;
	char *out, *err;
	cr_assert_eq(system("git init -q /tmp/r && chmod 0777 /tmp/r/.git"), 0);
	/* mallory makes the tree's registry directory (0755: readable by all) */
	cr_assert_eq(as_user(mallory, NULL, &err, "mkdir /tmp/r/.git/holdfast", NULL), 0, "%s",
		     err);
	free(err);
	cr_assert_eq(as_user(victim, &out, &err, "exec /tmp/hf scope register V /tmp/r/v:write",
			     NULL),
		     77, "%s", err);
	HAS(err, "/tmp/r/.git/holdfast is owned by uid 4242");
	free(out);
	free(err);
	cr_assert_eq(as_user(victim, &out, &err, "cd /tmp/r && exec /tmp/hf scope list", NULL), 77,
		     "%s", err);
	HAS(err, "is owned by uid 4242");
	free(out);
	free(err);
	/* ... 0700: the victim cannot even look inside */
	cr_assert_eq(as_user(mallory, NULL, &err,
			     "rmdir /tmp/r/.git/holdfast && mkdir -m 0700 /tmp/r/.git/holdfast",
			     NULL),
		     0, "%s", err);
	free(err);
	victim_refused(victim);
	/* ... a symbolic link to somewhere of mallory's choosing */
	cr_assert_eq(as_user(mallory, NULL, &err,
			     "rmdir /tmp/r/.git/holdfast && mkdir -m 0777 /tmp/m && "
			     "ln -s /tmp/m /tmp/r/.git/holdfast",
			     NULL),
		     0, "%s", err);
	free(err);
	victim_refused(victim);
	cr_assert(!hft_exists("/tmp/m/scope.lock") && !hft_exists("/tmp/m/scope.lock.flock"),
		  "nothing was written through the link");
	/* the victim's own directory with mallory's table in it (planted by
	 * root here: mallory cannot write into a 0700 directory of another) */
	cr_assert_eq(system("rm -f /tmp/r/.git/holdfast && mkdir -m 0700 /tmp/r/.git/holdfast && "
			    "chown 4343:4343 /tmp/r/.git/holdfast && "
			    "echo '{\"version\":1,\"generation\":0,\"allocations\":[]}' > "
			    "/tmp/r/.git/holdfast/scope.lock && chmod 0644 "
			    "/tmp/r/.git/holdfast/scope.lock && chown 4242:4242 "
			    "/tmp/r/.git/holdfast/scope.lock"),
		     0);
	cr_assert_eq(as_user(victim, &out, &err, "exec /tmp/hf scope register V /tmp/r/v:write",
			     NULL),
		     77, "%s", err);
	HAS(err, "the registry file is owned by uid 4242");
	free(out);
	free(err);
	/* and with the victim's own files all is well */
	cr_assert_eq(system("rm /tmp/r/.git/holdfast/scope.lock"), 0);
	cr_assert_eq(as_user(victim, &out, &err,
			     "exec /tmp/hf scope register V /tmp/r/v:write >/dev/null", NULL),
		     0, "%s", err);
	free(out);
	free(err);
	hft_rmtree("/tmp/r"); /* the keeper's file goes: it ends */
}
