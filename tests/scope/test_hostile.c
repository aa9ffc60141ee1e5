/* Hostile files and stuck holders:
 * nothing the registry opens may block or be read before it is known to be
 * a regular file of ours (a FIFO or a device at the table, lock or live
 * file path), the registry never writes a generation it would refuse to
 * read, and a process stopped while holding the registry's lock holds up
 * everyone else for a bounded time only, named. */
#include "hft.h"
#include "scope_support.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>



TestSuite(hostile, .init = sc_setup_owned, .fini = sc_teardown_owned, .timeout = 60);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

static int reg(const char *name, const char *rel, char **err)
{
	return sc_cli(NULL, err, "scope", "register", name, sc_path(rel), "--pid",
		      sc_num(sc_owner.pid), NULL);
}

/* Run holdfast ARGV; it must end within 10 s (a blocked open would not):
 * its exit code; stdout/stderr in *out / *err (may be NULL). */
static int bounded(char **out, char **err, const char *const *argv)
{
	struct hft_child c;
	hft_spawn_cli(&c, NULL, argv, NULL);
	int code = sc_wait_within(c.pid, 10000);
	if (code < 0)
		kill(c.pid, SIGKILL);
	cr_assert_geq(code, 0, "holdfast %s %s did not end: it blocked", argv[1], argv[2]);
	char *o = hft_read_all(c.out_rd), *e = hft_read_all(c.err_rd);
	close(c.out_rd);
	close(c.err_rd);
	close(c.notify_rd);
	close(c.go_wr);
	if (out)
		*out = o;
	else
		free(o);
	if (err)
		*err = e;
	else
		free(e);
	return code;
}

Test(hostile, fifo_or_device_at_the_table_or_lock_path_refused_without_blocking)
{
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	char aside[600], lock[600], *err;
	snprintf(aside, sizeof aside, "%s.aside", sc_reg);
	snprintf(lock, sizeof lock, "%s.flock", sc_reg);
	const char *reg_b[] = { "holdfast", "scope", "register", "B", sc_path("q:write"), "--pid",
				sc_num(sc_owner.pid), NULL };
	const char *list[] = { "holdfast", "scope", "list", NULL };

	cr_assert_eq(rename(sc_reg, aside), 0);
	cr_assert_eq(mkfifo(sc_reg, 0600), 0);
	cr_assert_eq(bounded(NULL, &err, reg_b), 77, "%s", err);
	HAS(err, "is a FIFO, not a regular file");
	free(err);
	cr_assert_eq(bounded(NULL, &err, list), 77, "%s", err);
	free(err);
	cr_assert_eq(unlink(sc_reg), 0);
	if (geteuid() == 0) {
		/* /dev/zero's numbers: read first, it would give 256 MiB of
		 * zeros before anyone looked at what it is */
		cr_assert_eq(mknod(sc_reg, S_IFCHR | 0600, makedev(1, 5)), 0);
		cr_assert_eq(bounded(NULL, &err, reg_b), 77, "%s", err);
		HAS(err, "is a device, not a regular file");
		free(err);
		cr_assert_eq(unlink(sc_reg), 0);
	}
	cr_assert_eq(rename(aside, sc_reg), 0);

	cr_assert_eq(unlink(lock), 0);
	cr_assert_eq(mkfifo(lock, 0600), 0);
	cr_assert_eq(bounded(NULL, &err, reg_b), 77, "%s", err);
	HAS(err, "the lock file is a FIFO");
	free(err);
	cr_assert_eq(unlink(lock), 0);
	cr_assert_eq(bounded(NULL, &err, reg_b), 0, "all is well again: %s", err);
	free(err);
}

/* A live file replaced by a FIFO: a judge outside the owner's namespace
 * must open it to probe; it never blocks, and a FIFO proves nothing (the
 * owner stays alive). A FIFO named like an orphan live file is left alone. */
Test(hostile, fifo_at_a_live_file_path_proves_nothing_and_never_blocks)
{
	cr_assert_eq(reg("A", "p:write:recursive", NULL), 0);
	json_t *root = sc_registry_json();
	json_t *a = sc_alloc(root, "A");
	/* an owner of a pid namespace we cannot know: judged by its file */
	json_object_set_new(a, "pidns", json_integer(HF_PIDNS_UNKNOWN));
	char live[700];
	snprintf(live, sizeof live, "%s.live-%s", sc_reg,
		 json_string_value(json_object_get(a, "token")));
	cr_assert_eq(json_dump_file(root, sc_reg, 0), 0);
	json_decref(root);
	cr_assert_eq(unlink(live), 0);
	cr_assert_eq(mkfifo(live, 0600), 0);
	char orphan[700];
	snprintf(orphan, sizeof orphan, "%s.live-0123456789abcdef0123456789abcdef", sc_reg);
	cr_assert_eq(mkfifo(orphan, 0600), 0);

	char *out, *err;
	const char *list[] = { "holdfast", "scope", "list", "--json", NULL };
	cr_assert_eq(bounded(&out, &err, list), 0, "%s", err);
	HAS(out, "\"live\":true");
	free(out);
	free(err);
	const char *reg_b[] = { "holdfast", "scope", "register", "B", sc_path("p/x:write"),
				"--pid", sc_num(sc_owner.pid), NULL };
	cr_assert_eq(bounded(NULL, &err, reg_b), 1, "A is not provably dead: %s", err);
	HAS(err, "of A (pid ");
	free(err);
	cr_assert(hft_exists(orphan), "a FIFO is not ours to remove");
	cr_assert(hft_exists(live));
}

/* R10: the generation is a JSON integer jansson reads up to 2^63-1. The
 * registry once wrote 2^63 and then refused its own file. */
Test(hostile, generation_limit_refused_not_written)
{
	cr_assert_eq(reg("seed", "seed:write", NULL), 0); /* the directory */
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "release", "seed", NULL), 0);
	hft_write(sc_reg, "{\"version\":1,\"generation\":9223372036854775806,\"allocations\":[]}\n");
	char *out, *err;
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "A", sc_path("p:write"), "--pid",
			    sc_num(sc_owner.pid), "--json", NULL),
		     0, "%s", err);
	HAS(out, "\"generation\":9223372036854775807");
	free(out);
	free(err);
	char *before = hft_slurp(sc_reg);
	cr_assert_eq(reg("B", "q:write", &err), 65, "the next one would be 2^63: %s", err);
	HAS(err, "2^63-1");
	HAS(err, "nothing was changed");
	free(err);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "release", "A", NULL), 65, "%s", err);
	free(err);
	char *after = hft_slurp(sc_reg);
	cr_assert_str_eq(before, after, "the table is untouched");
	free(before);
	free(after);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "list", NULL), 0, "and still readable");
	HAS(out, "generation 9223372036854775807");
	free(out);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A holdfast stopped (Ctrl-Z, SIGSTOP) while it holds the registry's lock:
 * the next change waits a bounded time, then says who holds it. */
Test(hostile, stopped_holder_of_the_registry_lock_is_named_not_waited_for)
{
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	const char *argv[] = { "holdfast", "scope", "register", "X", sc_path("x:write"), "--pid",
			       sc_num(sc_owner.pid), NULL };
	struct hft_child x;
	hft_spawn_cli(&x, "pause:scope.register.judged", argv, NULL);
	hft_expect(&x, "scope.register.judged"); /* X holds the registry's lock */
	cr_assert_eq(kill(x.pid, SIGSTOP), 0);
	char *err;
	double t0 = now_s();
	cr_assert_eq(reg("Y", "y:write", &err), 1, "refused, not hung: %s", err);
	double took = now_s() - t0;
	cr_assert_geq(took, HF_SCOPE_LOCK_WAIT_MS / 1000.0, "it waited the bound (%.2f s)", took);
	char who[64];
	snprintf(who, sizeof who, "by pid %d (holdfast, stopped)", (int)x.pid);
	HAS(err, who);
	HAS(err, "is busy");
	free(err);
	cr_assert_eq(kill(x.pid, SIGCONT), 0);
	hft_go(&x);
	cr_assert_eq(hft_wait(&x), 0, "X completes once continued");
	close(x.out_rd);
	close(x.err_rd);
	cr_assert_eq(reg("Y", "y:write", NULL), 0, "and Y gets in now");
}

Test(hostile, numbers_are_decimal_digits)
{
	/* strtoull took " 6" and "+6" for --generation and --pid */
	cr_assert_eq(reg("A", "p:write", NULL), 0);
	static const char *const bad[] = { "+1", " 1", "1 ", "0x1", "-1" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		cr_assert_eq(sc_cli(NULL, &err, "scope", "release", "A", "--generation", bad[i], NULL),
			     64, "--generation '%s': %s", bad[i], err);
		free(err);
		cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "B", sc_path("q:write"), "--pid",
				    bad[i], NULL),
			     64, "--pid '%s': %s", bad[i], err);
		free(err);
	}
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "release", "A", "--generation", "1", NULL), 0,
		     "the generation as register printed it");
}
