/* The file system's listing in the library (fs/fslist.c FL1-FL3,
 * hf_fs_list): locks held, dead and without their state directory,
 * sessions held and stale, each item the record hf_lock_status /
 * hf_session_status gives plus "kind" (no "backend": `holdfast list`'s
 * items, which it prints); flock locks by their records (FL4); hf_lock_list
 * on the file system through the public API; a symbolic link loop
 * and a link out of the tree not followed, FIFOs never opened, --depth and
 * .git, and an unreadable directory reported as an error that does not stop
 * the listing. */
#include "dl.h"
#include "fslist.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

TestSuite(fslist, .init = setup, .fini = teardown, .timeout = 60);

static char *at(const char *rel)
{
	return dl_path(dir, rel);
}

static void mkdirs(const char *rel)
{
	dl_mkdirs(dir, rel);
}

struct listing {
	json_t *items, *errors;
	bool truncated;
};

static void list(int depth, struct listing *ls)
{
	memset(ls, 0, sizeof *ls);
	int rc = hf_fs_list(dir, depth, &ls->items, &ls->errors, &ls->truncated);
	cr_assert_eq(rc, 0, "hf_fs_list: %s", hf_strerror(rc));
	cr_assert(json_is_array(ls->items) && json_is_array(ls->errors));
}

static void listing_free(struct listing *ls)
{
	json_decref(ls->items);
	json_decref(ls->errors);
}

/* The item whose "path" is dir/rel, or NULL. */
static json_t *item(const struct listing *ls, const char *rel)
{
	char *p = at(rel);
	size_t i;
	json_t *it, *found = NULL;
	json_array_foreach(ls->items, i, it)
		if (!strcmp(json_string_value(json_object_get(it, "path")) ?: "", p))
			found = it;
	free(p);
	return found;
}

/* List at depth: rel is the one item, and no error. */
static void list_only(int depth, const char *rel, struct listing *ls)
{
	list(depth, ls);
	cr_assert_eq(json_array_size(ls->items), 1, "%s", json_dumps(ls->items, 0));
	cr_assert_not_null(item(ls, rel), "%s not listed", rel);
	cr_assert_eq(json_array_size(ls->errors), 0, "%s", json_dumps(ls->errors, 0));
}

static const char *str(const json_t *it, const char *k)
{
	const char *v = json_string_value(json_object_get(it, k));
	return v ? v : "";
}

/* Every field of the status record of rel is in the item, "kind"
 * besides, and nothing else. */
static void same_fields(const json_t *it, const char *rel, const char *kind)
{
	char *p = at(rel);
	hf_rec *r;
	int rc = !strcmp(kind, "lock") ? hf_lock_status(p, &r) : hf_session_status(p, 0, &r);
	cr_assert_eq(rc, 0);
	json_t *o = json_loads(hf_rec_json(r), 0, NULL);
	cr_assert_not_null(o);
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
		cr_assert_not_null(json_object_get(it, k), "%s: %s missing", rel, k);
	cr_assert_eq(json_object_size(it), json_object_size(o) + 1, "%s: %zu fields, %zu", rel,
		     json_object_size(it), json_object_size(o));
	cr_assert_str_eq(str(it, "kind"), kind);
	cr_assert_null(json_object_get(it, "backend"), "%s: `holdfast list` has no backend", rel);
	cr_assert_str_eq(str(it, "state"), hf_rec_str(r, "state"));
	json_decref(o);
	hf_rec_free(r);
	free(p);
}

Test(fslist, locks_held_dead_and_without_state_directory)
{
	pid_t life = dl_life();
	char *p = at("held.lock");
	hf_lock *held;
	cr_assert_eq(hf_lock_new(p, &held), 0);
	cr_assert_eq(hf_lock_set(held, HF_OPT_PID, life), 0);
	cr_assert_eq(hf_lock_acquire(held), 0);
	free(p);
	mkdirs("a");
	p = at("a/dead.lock");
	dl_dead_holder(p);
	free(p);
	p = at("a/bare.lock"); /* a record, no state directory */
	dl_write_record(p, life, hf_sys_now_ms(), 7, 0, NULL);
	free(p);
	char *bare_state = at("a/bare.lock.holdfast");
	struct stat st;
	cr_assert_neq(lstat(bare_state, &st), 0);

	struct listing ls;
	list(HF_FS_LIST_DEPTH_DEFAULT, &ls);
	cr_assert_eq(json_array_size(ls.items), 3, "%s", json_dumps(ls.items, 0));
	cr_assert_eq(json_array_size(ls.errors), 0);
	json_t *h = item(&ls, "held.lock"), *d = item(&ls, "a/dead.lock"),
	       *b = item(&ls, "a/bare.lock");
	cr_assert(h && d && b, "%s", json_dumps(ls.items, 0));
	cr_assert_str_eq(str(h, "state"), "held");
	cr_assert_str_eq(str(h, "token"), hf_rec_str(hf_lock_holder(held), "token") ?: str(h, "token"));
	cr_assert_str_eq(str(d, "state"), "dead");
	cr_assert_str_eq(str(b, "state"), "held");
	same_fields(h, "held.lock", "lock");
	same_fields(d, "a/dead.lock", "lock");
	same_fields(b, "a/bare.lock", "lock");
	/* FL1: read only - no state directory made for the bare lock */
	cr_assert_neq(lstat(bare_state, &st), 0, "the listing made %s", bare_state);
	listing_free(&ls);
	free(bare_state);
	cr_assert_eq(hf_lock_release(held), 0);
	hf_lock_free(held);
	dl_kill(life);
}

Test(fslist, sessions_held_and_stale)
{
	char *p = at(".session.lock");
	hf_session *s;
	cr_assert_eq(hf_session_new(p, "data", &s), 0);
	cr_assert_geq(hf_session_take(s), 0);
	free(p);
	mkdirs("sub");
	char when[HF_TIME_MAX], *rec;
	hf_time_format(hf_sys_now_ms() - 3 * 3600 * 1000LL, when, sizeof when);
	cr_assert_geq(asprintf(&rec,
			       "{\"lane\":\"old\",\"owner\":\"0123456789abcdef0123456789abcdef\","
			       "\"pid\":1,\"host\":\"elsewhere\",\"started\":\"%s\"}\n",
			       when),
		      0);
	p = at("sub/.session.lock");
	hft_write(p, rec);
	free(p);
	free(rec);

	struct listing ls;
	list(HF_FS_LIST_DEPTH_DEFAULT, &ls);
	cr_assert_eq(json_array_size(ls.items), 2, "%s", json_dumps(ls.items, 0));
	json_t *h = item(&ls, ".session.lock"), *o = item(&ls, "sub/.session.lock");
	cr_assert(h && o, "%s", json_dumps(ls.items, 0));
	cr_assert_str_eq(str(h, "lane"), "data");
	cr_assert_str_eq(str(o, "lane"), "old");
	cr_assert_str_neq(str(h, "state"), str(o, "state"));
	same_fields(h, ".session.lock", "session");
	same_fields(o, "sub/.session.lock", "session");
	listing_free(&ls);
	cr_assert_eq(hf_session_release(s), 0);
	hf_session_free(s);
}

/* FL2: a link to the directory itself (a loop) and a link to a tree with a
 * lock: neither followed - the other tree's lock is not listed and the
 * walk does not go round the loop. */
Test(fslist, symbolic_links_not_followed)
{
	char *x = dl_path(other, "x.lock"), *p;
	dl_write_record(x, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	free(x);
	mkdirs("in");
	p = at("in/loop");
	cr_assert_eq(symlink("..", p), 0);
	free(p);
	p = at("out");
	cr_assert_eq(symlink(other, p), 0);
	free(p);
	p = at("in/mine.lock");
	dl_write_record(p, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	free(p);

	struct listing ls;
	list_only(HF_FS_LIST_DEPTH_MAX, "in/mine.lock", &ls);
	cr_assert(!ls.truncated, "the loop was walked to the depth bound");
	listing_free(&ls);
}

/* FL2: FIFOs named like a session file and like a state directory are not
 * opened (an open would wait for a writer: the test's timeout) nor listed. */
Test(fslist, fifos_not_opened, .timeout = 20)
{
	mkdirs("f");
	const char *fifos[] = { "f/.session.lock", "f/pipe.lock.holdfast", "f/pipe" };
	for (size_t i = 0; i < 3; i++) {
		char *p = at(fifos[i]);
		cr_assert_eq(mkfifo(p, 0600), 0);
		free(p);
	}
	char *p = at("f/real.lock");
	dl_write_record(p, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	free(p);
	struct listing ls;
	list_only(HF_FS_LIST_DEPTH_DEFAULT, "f/real.lock", &ls);
	listing_free(&ls);
}

/* FL2: at most depth levels below dir (truncated says so); .git not entered. */
Test(fslist, depth_and_git)
{
	mkdirs("a/b/c");
	mkdirs(".git/refs");
	char *p = at("a/b/c/deep.lock");
	dl_write_record(p, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	free(p);
	p = at(".git/refs/hidden.lock");
	dl_write_record(p, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	free(p);
	p = at("top.lock");
	dl_write_record(p, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	free(p);

	struct listing ls;
	list(2, &ls); /* a (1), a/b (2): a/b/c not entered */
	cr_assert_eq(json_array_size(ls.items), 1, "%s", json_dumps(ls.items, 0));
	cr_assert_not_null(item(&ls, "top.lock"));
	cr_assert(ls.truncated);
	listing_free(&ls);
	list(3, &ls);
	cr_assert_eq(json_array_size(ls.items), 2, "%s", json_dumps(ls.items, 0));
	cr_assert_not_null(item(&ls, "a/b/c/deep.lock"));
	cr_assert_null(item(&ls, ".git/refs/hidden.lock"));
	cr_assert(!ls.truncated);
	listing_free(&ls);
	list(0, &ls);
	cr_assert_eq(json_array_size(ls.items), 1);
	cr_assert(ls.truncated);
	listing_free(&ls);

	json_t *i, *e;
	cr_assert_eq(hf_fs_list(dir, HF_FS_LIST_DEPTH_MAX + 1, &i, &e, NULL), -EINVAL);
	cr_assert_eq(hf_fs_list(dir, -1, &i, &e, NULL), -EINVAL);
	char *missing = at("nope");
	cr_assert_eq(hf_fs_list(missing, 1, &i, &e, NULL), -ENOENT);
	free(missing);
}

/* FL3: an unreadable directory is an error naming it, and the listing goes
 * on. Root reads every directory: the listing runs in a child as user
 * nobody, on a tree nobody may enter but for the closed directory. */
Test(fslist, unreadable_directory_is_an_error)
{
	mkdirs("closed");
	mkdirs("open");
	char *l = at("open/x.lock"), *c = at("closed");
	dl_write_record(l, getpid(), hf_sys_now_ms(), 1, 0, NULL);
	cr_assert_eq(chmod(dir, 0755), 0);
	char *o = at("open");
	cr_assert_eq(chmod(o, 0755), 0);
	cr_assert_eq(chmod(l, 0755), 0);
	free(o);
	cr_assert_eq(chmod(c, 0), 0);
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		     setresuid(65534, 65534, 65534) < 0))
			_exit(2);
		json_t *items, *errors;
		if (hf_fs_list(dir, HF_FS_LIST_DEPTH_DEFAULT, &items, &errors, NULL) < 0)
			_exit(3);
		json_t *both = json_pack("{s:o,s:o}", "items", items, "errors", errors);
		char *s = json_dumps(both, 0);
		size_t n = strlen(s);
		_exit(write(pfd[1], s, n) == (ssize_t)n ? 0 : 4);
	}
	close(pfd[1]);
	char buf[65536];
	size_t got = 0;
	ssize_t k;
	while ((k = read(pfd[0], buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)k;
	close(pfd[0]);
	buf[got] = '\0';
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	chmod(c, 0700);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d", st);
	json_t *both = json_loads(buf, 0, NULL);
	cr_assert_not_null(both, "%s", buf);
	json_t *errors = json_object_get(both, "errors"), *items = json_object_get(both, "items");
	cr_assert_eq(json_array_size(errors), 1, "%s", buf);
	json_t *e = json_array_get(errors, 0);
	cr_assert_str_eq(str(e, "path"), c);
	cr_assert_str_eq(str(e, "error"), hf_error_name(-EACCES));
	cr_assert_str_neq(str(e, "message"), "");
	cr_assert_eq(json_array_size(items), 1, "%s", buf);
	cr_assert_str_eq(str(json_array_get(items, 0), "path"), l);
	json_decref(both);
	free(c);
	free(l);
}

/* The items of a listing keyed by path, their ages dropped (each listing
 * reads the clock itself), in path order. */
static json_t *by_path(const json_t *items)
{
	json_t *o = json_object();
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it) {
		const char *k = json_string_value(json_object_get(it, "kind"));
		if (k && !strcmp(k, "scope"))
			continue;
		json_t *c = json_deep_copy(it), *h;
		json_object_del(c, "age_ms");
		size_t j;
		json_array_foreach(json_object_get(c, "holders"), j, h)
			json_object_del(h, "age_ms"); /* read at another instant */
		cr_assert_eq(json_object_set_new(o, str(it, "path"), c), 0);
	}
	return o;
}

/* A `holdfast flock` record for rel, as cmd_flock.c writes it (FK2), for
 * the file fd has open (locker: this process). */
static void flock_record(const char *rel, int fd, int64_t fence)
{
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	char *p = at(rel), *rec;
	cr_assert_geq(asprintf(&rec,
			       "{\"holder\":\"holdfast flock\",\"pid\":%d,\"pid_start\":1,"
			       "\"host\":\"h\",\"command\":\"the test\",\"locker\":%d,\"dev\":%ju,"
			       "\"ino\":%ju,\"fence\":%" PRId64 ",\"taken_ms\":%" PRId64 "}\n",
			       (int)getpid(), (int)getpid(), (uintmax_t)st.st_dev,
			       (uintmax_t)st.st_ino, fence, hf_sys_now_ms()),
		      0);
	char *rp;
	cr_assert_geq(asprintf(&rp, "%s.holdfast-flock", p), 0);
	hft_write(rp, rec);
	free(rp);
	free(rec);
	free(p);
}

/* hf_lock_list on the file system, through the public API: {"dir",
 * "locks", "errors", "truncated"}, the locks, sessions and flock locks
 * (FL4) under the handle's path, HF_OPT_DEPTH's bound and range - and its
 * items are exactly `holdfast list --json`'s (ages aside). */
Test(fslist, hf_lock_list_on_the_file_system)
{
	char *p = at("held.lock");
	hf_lock *held;
	cr_assert_eq(hf_lock_new(p, &held), 0);
	cr_assert_eq(hf_lock_acquire(held), 0);
	free(p);
	p = at(".session.lock");
	hf_session *s;
	cr_assert_eq(hf_session_new(p, "data", &s), 0);
	cr_assert_geq(hf_session_take(s), 0);
	free(p);
	/* f: held by this process with its record (FK3: it counts); g: a
	 * record whose lock nobody holds */
	char *f = at("f"), *g = at("g");
	hft_write(f, "");
	hft_write(g, "");
	int ffd = open(f, O_RDONLY | O_CLOEXEC), gfd = open(g, O_RDONLY | O_CLOEXEC);
	cr_assert(ffd >= 0 && gfd >= 0);
	cr_assert_eq(flock(ffd, LOCK_EX | LOCK_NB), 0);
	flock_record("f", ffd, 7);
	flock_record("g", gfd, 3);
	mkdirs("x/y");
	p = at("x/y/deep.lock");
	hf_lock *deep;
	cr_assert_eq(hf_lock_new(p, &deep), 0);
	cr_assert_eq(hf_lock_acquire(deep), 0);
	free(p);

	hf_lock *l;
	cr_assert_eq(hf_lock_new(dir, &l), 0);
	cr_assert_eq(hf_lock_set(l, HF_OPT_DEPTH, -1), -EINVAL);
	cr_assert_eq(hf_lock_set(l, HF_OPT_DEPTH, HF_LIST_DEPTH_MAX + 1), -EINVAL);
	hf_rec *r = NULL;
	cr_assert_eq(hf_lock_list(l, &r), 0, "hf_lock_list on the file system");
	json_t *o = json_loads(hf_rec_json(r), 0, NULL);
	cr_assert_not_null(o);
	cr_assert_str_eq(str(o, "dir"), dir);
	cr_assert_eq(json_array_size(json_object_get(o, "errors")), 0);
	cr_assert(json_is_false(json_object_get(o, "truncated")));
	json_t *locks = json_object_get(o, "locks");
	struct listing ls = { .items = locks };
	json_t *h = item(&ls, "held.lock"), *se = item(&ls, ".session.lock"),
	       *fi = item(&ls, "f"), *gi = item(&ls, "g"), *di = item(&ls, "x/y/deep.lock");
	cr_assert(h && se && fi && gi && di, "%s", json_dumps(locks, 0));
	cr_assert_eq(json_array_size(locks), 5, "%s", json_dumps(locks, 0));
	same_fields(h, "held.lock", "lock");
	same_fields(se, ".session.lock", "session");
	cr_assert_str_eq(str(fi, "kind"), "flock");
	cr_assert_str_eq(str(fi, "state"), "held");
	cr_assert(json_is_true(json_object_get(fi, "record")), "FK3: the record counts");
	cr_assert_eq(json_integer_value(json_object_get(fi, "fence")), 7);
	cr_assert_eq(json_integer_value(json_object_get(fi, "pid")), getpid());
	cr_assert_str_eq(str(fi, "comm"), "the test");
	cr_assert_str_eq(str(gi, "state"), "free");
	cr_assert_null(json_object_get(gi, "pid"), "a free lock names nobody (FK3)");

	/* the CLI prints the library's items, exactly */
	const char *argv[] = { "holdfast", "list", dir, "--json", NULL };
	char *out, *err;
	cr_assert_eq(hft_cli(&out, &err, argv), 0, "%s", err);
	json_t *cli = json_loads(out, 0, NULL);
	cr_assert_not_null(cli, "%s", out);
	json_t *mine = by_path(locks), *theirs = by_path(json_object_get(cli, "locks"));
	char *a = json_dumps(mine, JSON_SORT_KEYS), *b = json_dumps(theirs, JSON_SORT_KEYS);
	cr_assert_str_eq(b, a, "holdfast list --json and hf_lock_list differ");
	free(a);
	free(b);
	json_decref(mine);
	json_decref(theirs);
	json_decref(cli);
	free(out);
	free(err);
	json_decref(o);
	hf_rec_free(r);

	/* HF_OPT_DEPTH: x/y is two levels down */
	cr_assert_eq(hf_lock_set(l, HF_OPT_DEPTH, 1), 0);
	cr_assert_eq(hf_lock_list(l, &r), 0);
	o = json_loads(hf_rec_json(r), 0, NULL);
	cr_assert(json_is_true(json_object_get(o, "truncated")), "depth 1 stops above x/y");
	ls.items = json_object_get(o, "locks");
	cr_assert_null(item(&ls, "x/y/deep.lock"));
	cr_assert_not_null(item(&ls, "held.lock"));
	json_decref(o);
	hf_rec_free(r);
	hf_lock_free(l);

	/* the directory itself unreadable: the one failure */
	char *gone = at("gone");
	cr_assert_eq(hf_lock_new(gone, &l), 0);
	r = NULL;
	cr_assert_eq(hf_lock_list(l, &r), -ENOENT);
	cr_assert_null(r);
	hf_lock_free(l);
	free(gone);

	close(ffd);
	close(gfd);
	free(f);
	free(g);
	cr_assert_eq(hf_lock_release(deep), 0);
	hf_lock_free(deep);
	cr_assert_eq(hf_session_release(s), 0);
	hf_session_free(s);
	cr_assert_eq(hf_lock_release(held), 0);
	hf_lock_free(held);
}
