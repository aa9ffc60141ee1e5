/*
 * keeper.c - hold descriptors for a process that cannot hold them itself.
 *
 * A kernel lock is proof of life only while someone holds it for the owner
 * (owner.c, OW3). `holdfast scope register` registers a pod for another
 * process (its caller, or --pid) and then exits: the allocation's liveness
 * file, with its flock(LOCK_SH), must outlive it. cli_keep_for() leaves the
 * descriptors to a small detached process, the keeper, that holds them
 * until the owner ends or until every file it holds is removed (the
 * allocation released or reaped: nothing is left to keep alive). It knows
 * nothing of scopes: any descriptors, any owner (directory locks too).
 *
 * Steps
 * -----
 *   1. Read the start times of the owner and of its chain (owner_find.c,
 *      O5: the processes whose life holds the lock too) from
 *      /proc/<pid>/stat: -ESRCH when every one is gone already (nothing to
 *      keep).
 *   2. Fork; the child starts a session of its own (setsid) and forks the
 *      keeper, then exits: the keeper is nobody's child but init's (or a
 *      subreaper's), never the caller's zombie.
 *   3. The keeper: fault rules disarmed, signals unblocked, working
 *      directory "/", stdin/stdout/stderr on /dev/null, every other
 *      descriptor closed but the kept ones (and the report pipe, until 5);
 *      then it gives back the memory the acquisition left it (K6).
 *   4. Arm: a pidfd for each of them (hf_procset), each start time checked
 *      again (the pid may have been reused between 1 and 4); one inotify
 *      watch IN_ATTRIB on
 *      /proc/self/fd/N for each kept descriptor (an unlink changes the
 *      file's link count: IN_ATTRIB).
 *   5. Report the keeper's pid on the pipe and close it: cli_keep_for
 *      returns only once the keeper is armed and has closed the pipe (it
 *      reads to end-of-file).
 *   6. Loop: exit when the owner and every process of its chain have
 *      exited (a kept lock directory is first released by the token of the
 *      record in it, K5) (each pidfd polls readable; the fallback without pidfd:
 *      kill(pid, 0) says ESRCH or the start time changed, looked at every
 *      second) or when every kept file has no link
 *      left (fstat st_nlink == 0; looked at on every wake-up, and every
 *      second without inotify). A removed directory sends no event while it
 *      is held open, so for one that moved (IN_MOVE_SELF: a release renames
 *      the lock before removing it) the directory it moved into is watched
 *      too (its removal is an IN_DELETE there) and it is looked at every
 *      20 ms for a second; a kept directory every 10 s whatever happens. Exiting closes the
 *      descriptors: the kernel drops their locks.
 *
 * Invariants
 * ----------
 *   (K1) The keeper holds nothing of its caller's but the kept descriptors:
 *        no terminal, no pipe (a `$(holdfast scope register …)` returns at
 *        once), no working directory (an unmount is not held up).
 *   (K2) It never outlives both reasons to exist: each condition is checked
 *        after its watch is armed and on every wake-up, so an exit or an
 *        unlink before arming is seen at the first check.
 *   (K3) It never holds for a reused pid: the owner (and each process of
 *        its chain) is the process with the pid AND the start time read in
 *        step 1 (proc.c, PR3).
 *   (K4) The report (step 5) is one pid_t in the machine's byte order: the
 *        keeper's pid, or 0 (the owner ended). A short read, or anything
 *        negative, means it did not start (cli_keep_report_parse).
 *   (K5) A keeper whose owner and chain all ended releases each kept lock
 *        directory that is still at its path, by the token of the record
 *        in it (dirlock.c DT), before it exits: its record is kept (owner.c
 *        OW7), so a judge in another pid namespace would take it for alive
 *        until its max-hold - the keeper is the one process that sees the
 *        owner end. Safe: the token names our own acquisition only, and an
 *        owner whose chain has all ended is dead by OW5 for any judge that
 *        can see it. A keeper killed first leaves that wait (the hazard).
 *   (K6) A keeper keeps no memory of the acquisition's but the pages it
 *        still uses: a fork copies the caller's whole image, and once the
 *        caller exits every page it had written is the keeper's alone
 *        (Private_Dirty). Before arming, the heap's free pages go back
 *        (malloc_trim) and so do the stack pages below the keeper's frame
 *        (MADV_DONTNEED: the dead frames of the acquisition's deepest calls),
 *        and it starts no thread. A keeper of the static CLI costs about
 *        75 KiB of private memory (90 before K6; bench/keeper/memory.sh),
 *        24-28 KiB of it stack; tests/run/test_keeper_mem.c fails above
 *        160 KiB in all or 36 KiB of stack.
 *
 * On etcd (cli_keep_lock) the keeper holds no descriptor but keeps the
 * lock's lease alive (hf_lock_keep: every TTL/3) for the owner, and
 * revokes it the moment the owner ends (its pidfd polls readable): steps
 * 1-3 and 5 alike, then hf_lock_keep in place of 4 and 6. It ends at its
 * next renewal after a release (the lease is gone).
 *
 * Hazards
 * -------
 *   - Killing the keeper of an etcd lock stops the keep-alive: the lock is
 *     free when its lease expires (--ttl, default 10 s), whether or not the
 *     owner lives.
 *   - Killing the keeper (kill -9, an OOM kill, `kill -9 -1`) drops the
 *     kernel locks while the owner may live. A judge in another pid
 *     namespace then cannot tell: a directory lock's record says "kept"
 *     (OW7), so it is alive for such a judge until its max-hold (leaked),
 *     never dead; a scope allocation's owner is taken for dead. In the
 *     owner's own namespace its pid decides.
 *   - Without pidfd (Linux < 5.3) the owner's end is seen within a second.
 */
#include "cli.h"
#include "holdfast.h"
#include "faults.h"

#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP_MAX 64

struct keep {
	pid_t pids[HF_PROCSET_MAX];     /* the owner and its chain (O5)       */
	uint64_t starts[HF_PROCSET_MAX];
	size_t npids;
	int fds[KEEP_MAX];
	size_t n;
};

/* Step 1: the owner and its chain, each with its start time; those gone
 * already are left out. -ESRCH when every one is gone (nothing to keep). */
static int keep_owners(struct keep *k, int pid, const pid_t *chain, size_t nchain)
{
	if (pid <= 0 || nchain + 1 > HF_PROCSET_MAX)
		return -EINVAL;
	k->npids = 0;
	for (size_t i = 0; i <= nchain; i++) {
		pid_t p = i == 0 ? pid : chain[i - 1];
		uint64_t start;
		if (p <= 0 || hf_pid_start(p, &start) < 0)
			continue;
		k->pids[k->npids] = p;
		k->starts[k->npids++] = start;
	}
	return k->npids ? 0 : -ESRCH;
}

/* Step 4's watch: every process of k that still is what step 1 read (K3).
 * The number alive. */
static unsigned keep_watch(const struct keep *k, struct hf_procset *w)
{
	hf_procset_init(w);
	for (size_t i = 0; i < k->npids; i++)
		hf_procset_add(w, k->pids[i], k->starts[i]);
	return w->n;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Close every descriptor >= 3 but the n in keep[] (K1). */
static void close_others(const int *keep, size_t n)
{
	int sorted[KEEP_MAX + 1];
	memcpy(sorted, keep, n * sizeof *keep);
	qsort(sorted, n, sizeof *sorted, cmp_int);
	unsigned from = 3;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (sorted[i] < 0 || (unsigned)sorted[i] < from)
			continue; /* 0-2, or the same fd twice */
		if ((unsigned)sorted[i] > from)
			rc = hf_sys_close_range(from, (unsigned)sorted[i] - 1);
		from = (unsigned)sorted[i] + 1;
	}
	if (rc == 0)
		rc = hf_sys_close_range(from, ~0U);
	if (rc == 0)
		return;
	/* no close_range(2): one by one, up to the limit */
	long max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 1 << 20)
		max = 1 << 20;
	for (int fd = 3; fd < max; fd++) {
		bool kept = false;
		for (size_t i = 0; i < n && !kept; i++)
			kept = keep[i] == fd;
		if (!kept)
			close(fd); /* not through sys.c: EBADF for most, and no rule applies */
	}
}

/* Has every kept file lost its last name? */
static bool files_gone(const struct keep *k)
{
	for (size_t i = 0; i < k->n; i++) {
		struct stat st;
		if (hf_sys_fstat(k->fds[i], &st) == 0 && st.st_nlink > 0)
			return false;
	}
	return true;
}

/* A kept directory moved (a release renames the lock into its claims
 * before removing it): watch the directory it sits in now, whose entry
 * for it goes when it is removed (IN_DELETE there), since the removed
 * directory itself reports nothing while we hold it open. */
static void watch_new_parent(int ifd, const struct keep *k)
{
	for (size_t i = 0; i < k->n; i++) {
		char link[64], path[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%d", k->fds[i]);
		ssize_t n = hf_sys_readlinkat(AT_FDCWD, link, path, sizeof path - 1);
		if (n <= 0)
			continue;
		path[n] = '\0';
		char *slash = strrchr(path, '/');
		if (!slash || strstr(path, " (deleted)"))
			continue; /* gone already: the next look sees it */
		*slash = '\0';
		hf_sys_inotify_add_watch(ifd, path[0] ? path : "/",
					 IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR);
	}
}

/* K5: the owner and its chain ended: release each kept lock directory
 * still at its path, by the token in its record. Best effort: what fails
 * stays for the judges (dead by pid in the owner's namespace, leaked by
 * max-hold elsewhere). */
static void release_kept_locks(const struct keep *k)
{
	for (size_t i = 0; i < k->n; i++) {
		struct stat st;
		if (hf_sys_fstat(k->fds[i], &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		char rec[4096];
		ssize_t n = hf_read_small_at(k->fds[i], "owner", O_NONBLOCK | O_NOCTTY, rec,
					     sizeof rec, NULL);
		if (n <= 0)
			continue;
		json_t *j = json_loadb(rec, (size_t)n, 0, NULL);
		const char *token = json_string_value(json_object_get(j, "token"));
		char link[64], path[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%d", k->fds[i]);
		ssize_t pn = hf_sys_readlinkat(AT_FDCWD, link, path, sizeof path - 1);
		hf_lock *l = NULL;
		if (token && pn > 0 && (path[pn] = '\0', path[0] == '/') &&
		    !strstr(path, " (deleted)") && !strstr(path, ".holdfast/") &&
		    hf_lock_new(path, &l) == 0 && hf_lock_adopt(l, token) == 0)
			hf_lock_release(l); /* DT: only the record with our token */
		hf_lock_free(l);
		json_decref(j);
	}
}

/* K6: give back what the acquisition left behind - the heap's free pages,
 * and the stack below this frame (the pages its deepest calls dirtied,
 * dead now: they come back as zero pages if the keeper's own calls reach
 * them). The stack is the mapping /proc/self/maps shows around this frame;
 * one page under it is kept. Best effort: nothing depends on it. */
static void __attribute__((noinline)) keeper_shed(void)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	long page = sysconf(_SC_PAGESIZE);
	char *maps = NULL;
	size_t len = 0;
	if (page > 0 &&
	    hf_read_file_at(AT_FDCWD, "/proc/self/maps", 0, 1 << 20, &maps, &len, NULL) == 0) {
		uintptr_t lo = 0, hi = 0;
		for (char *line = maps; line && *line;) {
			unsigned long a, b;
			if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= here && here < b) {
				lo = a;
				hi = b;
				break;
			}
			line = strchr(line, '\n');
			line = line ? line + 1 : NULL;
		}
		free(maps);
		/* the page under this frame's stays: what is below it is dead */
		uintptr_t top = (here & ~((uintptr_t)page - 1)) - (uintptr_t)page;
		if (hi && top > lo)
			hf_sys_madvise((void *)lo, top - lo, MADV_DONTNEED);
	}
	malloc_trim(0);
}

static void __attribute__((noreturn)) keeper_main(struct keep *k, int report)
{
	hf_fault_inject(NULL, NULL, 0); /* the caller's fault rules are not the keeper's */
	sigset_t none;
	sigemptyset(&none);
	hf_sys_sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	hf_sys_sigaction(SIGTERM, &dfl, NULL);
	hf_sys_sigaction(SIGINT, &dfl, NULL);
	hf_sys_chdir("/");
	int null = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDWR, 0);
	if (null >= 0) {
		for (int fd = 0; fd < 3; fd++)
			if (null != fd)
				hf_sys_dup2(null, fd);
		if (null > 2)
			hf_sys_close(null);
	} else {
		for (int fd = 0; fd < 3; fd++)
			hf_sys_close(fd); /* K1 all the same: no pipe of the caller stays */
	}
	int keep[KEEP_MAX + 1];
	memcpy(keep, k->fds, k->n * sizeof *keep);
	keep[k->n] = report;
	close_others(keep, k->n + 1);
	keeper_shed(); /* K6 */

	/* Step 4: arm, then check (K2). */
	struct hf_procset owners;
	pid_t me = getpid();
	if (keep_watch(k, &owners) == 0) {
		me = 0; /* K3: every pid is gone or another process's: nothing to keep */
		hf_sys_write(report, &me, sizeof me);
		_exit(0);
	}
	int ifd = hf_sys_inotify_init();
	for (size_t i = 0; ifd >= 0 && i < k->n; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", k->fds[i]);
		if (hf_sys_inotify_add_watch(ifd, path, IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) <
		    0) {
			hf_sys_close(ifd);
			ifd = -1;
		}
	}
	hf_sys_write(report, &me, sizeof me); /* step 5 */
	hf_sys_close(report);

	/* A directory (a lock's) that is removed sends no event while we hold
	 * it open: rmdir changes no link count that inotify reports, and
	 * IN_DELETE_SELF waits for the last descriptor. Its release renames it
	 * first (IN_MOVE_SELF) and removes it right after: after a move the
	 * keeper watches its new parent (watch_new_parent) and looks again soon
	 * (SOON_MS, SOON_TRIES times); with a directory among the kept files it
	 * looks every DIR_LOOK_MS anyway (K2). */
	enum { SOON_MS = 20, SOON_TRIES = 50, DIR_LOOK_MS = 10000 };
	bool dirs = false;
	for (size_t i = 0; i < k->n; i++) {
		struct stat st;
		dirs |= hf_sys_fstat(k->fds[i], &st) == 0 && S_ISDIR(st.st_mode);
	}
	int soon = 0;
	for (;;) {
		if (hf_procset_reap(&owners) == 0) {
			release_kept_locks(k); /* K5 */
			_exit(0);
		}
		if (files_gone(k))
			_exit(0);
		struct pollfd p[HF_PROCSET_MAX + 1];
		int pfds[HF_PROCSET_MAX];
		unsigned npid = hf_procset_fds(&owners, pfds);
		nfds_t np = 0;
		for (unsigned i = 0; i < npid; i++)
			p[np++] = (struct pollfd){ .fd = pfds[i], .events = POLLIN };
		if (ifd >= 0)
			p[np++] = (struct pollfd){ .fd = ifd, .events = POLLIN };
		/* the fallbacks look every second */
		int timeout = npid > 0 && ifd >= 0 ? -1 : 1000;
		if (dirs && (timeout < 0 || timeout > DIR_LOOK_MS))
			timeout = DIR_LOOK_MS;
		if (soon > 0) {
			timeout = SOON_MS;
			soon--;
		}
		int rc = hf_sys_poll(p, np, timeout);
		if (rc < 0 && rc != -EINTR)
			hf_sys_sleep_ms(1000);
		if (ifd >= 0) {
			char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
			struct pollfd q = { .fd = ifd, .events = POLLIN };
			ssize_t r;
			while (hf_sys_poll(&q, 1, 0) > 0 && (r = hf_sys_read(ifd, buf, sizeof buf)) > 0)
				for (char *e = buf; e < buf + r;) {
					const struct inotify_event *ev = (const struct inotify_event *)e;
					if (ev->mask & IN_MOVE_SELF) {
						soon = SOON_TRIES; /* moved: removed next, most likely */
						watch_new_parent(ifd, k);
					}
					e += sizeof *ev + ev->len;
				}
		}
	}
}

int cli_keep_report_parse(const void *buf, size_t n)
{
	/* K4: exactly one pid_t, the keeper's (> 0), or 0 when the owner
	 * ended before the keeper was armed; anything else: it did not start */
	pid_t keeper;
	if (n != sizeof keeper)
		return -ECHILD;
	memcpy(&keeper, buf, sizeof keeper);
	if (keeper < 0)
		return -ECHILD;
	return keeper ? keeper : -ESRCH;
}

/* Steps 2, 3 and 5 for both kinds of keeper: main_fn(k, report, arg) in a
 * detached grandchild; its pid once it reported. */
static int keeper_spawn(struct keep *k, void (*main_fn)(struct keep *, int, void *), void *arg);

/* A lease keeper's start (K1, K3): no fault rules, no blocked signals, "/",
 * stdio on /dev/null, every descriptor but report closed - the parent's
 * etcd connection too (the keep call makes its own) -, then its pid
 * reported (0: the owner ended before it was armed). True to go on. */
static bool lease_keeper_armed(struct keep *k, int report)
{
	hf_fault_inject(NULL, NULL, 0);
	sigset_t none;
	sigemptyset(&none);
	hf_sys_sigprocmask(SIG_SETMASK, &none, NULL);
	hf_sys_chdir("/");
	int null = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDWR, 0);
	for (int fd = 0; fd < 3; fd++)
		if (null >= 0 && null != fd)
			hf_sys_dup2(null, fd);
	int keep[1] = { report };
	close_others(keep, 1); /* K1 */
	keeper_shed(); /* K6 */
	pid_t me = getpid();
	struct hf_procset owners;
	if (keep_watch(k, &owners) == 0)
		me = 0; /* K3 */
	hf_procset_close(&owners); /* the library's keep watches them itself */
	hf_sys_write(report, &me, sizeof me);
	hf_sys_close(report);
	return me != 0;
}

static void __attribute__((noreturn)) lease_main(struct keep *k, int report, void *arg)
{
	_exit(lease_keeper_armed(k, report) && hf_lock_keep(arg) == 0 ? 0 : 1);
}

/* As lease_main, for a scope's lease (hf_scope_keep). */
static void __attribute__((noreturn)) scope_lease_main(struct keep *k, int report, void *arg)
{
	_exit(lease_keeper_armed(k, report) && hf_scope_keep(arg) == 0 ? 0 : 1);
}

static void keeper_fds_main(struct keep *k, int report, void *arg)
{
	(void)arg;
	keeper_main(k, report);
}

/* Step 1, then a keeper running main_fn for pid (and chain) with arg. */
static int keep_lease(int pid, const pid_t *chain, size_t nchain,
		      void (*main_fn)(struct keep *, int, void *), void *arg)
{
	if (pid <= 0 || !arg)
		return -EINVAL;
	struct keep k = { .n = 0 };
	int rc = keep_owners(&k, pid, chain, nchain); /* step 1 */
	if (rc < 0)
		return rc;
	return keeper_spawn(&k, main_fn, arg);
}

int cli_keep_lock(int pid, const pid_t *chain, size_t nchain, hf_lock *l)
{
	return keep_lease(pid, chain, nchain, lease_main, l);
}

int cli_keep_scope(int pid, hf_scope *s)
{
	return keep_lease(pid, NULL, 0, scope_lease_main, s);
}

int cli_keep_for(int pid, const pid_t *chain, size_t nchain, const int *fds, size_t n)
{
	if (n == 0 || n > KEEP_MAX || pid <= 0)
		return -EINVAL;
	struct keep k = { .n = n };
	memcpy(k.fds, fds, n * sizeof *fds);
	int rc = keep_owners(&k, pid, chain, nchain); /* step 1 */
	if (rc < 0)
		return rc;
	return keeper_spawn(&k, keeper_fds_main, NULL);
}

static int keeper_spawn(struct keep *k, void (*main_fn)(struct keep *, int, void *), void *arg)
{
	int p[2];
	int rc = hf_sys_pipe2(p, O_CLOEXEC);
	if (rc < 0)
		return rc;
	fflush(NULL);
	pid_t child = hf_sys_fork();
	if (child < 0) {
		hf_sys_close(p[0]);
		hf_sys_close(p[1]);
		return child;
	}
	if (child == 0) { /* step 2 */
		hf_sys_close(p[0]);
		if (hf_sys_setsid() < 0)
			_exit(1);
		pid_t keeper = hf_sys_fork();
		if (keeper == 0) {
			main_fn(k, p[1], arg);
			_exit(0);
		}
		_exit(keeper < 0 ? 1 : 0);
	}
	hf_sys_close(p[1]);
	int st;
	hf_sys_waitpid(child, &st, 0);
	char report[sizeof(pid_t)];
	ssize_t r = hf_sys_read(p[0], report, sizeof report);
	/* K1: return only once the keeper has closed its end too. It writes
	 * its pid before closing, and a caller that looked at the keeper's
	 * descriptors between the two would find this pipe among them. */
	char eof;
	while (r == (ssize_t)sizeof report && hf_sys_read(p[0], &eof, 1) > 0)
		;
	hf_sys_close(p[0]);
	/* it did not start (-ECHILD), or the owner ended meanwhile (-ESRCH) */
	return cli_keep_report_parse(report, r > 0 ? (size_t)r : 0);
}
