/*
 * proc.c - what /proc and the kernel say about processes: a pid's start
 * time and command, this boot's id, this host's name, this process's pid
 * and time namespaces, and a probe of a kernel lock.
 *
 * Invariants:
 *  (PR1) hf_pid_start says -ESRCH only when the pid is gone or is an
 *        orphaned zombie nobody will act for (see its comment); any other
 *        failure to read is an error, never "gone" - also a /proc that does
 *        not show a pid kill(2) finds (chroot, a mount over /proc, hidepid:
 *        -ENOENT, the pid's start time unknown).
 *  (PR2) This process's namespaces are read once per pid: a child forked
 *        after unshare(CLONE_NEWTIME) reads its own again.
 *  (PR4) What is read once per process (boot id, host name, namespaces)
 *        is safe to read from many threads at once: no data race (TSan).
 *  (PR3) A process set (hf_procset) never counts a reused pid as its
 *        member: each member is its pid AND the start time it had when it
 *        was added, checked again after its pidfd was opened.
 */
#include "proc.h"

#include "file.h"

#include "sys.h"
#include "text.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* PR1: /proc/PID not there says the pid is gone only when the kernel
 * agrees: a chroot or a mount over /proc hides every pid, hidepid= another
 * user's, a /proc of another pid namespace names other processes - kill(2)
 * is asked (only here, on the way to a "gone"). */
static int absent(pid_t pid)
{
	return hf_sys_kill(pid, 0) == -ESRCH ? -ESRCH : -ENOENT;
}

int hf_pid_start(pid_t pid, uint64_t *ret)
{
	char path[64], buf[2048]; /* 52 fields of at most 20 digits, comm 18 */
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	ssize_t n = hf_read_small_at(AT_FDCWD, path, 0, buf, sizeof buf, NULL);
	if (n == -ENOENT)
		return absent(pid); /* PR1 */
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ESRCH; /* a zombie being reaped */
	/* Field 2 (comm) may hold spaces and parentheses: start after the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	/* p points at " S ppid ..."; field 3 is the state. Field 22 is the 20th
	 * field after comm. */
	char state = p[1];
	long ppid = -1, threads = -1;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
		if (field == 3) /* p now precedes field 4, ppid */
			ppid = strtol(p + 1, NULL, 10);
		if (field == 19) /* p now precedes field 20, num_threads */
			threads = strtol(p + 1, NULL, 10);
	}
	/* A zombie has exited. While its parent lives, the parent may still act
	 * for it (holdfast run releases its command's locks before collecting
	 * it): alive. An orphan under init (pid 1) has no one left to act for
	 * it, and may never be collected (an init that does not reap): gone.
	 * A thread-group leader whose other threads run shows as a zombie too
	 * (num_threads > 1): alive. */
	if ((state == 'Z' || state == 'X') && threads == 1 && ppid == 1)
		return -ESRCH;
	char *end;
	unsigned long long v = strtoull(p + 1, &end, 10);
	if (end == p + 1)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* PR4: read once per process, by exactly one thread (pthread_once): the
 * other threads wait for it and then read what it wrote. */
static char boot_id[HF_BOOTID_LEN + 1];
static pthread_once_t boot_id_once = PTHREAD_ONCE_INIT;

static void boot_id_read(void)
{
	char buf[64];
	ssize_t n = hf_read_small_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 0, buf,
				     sizeof buf, NULL);
	if (n >= HF_BOOTID_LEN) {
		memcpy(boot_id, buf, HF_BOOTID_LEN);
		boot_id[HF_BOOTID_LEN] = '\0';
	}
}

const char *hf_boot_id(void)
{
	pthread_once(&boot_id_once, boot_id_read); /* PR4 */
	return boot_id;
}

static char host_name[HF_HOST_MAX + 1];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void host_read(void)
{
	if (hf_sys_uname_host(host_name, sizeof host_name) < 0)
		host_name[0] = '\0';
}

const char *hf_host_name(void)
{
	pthread_once(&host_once, host_read); /* PR4 */
	return host_name;
}

/* The inode of /proc/self/ns/<kind>, cached per process; 0 when it cannot be
 * read. */
static uint64_t ns_inode(const char *path)
{
	struct stat st;
	return hf_sys_fstatat(AT_FDCWD, path, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Our namespaces, read once per process: a fork's child (another pid)
 * reads them again, as unshare(CLONE_NEWTIME) moves only children. PR4:
 * threads that read them at once each write the same values; the pid they
 * are for is stored last (release) and read first (acquire). */
static _Atomic pid_t ns_for_pid;
static _Atomic uint64_t ns_pid, ns_time;

static void self_ns_for(pid_t me)
{
	if (atomic_load_explicit(&ns_for_pid, memory_order_acquire) == me)
		return; /* PR2 */
	/* Our pids are read through /proc: only if this /proc is of our own
	 * pid namespace (/proc/self is our hf_sys_getpid()) do its numbers mean
	 * ours. A process in a child namespace under the parent's /proc
	 * (unshare --pid without --mount-proc) records no namespace: its
	 * pids are never proof, for anyone. */
	char self[32];
	ssize_t n = hf_sys_readlinkat(AT_FDCWD, "/proc/self", self, sizeof self - 1);
	uint64_t v = HF_PIDNS_UNKNOWN;
	if (n > 0) {
		self[n] = '\0';
		char *end;
		long p = strtol(self, &end, 10);
		if (!*end && p == (long)me)
			v = ns_inode("/proc/self/ns/pid");
		if (!v)
			v = HF_PIDNS_UNKNOWN;
	}
	atomic_store_explicit(&ns_pid, v, memory_order_relaxed);
	atomic_store_explicit(&ns_time, ns_inode("/proc/self/ns/time"), memory_order_relaxed);
	atomic_store_explicit(&ns_for_pid, me, memory_order_release); /* PR4 */
}

void hf_self_ns(pid_t me, uint64_t *pidns, uint64_t *timens)
{
	self_ns_for(me);
	*pidns = atomic_load_explicit(&ns_pid, memory_order_relaxed);
	*timens = atomic_load_explicit(&ns_time, memory_order_relaxed);
}

static int in_pidns(int dirfd, const char *name, void *ctx)
{
	if (name[0] < '1' || name[0] > '9')
		return 0;
	char path[64];
	snprintf(path, sizeof path, "%s/ns/pid", name);
	struct stat st;
	return hf_sys_fstatat(dirfd, path, &st, 0) == 0 && (uint64_t)st.st_ino == *(uint64_t *)ctx;
}

int hf_pidns_seen(uint64_t ino)
{
	int dfd = hf_sys_openat(AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return dfd;
	int rc = hf_dir_each(dfd, "", in_pidns, &ino);
	hf_sys_close(dfd);
	return rc;
}

uint64_t hf_self_pidns(void)
{
	self_ns_for(hf_sys_getpid());
	return atomic_load_explicit(&ns_pid, memory_order_relaxed);
}

uint64_t hf_self_timens(void)
{
	self_ns_for(hf_sys_getpid());
	return atomic_load_explicit(&ns_time, memory_order_relaxed);
}

int hf_pid_comm(pid_t pid, char *buf, size_t n)
{
	char path[64], raw[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	ssize_t r = hf_read_small_at(AT_FDCWD, path, O_NOCTTY | O_NONBLOCK, raw, sizeof raw, NULL);
	if (r < 0)
		return r == -ENOENT ? absent(pid) : (int)r;
	raw[strcspn(raw, "\n")] = '\0';
	/* a command name is the program's to choose: keep it only as text */
	if (!hf_text_ok(raw, HF_COMM_MAX))
		raw[0] = '\0';
	snprintf(buf, n, "%s", raw);
	return 0;
}

int hf_kernel_lock_probe(int fd)
{
	int rc = hf_sys_flock(fd, LOCK_EX | LOCK_NB);
	if (rc == 0)
		return 0;
	return rc == -EWOULDBLOCK ? 1 : rc;
}


void hf_procset_init(struct hf_procset *s)
{
	s->n = 0;
}

int hf_procset_add(struct hf_procset *s, pid_t pid, uint64_t start)
{
	if (pid <= 0)
		return -ESRCH;
	for (unsigned i = 0; i < s->n; i++)
		if (s->pid[i] == pid)
			return 0;
	if (s->n >= HF_PROCSET_MAX)
		return -E2BIG;
	uint64_t now;
	int rc = hf_pid_start(pid, &now);
	if (rc < 0)
		return rc == -ESRCH ? -ESRCH : rc;
	if (start && now != start)
		return -ESRCH; /* PR3: another process has the pid now */
	int fd = hf_sys_pidfd_open(pid);
	if (fd >= 0 && (hf_pid_start(pid, &now) < 0 || (start ? start : now) != now)) {
		hf_sys_close(fd); /* PR3: it ended, and the pid was reused, meanwhile */
		return -ESRCH;
	}
	s->pid[s->n] = pid;
	s->start[s->n] = start ? start : now;
	s->fd[s->n] = fd >= 0 ? fd : -1;
	s->n++;
	return 0;
}

/* Has member i ended (PR3)? */
static int member_gone(const struct hf_procset *s, unsigned i)
{
	if (s->fd[i] >= 0) {
		struct pollfd p = { .fd = s->fd[i], .events = POLLIN };
		return hf_sys_poll(&p, 1, 0) > 0;
	}
	if (hf_sys_kill(s->pid[i], 0) == -ESRCH)
		return 1;
	uint64_t now;
	int rc = hf_pid_start(s->pid[i], &now);
	return rc == -ESRCH || (rc == 0 && now != s->start[i]);
}

unsigned hf_procset_reap(struct hf_procset *s)
{
	unsigned k = 0;
	for (unsigned i = 0; i < s->n; i++) {
		if (member_gone(s, i)) {
			if (s->fd[i] >= 0)
				hf_sys_close(s->fd[i]);
			continue;
		}
		s->pid[k] = s->pid[i];
		s->start[k] = s->start[i];
		s->fd[k] = s->fd[i];
		k++;
	}
	s->n = k;
	return k;
}

unsigned hf_procset_fds(const struct hf_procset *s, int *fds)
{
	unsigned k = 0;
	for (unsigned i = 0; i < s->n; i++) {
		if (s->fd[i] < 0)
			return 0; /* one without a pidfd: every member is looked at */
		fds[k++] = s->fd[i];
	}
	return k;
}

void hf_procset_close(struct hf_procset *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->fd[i] >= 0)
			hf_sys_close(s->fd[i]);
	s->n = 0;
}
