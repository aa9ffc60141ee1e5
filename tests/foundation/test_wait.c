/* wait.c: deadlines and the backoff fallback when inotify is refused. */
#include "hft.h"
#include "internal.h"
#include "wait.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static void disarm(void)
{
	hf_fault_inject(NULL, NULL, 0);
}

TestSuite(wait, .fini = disarm);

Test(wait, try_once_times_out_at_once)
{
	struct hf_waiter w;
	cr_assert_eq(hf_wait_init(&w, "/dev/shm", "x", 0), 0);
	cr_assert_eq(hf_wait_next(&w), HF_ETIMEDOUT);
	hf_wait_done(&w);
}

Test(wait, fallback_sleeps_through_sys_and_never_past_the_deadline)
{
	/* inotify refused: every wait is a backoff sleep through sys.c (a
	 * fault on the 3rd sleep proves the path), and the deadline holds. */
	cr_assert_eq(hf_fault_inject("fail:inotify:1:EMFILE;fail:sleep:3:EIO", NULL, 0), 0);
	struct hf_waiter w;
	int64_t t0 = hf_sys_mono_ns();
	cr_assert_eq(hf_wait_init(&w, "/dev/shm", "x", 10000), 0);
	cr_assert_eq(w.ifd, -1, "no inotify: backoff only");
	cr_assert_eq(hf_wait_next(&w), 0);
	cr_assert_eq(hf_wait_next(&w), 0);
	cr_assert_eq(hf_wait_next(&w), -EIO, "the third wait went through hf_sys_sleep_ms");
	hf_wait_done(&w);
	disarm();
	cr_assert_eq(hf_fault_inject("fail:inotify:1:EMFILE", NULL, 0), 0);
	t0 = hf_sys_mono_ns();
	cr_assert_eq(hf_wait_init(&w, "/dev/shm", "x", 60), 0);
	int rc, n = 0;
	while ((rc = hf_wait_next(&w)) == 0)
		n++;
	int64_t spent_ms = (hf_sys_mono_ns() - t0) / 1000000;
	cr_assert_eq(rc, HF_ETIMEDOUT);
	cr_assert_geq(spent_ms, 60, "returned before the deadline: %lld ms", (long long)spent_ms);
	cr_assert_gt(n, 0, "it waited at least once");
	hf_wait_done(&w);
}
