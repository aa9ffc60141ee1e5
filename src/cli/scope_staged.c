/*
 * scope_staged.c - `holdfast scope check --staged [--pod NAME [--generation
 * G]] [--json]`: the guard of a commit. Every path the git index would
 * change against HEAD - added, modified, type-changed, deleted; a rename
 * as the deletion of its old path and the addition of its new one - is
 * judged against the registry as `scope check PATH` judges one path, all of
 * them against ONE snapshot of the registry (hf_registry_check_paths).
 *
 * Git is run, not read: `git rev-parse --show-toplevel` (the work tree,
 * whose registry is the one judged: RG12) and `git diff --cached
 * --name-status -z --no-renames --no-ext-diff` (the staged paths, NUL
 * separated: any byte but NUL in a file name). Both through sys.c (fork,
 * pipe, exec), in the caller's environment: in a pre-commit hook git's
 * GIT_INDEX_FILE names the index being committed (`git commit -a`, `git
 * commit PATH` use a temporary one). Git missing, not a work tree or a git
 * failure: exit 69 ("no_git"), naming the git command that failed.
 *
 * A staged path is judged at the canonical work tree + its path in the
 * index, textually: git never stages a path below a symbolic link, and a
 * staged symbolic link is a write of the link, not of its target (so the
 * path itself is never resolved).
 */
#include "cli.h"
#include "scope_words.h"

#include "holdfast.h"
#include "sys.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW(s) CLI_SHOW(s)

/* A git child whose stdout we read. */
struct git_run {
	const char *what; /* the command, for messages */
	pid_t pid;
	int fd;
};

/* Start git with argv (NULL-terminated; argv[0] "git"), its stdout on a
 * pipe (stderr is ours: git's own message reaches the user). 0, or the
 * exit code (69) with the message printed. */
static int git_start(const char *const *argv, const char *what, struct git_run *g)
{
	int p[2];
	g->what = what;
	int rc = hf_sys_pipe2(p, O_CLOEXEC);
	if (rc < 0) {
		cli_err("scope check --staged: cannot run git (%s): %s", what, hf_strerror(rc));
		return cli_fail(HF_EXIT_NOTHELD, "no_git", NULL, NULL);
	}
	fflush(NULL);
	pid_t pid = hf_sys_fork();
	if (pid == 0) {
		if (hf_sys_dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		hf_sys_execvp("git", (char *const *)argv);
		_exit(127); /* not installed, not on PATH */
	}
	hf_sys_close(p[1]);
	if (pid < 0) {
		hf_sys_close(p[0]);
		cli_err("scope check --staged: cannot run git (%s): %s", what, hf_strerror(pid));
		return cli_fail(HF_EXIT_NOTHELD, "no_git", NULL, NULL);
	}
	g->pid = pid;
	g->fd = p[0];
	return 0;
}

/* Read g's stdout to its end into *out (malloc'd, NUL-terminated, *len
 * bytes) and wait for it. 0 when git exited 0; else the message and the
 * exit code (69) recorded. */
static int git_finish(struct git_run *g, char **out, size_t *len)
{
	const char *what = g->what;
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t r = 0;
	while (buf) {
		if (cap - n < 4096) {
			char *b = realloc(buf, cap * 2);
			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		r = hf_sys_read(g->fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	hf_sys_close(g->fd); /* git gets EPIPE if we stopped early */
	int st = 0;
	pid_t w = hf_sys_waitpid(g->pid, &st, 0);
	if (!buf || r < 0 || w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		free(buf);
		if (!buf || r < 0 || w < 0)
			cli_err("scope check --staged: %s: %s", what,
				hf_strerror(!buf ? -ENOMEM : r < 0 ? (int)r : w));
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			cli_err("scope check --staged: cannot run git (%s): not installed or not "
				"on PATH",
				what);
		else if (WIFEXITED(st))
			cli_err("scope check --staged: %s failed (exit %d): is this a git work "
				"tree?",
				what, WEXITSTATUS(st));
		else
			cli_err("scope check --staged: %s was killed by signal %d", what,
				WTERMSIG(st));
		return cli_fail(HF_EXIT_NOTHELD, "no_git", NULL, NULL);
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* What a status letter of --name-status says was done to the path. */
static const char *change_of(char c)
{
	switch (c) {
	case 'A': return "added";
	case 'D': return "deleted";
	case 'M': return "modified";
	case 'T': return "type changed";
	case 'U': return "unmerged";
	default: return "changed";
	}
}

struct staged {
	char **canon;          /* canonical path of each, malloc'd          */
	const char **rel;      /* its path in the index (into the output)    */
	char *status;          /* its status letter                          */
	size_t n;
};

static void staged_free(struct staged *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->canon[i]);
	free(s->canon);
	free(s->rel);
	free(s->status);
}

/* Is rel a relative path of whole components, none "." or ".." (what git
 * stages; the registry refuses anything else as not canonical)? */
static bool rel_ok(const char *rel)
{
	if (!rel[0] || rel[0] == '/')
		return false;
	for (const char *c = rel; *c;) {
		size_t l = strcspn(c, "/");
		if (!l || (l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += l;
		if (*c == '/' && !*++c)
			return false; /* a trailing '/' */
	}
	return true;
}

/* Split git's "STATUS\0PATH\0..." (len bytes) into s, each path made
 * top + "/" + PATH. 0, or the exit code with the message printed. */
static int staged_parse(char *out, size_t len, const char *top, struct staged *s)
{
	size_t cap = 0;
	memset(s, 0, sizeof *s);
	size_t tl = strlen(top);
	for (size_t at = 0; at < len;) {
		const char *st = out + at;
		size_t sl = strlen(st);
		if (at + sl + 1 >= len) {
			cli_err("scope check --staged: git diff's output ends in the middle of an "
				"entry");
			return cli_fail(HF_EXIT_NOTHELD, "no_git", NULL, NULL);
		}
		const char *rel = st + sl + 1;
		size_t rl = strlen(rel);
		at += sl + 1 + rl + 1;
		if (s->n == cap) {
			cap = cap ? 2 * cap : 256;
			char **c = realloc(s->canon, cap * sizeof *c);
			if (c)
				s->canon = c;
			const char **r = realloc(s->rel, cap * sizeof *r);
			if (r)
				s->rel = r;
			char *x = realloc(s->status, cap);
			if (x)
				s->status = x;
			if (!c || !r || !x)
				goto nomem;
		}
		size_t need = (tl == 1 ? 0 : tl) + 1 + rl + 1;
		char *p = malloc(need);
		if (!p)
			goto nomem;
		snprintf(p, need, "%s/%s", tl == 1 ? "" : top, rel);
		if (!rel_ok(rel) || strlen(p) >= PATH_MAX) {
			cli_err("scope check --staged: cannot judge the staged path '%s' (%s)",
				SHOW(rel), strlen(p) >= PATH_MAX ? "longer than PATH_MAX" : "not a path");
			free(p);
			return cli_fail(HF_EXIT_USAGE, "usage", NULL, NULL);
		}
		s->canon[s->n] = p;
		s->rel[s->n] = rel;
		s->status[s->n] = st[0];
		s->n++;
	}
	return 0;
nomem:
	cli_err("scope check --staged: %s", hf_strerror(-ENOMEM));
	return cli_fail(HF_EXIT_OSERR, NULL, NULL, NULL);
}

/* THE wording of a refused path's holder (one place: what a refusal says
 * of the pod holding the path): "NAME (pid P, ..., generation G) with SPEC
 * [(the same files through another path: FS)]". */
static void staged_holder_words(const hf_rec *holder, const hf_rec *refusal, size_t k, char *buf,
				size_t n)
{
	char who[1024 + HF_REASON_MAX * 4], key[64];
	cli_scope_holder_words(holder, who, sizeof who);
	/* the holder is the registry's allocation: its reason (RG14) is
	 * "reason" there, not a refusal's "holder_reason" */
	const char *why = cli_scope_field(holder, "reason");
	if (why[0] && strlen(who) > 1 && who[strlen(who) - 1] == ')')
		snprintf(who + strlen(who) - 1, sizeof who - strlen(who) + 1, ", reason: %s)",
			 SHOW(why));
	snprintf(key, sizeof key, "refused.%zu.holder_fs", k);
	const char *fs = hf_rec_str(refusal, key);
	snprintf(key, sizeof key, "refused.%zu.holder_scope", k);
	snprintf(buf, n, "%s with %s%s%s%s", who, SHOW(hf_rec_str(refusal, key)),
		 fs ? " (the same files through another path: " : "", fs ? SHOW(fs) : "",
		 fs ? ")" : "");
}

/* A path for JSON: its text, or \xNN where it is not UTF-8. */
static json_t *path_json(const char *p)
{
	json_t *j = json_string(p);
	if (!j) {
		char shown[4 * PATH_MAX];
		j = json_string(hf_text_show(p, shown, sizeof shown, true));
	}
	return j;
}

int cli_scope_check_staged(const char *pod, uint64_t gen, bool json)
{
	char *out = NULL;
	size_t len = 0;
	static const char *const top_argv[] = { "git", "rev-parse", "--show-toplevel", NULL };
	struct git_run g;
	int code = git_start(top_argv, "git rev-parse --show-toplevel", &g);
	if (!code)
		code = git_finish(&g, &out, &len);
	if (code)
		return code;
	if (len && out[len - 1] == '\n')
		out[--len] = '\0';
	char top[PATH_MAX];
	int rc = len ? hf_path_canonical(out, top, sizeof top) : -EINVAL;
	if (rc < 0) {
		cli_err("scope check --staged: cannot resolve the work tree '%s': %s", SHOW(out),
			hf_strerror(rc));
		free(out);
		return cli_fail_rc(rc, NULL, NULL);
	}
	free(out);
	static const char *const diff_argv[] = { "git", "diff", "--cached", "--name-status", "-z",
						 "--no-renames", "--no-ext-diff", NULL };
	code = git_start(diff_argv, "git diff --cached --name-status -z --no-renames", &g);
	if (code)
		return code;
	/* RG12: the work tree's registry, read once - while git diff runs (on
	 * a 2-core machine the two overlap) */
	hf_registry *r = NULL;
	int rcode = cli_scope_read_at(top, &r, "check --staged", "");
	out = NULL;
	code = git_finish(&g, &out, &len); /* always reaped */
	struct staged s = { 0 };
	if (!code && !rcode)
		code = staged_parse(out, len, top, &s);
	if (code || rcode) {
		hf_registry_free(r);
		staged_free(&s);
		free(out);
		return rcode ? rcode : code;
	}
	hf_rec *v = NULL;
	int refused = hf_registry_check_paths(r, (const char *const *)s.canon, s.n, pod, gen, NULL,
					      &v);
	char reg[PATH_MAX] = "";
	cli_scope_reg_name(reg, sizeof reg);
	if (refused < 0) {
		cli_err("scope check --staged: %s (registry %s)", hf_strerror(refused), reg);
		code = cli_fail_rc(refused, reg, NULL);
		goto out;
	}
	long pi = pod ? hf_registry_find(r, pod) : -1;
	const hf_rec *me = pi >= 0 ? hf_registry_get(r, (size_t)pi) : NULL;
	bool lost = pod && (!me || strcmp(cli_scope_field(me, "live"), "alive") ||
			    (gen && (uint64_t)cli_scope_field_int(me, "generation", 0) != gen));
	if (lost) {
		char gtext[40] = "";
		if (gen)
			snprintf(gtext, sizeof gtext, " generation %llu", (unsigned long long)gen);
		cli_err("warning: scope check --staged: pod %s%s is not registered in %s (%s): "
			"checked only that no staged path is in another pod's write scope",
			SHOW(pod), gtext, reg, !me ? "no such pod" : "released, reaped or registered again");
	}
	code = refused ? HF_EXIT_CONFLICT : HF_EXIT_OK;
	json_t *list = json ? json_array() : NULL;
	for (size_t k = 0; k < (size_t)refused; k++) {
		char key[64];
		int64_t i = -1;
		snprintf(key, sizeof key, "refused.%zu.index", k);
		hf_rec_int(v, key, &i);
		snprintf(key, sizeof key, "refused.%zu.holder", k);
		long hi = hf_registry_find(r, hf_rec_str(v, key));
		const hf_rec *holder = hi >= 0 ? hf_registry_get(r, (size_t)hi) : NULL;
		if (i < 0 || (size_t)i >= s.n || !holder)
			continue; /* cannot be: the record is of these paths and r */
		if (json) {
			snprintf(key, sizeof key, "refused.%zu.holder_scope", k);
			json_t *h = json_pack("{s:s, s:I, s:s, s:I, s:s}", "name",
					      cli_scope_field(holder, "name"), "pid",
					      (json_int_t)cli_scope_field_int(holder, "pid", 0), "host",
					      cli_scope_field(holder, "host"), "generation",
					      (json_int_t)cli_scope_field_int(holder, "generation", 0),
					      "scope", cli_scope_field(v, key));
			snprintf(key, sizeof key, "refused.%zu.holder_fs", k);
			if (h && hf_rec_str(v, key))
				json_object_set_new(h, "fs", json_string(hf_rec_str(v, key)));
			if (h && cli_scope_field(holder, "reason")[0]) /* RG14 */
				json_object_set_new(h, "reason", json_string(cli_scope_field(holder, "reason")));
			if (h && cli_scope_field(holder, "lease_until")[0]) /* RG15 */
				json_object_set_new(h, "lease_until",
						    json_string(cli_scope_field(holder, "lease_until")));
			snprintf(key, sizeof key, "refused.%zu.state", k);
			json_array_append_new(
				list, json_pack("{s:o, s:o, s:s, s:s, s:o}", "path",
						path_json(s.rel[i]), "canonical",
						path_json(s.canon[i]), "change",
						change_of(s.status[i]), "state", cli_scope_field(v, key),
						"holder", h ? h : json_null()));
		} else {
			char who[2048 + PATH_MAX];
			staged_holder_words(holder, v, k, who, sizeof who);
			printf("%s %s: held by %s\n", change_of(s.status[i]), SHOW(s.rel[i]), who);
		}
	}
	if (json) {
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:o}", "top", top, "registry",
				      reg, "generation", (json_int_t)hf_registry_generation(r),
				      "paths", (json_int_t)s.n, "refused_count", refused, "exit",
				      code, "refused", list);
		if (o && pod) {
			json_object_set_new(o, "pod", json_string(pod));
			json_object_set_new(o, "pod_generation",
					    me ? json_integer((json_int_t)cli_scope_field_int(
							 me, "generation", 0))
					       : json_null());
		}
		cli_json_print(o);
	} else if (refused) {
		printf("refused: %d of %zu staged path%s %s in another pod's write scope "
		       "(registry %s)\n",
		       refused, s.n, s.n == 1 ? "" : "s", refused == 1 ? "is" : "are", reg);
	} else {
		printf("%zu staged path%s: free%s%s%s (registry %s, generation %llu)\n", s.n,
		       s.n == 1 ? "" : "s", pod && !lost ? " or " : "",
		       pod && !lost ? SHOW(pod) : "", pod && !lost ? "'s" : "", reg,
		       (unsigned long long)hf_registry_generation(r));
	}
out:
	hf_rec_free(v);
	hf_registry_free(r);
	staged_free(&s);
	free(out);
	return code;
}
