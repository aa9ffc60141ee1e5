/* The guard of a commit (issue 22, part 4): `holdfast scope check --staged`
 * and contrib/git-hooks/pre-commit, in a real git repository with the real
 * hook installed and the real binary. Two "agents" are two pods in one
 * tree, each committing with its own HOLDFAST_POD; then the second agent in
 * a container (its own mount and pid namespaces) that sees the tree at
 * another path. The registry is the tree's own (.git/holdfast/scope.lock:
 * HOLDFAST_REGISTRY is unset), as an agent fleet's is. */
#include "hft.h"
#include "scope_support.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct sc_sleeper owner;
static char repo[600];

/* A repository repo = sc_dir/repo with a/x, b/y, free/z committed and the
 * hook installed; HOLDFAST_REGISTRY unset: the registry is the tree's. */
static void start(void)
{
	sc_setup();
	unsetenv("HOLDFAST_REGISTRY");
	owner.pid = 0;
	snprintf(repo, sizeof repo, "%s/repo", sc_dir);
	char *out = NULL;
	int rc = sc_sh(&out, NULL,
		       "set -e; mkdir -p \"$1\" && cd \"$1\" && git init -q . && "
		       "git config user.email agent@example.com && git config user.name agent && "
		       "git config core.hooksPath .git/hooks && "
		       "mkdir a b free && echo 1 > a/x && echo 2 > b/y && echo 3 > free/z && "
		       "git add . && git commit -qm init && "
		       "cp \"$2/contrib/git-hooks/pre-commit\" .git/hooks/pre-commit 2>&1",
		       repo, getenv("HOLDFAST_SRC"), NULL);
	cr_assert_eq(rc, 0, "repository set-up: %s", out);
	free(out);
}

static void stop(void)
{
	if (owner.pid > 0)
		sc_sleeper_end(&owner, SIGKILL);
	sc_teardown();
}

TestSuite(guard, .init = start, .fini = stop, .timeout = 90);

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)), "expected '%s' in: %s", (needle), (hay))
#define HASNT(hay, needle) cr_assert(!strstr((hay), (needle)), "did not expect '%s' in: %s", (needle), (hay))

/* Register pod name with write scope repo/rel, owned by the test's sleeper. */
static void reg(const char *name, const char *rel)
{
	if (owner.pid <= 0)
		sc_sleeper_start(&owner);
	char spec[800], *err = NULL;
	snprintf(spec, sizeof spec, "%s/%s:write:recursive", repo, rel);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", name, spec, "--pid", sc_num(owner.pid),
			    NULL),
		     0, "register %s: %s", name, err);
	free(err);
}

/* Run script in repo as agent pod (NULL: no HOLDFAST_POD), the hook finding
 * the binary as $HOLDFAST; the exit code, stdout+stderr in *out. */
static int agent(const char *pod, const char *script, char **out)
{
	char full[4096];
	snprintf(full, sizeof full,
		 "cd \"$1\" && export HOLDFAST=\"$HF\" && %s%s%s { %s ; } 2>&1", pod ? "export HOLDFAST_POD='" : "",
		 pod ? pod : "", pod ? "' &&" : "", script);
	return sc_sh(out, NULL, full, repo, NULL);
}

/* How many commits HEAD has. */
static int commits(void)
{
	char *out;
	cr_assert_eq(agent(NULL, "git rev-list --count HEAD", &out), 0, "%s", out);
	int n = atoi(out);
	free(out);
	return n;
}

Test(guard, a_commit_into_another_pods_scope_is_refused_naming_path_and_holder)
{
	reg("A", "a");
	reg("B", "b");
	char *out;
	int rc = agent("A", "echo more >> b/y && echo more >> a/x && git add -A && git commit -qm x",
		       &out);
	cr_assert_eq(rc, 1, "refused: %s", out);
	HAS(out, "holdfast: scope guard: modified b/y: held by B (pid ");
	HAS(out, "/repo/b:write:recursive");
	HASNT(out, "a/x:"); /* A's own path is not refused */
	HAS(out, "refused: 1 of 2 staged paths");
	HAS(out, "commit refused for pod A");
	HAS(out, "HOLDFAST_ALLOW_FOREIGN=1"); /* the override, in the refusal */
	HAS(out, "holdfast: session lock: "); /* today's line stays */
	free(out);
	cr_assert_eq(commits(), 1, "nothing was committed");
	/* its own and free paths only: committed */
	rc = agent("A", "git reset -q b && git checkout b && git add -A && git commit -qm own", &out);
	cr_assert_eq(rc, 0, "%s", out);
	HAS(out, "1 staged path: free or A's");
	free(out);
	rc = agent("A", "echo x >> free/z && echo y > free/new && git add -A && git commit -qm free",
		   &out);
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	/* and B may commit into b */
	rc = agent("B", "echo b >> b/y && git add -A && git commit -qm b", &out);
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	cr_assert_eq(commits(), 4);
}

/* The holder's reason and lease (issue 22, parts 2 and 3) in the guard's
 * refusal, in words and in --json. */
Test(guard, the_refusal_names_the_holders_reason_and_lease)
{
	char spec[800], *err = NULL;
	snprintf(spec, sizeof spec, "%s/b:write:recursive", repo);
	cr_assert_eq(sc_cli(NULL, &err, "scope", "register", "B", spec, "--lease", "1h", "--reason",
			    "refactoring the parser", NULL),
		     0, "register B: %s", err);
	free(err);
	char *out;
	int rc = agent("A", "echo more >> b/y && git add -A && git commit -qm x", &out);
	cr_assert_eq(rc, 1, "refused: %s", out);
	HAS(out, "modified b/y: held by B (pid ");
	HAS(out, ", leased until ");
	HAS(out, ", reason: refactoring the parser)");
	free(out);
	rc = agent("A", "\"$HOLDFAST\" scope check --staged --pod A --json", &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "\"reason\":\"refactoring the parser\"");
	HAS(out, "\"lease_until\":\"");
	free(out); /* B's lease goes with the repository (teardown) */
}

Test(guard, renames_out_of_and_into_a_scope_and_deletions_are_refused)
{
	reg("A", "a");
	reg("B", "b");
	char *out;
	/* a rename out of B's scope: the old path's deletion is B's */
	int rc = agent("A", "git mv b/y free/y && git commit -qm mv", &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "deleted b/y: held by B");
	HASNT(out, "free/y:");
	free(out);
	rc = agent("A", "git reset -q --hard", &out);
	free(out);
	/* a rename into it: the new path's addition */
	rc = agent("A", "git mv free/z b/z && git commit -qm mv", &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "added b/z: held by B");
	free(out);
	rc = agent("A", "git reset -q --hard", &out);
	free(out);
	/* a deletion inside it */
	rc = agent("A", "git rm -q b/y && git commit -qm rm", &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "deleted b/y: held by B");
	free(out);
	/* `git commit -a` commits through a temporary index: judged too */
	rc = agent("A", "git reset -q --hard && echo c >> b/y && git commit -qam all", &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "modified b/y: held by B");
	free(out);
	cr_assert_eq(commits(), 1);
}

Test(guard, file_names_with_spaces_newlines_and_dashes)
{
	reg("A", "a");
	reg("B", "b");
	char *out;
	int rc = agent("A",
		       "echo 1 > 'b/sp ace' && echo 2 > \"b/new\nline\" && echo 3 > free/-dash && "
		       "git add -A && git commit -qm names",
		       &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "added b/sp ace: held by B");
	HAS(out, "added b/new\\x0aline: held by B"); /* escaped: one line per path */
	HASNT(out, "free/-dash:");
	free(out);
	/* --json: the paths as they are */
	rc = agent("A", "\"$HF\" scope check --staged --pod A --json", &out);
	cr_assert_eq(rc, 1, "%s", out);
	json_error_t e;
	json_t *j = json_loads(out, 0, &e);
	cr_assert_not_null(j, "%s: %s", e.text, out);
	cr_assert_eq(json_integer_value(json_object_get(j, "exit")), 1);
	cr_assert_eq(json_integer_value(json_object_get(j, "paths")), 3);
	json_t *list = json_object_get(j, "refused");
	cr_assert_eq(json_array_size(list), 2);
	bool nl = false, sp = false;
	for (size_t i = 0; i < json_array_size(list); i++) {
		json_t *x = json_array_get(list, i);
		const char *p = json_string_value(json_object_get(x, "path"));
		nl |= !strcmp(p, "b/new\nline");
		sp |= !strcmp(p, "b/sp ace");
		cr_assert_str_eq(json_string_value(json_object_get(x, "change")), "added");
		json_t *h = json_object_get(x, "holder");
		cr_assert_str_eq(json_string_value(json_object_get(h, "name")), "B");
		cr_assert(strstr(json_string_value(json_object_get(h, "scope")), "/repo/b:write"));
	}
	cr_assert(nl && sp, "%s", out);
	json_decref(j);
	free(out);
}

Test(guard, the_override_lets_the_commit_go_and_says_so)
{
	reg("B", "b");
	char *out;
	int rc = agent("A", "echo x >> b/y && git add -A && HOLDFAST_ALLOW_FOREIGN=1 git commit -qm o",
		       &out);
	cr_assert_eq(rc, 0, "%s", out);
	HAS(out, "modified b/y: held by B"); /* still told */
	HAS(out, "committing anyway (HOLDFAST_ALLOW_FOREIGN=1)");
	free(out);
	rc = agent("A", "echo x >> b/y && git add -A && git commit --no-verify -qm nv", &out);
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	cr_assert_eq(commits(), 3);
}

Test(guard, without_a_pod_every_scoped_path_is_refused)
{
	reg("A", "a");
	char *out;
	int rc = agent(NULL, "echo x >> a/x && git add -A && git commit -qm x", &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "modified a/x: held by A");
	HAS(out, "commit refused.");
	free(out);
	rc = agent(NULL, "git reset -q --hard && echo x >> free/z && git add -A && git commit -qm f",
		   &out);
	cr_assert_eq(rc, 0, "%s", out);
	HAS(out, "1 staged path: free (registry ");
	free(out);
	/* a pod that is not registered: told, and judged as nobody */
	rc = agent("gone", "echo x >> a/x && echo y >> free/z && git add -A && \"$HF\" scope check --staged --pod gone",
		   &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "pod gone is not registered");
	HAS(out, "modified a/x: held by A");
	HASNT(out, "free/z:");
	free(out);
	cr_assert_eq(commits(), 2);
}

Test(guard, git_failures_and_usage)
{
	char *out, *err;
	/* outside a work tree: 69, naming the git command */
	int rc = sc_sh(&out, &err, "cd \"$1\" && GIT_CEILING_DIRECTORIES=\"$1\" \"$HF\" scope check --staged --json",
		       sc_dir, NULL);
	cr_assert_eq(rc, 69, "%s", err);
	HAS(err, "git rev-parse --show-toplevel failed");
	HAS(out, "\"error\":\"no_git\"");
	free(out);
	free(err);
	/* git not on PATH */
	rc = sc_sh(NULL, &err, "cd \"$1\" && PATH=/nonexistent \"$HF\" scope check --staged", repo,
		   NULL);
	cr_assert_eq(rc, 69, "%s", err);
	HAS(err, "not installed or not on PATH");
	free(err);
	/* --staged takes no PATH; --pod must be a pod name */
	cr_assert_eq(sc_cli(NULL, NULL, "scope", "check", "--staged", repo, NULL), 64);
	rc = sc_sh(NULL, &err, "cd \"$1\" && \"$HF\" scope check --staged --pod 'a b'", repo, NULL);
	cr_assert_eq(rc, 64, "%s", err);
	free(err);
	/* nothing staged: free */
	rc = sc_sh(&out, NULL, "cd \"$1\" && \"$HF\" scope check --staged", repo, NULL);
	cr_assert_eq(rc, 0);
	HAS(out, "0 staged paths: free");
	free(out);
}

/* The library's batch: one snapshot, each path's verdict, the refused ones
 * in order with their holders. */
Test(guard, check_paths_judges_a_batch_as_check_judges_each)
{
	reg("A", "a");
	reg("B", "b");
	hf_registry *r;
	char path[700];
	snprintf(path, sizeof path, "%s/.git/holdfast/scope.lock", repo);
	cr_assert_eq(hf_registry_read(path, &r, NULL), 0);
	char p[4][800];
	snprintf(p[0], sizeof p[0], "%s/a/x", repo);
	snprintf(p[1], sizeof p[1], "%s/b/y", repo);
	snprintf(p[2], sizeof p[2], "%s/free/z", repo);
	snprintf(p[3], sizeof p[3], "%s/b", repo);
	const char *paths[] = { p[0], p[1], p[2], p[3] };
	int states[4];
	hf_rec *v;
	cr_assert_eq(hf_registry_check_paths(r, paths, 4, "A", 0, states, &v), 2);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(states[i], hf_registry_check(r, paths[i], "A", 0, NULL), "path %d", i);
	cr_assert_eq(states[0], HF_SCOPE_YOURS);
	cr_assert_eq(states[2], HF_SCOPE_OUTSIDE);
	cr_assert_eq(hf_rec_len(v, "refused"), 2);
	cr_assert_str_eq(hf_rec_str(v, "refused.0.holder"), "B");
	cr_assert_str_eq(hf_rec_str(v, "refused.1.path"), p[3]);
	int64_t idx;
	cr_assert_eq(hf_rec_int(v, "refused.1.index", &idx), 0);
	cr_assert_eq(idx, 3);
	hf_rec_free(v);
	/* nobody: A's path refused too */
	cr_assert_eq(hf_registry_check_paths(r, paths, 4, NULL, 0, NULL, NULL), 3);
	/* a pod's old generation: its own path is another registration's now */
	cr_assert_eq(hf_registry_check_paths(r, paths, 1, "A", 999, states, NULL), 1);
	cr_assert_eq(states[0], HF_SCOPE_LOST);
	/* not canonical: nothing judged */
	const char *bad[] = { p[0], "relative/x" };
	cr_assert_eq(hf_registry_check_paths(r, bad, 2, NULL, 0, NULL, NULL), -EINVAL);
	hf_registry_free(r);
}

/* Two containers sharing the tree: agent B in its own mount and pid
 * namespaces sees the repository at another path (a bind mount made in its
 * namespace only) and registers its pod there; each agent's commit into the
 * other's scope is refused, through either path. */
Test(guard, two_containers_sharing_the_tree)
{
	sc_need_root();
	reg("A", "a");
	char other[700], fifo[700];
	snprintf(other, sizeof other, "%s/other", sc_dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", sc_dir);
	cr_assert_eq(mkdir(other, 0700), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	/* the container: bind the tree at $2, register B there, try both
	 * commits (results in files), say "ready", live until the fifo says go */
	const char *script =
		"mount --bind \"$1\" \"$2\" || exit 9; cd \"$2\" || exit 9; export HOLDFAST=\"$HF\"; "
		"{ read x < \"$4\"; } & SP=$!; "
		"\"$HF\" scope register B \"$2/b:write:recursive\" --pid $SP >/dev/null || exit 9; "
		"export HOLDFAST_POD=B; " /* after: it is register's default --from */
		"{ echo c >> a/x && git add -A && git commit -qm c; } >\"$3/b1.out\" 2>&1; echo $? >\"$3/b1.rc\"; "
		"git reset -q --hard >/dev/null 2>&1; "
		"{ echo c >> b/y && git add -A && git commit -qm b; } >\"$3/b2.out\" 2>&1; echo $? >\"$3/b2.rc\"; "
		"echo ready; wait $SP";
	const char *argv[] = { "unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
			       "sh", "-c", script, "sh", repo, other, sc_dir, fifo, NULL };
	struct hft_child c;
	sc_spawn(&c, argv);
	char *line = sc_line(c.out_rd);
	if (strcmp(line, "ready")) {
		char *err = hft_read_all(c.err_rd);
		cr_assert_fail("the container did not get ready: '%s' %s", line, err);
	}
	free(line);
	char *b1 = hft_slurp(sc_path("b1.out")), *b1rc = hft_slurp(sc_path("b1.rc"));
	char *b2 = hft_slurp(sc_path("b2.out")), *b2rc = hft_slurp(sc_path("b2.rc"));
	cr_assert_str_eq(b1rc, "1\n", "B's commit into A's scope: %s", b1);
	HAS(b1, "modified a/x: held by A");
	HAS(b1, "(the same files through another path: ");
	cr_assert_str_eq(b2rc, "0\n", "B's commit into its own: %s", b2);
	/* A, on the host, into B's scope as B registered it (at the other path) */
	char *out;
	int rc = agent("A", "echo a >> b/y && git add -A && git commit -qm a", &out);
	cr_assert_eq(rc, 1, "%s", out);
	HAS(out, "modified b/y: held by B");
	HAS(out, "/other/b:write:recursive");
	free(out);
	int fd = open(fifo, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "go\n", 3), 3);
	close(fd);
	cr_assert_eq(sc_wait_within(c.pid, 30000), 0);
	close(c.out_rd);
	close(c.err_rd);
	free(b1);
	free(b1rc);
	free(b2);
	free(b2rc);
	/* B's container ended: its pod is dead, b is free again */
	rc = agent("A", "git commit -qm a", &out);
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	cr_assert_eq(commits(), 3);
}
