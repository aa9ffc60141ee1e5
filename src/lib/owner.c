/*
 * owner.c - owner records: who holds a lock, with enough to prove death.
 *
 * A record names a process by (pid, pid_start, boot_id, host) and carries a
 * 128-bit random token that is the record's identity: two records are the
 * same record only if their tokens are equal (inode numbers are reused by
 * the kernel at once and prove nothing; research/model/REPORT.md, point 5).
 *
 * JSON form (the directory lock's <lock>/owner and the registry's entries):
 *   {"token":"…","pid":4242,"pid_start":123456,"boot_id":"…","host":"box",
 *    "<time_key>":"2026-09-22T10:00:00Z"}
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	snprintf(o.boot_id, sizeof o.boot_id, "%s", hf_boot_id());
	snprintf(o.host, sizeof o.host, "%s", hf_host_name());
	o.time_ms = hf_sys_now_ms();
	*ret = o;
	return 0;
}

json_t *hf_owner_to_json(const struct hf_owner *o, const char *time_key)
{
	char when[40];
	hf_time_format(o->time_ms, when, sizeof when);
	return json_pack("{s:s, s:I, s:I, s:s, s:s, s:s}", "token", o->token, "pid",
			 (json_int_t)o->pid, "pid_start", (json_int_t)o->pid_start, "boot_id",
			 o->boot_id, "host", o->host, time_key, when);
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
	*ret = o;
	return 0;
}
