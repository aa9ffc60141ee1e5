/* sys.c: fault injection, pause points and crash points. */
#include "hft.h"
#include "sys.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void disarm(void)
{
	hf_fault_inject(NULL, NULL, 0);
}

TestSuite(sys, .fini = disarm);

Test(sys, fail_nth_call_of_a_kind)
{
	cr_assert_eq(hf_fault_inject("fail:open:2:EACCES", NULL, 0), 0);
	int a = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0);
	int b = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0);
	int c = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0);
	cr_assert_geq(a, 0);
	cr_assert_eq(b, -EACCES, "second open must fail, got %d", b);
	cr_assert_geq(c, 0, "third open must succeed (not persistent)");
	close(a);
	close(c);
}

Test(sys, fail_persist_and_other_calls_untouched)
{
	cr_assert_eq(hf_fault_inject("fail:mkdir:1:ENOSPC:persist", NULL, 0), 0);
	cr_assert_eq(hf_sys_mkdirat(AT_FDCWD, "/nonexistent-hf/x", 0700), -ENOSPC);
	cr_assert_eq(hf_sys_mkdirat(AT_FDCWD, "/nonexistent-hf/y", 0700), -ENOSPC);
	int fd = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	close(fd);
	disarm();
	cr_assert_eq(hf_sys_mkdirat(AT_FDCWD, "/nonexistent-hf/y", 0700), -ENOENT);
}

Test(sys, bad_rules_arm_nothing)
{
	cr_assert_eq(hf_fault_inject("fail:open", NULL, 0), -EINVAL);
	cr_assert_eq(hf_fault_inject("fail:open:0:EIO", NULL, 0), -EINVAL);
	cr_assert_eq(hf_fault_inject("explode:open:1", NULL, 0), -EINVAL);
	cr_assert_eq(hf_fault_inject("fail:open:1:NOTANERRNO", NULL, 0), -EINVAL);
	/* a misspelt point is refused, naming it, and arms nothing (FA2) */
	char why[256] = "";
	cr_assert_eq(hf_fault_inject("pause:dirlock.acquire.mades", why, sizeof why), -EINVAL);
	cr_assert(strstr(why, "no point 'dirlock.acquire.mades'"), "%s", why);
	cr_assert_eq(hf_fault_inject("fail:dirlock.acquire.made:1:EIO", why, sizeof why), -EINVAL,
		     "a named point is not a system call: it cannot fail");
	cr_assert(strstr(why, "not a system call"), "%s", why);
	cr_assert_eq(hf_fault_inject("fail:open:1:EIO", NULL, 0), 0);
	cr_assert_eq(hf_fault_inject("fail:open:1:EIO;crash:nowhere", NULL, 0), -EINVAL);
	cr_assert_eq(hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0), -EIO,
		     "a refused set leaves the armed rules as they were");
	disarm();
	int fd = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	close(fd);
}

Test(sys, failed_close_still_closes)
{
	int fd = open("/dev/null", O_RDONLY);
	cr_assert_eq(hf_fault_inject("fail:close:1:EIO", NULL, 0), 0);
	cr_assert_eq(hf_sys_close(fd), -EIO);
	cr_assert_eq(fcntl(fd, F_GETFD), -1, "SY2: the fd must be closed");
}

static int named_points(void *arg)
{
	(void)arg;
	hf_sys_point(HF_PT_SESSION_TAKE_BEGIN);
	hf_sys_point(HF_PT_SESSION_TAKE_JUDGED);
	hf_sys_point(HF_PT_SESSION_TAKE_JUDGED);
	return 7;
}

Test(sys, pause_reports_and_waits)
{
	struct hft_child c;
	hft_spawn_fn(&c, "pause:session.take.begin;pause:session.take.judged:2", named_points, NULL);
	hft_expect(&c, "session.take.begin");
	hft_go(&c);
	hft_expect(&c, "session.take.judged");
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 7);
}

static int crash_in_calls(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++) {
		hf_sys_point(HF_PT_CLAIM_RESTORE_CHECKED);
		int fd = hf_sys_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0);
		hf_sys_close(fd);
	}
	return 0;
}

Test(sys, crash_at_nth_call_counts_calls_only)
{
	struct hft_child c;
	/* FA1: "*" counts calls (open, close...) not named points: the 3rd call
	 * is the second open; pause just before to prove where it died. */
	hft_spawn_fn(&c, "pause:*:3;crash:*:3", crash_in_calls, NULL);
	hft_expect(&c, "open");
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 128 + SIGKILL);
}

Test(sys, renameat2_noreplace_never_replaces)
{
	char *d = hft_tmpdir();
	char a[512], b[512];
	snprintf(a, sizeof a, "%s/a", d);
	snprintf(b, sizeof b, "%s/b", d);
	hft_write(a, "A");
	hft_write(b, "B");
	cr_assert_eq(hf_sys_renameat2(AT_FDCWD, a, AT_FDCWD, b, 1 /* NOREPLACE */), -EEXIST);
	char *sb = hft_slurp(b);
	cr_assert_str_eq(sb, "B");
	free(sb);
	hft_rmtree(d);
	free(d);
}

/* Every point of points.def has a name the rule parser finds again, the
 * calls first: the tables the code, the parser and the loops read agree. */
Test(sys, points_table_round_trips)
{
	for (int i = 0; i < HF_PT_COUNT; i++) {
		if (i == HF_PT_CALLS_END)
			continue;
		const char *n = hf_point_name((enum hf_point)i);
		cr_assert_eq(hf_point_find(n), i, "%s", n);
		cr_assert_eq(strchr(n, '.') != NULL, i > HF_PT_CALLS_END,
			     "calls have plain names, named points dotted: %s", n);
	}
	cr_assert_eq(hf_point_find("not-a-point"), -1);
	cr_assert_eq(hf_point_find("?"), -1);
}

Test(sys, fault_numbers_are_decimal_digits)
{
	/* FA3: strtoul took "-1" for a count (ULONG_MAX: a rule that never
	 * fires), and " 5" or "+1" for numbers */
	static const char *const bad[] = {
		"crash:*:-1", "fail:open:+1:EIO", "fail:open: 1:EIO", "fail:open:1: 5",
		"fail:open:1:+5", "fail:open:1:0x5", "skew:wall: 5", "skew:wall:--5", "skew:wall:+-5",
		"pause:dirlock.acquire.made:1x",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(hf_fault_inject(bad[i], NULL, 0), -EINVAL, "'%s' must be refused", bad[i]);
	cr_assert_eq(hf_fault_inject("skew:wall:-5;skew:wall:+6000000;fail:open:2:5", NULL, 0), 0);
	disarm();
	int a, b;
	static const char *const fds[] = { " 3,4", "3, 4", "3,4x", "+3,4", "3", "3,", ",4",
					   "4294967299,4", "-1,4" };
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		cr_assert_eq(hf_fault_parse_fds(fds[i], &a, &b), -EINVAL, "'%s' must be refused",
			     fds[i]);
	cr_assert_eq(hf_fault_parse_fds("3,04", &a, &b), 0);
	cr_assert(a == 3 && b == 4);
}

/* SY5: the pid is kept per process, and a child of any fork asks the kernel
 * again - fork(3), which runs the atfork handlers, and a raw fork system
 * call, which runs none (as _Fork and clone(2) without CLONE_VM). */
Test(sys, getpid_is_the_kernels_in_every_child)
{
	cr_assert_eq(hf_sys_getpid(), (pid_t)syscall(SYS_getpid));
	cr_assert_eq(hf_sys_getpid(), (pid_t)syscall(SYS_getpid), "kept: the same");
	for (int how = 0; how < 2; how++) {
		int p[2];
		cr_assert_eq(pipe(p), 0);
		/* the raw call: fork(2) where the architecture has one, else
		 * clone(2) as fork (aarch64 has no SYS_fork) */
#ifdef SYS_fork
		pid_t child = how == 0 ? fork() : (pid_t)syscall(SYS_fork);
#else
		pid_t child = how == 0 ? fork() : (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
		cr_assert_geq(child, 0);
		if (child == 0) {
			pid_t r[2] = { hf_sys_getpid(), (pid_t)syscall(SYS_getpid) };
			ssize_t w = write(p[1], r, sizeof r);
			_exit(w == (ssize_t)sizeof r ? 0 : 1);
		}
		close(p[1]);
		pid_t r[2] = { 0, 0 };
		ssize_t n = read(p[0], r, sizeof r);
		close(p[0]);
		int st;
		cr_assert_eq(waitpid(child, &st, 0), child);
		cr_assert_eq(n, (ssize_t)sizeof r);
		cr_assert_eq(r[1], child);
		cr_assert_eq(r[0], child, "%s child: hf_sys_getpid() %d, the kernel's %d",
			     how ? "raw fork" : "fork(3)", (int)r[0], (int)r[1]);
	}
	cr_assert_eq(hf_sys_getpid(), (pid_t)syscall(SYS_getpid), "the parent's stays its own");
}
