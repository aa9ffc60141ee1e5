/*
 * rt.h - helpers shared by the run/edit tests.
 */
#ifndef RT_H
#define RT_H

#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* argv for hft_cli: RT_ARGV("run", "--lock", p, "--", "true") */
#define RT_ARGV(...) ((const char *const[]){ "holdfast", __VA_ARGS__, NULL })

/* dir/name, malloc'd. */
static inline char *rt_path(const char *dir, const char *name)
{
	char *p;
	cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

/* Hold the directory lock path for this test process. */
static inline struct hf_lock_info rt_hold(const char *path)
{
	struct hf_lock_opts o = { .path = path, .wait_ms = 0 };
	struct hf_lock_info info, holder;
	memset(&info, 0, sizeof info);
	int rc = hf_dirlock_acquire(&o, &info, &holder);
	cr_assert_eq(rc, 0, "hold %s: %s", path, hf_strerror(rc));
	return info;
}

static inline void rt_release(const char *path, const struct hf_lock_info *info)
{
	int rc = hf_dirlock_release(path, info->owner.token, NULL);
	cr_assert_eq(rc, 0, "release %s: %s", path, hf_strerror(rc));
	if (info->live_fd >= 0)
		close(info->live_fd);
}

/* Is the lock free for a new acquirer (reaping a dead owner if need be)?
 * Acquires and releases it at once when it is. */
static inline bool rt_lock_free(const char *path)
{
	struct hf_lock_opts o = { .path = path, .wait_ms = 0 };
	struct hf_lock_info info, holder;
	memset(&info, 0, sizeof info);
	int rc = hf_dirlock_acquire(&o, &info, &holder);
	if (rc != 0)
		return false;
	rt_release(path, &info);
	return true;
}

/* Block until process pid (any process, not only a child) has exited:
 * its pidfd becomes readable (a zombie counts as exited). */
static inline void rt_await_exit(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		cr_assert_eq(errno, ESRCH, "pidfd_open: %s", strerror(errno));
		return; /* already gone */
	}
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	close(fd);
}

/* Read one line (up to '\n') from fd; malloc'd, without the newline. NULL at
 * EOF before any byte. */
static inline char *rt_line(int fd)
{
	char buf[512];
	size_t n = 0;
	for (;;) {
		char c;
		ssize_t r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (n == 0)
				return NULL;
			break;
		}
		if (c == '\n')
			break;
		if (n < sizeof buf - 1)
			buf[n++] = c;
	}
	buf[n] = '\0';
	return strdup(buf);
}

#endif
