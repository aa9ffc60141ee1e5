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
 *   The kind chooses claimdir and prefix: the session lock uses its own
 *   directory and "<name>.aside-"; the directory lock a claims directory.
 *
 * Steps
 * -----
 *   1. Judge: read the object's identity (its owner token) and decide.
 *   2. Take:  renameat2(canon -> claim, RENAME_NOREPLACE). Only one mover can
 *             take a given object; a second gets ENOENT (or takes whatever
 *             has replaced it since, which step 3 detects).
 *   3. Verify: read the claim's token; it must equal the judged token.
 *   4. Match:    the mover owns the claim and may destroy it.
 *      Mismatch: the mover took a fresh lock that is not what it judged. It
 *             restores it with renameat2(claim -> canon, RENAME_NOREPLACE).
 *             If canon is occupied again, the claim stays: a barrier.
 *
 * Invariants
 * ----------
 *   (CL1) Identity is the owner token and the record's content, never an
 *         inode number (the kernel hands a freed inode number to the next
 *         mkdir at once: REPORT.md, "inode number reuse").
 *   (CL2) Nothing is ever deleted at the canonical name by "read it, it is
 *         mine, unlink it": only after it was moved to one's own claim (the
 *         check-then-unlink race of REPORT.md's full-protocol trail).
 *   (CL3) A restore never replaces anything (RENAME_NOREPLACE; where the file
 *         system refuses that flag, nothing is restored and the claim stays a
 *         barrier), and re-checks the token just before and just after the
 *         rename: a sweeper may have emptied the claim meanwhile (REPORT.md
 *         point 4).
 *   (CL5) A take moves to a name drawn from 64 random bits that nobody else
 *         uses: where the file system refuses RENAME_NOREPLACE, a plain rename
 *         to that fresh name replaces nothing (short of a 2^-64 collision).
 *         Nothing is ever emulated by link + unlink, which would unlink the
 *         canonical name after the check (CL2).
 *   (CL4) A claim that could not be restored is a barrier: every taker scans
 *         for claims after publishing its own record and withdraws if one may
 *         hold a live owner. A scan that fails (any readdir error) denies.
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

int hf_claim_scan(int claimdirfd, const char *prefix, hf_claim_scan_fn fn, void *ctx)
{
	int fd = hf_sys_openat(claimdirfd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	size_t plen = strlen(prefix);
	char buf[8192] __attribute__((aligned(8)));
	int rc = 0;
	for (;;) {
		ssize_t n = hf_sys_getdents(fd, buf, sizeof buf);
		if (n < 0) {
			rc = (int)n; /* CL4: a scan error denies */
			break;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			off += d->reclen;
			if (strncmp(d->name, prefix, plen) != 0 || !strcmp(d->name, ".") ||
			    !strcmp(d->name, ".."))
				continue;
			rc = fn(claimdirfd, d->name, ctx);
			if (rc != 0)
				goto out;
		}
	}
out:
	hf_sys_close(fd);
	return rc;
}
