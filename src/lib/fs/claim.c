/*
 * claim.c - the claim core: move aside, verify, restore or leave a barrier.
 *
 * Shared by the session lock (a file) and the directory lock (a directory
 * with an owner record inside). Everything destructive that anyone does to a
 * lock they do not hold - breaking a stale lock, reaping a dead owner's, a
 * release that must not delete a stealer's - starts here.
 *
 * On-disk artifacts
 * -----------------
 *   <dir>/<canon>                 the lock object at its canonical name
 *   <claimdir>/<prefix><16 hex>   a claim: the object moved aside. The name
 *                                 is unique (64 random bits) and never reused.
 *   The kind chooses claimdir and prefix: the session lock uses the lock's
 *   own directory and "<name>.aside-"; the directory lock its state
 *   directory <lock>.holdfast/ and "c-<ms>-" (dirlock.c).
 *
 * Steps
 * -----
 *   1. Judge: read the object's identity and decide.
 *   2. Take:  renameat2(canon -> claim, RENAME_NOREPLACE). Only one mover can
 *             take a given object; a second gets ENOENT (or takes whatever
 *             has replaced it since, which step 3 detects).
 *   3. Verify: read the claim's identity; it must equal the judged one.
 *   4. Match:    the mover owns the claim and may destroy it.
 *      Mismatch: the mover took a fresh lock that is not what it judged. It
 *             restores it with renameat2(claim -> canon, RENAME_NOREPLACE).
 *             If canon is occupied again, the claim stays: a barrier.
 *   An identity is what the kind's identify callback reads: the owner token
 *   of a directory lock's record, a digest of a session record's bytes.
 *
 * Invariants
 * ----------
 *   (CL1) Identity is the record's content - its owner token, or all its
 *         bytes - never an inode number by itself: the kernel hands a freed
 *         inode number to the next mkdir or create at once. An inode number
 *         identifies an object only while the verifier holds a descriptor
 *         that pins it (dirlock.c's record-less directories, session.c's
 *         pinned records): then the number cannot have been reused.
 *   (CL2) Nothing is ever deleted at the canonical name by "read it, it is
 *         mine, unlink it": only after it was moved to one's own claim (an
 *         unlink by name after a check removes whatever replaced the object
 *         in between).
 *   (CL3) A restore never replaces anything (RENAME_NOREPLACE; where the file
 *         system refuses that flag, nothing is restored and the claim stays a
 *         barrier), and, when the caller knows the identity it expects,
 *         re-checks it just before and just after the rename: a sweeper may
 *         have emptied the claim meanwhile.
 *   (CL4) A claim that could not be restored is a barrier: every taker scans
 *         for claims after publishing its own record and withdraws if one may
 *         hold a live owner. A scan that fails (any readdir error) denies.
 *   (CL5) A take moves to a name drawn from 64 random bits that nobody else
 *         uses: where the file system refuses RENAME_NOREPLACE, a plain rename
 *         to that fresh name replaces nothing (short of a 2^-64 collision).
 *         Nothing is ever emulated by link + unlink, which would unlink the
 *         canonical name after the check (CL2).
 *
 * Hazards
 * -------
 *   - A claim of a live holder left as a barrier blocks takers until the
 *     holder releases (it finds its own record in the claim) or a sweeper
 *     proves the holder dead. That is the price of never admitting two.
 *   - A delayed restorer may restore a lock whose owner has since withdrawn:
 *     the lock then looks held by a finished attempt until it is judged
 *     stale. Liveness, not safety.
 */
#include "claim.h"
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int hf_claim_take(int dirfd, const char *canon, int claimdirfd, const char *prefix,
		  char *ret_name, size_t n)
{
	char hex[17];
	for (int attempt = 0; attempt < 4; attempt++) {
		int rc = hf_random_hex(hex, 8);
		if (rc < 0)
			return rc;
		size_t pl = strlen(prefix);
		if (pl + 17 > n)
			return -ENAMETOOLONG;
		memcpy(ret_name, prefix, pl);
		memcpy(ret_name + pl, hex, 17); /* with its NUL */
		assert(strlen(ret_name) == pl + 16 && "CL5"); /* 64 fresh random bits */
		rc = hf_sys_renameat2(dirfd, canon, claimdirfd, ret_name, RENAME_NOREPLACE);
		if (rc == -EOPNOTSUPP) /* CL5: a fresh random name; nothing to replace */
			rc = hf_sys_renameat2(dirfd, canon, claimdirfd, ret_name, 0);
		if (rc != -EEXIST)
			return rc; /* 0, -ENOENT (nothing there), or an error */
		/* 64 random bits collided: draw again, never replace */
	}
	return -EEXIST;
}

int hf_claim_verify(int claimdirfd, const char *name, const char *judged_token,
		    hf_claim_identify_fn identify, void *ctx)
{
	assert(judged_token && judged_token[0] && "CL1"); /* an identity, not a name */
	char token[128];
	int rc = identify(claimdirfd, name, token, sizeof token, ctx);
	if (rc == HF_EUNREADABLE || rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	return strcmp(token, judged_token) == 0; /* CL1 */
}

int hf_claim_restore(int claimdirfd, const char *name, int dirfd, const char *canon,
		     const char *expect_token, hf_claim_identify_fn identify, void *ctx)
{
	char token[128];
	int rc;
	if (expect_token) {
		/* CL3: just before the rename, the claim must still be what we
		 * read; an emptied claim must not go back over a fresh lock. */
		rc = identify(claimdirfd, name, token, sizeof token, ctx);
		if (rc < 0 || strcmp(token, expect_token) != 0)
			return rc == -ENOENT ? -ENOENT : HF_EBARRIER;
	}
	hf_sys_point(HF_PT_CLAIM_RESTORE_CHECKED);
	rc = hf_sys_renameat2(claimdirfd, name, dirfd, canon, RENAME_NOREPLACE);
	if (rc == -EEXIST || rc == -ENOTEMPTY || rc == -EOPNOTSUPP)
		return HF_EBARRIER; /* CL3, CL4: canon is taken again (or the file system
				     * cannot refuse to replace it): the claim stays */
	if (rc < 0)
		return rc;
	if (expect_token) {
		/* CL3: and just after. If a sweeper emptied it in between, the
		 * object at canon has no owner: the next taker judges it then. */
		rc = identify(dirfd, canon, token, sizeof token, ctx);
		if (rc == 0 && strcmp(token, expect_token) != 0)
			return HF_ELOST;
	}
	return 0;
}
