/*
 * dl.c - support for the directory-lock suites (see dl.h).
 */
#include "dl.h"

#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *dl_path(const char *dir, const char *name)
{
	char *p;
	cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

void dl_mkdirs(const char *dir, const char *rel)
{
	char *p = dl_path(dir, rel), *cmd;
	cr_assert_geq(asprintf(&cmd, "mkdir -p '%s'", p), 0);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(p);
}

void dl_orphan_guard(void)
{
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(99); /* the test died before we could ask */
}

pid_t dl_life(void)
{
	fflush(NULL);
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		dl_orphan_guard();
		for (;;)
			pause();
	}
	return p;
}

void dl_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* --- overlap detector ---------------------------------------------------- */

void dl_ovl_init(const char *dir)
{
	cr_assert(mkdir(dir, 0700) == 0 || errno == EEXIST);
}

static void ovl_note(const char *dir, const char *what)
{
	char *p = dl_path(dir, "overlaps");
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd >= 0) {
		dprintf(fd, "%d: %s\n", (int)getpid(), what);
		close(fd);
	}
	free(p);
}

void dl_ovl_enter(const char *dir, uint64_t fence)
{
	char *in = dl_path(dir, "in"), *last = dl_path(dir, "last");
	char *old = hft_slurp(in);
	if (old) {
		long pid = 0;
		unsigned long long start = 0, f = 0;
		if (sscanf(old, "%ld %llu %llu", &pid, &start, &f) == 3) {
			uint64_t now;
			if (hf_pid_start((pid_t)pid, &now) == 0 && now == start)
				ovl_note(dir, "entered while a live holder was in");
		}
		free(old);
	}
	char *l = hft_slurp(last);
	if (l) {
		unsigned long long lf = strtoull(l, NULL, 10);
		if (fence <= lf) {
			char msg[96];
			snprintf(msg, sizeof msg, "fence %" PRIu64 " not above %llu", fence, lf);
			ovl_note(dir, msg);
		}
		free(l);
	}
	uint64_t start = 0;
	hf_pid_start(getpid(), &start);
	char buf[96], tmp[64];
	snprintf(buf, sizeof buf, "%d %" PRIu64 " %" PRIu64 "\n", (int)getpid(), start, fence);
	snprintf(tmp, sizeof tmp, "%s/in.%d", dir, (int)getpid());
	hft_write(tmp, buf);
	cr_assert_eq(rename(tmp, in), 0);
	snprintf(buf, sizeof buf, "%" PRIu64 "\n", fence);
	snprintf(tmp, sizeof tmp, "%s/last.%d", dir, (int)getpid());
	hft_write(tmp, buf);
	cr_assert_eq(rename(tmp, last), 0);
	free(in);
	free(last);
}

void dl_ovl_exit(const char *dir)
{
	char *in = dl_path(dir, "in");
	char *cur = hft_slurp(in);
	if (cur) {
		long pid = 0;
		if (sscanf(cur, "%ld", &pid) != 1 || pid != getpid())
			ovl_note(dir, "my mark was replaced while I was in");
		else
			unlink(in);
		free(cur);
	} else {
		ovl_note(dir, "my mark vanished while I was in");
	}
	free(in);
}

int dl_ovl_count(const char *dir)
{
	char *p = dl_path(dir, "overlaps");
	char *s = hft_slurp(p);
	free(p);
	if (!s)
		return 0;
	int n = 0;
	for (char *c = s; *c; c++)
		n += *c == '\n';
	if (n)
		cr_log_error("overlaps:\n%s", s);
	free(s);
	return n;
}

/* --- scripted acquirer --------------------------------------------------- */

static int code_for(int rc)
{
	switch (rc) {
	case 0:
		return DL_ENTERED;
	case HF_EHELD:
		return DL_HELD;
	case HF_EBARRIER:
		return DL_BARRIER;
	case HF_ETIMEDOUT:
		return DL_TIMEDOUT;
	case HF_EUNREADABLE:
		return DL_UNREADABLE;
	}
	return DL_ERROR;
}

int dl_acq(void *arg)
{
	struct dl_acq *a = arg;
	dl_orphan_guard();
	int n = a->repeat > 0 ? a->repeat : 1, code = 0;
	for (int i = 0; i < n; i++) {
		struct hf_dirlock_kept kept = HF_DIRLOCK_KEPT_NONE;
		struct hf_lock_opts o = { .path = a->path, .wait_ms = a->wait_ms,
					  .stale_ms = a->stale_ms, .max_hold_ms = a->max_hold_ms,
					  .pid = a->life, .kept = a->own_release ? &kept : NULL };
		struct hf_lock_info got, h;
		memset(&got, 0, sizeof got);
		int rc = hf_dirlock_acquire(&o, &got, &h);
		if (a->result) {
			char buf[128];
			snprintf(buf, sizeof buf, "%d %" PRIu64 " %s\n", rc, got.fence,
				 rc == 0 ? got.owner.token : "-");
			int fd = open(a->result, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd >= 0) {
				if (write(fd, buf, strlen(buf)) < 0)
					_exit(DL_ERROR);
				close(fd);
			}
		}
		if (rc != 0)
			return code_for(rc);
		if (a->ovl)
			dl_ovl_enter(a->ovl, got.fence);
		hf_sys_point(HF_PT_TEST_CS);
		if (a->ovl)
			dl_ovl_exit(a->ovl);
		hf_sys_point(HF_PT_TEST_LEFT);
		if (a->no_release)
			continue;
		rc = a->own_release ? hf_dirlock_release_kept(a->path, &got, &kept, &h)
				    : hf_dirlock_release(a->path, got.owner.token, &h);
		close(got.live_fd);
		hf_sys_point(HF_PT_TEST_RELEASED);
		if (rc != 0)
			code = DL_RELFAIL;
	}
	return code;
}

void dl_result(const char *file, int *rc, uint64_t *fence, char *token)
{
	char *s = hft_slurp(file);
	cr_assert_not_null(s, "no result in %s", file);
	unsigned long long f = 0;
	char tok[64] = "";
	cr_assert_eq(sscanf(s, "%d %llu %63s", rc, &f, tok), 3, "result '%s'", s);
	*fence = f;
	if (token) {
		tok[HF_TOKEN_LEN] = '\0';
		memcpy(token, tok, HF_TOKEN_LEN + 1);
	}
	free(s);
}

int dl_claims(const char *lock)
{
	char *s;
	cr_assert_geq(asprintf(&s, "%s.holdfast", lock), 0);
	int n = hft_exists(s) ? hft_count_prefix(s, "c-") : 0;
	free(s);
	return n;
}

void dl_write_record(const char *dir, pid_t pid, int64_t acquired_ms, uint64_t fence,
		     int64_t max_hold_ms, char *ret_token)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	/* as old by the boot-relative clock as by the wall clock; a record
	 * older than this boot, or dated in the future, has only its wall
	 * clock time (a writer's skewed clock, another kernel) */
	int64_t age = hf_sys_now_ms() - acquired_ms;
	o.boot_ms = age >= 0 && hf_sys_boot_ms() > age ? hf_sys_boot_ms() - age : 0;
	o.time_ms = acquired_ms;
	json_t *j = hf_owner_to_json(&o, "acquired");
	json_object_set_new(j, "fence", json_integer((json_int_t)fence));
	json_object_set_new(j, "max_hold_ms", json_integer(max_hold_ms));
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	cr_assert(mkdir(dir, 0700) == 0 || errno == EEXIST);
	char *p = dl_path(dir, "owner");
	hft_write(p, s);
	free(p);
	free(s);
	if (ret_token)
		strcpy(ret_token, o.token);
}

void dl_wait_age(const char *path, int64_t ms)
{
	for (int i = 0; i < 10000; i++) {
		struct stat st;
		cr_assert_eq(stat(path, &st), 0, "stat %s", path);
		int64_t c = (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
		/* ctime comes from the kernel's coarse clock, up to a tick (4 ms at
		 * HZ=250) behind the wall clock the library stamps claim names
		 * with: wait two ticks more, so the path is old by either clock. */
		if (hf_sys_now_ms() - c > ms + 10)
			return;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	cr_assert_fail("%s never got %" PRId64 " ms old", path, ms);
}

uint64_t dl_dead_holder(const char *lock)
{
	pid_t life = dl_life();
	struct hf_lock_opts o = { .path = lock, .pid = life };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
	dl_kill(life);
	return got.fence;
}

int dl_scaled(int n)
{
	const char *s = getenv("HF_STRESS_SCALE");
	int pct = s ? atoi(s) : 100;
#if defined(__SANITIZE_ADDRESS__)
	if (!s)
		pct = 25;
#endif
	int v = n * pct / 100;
	return v > 10 ? v : 10;
}

void dl_fixture(char **dir, char **lock)
{
	*dir = hft_tmpdir();
	*lock = dl_path(*dir, "L");
}

void dl_fixture_end(char **dir, char **lock)
{
	hf_fault_inject(NULL, NULL, 0);
	hft_kill_spawned(); /* a failed test's waiters would write on in dir */
	hft_rmtree(*dir);
	free(*dir);
	free(*lock);
	*dir = *lock = NULL;
}
