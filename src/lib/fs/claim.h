/*
 * claim.h - the claim core shared by the session lock and the directory lock.
 * The protocol, its invariants and its hazards are in claim.c's header.
 */
#ifndef HF_CLAIM_H
#define HF_CLAIM_H

#include "file.h"

#include <stdbool.h>
#include <stddef.h>

#define HF_CLAIM_NAME_MAX 256

/* Read the identity of the lock object at dirfd/name (a directory lock's
 * owner token, a digest of a session record's bytes: CL1) into token (n
 * bytes): 0; HF_EUNREADABLE for garbage; -ENOENT when nothing (or, for a
 * directory, no complete owner record) is there; other -errno. */
typedef int (*hf_claim_identify_fn)(int dirfd, const char *name, char *token, size_t n,
				    void *ctx);

/* Move dirfd/canon aside to claimdirfd/<prefix><16 hex> without replacing
 * anything: renameat2 RENAME_NOREPLACE, or where the file system refuses
 * that flag a plain rename to that fresh random name (CL5). 0 and ret_name
 * (n bytes); -ENOENT when nothing is at canon; -ENAMETOOLONG when the name
 * does not fit in n; -EEXIST when four random names all existed; other
 * -errno (nothing moved). */
int hf_claim_take(int dirfd, const char *canon, int claimdirfd, const char *prefix,
		  char *ret_name, size_t n);

/* Is the claim the object whose identity was judged? 1 yes, 0 no (another
 * identity, none - nothing there or no complete record - or unreadable),
 * <0 on an error reading it. */
int hf_claim_verify(int claimdirfd, const char *name, const char *judged_token,
		    hf_claim_identify_fn identify, void *ctx);

/* Put a claim back at dirfd/canon: re-check that it still carries
 * expect_token (NULL: no check, before or after), renameat2
 * RENAME_NOREPLACE, then re-check at canon (CL3). 0 restored; HF_EBARRIER
 * when the claim no longer carries expect_token or cannot be read, or canon
 * is taken (or the file system cannot refuse to replace it): the claim stays
 * where it is, a barrier; -ENOENT when the claim vanished; HF_ELOST when it
 * was restored but what is at canon just after carries another identity (a
 * sweeper emptied it in between); other -errno from the rename. */
int hf_claim_restore(int claimdirfd, const char *name, int dirfd, const char *canon,
		     const char *expect_token, hf_claim_identify_fn identify, void *ctx);

/* The claims in claimdirfd: hf_dir_each over the names that start with
 * prefix. Any error reading the directory is returned: a scan that could
 * not see every claim must deny (CL4, FI6). */
typedef hf_dir_fn hf_claim_scan_fn;
static inline int hf_claim_scan(int claimdirfd, const char *prefix, hf_claim_scan_fn fn,
				void *ctx)
{
	return hf_dir_each(claimdirfd, prefix, fn, ctx);
}

#endif
