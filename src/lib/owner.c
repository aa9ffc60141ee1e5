/*
 * owner.c - owner records: who holds a lock, with enough to prove death.
 *
 * A record names a process by (pid, pid_start, boot_id, host) and carries a
 * 128-bit random token that is the record's identity: two records are the
 * same record only if their tokens are equal (inode numbers are reused by
 * the kernel at once and prove nothing; research/model/REPORT.md, point 5).
 *
 * It also names the namespaces its numbers belong to: the pid namespace the
 * pid was read in (a pid means nothing in another one: liveness.c) and the
 * time namespace of its boot-relative time (CLOCK_BOOTTIME, which a step of
 * the wall clock does not move: ages on one kernel come from it).
 *
 * JSON form (the directory lock's <lock>/owner and the registry's entries):
 *   {"token":"…","pid":4242,"pid_start":123456,"boot_id":"…","host":"box",
 *    "<time_key>":"2026-09-22T10:00:00Z","pidns":4026531836,
 *    "timens":4026531834,"boottime_ms":8123456,"comm":"make"}
 * pidns, timens, boottime_ms and comm are absent in records of holdfast 0.1
 * (read as 0 / "": unknown).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hf_pid_start(pid_t pid, uint64_t *ret)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = hf_sys_openat(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	ssize_t n = hf_sys_read(fd, buf, sizeof buf - 1);
	hf_sys_close(fd);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ESRCH; /* a zombie being reaped */
	buf[n] = '\0';
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

const char *hf_boot_id(void)
{
	static char id[HF_BOOTID_LEN + 1];
	static int done;
	if (!done) {
		int fd = hf_sys_openat(AT_FDCWD, "/proc/sys/kernel/random/boot_id", O_RDONLY, 0);
		if (fd >= 0) {
			char buf[64];
			ssize_t n = hf_sys_read(fd, buf, sizeof buf - 1);
			hf_sys_close(fd);
			if (n >= HF_BOOTID_LEN) {
				memcpy(id, buf, HF_BOOTID_LEN);
				id[HF_BOOTID_LEN] = '\0';
			}
		}
		done = 1;
	}
	return id;
}

const char *hf_host_name(void)
{
	static char host[HF_HOST_MAX + 1];
	static int done;
	if (!done) {
		if (hf_sys_uname_host(host, sizeof host) < 0)
			host[0] = '\0';
		done = 1;
	}
	return host;
}

/* The inode of /proc/self/ns/<kind>, cached per process; 0 when it cannot be
 * read. */
static uint64_t ns_inode(const char *path)
{
	struct stat st;
	return hf_sys_fstatat(AT_FDCWD, path, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Our namespaces, read once per process: a fork's child (another pid)
 * reads them again, as unshare(CLONE_NEWTIME) moves only children. */
static pid_t ns_for_pid;
static uint64_t ns_pid, ns_time;

static void self_ns_for(pid_t me)
{
	if (ns_for_pid == me)
		return;
	/* Our pids are read through /proc: only if this /proc is of our own
	 * pid namespace (/proc/self is our getpid()) do its numbers mean
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
	ns_pid = v;
	ns_time = ns_inode("/proc/self/ns/time");
	ns_for_pid = me;
}

uint64_t hf_self_pidns(void)
{
	self_ns_for(getpid());
	return ns_pid;
}

uint64_t hf_self_timens(void)
{
	self_ns_for(getpid());
	return ns_time;
}

int hf_pid_comm(pid_t pid, char *buf, size_t n)
{
	char path[64], raw[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	int fd = hf_sys_openat(AT_FDCWD, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	ssize_t r = hf_sys_read(fd, raw, sizeof raw - 1);
	hf_sys_close(fd);
	if (r < 0)
		return (int)r;
	raw[r] = '\0';
	raw[strcspn(raw, "\n")] = '\0';
	/* a command name is the program's to choose: keep it only as text */
	if (!hf_text_ok(raw, HF_COMM_MAX))
		raw[0] = '\0';
	snprintf(buf, n, "%s", raw);
	return 0;
}

int hf_owner_init(struct hf_owner *ret, pid_t pid)
{
	struct hf_owner o;
	memset(&o, 0, sizeof o);
	int rc = hf_random_hex(o.token, HF_TOKEN_LEN / 2);
	if (rc < 0)
		return rc;
	/* Our own start time never changes while our pid is ours: read
	 * /proc once per process (a fork's child has another pid). */
	static __thread pid_t self_pid;
	static __thread uint64_t self_start;
	pid_t me = getpid();
	if (pid == 0)
		pid = me;
	o.pid = pid;
	if (pid == me && self_pid == me) {
		o.pid_start = self_start;
	} else {
		rc = hf_pid_start(pid, &o.pid_start);
		if (rc < 0)
			return rc; /* -ESRCH: no such process to own anything */
		if (pid == me) {
			self_pid = me;
			self_start = o.pid_start;
		}
	}
	hf_copy_str(o.boot_id, sizeof o.boot_id, hf_boot_id());
	hf_copy_str(o.host, sizeof o.host, hf_host_name());
	/* the pid is a pid of our namespace: we read it (getpid, getppid, or
	 * checked it in our /proc) */
	self_ns_for(me);
	o.pidns = ns_pid;
	o.timens = ns_time;
	static __thread pid_t comm_pid;
	static __thread char comm[HF_COMM_MAX + 1];
	if (pid == me && comm_pid == me) {
		memcpy(o.comm, comm, sizeof o.comm);
	} else if (hf_pid_comm(pid, o.comm, sizeof o.comm) == 0 && pid == me) {
		comm_pid = me;
		memcpy(comm, o.comm, sizeof comm);
	}
	o.time_ms = hf_sys_now_ms();
	o.boot_ms = hf_sys_boot_ms();
	*ret = o;
	return 0;
}

json_t *hf_owner_to_json(const struct hf_owner *o, const char *time_key)
{
	char when[40];
	hf_time_format(o->time_ms, when, sizeof when);
	return json_pack("{s:s, s:I, s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:s}", "token", o->token,
			 "pid", (json_int_t)o->pid, "pid_start", (json_int_t)o->pid_start,
			 "boot_id", o->boot_id, "host", o->host, time_key, when, "pidns",
			 (json_int_t)o->pidns, "timens", (json_int_t)o->timens, "boottime_ms",
			 (json_int_t)o->boot_ms, "comm", o->comm);
}

/* An optional non-negative integer field (0 when absent); -1 when present
 * and not a non-negative integer. */
static int get_u63(const json_t *obj, const char *key, uint64_t *ret)
{
	const json_t *v = json_object_get(obj, key);
	*ret = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

static void copy_str(char *dst, size_t n, const json_t *v)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;
	if (s && strlen(s) < n)
		strcpy(dst, s);
	else
		dst[0] = '\0';
}

int hf_owner_from_json(const json_t *obj, const char *time_key, struct hf_owner *ret)
{
	struct hf_owner o;
	memset(&o, 0, sizeof o);
	if (!json_is_object(obj))
		return -EINVAL;
	const json_t *tok = json_object_get(obj, "token");
	const json_t *pid = json_object_get(obj, "pid");
	if (!json_is_string(tok) || strlen(json_string_value(tok)) > HF_TOKEN_LEN ||
	    !json_string_value(tok)[0] || !json_is_integer(pid) || json_integer_value(pid) <= 0)
		return -EINVAL;
	strcpy(o.token, json_string_value(tok));
	o.pid = json_integer_value(pid);
	const json_t *st = json_object_get(obj, "pid_start");
	if (json_is_integer(st) && json_integer_value(st) > 0)
		o.pid_start = (uint64_t)json_integer_value(st);
	copy_str(o.boot_id, sizeof o.boot_id, json_object_get(obj, "boot_id"));
	copy_str(o.host, sizeof o.host, json_object_get(obj, "host"));
	const json_t *t = json_object_get(obj, time_key);
	if (json_is_string(t) && hf_time_parse(json_string_value(t), &o.time_ms) < 0)
		return -EINVAL;
	uint64_t boot;
	if (get_u63(obj, "pidns", &o.pidns) < 0 || get_u63(obj, "timens", &o.timens) < 0 ||
	    get_u63(obj, "boottime_ms", &boot) < 0)
		return -EINVAL;
	o.boot_ms = (int64_t)boot;
	const json_t *c = json_object_get(obj, "comm");
	if (c && (!json_is_string(c) || !hf_text_ok(json_string_value(c), HF_COMM_MAX)))
		return -EINVAL;
	copy_str(o.comm, sizeof o.comm, c);
	*ret = o;
	return 0;
}
