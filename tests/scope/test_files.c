/* The registry's files: permissions whatever the umask, unsafe directories
 * and files refused (77), a corrupt table refused and left untouched (65),
 * SIGKILL at every system call of an update, crash temporaries swept, the
 * lock file swapped under a locker, and the default location. */
#include "hft.h"
#include "scope_support.h"
#include "registry_fs.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(files, .timeout = 180);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))


static int reg(const char *name, const char *rel, char **err)
{
	return sc_cli(NULL, err, "scope", "register", name, sc_path(rel), "--pid",
		      sc_num(sc_owner.pid), NULL);
}


Test(files, modes_whatever_the_umask, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	umask(0);
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	struct stat st;
	cr_assert_eq(stat(sc_path("reg"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700, "directory 0%o", st.st_mode & 07777);
	cr_assert_eq(stat(sc_reg, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600, "registry 0%o", st.st_mode & 07777);
	char lock[600];
	snprintf(lock, sizeof lock, "%s.flock", sc_reg);
	cr_assert_eq(stat(lock, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600, "lock file 0%o", st.st_mode & 07777);
	umask(0277);
	cr_assert_eq(reg("B", "q:write", NULL), 0, "a tight umask does not lock us out");
	cr_assert_eq(stat(sc_reg, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600);
}

static void expect_unsafe(const char *what)
{
	char *err;
	cr_assert_eq(reg("X", "x:write", &err), 77, "%s: register must exit 77: %s", what, err);
	HAS(err, "refusing the scope registry");
	free(err);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "list", NULL), 77, "%s: list too: %s", what, err);
	free(err);
}

Test(files, unsafe_directory_refused, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	cr_assert_eq(chmod(sc_path("reg"), 0770), 0);
	expect_unsafe("group-writable directory");
	cr_assert_eq(chmod(sc_path("reg"), 0700), 0);
	cr_assert_eq(chown(sc_path("reg"), 65534, 65534), 0);
	expect_unsafe("directory of another user");
	cr_assert_eq(chown(sc_path("reg"), geteuid(), getegid()), 0);
	cr_assert_eq(rename(sc_path("reg"), sc_path("real")), 0);
	cr_assert_eq(symlink(sc_path("real"), sc_path("reg")), 0);
	expect_unsafe("symlinked directory");
}

Test(files, unsafe_files_refused, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	char lock[600], aside[600];
	snprintf(lock, sizeof lock, "%s.flock", sc_reg);
	snprintf(aside, sizeof aside, "%s.real", sc_reg);
	cr_assert_eq(chmod(sc_reg, 0666), 0);
	expect_unsafe("world-writable registry");
	cr_assert_eq(chmod(sc_reg, 0600), 0);
	cr_assert_eq(chown(sc_reg, 65534, 65534), 0);
	expect_unsafe("registry of another user");
	cr_assert_eq(chown(sc_reg, geteuid(), getegid()), 0);
	cr_assert_eq(rename(sc_reg, aside), 0);
	cr_assert_eq(symlink(aside, sc_reg), 0);
	expect_unsafe("symlinked registry");
	cr_assert_eq(unlink(sc_reg), 0);
	cr_assert_eq(rename(aside, sc_reg), 0);
	cr_assert_eq(chown(lock, 65534, 65534), 0);
	char *err;
	cr_assert_eq(reg("X", "x:write", &err), 77, "lock file of another user: %s", err);
	free(err);
	cr_assert_eq(unlink(lock), 0);
	cr_assert_eq(symlink(aside, lock), 0);
	cr_assert_eq(reg("X", "x:write", &err), 77, "symlinked lock file: %s", err);
	free(err);
	cr_assert_eq(unlink(lock), 0);
	cr_assert_eq(reg("X", "x:write", NULL), 0, "and all is well again");
}

Test(files, corrupt_registry_refused_untouched, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	const char *garbage[] = { "{\"version\":1,\"generation\":1,\"allocations\":[{\"name\":",
				  "not json at all\n", "" };
	for (size_t i = 0; i < sizeof garbage / sizeof *garbage; i++) {
		hft_write(sc_reg, garbage[i]);
		char *err;
		cr_assert_eq(reg("B", "q:write", &err), 65, "case %zu: %s", i, err);
		HAS(err, sc_reg);
		HAS(err, "corrupt");
		HAS(err, "mv ");
		HAS(err, "Nothing was changed");
		free(err);
		cr_assert_eq(sc_cli(NULL, NULL, "scope", "reap", NULL), 65);
		cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", "/q", NULL), 65);
		char *now = hft_slurp(sc_reg);
		cr_assert_str_eq(now, garbage[i], "case %zu: left untouched", i);
		free(now);
	}
}

Test(files, crash_temporaries_swept, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp-0123456789abcdef", sc_reg);
	hft_write(tmp, "{\"half");
	cr_assert_eq(reg("B", "q:write", NULL), 0);
	cr_assert(!hft_exists(tmp));
}

/* Is the token of live file `file` (a name in the registry's directory)
 * named by the table text? */
static bool named_by(const char *table, const char *file)
{
	const char *tok = strstr(file, ".live-");
	return tok && strstr(table, tok + 6);
}

/* Putting the old table back by hand leaves the live file of a registration
 * that completed, held by its keeper: the registry never removes a held file
 * (it cannot tell a keeper from an owner), so the test does, as a release
 * would. A live file no one holds is left for the registry's sweep. */
static void drop_held_live_files(const char *table)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/reg", sc_dir);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "scope.lock.live-", 16) || named_by(table, e->d_name))
			continue;
		char p[900];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		int fd = open(p, O_RDONLY | O_NONBLOCK);
		cr_assert_geq(fd, 0);
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
			cr_assert_eq(unlink(p), 0);
		close(fd);
	}
	closedir(d);
}

/* Every live file is named by the table, and every token of the table has
 * its file: no orphan is left after a change. */
static void live_files_match_table(void)
{
	char *table = hft_slurp(sc_reg);
	char dir[600];
	snprintf(dir, sizeof dir, "%s/reg", sc_dir);
	int files = hft_count_prefix(dir, "scope.lock.live-"), tokens = 0;
	for (const char *p = table; (p = strstr(p, "\"token\":")); p++)
		tokens++;
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "scope.lock.live-", 16))
			cr_assert(named_by(table, e->d_name), "orphan live file %s", e->d_name);
	closedir(d);
	cr_assert_eq(files, tokens, "%d live files for %d tokens", files, tokens);
	free(table);
}

/* R2: SIGKILL at the Nth system call of an update, for every N until it
 * completes: the registry always parses and holds the old table or the new.
 * The new table is told from the old by whether `name` is in it. */
static void crash_every_step(const char *const *argv, const char *name, bool in_new,
			     long long new_gen)
{
	char *old = hft_slurp(sc_reg);
	int crashed = 0, n;
	for (n = 1; n < 400; n++) {
		drop_held_live_files(old);
		hft_write(sc_reg, old);
		char rules[32];
		snprintf(rules, sizeof rules, "crash:*:%d", n);
		struct hft_child c;
		hft_spawn_cli(&c, rules, argv, NULL);
		int rc = hft_wait(&c);
		close(c.out_rd);
		close(c.err_rd);
		json_t *root = sc_registry_json(); /* parses, whatever happened */
		bool is_new = (sc_alloc(root, name) != NULL) == in_new;
		long long gen = json_integer_value(json_object_get(root, "generation"));
		json_decref(root);
		char *now = hft_slurp(sc_reg);
		if (!is_new)
			cr_assert_str_eq(now, old, "N=%d: the old table, byte for byte", n);
		else
			cr_assert_eq(gen, new_gen, "N=%d: the new table", n);
		free(now);
		cr_assert_eq(sc_cli(NULL, NULL, "scope", "list", NULL), 0, "N=%d: readable", n);
		if (rc == 0) {
			cr_assert(is_new, "N=%d: completed, so the table is the new one", n);
			break;
		}
		cr_assert_eq(rc, 128 + SIGKILL, "N=%d: exit %d", n, rc);
		crashed++;
	}
	cr_assert_lt(n, 400, "the update completes eventually");
	cr_assert_gt(crashed, 10, "it was killed at many steps (%d)", crashed);
	free(old);
}

Test(files, sigkill_at_every_step_of_register, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	cr_assert_eq(reg("A", "p:write:recursive", NULL), 0);
	const char *argv[] = { "holdfast", "scope", "register", "B", sc_path("q:write"),
			       "--pid", sc_num(sc_owner.pid), NULL };
	crash_every_step(argv, "B", true, 2);
	/* whatever a crash left behind is swept by the next change */
	cr_assert_eq(reg("C", "r:write", NULL), 0);
	char dir[600];
	snprintf(dir, sizeof dir, "%s/reg", sc_dir);
	cr_assert_eq(hft_count_prefix(dir, "scope.lock.tmp-"), 0);
	live_files_match_table(); /* R9: crash orphans swept, entries' files kept */
}

Test(files, sigkill_at_every_step_of_release, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	cr_assert_eq(reg("A", "p:write:recursive", NULL), 0);
	cr_assert_eq(reg("B", "q:write", NULL), 0);
	const char *argv[] = { "holdfast", "scope", "release", "B", NULL };
	crash_every_step(argv, "B", false, 3);
}

/* R1: the lock file is deleted and recreated between a locker's open and
 * its flock; the locker must notice and lock the file now at the name, or
 * the two writers would both think they hold the lock (a lost update). */
Test(files, lock_file_swapped_under_a_locker, .init = sc_setup_owned, .fini = sc_teardown_owned)
{
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	char lock[600];
	snprintf(lock, sizeof lock, "%s.flock", sc_reg);
	const char *argv1[] = { "holdfast", "scope", "register", "B", sc_path("b:write"), "--pid",
				sc_num(sc_owner.pid), NULL };
	const char *argv2[] = { "holdfast", "scope", "register", "C", sc_path("c:write"), "--pid",
				sc_num(sc_owner.pid), NULL };
	struct hft_child b, c;
	hft_spawn_cli(&b, "pause:flock:1;pause:flock:2", argv1, NULL);
	hft_expect(&b, "flock"); /* B opened the old lock file */
	cr_assert_eq(unlink(lock), 0);
	hft_spawn_cli(&c, "pause:scope.register.judged", argv2, NULL);
	hft_expect(&c, "scope.register.judged"); /* C holds the new lock file */
	hft_go(&b);
	hft_expect(&b, "flock"); /* B saw the swap and goes for the new one */
	hft_go(&b);
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 0);
	cr_assert_eq(hft_wait(&b), 0);
	close(b.out_rd);
	close(b.err_rd);
	close(c.out_rd);
	close(c.err_rd);
	json_t *root = sc_registry_json();
	cr_assert_not_null(sc_alloc(root, "A"));
	cr_assert_not_null(sc_alloc(root, "B"), "B's update is there");
	cr_assert_not_null(sc_alloc(root, "C"), "C's update is not lost");
	cr_assert_eq(json_integer_value(json_object_get(root, "generation")), 3);
	json_decref(root);
}

/* One registry per tree (RG12): HOLDFAST_REGISTRY wins; else the tree's
 * git directory, wherever in the tree one asks from, whatever
 * XDG_RUNTIME_DIR or HOME say. */
Test(files, default_location, .init = sc_setup, .fini = sc_teardown)
{
	char buf[PATH_MAX], exp[PATH_MAX], git[1100], head[1200];
	setenv("HOLDFAST_REGISTRY", "/some/where/reg.json", 1);
	cr_assert_eq(hf_scopereg_path(buf, sizeof buf), 0);
	cr_assert_str_eq(buf, "/some/where/reg.json");
	unsetenv("HOLDFAST_REGISTRY");
	snprintf(git, sizeof git, "%s/.git", sc_dir);
	snprintf(head, sizeof head, "%s/HEAD", git);
	cr_assert_eq(mkdir(git, 0755), 0);
	hft_write(head, "ref: refs/heads/main\n");
	cr_assert_eq(mkdir(sc_path("a"), 0755), 0);
	cr_assert_eq(chdir(sc_path("a")), 0);
	snprintf(exp, sizeof exp, "%s/.git/holdfast/scope.lock", sc_dir);
	setenv("XDG_RUNTIME_DIR", "/run/user/1234", 1);
	setenv("HOME", "/nonexistent", 1);
	cr_assert_eq(hf_scopereg_path(buf, sizeof buf), 0);
	cr_assert_str_eq(buf, exp, "the working directory's tree, not XDG_RUNTIME_DIR");
	unsetenv("XDG_RUNTIME_DIR");
	cr_assert_eq(hf_scopereg_path_for(sc_path("a/b/not-yet"), buf, sizeof buf, NULL, 0), 0);
	cr_assert_str_eq(buf, exp);
	cr_assert_eq(hf_scopereg_path_for("../a/..", buf, sizeof buf, NULL, 0), 0);
	cr_assert_str_eq(buf, exp);
}
