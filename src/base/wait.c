/*
 * wait.c - deadlines, wake-ups on the release itself, jittered backoff.
 *
 * A waiter watches the directory that changes when the lock is released
 * (the lock's parent: a release moves the lock out of it) with inotify, and
 * wakes on IN_MOVED_FROM / IN_DELETE of the lock's own name. Events for other
 * names in a busy directory are drained without waking the caller. Because an
 * event can be missed (the lock released on another host sharing the file
 * system, or between a failed attempt and the poll), every wait is also
 * capped by a backoff that grows quadratically from 1 ms (n^2 ms before the
 * nth sleep) with +-25 % jitter, up to 250 ms while the watch is in place (the
 * wake-ups that find nothing are then only for what inotify cannot see: a
 * holder that died, a release on another host) and up to 100 ms without
 * one. A waiter that is not woken by a release thus wakes at most about
 * four times a second.
 *
 * The watch is set up lazily, by the first hf_wait_next: an acquisition that
 * succeeds at once never touches inotify. The inotify instance is cached per
 * thread and reused (the watch removed, the instance kept), because closing
 * an instance that ever had a watch waits for an SRCU grace period in the
 * kernel (fsnotify_destroy_group): about 10 ms on the reference VM, paid by a
 * waiter right after it acquired, i.e. inside every contended handoff. The
 * cache belongs to one pid: a forked child never reads its parent's queue.
 *
 * Invariants:
 *  (WT1) hf_wait_next never sleeps past the deadline: each poll's timeout is
 *        min(backoff, time left), and it returns HF_ETIMEDOUT once none is left.
 *  (WT2) Every sleep follows an attempt made while the watch was in place: the
 *        first hf_wait_next sets the watch up and returns at once, so the
 *        caller attempts again before any sleep; a release between that
 *        attempt and the poll is then an event in the queue.
 *  (WT3) Only events of the current watch count (by watch descriptor): events
 *        of an earlier waiter's watch left in a reused instance never wake.
 *  (WT4) A readable cancel descriptor ends the wait with HF_ECANCELED before
 *        any further sleep; it is only polled, never read.
 *
 * Hazards:
 *  - Each thread that ever waited keeps one inotify fd (close-on-exec) until
 *    it exits; a thread that exits leaks it.
 *  - Every waiter on one lock wakes on each release and tries (a thundering
 *    herd of N-1 attempts per handoff).
 */
#include "wait.h"

#include "holdfast.h"
#include "sys.h"

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define BACKOFF_MAX_US 100000          /* no watch: backoff only   */
#define BACKOFF_MAX_WATCHED_US 250000  /* the watch wakes the waiter */

/* This thread's idle inotify instance (no watch), and the pid it is for. */
static __thread int cached_ifd = -1;
static __thread pid_t cached_pid;

static int ifd_get(void)
{
	pid_t me = getpid();
	int fd = cached_ifd;
	cached_ifd = -1;
	if (fd >= 0 && cached_pid == me)
		return fd;
	if (fd >= 0)
		hf_sys_close(fd); /* inherited across fork: the parent's queue */
	return hf_sys_inotify_init();
}

static void ifd_put(int fd)
{
	if (cached_ifd < 0) {
		cached_ifd = fd;
		cached_pid = getpid();
	} else {
		hf_sys_close(fd); /* two waits at once in one thread: keep one */
	}
}

int hf_wait_init(struct hf_waiter *w, const char *dir, const char *name, int64_t wait_ms)
{
	w->ifd = -1;
	w->wd = -1;
	w->armed = 0;
	w->tries = 0;
	w->backoff_us = 1000;
	w->cancel_fd = -1;
	w->name[0] = '\0';
	w->dir[0] = '\0';
	if (wait_ms == 0) {
		w->deadline_ns = 0; /* try once: hf_wait_next times out at once */
		w->armed = 1;
		return 0;
	}
	w->deadline_ns = wait_ms < 0 ? -1 : hf_sys_mono_ns() + wait_ms * 1000000LL;
	if (name && strlen(name) < sizeof w->name)
		strcpy(w->name, name);
	if (dir && strlen(dir) < sizeof w->dir)
		strcpy(w->dir, dir);
	else
		w->armed = 1; /* nothing to watch: backoff only */
	return 0;
}

/* Set up the watch (WT2). 0 when set up; <0 when inotify is refused. */
static int arm(struct hf_waiter *w)
{
	w->armed = 1;
	int fd = ifd_get();
	if (fd < 0)
		return fd;
	int wd = hf_sys_inotify_add_watch(fd, w->dir, IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR);
	if (wd < 0) {
		ifd_put(fd);
		return wd;
	}
	w->ifd = fd;
	w->wd = wd;
	return 0;
}

static uint32_t jitter_rand(void)
{
	static __thread uint64_t state;
	if (!state)
		state = (uint64_t)hf_sys_mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (uint32_t)state;
}

/* 1: an event for our name on our watch arrived; 0: none (drained). */
static int drain(struct hf_waiter *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int hit = 0;
	for (;;) {
		ssize_t n = hf_sys_read(w->ifd, buf, sizeof buf);
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW)
				hit = 1;
			else if (ev->wd == w->wd && /* WT3 */
				 (!w->name[0] || (ev->len && !strcmp(ev->name, w->name))))
				hit = 1;
			p += sizeof *ev + ev->len;
		}
	}
	return hit;
}

void hf_wait_set_cancel(struct hf_waiter *w, int fd)
{
	w->cancel_fd = fd;
}

/* 1 when the cancel descriptor is readable (WT4), -1 when it is not open. */
static int cancelled(const struct hf_waiter *w)
{
	if (w->cancel_fd < 0)
		return 0;
	struct pollfd p = { .fd = w->cancel_fd, .events = POLLIN };
	if (hf_sys_poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & POLLNVAL)
		return -1; /* not an open descriptor: the caller's mistake, said at once */
	return (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

int hf_wait_next(struct hf_waiter *w)
{
	int c = cancelled(w);
	if (c < 0)
		return -EBADF; /* the cancel descriptor is not open */
	if (c)
		return HF_ECANCELED; /* WT4 */
	if (!w->armed) {
		if (w->deadline_ns > 0 && hf_sys_mono_ns() >= w->deadline_ns)
			return HF_ETIMEDOUT; /* WT1 */
		if (arm(w) == 0)
			return 0; /* WT2: attempt again, now watched */
	}
	for (;;) {
		int64_t left_ms = -1;
		if (w->deadline_ns >= 0) {
			int64_t left_ns = w->deadline_ns - hf_sys_mono_ns();
			if (left_ns <= 0)
				return HF_ETIMEDOUT; /* WT1 */
			left_ms = (left_ns + 999999) / 1000000;
		}
		/* backoff with +-25 % jitter */
		int64_t b = w->backoff_us;
		int64_t j = (int64_t)(jitter_rand() % (uint32_t)(b / 2 + 1)) - b / 4;
		int64_t sleep_ms = (b + j + 999) / 1000;
		if (sleep_ms < 1)
			sleep_ms = 1;
		w->tries++;
		int64_t nb = 1000LL * (w->tries + 1) * (w->tries + 1);
		int64_t cap = w->ifd >= 0 ? BACKOFF_MAX_WATCHED_US : BACKOFF_MAX_US;
		w->backoff_us = nb > cap ? cap : nb;
		if (left_ms >= 0 && sleep_ms > left_ms)
			sleep_ms = left_ms; /* WT1 */
		assert((left_ms < 0 || sleep_ms <= left_ms) && sleep_ms >= 0 && "WT1");
		if (w->ifd < 0 && w->cancel_fd < 0) {
			int rc = hf_sys_sleep_ms(sleep_ms);
			return rc < 0 ? rc : 0;
		}
		/* the watch (or nothing: -1 is ignored by poll) and the cancel fd */
		struct pollfd p[2] = { { .fd = w->ifd, .events = POLLIN },
				       { .fd = w->cancel_fd, .events = POLLIN } };
		int64_t start = hf_sys_mono_ns();
		int rc = hf_sys_poll(p, 2, (int)sleep_ms);
		if (rc < 0 && rc != -EINTR)
			return rc;
		if (rc <= 0)
			return 0; /* backoff elapsed: try again */
		if (p[1].revents & POLLNVAL)
			return -EBADF; /* closed under us */
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			return HF_ECANCELED; /* WT4 */
		if (w->ifd < 0 || drain(w))
			return 0;
		/* only unrelated names changed: keep waiting the rest of this slice */
		int64_t spent_ms = (hf_sys_mono_ns() - start) / 1000000;
		if (spent_ms >= sleep_ms)
			return 0;
	}
}

void hf_wait_done(struct hf_waiter *w)
{
	if (w->ifd >= 0) {
		if (w->wd >= 0)
			hf_sys_inotify_rm_watch(w->ifd, w->wd);
		ifd_put(w->ifd);
	}
	w->ifd = -1;
	w->wd = -1;
}
