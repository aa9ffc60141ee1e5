/*
 * naive.c - the read-then-write guard the session lock replaces, kept only
 * to be measured against (`holdfast session race --naive`, the selftest's
 * and the tests' "differential" schedule): read the lock, judge it, then
 * write a bare timestamp. Between the read and the write another process
 * does the same: two holders. Never use it as a lock. It judges with
 * hf_session_status, so a record in an aside or an unreadable file counts
 * as held (the guard it imitates looked only at the name and wrote over
 * what it could not read); `session race` starts every run from no file,
 * where the two agree.
 */
#include "cli.h"
#include "sys.h"
#include "text.h"

#include "holdfast.h"

#include <fcntl.h>
#include <string.h>

int cli_naive_take(const char *path)
{
	hf_rec *st;
	int rc = hf_session_status(path, 0, &st); /* read and judge */
	if (rc < 0)
		return rc;
	const char *state = hf_rec_str(st, "state");
	bool free_ = state && (!strcmp(state, "free") || !strcmp(state, "stale"));
	hf_rec_free(st);
	if (!free_)
		return HF_EHELD;
	hf_sys_point(HF_PT_SESSION_NAIVE_READ); /* the window */
	char when[HF_TIME_MAX + 1];
	hf_time_format(hf_sys_now_ms(), when, sizeof when - 1);
	strcat(when, "\n");
	int fd = hf_sys_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			       0644);
	if (fd < 0)
		return fd;
	ssize_t w = hf_sys_write(fd, when, strlen(when));
	hf_sys_close(fd);
	hf_sys_point(HF_PT_SESSION_NAIVE_WROTE);
	return w < 0 ? (int)w : 0;
}
