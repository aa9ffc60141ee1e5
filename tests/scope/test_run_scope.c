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
#include <unistd.h>

TestSuite(run_scope, .init = sc_setup, .fini = sc_teardown);

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
	sc_sleeper_start(&s);
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "register", "holder", sc_path("p:write:recursive"),
			    "--pid", sc_num(s.pid), NULL),
		     0);
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
