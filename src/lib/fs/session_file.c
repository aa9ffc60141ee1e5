/*
 * session_file.c - the session lock on the file system: one holder per work
 * tree, by lane.
 *
 * A "session" is an operator working through a protocol, not a process:
 * every `holdfast session ...` is a fresh process, so ownership is the lane
 * (plus an owner token when the caller has a stable one), and a lock ends by
 * an explicit release or by growing older than the stale window (90 min by
 * default), never by a pid dying.
 *
 * On-disk artifacts
 * -----------------
 *   <dir>/<name>                the lock (default <work tree>/.session.lock):
 *                               one line of JSON + "\n",
 *                               {"lane","owner","pid","host","started",
 *                                "boot_id","timens","boottime_ms",
 *                                "broke":{"lane","owner","started","age_s"}}
 *                               or, legacy, a bare ISO-8601 timestamp.
 *   <dir>/<name>.aside-<16 hex> a claim (claim.c): the lock renamed aside by a
 *                               breaker, a releaser, a withdrawing taker or a
 *                               sweeper. Gone when the step completes; left
 *                               only by a killed process or as a barrier.
 *                               Only a regular file there is a record (SL11).
 *                               .gitignore: `.session.lock.aside-*`
 *   No named temporaries: a record is written to an unnamed O_TMPFILE and
 *   linked into place (file.c, hf_publish_file_at_fd), and the taker keeps
 *   that descriptor: it pins the record's inode until the take is decided.
 *
 * Steps
 * -----
 *   take (hf_sessionlock_take):
 *     ST1 publish own record at <name> by link (test-and-set)      -> ST5
 *        EEXIST: read the lock and judge it:
 *          unreadable  -> refuse (HF_EUNREADABLE), untouched
 *          live / skew -> refuse (HF_EHELD), untouched
 *          stale       -> ST2
 *     ST2 move it to a fresh aside (hf_claim_take)                 [judged]
 *        ENOENT: someone else moved it first -> ST1
 *     ST3 verify the aside byte for byte against what was judged   [moved]
 *        mismatch: it was a fresh lock (a winner's): put it back with
 *        hf_claim_restore (NOREPLACE) or leave it as a barrier -> ST1
 *     ST4 record the broken lock in own "broke" -> ST1, then delete the
 *        judged aside once ST1 has published (or failed to)      [verified]
 *     ST5 scan the asides (regular files only)                    [published]
 *          own record (displaced by a mismatching breaker): still ours
 *          stale record (a breaker killed mid-steal): sweep it (claim)
 *          live record: a barrier -> withdraw (SW below)       [barrier]
 *          and, if no mover holds the barrier's kernel lock, put it
 *          back at <name> (SL4); refuse (HF_EHELD, the barrier's lane)
 *          a record that cannot be read: withdraw, refuse (HF_EUNREADABLE)
 *          nothing live: taken.
 *   withdraw (SW, the pinned drop): until no name refers to our record
 *     (fstat of the pinned descriptor: st_nlink 0), find it - at <name>,
 *     else in an aside, by the pinned inode - move it to a fresh aside of
 *     our own, check there that it is the pinned inode, delete it. A file
 *     moved that is not ours goes back (NOREPLACE) or stays a barrier.
 *   release (hf_sessionlock_release):
 *     SR1 read <name>, keeping the descriptor; ours (lane, and owner token
 *        when given)?                                           [read]
 *     SR2 drop it as SW does, through the descriptor read (it pins the
 *        record that was judged ours)                           [moved]
 *     SR3 not at <name>: look for our record in the asides (a barrier, or
 *        a breaker's claim), and drop it the same way. When neither has
 *        it, read <name> again: if it changed meanwhile (a record put back
 *        there during the scan), start over from SR1.
 *     Nothing anywhere: HF_ENOTHELD; another's: HF_ENOTYOURS; an
 *     unreadable lock at <name>: HF_EUNREADABLE.
 *   renew (hf_sessionlock_renew):
 *     SN1 read <name>, keeping the descriptor (the pin); ours (SR1's rule)?
 *        else HF_ENOTYOURS; nothing there: HF_ENOTHELD      [renew.read]
 *     SN2 our renewed record: the same lane and owner, "started" now
 *     SN3 hold the pinned record's kernel lock (SL4: in flight), move it to
 *        an aside of our own and check it is the pinned inode (else put it
 *        back: HF_ELOST), then publish the renewed record at <name> by
 *        test-and-set (SL1)                                 [renew.moved]
 *        EEXIST: a taker published at the free name; it sees our live
 *        aside and withdraws (SL5) - retry, unless our record has no name
 *        any more (a breaker judged it stale and swept it: HF_ELOST)
 *     SN4 drop the old record as SW does                [renew.published]
 *   model/session.pml names the take's steps T1-T5 and the withdrawal W.
 *   status: read <name>; when absent, an aside holding a live record.
 *
 *   Named points (hf_sys_point; a test pauses or kills a process there):
 *   session.take.begin (record built, nothing published), .judged (a stale
 *   verdict, before the rename), .moved (renamed aside, not yet verified),
 *   .mismatch (moved a lock it did not judge, before putting it back),
 *   .verified (broke it, before publishing), .published (before the scan),
 *   .barrier (a live aside found, before withdrawing), .withdrawn (before
 *   putting an orphaned barrier back); session.renew.read/.moved/.published
 *   (SN1, SN3, SN4); session.release.read (judged its
 *   own, before dropping it), .moved, .mismatch; session.withdraw.moved/
 *   .mismatch; session.sweep.moved/.mismatch; claim.c's
 *   claim.restore.checked. (session.naive.read/.wrote are the CLI's naive
 *   guard's, src/cli/naive.c.)
 *
 * Invariants
 * ----------
 *   (SL1) Publication is a test-and-set of a complete record (linkat of a
 *         written O_TMPFILE; EEXIST means held). No reader ever sees an empty
 *         or partial record, and no record is ever rewritten in place.
 *   (SL2) A lock's age comes from its record, never its mtime (printed as
 *         evidence only): boot-relative ("boottime_ms") when the judge runs
 *         on the writer's kernel ("boot_id") and time namespace ("timens"),
 *         so a wall-clock step moves it neither way; else now - "started"
 *         by the wall clock (legacy timestamps, records without these fields, another
 *         machine), where a record dated in the future is live (clock
 *         skew). A lock that cannot be read or parsed is refused, never
 *         aged and never moved.
 *   (SL3) Nothing is ever unlinked at <name>: every destructive step (break,
 *         release, withdraw, sweep) first renames the file to its own unique
 *         aside and verifies there that it is what it judged - byte for byte
 *         (break, sweep: the owner token among the bytes), or the very inode
 *         its descriptor pins (withdraw, release); never an inode number
 *         without a descriptor that pins it (CL1, CL2).
 *   (SL4) A file moved that is not the one meant is put back with
 *         RENAME_NOREPLACE, re-checked before and after (CL3); when <name> is
 *         taken again it stays in its aside as a barrier (CL4). A taker puts
 *         someone else's live aside back at <name> only when it can take that
 *         record's kernel lock (flock, LOCK_NB): a withdrawer or a releaser
 *         holds it on its pinned descriptor while its record is in flight,
 *         so only an orphaned barrier (its mover killed, or its restore
 *         refused) is put back - the one a waiter would otherwise spin on
 *         (every attempt publishing and withdrawing beside it) for the rest
 *         of its holder's session. Putting back an aside in flight would
 *         resurrect a withdrawn take (a record at <name> that nobody holds,
 *         until it turns stale) and make a release lose its rounds to a
 *         waiter woken by the release's own rename (-EAGAIN, SH10).
 *         Safety never depends on the lock: SL10 makes any restore harmless.
 *   (SL5) A taker reports success only after a scan of the asides, made
 *         after its own record was published, found no live record but its
 *         own. On a barrier it withdraws (SL10), never by unlink at <name>.
 *         A scan that cannot read the directory or a record in an aside
 *         denies.
 *   (SL6) A live lock refuses every taker, the same lane included: there is
 *         no "you already hold it" outcome.
 *   (SL7) A release deletes only a record judged the caller's (lane; owner
 *         token when given), through the descriptor it read it by, after
 *         moving it aside and verifying it: a release racing a steal never
 *         deletes the stealer's lock.
 *   (SL8) A successful break leaves no aside: the judged lock's aside is
 *         deleted once the breaker's own record is published or refused.
 *   (SL9) Only stale records are swept from asides; a live record in an
 *         aside is restored to <name> (SL4) or released by its lane, never
 *         swept. A scan stops sweeping once a sweep lost its record to
 *         another mover: it never chases a record its owner is dropping.
 *   (SL10) A withdrawal, and a release once it has found its record, ends
 *         only when no name refers to the record (st_nlink 0 on the pinned
 *         descriptor): whatever moved it meanwhile - back to <name>, into
 *         another's aside - it is looked for again, so a finished
 *         withdrawal leaves no record of its own anywhere
 *         (model/session.pml, "no leftover"). Nothing can give a nameless
 *         inode a name again: restores rename existing names only.
 *   (SL11) Only regular files are records: holdfast moves nothing else into
 *         an aside, so a symlink, directory, FIFO or device named like one
 *         is not a barrier (never opened: lstat first; reads are O_NONBLOCK
 *         and O_NOFOLLOW). At <name> the same things are refused as
 *         unreadable (SL2).
 *
 * Hazards
 * -------
 *   (SH1) Two sessions of one lane are the same owner unless they pass
 *         --owner: a release by lane releases either.
 *   (SH2) A session that runs past the stale window is broken while it
 *         still believes it holds the tree (no file protocol can stop that:
 *         staleness is a guess about an operator, not a proof). Takers with
 *         different --stale windows
 *         disagree about which asides are stale.
 *   (SH3) A live record left in an aside (a breaker killed between its move
 *         and its restore) blocks every taker until a taker puts it back
 *         (SL4), its lane releases it, or it turns stale and is swept.
 *   (SH4) A taker racing a release or a withdrawal sees the mover's live
 *         aside as a barrier and refuses (spuriously, never unsafely); a
 *         waiter (`run -w`) tries again at once, woken by its own withdrawal.
 *   (SH5) No fsync: after a power loss the lock may be gone (every session
 *         ended with the machine) or, on some file systems, empty; an empty
 *         lock is refused as unreadable (SL2) and cleared by a human.
 *   (SH6) A legacy lock has no lane: no release matches it; it is broken
 *         when stale or removed by the old protocol's own "delete it".
 *   (SH8) A release that has not yet found its record holds no descriptor:
 *         if the record is moved twice while the release looks for it (back
 *         to <name> during its scan of the asides - a mismatching mover's
 *         restore, or a taker putting an orphaned barrier back - and into an
 *         aside again before its second read of <name>), the release answers
 *         HF_ENOTHELD and the record can stay until it turns stale. Only a
 *         breaker whose verdict is older than the record (it lost a race for
 *         a stale lock) moves someone else's live record from <name>: never
 *         plain contention (model/session.pml, session-relcheck).
 *   (SH9) Boot-relative ages hold on one kernel. Machines sharing the tree
 *         (NFS) judge each other's records by the wall clock: a step of the
 *         judge's clock forward by more than the window breaks a live lock,
 *         a step back makes a stale one live (or "in the future") for as
 *         long as the step.
 *   (SH10) A withdrawal or release gives up after DROP_ROUNDS rounds (each
 *         one a move of its record by someone else) with -EAGAIN, leaving
 *         the record; only a process that moves records around outside the
 *         protocol can make that happen.
 */
#include "session_file.h"

#include "claim.h"
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define ROUNDS_MAX 32      /* each round is a lost race; bounded, never spins */
#define DROP_ROUNDS 64     /* SH10: each round a move of our record by another */
#define ID_MAX 128         /* identity for the claim core: "<len>:<digest>"    */

int hf_session_is_aside(const char *lock_name, const char *name)
{
	size_t l = strlen(lock_name), k = strlen(HF_SESSION_ASIDE_INFIX);
	if (strncmp(name, lock_name, l) || strncmp(name + l, HF_SESSION_ASIDE_INFIX, k))
		return 0;
	const char *hex = name + l + k;
	if (strlen(hex) != 16)
		return 0;
	return strspn(hex, "0123456789abcdef") == 16;
}

/* ------------------------------------------------------------------------
 * Reading a lock file, and its identity for the claim core
 * ---------------------------------------------------------------------- */

/* One operation on one lock: its directory and names. */
struct lk {
	int dfd;
	char name[NAME_MAX + 1];
	char prefix[NAME_MAX + 16]; /* <name>.aside- */
	int64_t stale_ms;
};

/* A lock file as read (the bytes live inside: no heap on any path; the
 * buffer last, so a short record and the fields share a page of stack). */
struct seen {
	size_t len;
	int64_t mtime_ms;  /* evidence, filled when unreadable                 */
	int rc;            /* 0 read/parsed; -ENOENT; HF_EUNREADABLE; -errno  */
	int read_err;      /* the read itself failed (rc is then UNREADABLE) */
	int not_file;      /* ... because it is no regular file (SL11)       */
	struct hf_sessionlock_record rec;
	char why[160];
	char buf[HF_SESSION_FILE_MAX + 2];
};

static int same_bytes(const struct seen *a, const char *buf, size_t len)
{
	return a->len == len && memcmp(a->buf, buf, len) == 0;
}

static int64_t mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* One read (hf_read_small_at): a lock is a few hundred bytes - no fstat,
 * no heap. A longer file overflows the buffer, a FIFO or device reads
 * nothing or overflows: both are refused as not a record (SL2). keep (may
 * be NULL): the descriptor is left open there when the read succeeded - it
 * pins what was read. */
static int read_small(int dfd, const char *name, struct seen *s, int *keep)
{
	_Static_assert(sizeof s->buf == HF_SESSION_FILE_MAX + 2, "a record and one byte more");
	ssize_t n = hf_read_small_at(dfd, name, O_NONBLOCK | O_NOCTTY, s->buf, sizeof s->buf, keep);
	if (n < 0)
		return (int)n;
	s->len = (size_t)n;
	return 0;
}

/* Read dfd/name into s, without parsing it: 0, -ENOENT, HF_EUNREADABLE
 * (with s->why and the mtime as evidence) or another -errno. */
static int look_raw(int dfd, const char *name, struct seen *s, int *keep)
{
	s->len = 0;
	s->rc = s->read_err = s->not_file = 0;
	s->mtime_ms = 0;
	s->why[0] = '\0';
	int rc = read_small(dfd, name, s, keep);
	if (rc == 0 || rc == -ENOENT)
		return s->rc = rc;
	const char *what;
	int not_file = 1;
	switch (rc) {
	case -EACCES:
	case -EPERM:
		what = "cannot be read: permission denied";
		not_file = 0;
		break;
	case -EISDIR:
		what = "a directory, not a lock record";
		break;
	case -ELOOP:
		what = "a symbolic link (never followed)";
		break;
	case -EFBIG:
		what = "larger than 4096 bytes (or a device): not a lock record";
		break;
	case -ENXIO:
	case -EINVAL:
	case -EAGAIN:
		what = "not a regular file";
		break;
	default:
		return s->rc = rc; /* a system error, not a verdict on the lock */
	}
	/* SL2: the mtime is evidence for a human, never an age. */
	struct stat st;
	rc = hf_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc == -ENOENT)
		return s->rc = -ENOENT;
	if (rc == 0)
		s->mtime_ms = mtime_ms(&st);
	s->read_err = 1;
	s->not_file = not_file;
	snprintf(s->why, sizeof s->why, "%s", what);
	return s->rc = HF_EUNREADABLE;
}

/* Read and parse dfd/name into s: s->rc (0 means s->rec is valid). keep: as
 * read_small (a descriptor left open whatever the parse said, -1 if none). */
static int look(int dfd, const char *name, struct seen *s, int *keep)
{
	if (keep)
		*keep = -1;
	int rc = look_raw(dfd, name, s, keep);
	if (rc < 0)
		return rc;
	rc = hf_session_parse(s->buf, s->len, &s->rec, s->why, sizeof s->why);
	if (rc == HF_EUNREADABLE) {
		struct stat st; /* SL2: evidence for the human */
		if (hf_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			s->mtime_ms = mtime_ms(&st);
			if (!S_ISREG(st.st_mode)) { /* a FIFO reads as empty: say what it is */
				snprintf(s->why, sizeof s->why, "not a regular file (%s)",
					 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
				s->read_err = s->not_file = 1;
			}
		}
	}
	return s->rc = rc;
}

#define NOT_A_RECORD 2 /* look_aside: no regular file (SL11) */

/* Read an aside: as look, but only a regular file is a record (SL11) - a
 * symlink, directory, FIFO or device is never opened: NOT_A_RECORD. */
static int look_aside(int dfd, const char *name, struct seen *s, int *keep)
{
	struct stat st;
	if (keep)
		*keep = -1;
	int rc = hf_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc < 0)
		return s->rc = rc;
	if (!S_ISREG(st.st_mode))
		return NOT_A_RECORD;
	rc = look(dfd, name, s, keep);
	if (rc == HF_EUNREADABLE && s->not_file) { /* replaced since the lstat */
		if (keep && *keep >= 0)
			hf_sys_close(*keep);
		if (keep)
			*keep = -1;
		return NOT_A_RECORD;
	}
	return rc;
}

/* CL1: a record's identity, for the claim core, is a digest of all its bytes
 * (the owner token is among them) and their length. Where a verdict is acted
 * on, the bytes themselves are compared as well: see move_verified. No
 * parsing: the verifying read of a claim costs a read, not a JSON parse. */
static void identity(const struct seen *s, char *id, size_t n)
{
	snprintf(id, n, "%zu:%016llx", s->len, (unsigned long long)hf_fnv1a(s->buf, s->len));
}

/* The claim core's identify callback. ctx (may be NULL) keeps what was read,
 * so the caller can compare the bytes themselves. */
static int ident_record(int dfd, const char *name, char *token, size_t n, void *ctx)
{
	struct seen local, *s = ctx ? ctx : &local;
	int rc = look_raw(dfd, name, s, NULL);
	if (rc == 0)
		identity(s, token, n);
	return rc;
}

/* ------------------------------------------------------------------------
 * Claims: move aside, verify, delete or restore
 * ---------------------------------------------------------------------- */

enum { PT_TAKE, PT_RELEASE, PT_WITHDRAW, PT_SWEEP };
static const struct {
	enum hf_point moved, mismatch;
} points[] = {
	[PT_TAKE] = { HF_PT_SESSION_TAKE_MOVED, HF_PT_SESSION_TAKE_MISMATCH },
	[PT_RELEASE] = { HF_PT_SESSION_RELEASE_MOVED, HF_PT_SESSION_RELEASE_MISMATCH },
	[PT_WITHDRAW] = { HF_PT_SESSION_WITHDRAW_MOVED, HF_PT_SESSION_WITHDRAW_MISMATCH },
	[PT_SWEEP] = { HF_PT_SESSION_SWEEP_MOVED, HF_PT_SESSION_SWEEP_MISMATCH },
};

/* SL4: we moved a file we did not mean to (it replaced what we judged at
 * src between our look and our move): put it back at src without replacing
 * anything, re-checked before and after (CL3), or leave it as a barrier. */
static void put_back(struct lk *l, const char *aside, const char *src)
{
	struct seen got;
	char moved[ID_MAX];
	int rc = ident_record(l->dfd, aside, moved, sizeof moved, &got);
	if (rc == -ENOENT || (rc < 0 && rc != HF_EUNREADABLE))
		return; /* gone; or cannot tell what it is: it stays (CL4) */
	hf_claim_restore(l->dfd, aside, l->dfd, src, rc == 0 ? moved : NULL, ident_record, NULL);
}

/* Move lk's src to a fresh aside (ret_aside) and verify it is byte for byte
 * what was judged (expect). 0: it is, and the aside is ours (CL2); -ENOENT:
 * nothing was at src, or the file left our aside before we read it (a
 * sweeper or a restorer took it on); HF_ENOTYOURS: it was another file, now
 * put back at src or left as a barrier; other -errno. */
static int move_verified(struct lk *l, const char *src, const struct seen *expect, int pt,
			 char *ret_aside, size_t n)
{
	int rc = hf_claim_take(l->dfd, src, l->dfd, l->prefix, ret_aside, n); /* SL3 */
	if (rc < 0)
		return rc;
	hf_sys_point(points[pt].moved);
	char judged[ID_MAX];
	identity(expect, judged, sizeof judged);
	struct seen got;
	got.rc = -ENOENT;
	rc = hf_claim_verify(l->dfd, ret_aside, judged, ident_record, &got);
	if (rc == 1 && same_bytes(&got, expect->buf, expect->len))
		return 0; /* CL1: digest and bytes */
	if (got.rc == -ENOENT)
		return -ENOENT;
	if (rc < 0 && got.rc != HF_EUNREADABLE)
		return rc; /* cannot tell what we moved: it stays; if live, a barrier (SL5) */
	hf_sys_point(points[pt].mismatch);
	put_back(l, ret_aside, src); /* SL4 */
	return HF_ENOTYOURS;
}

/* Delete lk's src only if it is byte for byte expect: move_verified, then
 * unlink our own claim (SL3). 0 deleted; -ENOENT when another mover had it
 * first or took it from our claim; else as move_verified. */
static int delete_verified(struct lk *l, const char *src, const struct seen *expect, int pt)
{
	char aside[HF_CLAIM_NAME_MAX];
	int rc = move_verified(l, src, expect, pt, aside, sizeof aside);
	if (rc < 0)
		return rc;
	assert(hf_session_is_aside(l->name, aside) && "SL3");
	return hf_sys_unlinkat(l->dfd, aside, 0);
}

/* ------------------------------------------------------------------------
 * The pinned drop (SL10): a record we hold a descriptor of
 * ---------------------------------------------------------------------- */

/* A record pinned by a descriptor (our published O_TMPFILE, or the one we
 * read a record by): while it is open the inode cannot be reused, so its
 * number identifies the record wherever it is renamed to (CL1 allows an
 * inode number only against a descriptor that pins it). */
struct pin {
	int fd;
	dev_t dev;
	ino_t ino;
};

static int pin_make(struct pin *p, int fd)
{
	struct stat st;
	p->fd = fd;
	int rc = hf_sys_fstat(fd, &st);
	if (rc < 0)
		return rc;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	return 0;
}

/* Is dfd/name the pinned record? 1 yes, 0 another file, -ENOENT none. */
static int pin_is(const struct pin *p, int dfd, const char *name)
{
	struct stat st;
	int rc = hf_sys_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc < 0)
		return rc;
	return st.st_dev == p->dev && st.st_ino == p->ino;
}

struct pin_find {
	const struct pin *p;
	char *name;
	size_t n;
};

static int pin_find_cb(int cfd, const char *name, void *ctx)
{
	struct pin_find *f = ctx;
	int rc = pin_is(f->p, cfd, name);
	if (rc == 1)
		snprintf(f->name, f->n, "%s", name);
	return rc == 1 ? 1 : rc == -ENOENT ? 0 : rc < 0 ? rc : 0;
}

/* Move the pinned record from src to a fresh aside of our own, check there
 * that it is the pinned inode, delete it. 0: it was, and it is gone (or
 * taken from our aside since - by a release of its lane or a sweeper, who
 * delete it - or put back at <name>: the caller's next round sees that);
 * -ENOENT: nothing at src any more; HF_ENOTYOURS: another file had replaced
 * it at src, put back or left a barrier (SL4); other -errno. */
static int take_pinned(struct lk *l, const struct pin *p, const char *src, int pt)
{
	char aside[HF_CLAIM_NAME_MAX];
	int rc = hf_claim_take(l->dfd, src, l->dfd, l->prefix, aside, sizeof aside); /* SL3 */
	if (rc < 0)
		return rc;
	hf_sys_point(points[pt].moved);
	rc = pin_is(p, l->dfd, aside);
	if (rc == 1) {
		assert(hf_session_is_aside(l->name, aside) && "SL3");
		rc = hf_sys_unlinkat(l->dfd, aside, 0); /* our verified claim (CL2) */
		return rc == -ENOENT ? 0 : rc;
	}
	if (rc < 0)
		return rc; /* -ENOENT: taken from our aside before we looked */
	hf_sys_point(points[pt].mismatch);
	/* Only <name> is ever replaced: an aside name is drawn fresh and never
	 * reused, so what a steal from an aside moves is what was there. */
	if (!strcmp(src, l->name))
		put_back(l, aside, src);
	return HF_ENOTYOURS;
}

#define GONE 2 /* drop_pinned: removed, but never by us (a breaker or sweeper did) */

/* SL10: take the pinned record back, from <name> or from whichever aside it
 * has been moved to, until no name refers to it. 0: we removed it; GONE:
 * it had gone without our moving it; -EAGAIN after DROP_ROUNDS rounds
 * (SH10); other -errno (the record may then stay: it ages out, SH2). While
 * it is in flight we hold its kernel lock, which tells a taker not to put
 * it back at <name> (SL4; a hint: any restore is safe under this loop). */
static int drop_pinned(struct lk *l, int fd, int pt)
{
	struct pin p;
	int rc = pin_make(&p, fd);
	if (rc < 0)
		return rc;
	hf_sys_flock(fd, LOCK_EX | LOCK_NB); /* SL4: in flight; if a taker holds it, it may restore */
	int ours = 0;
	for (int round = 0; round < DROP_ROUNDS; round++) {
		struct stat st;
		rc = hf_sys_fstat(fd, &st);
		if (rc < 0)
			return rc;
		if (st.st_nlink == 0)
			return ours ? 0 : GONE; /* SL10: no name refers to it */
		assert(st.st_dev == p.dev && st.st_ino == p.ino && "SL10"); /* pinned */
		char where[HF_CLAIM_NAME_MAX];
		rc = pin_is(&p, l->dfd, l->name);
		if (rc == 1) {
			snprintf(where, sizeof where, "%s", l->name);
		} else if (rc == 0 || rc == -ENOENT) {
			struct pin_find f = { &p, where, sizeof where };
			rc = hf_claim_scan(l->dfd, l->prefix, pin_find_cb, &f);
		}
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue; /* moved between our looks: look again */
		rc = take_pinned(l, &p, where, pt);
		if (rc == 0)
			ours = 1;
		else if (rc != -ENOENT && rc != HF_ENOTYOURS)
			return rc;
	}
	return -EAGAIN;
}

/* Find an aside whose record satisfies pred: 1 and ret_name/ret_seen filled
 * (and *keep, when not NULL, a descriptor of what was read), 0 none, <0 a
 * scan error (CL4). */
typedef int (*seen_pred)(const struct seen *s, const void *arg);
struct find {
	seen_pred pred;
	const void *arg;
	char *name;
	size_t n;
	struct seen *out;
	int *keep;
};

static int find_cb(int cfd, const char *name, void *ctx)
{
	struct find *f = ctx;
	int fd = -1;
	int rc = look_aside(cfd, name, f->out, f->keep ? &fd : NULL);
	if (rc == 0 && f->pred(f->out, f->arg)) {
		snprintf(f->name, f->n, "%s", name);
		if (f->keep)
			*f->keep = fd;
		return 1;
	}
	if (fd >= 0)
		hf_sys_close(fd);
	return rc == -ENOENT || rc == HF_EUNREADABLE || rc == NOT_A_RECORD ? 0 : rc;
}

static int find_aside(struct lk *l, seen_pred pred, const void *arg, char *ret_name, size_t n,
		      struct seen *ret_seen, int *keep)
{
	struct find f = { pred, arg, ret_name, n, ret_seen, keep };
	if (keep)
		*keep = -1;
	return hf_claim_scan(l->dfd, l->prefix, find_cb, &f);
}

/* ------------------------------------------------------------------------
 * Opening a lock
 * ---------------------------------------------------------------------- */

int hf_session_resolve_path(const char **path, char *def, size_t n)
{
	if (*path)
		return 0;
	int rc = hf_session_default_path(def, n);
	if (rc == 0)
		*path = def;
	return rc;
}

static int lk_open(struct lk *l, const char *path, int64_t stale_ms)
{
	char def[PATH_MAX];
	int rc = hf_session_resolve_path(&path, def, sizeof def);
	if (rc < 0)
		return rc;
	rc = hf_open_parent(path, &l->dfd, l->name, sizeof l->name);
	if (rc < 0)
		return rc;
	/* an aside is <name>.aside-<16 hex>: it must fit in a file name */
	if (strlen(l->name) + strlen(HF_SESSION_ASIDE_INFIX) + 16 > NAME_MAX) {
		hf_sys_close(l->dfd);
		return -ENAMETOOLONG;
	}
	snprintf(l->prefix, sizeof l->prefix, "%s%s", l->name, HF_SESSION_ASIDE_INFIX);
	l->stale_ms = stale_ms > 0 ? stale_ms : HF_SESSION_STALE_MS_DEFAULT;
	return 0;
}

static void fill_status(struct hf_sessionlock_status *st, const struct seen *s, int64_t stale_ms,
			const char *aside)
{
	if (!st)
		return;
	memset(st, 0, sizeof *st);
	st->mtime_ms = s->mtime_ms;
	if (s->rc == 0) {
		st->rec = s->rec;
		st->state = hf_session_judge(&s->rec, hf_sys_now_ms(), stale_ms, &st->age_ms);
	} else {
		st->state = HF_SESSION_UNREADABLE;
		snprintf(st->reason, sizeof st->reason, "%s", s->why);
	}
	if (aside) {
		st->in_aside = 1;
		snprintf(st->aside, sizeof st->aside, "%s", aside);
	}
}

static int check_name(const char *s, size_t max, int required)
{
	if (!s)
		return required ? -EINVAL : 0;
	return *s && hf_text_ok(s, max) ? 0 : -EINVAL;
}

/* ------------------------------------------------------------------------
 * take
 * ---------------------------------------------------------------------- */

struct scan {
	struct lk *l;
	const struct seen *mine;
	struct hf_sessionlock_status *holder;
	char barrier[HF_CLAIM_NAME_MAX];
	int bfd;      /* a descriptor of the barrier's record, or -1          */
	int denied;   /* HF_EHELD (live record) or HF_EUNREADABLE (cannot read) */
	int lost;     /* a sweep lost its record to another mover: no more    */
	struct seen bseen;
};

static int take_scan_cb(int cfd, const char *name, void *ctx)
{
	struct scan *sc = ctx;
	struct seen *s = &sc->bseen; /* kept when it turns out to be a barrier */
	int fd;
	int rc = look_aside(cfd, name, s, &fd);
	if (rc == -ENOENT || rc == NOT_A_RECORD || (rc == HF_EUNREADABLE && !s->read_err))
		goto skip; /* gone; not a regular file (SL11); or garbage: no
			      taker wrote it (records are published whole, SL1),
			      so it hides no holder */
	if (rc == 0 && same_bytes(s, sc->mine->buf, sc->mine->len))
		goto skip; /* our own record, displaced by a mismatching breaker:
			      still ours (it restores it, or a later taker sees
			      it as a barrier) */
	if (rc == 0 &&
	    hf_session_judge(&s->rec, hf_sys_now_ms(), sc->l->stale_ms, NULL) == HF_SESSION_STALE) {
		/* SL9: a killed breaker's; SL3. Sweeping is cleanup: once another
		 * mover takes a record from under a sweep (its lane dropping it,
		 * SL10), this scan sweeps no more, so it never chases one. */
		if (!sc->lost && delete_verified(sc->l, name, s, PT_SWEEP) == -ENOENT)
			sc->lost = 1;
		goto skip;
	}
	if (rc < 0 && rc != HF_EUNREADABLE)
		return rc; /* CL4: a claim we cannot read denies */
	/* SL5: a live record (or one we cannot read) beside the lock. */
	fill_status(sc->holder, s, sc->l->stale_ms, name);
	snprintf(sc->barrier, sizeof sc->barrier, "%s", name);
	sc->bfd = fd;
	sc->denied = rc == 0 ? HF_EHELD : HF_EUNREADABLE;
	return 1;
skip:
	if (fd >= 0)
		hf_sys_close(fd);
	return 0;
}

static void copy_broke(struct hf_sessionlock_record *r, const struct seen *j, int64_t age_ms)
{
	r->has_broke = 1;
	snprintf(r->broke.lane, sizeof r->broke.lane, "%s", j->rec.lane);
	snprintf(r->broke.owner, sizeof r->broke.owner, "%s", j->rec.owner);
	r->broke.started_ms = j->rec.started_ms;
	r->broke.age_s = age_ms / 1000; /* SL2: the age it was judged by */
	r->broke.legacy = j->rec.legacy;
}

/* Our own record, formatted into mine->buf (not the heap: a free take never
 * calls malloc, which spares its first-use set-up). */
static int set_mine(struct seen *mine, const struct hf_sessionlock_record *r)
{
	int len = hf_session_format(r, mine->buf, sizeof mine->buf);
	if (len < 0)
		return len;
	assert(len > 0 && mine->buf[len - 1] == '\n' && "SL1"); /* a whole record */
	mine->len = (size_t)len;
	mine->rec = *r;
	return 0;
}

/* SL8: the judged lock's aside goes once our publication is decided. */
static void drop_stolen(struct lk *l, char *stolen)
{
	if (stolen[0]) {
		assert(hf_session_is_aside(l->name, stolen) && "SL8");
		hf_sys_unlinkat(l->dfd, stolen, 0); /* our verified claim (CL2) */
	}
	stolen[0] = '\0';
}

/* SL4: after our withdrawal, a live barrier that no one is moving goes back
 * to <name>: we can take its kernel lock (a withdrawer or releaser moving
 * its own record holds it), and hf_claim_restore re-checks its bytes just
 * before and after the rename, which never replaces anything (CL3). */
static void restore_orphan(struct lk *l, struct scan *sc)
{
	if (sc->denied != HF_EHELD || sc->bfd < 0 || hf_kernel_lock_probe(sc->bfd) != 0)
		return; /* in flight (or cannot tell): its mover finishes it */
	char id[ID_MAX];
	identity(&sc->bseen, id, sizeof id);
	hf_claim_restore(l->dfd, sc->barrier, l->dfd, l->name, id, ident_record, NULL);
}

int hf_sessionlock_take(const struct hf_sessionlock_opts *o, struct hf_sessionlock_record *ret_taken,
		    struct hf_sessionlock_status *reterr_holder)
{
	if (check_name(o->lane, HF_LANE_MAX, 1) < 0 || check_name(o->owner, HF_OWNER_MAX, 0) < 0)
		return -EINVAL;
	struct hf_sessionlock_record r;
	memset(&r, 0, sizeof r);
	strcpy(r.lane, o->lane);
	int rc = o->owner ? (strcpy(r.owner, o->owner), 0) : hf_random_hex(r.owner, 16);
	if (rc < 0)
		return rc;
	struct lk l;
	rc = lk_open(&l, o->path, o->stale_ms);
	if (rc < 0)
		return rc;
	hf_session_stamp(&r); /* SL2: "started" boot-relative, on this kernel */
	struct seen mine;
	int mine_fd = -1; /* pins our published record (SL10) */
	union { /* never live together: 4 KiB less stack to fault in */
		struct seen j;    /* the lock found at the name (ST1-ST3) */
		struct scan sc;   /* the asides after publishing (ST5)   */
	} u;
	char stolen[HF_CLAIM_NAME_MAX] = "";
	rc = set_mine(&mine, &r);
	if (rc < 0)
		goto out;
	hf_sys_point(HF_PT_SESSION_TAKE_BEGIN);
	for (int round = 0; round < ROUNDS_MAX; round++) {
		rc = hf_publish_file_at_fd(l.dfd, l.name, mine.buf, mine.len, 0644, false,
					   &mine_fd); /* SL1 */
		if (rc == 0) {
			hf_sys_point(HF_PT_SESSION_TAKE_PUBLISHED);
			drop_stolen(&l, stolen); /* SL8 */
			struct scan *sc = &u.sc; /* not zero-filled: 4 KiB of stack */
			sc->l = &l;
			sc->mine = &mine;
			sc->holder = reterr_holder;
			sc->denied = 0;
			sc->bfd = -1;
			sc->lost = 0;
			rc = hf_claim_scan(l.dfd, l.prefix, take_scan_cb, sc); /* SL5 */
			if (rc == 0) {
				/* SL5: the scan after publishing found no live record */
				assert(sc->denied == 0 && sc->bfd < 0 && mine_fd >= 0 && "SL5");
				if (ret_taken)
					*ret_taken = r;
				goto out;
			}
			hf_sys_point(HF_PT_SESSION_TAKE_BARRIER);
			drop_pinned(&l, mine_fd, PT_WITHDRAW); /* SL10; on error it ages out */
			hf_sys_point(HF_PT_SESSION_TAKE_WITHDRAWN);
			restore_orphan(&l, sc); /* SL4 */
			if (sc->bfd >= 0)
				hf_sys_close(sc->bfd);
			if (sc->denied)
				rc = sc->denied;
			goto out;
		}
		if (rc != -EEXIST) {
			/* A take that cannot write (a read-only file system, no
			 * space, no permission) over a live lock is refused for
			 * the lock, naming its holder (SL6), not for the write. */
			int werr = rc;
			if (look(l.dfd, l.name, &u.j, NULL) == 0 &&
			    hf_session_judge(&u.j.rec, hf_sys_now_ms(), l.stale_ms, NULL) !=
				    HF_SESSION_STALE) {
				fill_status(reterr_holder, &u.j, l.stale_ms, NULL);
				rc = HF_EHELD;
			} else {
				rc = werr;
			}
			goto out;
		}
		if (stolen[0]) {
			/* We broke a lock but another taker published first. */
			drop_stolen(&l, stolen); /* SL8 */
			r.has_broke = 0;
			if ((rc = set_mine(&mine, &r)) < 0)
				goto out;
		}
		rc = look(l.dfd, l.name, &u.j, NULL);
		if (rc == -ENOENT)
			continue; /* released or moved since our link failed */
		if (rc == HF_EUNREADABLE)
			fill_status(reterr_holder, &u.j, l.stale_ms, NULL); /* SL2: refused, untouched */
		if (rc < 0)
			goto out;
		int64_t age;
		if (hf_session_judge(&u.j.rec, hf_sys_now_ms(), l.stale_ms, &age) != HF_SESSION_STALE) {
			fill_status(reterr_holder, &u.j, l.stale_ms, NULL);
			rc = HF_EHELD; /* SL6 */
			goto out;
		}
		hf_sys_point(HF_PT_SESSION_TAKE_JUDGED);
		rc = move_verified(&l, l.name, &u.j, PT_TAKE, stolen, sizeof stolen);
		if (rc < 0) {
			stolen[0] = '\0';
			if (rc == -ENOENT || rc == HF_ENOTYOURS)
				continue; /* another mover got there first: ST1 again */
			goto out;
		}
		hf_sys_point(HF_PT_SESSION_TAKE_VERIFIED);
		copy_broke(&r, &u.j, age);
		if ((rc = set_mine(&mine, &r)) < 0)
			goto out;
	}
	rc = -EAGAIN; /* the lock changed hands ROUNDS_MAX times under us */
out:
	if (mine_fd >= 0)
		hf_sys_close(mine_fd);
	drop_stolen(&l, stolen);
	hf_sys_close(l.dfd);
	return rc;
}

/* ------------------------------------------------------------------------
 * release
 * ---------------------------------------------------------------------- */

static int pred_ours(const struct seen *s, const void *arg)
{
	const struct hf_sessionlock_opts *o = arg;
	return s->rc == 0 && !s->rec.legacy && !strcmp(s->rec.lane, o->lane) &&
	       (!o->owner || !strcmp(s->rec.owner, o->owner)); /* SL7 */
}

/* Has the look at <name> changed between a and b (a record put back or
 * published there meanwhile)? */
static int changed(const struct seen *a, const struct seen *b)
{
	if (a->rc != b->rc)
		return 1;
	return a->rc == 0 && !same_bytes(a, b->buf, b->len);
}

int hf_sessionlock_release(const struct hf_sessionlock_opts *o, struct hf_sessionlock_status *reterr_holder)
{
	if (check_name(o->lane, HF_LANE_MAX, 1) < 0 || check_name(o->owner, HF_OWNER_MAX, 0) < 0)
		return -EINVAL;
	struct lk l;
	int rc = lk_open(&l, o->path, o->stale_ms);
	if (rc < 0)
		return rc;
	struct seen looks[2], a; /* <name> as read, twice (SR3), and an aside */
	struct seen *s = &looks[0], *again = &looks[1];
	int fd = -1;
	rc = look(l.dfd, l.name, s, &fd);
	for (int round = 0; round < ROUNDS_MAX; round++) {
		if (rc == 0 && pred_ours(s, o)) {
			hf_sys_point(HF_PT_SESSION_RELEASE_READ);
			rc = drop_pinned(&l, fd, PT_RELEASE); /* SL7, SL10 */
			hf_sys_close(fd);
			fd = -1;
			if (rc != GONE)
				goto out;
			/* broken as stale, swept, or released by another session
			 * of the lane: not ours to report released; look again */
			rc = look(l.dfd, l.name, s, &fd);
			continue;
		}
		if (fd >= 0)
			hf_sys_close(fd);
		fd = -1;
		if (rc < 0 && rc != -ENOENT && rc != HF_EUNREADABLE)
			goto out;
		/* SR3: not ours at the name; our record may sit in an aside (a
		 * barrier, or a breaker's claim): release it there. */
		char where[HF_CLAIM_NAME_MAX];
		int afd;
		int found = find_aside(&l, pred_ours, o, where, sizeof where, &a, &afd);
		if (found < 0) {
			rc = found;
			goto out;
		}
		if (found) {
			hf_sys_point(HF_PT_SESSION_RELEASE_READ);
			int d = drop_pinned(&l, afd, PT_RELEASE);
			hf_sys_close(afd);
			if (d != GONE) {
				rc = d;
				goto out;
			}
			rc = look(l.dfd, l.name, s, &fd);
			continue;
		}
		/* Nothing of ours in the asides. A record put back at the name
		 * during our scan (a mismatching breaker's restore) is seen by a
		 * second look; one moved twice meanwhile is not (SH8). */
		int rc2 = look(l.dfd, l.name, again, &fd);
		if (changed(s, again)) {
			struct seen *t = s;
			s = again;
			again = t;
			rc = rc2;
			continue;
		}
		if (fd >= 0)
			hf_sys_close(fd);
		fd = -1;
		if (rc == -ENOENT) {
			rc = HF_ENOTHELD;
		} else {
			fill_status(reterr_holder, s, l.stale_ms, NULL);
			rc = rc == HF_EUNREADABLE ? HF_EUNREADABLE : HF_ENOTYOURS;
		}
		goto out;
	}
	rc = -EAGAIN;
out:
	if (fd >= 0)
		hf_sys_close(fd);
	hf_sys_close(l.dfd);
	return rc;
}

/* ------------------------------------------------------------------------
 * renew
 * ---------------------------------------------------------------------- */

#define RENEW_NAPS 64 /* SN3: publication retries while a refused taker withdraws */

int hf_sessionlock_renew(const struct hf_sessionlock_opts *o, struct hf_sessionlock_record *ret,
			 struct hf_sessionlock_status *reterr_holder)
{
	if (check_name(o->lane, HF_LANE_MAX, 1) < 0 || check_name(o->owner, HF_OWNER_MAX, 0) < 0)
		return -EINVAL;
	struct lk l;
	int rc = lk_open(&l, o->path, o->stale_ms);
	if (rc < 0)
		return rc;
	struct seen s, mine;
	int fd = -1, new_fd = -1;
	char aside[HF_CLAIM_NAME_MAX];
	/* SN1: ours at <name> (lane, and owner token when given), pinned */
	rc = look(l.dfd, l.name, &s, &fd);
	if (rc == -ENOENT) {
		rc = HF_ENOTHELD;
		goto out;
	}
	if (rc == HF_EUNREADABLE)
		fill_status(reterr_holder, &s, l.stale_ms, NULL);
	if (rc < 0)
		goto out;
	if (!pred_ours(&s, o)) {
		fill_status(reterr_holder, &s, l.stale_ms, NULL);
		rc = HF_ENOTYOURS;
		goto out;
	}
	hf_sys_point(HF_PT_SESSION_RENEW_READ);
	/* SN2: the same lane and owner, written now by us */
	struct hf_sessionlock_record r = s.rec;
	r.has_broke = 0;
	hf_session_stamp(&r);
	if ((rc = set_mine(&mine, &r)) < 0)
		goto out;
	/* SN3: the old record to an aside of our own, verified by the pinned
	 * inode and kept there - a live record beside the lock, so a taker that
	 * publishes at the free name meanwhile is refused (SL5) and, as we hold
	 * its kernel lock, does not put it back (SL4) - then the renewed record
	 * published at <name> by test-and-set (SL1) */
	struct pin p;
	if ((rc = pin_make(&p, fd)) < 0)
		goto out;
	hf_sys_flock(fd, LOCK_EX | LOCK_NB); /* SL4: in flight */
	rc = hf_claim_take(l.dfd, l.name, l.dfd, l.prefix, aside, sizeof aside); /* SL3 */
	if (rc == -ENOENT) {
		rc = HF_ELOST; /* moved since we read it: broken, or released */
		goto out;
	}
	if (rc < 0)
		goto out;
	rc = pin_is(&p, l.dfd, aside);
	if (rc != 1) {
		if (rc == 0)
			put_back(&l, aside, l.name); /* SL4: another's record */
		rc = rc == 0 ? HF_ELOST : rc == -ENOENT ? HF_ELOST : rc;
		goto out;
	}
	assert(hf_session_is_aside(l.name, aside) && "SN3"); /* our own, the pinned record */
	hf_sys_point(HF_PT_SESSION_RENEW_MOVED);
	for (int nap = 0;; nap++) {
		rc = hf_publish_file_at_fd(l.dfd, l.name, mine.buf, mine.len, 0644, false, &new_fd);
		if (rc != -EEXIST)
			break;
		/* a taker published at the free name: it sees our aside and
		 * withdraws, unless it swept our record as stale (a breaker):
		 * then the session is its own and ours is lost (SL10: no name
		 * refers to our record any more) */
		struct stat st;
		if (hf_sys_fstat(fd, &st) == 0 && st.st_nlink == 0) {
			rc = HF_ELOST;
			break;
		}
		if (nap == RENEW_NAPS) {
			rc = -EAGAIN;
			break;
		}
		hf_sys_sleep_ms(1);
	}
	if (rc < 0) {
		/* our old record goes back where it was if it still can (CL3), or
		 * stays a barrier that ages out (SH2) */
		put_back(&l, aside, l.name);
		if (rc == HF_ELOST) {
			struct seen now;
			if (look(l.dfd, l.name, &now, NULL) == 0)
				fill_status(reterr_holder, &now, l.stale_ms, NULL);
		}
		goto out;
	}
	hf_sys_point(HF_PT_SESSION_RENEW_PUBLISHED);
	/* SN4: the old record goes (SL10: wherever it has been moved to) */
	rc = drop_pinned(&l, fd, PT_RELEASE);
	rc = rc == GONE ? 0 : rc;
	if (rc < 0)
		goto out; /* the renewed record holds; the old one ages out (SH2) */
	if (ret)
		*ret = r;
	rc = 0;
out:
	if (fd >= 0)
		hf_sys_close(fd);
	if (new_fd >= 0)
		hf_sys_close(new_fd);
	hf_sys_close(l.dfd);
	return rc;
}

/* ------------------------------------------------------------------------
 * status
 * ---------------------------------------------------------------------- */

static int pred_live(const struct seen *s, const void *arg)
{
	const struct lk *l = arg;
	return s->rc == 0 &&
	       hf_session_judge(&s->rec, hf_sys_now_ms(), l->stale_ms, NULL) != HF_SESSION_STALE;
}

int hf_sessionlock_status(const char *path, int64_t stale_ms, struct hf_sessionlock_status *ret)
{
	struct lk l;
	int rc = lk_open(&l, path, stale_ms);
	if (rc < 0)
		return rc;
	struct seen s;
	rc = look(l.dfd, l.name, &s, NULL);
	if (rc == 0 || rc == HF_EUNREADABLE) {
		fill_status(ret, &s, l.stale_ms, NULL);
		rc = 0;
	} else if (rc == -ENOENT) {
		/* Free at the name; a live record in an aside still holds it. */
		char where[HF_CLAIM_NAME_MAX];
		rc = find_aside(&l, pred_live, &l, where, sizeof where, &s, NULL);
		if (rc == 1)
			fill_status(ret, &s, l.stale_ms, where);
		else if (rc == 0)
			memset(ret, 0, sizeof *ret); /* HF_SESSION_FREE */
		rc = rc < 0 ? rc : 0;
	}
	hf_sys_close(l.dfd);
	return rc;
}
