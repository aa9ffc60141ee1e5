/*
 * fslist.c - the file system's listing: every directory lock, session lock
 * and holdfast flock lock under a directory, each judged as its status
 * judges it (dirlock.c's hf_dirlock_status, session_file.c's
 * hf_sessionlock_status, `lock status FILE` for a flock record: FK3), as
 * items of the shape etcdlist.c gives for etcd's (a record's fields and
 * "kind"; etcd's add "backend" and "key"). hf_lock_list serves it for the
 * file system (fs_backend.c), and `holdfast list` prints it (cmd_list.c).
 *
 * What it finds:
 *   lock      a directory X.holdfast/ (X's state directory) names the lock
 *             X; a directory X holding a regular file "owner" without
 *             X.holdfast beside it (a cleanup deleted it) is the lock X too
 *   session   a regular file named .session.lock (HF_SESSION_FILE)
 *   flock     a regular file X.holdfast-flock (`holdfast flock`'s record)
 *             names the file or directory X it locks (FL4); so does a
 *             directory X.holdfast-flock.d (its shared holders' records,
 *             cmd_flock.c FK8) without X.holdfast-flock beside it
 *
 * Steps (per directory, from dir down):
 *   1. read its entries (hf_dir_each), each stat'ed without following
 *      (fstatat, AT_SYMLINK_NOFOLLOW); sort them by name
 *   2. a session file: its status; a flock record or a directory of shared
 *      records: X's kernel locks and the records (FL4), the directory never
 *      entered; a state directory X.holdfast: X's status; a
 *      directory X with X.holdfast beside it: skipped (listed by its state
 *      directory); a directory holding "owner": its status
 *   3. every other directory, unless it is .git or depth is reached: open
 *      it (O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK) and go to 1
 *
 * Invariants:
 *   (FL1) It reads, never writes: status reads only (no acquire, reap or
 *         sweep; no state directory made), and the walk opens nothing but
 *         directories, /proc/locks, the regular files named
 *         *.holdfast-flock and those named *.json in a *.holdfast-flock.d
 *         directory (O_NOFOLLOW | O_NONBLOCK).
 *   (FL2) No symbolic link below dir is followed and nothing the walk did
 *         not find a directory or a flock record is opened (a FIFO or a
 *         device is never opened, and whatever replaces an entry meanwhile
 *         is opened O_NONBLOCK, so nothing can make it wait): entries are
 *         judged by an fstatat that does not follow, and opened with
 *         O_NOFOLLOW | O_NONBLOCK (directories O_DIRECTORY). At most depth
 *         levels below dir; .git is not entered.
 *   (FL3) An error names its file and does not stop the listing: an entry
 *         of the errors array (path, error, message). Only dir itself
 *         unreadable fails the call. A directory replaced meanwhile (gone,
 *         now a link or a file) is skipped, not an error.
 *   (FL4) A holdfast flock lock is listed by its records (the exclusive
 *         holder's X.holdfast-flock, the shared holders' in
 *         X.holdfast-flock.d), and judged as `lock status FILE` judges it
 *         (cmd_flock.c FK3, FK8: hf_flock_holders): held only while the
 *         kernel holds a lock on X; "mode" exclusive when one of its locks
 *         is, else shared; "holders" every kernel lock on X, each named by
 *         the record that counts for it (its locker's flock(2) lock of the
 *         record's mode) or by the kernel's pid alone ("record": false);
 *         the item's own pid, comm, host, fence, age_ms and record are the
 *         first holder's. A flock(1) lock with no record is not found
 *         (nothing on disk says it exists: lslocks lists those); X gone or
 *         neither a file nor a directory: nothing.
 */
#include "fslist.h"

#include "dirlock.h"
#include "flockrec.h"
#include "internal.h"
#include "rec.h"
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STATE_SUFFIX ".holdfast"
#define OPEN_WALK (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

struct walker {
	json_t *items, *errors;
	int depth_max;
	bool truncated;
	int fatal; /* -ENOMEM: the listing cannot go on */
};

/* FL3: path could not be read (rc). */
static void list_error(struct walker *w, const char *path, int rc)
{
	json_t *e = json_pack("{s:s,s:s,s:s}", "path", path, "error", hf_error_name(rc),
			      "message", hf_strerror(rc));
	if (!e || json_array_append_new(w->errors, e) < 0)
		w->fatal = -ENOMEM;
}

/* An item: r's object with kind (r freed). */
static void add(struct walker *w, hf_rec *r, const char *kind)
{
	json_t *o = r ? hf_rec_object(r) : NULL;
	if (!o) {
		w->fatal = -ENOMEM;
		hf_rec_free(r);
		return;
	}
	json_incref(o);
	hf_rec_free(r);
	if (json_object_set_new(o, "kind", json_string(kind)) < 0 ||
	    json_array_append_new(w->items, o) < 0)
		w->fatal = -ENOMEM;
}

static void add_lock(struct walker *w, const char *path)
{
	struct hf_lock_info i;
	hf_rec *all = NULL;
	int rc = hf_fs_lock_status(path, &i, &all);
	if (rc < 0)
		list_error(w, path, rc);
	else
		add(w, hf_rec_merge(hf_rec_from_dirlock(&i, path), all), "lock");
}

static void add_session(struct walker *w, const char *path)
{
	struct hf_sessionlock_status st;
	int rc = hf_sessionlock_status(path, 0, &st);
	if (rc < 0)
		list_error(w, path, rc);
	else
		add(w, hf_rec_from_session_status(&st, path), "session");
}

/* FL4: the item of the flock lock on path, whose record path.holdfast-flock
 * (or shared records' directory path.holdfast-flock.d) the walk found: kind
 * "flock", state held or free by the kernel's locks (/proc/locks), every
 * holder in "holders" (hf_flock_holders: from its record while FK3 holds,
 * else the kernel's pid and its comm), the first one's pid, command as
 * "comm", host, age and fence on the item. */
static void add_flock(struct walker *w, const char *path)
{
	struct stat st;
	if (hf_sys_fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		return; /* FL2: never followed */
	json_t *o = json_pack("{s:s,s:s}", "kind", "flock", "path", path);
	if (!o) {
		w->fatal = -ENOMEM;
		return;
	}
	char rp[PATH_MAX + 32];
	json_t *hs = (size_t)snprintf(rp, sizeof rp, "%s" HF_FLOCKREC_SUFFIX, path) < sizeof rp
			     ? hf_flock_holders(rp, &st) /* FK3, FK8 */
			     : hf_flock_holders(NULL, &st);
	if (!hs) {
		json_decref(o);
		w->fatal = -ENOMEM;
		return;
	}
	if (json_array_size(hs) == 0) {
		json_decref(hs);
		json_object_set_new(o, "state", json_string("free"));
		if (json_array_append_new(w->items, o) < 0)
			w->fatal = -ENOMEM;
		return;
	}
	/* the item names the first holder; "holders" every one */
	const json_t *h = json_array_get(hs, 0);
	bool ex = false;
	size_t i;
	json_t *x;
	json_array_foreach(hs, i, x)
		ex |= !strcmp(json_string_value(json_object_get(x, "mode")), "exclusive");
	json_object_set_new(o, "state", json_string("held"));
	json_object_set(o, "lock", json_object_get(h, "api"));
	json_object_set_new(o, "mode", json_string(ex ? "exclusive" : "shared"));
	json_object_set(o, "record", json_object_get(h, "record"));
	json_object_set(o, "pid", json_object_get(h, "pid"));
	json_object_set(o, "host", json_object_get(h, "host"));
	json_object_set(o, "comm", json_object_get(h, "command"));
	json_object_set(o, "fence", json_object_get(h, "fence"));
	if (json_object_get(h, "taken_ms"))
		json_object_set_new(o, "age_ms", json_integer(hf_sys_now_ms() -
							      hf_flockrec_int(h, "taken_ms")));
	json_object_set_new(o, "holders", hs);
	/* a NULL member (a hand-edited record) is no field */
	const char *key;
	json_t *v, *tmp;
	json_object_foreach_safe(o, tmp, key, v)
	{
		if (json_is_null(v))
			json_object_del(o, key);
	}
	if (json_array_append_new(w->items, o) < 0)
		w->fatal = -ENOMEM;
}

struct entry {
	char name[NAME_MAX + 1];
	mode_t mode;
};

struct scan {
	struct entry *v;
	size_t n, cap;
};

static int collect_cb(int dirfd, const char *name, void *ctx)
{
	struct scan *sc = ctx;
	struct stat st;
	if (hf_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* gone meanwhile */
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 64;
		struct entry *v = realloc(sc->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		sc->v = v;
		sc->cap = cap;
	}
	snprintf(sc->v[sc->n].name, sizeof sc->v[sc->n].name, "%s", name);
	sc->v[sc->n++].mode = st.st_mode;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcmp(s + n - k, suffix);
}

static bool has(const struct scan *sc, const char *name)
{
	struct entry key;
	if (strlen(name) >= sizeof key.name)
		return false;
	strcpy(key.name, name);
	return bsearch(&key, sc->v, sc->n, sizeof *sc->v, entry_cmp) != NULL;
}

/* Does dirfd/name hold a regular file "owner" (a lock whose state directory
 * is gone)? Looked at without following or opening it (FL2). */
static bool holds_owner(int dirfd, const char *name)
{
	char p[NAME_MAX + 8];
	snprintf(p, sizeof p, "%s/owner", name);
	struct stat st;
	return hf_sys_fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* Steps 1-3 for the directory at path (open as dirfd), depth levels below
 * dir. */
static void walk(struct walker *w, int dirfd, const char *path, int depth)
{
	struct scan sc = { 0 };
	int rc = hf_dir_each(dirfd, "", collect_cb, &sc);
	if (rc < 0) {
		if (rc == -ENOMEM)
			w->fatal = rc;
		list_error(w, path, rc); /* FL3 */
		free(sc.v);
		return;
	}
	if (sc.n)
		qsort(sc.v, sc.n, sizeof *sc.v, entry_cmp);
	for (size_t i = 0; i < sc.n && !w->fatal; i++) {
		const char *name = sc.v[i].name;
		mode_t m = sc.v[i].mode;
		char child[PATH_MAX];
		if (snprintf(child, sizeof child, "%s%s%s", path, strcmp(path, "/") ? "/" : "",
			     name) >= (int)sizeof child) {
			list_error(w, path, -ENAMETOOLONG);
			continue;
		}
		if (S_ISREG(m) && !strcmp(name, HF_SESSION_FILE)) {
			add_session(w, child);
			continue;
		}
		if (S_ISREG(m) && ends_with(name, HF_FLOCKREC_SUFFIX)) {
			child[strlen(child) - strlen(HF_FLOCKREC_SUFFIX)] = '\0';
			add_flock(w, child); /* FL4 */
			continue;
		}
		if (!S_ISDIR(m))
			continue; /* FL2: symbolic links, FIFOs, devices: never opened */
		if (ends_with(name, HF_FLOCKREC_SHARED_SUFFIX)) {
			char rname[NAME_MAX + 1];
			snprintf(rname, sizeof rname, "%.*s", (int)(strlen(name) - 2), name);
			child[strlen(child) - strlen(HF_FLOCKREC_SHARED_SUFFIX)] = '\0';
			if (!has(&sc, rname))
				add_flock(w, child); /* FL4: only shared records */
			continue; /* never entered: its records are read by add_flock */
		}
		if (ends_with(name, STATE_SUFFIX)) {
			child[strlen(child) - strlen(STATE_SUFFIX)] = '\0';
			add_lock(w, child); /* the lock X of X.holdfast/ */
			continue;
		}
		char sname[NAME_MAX + 16];
		snprintf(sname, sizeof sname, "%s" STATE_SUFFIX, name);
		if (has(&sc, sname))
			continue; /* a lock directory: listed by its state directory */
		if (holds_owner(dirfd, name)) {
			add_lock(w, child); /* a lock whose state directory was deleted */
			continue;
		}
		if (!strcmp(name, ".git"))
			continue;
		if (depth >= w->depth_max) {
			w->truncated = true;
			continue;
		}
		int fd = hf_sys_openat(dirfd, name, OPEN_WALK, 0);
		if (fd < 0) {
			if (fd != -ENOENT && fd != -ELOOP && fd != -ENOTDIR)
				list_error(w, child, fd); /* FL3; replaced meanwhile: skipped */
			continue;
		}
		walk(w, fd, child, depth + 1);
		hf_sys_close(fd);
	}
	free(sc.v);
}

int hf_fs_list(const char *dir, int depth, json_t **ret, json_t **ret_errors,
	       bool *ret_truncated)
{
	if (!dir || !*dir || !ret || !ret_errors || depth < 0 || depth > HF_FS_LIST_DEPTH_MAX)
		return -EINVAL;
	int fd = hf_sys_openat(AT_FDCWD, dir, OPEN_WALK & ~O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	struct walker w = { .items = json_array(), .errors = json_array(), .depth_max = depth };
	if (w.items && w.errors)
		walk(&w, fd, dir, 0);
	else
		w.fatal = -ENOMEM;
	hf_sys_close(fd);
	if (w.fatal) {
		json_decref(w.items);
		json_decref(w.errors);
		return w.fatal;
	}
	*ret = w.items;
	*ret_errors = w.errors;
	if (ret_truncated)
		*ret_truncated = w.truncated;
	return 0;
}
