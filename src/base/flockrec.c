/*
 * flockrec.c - the kernel's locks on a file (/proc/locks) and the record
 * of `holdfast flock` beside it, judged by src/cli/cmd_flock.c's FK3: a
 * record counts only while the exclusive flock(2) lock it describes is
 * held by its locker.
 */
#include "flockrec.h"

#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

int hf_kernel_locks_on(dev_t dev, ino_t ino, struct hf_kernel_lock *out, int n)
{
	int fd = hf_sys_openat(AT_FDCWD, "/proc/locks", O_RDONLY, 0);
	if (fd < 0)
		return fd;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap + 1);
	if (!buf) {
		hf_sys_close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len == cap) {
			char *b = realloc(buf, cap * 2 + 1);
			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		ssize_t r = hf_sys_read(fd, buf + len, cap - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	hf_sys_close(fd);
	buf[len] = '\0';
	int count = 0;
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strstr(line, "->"))
			continue; /* a waiter */
		struct hf_kernel_lock k = { 0 };
		char adv[16], mode[16];
		unsigned maj, mnr;
		unsigned long long in;
		if (sscanf(line, "%*d: %11s %15s %15s %ld %x:%x:%llu %llu %23s", k.kind, adv, mode,
			   &k.pid, &maj, &mnr, &in, &k.start, k.end) != 9)
			continue;
		if (makedev(maj, mnr) != dev || in != (unsigned long long)ino)
			continue;
		k.write = !strcmp(mode, "WRITE");
		if (count < n)
			out[count] = k;
		count++;
	}
	free(buf);
	return count;
}

const char *hf_kernel_lock_api(const struct hf_kernel_lock *k)
{
	return !strcmp(k->kind, "FLOCK") ? "flock(2)" : !strcmp(k->kind, "OFDLCK") ? "fcntl OFD"
										    : "fcntl POSIX";
}

json_t *hf_flockrec_read(const char *path)
{
	int fd = hf_sys_openat(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	char buf[16384];
	ssize_t r = hf_sys_read(fd, buf, sizeof buf - 1);
	hf_sys_close(fd);
	if (r <= 0)
		return NULL;
	buf[r] = '\0';
	json_t *o = json_loads(buf, 0, NULL);
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

int64_t hf_flockrec_int(const json_t *r, const char *k)
{
	const json_t *v = json_object_get(r, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

bool hf_flockrec_counts(const json_t *r, const struct hf_kernel_lock *k, const struct stat *st)
{
	return r && !strcmp(k->kind, "FLOCK") && k->write &&
	       k->pid == hf_flockrec_int(r, "locker") &&
	       hf_flockrec_int(r, "dev") == (int64_t)st->st_dev &&
	       hf_flockrec_int(r, "ino") == (int64_t)st->st_ino; /* FK3 */
}
