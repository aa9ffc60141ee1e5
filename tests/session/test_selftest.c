/* holdfast selftest DIR: every kind (fs probes, session, dirlock, scope,
 * run, edit) on DIR's file system - /tmp and /dev/shm, a private tmpfs
 * mount - one line per check, exit 0 only when all pass; a DIR it cannot
 * write (77, its owner named; 73 absent); a DIR whose environment lacks a
 * feature (RENAME_NOREPLACE or hard links refused by fault rules; /proc of
 * another pid namespace, for real): FAIL lines naming it, exit 1. Nothing
 * is left in DIR either way. */
#include "hft.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(selftest, .timeout = 150);

#define HAS(s, sub) cr_assert(strstr((s), (sub)), "expected '%s' in:\n%s", (sub), (s))

static char *mkscratch(const char *base)
{
	char *t;
	cr_assert_geq(asprintf(&t, "%s/hft-selftest.XXXXXX", base), 0);
	cr_assert_not_null(mkdtemp(t));
	return t;
}

/* Every line "ok" (or, when !all_ok, at least one "FAIL"); each kind and
 * the named checks present. */
static void lines_ok(const char *out)
{
	int lines = 0, oks = 0;
	for (const char *l = out; *l; l = strchr(l, '\n') + 1) {
		lines++;
		oks += !strncmp(l, "ok ", 3);
		cr_assert_not_null(strchr(l, '\n'));
	}
	cr_assert_geq(lines, 35, "%s", out);
	cr_assert_eq(oks, lines, "%s", out);
	static const char *const want[] = {
		" fs:      hard-links ", " fs:      rename-noreplace ", " fs:      o-tmpfile ",
		" fs:      flock ", " fs:      inotify ", " fs:      start-times ",
		" fs:      pidns ", " session: third-taker ", " session: differential ",
		" dirlock: being-made ", " dirlock: two-reapers ", " dirlock: barrier ",
		" scope:   overlap ", " scope:   reclaim ", " run:     hold-and-pass ",
		" edit:    atomic-replace ", "renameat2 RENAME_NOREPLACE on DIR's fs",
		"atomic replace keeps the mode",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		HAS(out, want[i]);
}

static void passes_on(const char *base)
{
	char *d = mkscratch(base);
	char *out, *err;
	int st = hft_cli(&out, &err, (const char *const[]){ "holdfast", "selftest", d, NULL });
	cr_assert_eq(st, 0, "on %s: exit %d\n%s%s", base, st, out, err);
	lines_ok(out);
	HAS(err, "checks passed on");
	cr_assert_eq(hft_count_prefix(d, ""), 0, "nothing left in DIR (%s)", base);
	free(out);
	free(err);
	hft_rmtree(d);
	free(d);
}

static int64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

Test(selftest, every_kind_passes_on_tmp)
{
	passes_on("/tmp");
}

Test(selftest, every_kind_passes_on_dev_shm)
{
	passes_on("/dev/shm");
}

Test(selftest, passes_on_a_private_tmpfs)
{
	if (!hft_private_mounts())
		cr_skip_test("needs root and a private mount namespace");
	char *m = mkscratch("/tmp");
	cr_assert_eq(mount("hft", m, "tmpfs", 0, "size=8m,mode=0700"), 0, "mount tmpfs");
	char *out, *err;
	int st = hft_cli(&out, &err, (const char *const[]){ "holdfast", "selftest", m, NULL });
	/* the keepers of its `lock acquire --pid` end after it, on their
	 * owner's end (pidfd): the tmpfs is busy until they have (bounded) */
	int left, um;
	int64_t until = mono_ms() + 10000;
	while ((left = hft_count_prefix(m, ""), um = umount(m)) < 0 && errno == EBUSY &&
	       mono_ms() < until)
		usleep(20000);
	cr_assert_eq(um, 0, "umount %s: %s", m, strerror(errno));
	cr_assert_eq(st, 0, "%s%s", out, err);
	lines_ok(out);
	cr_assert_eq(left, 0, "nothing left on the tmpfs");
	free(out);
	free(err);
	hft_rmtree(m);
	free(m);
}

Test(selftest, unwritable_or_absent_dir)
{
	char *d = mkscratch("/dev/shm");
	char *err, *script;
	if (geteuid() == 0) {
		/* a real second user: nobody cannot write root's directory */
		cr_assert_eq(chmod(d, 0755), 0);
		cr_assert_geq(asprintf(&script, "setpriv --reuid=65534 --regid=65534 --clear-groups "
						"\"$HOLDFAST_BIN\" selftest '%s'",
				       d), 0);
	} else {
		cr_assert_eq(chmod(d, 0500), 0);
		cr_assert_geq(asprintf(&script, "\"$HOLDFAST_BIN\" selftest '%s'", d), 0);
	}
	cr_assert_eq(hft_sh(NULL, &err, "sh", NULL, script), 77, "%s", err);
	HAS(err, "cannot make a scratch directory in");
	HAS(err, "is owned by ");
	if (geteuid() == 0)
		HAS(err, "you are user nobody (uid 65534)");
	free(err);
	free(script);
	cr_assert_eq(hft_count_prefix(d, ""), 0);
	char *absent;
	cr_assert_geq(asprintf(&absent, "%s/absent", d), 0);
	cr_assert_eq(hft_cli(NULL, &err, (const char *const[]){ "holdfast", "selftest", absent, NULL }),
		     73);
	HAS(err, "No such file or directory");
	free(err);
	free(absent);
	chmod(d, 0700);
	hft_rmtree(d);
	free(d);
}

/* A file system without RENAME_NOREPLACE, and one without hard links, as
 * the kernel would answer (EINVAL, EPERM) for the selftest's own calls:
 * the probe names what is missing; exit 1; nothing left. */
Test(selftest, a_missing_feature_fails_naming_it)
{
	char *d = mkscratch("/dev/shm");
	static const struct {
		const char *rules, *line, *why;
	} cases[] = {
		{ "HOLDFAST_FAULTS=fail:rename:1:EINVAL:persist", " fs:      rename-noreplace ",
		  "RENAME_NOREPLACE is refused here" },
		{ "HOLDFAST_FAULTS=fail:link:1:EPERM:persist", " fs:      hard-links ",
		  "no hard links here" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out, *err;
		int st = hft_cli_env(&out, &err, cases[i].rules, NULL,
				     (const char *const[]){ "holdfast", "selftest", d, NULL });
		cr_assert_eq(st, 1, "%s: exit %d\n%s%s", cases[i].rules, st, out, err);
		const char *l = strstr(out, cases[i].line);
		cr_assert(l && !strncmp(l - 7, "FAIL", 4), "FAIL line for %s:\n%s", cases[i].line,
			  out);
		HAS(out, cases[i].why);
		cr_assert_eq(hft_count_prefix(d, ""), 0, "nothing left: %s", cases[i].rules);
		free(out);
		free(err);
	}
	hft_rmtree(d);
	free(d);
}

/* For real: a pid namespace whose /proc is still the parent's (unshare
 * --pid without --mount-proc) - liveness from /proc would judge the wrong
 * processes. The pidns probe fails, naming it. */
Test(selftest, proc_of_another_pid_namespace_fails)
{
	if (hft_sh(NULL, NULL, "sh", NULL, "unshare --pid --fork true") != 0)
		cr_skip_test("unshare --pid is not allowed here");
	char *d = mkscratch("/dev/shm");
	char *script, *out, *err;
	cr_assert_geq(asprintf(&script, "unshare --pid --fork \"$HOLDFAST_BIN\" selftest '%s'", d),
		      0);
	int st = hft_sh(&out, &err, "sh", NULL, script);
	cr_assert_eq(st, 1, "%s%s", out, err);
	const char *l = strstr(out, " fs:      pidns ");
	cr_assert(l && !strncmp(l - 7, "FAIL", 4), "%s", out);
	HAS(out, "/proc belongs to another pid namespace");
	cr_assert_eq(hft_count_prefix(d, ""), 0, "nothing left");
	free(script);
	free(out);
	free(err);
	hft_rmtree(d);
	free(d);
}
