/* owner.c and liveness.c: records and proof of death. */
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

Test(owner, init_fills_identity)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	cr_assert_eq(strlen(o.token), HF_TOKEN_LEN);
	cr_assert_eq(o.pid, getpid());
	cr_assert_gt(o.pid_start, 0);
	cr_assert_eq(strlen(o.boot_id), HF_BOOTID_LEN);
	cr_assert_gt(strlen(o.host), 0);
	struct hf_owner p;
	cr_assert_eq(hf_owner_init(&p, 0), 0);
	cr_assert_str_neq(o.token, p.token, "tokens are random");
}

Test(owner, json_round_trip)
{
	struct hf_owner o, back;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.time_ms = 1758535200000LL;
	json_t *j = hf_owner_to_json(&o, "acquired");
	cr_assert_not_null(j);
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), 0);
	cr_assert_eq(memcmp(&o, &back, sizeof o), 0);
	json_decref(j);
	json_t *bad = json_pack("{s:s}", "token", "abc");
	cr_assert_eq(hf_owner_from_json(bad, "acquired", &back), -EINVAL, "pid is required");
	json_decref(bad);
}

Test(liveness, self_alive)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE);
}

Test(liveness, exited_child_dead)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(p[1]);
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE, "running child");
	close(p[1]);
	waitpid(pid, NULL, 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "L1: no such pid");
}

Test(liveness, reused_pid_dead)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.pid_start += 1; /* as if our pid had been recorded by an earlier process */
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "L2: start time differs");
}

Test(liveness, unknown_counts_as_alive)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.pid_start += 1;
	struct hf_owner other_host = o, other_boot = o, no_boot = o;
	strcpy(other_host.host, "elsewhere.example");
	other_boot.boot_id[0] = other_boot.boot_id[0] == 'a' ? 'b' : 'a';
	no_boot.boot_id[0] = '\0';
	cr_assert_eq(hf_owner_liveness(&other_host), HF_ALIVE);
	cr_assert_eq(hf_owner_liveness(&other_boot), HF_ALIVE);
	cr_assert_eq(hf_owner_liveness(&no_boot), HF_ALIVE);
	struct hf_owner nostart = o;
	nostart.pid_start = 0;
	cr_assert_eq(hf_owner_liveness(&nostart), HF_ALIVE, "no start time: cannot prove reuse");
	struct hf_owner bad = o;
	bad.pid = -5;
	cr_assert_eq(hf_owner_liveness(&bad), HF_ALIVE);
}
