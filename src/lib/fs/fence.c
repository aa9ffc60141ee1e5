/*
 * fence.c - a directory lock's fence counter: the number every entry into
 * the lock takes (dirlock.c's DA3) and checks as its last step (DA7), so
 * that successive holders' fences strictly increase and a resource can
 * refuse a holder that was reaped while it still believed it held the lock.
 * dirlock.c calls it through fence.h; the formats are pure (fuzz/fence_file.c
 * drives them).
 *
 * On-disk artifacts
 * -----------------
 *   P/L.holdfast/fence      the counter: one line "<fence> <reserve> <boot id>
 *                           <entered>\n", the numbers zero-padded to 20
 *                           digits (fixed width: rewritten in place with
 *                           pwrite under flock(2), never truncated, never
 *                           torn into a shorter line). entered: the fence of
 *                           the last entry (DA7). An older three-field line
 *                           (no entered) reads as entered = fence. Opened
 *                           O_RDWR | O_CREAT (0600) by the first acquirer.
 *   P/L.holdfast/fence.reserve   "<reserve>\n": a durable bound on every
 *                           fence handed out, replaced whole and fsync'ed
 *                           (hf_replace_file_at) before a fence above the
 *                           old bound is handed out; raised RESERVE_STEP
 *                           fences at a time.
 *
 * Steps
 * -----
 *   Take (DA3, hf_fence_take), under an exclusive flock (FC4):
 *     FT1 read the line. Empty (a new counter), unreadable, or written on
 *         another boot (unsynced writes may be lost): restart from the
 *         reservation - fence = reserve, entered = 0, this boot. A missing
 *         or unreadable reservation refuses (HF_FENCE_LOST) unless the
 *         counter is new too: then it starts at the wall clock (FC2).
 *     FT2 f = fence + 1 (-EOVERFLOW at FENCE_MAX); f above the reserve:
 *         raise the reservation first, durably.
 *     FT3 write the line with fence = f. f is the caller's.
 *   Enter (DA7, hf_fence_enter), under an exclusive flock: the line's
 *     fence is still f on this boot - record entered = f: entered; else
 *     another took a fence since: not entered.
 *   A holder's commit (dirlock.c's DL12) holds a shared flock, which keeps
 *   every taker out of both steps.
 *
 * Invariants
 * ----------
 *   (FC1) Fences are taken under flock after DA1, and checked equal to the
 *         counter as the last step before entering. Entries happen in check
 *         order and the counter only grows, so successive holders' fences
 *         strictly increase. A new boot (boot id changed: unsynced writes
 *         may be lost) restarts the counter from the durable reserve, which
 *         is >= every fence ever handed out (fsync'ed before use). A fence
 *         never passes INT64_MAX (a JSON integer): -EOVERFLOW.
 *   (FC2) A new counter (no fence line, no reservation: a state directory
 *         made now, or deleted and made again) starts at the wall clock in
 *         microseconds, so its first fence is above every fence an earlier
 *         counter of this path handed out - as long as that counter gave
 *         fewer fences than microseconds passed between its creation and
 *         this one (each fence costs several system calls) and the wall
 *         clock did not step back between the two. "TOKEN FENCE" keeps its
 *         form; the numbers are large (about 1.8e15, far below INT64_MAX).
 *   (FC3) A fence counter is read only in the form its writer writes
 *         (hf_fence_parse / hf_fence_format): decimal fields, fence <=
 *         reserve <= FENCE_MAX, entered <= fence; anything else is
 *         unreadable, never a number taken from junk.
 *   (FC4) The counter's flocks are taken without blocking, within
 *         FLOCK_BOUND_MS (dirlock.c DL11): an acquirer holds one for a few
 *         system calls, so a longer wait means a stopped process: -EBUSY.
 *
 * Hazards
 * -------
 *   - Removing L.holdfast loses the counter and its reservation: the next
 *     counter starts at the wall clock (FC2), above the old fences unless
 *     the wall clock was set back meanwhile.
 *   - A counter whose reservation is lost while the counter is unreadable
 *     refuses every acquirer (HF_FENCE_LOST, naming the file) until a human
 *     removes the state directory: a guess could repeat a fence.
 */
#include "fence.h"
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>

#define RESERVE_STEP 1024
#define FLOCK_BOUND_MS 5000 /* FC4: the counter is held for a few syscalls */
#define OPEN_REC (O_NONBLOCK | O_NOCTTY) /* with hf_read_small_at's O_NOFOLLOW */

/* "<fence> <reserve> <boot id> <entered>\n", fixed width: rewritten in
 * place under the flock, never torn into a shorter line. */
size_t hf_fence_format(char *line, const struct hf_fence_line *fl)
{
	char *p = line;
	p = hf_put_u64w(p, fl->fence, 20);
	*p++ = ' ';
	p = hf_put_u64w(p, fl->reserve, 20);
	*p++ = ' ';
	p = hf_put_str(p, fl->boot);
	*p++ = ' ';
	p = hf_put_u64w(p, fl->entered, 20);
	*p++ = '\n';
	return (size_t)(p - line);
}

static int fence_write(int fd, const struct hf_fence_line *fl)
{
	char line[HF_FENCE_LINE_MAX];
	ssize_t w = hf_sys_pwrite(fd, line, hf_fence_format(line, fl), 0);
	return w < 0 ? (int)w : 0;
}

/* A decimal field at *pp ending at stop: 0 and *ret, or -1. No strtoull:
 * the counter is read twice in every acquisition. */
static int fence_u64(const char **pp, char stop, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p == '0' && p[1] >= '0' && p[1] <= '9')
		p++; /* the padding */
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
			return -1;
	if (*p != stop && !(stop == '\n' && *p == '\0'))
		return -1;
	*pp = p;
	*ret = v;
	return 0;
}

/* FC3: what a counter is - its first line "<fence> <reserve> <boot id>
 * [<entered>]" (decimal fields, zero-padded or not; the boot id 1 to 36
 * printable bytes without white space), fence <= reserve <= HF_FENCE_MAX and
 * entered <= fence, ending in '\n' or the end of the file; no NUL byte in
 * it. What follows the first newline is ignored: the line is rewritten in
 * place, never truncated, so a longer line written before leaves its tail
 * there. */
int hf_fence_parse(const char *buf, size_t n, struct hf_fence_line *fl)
{
	const char *nl = memchr(buf, '\n', n);
	size_t line = nl ? (size_t)(nl - buf) : n;
	char tmp[HF_FENCE_LINE_MAX + 2];
	if (n == 0)
		return -ENODATA; /* a new counter */
	if (line > HF_FENCE_LINE_MAX || memchr(buf, '\0', line))
		return HF_EUNREADABLE;
	memcpy(tmp, buf, line);
	tmp[line] = '\n';
	tmp[line + 1] = '\0';
	const char *p = tmp;
	uint64_t f, r;
	if (fence_u64(&p, ' ', &f) < 0)
		return HF_EUNREADABLE;
	p++;
	if (fence_u64(&p, ' ', &r) < 0 || f > r || r > HF_FENCE_MAX)
		return HF_EUNREADABLE;
	p++;
	size_t bl = 0;
	while (p[bl] > ' ' && p[bl] < 0x7f)
		bl++;
	if (bl == 0 || bl > HF_BOOTID_LEN || (p[bl] != '\n' && p[bl] != ' '))
		return HF_EUNREADABLE;
	uint64_t e = f; /* an older three-field line: its last fence */
	if (p[bl] == ' ') {
		const char *q = p + bl + 1;
		if (fence_u64(&q, '\n', &e) < 0 || e > f)
			return HF_EUNREADABLE;
	}
	fl->fence = f;
	fl->reserve = r;
	memcpy(fl->boot, p, bl);
	fl->boot[bl] = '\0';
	fl->entered = e;
	return 0;
}

int hf_fence_read(int fd, struct hf_fence_line *fl)
{
	char buf[HF_FENCE_LINE_MAX + 1];
	ssize_t n = hf_sys_pread(fd, buf, sizeof buf, 0);
	if (n < 0)
		return (int)n;
	return hf_fence_parse(buf, (size_t)n, fl);
}

int hf_fence_reserve_parse(const char *buf, size_t n, uint64_t *ret)
{
	/* "<reserve>\n" as hf_fence_take writes it: digits only */
	char tmp[24];
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n == 0 || n >= sizeof tmp || memchr(buf, '\0', n))
		return HF_EUNREADABLE;
	memcpy(tmp, buf, n);
	tmp[n] = '\0';
	return hf_parse_u64(tmp, HF_FENCE_MAX, ret) == 0 ? 0 : HF_EUNREADABLE;
}

/* The durable reservation; 0 when there is none and the counter is new
 * (missing_ok), else a missing one refuses: a guess could repeat a fence. */
static int reserve_read(int sfd, const char *sname, bool missing_ok, uint64_t *ret, char *why,
			size_t n)
{
	char buf[66];
	ssize_t got = hf_read_small_at(sfd, HF_FENCE_RESERVE_FILE, OPEN_REC, buf, sizeof buf, NULL);
	int rc = got < 0 ? (int)got : 0;
	if (rc == -ENOENT && missing_ok) {
		*ret = 0;
		return 0;
	}
	bool ok = false;
	uint64_t v = 0;
	if (rc == 0) {
		ok = hf_fence_reserve_parse(buf, (size_t)got, &v) == 0;
	} else if (rc != -ENOENT && rc != -EFBIG) {
		return rc;
	}
	if (!ok) {
		/* refuse: a lower guess could repeat a fence */
		snprintf(why, n,
			 "the fence counter was lost and its reservation %.60s/" HF_FENCE_RESERVE_FILE
			 " is %s (it bounds every fence handed out: a guess could repeat one)",
			 sname, rc == -ENOENT ? "missing" : "not a number");
		return HF_FENCE_LOST;
	}
	*ret = v;
	return 0;
}

/* FC4: take a flock of the counter without blocking, within FLOCK_BOUND_MS:
 * an acquirer holds it for the few system calls of DA3 (or an edit's commit,
 * hf_dirlock_hold), so a longer wait means a stopped process: -EBUSY. */
int hf_fence_flock(int fd, int op)
{
	int64_t deadline = hf_sys_mono_ns() + FLOCK_BOUND_MS * 1000000LL;
	int64_t nap = 1;
	for (;;) {
		int rc = hf_sys_flock(fd, op | LOCK_NB);
		if (rc != -EWOULDBLOCK)
			return rc;
		if (hf_sys_mono_ns() >= deadline)
			return -EBUSY;
		hf_sys_sleep_ms(nap);
		if (nap < 32)
			nap *= 2;
	}
}

/* The counter's descriptor (*ffd: dirlock.c's lk.ffd), opened once per
 * acquisition and kept across its attempts - by a waiter before it sleeps, so that the attempt
 * after a release does not open it (and by a holder until its release,
 * hf_dirlock_kept). Never locked between the steps that lock it. */
int hf_fence_open(int sfd, int *ffd)
{
	if (*ffd >= 0)
		return *ffd;
	int fd = hf_sys_openat(sfd, HF_FENCE_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
			       0600);
	if (fd >= 0)
		*ffd = fd;
	return fd;
}

/* DA3 (FT1-FT3): f = counter + 1 under LOCK_EX. 0, *ret_f; HF_FENCE_LOST
 * with why (why_n bytes) when the reservation is lost. */
int hf_fence_take(int sfd, int *ffd, const char *sname, uint64_t *ret_f, char *why, size_t why_n)
{
	int fd = hf_fence_open(sfd, ffd);
	if (fd < 0)
		return fd;
	int rc = hf_fence_flock(fd, LOCK_EX);
	if (rc < 0)
		return rc;
	struct hf_fence_line fl;
	const char *boot = hf_boot_id();
	rc = hf_fence_read(fd, &fl);
	if (rc < 0 && rc != HF_EUNREADABLE && rc != -ENODATA)
		goto unlock;
	if (rc < 0 || strcmp(fl.boot, boot) != 0) {
		/* new, unreadable, or from another boot (unsynced counts may be
		 * lost): restart from the durable reservation (FC1) */
		bool fresh = rc == -ENODATA;
		rc = reserve_read(sfd, sname, fresh, &fl.reserve, why, why_n);
		if (rc < 0)
			goto unlock;
		if (fresh && fl.reserve == 0) {
			/* FC2: a counter made now starts above every fence a
			 * counter made earlier at this path can have handed out
			 * (its state directory deleted: git clean -fdx) */
			int64_t us = hf_sys_now_us();
			fl.reserve = us > 0 && (uint64_t)us < HF_FENCE_MAX / 2 ? (uint64_t)us : 0;
		}
		fl.fence = fl.reserve;
		fl.entered = 0;
		snprintf(fl.boot, sizeof fl.boot, "%s", boot);
	}
	if (fl.fence >= HF_FENCE_MAX) {
		rc = -EOVERFLOW; /* FC1: never wrap to a fence handed out before */
		goto unlock;
	}
	uint64_t f = fl.fence + 1;
	if (f > fl.reserve) {
		uint64_t reserve = HF_FENCE_MAX - f < RESERVE_STEP ? HF_FENCE_MAX : f + RESERVE_STEP;
		char buf[32];
		int n = snprintf(buf, sizeof buf, "%" PRIu64 "\n", reserve);
		rc = hf_replace_file_at(sfd, HF_FENCE_RESERVE_FILE, buf, (size_t)n, 0600, false);
		if (rc < 0)
			goto unlock;
		fl.reserve = reserve;
	}
	assert(f > fl.fence && f <= fl.reserve && fl.reserve <= HF_FENCE_MAX && "FC1");
	fl.fence = f;
	rc = fence_write(fd, &fl);
unlock:
	hf_sys_flock(fd, LOCK_UN);
	if (rc < 0)
		return rc;
	*ret_f = f;
	return 0;
}

/* DA7: does the counter still equal f? Then record the entry (the line's
 * "entered"). 1 yes, 0 no, <0 error. Exclusive, so that no acquirer passes
 * its DA7 while a holder commits under its shared flock (hf_dirlock_hold,
 * dirlock.c DL12). */
int hf_fence_enter(int fd, uint64_t f)
{
	int rc = hf_fence_flock(fd, LOCK_EX);
	if (rc < 0)
		return rc;
	struct hf_fence_line fl;
	rc = hf_fence_read(fd, &fl);
	if (rc == 0 && fl.fence == f && !strcmp(fl.boot, hf_boot_id())) {
		fl.entered = f;
		rc = fence_write(fd, &fl);
		rc = rc < 0 ? rc : 1;
	} else if (rc == 0) {
		rc = 0;
	}
	hf_sys_flock(fd, LOCK_UN);
	return rc;
}
