/*
 * wait.c - deadlines, wake-ups on the release itself, jittered backoff.
 *
 * A waiter watches the directory that changes when the lock is released
 * (the lock's parent: a release moves the lock out of it) with inotify, and
 * wakes on IN_MOVED_FROM / IN_DELETE of the lock's own name. Events for other
 * names in a busy directory are drained without waking the caller. Because an
 * event can be missed (the lock released on another host sharing the file
 * system, or between a failed attempt and the poll), every wait is also
 * capped by a backoff that grows quadratically from 1 ms with +-25 % jitter
 * (git's lockfile.c schedule) up to 100 ms.
 *
 * Invariants:
 *  (W1) hf_wait_next never sleeps past the deadline: each poll's timeout is
 *       min(backoff, time left), and it returns HF_ETIMEDOUT once none is left.
 *  (W2) The watch is set up before the first attempt (hf_wait_init), so a
 *       release between an attempt and the wait is seen as an event.
 */
#include "wait.h"

#include "internal.h"

#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define BACKOFF_MAX_US 100000

int hf_wait_init(struct hf_waiter *w, const char *dir, const char *name, int64_t wait_ms)
{
	memset(w, 0, sizeof *w);
	w->ifd = -1;
	w->backoff_us = 1000;
	if (wait_ms == 0) {
		w->deadline_ns = 0; /* try once: hf_wait_next times out at once */
		return 0;
	}
	w->deadline_ns = wait_ms < 0 ? -1 : hf_sys_mono_ns() + wait_ms * 1000000LL;
	if (name && strlen(name) < sizeof w->name)
		strcpy(w->name, name);
	int fd = hf_sys_inotify_init();
	if (fd < 0)
		return 0; /* fallback: backoff only */
	if (hf_sys_inotify_add_watch(fd, dir, IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR) < 0) {
		hf_sys_close(fd);
		return 0;
	}
	w->ifd = fd;
	return 0;
}

static uint32_t jitter_rand(void)
{
	static uint64_t state;
	if (!state)
		state = (uint64_t)hf_sys_mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (uint32_t)state;
}

/* 1: an event for our name arrived; 0: none (drained). */
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
			else if (!w->name[0] || (ev->len && !strcmp(ev->name, w->name)))
				hit = 1;
			p += sizeof *ev + ev->len;
		}
	}
	return hit;
}

int hf_wait_next(struct hf_waiter *w)
{
	for (;;) {
		int64_t left_ms = -1;
		if (w->deadline_ns >= 0) {
			int64_t left_ns = w->deadline_ns - hf_sys_mono_ns();
			if (left_ns <= 0)
				return HF_ETIMEDOUT; /* W1 */
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
		w->backoff_us = nb > BACKOFF_MAX_US ? BACKOFF_MAX_US : nb;
		if (left_ms >= 0 && sleep_ms > left_ms)
			sleep_ms = left_ms; /* W1 */
		if (w->ifd < 0) {
			struct timespec ts = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
			return 0;
		}
		struct pollfd p = { .fd = w->ifd, .events = POLLIN };
		int64_t start = hf_sys_mono_ns();
		int rc = hf_sys_poll(&p, 1, (int)sleep_ms);
		if (rc < 0 && rc != -EINTR)
			return rc;
		if (rc <= 0)
			return 0; /* backoff elapsed: try again */
		if (drain(w))
			return 0;
		/* only unrelated names changed: keep waiting the rest of this slice */
		int64_t spent_ms = (hf_sys_mono_ns() - start) / 1000000;
		if (spent_ms >= sleep_ms)
			return 0;
	}
}

void hf_wait_done(struct hf_waiter *w)
{
	if (w->ifd >= 0)
		hf_sys_close(w->ifd);
	w->ifd = -1;
}
