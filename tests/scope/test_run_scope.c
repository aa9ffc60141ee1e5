/* `holdfast run --scope`, from outside: the allocation is CMD's while it
 * runs (HOLDFAST_POD exported), released when it ends, a nested run inside
 * CMD delegates from it, a conflict keeps CMD from running, and a SIGKILLed
 * wrapper leaves the allocation to CMD until CMD ends. */
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(run_scope, .init = sc_setup, .fini = sc_teardown, .timeout = 120);

/* A sleeper that holds p, recursively, registered as "holder". */
static void hold_p(struct sc_sleeper *s)
{
	sc_sleeper_start(s);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "register", "holder", sc_path("p:write:recursive"),
			    "--pid", sc_num(s->pid), NULL),
		     0);
}

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

static char env[1200];

static const char *hf_env(void)
{
	snprintf(env, sizeof env, "HF=%s", hft_bin());
	return env;
}

Test(run_scope, registered_while_cmd_runs_then_released)
{
	char *out, *err;
	int rc = sc_cli_env(hf_env(), &out, &err, "run", "--scope", sc_path("p:write:recursive"),
			    "--name", "job", "--", "sh", "-c",
			    "echo \"pod=$HOLDFAST_POD pid=$$\"; exec \"$HF\" scope list --json", NULL);
	cr_assert_eq(rc, 0, "%s", err);
	HAS(out, "pod=job ");
	long cmdpid = atol(strstr(out, "pid=") + 4);
	json_t *list = json_loads(strchr(out, '\n') + 1, 0, NULL);
	cr_assert_not_null(list, "%s", out);
	json_t *a = json_array_get(json_object_get(list, "allocations"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(a, "name")), "job");
	cr_assert_eq(json_integer_value(json_object_get(a, "pid")), cmdpid,
		     "the allocation is CMD's, not holdfast's");
	json_decref(list);
	free(out);
	free(err);
	json_t *root = sc_registry_json();
	cr_assert_eq(json_array_size(json_object_get(root, "allocations")), 0, "released at the end");
	cr_assert_eq(json_integer_value(json_object_get(root, "generation")), 2);
	json_decref(root);
}

Test(run_scope, generated_name_and_cmd_status)
{
	char *out;
	int rc = sc_cli(&out, NULL, "run", "--scope", sc_path("p:write"), "--", "sh", "-c",
			"echo $HOLDFAST_POD; exit 3", NULL);
	cr_assert_eq(rc, 3, "CMD's status");
	cr_assert_eq(strncmp(out, "run-", 4), 0, "a generated name: %s", out);
	free(out);
}

Test(run_scope, nested_run_delegates_from_holdfast_pod)
{
	char *out, *err;
	int rc = sc_cli_env(hf_env(), &out, &err, "run", "--scope", sc_path("p:write:recursive"),
			    "--name", "outer", "--", "sh", "-c",
			    "exec \"$HF\" run --scope \"$0/p/inner:write\" --name inner -- "
			    "\"$HF\" scope list --json",
			    sc_dir, NULL);
	cr_assert_eq(rc, 0, "%s", err);
	json_t *list = json_loads(out, 0, NULL);
	cr_assert_not_null(list, "%s", out);
	json_t *inner = NULL, *a;
	size_t i;
	json_array_foreach(json_object_get(list, "allocations"), i, a)
		if (!strcmp(json_string_value(json_object_get(a, "name")), "inner"))
			inner = a;
	cr_assert_not_null(inner);
	cr_assert_str_eq(json_string_value(json_object_get(inner, "delegated_from")), "outer");
	json_decref(list);
	free(out);
	free(err);
	/* a nested run reaching outside its parent's scope is refused */
	rc = sc_cli_env(hf_env(), &out, &err, "run", "--scope", sc_path("p:write:recursive"), "--",
			"sh", "-c", "\"$HF\" run --scope \"$0/q:write\" -- true; echo nested=$?",
			sc_dir, NULL);
	cr_assert_eq(rc, 0, "%s", err);
	HAS(out, "nested=1");
	HAS(err, "not inside the effective scope of its parent");
	free(out);
	free(err);
}

Test(run_scope, conflict_keeps_cmd_from_running)
{
	struct sc_sleeper s;
	hold_p(&s);
	char *err;
	const char *marker = sc_path("ran");
	int rc = sc_cli(NULL, &err, "run", "-n", "--scope", sc_path("p/x:write"), "--", "touch",
			marker, NULL);
	cr_assert_eq(rc, 1, "-n: refused at once");
	HAS(err, "holder (pid ");
	cr_assert(!hft_exists(marker), "CMD never ran");
	free(err);
	sc_sleeper_end(&s, SIGKILL);
}

static char *read_line(int fd)
{
	static char line[256];
	size_t n = 0;
	char c;
	while (n < sizeof line - 1 && read(fd, &c, 1) == 1 && c != '\n')
		line[n++] = c;
	line[n] = '\0';
	return line;
}

Test(run_scope, sigkilled_wrapper_leaves_the_scope_to_cmd)
{
	/* the orphaned CMD comes to us, so we can end and wait for it */
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	const char *fifo = sc_path("fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *argv[] = { "holdfast", "run", "--scope", sc_path("p:write:recursive"), "--name",
			       "job", "--", "sh", "-c", "echo ready $$; exec cat \"$0\" >/dev/null",
			       fifo, NULL };
	struct hft_child w;
	hft_spawn_cli(&w, NULL, argv, NULL);
	char *line = read_line(w.out_rd);
	cr_assert_eq(strncmp(line, "ready ", 6), 0, "CMD started: '%s'", line);
	pid_t cmd = (pid_t)atol(line + 6);
	kill(w.pid, SIGKILL);
	cr_assert_eq(hft_wait(&w), 128 + SIGKILL);
	close(w.out_rd);
	close(w.err_rd);
	/* CMD still runs: the scope is still its */
	char *err;
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "other", sc_path("p/x:write"), NULL), 1,
		     "still held");
	HAS(err, "job (pid ");
	free(err);
	/* CMD ends: the scope comes back */
	int fd = open(fifo, O_WRONLY);
	cr_assert_geq(fd, 0);
	close(fd);
	int st;
	cr_assert_eq(waitpid(cmd, &st, 0), cmd);
	char *out;
	cr_assert_eq(sc_cli(&out, NULL, "scope", "reap", NULL), 0);
	HAS(out, "reaped job");
	free(out);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", sc_path("p/x"), NULL), 0);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* `run --scope` waits like `--lock`: a held scope is
 * waited for, and the waiter gets it when the holder releases - woken by
 * the registry's change, not by a timer it would have to outlast. */
Test(run_scope, waits_for_a_held_scope_and_gets_it_on_release)
{
	const char *fifo = sc_path("fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *hold[] = { "holdfast", "run", "--scope", sc_path("p:write:recursive"), "--name",
			       "holder", "--", "sh", "-c", "echo held; read x < \"$0\"", fifo, NULL };
	struct hft_child holder, waiter;
	hft_spawn_cli(&holder, NULL, hold, NULL);
	char *line = read_line(holder.out_rd);
	cr_assert_str_eq(line, "held");
	const char *wait[] = { "holdfast", "run", "-w", "3600", "--scope", sc_path("p/x:write"),
			       "--name", "waiter", "--", "sh", "-c", "echo got $HOLDFAST_POD", NULL };
	hft_spawn_cli(&waiter, "pause:scope.register.waiting", wait, NULL);
	hft_expect(&waiter, "scope.register.waiting"); /* refused for now: it waits */
	hft_go(&waiter);
	int fd = open(fifo, O_WRONLY); /* the holder's CMD ends: run releases */
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "x\n", 2), 2);
	close(fd);
	cr_assert_eq(hft_wait(&holder), 0);
	cr_assert_eq(hft_wait(&waiter), 0, "the waiter got the scope");
	char *out = hft_read_all(waiter.out_rd);
	cr_assert_str_eq(out, "got waiter\n");
	free(out);
	close(holder.out_rd);
	close(holder.err_rd);
	close(waiter.out_rd);
	close(waiter.err_rd);
	json_t *root = sc_registry_json();
	cr_assert_eq(json_array_size(json_object_get(root, "allocations")), 0);
	json_decref(root);
}

/* -w is a bound: 1 (or -E CODE) once it passed, naming the holder; CMD
 * never runs. Only the lower bound is asserted (an upper one is a race). */
Test(run_scope, wait_is_bounded_by_w)
{
	struct sc_sleeper s;
	hold_p(&s);
	const char *marker = sc_path("ran");
	char *err;
	double t0 = now_s();
	cr_assert_eq(sc_cli(NULL, &err, "run", "-w", "0.3", "--scope", sc_path("p/x:write"), "--",
			    "touch", marker, NULL),
		     1);
	double took = now_s() - t0;
	cr_assert_geq(took, 0.3, "returned after %.3f s, before the deadline", took);
	HAS(err, "timed out waiting");
	HAS(err, "of holder (pid ");
	free(err);
	cr_assert_not(hft_exists(marker), "CMD never ran");
	cr_assert_eq(sc_cli(NULL, NULL, "run", "-w", "0.05", "-E", "9", "--scope",
			    sc_path("p/x:write"), "--", "true", NULL),
		     9, "-E applies to a timeout too");
	sc_sleeper_end(&s, SIGKILL);
}

/* A waiting `holdfast run` answers SIGTERM: its signal descriptor cancels
 * the library's wait. The wait has no bound (no -w), so its end at all is
 * the cancel; how soon is not asserted (a loaded machine decides that). */
Test(run_scope, sigterm_ends_the_wait_at_once)
{
	struct sc_sleeper s;
	hold_p(&s);
	const char *marker = sc_path("ran");
	const char *wait[] = { "holdfast", "run", "--scope", sc_path("p/x:write"), "--name",
			       "waiter", "--", "touch", marker, NULL };
	struct hft_child w;
	hft_spawn_cli(&w, "pause:scope.register.waiting", wait, NULL);
	hft_expect(&w, "scope.register.waiting");
	hft_go(&w); /* waiting for good now (no -w: forever) */
	cr_assert_eq(kill(w.pid, SIGTERM), 0);
	int rc = hft_exit_within(w.pid, 60000); /* a bound against a hang */
	if (rc < 0) {
		kill(w.pid, SIGKILL);
		hft_wait(&w);
	}
	cr_assert_eq(rc, 128 + SIGTERM, "exit %d (-1: still waiting 60 s after SIGTERM)", rc);
	char *err = hft_read_all(w.err_rd);
	HAS(err, "stopped by");
	free(err);
	close(w.out_rd);
	close(w.err_rd);
	cr_assert_not(hft_exists(marker), "CMD never ran");
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "waiter"));
	json_decref(root);
	sc_sleeper_end(&s, SIGKILL);
}

/* A deadline that passed during the first try (a short -w on a loaded
 * machine) ends the wait with one more try: never "wait forever". The ASan
 * scope suite hung in wait_is_bounded_by_w's `-w 0.05` that way: the time
 * left, computed as a negative number of ms, became HF_OPT_WAIT_MS < 0. */
Test(run_scope, a_deadline_passed_during_the_first_try_ends_the_wait)
{
	struct sc_sleeper s;
	hold_p(&s);
	const char *argv[] = { "holdfast", "run", "-w", "0.001", "-E", "9", "--scope",
			       sc_path("p/x:write"), "--", "true", NULL };
	struct hft_child w;
	hft_spawn_cli(&w, "pause:scope.register.judged", argv, NULL);
	hft_expect(&w, "scope.register.judged"); /* the first try, refused */
	/* its 1 ms deadline passes by 20 ms (the monotonic clock) before it goes on */
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct timespec tick = { 0, 1000000 };
		nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < 20000000LL);
	hft_go(&w);
	int rc = hft_exit_within(w.pid, 20000);
	if (rc < 0) {
		kill(w.pid, SIGKILL);
		hft_wait(&w);
	}
	close(w.out_rd);
	close(w.err_rd);
	sc_sleeper_end(&s, SIGKILL);
	cr_assert_eq(rc, 9, "run -w 0.001 past its deadline: %d (-1: still waiting after 20 s)", rc);
}
