/* One registry for everyone who shares a tree (RG12, RG13): agents in
 * containers that each have their own /tmp but share one tree must meet in
 * one registry - the tree's (its git common directory) - or be refused,
 * never each get its own. Real `unshare --mount` containers, each with its
 * own tmpfs on /tmp and the tree bind-mounted at one path; real git. No
 * HOLDFAST_REGISTRY here: the default is what is tested. */
#include "hft.h"
#include "scope_support.h"
#include "registry_fs.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static void start(void)
{
	sc_setup();
	unsetenv("HOLDFAST_REGISTRY"); /* the default registry */
}

TestSuite(shared, .init = start, .fini = sc_teardown, .timeout = 60);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

/* A container: a mount namespace of its own (`unshare --mount
 * --propagation private`), a fresh tmpfs on /tmp, the tree ($1) bound at
 * /tmp/work (reached through a descriptor opened before /tmp was covered;
 * so is the binary's top directory when it lives under /tmp). There it
 * registers pod $2 for `src:write:recursive`, its own process the owner,
 * says "registered" and, when $3 names a FIFO, holds the pod until a line
 * comes on it. */
static const char container[] =
	"exec 3<\"$1\" || exit 20\n"
	"top=; case $HF in /tmp/*) top=${HF#/tmp/}; top=${top%%/*}; exec 4<\"/tmp/$top\";; esac\n"
	"[ -z \"$3\" ] || exec 5<>\"$3\" || exit 21\n"
	"mount -t tmpfs -o mode=1777 tmpfs /tmp || exit 22\n"
	"[ -z \"$top\" ] || { mkdir \"/tmp/$top\" && mount -c --bind /proc/self/fd/4 \"/tmp/$top\"; } || exit 23\n"
	"mkdir /tmp/work && mount -c --bind /proc/self/fd/3 /tmp/work || exit 24\n"
	"exec 3<&- 4<&-\n"
	"cd /tmp/work || exit 25\n"
	"\"$HF\" scope register \"$2\" src:write:recursive --pid $$ >/dev/null || exit $?\n"
	"echo registered\n"
	"[ -z \"$3\" ] || read x <&5\n";

static void spawn_container(struct hft_child *c, const char *tree, const char *pod,
			    const char *fifo)
{
	const char *argv[] = { "unshare", "--mount", "--propagation", "private", "bash", "-c",
			       container, "bash", tree, pod, fifo ? fifo : "", NULL };
	sc_spawn(c, argv);
}

/* A container's outcome: its exit code, stderr in *err. */
static int container_end(struct hft_child *c, char **err)
{
	char *out = hft_read_all(c->out_rd);
	*err = hft_read_all(c->err_rd);
	free(out);
	return hft_wait(c);
}

static void git_init(const char *dir)
{
	char *out, *err;
	int rc = sc_sh(&out, &err, "mkdir -p \"$1/src\" && cd \"$1\" && exec git init -q .", dir,
		       NULL);
	cr_assert_eq(rc, 0, "git init: %s", err);
	free(out);
	free(err);
}

/* The issue: two containers with their own /tmp over one tree both got
 * `src:write:recursive` (rc 0 and rc 0: each a registry in its own /tmp).
 * Now the second is refused, naming the first; the host finds the same
 * registry for the same tree (check, list), and once the first ends the
 * second gets it. */
Test(shared, two_containers_with_their_own_tmp_meet_in_the_trees_registry)
{
	sc_need_root();
	const char *tree = sc_path("tree"), *fifo = sc_path("fifo");
	git_init(tree);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	struct hft_child one, two;
	spawn_container(&one, tree, "first", fifo);
	char *line = sc_line(one.out_rd);
	cr_assert_str_eq(line, "registered", "the first container registered");
	free(line);

	char *err;
	spawn_container(&two, tree, "second", NULL);
	int rc = container_end(&two, &err);
	cr_assert_eq(rc, 1, "the second container is refused (exit %d): %s", rc, err);
	HAS(err, "overlaps the write scope /tmp/work/src:write:recursive of first (pid ");
	char reg[PATH_MAX + 64];
	snprintf(reg, sizeof reg, "(registry /tmp/work/.git/holdfast/scope.lock)");
	HAS(err, reg);
	free(err);

	/* the host, in the tree (another path to it): the same registry */
	char *out;
	cr_assert_eq(sc_sh(&out, &err, "cd \"$1\" && exec \"$HF\" scope check src", tree, NULL), 1,
		     "%s", err);
	HAS(out, "held by first (pid ");
	free(out);
	free(err);
	cr_assert_eq(sc_sh(&out, &err, "cd \"$1/src\" && exec \"$HF\" scope list", tree, NULL), 0,
		     "%s", err);
	snprintf(reg, sizeof reg, "registry %s/.git/holdfast/scope.lock:", tree);
	HAS(out, reg);
	HAS(out, "first ");
	free(out);
	free(err);

	/* the first container ends: the second gets the tree */
	int fd = open(fifo, O_WRONLY);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	cr_assert_eq(write(fd, "go\n", 3), 3);
	close(fd);
	rc = container_end(&one, &err);
	cr_assert_eq(rc, 0, "%s", err);
	free(err);
	spawn_container(&two, tree, "second", NULL);
	rc = container_end(&two, &err);
	cr_assert_eq(rc, 0, "the first is gone: the second registers: %s", err);
	free(err);
}

/* Without git, a registry at the root of the tree's mount would be private
 * to each container when that mount is a bind of a subdirectory (another
 * mount namespace may see the files under another mount root): refused, 77,
 * saying why and what to do; nothing is made in the tree. */
Test(shared, a_tree_without_git_and_no_registry_to_share_is_refused)
{
	sc_need_root();
	const char *tree = sc_path("plain");
	char src[1100];
	snprintf(src, sizeof src, "%s/src", tree);
	cr_assert_eq(mkdir(tree, 0755), 0);
	cr_assert_eq(mkdir(src, 0755), 0);
	struct hft_child c;
	char *err;
	spawn_container(&c, tree, "first", NULL);
	int rc = container_end(&c, &err);
	cr_assert_eq(rc, 77, "refused (exit %d): %s", rc, err);
	HAS(err, "scope register first: no scope registry: /tmp/work/src is outside any git work "
		 "tree, on the mount /tmp/work, which shows only ");
	HAS(err, "(a bind mount)");
	HAS(err, "Set HOLDFAST_REGISTRY to a file that every process sharing these paths sees");
	free(err);
	char dot[1100];
	snprintf(dot, sizeof dot, "%s/.holdfast", tree);
	cr_assert_not(hft_exists(dot), "nothing made in the tree");
}

/* The tmpfs the_mounts_root_or_none mounts goes with the test, pass or fail
 * (detached: a keeper may still hold a file in it). */
static void mounts_teardown(void)
{
	umount2(sc_path("m"), MNT_DETACH); /* before the suite's sc_teardown */
}

/* Where the default is, and where there is none (RG12): the mount's root
 * when it is a whole file system's, not /, not writable by everyone; a /tmp
 * (1777) and / are refused. In a private mount namespace of the test. */
Test(shared, the_mounts_root_or_none, .fini = mounts_teardown)
{
	sc_need_root();
	sc_private_mounts(true);
	const char *m = sc_path("m");
	cr_assert_eq(mkdir(m, 0755), 0);
	cr_assert_eq(mount("tmpfs", m, "tmpfs", 0, "mode=0755"), 0, "%s", strerror(errno));
	char p[1100], buf[PATH_MAX], exp[1100];
	snprintf(p, sizeof p, "%s/a/b", m);
	cr_assert_eq(hf_registry_path_for(p, buf, sizeof buf), 0);
	snprintf(exp, sizeof exp, "%s/.holdfast/scope.lock", m);
	cr_assert_str_eq(buf, exp, "the root of the mount holding the path");
	char why[512];
	cr_assert_eq(hf_scopereg_path_for("/tmp/x", buf, sizeof buf, why, sizeof why),
		     HF_EUNSAFE);
	HAS(why, "/tmp/x is outside any git work tree, on the mount /tmp, which everyone may "
		 "write to");
	cr_assert_eq(hf_scopereg_path_for("/nonexistent-hf/x", buf, sizeof buf, why, sizeof why),
		     HF_EUNSAFE);
	HAS(why, "on the root file system of this mount namespace");
	/* HOLDFAST_REGISTRY wins everywhere */
	setenv("HOLDFAST_REGISTRY", "/some/where/reg", 1);
	cr_assert_eq(hf_registry_path_for("/tmp/x", buf, sizeof buf), 0);
	cr_assert_str_eq(buf, "/some/where/reg");
	unsetenv("HOLDFAST_REGISTRY");
	/* and the CLI in such a mount: registered there, released there */
	struct sc_sleeper owner;
	sc_sleeper_start(&owner);
	char *out, *err;
	snprintf(p, sizeof p, "%s/a:write", m);
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "pod", p, "--pid", sc_num(owner.pid),
			    NULL),
		     0, "%s", err);
	cr_assert(hft_exists(exp), "the registry is at the mount's root");
	free(out);
	free(err);
	/* release NAME: the current directory's registry - none in a /dev/shm */
	cr_assert_eq(sc_sh(&out, &err, "cd \"$1\" && exec \"$HF\" scope release pod", sc_dir, NULL),
		     77, "%s", err);
	HAS(err, "scope release pod: no scope registry: ");
	free(out);
	free(err);
	cr_assert_eq(sc_sh(&out, &err, "cd \"$1\" && exec \"$HF\" scope release pod", m, NULL), 0,
		     "%s", err);
	free(out);
	free(err);
	sc_sleeper_end(&owner, SIGKILL);
}

/* Every worktree of a repository finds the one registry of its git common
 * directory, as `git rev-parse --git-common-dir` names it. */
Test(shared, worktrees_share_the_common_directorys_registry)
{
	sc_need_root();
	const char *repo = sc_path("repo"), *wt = sc_path("wt");
	git_init(repo);
	char *out, *err;
	cr_assert_eq(sc_sh(&out, &err,
			   "cd \"$1\" && git -c user.name=t -c user.email=t@t commit -q "
			   "--allow-empty -m 0 && git worktree add -q \"$2\" && cd \"$2\" && "
			   "git rev-parse --path-format=absolute --git-common-dir",
			   repo, wt, NULL),
		     0, "%s", err);
	out[strcspn(out, "\n")] = '\0';
	char exp[PATH_MAX + 32], a[PATH_MAX], b[PATH_MAX], sub[1100];
	snprintf(exp, sizeof exp, "%s/holdfast/scope.lock", out);
	free(out);
	free(err);
	snprintf(sub, sizeof sub, "%s/src/new/file", wt); /* below, not there yet */
	cr_assert_eq(hf_registry_path_for(repo, a, sizeof a), 0);
	cr_assert_eq(hf_registry_path_for(sub, b, sizeof b), 0);
	cr_assert_str_eq(a, exp);
	cr_assert_str_eq(b, exp, "the worktree's is the main tree's");
}

/* One registration lives in one registry (RG13): specs in two trees are
 * refused before anything is written, naming both registries. */
Test(shared, specs_in_two_trees_are_refused)
{
	const char *x = sc_path("x"), *y = sc_path("y");
	git_init(x);
	git_init(y);
	char sx[1100], sy[1100], rx[1100], ry[1100];
	snprintf(sx, sizeof sx, "%s/src:write", x);
	snprintf(sy, sizeof sy, "%s/src:write", y);
	snprintf(rx, sizeof rx, "%s/.git/holdfast/scope.lock", x);
	snprintf(ry, sizeof ry, "%s/.git/holdfast/scope.lock", y);
	char *err;
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "pod", sx, sy, "--pid",
			    sc_num(getpid()), NULL),
		     64, "%s", err);
	HAS(err, ry);
	HAS(err, rx);
	HAS(err, "one registration lives in one registry");
	free(err);
	cr_assert_not(hft_exists(rx) || hft_exists(ry), "nothing written");
}
