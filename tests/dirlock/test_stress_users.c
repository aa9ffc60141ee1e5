/* Stress the way users run holdfast: shell loops through the binary, with
 * the holders spread over pid namespaces, with one lock reached through a
 * bind mount under two names, and with a second user planting files in a
 * shared sticky directory. Each holder marks the critical section with an
 * atomic mkdir: a second holder inside finds the mark and records an
 * overlap. Needs root (unshare, mount, setpriv); skipped otherwise.
 *
 * HF_STRESS_SCALE=PERCENT scales the rounds (the ASan build uses 25 %). */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

HFT_SCRATCH_SUITE(users, 240);


static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (unshare, mount, setpriv)");
}

/* The critical section of every holder: mark, spin a little, unmark. */
#define CS "mkdir \"$0/in\" 2>/dev/null || echo overlap >> \"$0/ovl\"; " \
	   "j=0; while [ $j -lt 30 ]; do j=$((j+1)); done; rmdir \"$0/in\""

/* A worker: `n` runs of `holdfast run -w 60 LOCKS -- CS`, failures noted. */
static char *worker_script(const char *locks, int n)
{
	char *s;
	cr_assert_geq(asprintf(&s,
			       "i=0; while [ $i -lt %d ]; do\n"
			       "  \"$HOLDFAST_BIN\" run -w 60 %s -- sh -c '" CS "' '%s' ||"
			       " echo \"run exit $?\" >> '%s/err'\n"
			       "  i=$((i+1))\n"
			       "done\n",
			       n, locks, dir, dir),
		      0);
	return s;
}

static void wait_all(struct hft_child *w, int n)
{
	for (int i = 0; i < n; i++) {
		int st = hft_wait(&w[i]);
		char *e = hft_read_all(w[i].err_rd);
		cr_assert_eq(st, 0, "worker %d: exit %d: %s", i, st, e);
		free(e);
	}
}

static void no_overlap_no_error(void)
{
	char *ovl = dl_path(dir, "ovl"), *err = dl_path(dir, "err");
	char *o = hft_slurp(ovl), *e = hft_slurp(err);
	cr_assert_null(o, "two holders at once: %s", o);
	cr_assert_null(e, "runs failed: %s", e);
	free(ovl);
	free(err);
}

/* Holders on the host and in two pid namespaces contend for one lock: no
 * judge may take a foreign namespace's pid for proof of death. */
Test(users, holders_in_other_pid_namespaces)
{
	need_root();
	if (hft_sh(NULL, NULL, "sh", NULL, "unshare --pid --fork --mount-proc true") != 0)
		cr_skip_test("unshare --pid is not allowed here");
	char *L = dl_path(dir, "L"), *locks;
	cr_assert_geq(asprintf(&locks, "--lock '%s'", L), 0);
	char *script = worker_script(locks, dl_scaled(60));
	struct hft_child w[4];
	for (int i = 0; i < 4; i++) {
		if (i % 2)
			hft_spawn_cmd(&w[i],
				      (const char *const[]){ "unshare", "--pid", "--fork", "--kill-child", "--mount-proc",
							     "sh", "-c", script, NULL },
				      NULL);
		else
			hft_spawn_cmd(&w[i], (const char *const[]){ "sh", "-c", script, NULL }, NULL);
	}
	wait_all(w, 4);
	no_overlap_no_error();
	cr_assert(!hft_exists(L), "the lock is free at the end");
	free(script);
	free(locks);
	free(L);
}

/* One pair of locks reached through a bind mount under other names, in an
 * order that sorts differently by path: never two holders, never a cycle
 * (every run gets both within its wait). */
Test(users, aliases_through_a_bind_mount)
{
	need_root();
	if (!hft_private_mounts())
		cr_skip_test("no mount namespace");
	char *z = dl_path(dir, "z"), *a = dl_path(dir, "a");
	cr_assert_eq(mkdir(z, 0700), 0);
	cr_assert_eq(mkdir(a, 0700), 0);
	hft_bind(z, a);
	char *one, *two;
	cr_assert_geq(asprintf(&one, "--lock '%s/X' --lock '%s/Y'", z, z), 0);
	cr_assert_geq(asprintf(&two, "--lock '%s/Y' --lock '%s/X'", a, z), 0);
	char *s1 = worker_script(one, dl_scaled(60)), *s2 = worker_script(two, dl_scaled(60));
	struct hft_child w[4];
	for (int i = 0; i < 4; i++)
		hft_spawn_cmd(&w[i], (const char *const[]){ "sh", "-c", i % 2 ? s2 : s1, NULL }, NULL);
	wait_all(w, 4);
	no_overlap_no_error();
	hft_unmount(a);
	free(s1);
	free(s2);
	free(one);
	free(two);
	free(z);
	free(a);
}

/* A second user in a shared sticky directory keeps planting what it can
 * where the lock lives: its own directory at the lock's name with garbage,
 * a FIFO or a symlink as the record, a symlink or a directory at the state
 * directory's name. Root's runs must each answer (done, held, unreadable,
 * unsafe) within their wait - never hang, never two holders - and nothing
 * of root's may end up the other user's. */
Test(users, second_user_in_a_sticky_directory)
{
	need_root();
	char *shared = dl_path(dir, "tmp");
	cr_assert_eq(mkdir(shared, 0700), 0);
	cr_assert_eq(chmod(shared, 01777), 0);
	char *planter;
	cr_assert_geq(asprintf(&planter,
			       "cd '%s' || exit 1; i=0\n"
			       "while [ ! -e stop ] && [ $i -lt 2000 ]; do\n"
			       "  i=$((i+1))\n"
			       "  case $((i %% 5)) in\n"
			       "  0) mkdir L 2>/dev/null && echo garbage > L/owner ;;\n"
			       "  1) mkdir L 2>/dev/null && mkfifo L/owner ;;\n"
			       "  2) mkdir L 2>/dev/null && ln -s /etc/shadow L/owner ;;\n"
			       "  3) ln -s /root L.holdfast 2>/dev/null ;;\n"
			       "  4) rm -rf L 2>/dev/null ;;\n"
			       "  esac\n"
			       "done\n",
			       shared),
		      0);
	struct hft_child p;
	hft_spawn_cmd(&p,
		      (const char *const[]){ "setpriv", "--reuid=4242", "--regid=4242", "--clear-groups",
					     "sh", "-c", planter, NULL },
		      NULL);
	char *loop;
	cr_assert_geq(asprintf(&loop,
			       "cd '%s' || exit 1; i=0; ok=0\n"
			       "while [ $i -lt %d ]; do\n"
			       "  i=$((i+1))\n"
			       "  timeout 20 \"$HOLDFAST_BIN\" run -w 1 --lock L -- sh -c '" CS "' '%s'\n"
			       "  case $? in 0) ok=$((ok+1)) ;; 1|65|77) ;; *) echo \"run exit $?\" >> '%s/err' ;; esac\n"
			       "done\n"
			       "echo ok=$ok\n",
			       shared, dl_scaled(100), dir, dir),
		      0);
	char *out;
	int st = hft_sh(&out, NULL, "sh", NULL, loop);
	char *stop = dl_path(shared, "stop");
	hft_write(stop, "");
	hft_wait(&p);
	cr_assert_eq(st, 0, "%s", out);
	no_overlap_no_error();
	/* the state directory, when root's, stays root's and private */
	char *state = dl_path(shared, "L.holdfast");
	struct stat sb;
	if (lstat(state, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == 0)
		cr_assert_eq(sb.st_mode & 077, 0, "root's state directory was opened up");
	free(state);
	free(stop);
	free(out);
	free(loop);
	free(planter);
	free(shared);
}
