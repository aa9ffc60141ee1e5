/* holdfast edit where users really run it: root editing in a sticky,
 * world-writable directory that another user can write (it stands for
 * /tmp), files of other users, setuid copies, symlinks swapped in while
 * CMD runs; owners and groups kept, never wider access than before.
 *
 * The other user is real: `setpriv --reuid=N --regid=N --clear-groups`
 * runs a shell as uid N without an account. These tests need root. */
#include "rt.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OTHER 54321    /* the other user (and its group) */
#define GROUP 54399    /* a group the other user is not in */

static char *dir;
static const char incr[] = "read n; echo $((n+1))";

static void setup(void)
{
	dir = hft_tmpdir();
	/* traversable by the other user; the directory itself stays root's */
	cr_assert_eq(chmod(dir, 0755), 0);
}

static void teardown(void)
{
	hft_rmtree(dir);
	free(dir);
}

TestSuite(edit_owner, .init = setup, .fini = teardown, .timeout = 60);

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip("needs root: runs commands as a second user (setpriv) and chowns files");
	if (system("command -v setpriv >/dev/null 2>&1") != 0)
		cr_skip("needs setpriv(1) (util-linux)");
}

/* Run a shell command as uid/gid OTHER (extra_groups: "" none, or
 * "--groups=G"); its exit status. */
static int as_other(const char *extra_groups, const char *cmd)
{
	char *line;
	cr_assert_geq(asprintf(&line, "setpriv --reuid=%d --regid=%d %s sh -c '%s'", OTHER, OTHER,
			       *extra_groups ? extra_groups : "--clear-groups", cmd),
		      0);
	int st = system(line);
	free(line);
	cr_assert(WIFEXITED(st), "as uid %d: %s", OTHER, cmd);
	return WEXITSTATUS(st);
}

/* The binary under test where the other user can run it: a copy in the
 * test's directory (the clone may sit where only root can enter - a 0700
 * home, a mktemp -d directory). The CLI is linked statically. */
static char *bin_for_other(void)
{
	char *copy = rt_path(dir, "holdfast"), *cmd;
	if (!hft_exists(copy)) {
		cr_assert_geq(asprintf(&cmd, "cp '%s' '%s' && chmod 0755 '%s'", hft_bin(), copy, copy),
			      0);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		free(cmd);
	}
	return copy;
}

/* holdfast ARGS as uid OTHER; exit status, stderr in *err (malloc'd). */
static int edit_as_other(const char *extra_groups, const char *args, char **err)
{
	char *errf = rt_path(dir, "other.err"), *cmd, *bin = bin_for_other();
	hft_write(errf, "");
	cr_assert_eq(chown(errf, OTHER, OTHER), 0);
	cr_assert_geq(asprintf(&cmd, "\"%s\" %s 2>\"%s\"", bin, args, errf), 0);
	free(bin);
	/* the command is single-quoted for as_other: keep ' out of args */
	cr_assert_null(strchr(args, '\''));
	int rc = as_other(extra_groups, cmd);
	*err = hft_slurp(errf);
	unlink(errf);
	free(errf);
	free(cmd);
	return rc;
}

static char *sticky_dir(void)
{
	char *t = rt_path(dir, "tmp");
	cr_assert_eq(mkdir(t, 0700), 0);
	cr_assert_eq(chmod(t, 01777), 0);
	return t;
}

/* The report: another user puts a setuid copy of `id` at FILE in
 * /tmp; root's edit must refuse it (77, naming FILE and its owner), never
 * run CMD, and never leave a root-owned setuid file behind. */
Test(edit_owner, attackers_setuid_copy_in_tmp_refused)
{
	need_root();
	char *t = sticky_dir(), *F = rt_path(t, "state"), *marker = rt_path(dir, "ran"), *cmd;
	cr_assert_geq(asprintf(&cmd, "cp /usr/bin/id %s && chmod 6777 %s", F, F), 0);
	cr_assert_eq(as_other("", cmd), 0);
	free(cmd);
	struct stat st;
	cr_assert_eq(stat(F, &st), 0);
	cr_assert_eq(st.st_uid, (uid_t)OTHER);
	cr_assert_eq(st.st_mode & 07777, 06777, "the other user's setuid copy: %o", st.st_mode);
	char script[256], *err;
	snprintf(script, sizeof script, "touch '%s'; cat", marker);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", F, "--", "sh", "-c", script)), 77);
	cr_assert(strstr(err, F), "names FILE: %s", err);
	char owner[32];
	snprintf(owner, sizeof owner, "uid %d", OTHER);
	cr_assert(strstr(err, owner), "names its owner: %s", err);
	free(err);
	cr_assert_not(hft_exists(marker), "CMD never ran");
	cr_assert_eq(stat(F, &st), 0);
	cr_assert_eq(st.st_uid, (uid_t)OTHER, "not replaced by a root-owned file");
	cr_assert_eq(hft_count_prefix(t, "state.tmp-"), 0);
	free(t);
	free(F);
	free(marker);
}

/* In a directory others can write, root's own FILE is refused when it is
 * writable by group or others, or has another hard link; private and
 * single, it is edited and stays root's and private. */
Test(edit_owner, writable_or_linked_file_in_tmp_refused)
{
	need_root();
	char *t = sticky_dir(), *W = rt_path(t, "w"), *G = rt_path(t, "g"), *L = rt_path(t, "l"),
	     *L2 = rt_path(t, "l2"), *P = rt_path(t, "p"), *err;
	hft_write(W, "w\n");
	cr_assert_eq(chmod(W, 0666), 0);
	hft_write(G, "g\n");
	cr_assert_eq(chmod(G, 0620), 0);
	hft_write(L, "l\n");
	cr_assert_eq(chmod(L, 0600), 0);
	cr_assert_eq(link(L, L2), 0);
	hft_write(P, "p\n");
	cr_assert_eq(chmod(P, 0600), 0);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", W, "--", "sh", "-c", "cat; echo x")), 77);
	cr_assert(strstr(err, "writable by everyone") && strstr(err, W), "%s", err);
	free(err);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", G, "--", "sh", "-c", "cat; echo x")), 77);
	cr_assert(strstr(err, "writable by its group"), "%s", err);
	free(err);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", L, "--", "sh", "-c", "cat; echo x")), 77);
	cr_assert(strstr(err, "hard links"), "%s", err);
	free(err);
	const char *const files[] = { W, G, L };
	const char *const was[] = { "w\n", "g\n", "l\n" };
	for (int i = 0; i < 3; i++) {
		char *s = hft_slurp(files[i]);
		cr_assert_str_eq(s, was[i], "%s untouched", files[i]);
		free(s);
	}
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", P, "--", "sh", "-c", "cat; echo x")), 0,
		     "%s", err);
	free(err);
	char *s = hft_slurp(P);
	cr_assert_str_eq(s, "p\nx\n");
	free(s);
	struct stat st;
	cr_assert_eq(stat(P, &st), 0);
	cr_assert_eq(st.st_uid, 0u);
	cr_assert_eq(st.st_mode & 07777, 0600);
	free(t);
	free(W);
	free(G);
	free(L);
	free(L2);
	free(P);
}

/* The other user swaps a symlink in at FILE (their directory) while root's
 * CMD runs: the commit is refused (77), the symlink stays as they left it,
 * and no root-owned file with the symlink's 0777 appears. */
Test(edit_owner, symlink_swapped_in_during_the_edit_refused)
{
	need_root();
	char *D = rt_path(dir, "theirs"), *F = rt_path(D, "f"), *T = rt_path(dir, "target"), *cmd;
	cr_assert_eq(mkdir(D, 0755), 0);
	cr_assert_eq(chown(D, OTHER, OTHER), 0);
	hft_write(F, "1\n");
	cr_assert_eq(chmod(F, 0600), 0);
	hft_write(T, "t\n");
	cr_assert_eq(chmod(T, 0644), 0);
	struct hft_child c;
	hft_spawn_cli(&c, "pause:edit.output.read",
		      RT_ARGV("edit", F, "--", "sh", "-c", "read n; echo $((n+1))"), NULL);
	hft_expect(&c, "edit.output.read");
	cr_assert_geq(asprintf(&cmd, "ln -s %s %s.new && mv -T %s.new %s", T, F, F, F), 0);
	cr_assert_eq(as_other("", cmd), 0, "the other user swaps the symlink in");
	free(cmd);
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 77);
	char *err = hft_read_all(c.err_rd);
	cr_assert(strstr(err, "replaced") && strstr(err, F), "%s", err);
	free(err);
	close(c.out_rd);
	close(c.err_rd);
	struct stat st;
	cr_assert_eq(lstat(F, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the symlink is left as it was");
	cr_assert_eq(st.st_uid, (uid_t)OTHER);
	cr_assert_eq(stat(T, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0644, "its target's mode is untouched");
	char *s = hft_slurp(T);
	cr_assert_str_eq(s, "t\n", "and its content");
	free(s);
	cr_assert_eq(hft_count_prefix(D, "f.tmp-"), 0, "no replacement left behind");
	free(D);
	free(F);
	free(T);
}

/* Root edits a file of another user in a directory nobody else can write:
 * the owner and the group are kept, and so is the mode. Root's own setuid
 * file loses its setuid bits (noted on stderr). */
Test(edit_owner, root_keeps_owner_and_group_never_setuid)
{
	need_root();
	char *F = rt_path(dir, "theirs"), *S = rt_path(dir, "suid"), *err;
	hft_write(F, "1\n");
	cr_assert_eq(chown(F, OTHER, GROUP), 0);
	cr_assert_eq(chmod(F, 0640), 0);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", F, "--", "sh", "-c", incr)), 0, "%s",
		     err);
	free(err);
	struct stat st;
	cr_assert_eq(stat(F, &st), 0);
	cr_assert_eq(st.st_uid, (uid_t)OTHER, "owner kept: %u", st.st_uid);
	cr_assert_eq(st.st_gid, (gid_t)GROUP, "group kept: %u", st.st_gid);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode kept: %o", st.st_mode & 07777);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "2\n");
	free(s);
	hft_write(S, "1\n");
	cr_assert_eq(chmod(S, 06755), 0);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("edit", S, "--", "sh", "-c", incr)), 0);
	cr_assert(strstr(err, "setuid"), "noted: %s", err);
	free(err);
	cr_assert_eq(stat(S, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0755, "no setuid/setgid: %o", st.st_mode & 07777);
	free(F);
	free(S);
}

/* Another user edits its own file whose group it is not in: the group
 * cannot be kept, so the group's permissions go (never wider access than
 * before); in the group, the group is kept. A file of someone else is
 * refused (77). */
Test(edit_owner, user_keeps_group_when_allowed_else_drops_its_rights)
{
	need_root();
	char *D = rt_path(dir, "home"), *F = rt_path(D, "f"), *R = rt_path(D, "roots"), *err,
	     *args;
	cr_assert_eq(mkdir(D, 0755), 0);
	cr_assert_eq(chown(D, OTHER, OTHER), 0);
	hft_write(F, "1\n");
	cr_assert_eq(chown(F, OTHER, GROUP), 0);
	cr_assert_eq(chmod(F, 0660), 0);
	cr_assert_geq(asprintf(&args, "edit %s -- sh -c \"read n; echo \\$((n+1))\"", F), 0);
	cr_assert_eq(edit_as_other("", args, &err), 0, "%s", err);
	cr_assert(strstr(err, "cannot be kept"), "noted: %s", err);
	free(err);
	struct stat st;
	cr_assert_eq(stat(F, &st), 0);
	cr_assert_eq(st.st_uid, (uid_t)OTHER);
	cr_assert_eq(st.st_gid, (gid_t)OTHER, "the user's own group: %u", st.st_gid);
	cr_assert_eq(st.st_mode & 07777, 0600, "no group rights for a group that changed: %o",
		     st.st_mode & 07777);

	cr_assert_eq(chown(F, OTHER, GROUP), 0);
	cr_assert_eq(chmod(F, 0660), 0);
	char groups[32];
	snprintf(groups, sizeof groups, "--groups=%d", GROUP);
	cr_assert_eq(edit_as_other(groups, args, &err), 0, "%s", err);
	free(err);
	cr_assert_eq(stat(F, &st), 0);
	cr_assert_eq(st.st_gid, (gid_t)GROUP, "a member keeps the group");
	cr_assert_eq(st.st_mode & 07777, 0660);
	char *s = hft_slurp(F);
	cr_assert_str_eq(s, "3\n");
	free(s);
	free(args);

	hft_write(R, "r\n");
	cr_assert_eq(chmod(R, 0644), 0);
	cr_assert_geq(asprintf(&args, "edit %s -- cat", R), 0);
	cr_assert_eq(edit_as_other("", args, &err), 77, "%s", err);
	cr_assert(strstr(err, "uid 0"), "names the owner: %s", err);
	free(err);
	free(args);
	free(D);
	free(F);
	free(R);
}
