/* owner.c: records and proof of death. */
#include "hft.h"
#include "internal.h"
#include "faults.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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

/* OW4: the one writer of owner records, byte for byte the contract's form
 * (the directory lock's owner file: its own members between the time and
 * pidns), and every field it writes reads back equal. */
Test(owner, one_writer_exact_and_round_trip)
{
	struct hf_owner o, back;
	memset(&o, 0, sizeof o);
	strcpy(o.token, "0123456789abcdef0123456789abcdef");
	o.pid = 4242;
	o.pid_start = 123456;
	strcpy(o.boot_id, "d616b8ae-4c40-4d21-92b0-5a312d00c62a");
	strcpy(o.host, "b\"o\\x");
	o.time_ms = 1758535200000LL;
	o.pidns = 4026531836u;
	o.timens = 4026531834u;
	o.boot_ms = 8123456;
	strcpy(o.comm, "make");
	char buf[HF_OWNER_JSON_MAX + 64], *p = buf;
	*p++ = '{';
	p = hf_owner_put_json(p, &o, "acquired", ",\"fence\":7,\"max_hold_ms\":600000");
	*p++ = '}';
	*p = '\0';
	cr_assert_str_eq(buf, "{\"token\":\"0123456789abcdef0123456789abcdef\",\"pid\":4242,"
			      "\"pid_start\":123456,\"boot_id\":\"d616b8ae-4c40-4d21-92b0-5a312d00c62a\","
			      "\"host\":\"b\\\"o\\\\x\",\"acquired\":\"2025-09-22T10:00:00Z\","
			      "\"fence\":7,\"max_hold_ms\":600000,\"pidns\":4026531836,"
			      "\"timens\":4026531834,\"boottime_ms\":8123456,\"comm\":\"make\"}");
	json_t *j = json_loads(buf, 0, NULL);
	cr_assert_not_null(j);
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), 0);
	cr_assert_eq(memcmp(&o, &back, sizeof o), 0, "write, parse: equal");
	cr_assert_eq(json_integer_value(json_object_get(j, "fence")), 7);
	json_decref(j);
	/* hf_owner_to_json is the same writer, parsed */
	j = hf_owner_to_json(&o, "acquired");
	cr_assert_not_null(j);
	char *dump = json_dumps(j, JSON_COMPACT);
	cr_assert_str_eq(dump, "{\"token\":\"0123456789abcdef0123456789abcdef\",\"pid\":4242,"
			       "\"pid_start\":123456,\"boot_id\":\"d616b8ae-4c40-4d21-92b0-5a312d00c62a\","
			       "\"host\":\"b\\\"o\\\\x\",\"acquired\":\"2025-09-22T10:00:00Z\","
			       "\"pidns\":4026531836,\"timens\":4026531834,\"boottime_ms\":8123456,"
			       "\"comm\":\"make\"}");
	free(dump);
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), 0);
	cr_assert_eq(memcmp(&o, &back, sizeof o), 0);
	json_decref(j);
}

Test(liveness, self_alive)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE);
}

Test(liveness, exited_child_dead)
{
	int end;
	pid_t pid = hft_fork_until_closed(&end);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE, "running child");
	close(end);
	waitpid(pid, NULL, 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "OW1: no such pid");
}

Test(liveness, reused_pid_dead)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.pid_start += 1; /* as if our pid had been recorded by an earlier process */
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "OW2: start time differs");
}

/* OW1, OW2: with a start time, /proc's is the proof - the judge of a live
 * owner reads it and asks kill(2) nothing (one system call less per judge
 * under contention). A seam whose every kill says "no such process" leaves
 * the verdicts as they are where /proc answers; only a record without a
 * start time is judged by kill alone. */
Test(liveness, start_time_is_the_proof_kill_is_not_asked)
{
	int end;
	pid_t pid = hft_fork_until_closed(&end);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	cr_assert_neq(o.pid_start, 0);
	cr_assert_eq(hf_fault_inject("fail:kill:1:ESRCH:persist", NULL, 0), 0);
	int live = hf_owner_liveness(&o);
	struct hf_owner reused = o, nostart = o;
	reused.pid_start += 1;
	nostart.pid_start = 0;
	int was_reused = hf_owner_liveness(&reused);
	int judged_by_kill = hf_owner_liveness(&nostart);
	hf_fault_inject(NULL, NULL, 0);
	close(end);
	waitpid(pid, NULL, 0);
	int gone = hf_owner_liveness(&o);
	cr_assert_eq(live, HF_ALIVE, "a live owner whose start time /proc shows is alive, whatever kill says");
	cr_assert_eq(was_reused, HF_DEAD, "OW2: another start time under its pid");
	cr_assert_eq(judged_by_kill, HF_DEAD, "no start time: kill's ESRCH is the verdict");
	cr_assert_eq(gone, HF_DEAD, "OW1: gone from /proc");
}

/* OW1: "no such pid" must come from a /proc that is there. A process
 * whose /proc went away after its first judge (a chroot, a mount over it,
 * here a tmpfs in a mount namespace of its own) finds no /proc/PID for any
 * pid: a live owner is then judged by kill(2), not declared dead - and a
 * dead one still is; an owner named then is recorded without a start
 * time, not refused as gone. */
Test(liveness, a_missing_proc_is_not_a_dead_owner)
{
	if (!hft_private_mounts())
		cr_skip_test("no mount namespace (not root)");
	int end;
	pid_t pid = hft_fork_until_closed(&end);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	cr_assert_neq(o.pid_start, 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE, "judged once with /proc");
	cr_assert_eq(mount("none", "/proc", "tmpfs", 0, NULL), 0, "%s", strerror(errno));
	int live = hf_owner_liveness(&o);
	/* an owner named now has no start time to record: kill judges it */
	struct hf_owner o2;
	int init = hf_owner_init(&o2, pid);
	int live2 = init == 0 ? hf_owner_liveness(&o2) : -1;
	close(end);
	waitpid(pid, NULL, 0);
	int gone = hf_owner_liveness(&o);
	int gone2 = init == 0 ? hf_owner_liveness(&o2) : -1;
	cr_assert_eq(umount("/proc"), 0, "%s", strerror(errno));
	cr_assert_eq(live, HF_ALIVE, "a live owner, /proc hidden: alive (kill says so)");
	cr_assert_eq(gone, HF_DEAD, "its end, /proc hidden: dead (kill says so)");
	cr_assert_eq(init, 0, "a live process is an owner without /proc: %s", strerror(-init));
	cr_assert_eq(o2.pid_start, 0, "no start time without /proc");
	cr_assert_eq(live2, HF_ALIVE);
	cr_assert_eq(gone2, HF_DEAD);
}

Test(liveness, unknown_counts_as_alive)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.pid_start += 1;
	struct hf_owner other_host = o, other_boot = o, no_boot = o;
	strcpy(other_host.host, "elsewhere.example");
	other_host.pidns = 0; /* a record of holdfast 0.1: judged by host name */
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

/* unshare(CLONE_NEWTIME) moves only the caller's children: a child forked
 * after it records its own time namespace, not the one its parent had
 * read and cached before. */
Test(owner, forked_child_records_its_own_time_namespace)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0); /* the parent's, read and kept */
	if (unshare(CLONE_NEWTIME) != 0)
		cr_skip_test("unshare(CLONE_NEWTIME): %s (needs root and a 5.6 kernel)",
			     strerror(errno));
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct hf_owner c;
		struct stat st;
		uint64_t v[2] = { 0, 0 };
		if (hf_owner_init(&c, 0) == 0 && stat("/proc/self/ns/time", &st) == 0) {
			v[0] = c.timens;
			v[1] = (uint64_t)st.st_ino;
		}
		_exit(write(pfd[1], v, sizeof v) == (ssize_t)sizeof v ? 0 : 1);
	}
	close(pfd[1]);
	uint64_t v[2];
	cr_assert_eq(read(pfd[0], v, sizeof v), (ssize_t)sizeof v);
	close(pfd[0]);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(v[1] != 0, "the child read its namespace");
	cr_assert_neq(v[1], o.timens, "the child is in the new time namespace");
	cr_assert_eq(v[0], v[1], "the child's record names its own time namespace");
}

Test(owner, init_names_namespaces_and_boot_time)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	struct stat st;
	cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
	cr_assert_eq(o.pidns, (uint64_t)st.st_ino, "the pid namespace the pid is a pid of");
	cr_assert_eq(stat("/proc/self/ns/time", &st), 0);
	cr_assert_eq(o.timens, (uint64_t)st.st_ino);
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	int64_t boot = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	cr_assert(o.boot_ms > 0 && o.boot_ms <= boot, "CLOCK_BOOTTIME when recorded");
	char comm[32] = "";
	FILE *f = fopen("/proc/self/comm", "r");
	cr_assert(f && fgets(comm, sizeof comm, f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	cr_assert_str_eq(o.comm, comm);
}

Test(owner, json_round_trip_keeps_namespaces)
{
	struct hf_owner o, back;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	json_t *j = hf_owner_to_json(&o, "acquired");
	cr_assert_eq(json_integer_value(json_object_get(j, "pidns")), (json_int_t)o.pidns);
	cr_assert_eq(json_integer_value(json_object_get(j, "boottime_ms")), o.boot_ms);
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), 0);
	cr_assert_eq(back.pidns, o.pidns);
	cr_assert_eq(back.timens, o.timens);
	cr_assert_eq(back.boot_ms, o.boot_ms);
	cr_assert_str_eq(back.comm, o.comm);
	json_object_set_new(j, "pidns", json_string("x"));
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), -EINVAL, "pidns must be a number");
	json_object_set_new(j, "pidns", json_integer(7));
	json_object_set_new(j, "comm", json_string("a\x1b[31mred"));
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), -EINVAL, "comm must be text");
	json_decref(j);
	json_t *old = json_pack("{s:s, s:i}", "token", "abc", "pid", 5);
	cr_assert_eq(hf_owner_from_json(old, "acquired", &back), 0, "a 0.1 record still reads");
	cr_assert_eq(back.pidns, 0);
	json_decref(old);
}

/* A pid of another pid namespace proves nothing: a dead pid there may be a
 * live process here and the other way round (OW3). */
Test(liveness, other_pid_namespace_is_never_judged_by_pid)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.pid_start += 1; /* by pid: reused, i.e. dead */
	struct hf_owner foreign = o, unknown = o;
	foreign.pidns = o.pidns + 1;
	unknown.pidns = HF_PIDNS_UNKNOWN;
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD);
	cr_assert_eq(hf_owner_liveness(&foreign), HF_ALIVE);
	cr_assert_eq(hf_owner_liveness(&unknown), HF_ALIVE);
	cr_assert_eq(hf_owner_liveness_fd(&foreign, -1), HF_ALIVE, "no kernel lock to probe");
}

/* OW3: in another pid namespace, the owner's kernel lock is the proof. */
Test(liveness, other_namespace_judged_by_its_kernel_lock)
{
	char *dir = hft_tmpdir();
	char path[4096];
	snprintf(path, sizeof path, "%s/live", dir);
	int holder = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(holder, 0);
	cr_assert_eq(flock(holder, LOCK_SH), 0);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.pidns += 1;
	int probe = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(hf_owner_liveness_fd(&o, probe), HF_ALIVE, "its kernel lock is held");
	close(holder);
	cr_assert_eq(hf_owner_liveness_fd(&o, probe), HF_DEAD, "the kernel dropped it: dead");
	int late = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(flock(late, LOCK_SH | LOCK_NB), -1, "the judge keeps it while it acts");
	close(probe);
	cr_assert_eq(flock(late, LOCK_SH | LOCK_NB), 0);
	close(late);
	struct hf_owner old = o, other_boot = o;
	old.pidns = 0;
	other_boot.boot_id[0] = other_boot.boot_id[0] == 'a' ? 'b' : 'a';
	probe = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(hf_owner_liveness_fd(&other_boot, probe), HF_ALIVE,
		     "another kernel's lock is not ours to probe");
	strcpy(old.host, "elsewhere.example");
	cr_assert_eq(hf_owner_liveness_fd(&old, probe), HF_ALIVE, "0.1 holders held no lock");
	close(probe);
	hft_rmtree(dir);
	free(dir);
}

/* Ages on one kernel come from CLOCK_BOOTTIME: a wall clock that jumps (or
 * a process whose clock is skewed) does not make a record older. */
Test(liveness, age_is_boot_relative_on_this_kernel)
{
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	int64_t later = hf_sys_now_ms() + 3600 * 1000;
	cr_assert_lt(hf_owner_age_ms(&o, later), 60 * 1000, "a wall step of an hour is no age");
	struct hf_owner remote = o;
	remote.boot_id[0] = remote.boot_id[0] == 'a' ? 'b' : 'a';
	cr_assert_geq(hf_owner_age_ms(&remote, later), 3600 * 1000, "another kernel: wall clock");
	struct hf_owner old = o;
	old.boot_ms = 0;
	cr_assert_geq(hf_owner_age_ms(&old, later), 3600 * 1000, "no boot time: wall clock");
	cr_assert_eq(hf_fault_inject("skew:wall:-7200000", NULL, 0), 0);
	cr_assert_lt(hf_sys_now_ms(), later - 2 * 3600 * 1000 - 1800 * 1000,
		     "skew:wall moves the wall clock");
	cr_assert_eq(hf_fault_inject(NULL, NULL, 0), 0);
	cr_assert_lt(hf_owner_age_ms(&o, hf_sys_now_ms()), 60 * 1000);
}

/* OW5: a chain is written after comm as [[pid,start],...], reads back
 * equal, and is refused when malformed. */
Test(owner, chain_written_and_read_back)
{
	struct hf_owner o, back;
	memset(&o, 0, sizeof o);
	strcpy(o.token, "0123456789abcdef0123456789abcdef");
	o.pid = 4242;
	o.time_ms = 1758535200000LL;
	strcpy(o.comm, "make");
	o.chain[0] = (struct hf_owner_link){ 4300, 99 };
	o.chain[1] = (struct hf_owner_link){ 4301, 100 };
	o.nchain = 2;
	char buf[HF_OWNER_JSON_MAX + 64], *p = buf;
	*p++ = '{';
	p = hf_owner_put_json(p, &o, "acquired", NULL);
	*p++ = '}';
	*p = '\0';
	cr_assert(strstr(buf, "\"comm\":\"make\",\"chain\":[[4300,99],[4301,100]]}"), "%s", buf);
	json_t *j = json_loads(buf, 0, NULL);
	cr_assert_not_null(j, "%s", buf);
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), 0);
	cr_assert_eq(memcmp(&o, &back, sizeof o), 0, "write, parse: equal");
	json_object_set_new(j, "chain", json_pack("[[i]]", 5));
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), -EINVAL, "a link is [pid, start]");
	json_object_set_new(j, "chain", json_pack("[[i,i]]", 0, 5));
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), -EINVAL, "pid 0 is no process");
	json_t *many = json_array();
	for (int i = 0; i <= HF_OWNER_CHAIN_MAX; i++)
		json_array_append_new(many, json_pack("[i,i]", 100 + i, 1));
	json_object_set_new(j, "chain", many);
	cr_assert_eq(hf_owner_from_json(j, "acquired", &back), -EINVAL, "at most the maximum");
	json_decref(j);
	/* the largest record fits its bound */
	for (int i = 0; i < HF_OWNER_CHAIN_MAX; i++)
		o.chain[i] = (struct hf_owner_link){ 0x7fffffff, UINT64_MAX };
	o.nchain = HF_OWNER_CHAIN_MAX;
	memset(o.host, 'h', sizeof o.host - 1);
	memset(o.comm, 'c', sizeof o.comm - 1);
	p = hf_owner_put_json(buf, &o, "acquired", NULL);
	cr_assert_leq((size_t)(p - buf), (size_t)HF_OWNER_JSON_MAX);
}

/* OW5: an owner whose own pid is dead lives while a process of its chain
 * lives (the chain of a detached acquisition: a subshell that outlived its
 * script), and is dead when the chain is too. */
Test(liveness, chain_keeps_an_owner_alive)
{
	int end;
	pid_t kid = hft_fork_until_closed(&end);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, 0), 0);
	o.pid_start += 1; /* by its own pid: reused, i.e. dead */
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD);
	pid_t chain[] = { kid };
	cr_assert_eq(hf_owner_chain_add(&o, chain, 1), 0);
	cr_assert_eq(o.nchain, 1);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE, "a process of its chain lives");
	close(end);
	cr_assert_eq(waitpid(kid, NULL, 0), kid);
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "owner and chain gone");
	/* a gone process is not added; the owner itself is not added */
	struct hf_owner q;
	cr_assert_eq(hf_owner_init(&q, 0), 0);
	pid_t gone_and_self[] = { kid, getpid() };
	cr_assert_eq(hf_owner_chain_add(&q, gone_and_self, 2), 0);
	cr_assert_eq(q.nchain, 0);
}
