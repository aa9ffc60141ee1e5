/*
 * test_run.c - `holdfast run --session` and `run --scope` on etcd, from
 * real shells: the session lane and the scope are etcd's (no file made),
 * refused naming the holder, seen by CMD, released when CMD ends (CMD's
 * status passed through); the leases kept alive while CMD runs past their
 * TTL, and gone after their TTL when run is SIGKILLed.
 */
#include "et.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

ET_SUITE(etcd_run, 240);

/* run --session LANE on etcd: another lane's session (a `session take`,
 * another run) refuses it naming the holder; CMD sees its own session;
 * released when CMD ends, so a second run gets it; no .session.lock made. */
static void run_session(const char *sh)
{
	struct et_out r = et_run(
		sh,
		"H=$HOLDFAST_BIN\n"
		"\"$H\" session take --lane X >/dev/null 2>&1 || exit 10\n"
		"\"$H\" run --session L -n -- echo never 2>held.err; echo \"held=$?\"\n"
		"\"$H\" session release --lane X 2>/dev/null || exit 11\n"
		"\"$H\" run --session L -- sh -c '\"$HOLDFAST_BIN\" session status\n"
		"  \"$HOLDFAST_BIN\" run --session M -n -- echo never 2>inner.err; echo \"inner=$?\"\n"
		"  \"$HOLDFAST_BIN\" session take --lane M 2>take.err; echo \"take=$?\"; exit 7'\n"
		"echo \"run=$?\"\n"
		"\"$H\" session status\n"
		"\"$H\" run --session M -n --json -- true; echo \"second=$?\"\n"
		"test -e .session.lock && echo made-a-file\n"
		"cat held.err inner.err take.err >&2\n");
	char *out = r.out, *err = r.err;
	ET_HAS(out, "held=1\n", "held by L", "inner=1\n", "take=1\n", "run=7\n", "\nfree\n",
	       "second=0\n");
	cr_assert_null(strstr(out, "never"), "CMD ran though refused: %s", out);
	cr_assert_null(strstr(out, "made-a-file"), "the session is etcd's only: %s", out);
	ET_HAS(err, "is held by lane X (pid ", "is held by lane L (pid ", "held by lane L");
	/* --json: the session record, etcd's (backend, key), and CMD's exit */
	char *j = strstr(out, "{\"session\"");
	cr_assert_not_null(j, "%s", out);
	json_t *o = json_loads(j, JSON_DISABLE_EOF_CHECK, NULL);
	json_t *s = json_object_get(o, "session");
	cr_assert_str_eq(json_string_value(json_object_get(s, "lane")), "M", "%s", j);
	cr_assert_str_eq(json_string_value(json_object_get(s, "backend")), "etcd", "%s", j);
	cr_assert(strstr(json_string_value(json_object_get(s, "key")), "/holdfast/session/"), "%s", j);
	cr_assert_not_null(json_object_get(s, "file"), "%s", j);
	cr_assert_eq(json_integer_value(json_object_get(o, "exit")), 0, "%s", j);
	json_decref(o);
	et_out_free(&r);
}

ET_EACH_SHELL(etcd_run, session, run_session)

/* run --scope on etcd: a `scope register` of an overlapping spec refuses
 * it naming the holder, and it refuses such a registration while CMD runs;
 * CMD sees its pod in etcd's registry (HOLDFAST_POD); released when CMD
 * ends, CMD's status passed through; the file registry is never made. */
static void run_scope(const char *sh)
{
	pid_t owner = et_sleeper();
	struct et_out r = et_run(
		sh,
		"H=$HOLDFAST_BIN\n"
		"export HOLDFAST_REGISTRY=\"$PWD/reg/scope.lock\"\n"
		"mkdir -p p/a/b p/a/c\n"
		"\"$H\" scope register S \"$PWD/p/a:write:recursive\" --pid %d >/dev/null || exit 10\n"
		"\"$H\" run --scope \"$PWD/p/a/b:write\" -n -- echo never 2>c1.err; echo \"conflict=$?\"\n"
		"\"$H\" run --scope \"$PWD/p/a/b:write\" -w 0.5 -- echo never 2>c3.err; echo \"waited=$?\"\n"
		"\"$H\" run --scope \"$PWD/p/x:write\" -- echo free-ran 2>c4.err; echo \"free=$?\"\n"
		"\"$H\" scope release S >/dev/null 2>&1 || exit 11\n"
		"\"$H\" run --scope \"$PWD/p/a:write:recursive\" --name R -n --json -- sh -c '\n"
		"  echo \"pod=$HOLDFAST_POD\"; \"$HOLDFAST_BIN\" scope list\n"
		"  HOLDFAST_POD= \"$HOLDFAST_BIN\" scope register T \"$PWD/p/a/c:write\" --pid %d "
		"2>c2.err; echo \"inner=$?\"; exit 5'\n"
		"echo \"run=$?\"\n"
		"\"$H\" scope list\n"
		"\"$H\" scope register T2 \"$PWD/p/a:write\" --pid %d >/dev/null; echo \"after=$?\"\n"
		"test -e reg && echo made-a-registry\n"
		"cat c1.err c2.err c3.err c4.err >&2\n",
		(int)owner, (int)owner, (int)owner);
	char *out = r.out, *err = r.err;
	/* a wait on etcd (by the watch) times out naming the holder; a free
	 * scope without -n waits for nothing */
	ET_HAS(out, "waited=1\n", "free-ran\n", "free=0\n");
	ET_HAS(out, "conflict=1\n", "pod=R\n", "inner=1\n", "run=5\n", "after=0\n",
	       "\"scope\":{\"name\":\"R\"", "\"exit\":5");
	cr_assert_null(strstr(out, "never"), "CMD ran though refused: %s", out);
	cr_assert_null(strstr(out, "made-a-registry"), "the scope is etcd's only: %s", out);
	/* inside: R in etcd's registry; after: R gone, T2 there */
	char *in = strstr(out, "pod=R\n"), *after = strstr(out, "run=5\n");
	cr_assert(in && after && after > in, "%s", out);
	cr_assert(strstr(in, "etcd://") && strstr(in, "  R "), "R not in etcd's registry: %s", out);
	cr_assert_null(strstr(after, "  R "), "R outlived CMD: %s", after);
	ET_HAS(err, "S", "R");
	char want[64];
	snprintf(want, sizeof want, "pid %d", (int)owner);
	ET_HAS(err, want);
	et_out_free(&r);
	et_reap(owner);
}

ET_EACH_SHELL(etcd_run, scope, run_scope)

/* A line from fd (CMD's stdout), waiting at most ms: its value (a pid). */
static long read_line(int fd, int ms)
{
	char buf[64];
	size_t n = 0;
	int64_t until = et_mono_ms() + ms;
	while (n < sizeof buf - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(until - et_mono_ms());
		cr_assert_gt(left, 0, "no line from CMD in %d ms", ms);
		if (poll(&p, 1, left) != 1)
			continue;
		ssize_t k = read(fd, buf + n, 1);
		cr_assert_eq(k, 1, "CMD's output ended");
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return atol(buf);
}

/* Wait (CLOCK_MONOTONIC, bounded) until ms have passed. */
static void pass_ms(int64_t ms)
{
	int64_t until = et_mono_ms() + ms;
	while (et_mono_ms() < until) {
		struct timespec t = { 0, 50 * 1000000L };
		nanosleep(&t, NULL);
	}
}

static char *cli_out(const char *const *argv, int *st)
{
	char *out = NULL;
	*st = hft_cli(&out, NULL, argv);
	return out;
}

/* `run --scope SPEC --name NAME --lock LOCK --ttl 2s -n` on E with CMD a
 * `sleep 1000` that prints its pid first: run in *c, CMD's pid. */
static pid_t run_sleeper(struct hft_child *c, const char *name, const char *lock,
			 const char *spec)
{
	const char *argv[] = { hft_bin(), "run", "--scope", spec, "--name", name, "--lock", lock,
			       "--ttl", "2s", "-n", "--backend", E.uri, "--", "sh", "-c",
			       "echo $$; exec sleep 1000", NULL };
	hft_spawn_cmd(c, argv, NULL);
	pid_t cmd = (pid_t)read_line(c->out_rd, 60000);
	cr_assert_gt(cmd, 0);
	return cmd;
}

/* While CMD runs past the leases' TTL (2 s; 3 TTLs pass), run's handles keep
 * the scope and the lock alive; CMD's end releases both. */
Test(etcd_run, leases_kept_while_cmd_runs)
{
	char *lock = et_fmt("%s/k.lock", et_dir), *spec = et_fmt("%s:write", et_dir);
	struct hft_child c;
	pid_t cmd = run_sleeper(&c, "K", lock, spec);
	pass_ms(6000);
	const char *list[] = { "holdfast", "scope", "list", "--backend", E.uri, NULL };
	const char *check[] = { "holdfast", "lock", "check", lock, "--backend", E.uri, NULL };
	int st;
	char *out = cli_out(list, &st);
	cr_assert(st == 0 && out && strstr(out, "  K "), "the scope went while CMD ran: %s", out);
	free(out);
	free(cli_out(check, &st));
	cr_assert_eq(st, 0, "the lock went while CMD ran");
	cr_assert_eq(kill(cmd, SIGTERM), 0);
	st = et_exit_within(c.pid, 60000);
	cr_assert_eq(st, 128 + SIGTERM, "run: %d", st);
	out = cli_out(list, &st);
	cr_assert(st == 0 && out && !strstr(out, "  K "), "the scope outlived CMD: %s", out);
	free(out);
	free(cli_out(check, &st));
	cr_assert_eq(st, 69, "the lock outlived CMD");
	close(c.out_rd);
	close(c.err_rd);
	free(lock);
	free(spec);
}

/* run SIGKILLed while CMD lives on: nobody keeps the leases alive, so the
 * scope and the lock go after their TTL (2 s; bounded by 60 s) - though
 * their owner, CMD, still runs. */
Test(etcd_run, killed_run_holds_nothing_after_the_ttl)
{
	char *lock = et_fmt("%s/q.lock", et_dir), *spec = et_fmt("%s:write", et_dir);
	struct hft_child c;
	pid_t cmd = run_sleeper(&c, "Q", lock, spec);
	cr_assert_eq(kill(c.pid, SIGKILL), 0);
	cr_assert_eq(et_exit_within(c.pid, 30000), 128 + SIGKILL);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	const char *reg[] = { "holdfast", "scope", "register", "Z", spec, "--pid", pid, "--backend",
			      E.uri, NULL };
	const char *acq[] = { "holdfast", "lock", "acquire", lock, "-w", "60", "--pid", pid,
			      "--backend", E.uri, NULL };
	int st = 1;
	int64_t until = et_mono_ms() + 60000;
	while (st != 0) {
		cr_assert_lt(et_mono_ms(), until, "the scope of a killed run never went");
		free(cli_out(reg, &st));
		if (st != 0)
			pass_ms(200);
	}
	free(cli_out(acq, &st));
	cr_assert_eq(st, 0, "the lock of a killed run never went");
	cr_assert_eq(kill(cmd, 0), 0, "CMD died: the leases' end proves nothing");
	kill(cmd, SIGKILL);
	close(c.out_rd);
	close(c.err_rd);
	free(lock);
	free(spec);
}

/* RUN9 on etcd: CMD releases its own lock by the token its record shows
 * (as a stray script could), so its lease is gone before run releases: run
 * says the lock was lost while CMD ran and exits 1, not 0. */
Test(etcd_run, a_lock_lost_while_cmd_ran_is_not_success)
{
	char *lock = et_fmt("%s/lost.lock", et_dir);
	struct et_out r = et_run(
		"sh",
		"\"$HOLDFAST_BIN\" run --lock %s -- sh -c '"
		"t=$(\"$HOLDFAST_BIN\" lock status %s --json | sed \"s/.*\\\"token\\\":\\\"\\([0-9a-f]*\\)\\\".*/\\1/\") && "
		"\"$HOLDFAST_BIN\" lock release %s --token \"$t\"'; echo \"rc=$?\"\n",
		lock, lock, lock);
	cr_assert(strstr(r.out, "rc=1\n"), "%s\n%s", r.out, r.err);
	cr_assert(strstr(r.err, "lost while CMD ran") && strstr(r.err, lock), "%s", r.err);
	et_out_free(&r);
	free(lock);
}
