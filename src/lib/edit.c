/*
 * edit.c - replace a file under a held directory lock (holdfast.h,
 * hf_edit): the file judged and opened, leftovers swept, the replacement
 * staged and renamed into place only while the lock provably is ours.
 *
 * On-disk artifacts
 * -----------------
 *   FILE                the file edited: replaced whole by rename, never
 *                       written in place.
 *   LOCK/               the directory lock (dirlock.c) the caller holds for
 *                       every edit of FILE (`holdfast edit` uses FILE.lock).
 *   FILE.tmp-<16 hex>   the replacement being written (hf_stage_create),
 *                       only while the lock is held.
 *
 * Steps
 * -----
 *   hf_edit_open:
 *     1. The lock must be held by the handle (HF_ENOTHELD otherwise).
 *     2. Open FILE's directory; sweep FILE.tmp-<16 hex> left by an edit that
 *        died while replacing (ED2).
 *     3. Open FILE (O_NOFOLLOW, O_NONBLOCK) and judge it (ED4). A missing
 *        FILE is an edit that creates it.
 *   hf_edit_commit:
 *     4. Judge FILE again by its descriptor; stage the replacement with
 *        FILE's mode, owner and group (ED3).
 *     5. Under hf_lock_hold (ED1) rename it over FILE only if FILE is still
 *        the object read, or over nothing when FILE was missing (ED5);
 *        fsync the directory.
 *
 * Invariants
 * ----------
 *   (ED1) The result is committed only while the lock provably is ours:
 *         hf_lock_hold succeeds (the fence counter still shows our fence and
 *         the lock still carries our token) and holds off every later
 *         acquirer's fence step until the rename is done. An edit whose lock
 *         was reaped (as leaked, or judged dead by a reaper on another clock
 *         or kernel) or acquired by another since commits nothing:
 *         HF_ELOST. Never by its own idea of its age.
 *   (ED2) Temporaries are made and swept only by the lock's holder, so one
 *         found while holding it was left by a dead edit (or by one whose
 *         lock was lost: ED1 keeps it from committing). Only regular files
 *         of our own user with exactly that name form are swept.
 *   (ED3) The replacement grants nobody more than FILE did: FILE's mode as
 *         read from the descriptor opened in step 3 (never by name at commit
 *         time), without setuid, setgid and sticky bits; its owner and group
 *         kept (root: fchown; another user: the group when a member, else
 *         the group bits dropped). A new FILE gets 0666 minus the umask.
 *   (ED4) FILE is refused (HF_EUNSAFE, or -EISDIR/-EINVAL when it is not a
 *         regular file) when it cannot be replaced safely: a symlink; owned
 *         by a user other than the one editing, unless that is root editing
 *         in a directory nobody else can write (the owner is then kept); or,
 *         in a directory others can write (another user's, or group/world-
 *         writable: /tmp), writable by group or others or with more than one
 *         hard link.
 *   (ED5) The rename replaces only the object that was read: the name must
 *         still be FILE's inode (the open descriptor pins its number), or,
 *         for a missing FILE, nothing may have appeared (RENAME_NOREPLACE);
 *         otherwise HF_EUNSAFE, FILE as the other left it.
 *   (ED6) FILE changes only by the rename of a complete, fsynced temporary
 *         (file.c, FI-invariants of hf_stage_*): a crash at any instant
 *         leaves the old content or the new.
 *
 * Hazards
 * -------
 *   - Between ED5's look at the name and the rename, someone not holding the
 *     lock (in a directory others can write) may swap FILE: the swapped-in
 *     object is replaced by our result, which still grants nothing FILE did
 *     not (ED3). Cooperating writers hold the lock and cannot.
 *   - The replaced FILE is a new inode (rename): hard links to the old FILE
 *     keep the old content; ACLs and extended attributes are not carried.
 *   - ED1 errs on the safe side: hf_lock_hold also says HF_ELOST when the
 *     lock was only moved aside and put back (a reaper that had judged the
 *     previous holder dead takes ours, sees another token, restores it)
 *     while another acquirer drew a fence and was denied. Nobody else
 *     entered, yet the commit is refused with FILE untouched
 *     (tests/run/test_edit_hold.c reproduces it).
 */
#include "floor.h"
#include "handle.h"
#include "rec.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct hf_edit {
	hf_lock *lock;
	char *file;               /* as given (the records' "path")          */
	int dirfd;                /* FILE's directory                        */
	char base[NAME_MAX + 1];  /* FILE's name in it                       */
	uid_t euid;
	bool dir_shared;          /* others can write FILE's directory (ED4) */
	int in;                   /* FILE as read; -1: FILE was missing      */
	struct stat st;           /* FILE when read                          */
	bool spent;               /* committed (either way)                  */
	hf_rec *notes;
};

/* ED4: can others than us (and root) write FILE's directory? */
static bool dir_shared(const struct stat *d, uid_t euid)
{
	return (d->st_uid != euid && d->st_uid != 0) || (d->st_mode & (S_IWGRP | S_IWOTH));
}

/* A refusal's record: "reason", "path", and FILE's owner, mode and links. */
static hf_rec *refusal(const struct hf_edit *e, const char *reason, const struct stat *st)
{
	json_t *o = json_pack("{s:s, s:s, s:i, s:b}", "reason", reason, "path", e->file, "euid",
			      (json_int_t)e->euid, "dir_shared", e->dir_shared);
	if (o && st) {
		json_object_set_new(o, "uid", json_integer(st->st_uid));
		json_object_set_new(o, "mode", json_integer(st->st_mode & 07777));
		json_object_set_new(o, "nlink", json_integer((json_int_t)st->st_nlink));
	}
	return hf_rec_take(o);
}

/* ED4: may FILE, as it is now (st, from its descriptor), be replaced? 0, or
 * the refusal's code with its reason in *why. */
static int judge(const struct hf_edit *e, const struct stat *st, const char **why)
{
	if (!S_ISREG(st->st_mode)) {
		*why = "not_regular";
		return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
	}
	if (st->st_uid != e->euid && (e->euid != 0 || e->dir_shared)) {
		*why = "owner";
		return HF_EUNSAFE;
	}
	if (e->dir_shared && (st->st_mode & (S_IWGRP | S_IWOTH))) {
		*why = "writable";
		return HF_EUNSAFE;
	}
	if (e->dir_shared && st->st_nlink != 1) {
		*why = "links";
		return HF_EUNSAFE;
	}
	return 0;
}

struct sweep_ctx {
	size_t plen;
	uid_t euid;
};

/* ED2: remove FILE.tmp-<16 hex>, the only names hf_stage_create makes, when
 * it is a regular file of ours. */
static int sweep_one(int dirfd, const char *name, void *ctx)
{
	struct sweep_ctx *sc = ctx;
	const char *hex = name + sc->plen;
	if (strlen(hex) != 16 || strspn(hex, "0123456789abcdef") != 16)
		return 0;
	struct stat st;
	if (hf_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != sc->euid)
		return 0;
	hf_sys_unlinkat(dirfd, name, 0);
	return 0;
}

void hf_edit_free(hf_edit *e)
{
	if (!e)
		return;
	if (e->in >= 0)
		hf_sys_close(e->in);
	if (e->dirfd >= 0)
		hf_sys_close(e->dirfd);
	hf_rec_free(e->notes);
	free(e->file);
	free(e);
}

int hf_edit_open(hf_lock *l, const char *file, hf_edit **ret, hf_rec **reterr)
{
	if (!l || !file || !ret)
		return -EINVAL;
	if (!hf_lock_held(l))
		return HF_ENOTHELD; /* step 1 */
	size_t flen = strlen(file);
	if (flen == 0 || file[flen - 1] == '/')
		return -EINVAL;
	hf_edit *e = calloc(1, sizeof *e);
	if (!e || !(e->file = strdup(file))) {
		free(e);
		return -ENOMEM;
	}
	e->lock = l;
	e->dirfd = e->in = -1;
	e->euid = geteuid();
	struct stat dst;
	int rc = hf_open_parent(file, &e->dirfd, e->base, sizeof e->base); /* step 2 */
	if (rc == 0)
		rc = hf_sys_fstat(e->dirfd, &dst);
	if (rc < 0)
		goto fail;
	e->dir_shared = dir_shared(&dst, e->euid);
	/* the staged copy is "FILE.tmp-" and 16 hex digits beside FILE: a name
	 * too long for it is refused now, before CMD runs, not at the commit */
	if (strlen(e->base) + strlen(".tmp-") + 16 > NAME_MAX) {
		rc = -ENAMETOOLONG;
		goto fail;
	}
	char prefix[NAME_MAX + 8];
	snprintf(prefix, sizeof prefix, "%s.tmp-", e->base);
	struct sweep_ctx sc = { .plen = strlen(prefix), .euid = e->euid };
	if ((rc = hf_dir_each(e->dirfd, prefix, sweep_one, &sc)) < 0) /* ED2 */
		goto fail;
	/* step 3 */
	rc = hf_sys_openat(e->dirfd, e->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (rc == -ELOOP) {
		if (reterr)
			*reterr = refusal(e, "symlink", NULL);
		rc = HF_EUNSAFE; /* ED4 */
		goto fail;
	}
	if (rc < 0 && rc != -ENOENT)
		goto fail;
	e->in = rc < 0 ? -1 : rc;
	if (e->in >= 0) {
		if ((rc = hf_sys_fstat(e->in, &e->st)) < 0)
			goto fail;
		const char *why = NULL;
		if ((rc = judge(e, &e->st, &why)) < 0) { /* ED4 */
			if (reterr)
				*reterr = refusal(e, why, &e->st);
			goto fail;
		}
	}
	*ret = e;
	return 0;
fail:
	hf_edit_free(e);
	return rc;
}

int hf_edit_fd(const hf_edit *e)
{
	return e ? e->in : -1;
}

const hf_rec *hf_edit_notes(const hf_edit *e)
{
	return e ? e->notes : NULL;
}

/* Record what the commit could not do or keep in the notes (created on
 * first use). */
static json_t *notes(hf_edit *e)
{
	if (!e->notes)
		e->notes = hf_rec_take(json_pack("{s:s}", "path", e->file));
	return e->notes ? hf_rec_object(e->notes) : NULL;
}

static int refuse(hf_edit *e, int rc, const char *why)
{
	json_t *o = notes(e);
	if (o)
		json_object_set_new(o, "reason", json_string(why));
	return rc;
}

int hf_edit_commit(hf_edit *e, const void *data, size_t len)
{
	if (!e || (!data && len))
		return -EINVAL;
	if (e->spent)
		return -EALREADY;
	e->spent = true;
	mode_t mode;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	int rc;
	if (e->in >= 0) {
		/* step 4, ED3: FILE's mode, owner and group, from the descriptor read */
		struct stat now;
		if ((rc = hf_sys_fstat(e->in, &now)) < 0)
			return rc;
		if (now.st_nlink == 0) { /* ED5: gone from its name. By whom? */
			rc = hf_lock_hold(e->lock);
			hf_lock_unhold(e->lock);
			if (rc == 0) /* the lock is ours: someone not holding it */
				return refuse(e, HF_EUNSAFE, "replaced");
			return rc == HF_ELOST ? refuse(e, HF_ELOST, "lost") : rc;
		}
		const char *why = NULL;
		if ((rc = judge(e, &now, &why)) < 0) { /* ED4, again: it may have changed */
			json_t *o = notes(e);
			if (o) {
				json_object_set_new(o, "uid", json_integer(now.st_uid));
				json_object_set_new(o, "mode", json_integer(now.st_mode & 07777));
				json_object_set_new(o, "nlink", json_integer((json_int_t)now.st_nlink));
			}
			return refuse(e, rc, why);
		}
		mode = now.st_mode & 0777;
		if (now.st_mode & 07000) {
			json_t *o = notes(e);
			if (o) {
				json_object_set_new(o, "mode", json_integer(now.st_mode & 07777));
				json_object_set_new(o, "dropped_mode", json_integer(now.st_mode & 07000));
			}
		}
		if (e->euid == 0)
			uid = now.st_uid;
		gid = now.st_gid;
	} else {
		mode = 0666 & ~hf_sys_umask_get(); /* ED3: a new FILE */
	}
	assert(!(mode & 07000) && "ED3");
	struct hf_stage stage;
	rc = hf_stage_create(e->dirfd, e->base, data ? data : "", len, mode, uid, gid, &stage);
	if (rc < 0)
		return rc;
	assert((stage.mode == mode || (stage.group_dropped && stage.mode == (mode & ~070u))) &&
	       "ED3");
	if (stage.group_dropped) {
		json_t *o = notes(e);
		if (o) {
			json_object_set_new(o, "group_dropped", json_true());
			json_object_set_new(o, "gid", json_integer(gid));
			json_object_set_new(o, "new_gid", json_integer(stage.gid));
			json_object_set_new(o, "new_mode", json_integer(stage.mode));
		}
	}
	hf_sys_point(HF_PT_EDIT_STAGED);
	rc = hf_lock_hold(e->lock); /* step 5, ED1 */
	if (rc < 0) {
		hf_stage_discard(e->dirfd, &stage);
		return rc == HF_ELOST ? refuse(e, HF_ELOST, "lost") : rc;
	}
	hf_sys_point(HF_PT_EDIT_HELD);
	rc = hf_stage_commit(e->dirfd, &stage, e->base, e->in >= 0 ? &e->st : NULL); /* ED5, ED6 */
	hf_lock_unhold(e->lock);
	if (rc < 0) {
		hf_stage_discard(e->dirfd, &stage);
		if (rc == -ESTALE)
			return refuse(e, HF_EUNSAFE, "replaced");
		if (rc == -EEXIST)
			return refuse(e, HF_EUNSAFE, "created");
		return rc;
	}
	rc = hf_sys_fsync(e->dirfd);
	if (rc < 0) {
		json_t *o = notes(e);
		if (o) /* in place, but its name may not survive a crash */
			json_object_set_new(o, "replaced", json_true());
	}
	return rc;
}
