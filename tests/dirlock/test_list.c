/* `holdfast list` (cmd_list.c LS1-LS3): every lock, session and scope under
 * DIR with its state, read without changing anything - the tree (and the
 * registry) byte-identical and no inode changed afterwards, with dead,
 * leaked, abandoned and unreadable locks present - never following a
 * symbolic link, never opening a FIFO, at most --depth levels deep. */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir, *other;

static void setup(void)
{
	dir = hft_tmpdir();
	other = hft_tmpdir();
}

static void teardown(void)
{
	hft_rmtree(dir);
	hft_rmtree(other);
	free(dir);
	free(other);
}

TestSuite(list, .init = setup, .fini = teardown, .timeout = 120);

/* --- a snapshot of a tree: every entry's inode, mode, size, times and
 * content (regular files), never following a link or opening a FIFO --- */

static char *snap_buf;
static size_t snap_len, snap_cap;

static void snap_add(const char *s)
{
	size_t n = strlen(s);
	if (snap_len + n + 1 > snap_cap) {
		snap_cap = (snap_len + n + 1) * 2;
		snap_buf = realloc(snap_buf, snap_cap);
		cr_assert_not_null(snap_buf);
	}
	memcpy(snap_buf + snap_len, s, n + 1);
	snap_len += n;
}

static int snap_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	char line[8192];
	uint64_t digest = 0;
	char target[4096] = "";
	if (S_ISREG(st->st_mode)) {
		int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
		cr_assert_geq(fd, 0, "%s", p);
		char buf[65536];
		ssize_t n = read(fd, buf, sizeof buf);
		close(fd);
		cr_assert_geq(n, 0);
		digest = hf_fnv1a(buf, (size_t)n);
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(p, target, sizeof target - 1);
		if (n > 0)
			target[n] = '\0';
	}
	snprintf(line, sizeof line,
		 "%s ino=%ju mode=%o nlink=%ju size=%jd mtime=%ld.%09ld ctime=%ld.%09ld sum=%016" PRIx64
		 " -> %s\n",
		 p, (uintmax_t)st->st_ino, (unsigned)st->st_mode, (uintmax_t)st->st_nlink,
		 (intmax_t)st->st_size, (long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
		 (long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, digest, target);
	snap_add(line);
	return 0;
}

static char *snapshot(const char *root)
{
	snap_buf = NULL;
	snap_len = snap_cap = 0;
	snap_add("");
	cr_assert_eq(nftw(root, snap_cb, 32, FTW_PHYS), 0);
	return snap_buf;
}

/* --- the tree ------------------------------------------------------------------ */

static char *at(const char *rel)
{
	return dl_path(dir, rel);
}

static void mkdirs(const char *rel)
{
	dl_mkdirs(dir, rel);
}

static void session_record(const char *rel, int64_t started_ms)
{
	char when[HF_TIME_MAX], *rec, *p = at(rel);
	hf_time_format(started_ms, when, sizeof when);
	cr_assert_geq(asprintf(&rec,
			       "{\"lane\":\"old\",\"owner\":\"0123456789abcdef0123456789abcdef\","
			       "\"pid\":1,\"host\":\"elsewhere\",\"started\":\"%s\"}\n",
			       when),
		     0);
	hft_write(p, rec);
	free(rec);
	free(p);
}

struct tree {
	pid_t life;
	hf_lock *held;
	hf_session *session;
	hf_scope *pods[2];
	char *reg, *env;
};

static void tree_make(struct tree *t)
{
	memset(t, 0, sizeof *t);
	t->life = dl_life();
	mkdirs("a/b");
	mkdirs("sub");
	mkdirs("fifo");
	mkdirs("reg");
	/* held: a live holder */
	char *p = at("held.lock");
	cr_assert_eq(hf_lock_new(p, &t->held), 0);
	cr_assert_eq(hf_lock_set(t->held, HF_OPT_PID, t->life), 0);
	cr_assert_eq(hf_lock_acquire(t->held), 0);
	free(p);
	/* dead, leaked, abandoned, unreadable (a FIFO as its record) */
	p = at("a/dead.lock");
	dl_dead_holder(p);
	free(p);
	p = at("a/leaked.lock");
	dl_write_record(p, t->life, hf_sys_now_ms() - 3 * 3600 * 1000LL, 9, 0, NULL);
	free(p);
	mkdirs("a/b/abandoned.lock");
	mkdirs("a/b/abandoned.lock.holdfast");
	mkdirs("fifo/unreadable.lock");
	mkdirs("fifo/unreadable.lock.holdfast");
	p = at("fifo/unreadable.lock/owner");
	cr_assert_eq(mkfifo(p, 0600), 0);
	free(p);
	/* sessions: held, stale; a FIFO named like one (never opened) */
	p = at(".session.lock");
	cr_assert_eq(hf_session_new(p, "data", &t->session), 0);
	cr_assert_geq(hf_session_take(t->session), 0);
	free(p);
	session_record("sub/.session.lock", hf_sys_now_ms() - 3 * 3600 * 1000LL);
	p = at("fifo/.session.lock");
	cr_assert_eq(mkfifo(p, 0600), 0);
	free(p);
	/* a symbolic link to a tree with a lock: never followed */
	char *x = dl_path(other, "x.lock");
	struct hf_lock_info info;
	(void)info;
	dl_write_record(x, t->life, hf_sys_now_ms(), 1, 0, NULL);
	free(x);
	p = at("link");
	cr_assert_eq(symlink(other, p), 0);
	free(p);
	/* deeper than the default --depth 8 */
	mkdirs("d1/d2/d3/d4/d5/d6/d7/d8/d9");
	p = at("d1/d2/d3/d4/d5/d6/d7/d8/d9/deep.lock");
	dl_write_record(p, t->life, hf_sys_now_ms(), 1, 0, NULL);
	free(p);
	/* scopes: one under DIR, one elsewhere */
	t->reg = at("reg/scope.lock");
	cr_assert_geq(asprintf(&t->env, "HOLDFAST_REGISTRY=%s", t->reg), 0);
	const char *names[2] = { "inside", "outside" };
	char *specs[2];
	cr_assert_geq(asprintf(&specs[0], "%s/src:write:recursive", dir), 0);
	cr_assert_geq(asprintf(&specs[1], "%s/elsewhere:write", other), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(hf_scope_new(names[i], &t->pods[i]), 0);
		cr_assert_eq(hf_scope_set_str(t->pods[i], HF_OPT_REGISTRY, t->reg), 0);
		cr_assert_eq(hf_scope_set(t->pods[i], HF_OPT_PID, t->life), 0);
		cr_assert_eq(hf_scope_add(t->pods[i], specs[i]), 0);
		cr_assert_eq(hf_scope_register(t->pods[i]), 0);
		free(specs[i]);
	}
}

static void tree_done(struct tree *t)
{
	for (int i = 0; i < 2; i++)
		hf_scope_free(t->pods[i]);
	hf_session_release(t->session);
	hf_session_free(t->session);
	hf_lock_free(t->held);
	dl_kill(t->life);
	free(t->reg);
	free(t->env);
}

static const json_t *item(const json_t *locks, const char *kind, const char *rel)
{
	char *want = rel ? at(rel) : NULL;
	const json_t *found = NULL;
	size_t i;
	json_t *v;
	json_array_foreach(locks, i, v) {
		const char *k = json_string_value(json_object_get(v, "kind"));
		const char *p = json_string_value(json_object_get(v, "path"));
		const char *n = json_string_value(json_object_get(v, "name"));
		if (k && !strcmp(k, kind) &&
		    (rel ? p && !strcmp(p, want) : n && !strcmp(n, "inside")))
			found = v;
	}
	free(want);
	return found;
}

static const char *state_of(const json_t *locks, const char *kind, const char *rel)
{
	const json_t *v = item(locks, kind, rel);
	cr_assert_not_null(v, "%s %s listed", kind, rel ? rel : "scope");
	return json_string_value(json_object_get(v, "state"));
}

Test(list, lists_every_kind_and_changes_nothing)
{
	struct tree t;
	tree_make(&t);
	char *before = snapshot(dir);
	char *out, *err;
	const char *js[] = { "holdfast", "list", dir, "--json", NULL };
	cr_assert_eq(hft_cli_env(&out, &err, t.env, NULL, js), 0, "%s", err);
	char *after = snapshot(dir);
	cr_assert_str_eq(after, before, "list --json changed the tree");
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	cr_assert_not_null(j, "one JSON object: %s", out);
	const json_t *locks = json_object_get(j, "locks");
	cr_assert(json_is_array(locks));
	cr_assert_str_eq(state_of(locks, "lock", "held.lock"), "held");
	cr_assert_str_eq(state_of(locks, "lock", "a/dead.lock"), "dead");
	cr_assert_str_eq(state_of(locks, "lock", "a/leaked.lock"), "leaked");
	cr_assert_str_eq(state_of(locks, "lock", "a/b/abandoned.lock"), "abandoned");
	cr_assert_str_eq(state_of(locks, "lock", "fifo/unreadable.lock"), "partial");
	cr_assert_str_eq(state_of(locks, "session", ".session.lock"), "held");
	cr_assert_str_eq(state_of(locks, "session", "sub/.session.lock"), "stale");
	cr_assert_str_eq(state_of(locks, "scope", NULL), "held");
	cr_assert_null(item(locks, "session", "fifo/.session.lock"), "a FIFO is not a session");
	cr_assert_null(item(locks, "lock", "d1/d2/d3/d4/d5/d6/d7/d8/d9/deep.lock"));
	cr_assert(json_is_true(json_object_get(j, "truncated")), "the depth bound is said");
	size_t i;
	json_t *v;
	int scopes = 0;
	json_array_foreach(locks, i, v) {
		const char *p = json_string_value(json_object_get(v, "path"));
		const char *k = json_string_value(json_object_get(v, "kind"));
		if (!strcmp(k, "scope")) {
			scopes++;
			continue;
		}
		cr_assert(p && !strncmp(p, dir, strlen(dir)) && p[0] == '/', "absolute: %s", p);
		cr_assert_null(strstr(p, "/link/"), "a symbolic link was followed: %s", p);
		cr_assert(json_is_integer(json_object_get(v, "age_ms")), "%s: age_ms", p);
	}
	cr_assert_eq(scopes, 1, "only the scope under DIR");
	const json_t *h = item(locks, "lock", "held.lock");
	const char *acq = json_string_value(json_object_get(h, "acquired"));
	cr_assert(acq && acq[strlen(acq) - 1] == 'Z', "ISO-8601 UTC: %s", acq);
	cr_assert_eq(json_integer_value(json_object_get(h, "pid")), t.life);
	cr_assert_eq(json_integer_value(json_object_get(h, "fence")),
		     (json_int_t)hf_lock_fence(t.held));
	json_decref(j);
	free(out);
	free(err);

	/* the human table, and --all-scopes, --depth: still nothing changed */
	const char *hs[] = { "holdfast", "list", dir, "--all-scopes", "--depth", "12", NULL };
	cr_assert_eq(hft_cli_env(&out, &err, t.env, NULL, hs), 0, "%s", err);
	cr_assert_not_null(strstr(out, "outside"), "--all-scopes: %s", out);
	cr_assert_not_null(strstr(out, "deep.lock"), "--depth 12: %s", out);
	char *again = snapshot(dir);
	cr_assert_str_eq(again, before, "list changed the tree");
	/* aligned: every row's PATH starts where the header's does */
	const char *col = strstr(out, "PATH");
	cr_assert_not_null(col);
	size_t off = (size_t)(col - out);
	int rows = 0;
	for (char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		char *l = line + 1;
		cr_assert(strlen(l) > off && l[off - 1] == ' ' && l[off] != ' ', "aligned: %.*s",
			  (int)strcspn(l, "\n"), l);
		rows++;
	}
	cr_assert_geq(rows, 9, "%s", out);
	free(out);
	free(err);
	free(before);
	free(after);
	free(again);
	tree_done(&t);
}

/* An unreadable directory is named and the listing goes on. Root reads
 * every directory, so as root the listing runs as user nobody (setpriv) on
 * a tree nobody may enter but for the closed directory. */
Test(list, errors_name_the_file_and_do_not_stop_the_listing)
{
	mkdirs("closed");
	mkdirs("open");
	char *c = at("closed"), *l = at("open/x.lock");
	dl_write_record(l, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	cr_assert_eq(chmod(c, 0), 0);
	char *out, *err;
	int st;
	if (geteuid() == 0) {
		/* the tree (and its scratch parent) readable by nobody */
		char *open_dir = at("open"), *parent = strdup(dir);
		cr_assert_eq(chmod(dir, 0755), 0);
		cr_assert_eq(chmod(open_dir, 0755), 0);
		chmod(l, 0755);
		char *script;
		cr_assert_gt(asprintf(&script,
				      "exec setpriv --reuid=65534 --regid=65534 --clear-groups "
				      "\"$HOLDFAST_BIN\" list '%s'",
				      dir),
			     0);
		st = hft_sh(&out, &err, "sh", NULL, script);
		free(script);
		free(open_dir);
		free(parent);
	} else {
		const char *js[] = { "holdfast", "list", dir, NULL };
		st = hft_cli(&out, &err, js);
	}
	chmod(c, 0700);
	cr_assert_eq(st, 0, "%s", err);
	cr_assert(strstr(err, c) && strstr(out, "x.lock"), "%s / %s", out, err);
	free(out);
	free(err);
	free(c);
	free(l);
}

Test(list, usage_and_missing_dir)
{
	char *err;
	const char *bad[] = { "holdfast", "list", "--depth", "99", NULL };
	cr_assert_eq(hft_cli(NULL, &err, bad), 64);
	free(err);
	char *missing = at("nope");
	const char *m[] = { "holdfast", "list", missing, NULL };
	cr_assert_neq(hft_cli(NULL, &err, m), 0);
	cr_assert_not_null(strstr(err, missing), "%s", err);
	free(err);
	free(missing);
}

/* The root is a directory like any other: `holdfast list /` lists it (the
 * handle for "/" is one no lock can be taken on), here at depth 0. */
Test(list, the_root_is_listed)
{
	char *out, *err;
	const char *root[] = { "holdfast", "list", "/", "--depth", "0", "--json", NULL };
	cr_assert_eq(hft_cli(&out, &err, root), 0, "%s", err);
	json_t *j = json_loads(out, 0, NULL);
	cr_assert_not_null(j, "%s", out);
	cr_assert(json_is_array(json_object_get(j, "locks")) || json_is_array(j), "%s", out);
	json_decref(j);
	free(out);
	free(err);
	hf_lock *l;
	cr_assert_eq(hf_lock_new("/", &l), 0);
	cr_assert_eq(hf_lock_acquire(l), -EINVAL, "no lock is taken on the root");
	hf_lock_free(l);
}

/* LS5: `holdfast flock` locks are listed by their records, judged by the
 * kernel's locks as `lock status FILE` judges them: a holder in its section
 * is held and named from its record (pid, command, fence); one that ended
 * is free though its record stays; a file flock(1) holds beside an old
 * record is held and named by the kernel's pid, not by that record; a
 * flock(1) lock without a record is not found. Nothing is changed. */
Test(list, flock_locks_by_their_records)
{
	if (access("/usr/bin/flock", X_OK) != 0)
		cr_skip_test("no /usr/bin/flock (util-linux)");
	char *script;
	cr_assert_geq(asprintf(&script,
			       "set -e; cd '%s'; mkfifo h g1 g2\n"
			       "\"$HOLDFAST_BIN\" flock a sh -c 'echo > h; read x < g1' & pa=$!; read x < h\n"
			       "\"$HOLDFAST_BIN\" flock b true\n"
			       "\"$HOLDFAST_BIN\" flock c true\n"
			       "/usr/bin/flock c sh -c 'echo > h; read x < g2' & pc=$!; read x < h\n"
			       "/usr/bin/flock d true\n"
			       "\"$HOLDFAST_BIN\" list . --json > list.json\n"
			       "echo > g1; echo > g2; wait\n"
			       "echo \"$pa $pc\"",
			       dir),
		      0);
	char *out, *err;
	int st = hft_sh(&out, &err, "bash", NULL, script);
	cr_assert_eq(st, 0, "%s", err);
	int pa = 0, pc = 0;
	cr_assert_eq(sscanf(out, "%d %d", &pa, &pc), 2, "%s", out);
	char *lj = at("list.json");
	json_error_t je;
	json_t *j = json_load_file(lj, 0, &je);
	cr_assert_not_null(j, "%s: %s", lj, je.text);
	const json_t *locks = json_object_get(j, "locks");
	const json_t *a = item(locks, "flock", "a");
	cr_assert_not_null(a, "the holder in its section is listed");
	cr_assert_str_eq(json_string_value(json_object_get(a, "state")), "held");
	cr_assert(json_is_true(json_object_get(a, "record")));
	cr_assert_eq(json_integer_value(json_object_get(a, "pid")), pa, "the holder's pid");
	cr_assert_str_eq(json_string_value(json_object_get(a, "comm")),
			 "sh -c echo > h; read x < g1");
	cr_assert_gt(json_integer_value(json_object_get(a, "fence")), 0);
	cr_assert_str_eq(state_of(locks, "flock", "b"), "free");
	cr_assert_null(json_object_get(item(locks, "flock", "b"), "pid"),
		       "a free lock names nobody (FK3)");
	const json_t *c = item(locks, "flock", "c");
	cr_assert_str_eq(json_string_value(json_object_get(c, "state")), "held");
	cr_assert(json_is_false(json_object_get(c, "record")), "the old record does not count");
	cr_assert_eq(json_integer_value(json_object_get(c, "pid")), pc, "the kernel's pid");
	cr_assert_null(json_object_get(c, "fence"));
	cr_assert_null(item(locks, "flock", "d"), "no record: not found");
	json_decref(j);
	free(lj);
	free(out);
	free(err);
	free(script);
}
