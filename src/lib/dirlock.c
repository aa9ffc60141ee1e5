/*
 * dirlock.c - the short directory lock (seed 000), hardened against every
 * counterexample of research/model/REPORT.md and model-checked as built
 * (model/dirlock.pml).
 *
 * On-disk artifacts
 * -----------------
 *   P/L                     the lock: a directory made by mkdir (0700)
 *   P/L/owner               its owner record, one JSON object: token, pid,
 *                           pid_start, boot_id, host, acquired, fence,
 *                           max_hold_ms. Published complete or not at all.
 *   P/L.holdfast/           the lock's state directory (0700, never removed)
 *   P/L.holdfast/fence      the fence counter "<fence> <reserve> <boot id>",
 *                           read and written in place under flock(2)
 *   P/L.holdfast/fence.reserve   durable bound on every fence handed out
 *   P/L.holdfast/c-<ms>-[<token>-]<hex>/   a claim: a lock directory moved
 *                           aside by someone about to destroy or inspect it;
 *                           <ms> is the wall-clock time it was taken (the
 *                           claim's age), <hex> 64 random bits (never
 *                           reused); <token> when an owner claims its own
 *                           record (release, withdrawal): a self-claim
 *
 * Steps
 * -----
 *   Acquire (one attempt):
 *     A1 mkdir L                         (EEXIST: J1)
 *     A2 open L (O_PATH): the directory at L now, maybe not the one made
 *     A3 fence f = counter + 1, under flock                        (D7)
 *     A4 publish L/owner with f by path: O_TMPFILE + linkat        (D1)
 *     A5 look at the claims: fstat(L.holdfast) link count, readdir only when
 *        it says there are subdirectories. A claim holding a complete record
 *        whose owner is live and did not declare the claim its own denies;
 *        so does an unreadable record or any error (D2, D8, C4). Record-less,
 *        stale and self-declared claims cannot hide a holder in its critical
 *        section (its record stays in its directory all through it).
 *     A6 read L/owner back at the canonical path: byte-identical   (D2)
 *     A7 under flock, counter == f: entered. Last step.            (D7)
 *     A failed attempt withdraws (W) and retries or waits.
 *   Judge (J1, L exists): read L/owner. Dead owner, leaked owner, or no
 *     complete record past the stale window: reap (R); else held.
 *   Reap (R): take L into one's own claim (hf_claim_take, NOREPLACE),
 *     verify what was judged (token; or no record + same inode), remove it;
 *     on a mismatch restore it (hf_claim_restore: NOREPLACE + re-checks) or
 *     leave it as a barrier.                                    (D3, D4)
 *   Release / withdraw (W): if L/owner is one's own token, take L into
 *     one's own claim, verify the token there, remove. Else (or on a
 *     mismatch, after restoring) find one's own record in the claims:
 *     steal that claim into one's own claim, verify, remove.     (D3, D5)
 *     An attempt that published nothing removes the directory it opened
 *     only from its own claim, if it has no record and is the very object
 *     its fd pins (an open fd pins the inode number: no reuse).
 *   Sweep: a claim whose record's owner is proven dead or leaked (at any
 *     age), or a record-less, unreadable or self-claim older than the stale
 *     window by its name, is stolen into one's own claim, verified, removed
 *     (by an acquirer denied by a barrier, and by a holder that saw stale
 *     claims on its way in). The seed swept only old claims, to spare a
 *     claimer still at work; stealing before removing spares it anyway (its
 *     next step finds its claim gone; the model sweeps at any age), and a
 *     dead holder's claim must not block the lock for a whole window. (D5, D6)
 *
 * Named points (hf_sys_point; tests pause or crash processes there):
 *   dirlock.acquire.{made,opened,fenced,published,scanned,readback,entered}
 *     after A1, A2, A3, A4, A5, A6, A7; dirlock.acquire.judged (J1 verdict
 *     made), .denied (before withdrawing), .waiting (before a wait);
 *   dirlock.<role>.{judged,taken,verified,unlinked} for role reap, sweep,
 *     withdraw, release, find (one's record found in a claim): before the
 *     take, after it, after reading the claim, after unlinking its record;
 *   claim.restore.checked (claim.c): after the re-check, before the rename.
 *
 * Invariants
 * ----------
 *   (D1) Publication is a test-and-set: the record appears complete under
 *        L/owner (linkat) or not at all, and never replaces another.
 *   (D2) A holder enters only after (a) its record was published, (b) a
 *        look after publication found no claim that may hide a live holder
 *        (an error denies), (c) the
 *        record read back at the canonical path is the one it published,
 *        (d) the fence check (D7) passed.
 *   (D3) Nothing is removed from a lock directory except in one's own
 *        claim, after verifying there the identity that was judged: the
 *        token (C1), never an inode number alone.
 *   (D4) A claim is restored only by its creator, never over anything
 *        (RENAME_NOREPLACE) and re-checked before and after (C3); one that
 *        cannot be restored stays, a barrier (C4).
 *   (D5) Nobody empties another's claim in place: a sweeper or a releaser
 *        first steals it into its own claim, so a delayed restorer finds
 *        its name gone and can never put back an emptied directory.
 *   (D6) Verdicts: dead only on proof; leaked only past max(max_hold,
 *        stale) by the record's own time; without a complete record only
 *        past the stale window by the directory's ctime (only the kernel
 *        sets ctime, and every rename or entry change moves it forward, so
 *        it can only understate the age; mtime can be set backwards by
 *        anyone and is never used) or, for a claim, by the time in its name.
 *   (D7) Fences: allocated under flock after mkdir, and checked equal to
 *        the counter as the last step before entering. Entries happen in
 *        check order and the counter only grows, so successive holders'
 *        fences strictly increase. A new boot (boot id changed: unsynced
 *        writes may be lost) restarts the counter from the durable reserve,
 *        which is >= every fence ever handed out (fsync'ed before use).
 *   (D8) Claims are found without scanning the parent: they live in
 *        L.holdfast/, whose link count (2 + subdirectories, on tmpfs, ext4
 *        and xfs: checked by fstatfs) shows in one fstat that there is none.
 *
 * Hazards
 * -------
 *   - A holder suspended past max(max-hold, stale) is reaped while it still
 *     believes it holds the lock: the resource must check the fence.
 *   - Removing L.holdfast while the lock is in use loses claims (barriers)
 *     and restarts the fences: never do that.
 *   - A barrier claim holding a live owner blocks acquirers until that owner
 *     releases (it finds its record in the claim) or is proven dead.
 *   - Another host's owner is never judged dead by pid (NFS): only leaked.
 *   - A wall clock set back makes records look younger (liveness only); set
 *     forward, a live owner may look leaked: fencing again.
 */
#include "claim.h"
#include "internal.h"
#include "wait.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/vfs.h>
#include <unistd.h>

#define STATE_SUFFIX ".holdfast"
#define CLAIM_PREFIX "c-"
#define FENCE_FILE "fence"
#define RESERVE_FILE "fence.reserve"
#define RESERVE_STEP 1024
#define OWNER_MAX 4096
#define SKEW_MS 1000      /* a record dated further ahead is clock skew      */
#define MAX_CLAIMS 64     /* claims handled per pass (more: the next pass)   */

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

/* One open lock: its parent, its state directory, its settings. */
struct lk {
	int pfd;                        /* P                                 */
	int sfd;                        /* P/L.holdfast                      */
	char base[NAME_MAX + 1];        /* L                                 */
	char sname[NAME_MAX + 16];      /* L.holdfast                        */
	char parent[PATH_MAX];          /* P, for the waiter's inotify watch */
	bool nlink_counts;              /* st_nlink == 2 + subdirectories    */
	int64_t stale_ms, max_hold_ms;
};

enum { REC_NONE, REC_EMPTY, REC_BAD, REC_OK };

/* What is at a place (L, or a claim): a directory, its record. */
struct place {
	int kind;                       /* REC_*                             */
	struct hf_lock_info info;       /* REC_OK                            */
	dev_t dev;
	ino_t ino;
	int64_t ctime_ms;
	int pin;                        /* REC_EMPTY/REC_BAD judged for a
					   destructive step: an open fd on the
					   directory, so its inode number cannot
					   be reused while we act (C1); else -1 */
};

#define RETRY 1 /* internal: try again at once */

/* --- owner records ---------------------------------------------------------- */

/* JSON string body of s (printable UTF-8 checked by the caller): escape
 * '"' and '\\'. */
static void json_escape(char *dst, size_t n, const char *s)
{
	size_t o = 0;
	for (; *s && o + 3 < n; s++) {
		if (*s == '"' || *s == '\\')
			dst[o++] = '\\';
		dst[o++] = *s;
	}
	dst[o] = '\0';
}

/* The owner record: one line of JSON, fields in this order (the token
 * first: readers that only need it find it without a parse, place_peek). */
static char *record_format(const struct hf_owner *me, uint64_t fence, int64_t max_hold_ms)
{
	char when[40], host[2 * HF_HOST_MAX + 1];
	hf_time_format(me->time_ms, when, sizeof when);
	json_escape(host, sizeof host, me->host);
	char *r = NULL;
	if (asprintf(&r,
		     "{\"token\":\"%s\",\"pid\":%" PRId64 ",\"pid_start\":%" PRIu64
		     ",\"boot_id\":\"%s\",\"host\":\"%s\",\"acquired\":\"%s\",\"fence\":%" PRIu64
		     ",\"max_hold_ms\":%" PRId64 "}\n",
		     me->token, me->pid, me->pid_start, me->boot_id, host, when, fence,
		     max_hold_ms) < 0)
		return NULL;
	return r;
}

static int record_parse(const char *buf, struct hf_lock_info *ret)
{
	json_error_t err;
	json_t *j = json_loads(buf, 0, &err);
	if (!j)
		return HF_EUNREADABLE;
	struct hf_lock_info i;
	memset(&i, 0, sizeof i);
	int rc = hf_owner_from_json(j, "acquired", &i.owner);
	const json_t *f = json_object_get(j, "fence");
	const json_t *m = json_object_get(j, "max_hold_ms");
	if (rc == 0 && (!json_is_integer(f) || json_integer_value(f) < 0))
		rc = -EINVAL;
	if (rc == 0) {
		i.fence = (uint64_t)json_integer_value(f);
		if (json_is_integer(m) && json_integer_value(m) > 0)
			i.max_hold_ms = json_integer_value(m);
		if (!hf_text_ok(i.owner.token, HF_TOKEN_LEN) || !hf_text_ok(i.owner.host, HF_HOST_MAX))
			rc = -EINVAL;
	}
	json_decref(j);
	if (rc < 0)
		return HF_EUNREADABLE;
	*ret = i;
	return 0;
}

/* Read a small regular file whole: bytes read (< cap, NUL-terminated), or
 * -EFBIG when it does not fit, or -errno. One read: a regular file returns
 * fewer bytes than asked only at its end. */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = hf_sys_openat(dirfd, name, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	ssize_t n = hf_sys_read(fd, buf, cap);
	hf_sys_close(fd);
	if (n < 0)
		return n;
	if ((size_t)n == cap)
		return -EFBIG;
	buf[n] = '\0';
	return n;
}

/* Read what is at dirfd/name. 0 and *p (kind REC_NONE when nothing is
 * there); -errno on errors; HF_EUNSAFE when it is not a directory. The
 * directory is opened without following a symlink; its inode and ctime are
 * read only when it has no readable record (they identify and date it). */
#define TOKEN_PREFIX "{\"token\":\""

/* Our own records start with the token: take it without a parse. Only for
 * identity checks (a token is 128 random bits); judging parses in full. */
static bool token_peek(const char *buf, struct hf_lock_info *i)
{
	size_t pl = strlen(TOKEN_PREFIX);
	if (strncmp(buf, TOKEN_PREFIX, pl) != 0)
		return false;
	const char *t = buf + pl;
	for (int k = 0; k < HF_TOKEN_LEN; k++)
		if (!((t[k] >= '0' && t[k] <= '9') || (t[k] >= 'a' && t[k] <= 'f')))
			return false;
	if (t[HF_TOKEN_LEN] != '"')
		return false;
	memcpy(i->owner.token, t, HF_TOKEN_LEN);
	i->owner.token[HF_TOKEN_LEN] = '\0';
	return true;
}

static int place_read_mode(int dirfd, const char *name, struct place *p, bool peek, bool pin)
{
	memset(p, 0, sizeof *p);
	p->pin = -1;
	int dfd = hf_sys_openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
	if (dfd == -ENOENT) {
		p->kind = REC_NONE;
		return 0;
	}
	if (dfd == -ENOTDIR || dfd == -ELOOP)
		return HF_EUNSAFE;
	if (dfd < 0)
		return dfd;
	char buf[OWNER_MAX + 1];
	ssize_t n = read_small(dfd, "owner", buf, sizeof buf);
	int rc = 0;
	if (n == -ENOENT)
		p->kind = REC_EMPTY;
	else if (n == -EFBIG || n == -ELOOP || n == -EISDIR)
		p->kind = REC_BAD;
	else if (n < 0)
		rc = (int)n;
	else if (peek && token_peek(buf, &p->info))
		p->kind = REC_OK;
	else
		p->kind = record_parse(buf, &p->info) == 0 ? REC_OK : REC_BAD;
	if (rc == 0 && p->kind != REC_OK) {
		struct stat st;
		rc = hf_sys_fstat(dfd, &st);
		p->dev = st.st_dev;
		p->ino = st.st_ino;
		p->ctime_ms = (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
		if (rc == 0 && pin) {
			p->pin = dfd; /* C1: the inode stays ours to compare with */
			return 0;
		}
	}
	hf_sys_close(dfd);
	return rc;
}

static void place_unpin(struct place *p)
{
	if (p->pin >= 0)
		hf_sys_close(p->pin);
	p->pin = -1;
}

static int place_read(int dirfd, const char *name, struct place *p)
{
	return place_read_mode(dirfd, name, p, false, false);
}

/* A verdict that may lead to a destructive step: a directory without a
 * readable record keeps an fd open (place.pin) until the step is done. */
static int place_read_pinned(int dirfd, const char *name, struct place *p)
{
	return place_read_mode(dirfd, name, p, false, true);
}

/* The identity (token) and kind only: for verifications, not verdicts. */
static int place_peek(int dirfd, const char *name, struct place *p)
{
	return place_read_mode(dirfd, name, p, true, false);
}

/* The claim core's identity of a lock directory: its owner token. */
static int dir_identify(int dirfd, const char *name, char *token, size_t n, void *ctx)
{
	(void)ctx;
	struct place p;
	int rc = place_peek(dirfd, name, &p);
	if (rc < 0)
		return rc;
	if (p.kind == REC_NONE || p.kind == REC_EMPTY)
		return -ENOENT;
	if (p.kind == REC_BAD)
		return HF_EUNREADABLE;
	if (strlen(p.info.owner.token) >= n)
		return HF_EUNREADABLE;
	strcpy(token, p.info.owner.token);
	return 0;
}

/* --- verdicts (D6) ---------------------------------------------------------- */

static int64_t leak_ms(const struct lk *l, const struct hf_lock_info *i)
{
	int64_t hold = i->max_hold_ms > 0 ? i->max_hold_ms : l->max_hold_ms;
	return hold > l->stale_ms ? hold : l->stale_ms;
}

/* Fill p->info's state and age; `born_ms` dates a place without record. */
static void judge(const struct lk *l, struct place *p, int64_t born_ms, int64_t now)
{
	struct hf_lock_info *i = &p->info;
	if (p->kind == REC_OK) {
		i->partial = 0;
		i->age_ms = now - i->owner.time_ms;
		if (i->age_ms < -SKEW_MS)
			i->state = HF_LOCK_SKEW;
		else if (hf_owner_liveness(&i->owner) == HF_DEAD)
			i->state = HF_LOCK_DEAD;
		else if (i->age_ms > leak_ms(l, i))
			i->state = HF_LOCK_LEAKED;
		else
			i->state = HF_LOCK_HELD;
		if (i->age_ms < 0)
			i->age_ms = 0;
		return;
	}
	if (p->kind == REC_NONE) {
		i->state = HF_LOCK_FREE;
		return;
	}
	i->partial = 1;
	i->age_ms = now - born_ms;
	if (i->age_ms < 0)
		i->age_ms = 0;
	i->state = i->age_ms > l->stale_ms ? HF_LOCK_ABANDONED : HF_LOCK_PARTIAL;
}

static bool reapable(int state)
{
	return state == HF_LOCK_DEAD || state == HF_LOCK_LEAKED || state == HF_LOCK_ABANDONED;
}

/* Is the place now what was judged? By token (C1); a place without a
 * complete record by its kind and inode (the same directory object: it was
 * moved, never copied). */
static bool same_as_judged(const struct place *judged, const struct place *now)
{
	if (judged->kind != now->kind)
		return false;
	if (judged->kind == REC_OK)
		return strcmp(judged->info.owner.token, now->info.owner.token) == 0; /* C1 */
	/* C1: no token to compare. An inode number is identity only while an
	 * open fd pins the judged directory: then the number cannot have been
	 * handed to a new directory meanwhile. Unpinned: never the same. */
	return judged->pin >= 0 && judged->dev == now->dev && judged->ino == now->ino;
}

/* --- opening a lock --------------------------------------------------------- */

static void lk_close(struct lk *l)
{
	if (l->sfd >= 0)
		hf_sys_close(l->sfd);
	if (l->pfd >= 0)
		hf_sys_close(l->pfd);
	l->sfd = l->pfd = -1;
}

static bool name_reserved(const char *base)
{
	size_t n = strlen(base), s = strlen(STATE_SUFFIX);
	return n >= s && !strcmp(base + n - s, STATE_SUFFIX);
}

static int lk_open(struct lk *l, const char *path, int64_t stale_ms, int64_t max_hold_ms)
{
	memset(l, 0, sizeof *l);
	l->pfd = l->sfd = -1;
	if (!path || !*path)
		return -EINVAL;
	l->stale_ms = stale_ms > 0 ? stale_ms : HF_LOCK_STALE_MS_DEFAULT;
	l->max_hold_ms = max_hold_ms > 0 ? max_hold_ms : HF_LOCK_MAX_HOLD_MS_DEFAULT;
	int rc = hf_open_parent(path, &l->pfd, l->base, sizeof l->base);
	if (rc < 0)
		return rc;
	if (name_reserved(l->base) ||
	    strlen(l->base) + strlen(STATE_SUFFIX) > NAME_MAX) {
		rc = -EINVAL;
		goto fail;
	}
	snprintf(l->sname, sizeof l->sname, "%s%s", l->base, STATE_SUFFIX);
	size_t plen = strlen(path);
	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	const char *slash = memrchr(path, '/', plen);
	if (!slash)
		snprintf(l->parent, sizeof l->parent, ".");
	else if (slash == path)
		snprintf(l->parent, sizeof l->parent, "/");
	else
		snprintf(l->parent, sizeof l->parent, "%.*s", (int)(slash - path), path);

	for (int tries = 0;; tries++) {
		l->sfd = hf_sys_openat(l->pfd, l->sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (l->sfd != -ENOENT || tries == 2)
			break;
		rc = hf_sys_mkdirat(l->pfd, l->sname, 0700);
		if (rc < 0 && rc != -EEXIST)
			goto fail;
	}
	if (l->sfd < 0) {
		rc = l->sfd == -ENOTDIR || l->sfd == -ELOOP ? HF_EUNSAFE : l->sfd;
		l->sfd = -1;
		goto fail;
	}
	struct stat st;
	rc = hf_sys_fstat(l->sfd, &st);
	if (rc < 0)
		goto fail;
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		rc = HF_EUNSAFE; /* another user's, or writable by others */
		goto fail;
	}
	struct statfs sf;
	rc = hf_sys_fstatfs(l->sfd, &sf);
	if (rc < 0)
		goto fail;
	l->nlink_counts = sf.f_type == TMPFS_MAGIC || sf.f_type == EXT4_SUPER_MAGIC ||
			  sf.f_type == XFS_SUPER_MAGIC; /* D8 */
	return 0;
fail:
	lk_close(l);
	return rc;
}

/* --- claims ------------------------------------------------------------------ */

/* "c-<ms>-" or, for a claim its owner makes of its own record (release,
 * withdrawal), "c-<ms>-<token>-": the owner declares it has left (or never
 * entered) its critical section. */
static void claim_prefix(char *buf, size_t n, const char *self_token)
{
	if (self_token)
		snprintf(buf, n, CLAIM_PREFIX "%013" PRId64 "-%s-", hf_sys_now_ms(), self_token);
	else
		snprintf(buf, n, CLAIM_PREFIX "%013" PRId64 "-", hf_sys_now_ms());
}

/* The time in a claim's name, or -1 when it is not a claim's name. */
static int64_t claim_time(const char *name)
{
	if (strncmp(name, CLAIM_PREFIX, strlen(CLAIM_PREFIX)) != 0)
		return -1;
	const char *p = name + strlen(CLAIM_PREFIX);
	char *end;
	long long v = strtoll(p, &end, 10);
	return end != p && *end == '-' && v >= 0 ? (int64_t)v : -1;
}

/* Does the claim's name declare token as its owner's own (a self-claim)? */
static bool claim_declares(const char *name, const char *token)
{
	const char *p = strchr(name + strlen(CLAIM_PREFIX), '-');
	size_t n = strlen(token);
	return p && !strncmp(p + 1, token, n) && p[1 + n] == '-';
}

/* Take dirfd/name into a new claim of our own: 0 and mine, -ENOENT. */
static int claim_take(struct lk *l, int dirfd, const char *name, const char *self_token,
		      char *mine, size_t n)
{
	char prefix[40 + HF_TOKEN_LEN];
	claim_prefix(prefix, sizeof prefix, self_token);
	return hf_claim_take(dirfd, name, l->sfd, prefix, mine, n);
}

static int rm_files_cb(int dirfd, const char *name, void *ctx)
{
	(void)ctx;
	if (strcmp(name, "owner") == 0)
		return 0;
	int rc = hf_sys_unlinkat(dirfd, name, 0);
	return rc == -EISDIR || rc == -EPERM || rc == -ENOENT ? 0 : rc < 0 ? rc : 0;
}

/* Remove our own verified claim: the record, then the directory (D3). 1
 * removed; 0 when it stays: a record appeared in it meanwhile (an acquirer
 * publishing through an fd it opened while the directory was at L: it
 * cannot enter, its directory is not at L, and it will find its record
 * here); <0 on errors. Stray temporaries (the named fallback of
 * hf_publish_file_at) are removed; never a subdirectory (never recursive). */
static int claim_remove(struct lk *l, const char *mine, const char *role)
{
	char p[HF_CLAIM_NAME_MAX + 16], pt[64];
	snprintf(p, sizeof p, "%s/owner", mine);
	int rc = hf_sys_unlinkat(l->sfd, p, 0);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	snprintf(pt, sizeof pt, "dirlock.%s.unlinked", role);
	hf_sys_point(pt);
	rc = hf_sys_unlinkat(l->sfd, mine, AT_REMOVEDIR);
	if (rc == -ENOTEMPTY || rc == -EEXIST) {
		int cfd = hf_sys_openat(l->sfd, mine, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (cfd < 0)
			return cfd == -ENOENT ? 0 : cfd;
		struct stat st;
		rc = hf_sys_fstatat(cfd, "owner", &st, AT_SYMLINK_NOFOLLOW);
		if (rc == -ENOENT)
			rc = hf_claim_scan(cfd, "", rm_files_cb, NULL);
		else if (rc == 0)
			rc = 1; /* a record appeared: the claim stays */
		hf_sys_close(cfd);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
		rc = hf_sys_unlinkat(l->sfd, mine, AT_REMOVEDIR);
	}
	if (rc == -ENOENT)
		return 0; /* stolen from us after the record went (D5) */
	return rc < 0 ? rc : 1;
}

/* Put our own claim back at L, or leave it as a barrier (D4). */
static int claim_putback(struct lk *l, const char *mine, const struct place *found)
{
	const char *expect = found->kind == REC_OK ? found->info.owner.token : NULL;
	int rc = hf_claim_restore(l->sfd, mine, l->pfd, l->base, expect, dir_identify, NULL);
	return rc == HF_EBARRIER || rc == HF_ELOST || rc == -ENOENT ? 0 : rc;
}

/* Take the place judged (L or another's claim) into our own claim, verify
 * it, remove it. Mismatch: L's goes back (or stays a barrier); another's
 * claim stays under our name (still a claim, judged again later). 1 when
 * removed, 0 when not (gone, or not what was judged), <0 on errors. */
static int take_verify_remove(struct lk *l, int dirfd, const char *name,
			      const struct place *judged, const char *self_token, const char *role)
{
	char mine[HF_CLAIM_NAME_MAX], pt[64];
	snprintf(pt, sizeof pt, "dirlock.%s.judged", role);
	hf_sys_point(pt);
	int rc = claim_take(l, dirfd, name, self_token, mine, sizeof mine);
	if (rc == -ENOENT)
		return 0; /* someone else moved it first */
	if (rc < 0)
		return rc;
	snprintf(pt, sizeof pt, "dirlock.%s.taken", role);
	hf_sys_point(pt);
	struct place now;
	rc = place_peek(l->sfd, mine, &now);
	if (rc < 0)
		return rc; /* our claim stays: a barrier, swept when stale */
	snprintf(pt, sizeof pt, "dirlock.%s.verified", role);
	hf_sys_point(pt);
	if (now.kind != REC_NONE && same_as_judged(judged, &now))
		return claim_remove(l, mine, role);
	if (now.kind == REC_NONE)
		return 0; /* stolen from us meanwhile (D5) */
	if (dirfd == l->pfd)
		return claim_putback(l, mine, &now); /* D4 */
	return 0;
}

struct claim_list {
	int n;
	char names[MAX_CLAIMS][HF_CLAIM_NAME_MAX];
};

static int list_cb(int dirfd, const char *name, void *ctx)
{
	(void)dirfd;
	struct claim_list *cl = ctx;
	if (claim_time(name) < 0)
		return 0; /* not a claim */
	if (cl->n == MAX_CLAIMS)
		return 1;
	snprintf(cl->names[cl->n++], HF_CLAIM_NAME_MAX, "%s", name);
	return 0;
}

/* The claims beside the lock, at most MAX_CLAIMS (a sweep or a search
 * handles the rest in a later pass): none at all in one fstat when the link
 * count says there is no subdirectory (D8), else readdir. */
static int claims_list(struct lk *l, struct claim_list *cl)
{
	cl->n = 0;
	struct stat st;
	int rc = hf_sys_fstat(l->sfd, &st);
	if (rc < 0)
		return rc;
	if (l->nlink_counts && st.st_nlink == 2)
		return 0;
	rc = hf_claim_scan(l->sfd, CLAIM_PREFIX, list_cb, cl);
	return rc < 0 ? rc : 0;
}

/* How a claim stands for an acquirer's look (D2b). */
enum { CLAIM_GONE, CLAIM_HARMLESS, CLAIM_STALE, CLAIM_BARRIER };

/* A claim can hide a holder in its critical section only if it holds a
 * complete record whose owner is live and did not declare the claim its own
 * (a holder's record stays in its directory all through its critical
 * section, and an owner claims its own record only after leaving it or
 * instead of entering). Unreadable records count as barriers. *p is filled. */
static int claim_judge(struct lk *l, const char *name, struct place *p, int64_t now, bool pin)
{
	if (place_read_mode(l->sfd, name, p, false, pin) < 0)
		return -1;
	if (p->kind == REC_NONE)
		return CLAIM_GONE;
	judge(l, p, claim_time(name), now);
	p->info.in_claim = 1;
	if (p->kind == REC_BAD)
		return p->info.state == HF_LOCK_ABANDONED ? CLAIM_STALE : CLAIM_BARRIER;
	if (p->kind == REC_EMPTY)
		return p->info.state == HF_LOCK_ABANDONED ? CLAIM_STALE : CLAIM_HARMLESS;
	if (reapable(p->info.state))
		return CLAIM_STALE;
	if (claim_declares(name, p->info.owner.token))
		/* a release in flight; left behind when older than the stale window */
		return now - claim_time(name) > l->stale_ms ? CLAIM_STALE : CLAIM_HARMLESS;
	return CLAIM_BARRIER;
}

struct look {
	struct lk *l;
	struct hf_lock_info *barrier;
	int stale;
	int64_t now;
};

static int look_cb(int dirfd, const char *name, void *ctx)
{
	(void)dirfd;
	struct look *k = ctx;
	if (claim_time(name) < 0)
		return 0; /* not a claim */
	struct place p;
	int v = claim_judge(k->l, name, &p, k->now, false);
	if (v < 0)
		return -EIO; /* C4: a claim we could not read denies */
	if (v == CLAIM_BARRIER) {
		if (k->barrier)
			*k->barrier = p.info;
		return HF_EBARRIER;
	}
	if (v == CLAIM_STALE)
		k->stale++;
	return 0;
}

/* A5: may we enter as far as claims go? 0 yes, HF_EBARRIER (a live owner's
 * claim; *barrier filled), <0 error (denies, C4). Every claim is judged
 * as the directory is read (no limit); *stale counts claims to sweep. */
static int claims_check(struct lk *l, struct hf_lock_info *barrier, int *stale)
{
	*stale = 0;
	struct stat st;
	int rc = hf_sys_fstat(l->sfd, &st);
	if (rc < 0)
		return rc;
	if (l->nlink_counts && st.st_nlink == 2)
		return 0; /* D8 */
	struct look k = { .l = l, .barrier = barrier, .now = hf_sys_now_ms() };
	rc = hf_claim_scan(l->sfd, CLAIM_PREFIX, look_cb, &k);
	*stale = k.stale;
	return rc;
}

/* Sweep: remove every stale claim (D5, D6): steal it into our own claim,
 * verify it is what was judged, remove it. Returns the number removed. */
static int sweep(struct lk *l)
{
	struct claim_list *cl = malloc(sizeof *cl);
	if (!cl)
		return -ENOMEM;
	int rc = claims_list(l, cl), removed = 0;
	int64_t now = hf_sys_now_ms();
	for (int i = 0; rc >= 0 && i < cl->n; i++) {
		struct place p;
		int v = claim_judge(l, cl->names[i], &p, now, true);
		if (v != CLAIM_STALE) {
			if (v >= 0)
				place_unpin(&p);
			continue;
		}
		rc = take_verify_remove(l, l->sfd, cl->names[i], &p, NULL, "sweep");
		place_unpin(&p);
		if (rc > 0)
			removed++;
	}
	free(cl);
	return rc < 0 ? rc : removed;
}

/* Find our own record in a claim; steal it into our own claim, verify,
 * remove (D5). 1 found and removed, 0 not found, <0 error. */
static int find_own(struct lk *l, const char *token)
{
	struct claim_list *cl = malloc(sizeof *cl);
	if (!cl)
		return -ENOMEM;
	int rc = claims_list(l, cl), found = 0;
	for (int i = 0; rc >= 0 && i < cl->n && !found; i++) {
		struct place p;
		rc = place_peek(l->sfd, cl->names[i], &p);
		if (rc < 0 || p.kind != REC_OK || strcmp(p.info.owner.token, token) != 0)
			continue;
		rc = take_verify_remove(l, l->sfd, cl->names[i], &p, token, "find");
		found = rc > 0;
	}
	free(cl);
	return rc < 0 ? rc : found;
}

/* Remove our record, wherever it is: at L through our own claim, or in a
 * claim (W). 1 removed, 0 not found, <0 error. */
static int withdraw(struct lk *l, const char *token, const char *role)
{
	struct place p;
	int rc = place_peek(l->pfd, l->base, &p);
	if (rc < 0)
		return rc;
	if (p.kind == REC_OK && !strcmp(p.info.owner.token, token)) {
		rc = take_verify_remove(l, l->pfd, l->base, &p, token, role);
		if (rc != 0)
			return rc;
	}
	return find_own(l, token);
}

/* An attempt that published nothing: the directory it opened (lfd pins it,
 * so its inode number cannot be reused) goes only if it is at L with no
 * record, and only from our own claim. */
static void withdraw_unpublished(struct lk *l, int lfd)
{
	struct stat st;
	if (hf_sys_fstat(lfd, &st) < 0)
		return;
	struct place judged = { .kind = REC_EMPTY, .dev = st.st_dev, .ino = st.st_ino, .pin = lfd };
	struct place p;
	if (place_peek(l->pfd, l->base, &p) < 0 || p.kind != REC_EMPTY ||
	    !same_as_judged(&judged, &p))
		return;
	take_verify_remove(l, l->pfd, l->base, &judged, NULL, "withdraw");
}

/* --- fences (D7) -------------------------------------------------------------- */

struct fence_line {
	uint64_t fence, reserve;
	char boot[HF_BOOTID_LEN + 1];
};

static int fence_read(int fd, struct fence_line *fl)
{
	char buf[128];
	ssize_t n = hf_sys_pread(fd, buf, sizeof buf - 1, 0);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ENODATA; /* a new counter */
	buf[n] = '\0';
	char *p = buf, *end;
	errno = 0;
	unsigned long long f = strtoull(p, &end, 10);
	if (end == p || *end != ' ')
		return HF_EUNREADABLE;
	p = end + 1;
	unsigned long long r = strtoull(p, &end, 10);
	if (end == p || *end != ' ' || errno || f > r)
		return HF_EUNREADABLE;
	p = end + 1;
	size_t bl = strcspn(p, " \n");
	if (bl == 0 || bl > HF_BOOTID_LEN || (p[bl] != '\n' && p[bl] != '\0'))
		return HF_EUNREADABLE;
	fl->fence = f;
	fl->reserve = r;
	memcpy(fl->boot, p, bl);
	fl->boot[bl] = '\0';
	return 0;
}

/* The durable reservation; 0 when there is none and the counter is new
 * (missing_ok), else a missing one refuses: a guess could repeat a fence. */
static int reserve_read(struct lk *l, bool missing_ok, uint64_t *ret)
{
	char *buf;
	int rc = hf_read_file_at(l->sfd, RESERVE_FILE, 0, 64, &buf, NULL, NULL);
	if (rc == -ENOENT && missing_ok) {
		*ret = 0;
		return 0;
	}
	if (rc == -ENOENT)
		return HF_EUNREADABLE;
	if (rc < 0)
		return rc;
	char *end;
	unsigned long long v = strtoull(buf, &end, 10);
	bool ok = end != buf && (*end == '\n' || *end == '\0');
	free(buf);
	if (!ok)
		return HF_EUNREADABLE; /* refuse: a lower guess could repeat a fence */
	*ret = v;
	return 0;
}

/* A3: open the counter, f = counter + 1 under LOCK_EX. 0, *ret_fd, *ret_f. */
static int fence_alloc(struct lk *l, int *ret_fd, uint64_t *ret_f)
{
	int fd = hf_sys_openat(l->sfd, FENCE_FILE, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fd;
	int rc = hf_sys_flock(fd, LOCK_EX);
	if (rc < 0)
		goto fail;
	struct fence_line fl;
	const char *boot = hf_boot_id();
	rc = fence_read(fd, &fl);
	if (rc < 0 && rc != HF_EUNREADABLE && rc != -ENODATA)
		goto unlock;
	if (rc < 0 || strcmp(fl.boot, boot) != 0) {
		/* new, unreadable, or from another boot (unsynced counts may be
		 * lost): restart from the durable reservation (D7) */
		rc = reserve_read(l, rc == -ENODATA, &fl.reserve);
		if (rc < 0)
			goto unlock;
		fl.fence = fl.reserve;
	}
	uint64_t f = fl.fence + 1;
	if (f > fl.reserve) {
		char buf[32];
		int n = snprintf(buf, sizeof buf, "%" PRIu64 "\n", f + RESERVE_STEP);
		rc = hf_replace_file_at(l->sfd, RESERVE_FILE, buf, (size_t)n, 0600, false);
		if (rc < 0)
			goto unlock;
		fl.reserve = f + RESERVE_STEP;
	}
	char line[128];
	int n = snprintf(line, sizeof line, "%020" PRIu64 " %020" PRIu64 " %s\n", f, fl.reserve,
			 boot);
	rc = (int)hf_sys_pwrite(fd, line, (size_t)n, 0);
	if (rc >= 0)
		rc = 0;
unlock:
	hf_sys_flock(fd, LOCK_UN);
	if (rc < 0)
		goto fail;
	*ret_fd = fd;
	*ret_f = f;
	return 0;
fail:
	hf_sys_close(fd);
	return rc;
}

/* A7: does the counter still equal f? 1 yes, 0 no, <0 error. */
static int fence_check(int fd, uint64_t f)
{
	int rc = hf_sys_flock(fd, LOCK_SH);
	if (rc < 0)
		return rc;
	struct fence_line fl;
	rc = fence_read(fd, &fl);
	hf_sys_flock(fd, LOCK_UN);
	if (rc < 0)
		return rc;
	return fl.fence == f && !strcmp(fl.boot, hf_boot_id());
}

/* --- acquire ------------------------------------------------------------------ */

static void holder_from(struct hf_lock_info *h, const struct place *p)
{
	if (h)
		*h = p->info;
}

/* J1: L exists. RETRY after a reap (or when L vanished), else the conflict
 * with *holder filled. */
static int judge_and_reap(struct lk *l, struct hf_lock_info *holder)
{
	struct place p;
	int rc = place_read_pinned(l->pfd, l->base, &p);
	if (rc < 0)
		return rc;
	if (p.kind == REC_NONE)
		return RETRY;
	judge(l, &p, p.ctime_ms, hf_sys_now_ms());
	hf_sys_point("dirlock.acquire.judged");
	if (!reapable(p.info.state)) {
		place_unpin(&p);
		holder_from(holder, &p);
		return p.kind == REC_BAD ? HF_EUNREADABLE : HF_EHELD;
	}
	rc = take_verify_remove(l, l->pfd, l->base, &p, NULL, "reap");
	place_unpin(&p);
	return rc < 0 ? rc : RETRY;
}

static int attempt(struct lk *l, const struct hf_lock_opts *o, struct hf_lock_info *ret,
		   struct hf_lock_info *holder)
{
	struct hf_owner me;
	int rc = hf_owner_init(&me, o->pid);
	if (rc < 0)
		return rc;
	rc = hf_sys_mkdirat(l->pfd, l->base, 0700); /* A1 */
	if (rc == -EEXIST)
		return judge_and_reap(l, holder);
	if (rc < 0)
		return rc;
	hf_sys_point("dirlock.acquire.made");
	int lfd = hf_sys_openat(l->pfd, l->base, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0); /* A2 */
	if (lfd == -ENOENT || lfd == -ENOTDIR || lfd == -ELOOP)
		return RETRY; /* moved away already: nothing of ours is anywhere */
	if (lfd < 0)
		return lfd;
	hf_sys_point("dirlock.acquire.opened");
	int ffd = -1;
	uint64_t f = 0;
	char *rec = NULL;
	rc = fence_alloc(l, &ffd, &f); /* A3 */
	if (rc < 0)
		goto unpublished;
	hf_sys_point("dirlock.acquire.fenced");
	rec = record_format(&me, f, o->max_hold_ms > 0 ? o->max_hold_ms : l->max_hold_ms);
	if (!rec) {
		rc = -ENOMEM;
		goto unpublished;
	}
	size_t reclen = strlen(rec);
	char opath[NAME_MAX + 8], spath[NAME_MAX + 16];
	snprintf(opath, sizeof opath, "%s/owner", l->base);
	snprintf(spath, sizeof spath, "../%s/owner", l->base);
	/* A4, D1: by path, so a record only ever appears in the directory at
	 * L, never in one that was moved into a claim meanwhile. The unnamed
	 * temporary is made in the state directory and linked through its
	 * parent (ours, never moved): a crowded parent's full inode groups
	 * would make an inode allocated beside it slow (ext4), and a named
	 * fallback temporary left by a crash lands in the state directory. */
	rc = hf_publish_file_at(l->sfd, spath, rec, reclen, 0600, false);
	if (rc == -EEXIST || rc == -ENOENT || rc == -ENOTDIR) {
		rc = RETRY; /* another's record is there, or L is gone */
		goto out;
	}
	if (rc < 0)
		goto unpublished;
	hf_sys_point("dirlock.acquire.published");

	int stale = 0;
	rc = claims_check(l, holder, &stale); /* A5, D2b, D8 */
	if (rc != 0)
		goto denied;
	hf_sys_point("dirlock.acquire.scanned");

	char back[OWNER_MAX + 1]; /* A6, D2c */
	ssize_t backlen = read_small(l->pfd, opath, back, sizeof back);
	if (backlen >= 0)
		rc = (size_t)backlen == reclen && !memcmp(back, rec, reclen) ? 0 : RETRY;
	else if (backlen == -ENOENT || backlen == -ENOTDIR || backlen == -EFBIG)
		rc = RETRY;
	else
		rc = (int)backlen;
	if (rc != 0)
		goto denied;
	hf_sys_point("dirlock.acquire.readback");

	rc = fence_check(ffd, f); /* A7, D2d, D7: the last step */
	if (rc <= 0) {
		if (rc == 0)
			rc = RETRY;
		goto denied;
	}
	hf_sys_point("dirlock.acquire.entered");
	memset(ret, 0, sizeof *ret);
	ret->owner = me;
	ret->fence = f;
	ret->max_hold_ms = o->max_hold_ms > 0 ? o->max_hold_ms : l->max_hold_ms;
	ret->state = HF_LOCK_HELD;
	rc = 0;
	if (stale > 0)
		sweep(l); /* left-overs of crashes: tidy up, as the holder */
	goto out;

denied:
	hf_sys_point("dirlock.acquire.denied");
	{
		int wrc = withdraw(l, me.token, "withdraw");
		if (wrc < 0 && rc >= 0)
			rc = wrc;
	}
	goto out;
unpublished:
	withdraw_unpublished(l, lfd);
out:
	free(rec);
	if (ffd >= 0)
		hf_sys_close(ffd);
	hf_sys_close(lfd);
	return rc;
}

int hf_lock_acquire(const struct hf_lock_opts *o, struct hf_lock_info *ret,
		    struct hf_lock_info *reterr_holder)
{
	struct lk l;
	int rc = lk_open(&l, o->path, o->stale_ms, o->max_hold_ms);
	if (rc < 0)
		return rc;
	struct hf_waiter w;
	hf_wait_init(&w, l.parent, l.base, o->wait_ms);
	struct hf_lock_info holder, got;
	memset(&holder, 0, sizeof holder);
	int retries = 0;
	for (;;) {
		rc = attempt(&l, o, &got, &holder);
		if (rc == 0)
			break;
		if (rc == RETRY) {
			if (++retries < 64 || o->wait_ms != 0)
				continue;
			rc = HF_EHELD; /* try once, but the lock kept changing hands */
		}
		if (rc == HF_EBARRIER) {
			int n = sweep(&l);
			if (n < 0) {
				rc = n;
				break;
			}
			if (n > 0)
				continue;
		} else if (rc != HF_EHELD && rc != HF_EUNREADABLE) {
			break; /* a system error */
		}
		hf_sys_point("dirlock.acquire.waiting");
		int wrc = hf_wait_next(&w);
		if (wrc == HF_ETIMEDOUT) {
			if (o->wait_ms != 0)
				rc = HF_ETIMEDOUT;
			break;
		}
		if (wrc < 0) {
			rc = wrc;
			break;
		}
	}
	hf_wait_done(&w);
	lk_close(&l);
	if (rc == 0)
		*ret = got;
	else if (reterr_holder && rc != -ENOMEM)
		*reterr_holder = holder;
	return rc;
}

/* --- release and status ------------------------------------------------------- */

int hf_lock_release(const char *path, const char *token, struct hf_lock_info *reterr_holder)
{
	if (!token || !*token)
		return -EINVAL;
	struct lk l;
	int rc = lk_open(&l, path, 0, 0);
	if (rc < 0)
		return rc;
	rc = withdraw(&l, token, "release");
	if (rc > 0) {
		rc = 0;
	} else if (rc == 0) {
		struct place p;
		rc = place_read(l.pfd, l.base, &p);
		if (rc == 0 && p.kind != REC_NONE) {
			judge(&l, &p, p.ctime_ms, hf_sys_now_ms());
			if (reterr_holder)
				*reterr_holder = p.info;
			rc = HF_ENOTYOURS;
		} else if (rc == 0) {
			rc = HF_ENOTHELD;
		}
	}
	lk_close(&l);
	return rc;
}

/* Take the counter's shared flock within a bound: an acquirer holds it
 * exclusively only for the few system calls of A3, so a long wait means a
 * stopped process; never wait for it forever. */
static int fence_lock_shared(int fd)
{
	int64_t deadline = hf_sys_mono_ns() + 5000LL * 1000000;
	int64_t nap = 1;
	for (;;) {
		int rc = hf_sys_flock(fd, LOCK_SH | LOCK_NB);
		if (rc != -EWOULDBLOCK)
			return rc;
		if (hf_sys_mono_ns() >= deadline)
			return -ETIMEDOUT;
		hf_sys_sleep_ms(nap);
		if (nap < 50)
			nap *= 2;
	}
}

int hf_lock_hold(const char *path, const struct hf_lock_info *held, int *ret_guard)
{
	if (!held || !held->owner.token[0] || !held->fence)
		return -EINVAL;
	struct lk l;
	int rc = lk_open(&l, path, 0, 0);
	if (rc < 0)
		return rc;
	int fd = hf_sys_openat(l.sfd, FENCE_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0) {
		lk_close(&l);
		return fd == -ENOENT ? HF_ELOST : fd;
	}
	rc = fence_lock_shared(fd);
	if (rc == 0) {
		/* DH1: while we hold LOCK_SH no acquirer can allocate a fence (A3
		 * takes LOCK_EX), so none can pass A7 either: if the counter still
		 * shows our fence, nobody entered after us, nor can until we let go. */
		struct fence_line fl;
		rc = fence_read(fd, &fl);
		if (rc == 0 && (fl.fence != held->fence || strcmp(fl.boot, hf_boot_id()) != 0))
			rc = HF_ELOST;
		else if (rc == -ENODATA || rc == HF_EUNREADABLE)
			rc = HF_ELOST;
	}
	if (rc == 0) {
		/* DH2: and our record is still the one at PATH (not reaped, even
		 * if nobody acquired since) */
		struct place p;
		rc = place_peek(l.pfd, l.base, &p);
		if (rc == 0 && (p.kind != REC_OK || strcmp(p.info.owner.token, held->owner.token)))
			rc = HF_ELOST;
	}
	lk_close(&l);
	if (rc < 0) {
		hf_sys_close(fd);
		return rc;
	}
	*ret_guard = fd;
	return 0;
}

void hf_lock_unhold(int guard)
{
	if (guard >= 0)
		hf_sys_close(guard); /* drops the shared flock */
}

static int count_cb(int dirfd, const char *name, void *ctx)
{
	(void)dirfd;
	if (claim_time(name) >= 0)
		(*(int *)ctx)++;
	return 0;
}

int hf_lock_status(const char *path, struct hf_lock_info *ret)
{
	struct lk l;
	memset(&l, 0, sizeof l);
	l.pfd = l.sfd = -1;
	l.stale_ms = HF_LOCK_STALE_MS_DEFAULT;
	l.max_hold_ms = HF_LOCK_MAX_HOLD_MS_DEFAULT;
	int rc = hf_open_parent(path, &l.pfd, l.base, sizeof l.base);
	if (rc < 0)
		return rc;
	if (name_reserved(l.base)) {
		lk_close(&l);
		return -EINVAL;
	}
	struct place p;
	rc = place_read(l.pfd, l.base, &p);
	if (rc < 0)
		goto out;
	judge(&l, &p, p.ctime_ms, hf_sys_now_ms());
	/* read-only: the state directory is looked at, never created */
	snprintf(l.sname, sizeof l.sname, "%s%s", l.base, STATE_SUFFIX);
	int sfd = hf_sys_openat(l.pfd, l.sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (sfd >= 0) {
		rc = hf_claim_scan(sfd, CLAIM_PREFIX, count_cb, &p.info.claims);
		hf_sys_close(sfd);
		if (rc < 0)
			goto out;
	} else if (sfd != -ENOENT) {
		rc = sfd;
		goto out;
	}
	*ret = p.info;
	rc = 0;
out:
	lk_close(&l);
	return rc;
}
