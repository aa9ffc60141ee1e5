/* Waiting (issue 3 item 7) through `holdfast run`: -n fails at once, -w
 * waits and wakes on the release, never past the deadline, and a signal
 * ends a wait with everything already acquired released. */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

HFT_SCRATCH_SUITE(wait, 60);

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* `holdfast run --lock L -- sh -c ...` as holder, holding L until
 * end_fifo_holder writes to the FIFO fifo (made here); returns once the
 * holder's CMD runs, L held. */
static void spawn_fifo_holder(struct hft_child *holder, const char *L, const char *fifo)
{
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	char script[600];
	snprintf(script, sizeof script, "echo held; read x < '%s'", fifo);
	hft_spawn_cli(holder, NULL, RT_ARGV("run", "--lock", L, "--", "sh", "-c", script), NULL);
	char *line = rt_line(holder->out_rd);
	cr_assert(line && !strcmp(line, "held"), "the holder said: %s", line ? line : "(nothing)");
	free(line);
}

/* The holder's CMD ends (told through its FIFO), so run releases L and
 * exits 0. */
static void end_fifo_holder(struct hft_child *holder, const char *fifo)
{
	int w = open(fifo, O_WRONLY);
	cr_assert_geq(w, 0);
	cr_assert_eq(write(w, "x\n", 2), 2);
	close(w);
	cr_assert_eq(hft_wait(holder), 0);
}

Test(wait, nonblock_fails_at_once)
{
	char *L = rt_path(dir, "L"), *marker = rt_path(dir, "ran");
	struct hf_lock_info held = rt_hold(L);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-n", "--lock", L, "--", "touch", marker)), 1);
	cr_assert(strstr(err, "is held by"), "stderr: %s", err);
	cr_assert_not(hft_exists(marker));
	free(err);
	rt_release(L, &held);
	free(L);
	free(marker);
}

/* A waiter with a long -w gets the lock when the holder releases it: it
 * sleeps on an inotify watch of the lock's parent and wakes on the release
 * itself (no timing is asserted; the test just finishes promptly). */
Test(wait, waiter_gets_lock_on_release)
{
	char *L = rt_path(dir, "L"), *fifo = rt_path(dir, "go");
	struct hft_child holder, waiter;
	spawn_fifo_holder(&holder, L, fifo);

	/* The waiter's first poll(2) is its first sleep after a failed try. */
	hft_spawn_cli(&waiter, "pause:poll:1",
		      RT_ARGV("run", "-w", "3600", "--lock", L, "--", "sh", "-c", "echo got"), NULL);
	hft_expect(&waiter, "poll");
	hft_go(&waiter); /* it sleeps now, the lock still held */

	end_fifo_holder(&holder, fifo);
	cr_assert_eq(hft_wait(&waiter), 0, "the waiter got the lock");
	char *out = hft_read_all(waiter.out_rd);
	cr_assert_str_eq(out, "got\n");
	free(out);
	cr_assert(rt_lock_free(L));
	free(L);
	free(fifo);
}

/* -w is a bound: the command returns 1 once the deadline passed, not before
 * (asserting only the lower bound: an upper bound would be a race). */
Test(wait, never_past_deadline)
{
	char *L = rt_path(dir, "L"), *marker = rt_path(dir, "ran");
	struct hf_lock_info held = rt_hold(L);
	char *err;
	double t0 = now_s();
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "-w", "0.3", "--lock", L, "--", "touch",
						 marker)),
		     1);
	double took = now_s() - t0;
	cr_assert_geq(took, 0.3, "returned after %.3f s, before the deadline", took);
	cr_assert(strstr(err, "timed out"), "stderr: %s", err);
	cr_assert_not(hft_exists(marker));
	free(err);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("run", "-w", "0.05", "-E", "9", "--lock", L, "--",
						 "true")),
		     9, "-E applies to a timeout too");
	rt_release(L, &held);
	free(L);
	free(marker);
}

/* A signal while waiting for the second lock ends the wait: the first lock
 * (already acquired for CMD) is released and CMD never runs. */
Test(wait, signal_ends_wait_and_releases)
{
	char *A = rt_path(dir, "A"), *B = rt_path(dir, "B"), *marker = rt_path(dir, "ran");
	struct hf_lock_info held = rt_hold(B);
	struct hft_child waiter;
	hft_spawn_cli(&waiter, "pause:poll:1",
		      RT_ARGV("run", "--lock", A, "--lock", B, "--", "touch", marker), NULL);
	hft_expect(&waiter, "poll"); /* A held, waiting for B */
	cr_assert_not(rt_lock_free(A), "A is held for the waiter's CMD");
	cr_assert_eq(kill(waiter.pid, SIGTERM), 0);
	hft_go(&waiter);
	cr_assert_eq(hft_wait(&waiter), 128 + SIGTERM);
	char *err = hft_read_all(waiter.err_rd);
	cr_assert(strstr(err, "while waiting"), "stderr: %s", err);
	free(err);
	cr_assert_not(hft_exists(marker), "CMD never ran");
	cr_assert(rt_lock_free(A), "A was released");
	struct hf_lock_info st;
	cr_assert_eq(hf_dirlock_status(B, &st), 0);
	cr_assert_str_eq(st.owner.token, held.owner.token, "B is still ours");
	rt_release(B, &held);
	free(A);
	free(B);
	free(marker);
}

/* CMD's process, forked blocked before its locks are held, is killed while
 * run waits for a lock: nothing will run and nobody is left to hold the
 * lock for, so run ends at once with that process's status instead of
 * waiting (forever, without -w). */
Test(wait, cmd_killed_while_waiting_ends_the_wait)
{
	char *L = rt_path(dir, "L"), *marker = rt_path(dir, "ran");
	struct hf_lock_info held = rt_hold(L);
	struct hft_child c;
	hft_spawn_cli(&c, "pause:dirlock.acquire.waiting",
		      RT_ARGV("run", "--lock", L, "--", "touch", marker), NULL);
	hft_expect(&c, "dirlock.acquire.waiting");
	pid_t cmd = hft_only_child(c.pid); /* run's blocked child */
	cr_assert_eq(kill(cmd, SIGKILL), 0);
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 128 + SIGKILL, "its status, at once");
	char *err = hft_read_all(c.err_rd);
	cr_assert(strstr(err, "ended") && strstr(err, "nothing ran"), "%s", err);
	cr_assert_not(hft_exists(marker));
	free(err);
	close(c.out_rd);
	close(c.err_rd);
	rt_release(L, &held);
	free(L);
	free(marker);
}

/* `lock acquire --pid SLEEPER`: the lock held for a process of our pid
 * namespace that we can kill. */
static void hold_for(const char *L, struct hft_child *sleeper)
{
	hft_spawn_cmd(sleeper, (const char *const[]){ "sleep", "3600", NULL }, NULL);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)sleeper->pid);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "acquire", L, "--pid", pid)), 0);
}

/* L held for a sleeper; a waiter `run -w 60 --lock L -- echo got` under
 * fault rules `rules` (which pause it at its second
 * dirlock.acquire.waiting: watched, about to sleep) sees the sleeper
 * killed while paused there, and must then get L and run CMD (bounded:
 * 30 s, so a broken build fails instead of hanging). */
static void waiter_runs_after_holders_death(const char *L, const char *rules)
{
	struct hft_child sleeper, waiter;
	hold_for(L, &sleeper);
	hft_spawn_cli(&waiter, rules, RT_ARGV("run", "-w", "60", "--lock", L, "--", "echo", "got"),
		      NULL);
	hft_expect(&waiter, "dirlock.acquire.waiting");
	cr_assert_eq(kill(sleeper.pid, SIGKILL), 0);
	cr_assert_eq(hft_wait(&sleeper), 128 + SIGKILL);
	hft_go(&waiter);
	cr_assert_eq(hft_exit_within(waiter.pid, 30000), 0, "the waiter got the lock");
	char *out = hft_read_all(waiter.out_rd), *err = hft_read_all(waiter.err_rd);
	cr_assert_str_eq(out, "got\n", "stderr: %s", err);
	free(out);
	free(err);
	cr_assert(rt_lock_free(L));
}

/* The holder dies while a waiter sleeps: the waiter watches its end with a
 * pidfd (wait.c, WT5), so with the backoff cap an hour (cap:wait) it still
 * wakes at once, reaps the dead holder's lock and runs CMD. Without the
 * pidfd it would sleep to its deadline (60 s) and fail; the bound below
 * only keeps a broken build from hanging. */
Test(wait, holders_death_wakes_the_waiter_by_pidfd)
{
	char *L = rt_path(dir, "L");
	waiter_runs_after_holders_death(L, "cap:wait:3600000;pause:dirlock.acquire.waiting:2");
	free(L);
}

/* The same where the kernel has no pidfd_open (ENOSYS, Linux < 5.3): the
 * waiter's next attempt after its backoff (at most 1 s) finds the holder
 * dead and gets the lock. */
Test(wait, holders_death_is_seen_without_pidfd)
{
	char *L = rt_path(dir, "L");
	waiter_runs_after_holders_death(L,
					"fail:pidfd_open:1:ENOSYS:persist;pause:dirlock.acquire.waiting:2");
	free(L);
}

/* A waiter with the cap an hour is woken by the release itself: the
 * holder's CMD ends (told through a FIFO), run releases, the waiter's
 * inotify watch fires and it runs CMD - long before its deadline. */
Test(wait, release_wakes_the_waiter_without_a_timer)
{
	char *L = rt_path(dir, "L"), *fifo = rt_path(dir, "go");
	struct hft_child holder, waiter;
	spawn_fifo_holder(&holder, L, fifo);
	hft_spawn_cli(&waiter, "cap:wait:3600000;pause:dirlock.acquire.waiting:2",
		      RT_ARGV("run", "-w", "60", "--lock", L, "--", "echo", "got"), NULL);
	hft_expect(&waiter, "dirlock.acquire.waiting");
	hft_go(&waiter); /* it sleeps now: only an event wakes it before 60 s */
	end_fifo_holder(&holder, fifo);
	cr_assert_eq(hft_exit_within(waiter.pid, 30000), 0, "the waiter got the lock");
	char *out = hft_read_all(waiter.out_rd);
	cr_assert_str_eq(out, "got\n");
	free(out);
	close(waiter.err_rd);
	free(L);
	free(fifo);
}
