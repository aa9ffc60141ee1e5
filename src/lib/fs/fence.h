/*
 * fence.h - a directory lock's fence counter (fence.c): the counter line's
 * and the reservation's formats (pure; fuzz/fence_file.c drives them) and
 * the steps dirlock.c takes on it (DA3, DA7, DL12). Not part of the public
 * API; the counter's steps, invariants (FC1-FC4) and hazards are in fence.c.
 */
#ifndef HF_FENCE_H
#define HF_FENCE_H

#include "proc.h"

#include <stddef.h>
#include <stdint.h>

#define HF_FENCE_FILE "fence"                 /* in L.holdfast/              */
#define HF_FENCE_RESERVE_FILE "fence.reserve"
#define HF_FENCE_MAX ((uint64_t)INT64_MAX)    /* FC1: a JSON integer         */
#define HF_FENCE_LOST (-4095) /* internal: HF_EUNREADABLE of a lost reservation */

/* The fence counter's line (L.holdfast/fence, FC3). */
#define HF_FENCE_LINE_MAX 120 /* bytes of a line, its newline excluded */
struct hf_fence_line {
	uint64_t fence, reserve;
	char boot[HF_BOOTID_LEN + 1];
	uint64_t entered;                 /* the fence of the last entry (DA7)      */
};
/* "<fence> <reserve> <boot id> <entered>\n", fixed width, into line
 * (HF_FENCE_LINE_MAX bytes; not NUL-terminated): its length. */
size_t hf_fence_format(char *line, const struct hf_fence_line *fl);
/* A counter file's first n bytes: 0 and *fl, -ENODATA when empty (a new
 * counter), HF_EUNREADABLE otherwise (FC3). */
int hf_fence_parse(const char *buf, size_t n, struct hf_fence_line *fl);
/* The reservation file's n bytes ("<decimal>\n"): 0 and *ret (at most
 * 2^63-1), or HF_EUNREADABLE. */
int hf_fence_reserve_parse(const char *buf, size_t n, uint64_t *ret);

/* --- the counter (sfd: the lock's state directory L.holdfast) --- */

/* *ffd when open (>= 0), else open (creating) the counter into *ffd: the
 * descriptor, or -errno. */
int hf_fence_open(int sfd, int *ffd);
/* flock(fd, op) without blocking, retried within 5 s (FC4): 0, -EBUSY
 * when it stayed locked (a stopped acquirer), other -errno. */
int hf_fence_flock(int fd, int op);
/* The counter's line through fd: 0 and *fl, -ENODATA (empty),
 * HF_EUNREADABLE, -errno. Takes no lock: the caller holds one. */
int hf_fence_read(int fd, struct hf_fence_line *fl);
/* DA3: take the next fence (FT1-FT3, FC1, FC2): 0 and *ret_f;
 * HF_FENCE_LOST and why (why_n bytes, naming sname's reservation) when the
 * reservation was lost; -EOVERFLOW (fences exhausted), -EBUSY (FC4), other
 * -errno. Opens the counter into *ffd when needed (kept open). */
int hf_fence_take(int sfd, int *ffd, const char *sname, uint64_t *ret_f, char *why,
		  size_t why_n);
/* DA7: 1 and the entry recorded when the counter still holds f on this
 * boot, 0 when another took a fence since, <0 error. */
int hf_fence_enter(int fd, uint64_t f);

#endif
