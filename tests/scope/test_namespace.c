/* Pid namespaces: a pod
 * registered inside `unshare --pid --fork --mount-proc` records a pid that
 * means nothing on the host, and a host pod's pid means nothing inside. Each
 * side must take the other's pod for alive while it runs - by the kernel
 * lock on its live file, never by a pid - and reclaim it at once when it
 * ends. Real namespaces, the real binary, real shells. */
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
#include <unistd.h>

TestSuite(ns, .init = sc_setup, .fini = sc_teardown, .timeout = 60);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))

/* Let the command blocked on `read x < fifo` go (a line: read succeeds). */
static void release_fifo(const char *fifo)
{
	int fd = open(fifo, O_WRONLY);
	cr_assert_geq(fd, 0, "open %s: %s", fifo, strerror(errno));
	cr_assert_eq(write(fd, "go\n", 3), 3);
	close(fd);
}

static uint64_t our_pidns(void)
{
	struct stat st;
	cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
	return (uint64_t)st.st_ino;
}

static void end_child(struct hft_child *c, int expect)
{
	cr_assert_eq(hft_wait(c), expect);
	close(c->out_rd);
	close(c->err_rd);
}

/* A pod inside a pid namespace, judged from the host: its pid (1 there) is
 * the host's init here, alive with another start time - by pid it would be
 * "provably dead" and reaped while it runs. */
Test(ns, pod_inside_a_pid_namespace_lives_for_the_host)
{
	sc_need_root();
	const char *fifo = sc_path("fifo"), *p = sc_path("p");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *argv[] = { "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c",
			       "\"$HF\" scope register inner \"$1:write:recursive\" >/dev/null || exit 9; "
			       "echo registered; read x < \"$2\"",
			       "sh", p, fifo, NULL };
	struct hft_child in;
	sc_spawn(&in, argv);
	char *line = sc_line(in.out_rd);
	cr_assert_str_eq(line, "registered", "the pod inside registered");
	free(line);

	struct sc_sleeper s;
	sc_sleeper_start(&s);
	char *out, *err;
	char spec[1100];
	snprintf(spec, sizeof spec, "%s/x:write", p);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "outer", spec, "--pid", sc_num(s.pid),
			    NULL),
		     1, "the pod inside is alive: %s", err);
	HAS(err, "inner (pid 1 in another pid namespace");
	free(err);
	cr_assert_eq(sc_cli(&out, NULL, "scope", "reap", NULL), 0);
	HAS(out, "nothing to reap");
	free(out);
	json_t *root = sc_registry_json();
	json_t *a = sc_alloc(root, "inner");
	cr_assert_not_null(a);
	cr_assert_eq(json_integer_value(json_object_get(a, "pid")), 1);
	cr_assert_neq((uint64_t)json_integer_value(json_object_get(a, "pidns")), our_pidns(),
		      "the namespace it was registered in is recorded");
	cr_assert_str_eq(json_string_value(json_object_get(a, "comm")), "sh");
	json_decref(root);

	/* the namespace ends (its init, the sh, exits: the kernel kills and
	 * collects everything in it, the keeper included) */
	release_fifo(fifo);
	end_child(&in, 0);
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "outer", spec, "--pid", sc_num(s.pid),
			    NULL),
		     0, "reclaimed at once: %s", err);
	free(out);
	free(err);
	root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "inner"), "reaped");
	json_decref(root);
	char dir[1100];
	snprintf(dir, sizeof dir, "%s/reg", sc_dir);
	cr_assert_eq(hft_count_prefix(dir, "scope.lock.live-"), 1, "only outer's live file is left");
	sc_sleeper_end(&s, SIGKILL);
}

/* A host pod judged from inside a pid namespace: its pid does not exist
 * there (or is someone else's). */
Test(ns, host_pod_lives_for_a_pid_namespace)
{
	sc_need_root();
	struct sc_sleeper s;
	sc_sleeper_start(&s);
	char *out, *err;
	cr_assert_eq(sc_cli(&out, &err, "scope", "register", "outer", sc_path("p:write:recursive"),
			    "--pid", sc_num(s.pid), "--json", NULL),
		     0, "%s", err);
	json_t *o = json_loads(out, 0, NULL);
	cr_assert_not_null(o, "%s", out);
	pid_t keeper = (pid_t)json_integer_value(json_object_get(o, "keeper"));
	cr_assert_gt(keeper, 0);
	json_decref(o);
	free(out);
	free(err);

	static const char inside[] =
		"unshare --pid --fork --kill-child --mount-proc sh -c "
		"'\"$HF\" scope register inner \"$1\"; echo rc=$?' sh \"$1\"";
	char spec[1100];
	snprintf(spec, sizeof spec, "%s/x:write", sc_path("p"));
	cr_assert_eq(sc_sh(&out, &err, inside, spec, NULL), 0, "%s", err);
	HAS(out, "rc=1");
	HAS(err, "outer (pid ");
	HAS(err, " in another pid namespace");
	free(out);
	free(err);

	/* the owner ends: its keeper lets the lock go, and the namespace's
	 * judge takes that as the proof */
	sc_sleeper_end(&s, SIGKILL);
	cr_assert(sc_exits_within(keeper, 10000), "the keeper ends with its owner");
	cr_assert_eq(sc_sh(&out, &err, inside, spec, NULL), 0, "%s", err);
	HAS(out, "rc=0");
	free(out);
	free(err);
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "outer"), "reaped from inside the namespace");
	cr_assert_not_null(sc_alloc(root, "inner"));
	json_decref(root);
	/* inner's owner (the sh inside) is gone with its namespace: the host
	 * reaps it by its free lock, not by its pid */
	cr_assert_eq(sc_cli(&out, NULL, "scope", "reap", NULL), 0);
	HAS(out, "reaped inner");
	free(out);
}

/* `holdfast run --scope` inside a namespace keeps the live file's lock for
 * as long as CMD runs. */
Test(ns, run_scope_inside_a_pid_namespace_holds_while_cmd_runs)
{
	sc_need_root();
	const char *fifo = sc_path("fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *argv[] = { "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", hft_bin(), "run",
			       "--scope", sc_path("p:write:recursive"), "--name", "job", "--",
			       "sh", "-c", "echo ready; read x < \"$0\"", fifo, NULL };
	struct hft_child in;
	sc_spawn(&in, argv);
	char *line = sc_line(in.out_rd);
	cr_assert_str_eq(line, "ready");
	free(line);
	char *err;
	struct sc_sleeper s;
	sc_sleeper_start(&s);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "other", sc_path("p/x:write"),
			    "--pid", sc_num(s.pid), NULL),
		     1, "%s", err);
	HAS(err, "job (pid ");
	HAS(err, " in another pid namespace");
	free(err);
	release_fifo(fifo);
	end_child(&in, 0);
	json_t *root = sc_registry_json();
	cr_assert_null(sc_alloc(root, "job"), "released when CMD ended");
	json_decref(root);
	sc_sleeper_end(&s, SIGKILL);
}
