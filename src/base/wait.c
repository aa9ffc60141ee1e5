/*
 * wait.c - deadlines, wake-ups on the release itself, jittered backoff.
 *
 * A waiter watches the directory that changes when the lock is released
 * (the lock's parent: a release moves the lock out of it) with inotify, and
 * wakes on IN_MOVED_FROM / IN_DELETE of the lock's own name - unless the
 * name came back meanwhile (IN_MOVED_TO / IN_CREATE: another got it first,
 * WT7). Events for other names in a busy directory are drained without
 * waking the caller. When the caller names the holder (hf_wait_holder) and
 * it is a process of this pid namespace, its end wakes the waiter too: a
 * pidfd (pidfd_open(2)) polls readable once the process has exited - a
 * holder that dies leaves its lock behind, which no inotify event says.
 *
 * What neither can see - a holder in another pid namespace or on another
 * host that died, a release on another host sharing the file system - is
 * seen by the next attempt after a backoff: quadratic from 1 ms (n^2 ms
 * before the nth sleep), +-25 % jitter, capped at 1 s (+0..50 % jitter
 * there: 1 to 1.5 s, about 0.8 wake-ups a second). A refusal by a
 * holder (hf_wait_holder) with the watch in place sleeps the cap at once:
 * its release is an event, so shorter sleeps would only be wake-ups that
 * find nothing. The short steps remain for what the watch does not cover:
 * barriers (claims resolved beside the lock), unreadable records, no
 * inotify at all. So an idle waiter wakes at most once a second, and at
 * once on a release or on its holder's end.
 *
 * The watch is set up lazily, by the first hf_wait_next: an acquisition that
 * succeeds at once never touches inotify. The inotify instance is cached per
 * thread and reused (the watch removed, the instance kept), because closing
 * an instance that ever had a watch waits for an SRCU grace period in the
 * kernel (fsnotify_destroy_group): about 10 ms on the reference VM, paid by a
 * waiter right after it acquired, i.e. inside every contended handoff. The
 * cache belongs to one pid: a forked child never reads its parent's queue.
 * Re-entering a wait (a CLI waiting in slices to refresh a line) costs the
 * watch's add and remove and one attempt more, not a new instance; and a
 * first sleep for a holder is already the whole slice, not 1 ms.
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
 *  (WT5) A pidfd only wakes: the attempt that follows judges the holder
 *        (dead only on the protocol's proof, DL6/OW1-OW3), so watching the
 *        wrong process (a pid reused between the judge and pidfd_open) costs
 *        at most a wake-up or the cap, never a verdict. A pidfd that fired
 *        is closed and its pid not watched again while it stays the holder:
 *        a zombie (exited, its parent alive, still a live holder) would keep
 *        it readable, a busy loop. It is opened before the sleep - except
 *        while the lock changes hands quickly (the last wait ended by an
 *        event within PIDFD_AFTER_MS, 10 ms): then once the sleep has
 *        lasted that long, so a contended handoff costs no pidfd; pidfd_open
 *        failing with ESRCH (the holder is gone already) ends the wait at
 *        once. A new wait (a CLI re-entering its wait each second) opens it
 *        before its first sleep: no wake-up more - except in the queue
 *        (WT8), whose waiters are woken one at a time by rings: there the
 *        first sleep too opens it only once it has lasted PIDFD_AFTER_MS,
 *        so a contended handoff (well under 10 ms) opens no pidfd.
 *  (WT6) No sleep is longer than the cap (BACKOFF_MAX_US + 50 % jitter) and
 *        none at the cap is shorter than the cap: at most one wake-up a
 *        second that is neither an event nor the deadline. The cap at once
 *        only after hf_wait_holder and with the watch in place (WT2: a
 *        release is then an event).
 *  (WT7) A drain that ends with the watched name back (IN_MOVED_TO,
 *        IN_CREATE after its removal: another acquirer renamed its directory
 *        in, another taker linked its record) does not end the wait: the
 *        name's next removal is an event again, so WT2's guarantee holds
 *        without an attempt. Only the last event of the name counts, and an
 *        overflowed queue always ends the wait. (The herd of waiters woken
 *        by a release then mostly goes back to sleep without an attempt.)
 *        A new holder so skipped is not judged: its end is seen by the
 *        cap, not by a pidfd.
 *
 *  (WT8) The queue (hf_wait_queue; the directory lock's waiters): instead of
 *        the watch, a waiter registers in a FIFO beside the lock - opened
 *        O_RDWR, held in an epoll instance with EPOLLEXCLUSIVE - before its
 *        next attempt (WT2), and every process that moves the lock's name
 *        away rings it (hf_wait_ring: one byte, written only when a reader
 *        has the FIFO open; else the open fails with ENXIO and that is the
 *        whole cost). The kernel wakes one registered waiter per ring, the
 *        first registered (its wait queue is FIFO; a waiter stays registered
 *        across its attempts and keeps its place - until it leaves for the
 *        watch, WT9), which reads one byte and
 *        attempts. So a release wakes one waiter, not all. The queue only
 *        decides when a waiter attempts: every attempt is the protocol's
 *        whole, and a waiter that is never rung still wakes at the cap
 *        (WT6) - it can delay an acquisition, never admit one.
 *        No ring is lost between an attempt and the sleep: the waiter is
 *        registered before the attempt, and a release is a rename away
 *        before the ring, so either the attempt saw the name free or the
 *        ring finds the waiter registered (a byte stays in the FIFO and the
 *        epoll instance is readable, also when it was not yet asleep).
 *        The ring never raises SIGPIPE in the ringer: it writes through a
 *        descriptor opened O_RDWR (a reader itself), after a write-only
 *        probe that only asks whether anyone waits
 *        (named point wait.ring.probed: between the two).
 *  (WT9) A waiter leaves the queue without taking the lock only through
 *        hf_wait_pass (hf_wait_unqueue, moving to the watch, calls it
 *        too): it leaves the epoll instance, then takes the bytes there and
 *        writes one back - a ring the kernel gave to it goes to the next. A
 *        waiter that read a ring always attempts before it can leave
 *        (hf_wait_next returns 0 after a read); if that attempt met a
 *        holder that will ring (marked, DQ5), the ring is answered; if it
 *        ended in an error before it met anyone, or met a holder it could
 *        not mark, and rang nobody itself, the caller says the ring is
 *        owed, and it is written back all the same.
 *
 * Hazards:
 *  - A waiter killed between its wake-up and its attempt takes its ring
 *    with it: the next waiter wakes at the cap (WT6), up to 1.5 s late.
 *  - holdfast 0.2 releases ring nothing: a waiter of 0.3 queued behind a
 *    0.2 holder sees its release at the cap; a 0.2 waiter still sees every
 *    release through its watch (the name still moves away).
 *  - The queue needs every write into the FIFO to wake a reader (Linux
 *    5.15 and later, and the stable kernels the fix went to): on 5.5-5.14 a
 *    write into a FIFO that already holds a byte wakes nobody, and its
 *    waiters wake at the cap.
 *  - The queue is a FIFO in the lock's state directory: on a file system
 *    shared between hosts (NFS) a ring reaches only the ringer's host's
 *    waiters; the others wake at the cap (as the watch's waiters do).
 *  - Each thread that ever waited keeps one inotify fd (close-on-exec) until
 *    it exits; a thread that exits leaks it.
 *  - Every waiter on one lock wakes on each release (a thundering herd of
 *    N-1 wake-ups per handoff); those that find the name taken again by the
 *    time they drain go back to sleep (WT7), the others attempt.
 *  - A holder in another pid namespace or on another host that dies is seen
 *    up to a second late (no pidfd of it); so is a zombie holder collected
 *    by its parent without a release (the pidfd fired when it exited).
 */
#include "wait.h"

#include "holdfast.h"
#include "sys.h"

#include <assert.h>
#include <stdbool.h>
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define BACKOFF_MAX_US 1000000 /* WT6: at most one wake-up a second */
#define PIDFD_AFTER_MS 10      /* WT5: a sleep this long watches the holder */

/* The cap: 1 s, or a fault engine's cap:wait rule (tests). */
static int64_t cap_us(void)
{
	return hf_sys_wait_cap_ms > 0 ? hf_sys_wait_cap_ms * 1000 : BACKOFF_MAX_US;
}

/* This thread's idle inotify instance (no watch), and the pid it is for. */
static __thread int cached_ifd = -1;
static __thread pid_t cached_pid;

static int ifd_get(void)
{
	pid_t me = hf_sys_getpid();
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
		cached_pid = hf_sys_getpid();
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
	w->steady = 0;
	w->pidfd = -1;
	w->pid = 0;
	w->spent = 0;
	w->woke = HF_WOKE_NONE;
	w->quick = 0;
	w->name[0] = '\0';
	w->dir[0] = '\0';
	w->qdir = -1;
	w->qname[0] = '\0';
	w->qfd = -1;
	w->efd = -1;
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

void hf_wait_queue(struct hf_waiter *w, int dirfd, const char *name)
{
	if (w->armed || dirfd < 0 || !name || strlen(name) >= sizeof w->qname)
		return; /* try once: never waits; or nothing to queue in */
	w->qdir = dirfd;
	strcpy(w->qname, name);
	w->quick = 1; /* WT5: a queued waiter's holder is watched from its 10th ms */
}

#define QUEUE_OPEN (O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY)

/* Register in the queue (WT8): 0, or <0 (the watch instead). */
static int arm_queue(struct hf_waiter *w)
{
	int fd = hf_sys_openat(w->qdir, w->qname, O_RDWR | QUEUE_OPEN, 0);
	if (fd == -ENOENT) {
		int rc = hf_sys_mkfifoat(w->qdir, w->qname, 0600);
		if (rc < 0 && rc != -EEXIST)
			return rc;
		fd = hf_sys_openat(w->qdir, w->qname, O_RDWR | QUEUE_OPEN, 0);
	}
	if (fd < 0)
		return fd;
	struct stat st;
	int rc = hf_sys_fstat(fd, &st);
	if (rc == 0 && !S_ISFIFO(st.st_mode))
		rc = -EINVAL; /* not ours to read: the watch */
	int ep = rc == 0 ? hf_sys_epoll_create() : rc;
	if (ep < 0) {
		hf_sys_close(fd);
		return ep;
	}
	rc = hf_sys_epoll_ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLEXCLUSIVE);
	/* the cancel descriptor beside it (one the kernel cannot poll by epoll,
	 * a regular file: the watch and poll(2) instead) */
	if (rc == 0 && w->cancel_fd >= 0)
		rc = hf_sys_epoll_ctl(ep, EPOLL_CTL_ADD, w->cancel_fd, EPOLLIN);
	if (rc < 0) {
		hf_sys_close(ep);
		hf_sys_close(fd);
		return rc;
	}
	w->qfd = fd;
	w->efd = ep;
	return 0;
}

/* A ring taken (WT8): 1 when bytes were read - every one there, in one
 * read: one attempt after the latest ring serves them all (each ring
 * follows a departure from L, and the attempt meets what came after) - 0
 * when another took them. */
static int queue_take(struct hf_waiter *w)
{
	char b[64];
	return hf_sys_read(w->qfd, b, sizeof b) > 0;
}

void hf_wait_ring(int dirfd, const char *name)
{
	/* The probe: a FIFO opens for writing without blocking only while a
	 * reader has it open - ENXIO when nobody waits, ENOENT when nobody ever
	 * waited, EISDIR for a directory. The whole cost of a release that
	 * nobody waits for. */
	int fd = hf_sys_openat(dirfd, name, O_WRONLY | QUEUE_OPEN, 0);
	if (fd < 0)
		return;
	hf_sys_close(fd);
	hf_sys_point(HF_PT_WAIT_RING_PROBED);
	/* The ring itself through a descriptor that is a reader too: a write
	 * to a FIFO whose readers all left meanwhile would raise SIGPIPE in the
	 * caller's process (EPIPE); ours keeps one reader, and the byte is
	 * discarded with the FIFO's buffer if nobody else has it open. */
	fd = hf_sys_openat(dirfd, name, O_RDWR | QUEUE_OPEN, 0);
	if (fd < 0)
		return;
	struct stat st;
	if (hf_sys_fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
		(void)hf_sys_write(fd, "r", 1); /* EAGAIN: full of rings already */
	hf_sys_close(fd);
}

int hf_wait_expired(const struct hf_waiter *w)
{
	return w->deadline_ns > 0 && hf_sys_mono_ns() >= w->deadline_ns;
}

void hf_wait_ring_fd(int qfd)
{
	(void)hf_sys_write(qfd, "r", 1); /* EAGAIN: full of rings already */
}

void hf_wait_pass(struct hf_waiter *w, int owed)
{
	if (w->efd >= 0) {
		hf_sys_close(w->efd); /* WT9: out of the queue first */
		w->efd = -1;
	}
	if (w->qfd >= 0 && (queue_take(w) || owed))
		(void)hf_sys_write(w->qfd, "r", 1); /* to the next */
}

void hf_wait_unqueue(struct hf_waiter *w, int owed)
{
	w->qdir = -1; /* no registration from now on */
	if (w->efd < 0)
		return;
	hf_wait_pass(w, owed); /* WT9: out of the epoll instance, a ring passed on */
	hf_sys_close(w->qfd);
	w->qfd = -1;
	w->armed = 0; /* WT2: the next hf_wait_next sets up the watch */
	w->quick = 0; /* WT5: on the watch the holder's pidfd is opened at once */
}

/* Set up the watch (WT2). 0 when set up; <0 when inotify is refused. */
static int arm(struct hf_waiter *w)
{
	w->armed = 1;
	if (w->qdir >= 0 && arm_queue(w) == 0)
		return 0; /* WT8 */
	int fd = ifd_get();
	if (fd < 0)
		return fd;
	/* WT7: a named entry's return is watched too (a removal then its
	 * return in one drain is no reason to attempt) */
	uint32_t mask = IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR;
	if (w->name[0])
		mask |= IN_MOVED_TO | IN_CREATE;
	int wd = hf_sys_inotify_add_watch(fd, w->dir, mask);
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
		state = (uint64_t)hf_sys_mono_ns() ^ ((uint64_t)hf_sys_getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (uint32_t)state;
}

/* 1: our name was removed (its last event on our watch is a removal), or
 * events were lost; 0: nothing that makes an attempt worth it (drained). A
 * read returns every queued event that fits: one that leaves room for the
 * longest event drained the queue, so it is not read again until EAGAIN (a
 * system call less on every wake-up; an event queued just after is read
 * by the next poll, at worst one attempt more). */
static int drain(struct hf_waiter *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int hit = 0, overflow = 0;
	for (;;) {
		ssize_t n = hf_sys_read(w->ifd, buf, sizeof buf);
		if (n <= 0)
			break;
		bool more = (size_t)n > sizeof buf - (sizeof(struct inotify_event) + NAME_MAX + 1);
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW)
				overflow = 1; /* events lost: attempt */
			else if (ev->wd == w->wd && /* WT3 */
				 (!w->name[0] || (ev->len && !strcmp(ev->name, w->name))))
				/* WT7: the last event for the name decides - removed, or
				 * back again (another acquirer's, seen by its own event
				 * when it goes) */
				hit = (ev->mask & (IN_MOVED_FROM | IN_DELETE)) != 0;
			p += sizeof *ev + ev->len;
		}
		if (!more)
			break;
	}
	return hit || overflow;
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

#define PIDFD_UNAVAILABLE (-3) /* pidfd_open refused (ENOSYS, EMFILE...) */

static void pidfd_drop(struct hf_waiter *w)
{
	if (w->pidfd >= 0)
		hf_sys_close(w->pidfd);
	w->pidfd = -1;
	w->pid = 0;
}

void hf_wait_holder(struct hf_waiter *w, pid_t pid)
{
	w->steady = 1;
	if (pid == w->pid)
		return; /* the same holder: its pidfd (open or due) stays */
	pidfd_drop(w);
	if (pid <= 0 || pid == w->spent || w->deadline_ns == 0)
		return; /* WT5: a pid whose pidfd fired stays unwatched */
	w->spent = 0;
	w->pid = pid; /* its pidfd is opened once a sleep lasts (WT5) */
}

/* Open the holder's pidfd, due since hf_wait_holder: 0 (open, or none to
 * be had), 1 when the holder is gone already (ESRCH: attempt now, WT5). */
static int pidfd_arm(struct hf_waiter *w)
{
	if (w->pid <= 0 || w->pidfd != -1)
		return 0;
	int fd = hf_sys_pidfd_open(w->pid);
	if (fd >= 0) {
		w->pidfd = fd;
		if (w->efd >= 0 && hf_sys_epoll_ctl(w->efd, EPOLL_CTL_ADD, fd, EPOLLIN) < 0) {
			hf_sys_close(fd); /* the cap sees its end */
			w->pidfd = PIDFD_UNAVAILABLE;
		}
		return 0;
	}
	if (fd == -ESRCH) {
		w->spent = w->pid;
		pidfd_drop(w);
		return 1;
	}
	w->pidfd = PIDFD_UNAVAILABLE; /* -ENOSYS, -EMFILE: the cap sees its end */
	return 0;
}

void hf_wait_arm(struct hf_waiter *w)
{
	if (w->armed || (w->deadline_ns > 0 && hf_sys_mono_ns() >= w->deadline_ns))
		return; /* WT1: the next hf_wait_next times out */
	(void)arm(w); /* refused: the backoff, as hf_wait_next would */
	w->woke = HF_WOKE_ARMED;
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
		if (arm(w) == 0) {
			w->woke = HF_WOKE_ARMED;
			return 0; /* WT2: attempt again, now watched */
		}
	}
	int64_t left_ms = -1;
	if (w->deadline_ns >= 0) {
		int64_t left_ns = w->deadline_ns - hf_sys_mono_ns();
		if (left_ns <= 0)
			return HF_ETIMEDOUT; /* WT1 */
		left_ms = (left_ns + 999999) / 1000000;
	}
	/* this slice: the backoff with +-25 % jitter, at the cap +0..50 % (WT6) */
	int64_t cap = cap_us();
	int64_t b = w->backoff_us < cap ? w->backoff_us : cap;
	int efd = w->efd >= 0 ? w->efd : w->ifd; /* the queue, or the watch */
	if (w->steady && efd >= 0)
		b = cap; /* WT6: a release is an event (WT2), or a ring (WT8) */
	int64_t j = (int64_t)(jitter_rand() % (uint32_t)(b / 2 + 1)) - b / 4;
	if (b >= cap)
		j += b / 4; /* WT6: never shorter than the cap */
	int64_t sleep_ms = (b + j + 999) / 1000;
	if (sleep_ms < 1)
		sleep_ms = 1;
	w->steady = 0;
	w->tries++;
	int64_t nb = 1000LL * (w->tries + 1) * (w->tries + 1);
	w->backoff_us = nb > cap ? cap : nb;
	if (left_ms >= 0 && sleep_ms > left_ms)
		sleep_ms = left_ms; /* WT1 */
	assert((left_ms < 0 || sleep_ms <= left_ms) && sleep_ms >= 0 && "WT1");
	assert(sleep_ms <= cap / 1000 * 3 / 2 + 1 && "WT6");
	w->woke = HF_WOKE_TIMER;
	bool due = w->pid > 0 && w->pidfd == -1; /* a pidfd to open (WT5) */
	if (due && !w->quick) {
		due = false; /* not changing hands quickly: watch it now (WT5) */
		if (pidfd_arm(w)) {
			w->woke = HF_WOKE_HOLDER_END;
			return 0;
		}
	}
	if (efd < 0 && w->cancel_fd < 0 && w->pidfd < 0 && !due) {
		int rc = hf_sys_sleep_ms(sleep_ms);
		return rc < 0 ? rc : 0;
	}
	int64_t start = hf_sys_mono_ns(), end = start + sleep_ms * 1000000LL;
	w->quick = 0;
	for (;;) {
		/* WT5: while the lock changes hands quickly, the first
		 * PIDFD_AFTER_MS without the holder's pidfd - a contended handoff
		 * is over sooner, and opens none */
		int slice = (int)sleep_ms;
		if (due && slice > PIDFD_AFTER_MS)
			slice = PIDFD_AFTER_MS;
		/* the watch, the cancel fd and the holder's pidfd (-1 is ignored
		 * by poll); in the queue, all three in its epoll instance, slept on
		 * by epoll_wait: EPOLLEXCLUSIVE gives a ring to one waiter asleep
		 * there, and only to one asleep there (WT8) */
		struct pollfd p[3] = { { .fd = efd, .events = POLLIN },
				       { .fd = w->cancel_fd, .events = POLLIN },
				       { .fd = w->pidfd >= 0 ? w->pidfd : -1, .events = POLLIN } };
		int rc;
		if (w->efd >= 0) {
			int fds[3];
			uint32_t evs[3];
			rc = hf_sys_epoll_wait(w->efd, fds, evs, 3, slice);
			p[0].fd = w->qfd;
			for (int i = 0; i < rc; i++)
				for (int k = 0; k < 3; k++)
					if (p[k].fd >= 0 && fds[i] == p[k].fd)
						p[k].revents = (short)evs[i];
			p[0].fd = efd;
		} else {
			rc = hf_sys_poll(p, 3, slice);
		}
		if (rc < 0 && rc != -EINTR)
			return rc;
		if (rc <= 0 && due) {
			due = false;
			if (pidfd_arm(w)) {
				w->woke = HF_WOKE_HOLDER_END;
				return 0; /* gone already: attempt now (WT5) */
			}
			int64_t rest_ns = end - hf_sys_mono_ns();
			if (rest_ns <= 0)
				return 0;
			sleep_ms = (rest_ns + 999999) / 1000000;
			continue; /* the rest of the slice, the pidfd watched */
		}
		if (rc <= 0)
			return 0; /* backoff elapsed: try again */
		if (p[1].revents & POLLNVAL)
			return -EBADF; /* closed under us */
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			return HF_ECANCELED; /* WT4 */
		if (p[2].fd >= 0 && p[2].revents) {
			w->spent = w->pid; /* WT5: once; a zombie stays readable */
			pidfd_drop(w);
			w->woke = HF_WOKE_HOLDER_END;
			return 0; /* the holder ended: the attempt judges it */
		}
		if (w->efd >= 0 ? queue_take(w) : w->ifd >= 0 && drain(w)) {
			w->woke = HF_WOKE_EVENT;
			/* WT5: the lock changes hands quickly - the next sleep opens
			 * the next holder's pidfd only if it lasts */
			w->quick = hf_sys_mono_ns() - start < PIDFD_AFTER_MS * 1000000LL;
			return 0;
		}
		if (efd < 0)
			return 0;
		/* only unrelated names changed (or another waiter took the ring): keep waiting the rest of this slice */
		int64_t rest_ns = end - hf_sys_mono_ns();
		if (rest_ns <= 0)
			return 0;
		sleep_ms = (rest_ns + 999999) / 1000000;
	}
}

void hf_wait_done(struct hf_waiter *w)
{
	if (w->pidfd >= 0)
		pidfd_drop(w);
	if (w->efd >= 0)
		hf_sys_close(w->efd);
	if (w->qfd >= 0)
		hf_sys_close(w->qfd);
	w->efd = w->qfd = -1;
	if (w->ifd >= 0) {
		if (w->wd >= 0)
			hf_sys_inotify_rm_watch(w->ifd, w->wd);
		ifd_put(w->ifd);
	}
	w->ifd = -1;
	w->wd = -1;
}
