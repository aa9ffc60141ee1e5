/*
 * test_cli.c - the directory lock on etcd from real shells: acquire,
 * conflict naming the holder, release, check, status, --json, fences,
 * the keeper (owner killed: free at once; keeper killed: free after the
 * TTL), waits by watch, -w, run --lock and edit, an etcd that stops,
 * auth.
 */
#include "et.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

ET_SUITE(etcd_cli, 240);

static void acquire_conflict_release(const char *sh)
{
	struct et_out r = et_run(
		sh,
		"L=%s/a.lock\n"
		"tok=$(\"$HOLDFAST_BIN\" lock acquire \"$L\" -n) || exit 10\n"
		"\"$HOLDFAST_BIN\" lock acquire \"$L\" -n --pid 1 2>conflict.err; echo \"conflict=$?\"\n"
		"cat conflict.err >&2\n"
		"\"$HOLDFAST_BIN\" lock check \"$L\"; echo \"check=$?\"\n"
		"\"$HOLDFAST_BIN\" lock check \"$L\" --token \"$tok\"; echo \"mine=$?\"\n"
		"\"$HOLDFAST_BIN\" lock status \"$L\"\n"
		"\"$HOLDFAST_BIN\" lock release \"$L\" --token \"$tok\"; echo \"release=$?\"\n"
		"\"$HOLDFAST_BIN\" lock release \"$L\" --token \"$tok\" 2>/dev/null; echo \"again=$?\"\n"
		"\"$HOLDFAST_BIN\" lock check \"$L\"; echo \"after=$?\"\n"
		"\"$HOLDFAST_BIN\" lock status \"$L\"\n"
		"test -e \"$L\" && echo made-a-directory\n"
		"echo \"fence=${tok#* }\"\n",
		et_dir);
	char *out = r.out, *err = r.err;
	ET_HAS(out,
	       "conflict=1\n", "check=0\n", "mine=0\n", "release=0\n", "again=69\n", "after=69\n",
	       "\nfree\n");
	cr_assert_null(strstr(out, "made-a-directory"), "the lock is etcd's only: %s", out);
	/* the holder named as the local backend names it: pid, comm, host,
	 * age, fence */
	char *f = strstr(out, "fence=");
	cr_assert_not_null(f);
	long fence = atol(f + 6);
	cr_assert_gt(fence, 0);
	char want[128];
	snprintf(want, sizeof want, ", fence %ld", fence);
	cr_assert(strstr(err, "held by pid ") && strstr(err, " old") && strstr(err, want),
		  "%s", err);
	cr_assert(strstr(out, "held: pid ") && strstr(out, want), "%s", out);
	et_out_free(&r);
}

ET_EACH_SHELL(etcd_cli, acquire_conflict_release, acquire_conflict_release)

/* The keys of a JSON object line, sorted, one per line. */
static void keys(const char *line, json_t **ret)
{
	json_t *o = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert(json_is_object(o), "not an object: %s", line);
	*ret = o;
}

Test(etcd_cli, json_fields_are_the_local_ones)
{
	struct et_out r = et_run("sh", "\"$HOLDFAST_BIN\" lock acquire ./f.lock --json --backend file && "
				       "\"$HOLDFAST_BIN\" lock acquire ./e.lock --json && "
				       "\"$HOLDFAST_BIN\" lock status ./f.lock --json --backend file && "
				       "\"$HOLDFAST_BIN\" lock status ./e.lock --json");
	char *out = r.out;
	char *lines[4], *p = out;
	for (int i = 0; i < 4; i++) {
		lines[i] = p;
		p = strchr(p, '\n');
		cr_assert_not_null(p, "%s", out);
		*p++ = '\0';
	}
	for (int i = 0; i < 4; i += 2) {
		json_t *f, *e;
		keys(lines[i], &f);
		keys(lines[i + 1], &e);
		const char *k;
		json_t *v;
		json_object_foreach(f, k, v)
		{
			json_t *ev = json_object_get(e, k);
			cr_assert_not_null(ev, "etcd's record lacks %s: %s", k, lines[i + 1]);
			cr_assert_eq(json_typeof(ev), json_typeof(v), "%s", k);
		}
		cr_assert_str_eq(json_string_value(json_object_get(e, "backend")), "etcd");
		cr_assert(strstr(json_string_value(json_object_get(e, "key")), "/holdfast/lock/"));
		cr_assert_str_eq(json_string_value(json_object_get(e, "state")), "held");
		json_decref(f);
		json_decref(e);
	}
	et_out_free(&r);
}

/* fences strictly increasing across acquisitions and across a holder's
 * death (its keeper revokes) */
Test(etcd_cli, fences_increase)
{
	struct et_out r = et_run(
		"bash",
		"for i in 1 2 3 4; do\n"
		"  t=$(\"$HOLDFAST_BIN\" lock acquire ./x.lock -n) || exit 10\n"
		"  echo \"${t#* }\"\n"
		"  \"$HOLDFAST_BIN\" lock release ./x.lock --token \"$t\" || exit 11\n"
		"done\n"
		"sleep 1000 & p=$!\n"
		"t=$(\"$HOLDFAST_BIN\" lock acquire ./x.lock -n --pid $p) || exit 12\n"
		"echo \"${t#* }\"\n"
		"kill -9 $p; wait $p\n"
		"t=$(\"$HOLDFAST_BIN\" lock acquire ./x.lock -w 60) || exit 13\n"
		"echo \"${t#* }\"\n");
	char *out = r.out;
	long prev = 0;
	int n = 0;
	for (char *p = out; *p; p = strchr(p, '\n') + 1, n++) {
		long f = atol(p);
		cr_assert_gt(f, prev, "fences not increasing: %s", out);
		prev = f;
	}
	cr_assert_eq(n, 6, "%s", out);
	et_out_free(&r);
}

/* The owner SIGKILLed: its keeper revokes the lease at once. The TTL is
 * 60 s and the wait 40 s: only the revoke can free it in time. */
Test(etcd_cli, owner_killed_keeper_revokes)
{
	struct et_out r = et_run(
		"sh", "sleep 1000 & p=$!\n"
		      "\"$HOLDFAST_BIN\" lock acquire ./o.lock -n --pid $p --ttl 60s >/dev/null || exit 10\n"
		      "kill -9 $p; wait $p\n"
		      "\"$HOLDFAST_BIN\" lock acquire ./o.lock -w 40 --ttl 60s >/dev/null; echo \"got=$?\"\n");
	cr_assert(strstr(r.out, "got=0\n"), "%s %s", r.out, r.err);
	et_out_free(&r);
}

/* The keeper SIGKILLed while its owner lives: free after the TTL (3 s),
 * within TTL + margin, not before it went unrenewed. */
Test(etcd_cli, keeper_killed_lock_free_after_ttl)
{
	char lock[512], ttl[] = "3s";
	snprintf(lock, sizeof lock, "%s/k.lock", et_dir);
	pid_t owner = et_sleeper();
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)owner);
	char *out = NULL, *err = NULL;
	const char *acq[] = { "holdfast", "lock", "acquire", lock, "-n", "--pid", pid, "--ttl", ttl,
			      "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(&out, &err, acq), 0, "%s", err);
	const char *words[] = { "lock", "acquire", lock, NULL };
	pid_t keeper = et_find_proc(words);
	cr_assert_gt(keeper, 0, "no keeper found");
	cr_assert_eq(kill(keeper, SIGKILL), 0);
	int64_t t0 = et_mono_ms();
	const char *wait[] = { "holdfast", "lock", "acquire", lock, "-w", "60", "--backend", E.uri,
			       NULL };
	free(out);
	free(err);
	/* its owner lives: only the lease's expiry frees it */
	int st = hft_cli(&out, &err, wait);
	int64_t took = et_mono_ms() - t0;
	cr_assert_eq(st, 0, "%s", err);
	cr_assert_eq(kill(owner, 0), 0, "the owner died meanwhile");
	cr_assert(out && strlen(out) > 32, "no token: %s %s", out, err);
	cr_assert_leq(took, 3000 + 30000, "free only after %lld ms", (long long)took);
	et_reap(owner);
	free(out);
	free(err);
}

/* A waiter wakes on the release (the watch): -w 120 and a bound of 60 s,
 * so a wait that only a timer ended would fail the bound. */
Test(etcd_cli, waiter_woken_by_release)
{
	char lock[512];
	snprintf(lock, sizeof lock, "%s/w.lock", et_dir);
	char *tok = NULL;
	const char *acq[] = { "holdfast", "lock", "acquire", lock, "-n", "--pid", "1", "--backend", E.uri,
			      NULL };
	cr_assert_eq(hft_cli(&tok, NULL, acq), 0);
	tok[strcspn(tok, "\n")] = '\0';
	struct hft_child c;
	const char *waiter[] = { hft_bin(), "lock", "acquire", lock, "-w", "120", "--backend", E.uri,
				 NULL };
	hft_spawn_cmd(&c, waiter, NULL);
	const char *rel[] = { "holdfast", "lock", "release", lock, "--token", tok, "--backend", E.uri,
			      NULL };
	cr_assert_eq(hft_cli(NULL, NULL, rel), 0);
	int st = et_exit_within(c.pid, 60000);
	cr_assert_eq(st, 0, "the waiter did not get the lock after the release");
	free(tok);
}

Test(etcd_cli, wait_times_out)
{
	int64_t t0 = et_mono_ms();
	struct et_out r = et_run("dash",
				 "\"$HOLDFAST_BIN\" lock acquire ./t.lock -n --pid 1 >/dev/null || exit 10\n"
				 "\"$HOLDFAST_BIN\" lock acquire ./t.lock -w 1 -E 7; echo \"rc=$?\"\n");
	cr_assert(strstr(r.out, "rc=7\n"), "%s %s", r.out, r.err);
	cr_assert(strstr(r.err, "timed out") && strstr(r.err, "held by pid 1"), "%s", r.err);
	cr_assert_geq(et_mono_ms() - t0, 1000);
	et_out_free(&r);
}

/* EL10: fences never repeat, even after the cluster is rebuilt from an
 * empty data dir (its revisions restart at 1): the fence F of an
 * acquisition before, the member stopped, its data dir deleted, a new one
 * started on the same port; the next acquisition's fence is above F, and
 * `lock check --fence F` answers 69 (free) and 1 (another acquisition
 * holds it), never 0 - the old holder's fence is not the new one's. */
Test(etcd_cli, fences_never_repeat_after_the_cluster_is_rebuilt)
{
	struct et_out r = et_run("bash",
				 "t=$(\"$HOLDFAST_BIN\" lock acquire ./f.lock -n) || exit 10\n"
				 "\"$HOLDFAST_BIN\" lock release ./f.lock --token \"$t\" || exit 11\n"
				 "echo \"${t#* }\"\n");
	long long f1 = atoll(r.out);
	cr_assert_gt(f1, 0, "%s", r.out);
	et_out_free(&r);
	et_rebuild();
	r = et_run("bash",
		   "\"$HOLDFAST_BIN\" lock check ./f.lock --fence %lld; echo \"free=$?\"\n"
		   "t=$(\"$HOLDFAST_BIN\" lock acquire ./f.lock -n) || exit 10\n"
		   "echo \"fence=${t#* }\"\n"
		   "\"$HOLDFAST_BIN\" lock check ./f.lock --fence %lld; echo \"old=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock check ./f.lock --fence \"${t#* }\"; echo \"new=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock status ./f.lock --json\n"
		   "\"$HOLDFAST_BIN\" lock release ./f.lock --token \"$t\" || exit 11\n",
		   f1, f1);
	char *out = r.out;
	char *f = strstr(out, "fence=");
	cr_assert_not_null(f, "%s", out);
	long long f2 = atoll(f + 6);
	cr_assert_gt(f2, f1, "a fence repeated or went back after the rebuild: %lld then %lld", f1,
		     f2);
	ET_HAS(out, "free=69\n", "old=1\n", "new=0\n");
	char want[64];
	snprintf(want, sizeof want, "\"fence\":%lld", f2);
	ET_HAS(out, want); /* the record's fence is the new form too */
	int64_t cr = 0, epoch = et_epoch(&cr);
	cr_assert_geq(epoch, f1, "the new cluster's epoch is below an old fence");
	cr_assert_gt(f2, epoch + cr, "the new fence is not the epoch + a later create_revision");
	et_out_free(&r);
}

/* EL10 across the upgrade: a key made before the epoch key existed (an
 * older holdfast's acquisition, its fence its create_revision; made here
 * with etcdctl from a real record after deleting the epoch key) keeps that
 * fence - its holder's `check --fence` answers 0 before and after the next
 * acquisition makes the epoch - and that acquisition's fence is the new
 * form (epoch + create_revision), above the old one. */
Test(etcd_cli, a_key_made_before_the_epoch_keeps_its_fence)
{
	pid_t owner = et_sleeper();
	struct et_out r = et_run(
		"bash",
		"ctl() { ETCDCTL_API=3 etcdctl --endpoints=%s \"$@\"; }\n"
		"field() { sed -n \"s/^\\\"$1\\\" : //p\"; }\n"
		"\"$HOLDFAST_BIN\" lock acquire ./a.lock -n --pid %d >/dev/null || exit 10\n"
		"k=/holdfast/lock$(pwd -P)\n"
		"v=$(ctl get \"$k/a.lock\" --print-value-only) || exit 11\n"
		"l=$(ctl get \"$k/a.lock\" -w fields | field Lease)\n"
		"ctl del /holdfast/epoch >/dev/null || exit 12\n"
		"ctl put --lease=\"$(printf %%x \"$l\")\" \"$k/old.lock\" \"$v\" >/dev/null || exit 13\n"
		"cr=$(ctl get \"$k/old.lock\" -w fields | field CreateRevision)\n"
		"echo \"cr=$cr\"\n"
		"\"$HOLDFAST_BIN\" lock check ./old.lock --fence \"$cr\"; echo \"old=$?\"\n"
		"t=$(\"$HOLDFAST_BIN\" lock acquire ./b.lock -n) || exit 14\n"
		"echo \"b=${t#* }\"\n"
		"\"$HOLDFAST_BIN\" lock check ./old.lock --fence \"$cr\"; echo \"still=$?\"\n"
		"\"$HOLDFAST_BIN\" lock status ./old.lock --json\n"
		"\"$HOLDFAST_BIN\" lock release ./b.lock --token \"$t\" || exit 15\n",
		E.endpoint, (int)owner);
	et_reap(owner); /* before any assertion: none left behind */
	char *out = r.out, *c = strstr(out, "cr="), *b = strstr(out, "b=");
	cr_assert(c && b, "%s", out);
	long long cr = atoll(c + 3), fb = atoll(b + 2);
	cr_assert_gt(cr, 0, "%s", out);
	ET_HAS(out, "old=0\n", "still=0\n");
	char want[64];
	snprintf(want, sizeof want, "\"fence\":%lld", cr);
	ET_HAS(out, want); /* the old key's record: its create_revision */
	int64_t ecr = 0, epoch = et_epoch(&ecr);
	cr_assert_gt(ecr, cr, "the epoch was made before the old key: %s", out);
	cr_assert_gt(epoch, cr, "the epoch is not above the old fences");
	cr_assert_gt(fb, epoch + ecr, "the new acquisition's fence is not epoch + create_revision");
	et_out_free(&r);
}

/* EL10, hostile input: an epoch key that is no epoch (junk, zero, past
 * 2^62) is refused by acquire and status alike, naming the key - never a
 * fence made of junk, never a hang. */
Test(etcd_cli, an_epoch_key_that_is_no_epoch_is_refused)
{
	const char *junk[] = { "junk", "0", "04611686018427387904", "4611686018427387905" };
	for (int i = 0; i < 4; i++) {
		char *args = et_fmt("put /holdfast/epoch %s", junk[i]), *o = NULL;
		cr_assert_eq(et_ctl(args, &o), 0, "%s", o);
		free(o);
		free(args);
		struct et_out r = et_run("sh",
					 "\"$HOLDFAST_BIN\" lock acquire ./j.lock -n; echo \"acquire=$?\"\n"
					 "\"$HOLDFAST_BIN\" lock status ./j.lock; echo \"status=$?\"\n");
		cr_assert_null(strstr(r.out, "acquire=0\n"), "%s: %s", junk[i], r.out);
		cr_assert_null(strstr(r.out, "status=0\n"), "%s: %s", junk[i], r.out);
		cr_assert(strstr(r.out, "acquire=") && strstr(r.out, "status="), "%s", r.out);
		cr_assert(strstr(r.err, "/holdfast/epoch holds no fence epoch"), "%s: %s", junk[i],
			  r.err);
		et_out_free(&r);
	}
}

static void fence_check(const char *env);

Test(etcd_cli, run_exports_the_fence_and_check_fence)
{
	fence_check(E.env);
}

/* lock check --fence is the file system's too */
Test(etcd_cli, check_fence_on_the_file_system)
{
	fence_check("HOLDFAST_BACKEND=file");
}

static void fence_check(const char *env)
{
	struct et_out r = et_run_env(
		env, "bash",
		"t=$(\"$HOLDFAST_BIN\" lock acquire ./r.lock -n) || exit 8\n"
		"\"$HOLDFAST_BIN\" lock release ./r.lock --token \"$t\" || exit 7\n"
		"\"$HOLDFAST_BIN\" run --lock ./r.lock -- sh -c '\n"
		"  echo \"fence=$HOLDFAST_FENCE\"\n"
		"  \"$HOLDFAST_BIN\" lock check ./r.lock --fence \"$HOLDFAST_FENCE\"; echo \"fenced=$?\"\n"
		"  \"$HOLDFAST_BIN\" lock check ./r.lock --fence 1; echo \"old=$?\"\n"
		"  \"$HOLDFAST_BIN\" lock status ./r.lock'\n"
		"echo \"run=$?\"\n"
		"\"$HOLDFAST_BIN\" lock check ./r.lock --fence 1; echo \"free=$?\"\n");
	char *out = r.out, *err = r.err;
	char *f = strstr(out, "fence=");
	cr_assert_not_null(f, "%s", out);
	long fence = atol(f + 6);
	cr_assert_gt(fence, 1);
	char want[64];
	snprintf(want, sizeof want, "fence %ld\n", fence);
	cr_assert(strstr(out, want), "status names another fence: %s", out);
	cr_assert(strstr(out, "fenced=0\n") && strstr(out, "old=1\n") && strstr(out, "run=0\n") &&
			  strstr(out, "free=69\n"),
		  "%s %s", out, err);
	et_out_free(&r);
}

Test(etcd_cli, edit_with_the_lock_on_etcd)
{
	struct et_out r = et_run("sh", "printf 'a\\n' > state\n"
				       "\"$HOLDFAST_BIN\" edit state -- sed 's/a/b/' || exit 10\n"
				       "cat state\n"
				       "test -e state.lock && echo made-a-directory\n"
				       "exit 0\n");
	cr_assert_str_eq(r.out, "b\n", "%s", r.err);
	et_out_free(&r);
}

/* etcd stops while the lock is held: every command ends with a clear
 * error within its timeout (exit 74, the endpoint named), never a hang. */
Test(etcd_cli, etcd_stopped_mid_hold)
{
	char lock[512];
	snprintf(lock, sizeof lock, "%s/s.lock", et_dir);
	const char *acq[] = { "holdfast", "lock", "acquire", lock, "-n", "--pid", "1", "--backend", E.uri,
			      NULL };
	char *tok = NULL;
	cr_assert_eq(hft_cli(&tok, NULL, acq), 0);
	et_kill();
	const char *status[] = { "holdfast", "lock", "status", lock, "--etcd-timeout", "2s",
				 "--backend", E.uri, NULL };
	char *out = NULL, *err = NULL;
	int64_t t0 = et_mono_ms();
	int st = hft_cli(&out, &err, status);
	cr_assert_eq(st, 74, "exit %d: %s", st, err);
	cr_assert(strstr(err, "etcd http://127.0.0.1:") && strstr(err, "lock "), "%s", err);
	const char *acq2[] = { "holdfast", "lock", "acquire", lock, "-w", "30", "--etcd-timeout",
			       "2s", "--backend", E.uri, NULL };
	free(out);
	free(err);
	st = hft_cli(&out, &err, acq2);
	cr_assert_eq(st, 74, "exit %d: %s", st, err);
	cr_assert_lt(et_mono_ms() - t0, 30000, "not within the timeouts");
	free(out);
	free(err);
	free(tok);
}

/* A waiter watching when etcd stops: an error, not a hang. */
Test(etcd_cli, etcd_stopped_while_waiting)
{
	char lock[512];
	snprintf(lock, sizeof lock, "%s/ws.lock", et_dir);
	const char *acq[] = { "holdfast", "lock", "acquire", lock, "-n", "--pid", "1", "--backend", E.uri,
			      NULL };
	cr_assert_eq(hft_cli(NULL, NULL, acq), 0);
	struct hft_child c;
	const char *waiter[] = { hft_bin(), "lock", "acquire", lock, "--backend", E.uri, NULL };
	hft_spawn_cmd(&c, waiter, NULL);
	/* the waiter is in its watch once etcd shows a watcher; etcd's
	 * metrics are not worth a dependency: a killed member ends the wait
	 * whether it watches already or not */
	et_kill();
	int st = et_exit_within(c.pid, 60000);
	cr_assert_eq(st, 74, "waiter: %d", st);
}

/* Turn auth on in the suite's etcd: user root, password s3cretPW. */
static void auth_on(void)
{
	char *out = NULL;
	cr_assert_eq(et_ctl("user add root:s3cretPW", &out), 0, "%s", out);
	free(out);
	cr_assert_eq(et_ctl("auth enable", &out), 0, "%s", out);
	free(out);
}

/* Auth on: works with the password file, refused without it and with a
 * wrong one; the password never shows. */
Test(etcd_cli, auth)
{
	auth_on();
	char pw[600], bad[600];
	snprintf(pw, sizeof pw, "%s/pw", et_dir);
	snprintf(bad, sizeof bad, "%s/bad", et_dir);
	hft_write(pw, "s3cretPW\n");
	hft_write(bad, "WrongOne\n");
	cr_assert_eq(chmod(pw, 0600), 0);
	cr_assert_eq(chmod(bad, 0600), 0);
	struct et_out r = et_run(
		"bash", "\"$HOLDFAST_BIN\" lock acquire ./a.lock -n; echo \"none=$?\"\n"
			 "HOLDFAST_ETCD_USER=root HOLDFAST_ETCD_PASSWORD_FILE=%s \"$HOLDFAST_BIN\" lock acquire ./a.lock -n --json; echo \"wrong=$?\"\n"
			 "t=$(\"$HOLDFAST_BIN\" lock acquire ./a.lock -n --etcd-user root --etcd-password-file %s); echo \"right=$?\"\n"
			 "\"$HOLDFAST_BIN\" lock status ./a.lock --etcd-user root --etcd-password-file %s\n"
			 "HOLDFAST_ETCD_USER=root HOLDFAST_ETCD_PASSWORD_FILE=%s \"$HOLDFAST_BIN\" lock release ./a.lock --token \"$t\"; echo \"released=$?\"\n",
		bad, pw, pw, pw);
	char *out = r.out, *err = r.err;
	cr_assert(strstr(out, "none=77\n") && strstr(out, "wrong=77\n") && strstr(out, "right=0\n") &&
			  strstr(out, "held: pid ") && strstr(out, "released=0\n"),
		  "%s\n%s", out, err);
	cr_assert(strstr(err, "auth"), "%s", err);
	cr_assert_null(strstr(err, "s3cretPW"), "%s", err);
	cr_assert_null(strstr(err, "WrongOne"), "%s", err);
	cr_assert_null(strstr(out, "s3cretPW"), "%s", out);
	cr_assert_null(strstr(out, "WrongOne"), "%s", out);
	et_out_free(&r);
}

/* ET5: a password file that is a FIFO (no writer: reading it would block
 * forever), a directory, or a file others can read is refused at once with
 * 77, naming it and why; the password is never read from it. */
Test(etcd_cli, password_file_that_is_no_private_regular_file_is_refused_at_once)
{
	auth_on();
	char fifo[600], d[600], open_pw[600];
	snprintf(fifo, sizeof fifo, "%s/pw.fifo", et_dir);
	snprintf(d, sizeof d, "%s/pw.dir", et_dir);
	snprintf(open_pw, sizeof open_pw, "%s/pw.644", et_dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(mkdir(d, 0700), 0);
	hft_write(open_pw, "s3cretPW\n");
	cr_assert_eq(chmod(open_pw, 0644), 0);
	const char *files[] = { fifo, d, open_pw };
	const char *words[] = { "is a FIFO", "is a directory", "mode 0644" };
	for (int i = 0; i < 3; i++) {
		struct et_out r = et_run("sh",
					 "\"$HOLDFAST_BIN\" lock acquire ./a.lock -n --etcd-user root "
					 "--etcd-password-file %s; echo \"rc=$?\"\n",
					 files[i]);
		cr_assert(strstr(r.out, "rc=77\n"), "%s: %s\n%s", files[i], r.out, r.err);
		cr_assert(strstr(r.err, files[i]) && strstr(r.err, words[i]), "%s", r.err);
		cr_assert_null(strstr(r.err, "s3cretPW"), "%s", r.err);
		et_out_free(&r);
	}
}

Test(etcd_cli, backend_refused_when_malformed)
{
	char *out = NULL, *err = NULL;
	const char *a[] = { "holdfast", "lock", "status", "./x.lock", "--backend", "etcd://nohost", NULL };
	cr_assert_eq(hft_cli(&out, &err, a), 64, "%s", err);
	cr_assert(strstr(err, "backend etcd://nohost"), "%s", err);
	free(out);
	free(err);
}

/* More than one etcd lock for one run: taken in the order of their keys,
 * each fence exported in command-line order. */
Test(etcd_cli, run_with_several_locks)
{
	struct et_out r = et_run(
		"sh", "\"$HOLDFAST_BIN\" run --lock ./b.lock --lock ./a.lock -- sh -c 'echo \"$HOLDFAST_FENCE\"; "
			 "\"$HOLDFAST_BIN\" lock check ./a.lock && \"$HOLDFAST_BIN\" lock check ./b.lock && echo both'\n"
			 "\"$HOLDFAST_BIN\" run --lock ./a.lock --lock ./nodir/../a.lock -- true; echo \"twice=$?\"\n");
	char *out = r.out, *err = r.err;
	long fb = 0, fa = 0;
	cr_assert_eq(sscanf(out, "%ld %ld", &fb, &fa), 2, "%s", out);
	cr_assert_gt(fb, fa, "a.lock (first by key) taken after b.lock: %s", out);
	cr_assert(strstr(out, "both\n") && strstr(out, "twice=64\n"), "%s %s", out, err);
	et_out_free(&r);
}

ET_SUITE_TLS(etcd_tls, 240);

/* https endpoints: with the CA, the lock works; without it the server's
 * certificate is refused (exit 74), never ignored. */
Test(etcd_tls, https_with_the_ca_file)
{
	struct et_out r = et_run(
		"bash", "t=$(\"$HOLDFAST_BIN\" lock acquire ./t.lock -n --etcd-ca %s); echo \"ca=$?\"\n"
			 "\"$HOLDFAST_BIN\" lock status ./t.lock; echo \"noca=$?\"\n"
			 "HOLDFAST_ETCD_CA_FILE=%s \"$HOLDFAST_BIN\" lock release ./t.lock --token \"$t\"; echo \"released=$?\"\n",
		E.ca, E.ca);
	cr_assert(strstr(r.out, "ca=0\n") && strstr(r.out, "noca=74\n") && strstr(r.out, "released=0\n"),
		  "%s\n%s", r.out, r.err);
	cr_assert(strstr(r.err, "https://127.0.0.1:"), "%s", r.err);
	et_out_free(&r);
}

/* DL13 on etcd: a script acquiring a lock it holds already, without -w,
 * is refused at once instead of waiting for itself. */
Test(etcd_cli, acquiring_twice_from_one_script_is_refused)
{
	struct et_out r = et_run("bash", "\"$HOLDFAST_BIN\" lock acquire ./d.lock >/dev/null || exit 10\n"
					 "\"$HOLDFAST_BIN\" lock acquire ./d.lock; echo \"again=$?\"\n");
	cr_assert(strstr(r.out, "again=1\n") && strstr(r.err, "already held by pid"), "%s %s", r.out,
		  r.err);
	et_out_free(&r);
}

/* A holder proven dead on this host whose keeper is gone too: status says
 * so, and the next acquirer reaps it at once (its lease's TTL is 60 s, the
 * wait 30 s). */
Test(etcd_cli, dead_holder_shown_and_reaped)
{
	struct et_out r = et_run(
		"bash", "sleep 1000 </dev/null >/dev/null 2>&1 & p=$!\n"
			"\"$HOLDFAST_BIN\" lock acquire \"$PWD/z.lock\" -n --pid $p --ttl 60s >/dev/null || exit 10\n"
			"echo \"$p\"\n");
	pid_t owner = atoi(r.out);
	et_out_free(&r);
	char *out = NULL, *err = NULL;
	char lock[600];
	snprintf(lock, sizeof lock, "%s/z.lock", et_dir);
	const char *words[] = { "lock", "acquire", lock, NULL };
	pid_t keeper = et_find_proc(words);
	cr_assert_gt(keeper, 0);
	cr_assert_eq(kill(keeper, SIGKILL), 0);
	cr_assert_eq(kill(owner, SIGKILL), 0);
	/* the owner was the shell's child, reparented when the shell ended:
	 * its pidfd says when it is gone (bounded) */
	int pfd = (int)syscall(SYS_pidfd_open, owner, 0);
	cr_assert_geq(pfd, 0);
	struct pollfd pp = { .fd = pfd, .events = POLLIN };
	cr_assert_eq(poll(&pp, 1, 30000), 1, "the owner did not die");
	close(pfd);
	int64_t until = et_mono_ms() + 30000;
	while (kill(owner, 0) == 0) { /* reaped by its new parent: a moment later */
		cr_assert_lt(et_mono_ms(), until, "the dead owner was never reaped");
		sched_yield();
	}
	const char *status[] = { "holdfast", "lock", "status", lock, "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(&out, &err, status), 0, "%s", err);
	cr_assert(strstr(out, "stale (owner dead)"), "%s", out);
	free(out);
	free(err);
	const char *acq[] = { "holdfast", "lock", "acquire", lock, "-w", "30", "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(&out, &err, acq), 0, "%s", err);
	free(out);
	free(err);
}

/* lock renew on etcd, from each shell: a record over-age (dated 10 min back
 * through etcdctl, its max-hold 2 s: past the 60 s stale window too, with no
 * real wait) is renewed - the window starts again, so a taker that judges
 * its age leaves it alone, while the same record not renewed (the control)
 * is taken. The fence and the lease stay; the holder's renew after the
 * takeover, a wrong token and a renew after the release are refused as the
 * file system's renew refuses them. */
static void renew_restarts_the_window(const char *sh)
{
	pid_t owner = et_sleeper();
	struct et_out r = et_run(
		sh, "\"$HOLDFAST_BIN\" lock acquire ./r.lock -n --pid %d --max-hold 2s || exit 10\n"
		    "\"$HOLDFAST_BIN\" lock acquire ./c.lock -n --pid %d --max-hold 2s || exit 11\n",
		(int)owner, (int)owner);
	char tr[64], tc[64];
	long fence = 0, fc = 0;
	cr_assert_eq(sscanf(r.out, "%63s %ld %63s %ld", tr, &fence, tc, &fc), 4, "%s", r.out);
	et_out_free(&r);
	char *pr = et_fmt("%s/r.lock", et_dir), *pc = et_fmt("%s/c.lock", et_dir);
	int64_t lease0 = 0, cr0 = 0, lease1 = 0, cr1 = 0;
	et_lock_kv(pr, &lease0, &cr0, NULL);
	cr_assert_eq(et_epoch(NULL) + cr0, fence, "EL10: the fence is the epoch + create_revision");
	et_lock_backdate(pr, 600000);
	et_lock_backdate(pc, 600000);
	r = et_run(sh,
		   "\"$HOLDFAST_BIN\" lock status ./r.lock --json > before.json\n"
		   "\"$HOLDFAST_BIN\" lock renew ./r.lock --token '%s %ld' --json > renew.json; echo \"renew=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock acquire ./r.lock -n --pid 1 2>taker.err; echo \"taker=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock acquire ./c.lock -n --pid 1 >/dev/null; echo \"control=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock check ./r.lock --fence %ld; echo \"fenced=$?\"\n"
		   "cat before.json renew.json; cat taker.err >&2\n",
		   tr, fence, fence);
	char *out = r.out, *err = r.err;
	ET_HAS(out, "renew=0\n", "taker=1\n", "control=0\n", "fenced=0\n");
	char want[128];
	snprintf(want, sizeof want, "held by pid %d", (int)owner);
	ET_HAS(err, want);
	char *b = strchr(out, '{');
	cr_assert_not_null(b, "%s", out);
	json_t *before = json_loads(b, JSON_DISABLE_EOF_CHECK, NULL);
	b = strchr(strchr(b, '\n'), '{');
	cr_assert_not_null(b, "%s", out);
	json_t *after = json_loads(b, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(before, "state")), "leaked", "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(after, "state")), "held", "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(after, "token")), tr);
	cr_assert_eq(json_integer_value(json_object_get(after, "fence")), fence);
	cr_assert_eq(json_integer_value(json_object_get(after, "max_hold_ms")), 2000);
	cr_assert_lt(json_integer_value(json_object_get(after, "age_ms")),
		     json_integer_value(json_object_get(before, "age_ms")), "%s", out);
	json_decref(before);
	json_decref(after);
	et_out_free(&r);
	et_lock_kv(pr, &lease1, &cr1, NULL);
	cr_assert_eq(lease1, lease0, "the renewal changed the lease");
	cr_assert_eq(cr1, cr0, "the renewal changed the fence");
	r = et_run(sh,
		   "\"$HOLDFAST_BIN\" lock renew ./c.lock --token '%s' 2>over.err; echo \"over=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock renew ./r.lock --token 0123456789abcdef0123456789abcdef "
		   "2>wrong.err; echo \"wrong=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock renew ./r.lock --token '%s' --max-hold none --json; echo \"none=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock release ./r.lock --token '%s'; echo \"released=$?\"\n"
		   "\"$HOLDFAST_BIN\" lock renew ./r.lock --token '%s' 2>gone.err; echo \"gone=$?\"\n"
		   "cat over.err wrong.err gone.err >&2\n",
		   tc, tr, tr, tr);
	out = r.out, err = r.err;
	ET_HAS(out, "over=1\n", "wrong=1\n", "none=0\n", "\"max_hold_ms\":9223372036854775807",
	       "released=0\n", "gone=69\n");
	ET_HAS(err, "lock renew ./c.lock: not yours any more: held by pid ",
	       "lock renew ./r.lock: not yours any more: held by pid ", "lock renew ./r.lock: not held");
	cr_assert_null(strstr(err, "not on etcd"), "%s", err);
	et_out_free(&r);
	et_reap(owner);
	free(pr);
	free(pc);
}

ET_EACH_SHELL(etcd_cli, renew_restarts_the_window, renew_restarts_the_window)

/* lock renew --json on etcd: every field of the file system's renewed
 * record, of the same type (plus backend, key, ttl_ms). */
Test(etcd_cli, renew_json_fields_are_the_local_ones)
{
	struct et_out r = et_run(
		"sh", "tf=$(\"$HOLDFAST_BIN\" lock acquire ./f.lock -n --backend file) || exit 10\n"
		      "te=$(\"$HOLDFAST_BIN\" lock acquire ./e.lock -n) || exit 11\n"
		      "\"$HOLDFAST_BIN\" lock renew ./f.lock --token \"$tf\" --json --backend file || exit 12\n"
		      "\"$HOLDFAST_BIN\" lock renew ./e.lock --token \"$te\" --json || exit 13\n");
	char *nl = strchr(r.out, '\n');
	cr_assert_not_null(nl, "%s", r.out);
	json_t *f = json_loads(r.out, JSON_DISABLE_EOF_CHECK, NULL),
	       *e = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert(json_is_object(f) && json_is_object(e), "%s", r.out);
	const char *k;
	json_t *v;
	json_object_foreach(f, k, v)
	{
		json_t *ev = json_object_get(e, k);
		cr_assert_not_null(ev, "etcd's renewed record lacks %s: %s", k, nl + 1);
		cr_assert_eq(json_typeof(ev), json_typeof(v), "%s", k);
	}
	cr_assert_str_eq(json_string_value(json_object_get(e, "backend")), "etcd");
	cr_assert_str_eq(json_string_value(json_object_get(e, "state")), "held");
	json_decref(f);
	json_decref(e);
	et_out_free(&r);
}

/* The waiting line of a wait on etcd (on a terminal: `script`) names the
 * etcd holder each time it is drawn, never a local lock that sits at the
 * same path (it was redrawn from the file system's lock). */
Test(etcd_cli, waiting_line_names_the_etcd_holder)
{
	struct et_out r = et_run(
		"sh",
		"H=\"$HOLDFAST_BIN\"\n"
		"sleep 1000 </dev/null >/dev/null 2>&1 & a=$!\n"
		"sleep 1000 </dev/null >/dev/null 2>&1 & b=$!\n"
		"trap 'kill $a $b 2>/dev/null' EXIT\n"
		"\"$H\" lock acquire L -n --pid $a >/dev/null || exit 10\n"
		"\"$H\" lock acquire L -n --pid $b --backend file >/dev/null || exit 11\n"
		"script -qec \"'$H' lock acquire L -w 2.5\" /dev/null >tty.out 2>&1\n"
		"echo \"etcd=$(grep -c \"pid $a\" tty.out) local=$(grep -c \"pid $b\" tty.out)\"\n"
		"grep -c 'waiting for' tty.out >/dev/null || { cat tty.out; exit 12; }\n"
		"\"$H\" lock release L --pid $b --backend file 2>/dev/null\n"
		"kill $a $b; wait $a $b 2>/dev/null; exit 0\n");
	cr_assert(strstr(r.out, "local=0\n"), "the line named the local lock's holder: %s", r.out);
	cr_assert_null(strstr(r.out, "etcd=0 "), "the line did not name the etcd holder: %s", r.out);
	et_out_free(&r);
}

/* etcd shut down gracefully (SIGTERM: the gateway answers a request in
 * flight "the client connection is closing", HTTP 408) under a waiting
 * `scope register -w` and `lock acquire -w`: each ends with exit 74 naming
 * the endpoint, within its bound - as a request sent without an answer,
 * not an error answer (71). */
Test(etcd_cli, etcd_shut_down_while_waiting)
{
	struct et_out r = et_run(
		"sh",
		"H=\"$HOLDFAST_BIN\"\n"
		"mkdir -p k\n"
		"sleep 1000 </dev/null >/dev/null 2>&1 & p=$!\n"
		"echo \"$p\" > owner.pid\n"
		"\"$H\" lock acquire k.lock --pid $p >/dev/null || exit 10\n"
		"\"$H\" scope register K \"$PWD/k:write\" --pid $p >/dev/null || exit 11\n");
	et_out_free(&r);
	char spec[700], lock[700];
	snprintf(spec, sizeof spec, "%s/k:write", et_dir);
	snprintf(lock, sizeof lock, "%s/k.lock", et_dir);
	struct hft_child s, l;
	const char *sw[] = { "holdfast", "scope", "register", "KK", spec, "-w", "30s", "--backend",
			     E.uri, NULL };
	const char *lw[] = { "holdfast", "lock", "acquire", lock, "-w", "30", "--backend", E.uri, NULL };
	hft_spawn_cli(&s, "pause:scope.register.waiting", sw, NULL);
	hft_spawn_cli(&l, "pause:etcdlock.acquire.judged", lw, NULL);
	hft_expect(&s, "scope.register.waiting");
	hft_expect(&l, "etcdlock.acquire.judged");
	hft_go(&s);
	hft_go(&l);
	et_stop_pid(&E.pid, SIGTERM);
	char *sout = NULL, *serr = NULL, *lout = NULL, *lerr = NULL;
	int sst = hft_collect(s.pid, s.out_rd, s.err_rd, &sout, &serr);
	int lst = hft_collect(l.pid, l.out_rd, l.err_rd, &lout, &lerr);
	char p[700]; /* the holders' owner ends before any assertion can fail */
	snprintf(p, sizeof p, "%s/owner.pid", et_dir);
	FILE *f = fopen(p, "r");
	int pid = 0;
	if (f && fscanf(f, "%d", &pid) == 1 && pid > 0)
		kill(pid, SIGKILL);
	if (f)
		fclose(f);
	cr_assert_eq(sst, 74, "scope register -w: exit %d: %s", sst, serr);
	cr_assert(serr && strstr(serr, E.uri + strlen("etcd://")), "no endpoint named: %s", serr);
	cr_assert_eq(lst, 74, "lock acquire -w: exit %d: %s", lst, lerr);
	cr_assert(lerr && strstr(lerr, E.uri + strlen("etcd://")), "no endpoint named: %s", lerr);
	free(sout);
	free(serr);
	free(lout);
	free(lerr);
}

/* `lock status --json` reports the holder's lease TTL as it recorded it,
 * not the reader's --ttl. */
Test(etcd_cli, status_reports_the_holders_ttl)
{
	struct et_out r = et_run(
		"sh",
		"H=\"$HOLDFAST_BIN\"\n"
		"sleep 1000 </dev/null >/dev/null 2>&1 & p=$!\n"
		"\"$H\" lock acquire t.lock --pid $p --ttl 3s >/dev/null || { kill $p; exit 10; }\n"
		"\"$H\" lock status t.lock --json; echo\n"
		"\"$H\" lock status t.lock --ttl 7s --json; echo\n"
		"kill $p; wait $p 2>/dev/null; exit 0\n");
	char *second = strchr(r.out, '\n');
	cr_assert(second, "%s", r.out);
	cr_assert(strstr(r.out, "\"ttl_ms\":3000") && strstr(second, "\"ttl_ms\":3000"),
		  "the reader's TTL reported: %s", r.out);
	et_out_free(&r);
}

/* OW6 on etcd: `--lease DUR` is the key's lease of that TTL, kept alive by
 * nobody (no keeper): the process that took it is gone and it stays held;
 * `lock renew` is its keep-alive; unrenewed it ends with the TTL, not
 * before (the monotonic clock, from before the acquisition). */
Test(etcd_cli, lease_is_kept_alive_only_by_renew)
{
	int64_t t0 = et_mono_ms();
	struct et_out r = et_run(
		"sh", "t=$(sh -c '\"$HOLDFAST_BIN\" lock acquire ./l.lock -n --lease 3s') || exit 10\n"
		      "\"$HOLDFAST_BIN\" lock status ./l.lock --json; echo\n"
		      "\"$HOLDFAST_BIN\" lock acquire ./l.lock -n 2>/dev/null; echo \"busy=$?\"\n"
		      "\"$HOLDFAST_BIN\" lock renew ./l.lock --token \"$t\"; echo \"renewed=$?\"\n"
		      "\"$HOLDFAST_BIN\" lock acquire ./l.lock -w 40 >/dev/null; echo \"got=$?\"\n");
	int64_t took = et_mono_ms() - t0;
	cr_assert(strstr(r.out, "\"lease_ms\":3000"), "%s %s", r.out, r.err);
	cr_assert(strstr(r.out, "\"state\":\"held\""), "%s %s", r.out, r.err);
	cr_assert(strstr(r.out, "busy=1\n"), "%s %s", r.out, r.err);
	cr_assert(strstr(r.out, "renewed=0\n"), "%s %s", r.out, r.err);
	cr_assert(strstr(r.out, "got=0\n"), "%s %s", r.out, r.err);
	cr_assert_geq(took, 3000, "taken before its TTL went unrenewed: %lld ms", (long long)took);
	et_out_free(&r);
}

/* The suites' own housekeeping: et_sweep removes /tmp/hft-etcd.* dirs
 * whose noted processes are all gone (tests killed before teardown). A
 * test between stopping its member and starting the next (et_rebuild) has
 * no live member: its dir must survive another test's sweep then, as the
 * test itself is noted (et_own_dir) - a fresh-clone run lost
 * fences_never_repeat_after_the_cluster_is_rebuilt's dir in that gap. */
Test(etcd_cli, a_tests_dir_outlives_a_sweep_while_its_member_is_stopped)
{
	et_stop_pid(&E.pid, SIGTERM);
	et_sweep("hft-etcd.");
	struct stat st;
	cr_assert_eq(stat(E.dir, &st), 0, "%s was swept while its test runs", E.dir);
	et_rebuild_after_stop();
}
