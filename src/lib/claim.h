/*
 * claim.h - the claim core shared by the session lock and the directory lock.
 * The protocol, its invariants and its hazards are in claim.c's header.
 */
#ifndef HF_CLAIM_H
#define HF_CLAIM_H

#include <stdbool.h>
#include <stddef.h>

#define HF_CLAIM_NAME_MAX 256

/* Read the identity (the owner token) of the lock object at dirfd/name: 0 and
 * token filled; HF_EUNREADABLE for garbage; -ENOENT when nothing (or, for a
 * directory, no complete owner record) is there; other -errno. */
typedef int (*hf_claim_identify_fn)(int dirfd, const char *name, char *token, size_t n,
				    void *ctx);

/* Move dirfd/canon aside to claimdirfd/<prefix><16 hex> without replacing
 * anything (renameat2 RENAME_NOREPLACE). 0 and ret_name (n bytes), -ENOENT
 * when nothing is at canon, other -errno (nothing moved). */
int hf_claim_take(int dirfd, const char *canon, int claimdirfd, const char *prefix,
		  char *ret_name, size_t n);

/* Is the claim the object whose token was judged? 1 yes, 0 no (another
 * token, no token, unreadable), <0 on an error reading it. */
int hf_claim_verify(int claimdirfd, const char *name, const char *judged_token,
		    hf_claim_identify_fn identify, void *ctx);

/* Put a claim back at dirfd/canon: re-check that it still carries
 * expect_token (NULL: skip the check), renameat2 RENAME_NOREPLACE, then
 * re-check at canon. 0 restored; HF_EBARRIER when canon is taken (the claim
 * stays where it is, a barrier); -ENOENT when the claim vanished; other
 * -errno. */
int hf_claim_restore(int claimdirfd, const char *name, int dirfd, const char *canon,
		     const char *expect_token, hf_claim_identify_fn identify, void *ctx);

/* Call fn for every entry of claimdirfd whose name starts with prefix.
 * fn returns 0 to go on, >0 to stop (returned), <0 to fail (returned). Any
 * error reading the directory is returned: a scan that could not see every
 * claim must deny (CL4). */
typedef int (*hf_claim_scan_fn)(int claimdirfd, const char *name, void *ctx);
int hf_claim_scan(int claimdirfd, const char *prefix, hf_claim_scan_fn fn, void *ctx);

#endif
