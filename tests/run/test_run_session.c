/* holdfast run --session LANE: the session lock of the work tree held while
 * CMD runs, released after; a conflict names the lane; -w waits for a
 * release. Each test runs in its own scratch directory (no git work tree
 * above it), so the session lock is ./.session.lock there. */
#include "rt.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;

static void setup(void)
{
	dir = hft_tmpdir();
	cr_assert_eq(chdir(dir), 0);
}

static void teardown(void)
{
	if (chdir("/") != 0)
		return;
	hft_rmtree(dir);
	free(dir);
}

TestSuite(run_session, .init = setup, .fini = teardown, .timeout = 60);

Test(run_session, held_while_cmd_runs_then_released)
{
	char *out;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("run", "--session", "data", "--", "cat", ".session.lock")),
		     0);
	cr_assert(strstr(out, "\"lane\":\"data\""), "the lock names the lane while CMD runs: %s", out);
	free(out);
	cr_assert_not(hft_exists(".session.lock"), "released when CMD ended");
	cr_assert_eq(hft_count_prefix(".", ".session.lock.aside-"), 0, "no aside left");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "--session", "data", "--", "sh", "-c", "exit 4")),
		     4);
	cr_assert_not(hft_exists(".session.lock"), "released when CMD failed too");
}

Test(run_session, conflict_names_lane_and_honours_E)
{
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("session", "take", "--lane", "infra")), 0);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-n", "--session", "data", "--", "touch", "ran")),
		     1);
	cr_assert(strstr(err, "lane infra"), "names the holding lane: %s", err);
	cr_assert(strstr(err, ".session.lock"), "names the path: %s", err);
	free(err);
	cr_assert_not(hft_exists("ran"));
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "-n", "-E", "3", "--session", "data", "--lock",
						 "L", "--", "touch", "ran")),
		     3);
	cr_assert_not(hft_exists("ran"));
	cr_assert(rt_lock_free("L"), "the session is taken first: no directory lock was left");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("session", "release", "--lane", "infra")), 0);
}

Test(run_session, waits_for_release)
{
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("session", "take", "--lane", "infra")), 0);
	struct hft_child w;
	hft_spawn_cli(&w, "pause:poll:1",
		      RT_ARGV("run", "-w", "3600", "--session", "data", "--", "sh", "-c", "echo got"), NULL);
	hft_expect(&w, "poll"); /* tried, watching, about to sleep */
	hft_go(&w);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("session", "release", "--lane", "infra")), 0);
	cr_assert_eq(hft_wait(&w), 0);
	char *out = hft_read_all(w.out_rd);
	cr_assert_str_eq(out, "got\n");
	free(out);
	cr_assert_not(hft_exists(".session.lock"));
}

Test(run_session, sigterm_releases_session_and_locks)
{
	struct hft_child c;
	hft_spawn_cli(&c, NULL,
		      RT_ARGV("run", "--session", "data", "--lock", "L", "--", "sh", "-c",
			      "echo ready; exec sleep 1000"),
		      NULL);
	char *line = rt_line(c.out_rd);
	cr_assert_not_null(line);
	cr_assert(hft_exists(".session.lock"));
	cr_assert_eq(kill(c.pid, SIGTERM), 0);
	cr_assert_eq(hft_wait(&c), 128 + SIGTERM);
	cr_assert_not(hft_exists(".session.lock"));
	cr_assert(rt_lock_free("L"));
	free(line);
}
