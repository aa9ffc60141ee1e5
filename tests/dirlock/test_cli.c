/* `holdfast lock acquire|release|status` driven from outside, through the
 * binary, as a user would: output, messages naming path and holder, exit
 * codes of the contract. */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir, *lock;

static void setup(void)
{
	dir = hft_tmpdir();
	lock = dl_path(dir, "L");
}

static void teardown(void)
{
	hft_rmtree(dir);
	free(dir);
	free(lock);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);

/* acquire, parse "TOKEN FENCE" */
static void acquire(char *token, uint64_t *fence, const char *extra)
{
	char *out, *err;
	const char *argv[] = { "holdfast", "lock", "acquire", lock, extra, NULL };
	int st = hft_cli(&out, &err, argv);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	unsigned long long f;
	char tok[64];
	cr_assert_eq(sscanf(out, "%63s %llu", tok, &f), 2, "stdout '%s'", out);
	cr_assert_eq(strlen(tok), HF_TOKEN_LEN);
	strcpy(token, tok);
	*fence = f;
	free(out);
	free(err);
}

static int release(const char *token, char **err)
{
	const char *argv[] = { "holdfast", "lock", "release", lock, "--token", token, NULL };
	return hft_cli(NULL, err, argv);
}

Test(cli, acquire_prints_token_and_fence_release_frees)
{
	char t1[64], t2[64];
	uint64_t f1, f2;
	acquire(t1, &f1, NULL);
	/* FC2: a new counter starts at the wall clock's microseconds */
	cr_assert_gt(f1, (uint64_t)(hf_sys_now_us() - 60 * 1000000LL), "%" PRIu64, f1);
	cr_assert_leq(f1, (uint64_t)hf_sys_now_us() + 1);
	char *p = dl_path(lock, "owner"), *rec = hft_slurp(p);
	cr_assert_not_null(strstr(rec, t1), "the record carries the token");
	char mine[32];
	snprintf(mine, sizeof mine, "\"pid\":%d,", (int)getpid());
	cr_assert_not_null(strstr(rec, mine), "held for the caller (holdfast's parent): %s", rec);
	cr_assert_eq(release(t1, NULL), 0);
	cr_assert(!hft_exists(lock));
	acquire(t2, &f2, NULL);
	cr_assert_gt(f2, f1);
	cr_assert_eq(release(t2, NULL), 0);
	free(p);
	free(rec);
}

Test(cli, conflict_exit_1_names_holder_path_host_age)
{
	char t[64];
	uint64_t f;
	acquire(t, &f, NULL);
	char *out, *err;
	const char *argv[] = { "holdfast", "lock", "acquire", "-n", lock, NULL };
	cr_assert_eq(hft_cli(&out, &err, argv), 1);
	char pid[32];
	snprintf(pid, sizeof pid, "pid %d", (int)getpid());
	cr_assert_not_null(strstr(err, lock), "%s", err);
	cr_assert_not_null(strstr(err, pid), "%s", err);
	cr_assert_not_null(strstr(err, hf_host_name()), "%s", err);
	cr_assert_not_null(strstr(err, " old"), "%s", err);
	cr_assert_str_eq(out, "");
	free(out);
	free(err);
	const char *w[] = { "holdfast", "lock", "acquire", "-w", "0.1", lock, NULL };
	cr_assert_eq(hft_cli(NULL, &err, w), 1);
	cr_assert_not_null(strstr(err, "timed out"), "%s", err);
	free(err);
	cr_assert_eq(release(t, NULL), 0);
}

Test(cli, json_gives_the_record)
{
	char *out, *err;
	const char *argv[] = { "holdfast", "lock", "acquire", "--json", lock, NULL };
	cr_assert_eq(hft_cli(&out, &err, argv), 0, "%s", err);
	json_error_t e;
	json_t *j = json_loads(out, 0, &e);
	cr_assert_not_null(j, "one JSON object: %s", out);
	static const char *fields[] = { "token", "pid", "pid_start", "boot_id", "host",
					"acquired", "fence" };
	for (size_t i = 0; i < HF_ARRAY_SIZE(fields); i++)
		cr_assert_not_null(json_object_get(j, fields[i]), "field %s", fields[i]);
	cr_assert_eq(json_integer_value(json_object_get(j, "pid")), getpid());
	const char *tok = json_string_value(json_object_get(j, "token"));
	char *s;
	const char *st[] = { "holdfast", "lock", "status", "--json", lock, NULL };
	cr_assert_eq(hft_cli(&s, NULL, st), 0);
	json_t *k = json_loads(s, 0, &e);
	cr_assert_not_null(k, "%s", s);
	cr_assert_str_eq(json_string_value(json_object_get(k, "state")), "held");
	cr_assert_str_eq(json_string_value(json_object_get(k, "token")), tok);
	cr_assert_eq(json_integer_value(json_object_get(k, "fence")),
		     json_integer_value(json_object_get(j, "fence")));
	cr_assert_eq(release(tok, NULL), 0);
	json_decref(j);
	json_decref(k);
	free(out);
	free(err);
	free(s);
}

Test(cli, release_exit_codes)
{
	char t[64];
	uint64_t f;
	acquire(t, &f, NULL);
	char *err;
	cr_assert_eq(release("0123456789abcdef0123456789abcdef", &err), 1,
		     "another token holds it");
	cr_assert_not_null(strstr(err, lock), "%s", err);
	cr_assert_not_null(strstr(err, "held by another owner"), "%s", err);
	free(err);
	cr_assert_eq(release(t, NULL), 0);
	cr_assert_eq(release(t, &err), 69, "not held");
	cr_assert_not_null(strstr(err, "not held"), "%s", err);
	free(err);
}

Test(cli, status_lines)
{
	char *out;
	const char *st[] = { "holdfast", "lock", "status", lock, NULL };
	cr_assert_eq(hft_cli(&out, NULL, st), 0);
	cr_assert_str_eq(out, "free\n");
	free(out);
	char t[64];
	uint64_t f;
	acquire(t, &f, NULL);
	cr_assert_eq(hft_cli(&out, NULL, st), 0);
	char pid[32];
	snprintf(pid, sizeof pid, "held: pid %d (", (int)getpid());
	cr_assert_eq(strncmp(out, pid, strlen(pid)), 0, "%s", out);
	char fs[48];
	snprintf(fs, sizeof fs, "fence %" PRIu64 "\n", f);
	cr_assert_not_null(strstr(out, fs), "%s", out);
	free(out);
	cr_assert_eq(release(t, NULL), 0);
}

/* A lock held for a process of its own (dl_life), which the test kills to
 * make the owner dead: its pid; the token and fence in *token, *fence. */
static pid_t acquire_for_a_life(char *token, uint64_t *fence)
{
	pid_t life = dl_life();
	char arg[32];
	snprintf(arg, sizeof arg, "--pid=%d", (int)life);
	acquire(token, fence, arg);
	return life;
}

/* --pid: the lock lives with that process; when it dies, the next
 * acquirer takes over at once with a greater fence. */
Test(cli, pid_option_and_dead_owner_recovery)
{
	char arg[32], t[64], t2[64];
	uint64_t f, f2;
	pid_t life = acquire_for_a_life(t, &f);
	snprintf(arg, sizeof arg, "--pid=%d", (int)life);
	char *out;
	const char *st[] = { "holdfast", "lock", "status", lock, NULL };
	dl_kill(life);
	cr_assert_eq(hft_cli(&out, NULL, st), 0);
	/* dead, or released already by its keeper, which saw it end (K5) */
	cr_assert(!strncmp(out, "stale (owner dead)", 18) || !strncmp(out, "free", 4), "%s", out);
	free(out);
	acquire(t2, &f2, "-n");
	cr_assert_gt(f2, f);
	cr_assert_eq(release(t2, NULL), 0);
	char *err;
	const char *bad[] = { "holdfast", "lock", "acquire", lock, arg, NULL };
	cr_assert_eq(hft_cli(NULL, &err, bad), 64, "no such process");
	cr_assert_not_null(strstr(err, "no process"), "%s", err);
	free(err);
}

Test(cli, usage_errors_exit_64)
{
	const char *cases[][8] = {
		{ "holdfast", "lock", "acquire", NULL },
		{ "holdfast", "lock", "acquire", "-n", "-w", "3", "X", NULL },
		{ "holdfast", "lock", "acquire", "-w", "soon", "X", NULL },
		{ "holdfast", "lock", "acquire", "--stale", "0", "X", NULL },
		{ "holdfast", "lock", "acquire", "--bogus", "X", NULL },
		{ "holdfast", "lock", "acquire", "A", "B", NULL },
		{ "holdfast", "lock", "release", "X", NULL },
		{ "holdfast", "lock", "frobnicate", "X", NULL },
		{ "holdfast", "lock", "acquire", "--pid", "0", "X", NULL },
	};
	for (size_t i = 0; i < HF_ARRAY_SIZE(cases); i++) {
		char *err;
		cr_assert_eq(hft_cli(NULL, &err, cases[i]), 64, "case %zu", i);
		cr_assert_neq(strlen(err), 0, "case %zu explains itself", i);
		free(err);
	}
	char *reserved = dl_path(dir, "X.holdfast"), *err;
	const char *r[] = { "holdfast", "lock", "acquire", reserved, NULL };
	cr_assert_eq(hft_cli(NULL, &err, r), 64);
	cr_assert_not_null(strstr(err, "reserved"), "%s", err);
	free(err);
	free(reserved);
}

Test(cli, help_is_true)
{
	char *out;
	const char *h[] = { "holdfast", "lock", "--help", NULL };
	cr_assert_eq(hft_cli(&out, NULL, h), 0);
	cr_assert_not_null(strstr(out, "lock acquire PATH"));
	cr_assert_not_null(strstr(out, "--max-hold"));
	cr_assert_not_null(strstr(out, "default 60s"));
	cr_assert_not_null(strstr(out, "default 10m"));
	free(out);
	const char *h2[] = { "holdfast", "lock", "acquire", "--help", NULL };
	cr_assert_eq(hft_cli(&out, NULL, h2), 0);
	cr_assert_not_null(strstr(out, "--token"));
	free(out);
}

/* A state directory writable by others (or another user's) is refused. */
Test(cli, unsafe_state_directory_exit_77)
{
	char *s = dl_path(dir, "L.holdfast"), *err;
	cr_assert_eq(mkdir(s, 0700), 0);
	cr_assert_eq(chmod(s, 0777), 0);
	const char *a[] = { "holdfast", "lock", "acquire", "-n", lock, NULL };
	cr_assert_eq(hft_cli(NULL, &err, a), 77);
	cr_assert_not_null(strstr(err, "L.holdfast"), "%s", err);
	cr_assert(!hft_exists(lock));
	free(err);
	free(s);
}

/* An unreadable owner record within the stale window: 65, nothing changed. */
Test(cli, unreadable_record_exit_65)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	char *p = dl_path(lock, "owner"), *err;
	hft_write(p, "not json");
	const char *a[] = { "holdfast", "lock", "acquire", "-n", lock, NULL };
	cr_assert_eq(hft_cli(NULL, &err, a), 65);
	cr_assert_not_null(strstr(err, "unreadable"), "%s", err);
	char *c = hft_slurp(p);
	cr_assert_str_eq(c, "not json");
	free(c);
	free(err);
	free(p);
}

/* The lock belongs to the script that ran the line, whatever the shell
 * forks to run it: command substitutions with redirections or lists, a
 * function run in $(f), a `timeout` wrapper. After each line, in bash and
 * in dash, the lock is held for $$ (another acquirer is refused, status
 * names $$); after the script, it is reapable. */
static void owner_is_the_script(const char *shell, const char *line)
{
	char *script;
	cr_assert_geq(asprintf(&script,
			       "L='%s'; H=\"$HOLDFAST_BIN\"\n"
			       "holdfast() { \"$H\" \"$@\"; }\n"
			       "%s\n"
			       "set -- $x\n"
			       "[ ${#1} -eq 32 ] || { echo \"no token in: $x\"; exit 90; }\n"
			       "holdfast lock acquire -n \"$L\" --pid $$ >/dev/null 2>&1; echo refused=$?\n"
			       "holdfast lock status \"$L\" --json | grep -o '\"pid\":[0-9]*'\n"
			       "echo me=$$\n"
			       "holdfast lock release \"$L\" --token \"$1\"; echo released=$?\n",
			       lock, line),
		      0);
	char *out, *err;
	int st = hft_sh(&out, &err, shell, NULL, script);
	cr_assert_eq(st, 0, "%s: `%s`: exit %d\n%s\n%s", shell, line, st, out, err);
	char me[64], pid[96];
	const char *m = strstr(out, "me=");
	cr_assert_not_null(m, "%s", out);
	snprintf(me, sizeof me, "%.*s", (int)strcspn(m + 3, "\n"), m + 3);
	snprintf(pid, sizeof pid, "\"pid\":%s\n", me);
	cr_assert(strstr(out, "refused=1\n"), "%s: `%s`: the lock was not held for the script:\n%s%s",
		  shell, line, out, err);
	cr_assert(strstr(out, pid), "%s: `%s`: owner is not the script ($$ = %s):\n%s", shell, line,
		  me, out);
	cr_assert(strstr(out, "released=0\n"), "%s", out);
	free(out);
	free(err);
	free(script);
}

Test(cli, owner_is_the_script_not_a_subshell_bash)
{
	owner_is_the_script("bash", "x=$(holdfast lock acquire \"$L\" 2>&1)");
	owner_is_the_script("bash", "x=$(holdfast lock acquire \"$L\" 2>/dev/null)");
	owner_is_the_script("bash", "x=$(holdfast lock acquire \"$L\" || echo x)");
	owner_is_the_script("bash", "f() { holdfast lock acquire \"$L\"; }; x=$(f)");
	owner_is_the_script("bash", "x=$(timeout 5 \"$H\" lock acquire \"$L\")");
	owner_is_the_script("bash", "x=$(holdfast lock acquire \"$L\")");
}

Test(cli, owner_is_the_script_not_a_subshell_dash)
{
	owner_is_the_script("dash", "x=$(holdfast lock acquire \"$L\" 2>&1)");
	owner_is_the_script("dash", "x=$(holdfast lock acquire \"$L\" 2>/dev/null)");
	owner_is_the_script("dash", "x=$(holdfast lock acquire \"$L\" || echo x)");
	owner_is_the_script("dash", "f() { holdfast lock acquire \"$L\"; }; x=$(f)");
	owner_is_the_script("dash", "x=$(timeout 5 \"$H\" lock acquire \"$L\")");
}

/* The script gone, its lock is reapable at once (the owner is dead). */
Test(cli, lock_of_an_ended_script_is_reaped_at_once)
{
	char *script;
	cr_assert_geq(asprintf(&script, "x=$(\"$HOLDFAST_BIN\" lock acquire '%s' 2>&1) && echo ok",
			       lock),
		      0);
	char *out;
	cr_assert_eq(hft_sh(&out, NULL, "bash", NULL, script), 0);
	cr_assert(strstr(out, "ok"));
	char tok[64];
	uint64_t f;
	acquire(tok, &f, "-n");
	cr_assert_eq(release(tok, NULL), 0);
	free(out);
	free(script);
}

/* `holdfast lock acquire L | true`: the reader is gone when the token is
 * written. Either it succeeds or it holds nothing: never SIGPIPE (141)
 * with the lock held and its token lost. */
Test(cli, token_nobody_reads_releases_the_lock)
{
	struct hft_child c;
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	hft_spawn_cli(&c, "pause:lock.acquire.print",
		      (const char *const[]){ "holdfast", "lock", "acquire", lock, "--pid", pid, NULL },
		      NULL);
	hft_expect(&c, "lock.acquire.print");
	close(c.out_rd); /* the reader of the pipeline exits */
	hft_go(&c);
	int st = hft_wait(&c);
	char *err = hft_read_all(c.err_rd);
	cr_assert_eq(st, 74, "exit %d (141 is SIGPIPE with the lock held): %s", st, err);
	cr_assert(strstr(err, "released again, nothing is held"), "%s", err);
	struct hf_lock_info i;
	cr_assert_eq(hf_dirlock_status(lock, &i), 0);
	cr_assert_eq(i.state, HF_LOCK_FREE, "nothing is held");
	free(err);
}

/* A FIFO planted as the owner record must not hang anything: -n answers at
 * once (refused: not a record holdfast writes), status answers, a waiting
 * acquire answers SIGTERM (it is not blocked in an open). */
Test(cli, fifo_planted_as_owner_hangs_nothing)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	char *fifo = dl_path(lock, "owner");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	char *err;
	int64_t t0 = hf_sys_mono_ns();
	int st = hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "acquire", "-n", lock,
							     "--pid", "1", NULL });
	cr_assert_eq(st, 65, "an unreadable record is refused: %d %s", st, err);
	cr_assert(strstr(err, "not a record"), "%s", err);
	free(err);
	char *out;
	cr_assert_eq(hft_cli(&out, NULL, (const char *const[]){ "holdfast", "lock", "status", lock,
								 NULL }),
		     0);
	cr_assert(strstr(out, "partial") || strstr(out, "acquired"), "%s", out);
	free(out);
	struct hft_child c;
	hft_spawn_cli(&c, "pause:dirlock.acquire.waiting",
		      (const char *const[]){ "holdfast", "lock", "acquire", lock, "--pid", "1", NULL },
		      NULL);
	hft_expect(&c, "dirlock.acquire.waiting");
	hft_go(&c);
	cr_assert_eq(kill(c.pid, SIGTERM), 0);
	cr_assert_eq(hft_wait(&c), 128 + SIGTERM, "it answered SIGTERM");
	cr_assert_lt((hf_sys_mono_ns() - t0) / 1000000, 20000, "nothing waited on the FIFO");
	free(fifo);
}

/* An acquirer SIGKILLed right after its directory appeared at L, before
 * publishing its record, leaves no lock anyone must wait out: the
 * directory's kernel lock went with it, and the next acquirer takes L at
 * once (0.1 made everyone wait the 60 s stale window). */
Test(cli, killed_acquirer_before_publication_is_reaped_at_once)
{
	for (int i = 0; i < 3; i++) {
		const char *point = i == 0 ? "crash:dirlock.acquire.made"
				    : i == 1 ? "crash:dirlock.acquire.fenced"
					     : "crash:dirlock.acquire.staged";
		struct hft_child c;
		hft_spawn_cli(&c, point,
			      (const char *const[]){ "holdfast", "lock", "acquire", lock, "--pid", "1",
						     NULL },
			      NULL);
		cr_assert_eq(hft_wait(&c), 128 + SIGKILL);
		if (i < 2)
			cr_assert(hft_exists(lock), "%s: its directory is at L", point);
		char tok[64];
		uint64_t f;
		acquire(tok, &f, "-n"); /* at once, with the default 60 s stale window */
		cr_assert_eq(release(tok, NULL), 0);
	}
}

/* Names that are not lock names, and reserved ones, each get their own
 * message. */
Test(cli, lock_names_refused_with_the_right_reason)
{
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "acquire", ".",
								 "--pid", "1", NULL }),
		     64);
	cr_assert(strstr(err, "not a lock name"), "%s", err);
	free(err);
	char *res = dl_path(dir, "x.holdfast");
	cr_assert_eq(hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "acquire", res,
								 "--pid", "1", NULL }),
		     64);
	cr_assert(strstr(err, "reserved"), "%s", err);
	free(err);
	free(res);
}

/* A lost fence counter whose reservation is missing or garbage is refused
 * with a message about the fence reservation, not "the owner record". */
Test(cli, lost_fence_reservation_is_named)
{
	char tok[64];
	uint64_t f;
	acquire(tok, &f, "-n");
	cr_assert_eq(release(tok, NULL), 0);
	char *state = dl_path(dir, "L.holdfast"), *fence = dl_path(state, "fence"),
	     *reserve = dl_path(state, "fence.reserve");
	cr_assert_eq(unlink(fence), 0);
	hft_write(reserve, "garbage\n");
	char *err;
	int st = hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "acquire", "-n",
							     lock, "--pid", "1", NULL });
	cr_assert_eq(st, 65, "exit %d: %s", st, err);
	cr_assert(strstr(err, "fence.reserve") && !strstr(err, "owner record"), "%s", err);
	free(err);
	/* a counter of another boot (writes since may be lost) with no
	 * reservation to restart from */
	cr_assert_eq(unlink(reserve), 0);
	hft_write(fence, "00000000000000000007 00000000000000001031 "
			 "00000000-0000-4000-8000-000000000000 00000000000000000007\n");
	cr_assert_eq(hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "acquire", "-n",
								 lock, "--pid", "1", NULL }),
		     65);
	cr_assert(strstr(err, "fence.reserve is missing"), "%s", err);
	free(err);
	free(state);
	free(fence);
	free(reserve);
}

/* A fence counter at the end of int64 refuses instead of wrapping to 0
 * (a fence handed out before). */
Test(cli, fences_never_wrap)
{
	char tok[64];
	uint64_t f;
	acquire(tok, &f, "-n");
	cr_assert_eq(release(tok, NULL), 0);
	char *fence = dl_path(dir, "L.holdfast/fence"), line[200];
	snprintf(line, sizeof line, "%020llu %020llu %s %020llu\n", 9223372036854775806ULL,
		 9223372036854775807ULL, hf_boot_id(), 9223372036854775806ULL);
	hft_write(fence, line);
	acquire(tok, &f, "-n");
	cr_assert_eq(f, 9223372036854775807ULL, "the last fence there is");
	cr_assert_eq(release(tok, NULL), 0);
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "acquire", "-n",
								 lock, "--pid", "1", NULL }),
		     70);
	cr_assert(strstr(err, "exhausted"), "%s", err);
	free(err);
	cr_assert(!hft_exists(lock), "nothing held after the refusal");
	free(fence);
}

/* -w 18446744074 used to overflow into a 0.3 s wait; hex, exponents, signs
 * and "inf" were taken by strtod. Durations are decimal, with an optional
 * unit, at most 100 years; anything else is refused (64), never guessed. */
Test(cli, durations_are_decimal_and_bounded)
{
	static const char *const bad[] = { "18446744074", "0x10", "1e3", "inf", "-1", "1.",
					   ".5", "10 s", "5x", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err;
		int st = hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "acquire",
								     lock, "-w", bad[i], "--pid", "1",
								     NULL });
		cr_assert_eq(st, 64, "-w '%s': exit %d %s", bad[i], st, err);
		cr_assert(strstr(err, i == 0 ? "too long" : "not a duration"), "-w '%s': %s", bad[i],
			  err);
		free(err);
		st = hft_cli(NULL, &err, (const char *const[]){ "holdfast", "run", "-w", bad[i], "--lock",
								 lock, "--", "true", NULL });
		cr_assert_eq(st, 64, "run -w '%s': exit %d %s", bad[i], st, err);
		free(err);
	}
	cr_assert(!hft_exists(lock), "nothing was acquired");
	static const char *const good[] = { "10", "0.5", "500ms", "2m", "1.5h", "1d", "36500d" };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char *out;
		int st = hft_cli(&out, NULL, (const char *const[]){ "holdfast", "lock", "acquire",
								     lock, "-w", good[i], NULL });
		cr_assert_eq(st, 0, "-w '%s'", good[i]);
		char tok[64];
		cr_assert_eq(sscanf(out, "%63s", tok), 1);
		cr_assert_eq(release(tok, NULL), 0);
		free(out);
	}
}

/* The keeper that holds an acquired lock's kernel lock for its owner ends
 * when the lock is released, while the owner lives on: a released lock
 * directory is removed, which inotify does not report while the keeper
 * holds it open, so a keeper that waited only for events stayed until its
 * owner ended - one process per `lock acquire` of a long-lived shell. The
 * test is the keeper's subreaper, so the keeper is its child. */

Test(cli, keeper_ends_when_its_lock_is_released)
{
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	char me[32];
	snprintf(me, sizeof me, "%d", (int)getpid());
	char *out;
	const char *acq[] = { "holdfast", "lock", "acquire", "-n", lock, "--pid", me, NULL };
	cr_assert_eq(hft_cli(&out, NULL, acq), 0);
	char token[64];
	cr_assert_eq(sscanf(out, "%63s", token), 1);
	free(out);
	pid_t k = hft_only_child(getpid()); /* the keeper */
	cr_assert_eq(hft_exit_within(k, 0), -1, "the keeper holds the lock for us");
	const char *rel[] = { "holdfast", "lock", "release", lock, "--token", token, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, rel), 0);
	int code = hft_exit_within(k, 5000); /* it ends within milliseconds */
	if (code < 0) {
		kill(k, SIGKILL);
		waitpid(k, NULL, 0);
	}
	cr_assert_geq(code, 0, "the keeper ended once the lock was released, its owner alive");
}

/* `lock check` as a script branches on it, `--token` given the way
 * `token=$(holdfast lock acquire L)` holds it ("TOKEN FENCE"), and -E on
 * acquire; in bash and dash. */
static void check_in(const char *shell)
{
	char script[4096];
	snprintf(script, sizeof script,
		 "L='%s'; H=\"$HOLDFAST_BIN\"\n"
		 "\"$H\" lock check \"$L\"; echo free=$?\n"
		 "t=$(\"$H\" lock acquire \"$L\")\n"
		 "if \"$H\" lock check \"$L\"; then echo held=yes; fi\n"
		 "\"$H\" lock check \"$L\" --token \"$t\"; echo mine=$?\n"
		 "\"$H\" lock check \"$L\" --token 0123456789abcdef0123456789abcdef; echo other=$?\n"
		 "\"$H\" lock acquire -n -E 75 \"$L\" 2>/dev/null; echo busy=$?\n"
		 "\"$H\" lock acquire -n -E 0 \"$L\" 2>/dev/null; echo e0=$?\n"
		 "\"$H\" lock check \"$L\" --token 'not a token' 2>/dev/null; echo bad=$?\n"
		 "\"$H\" lock release \"$L\" --token \"$t\"; echo released=$?\n"
		 "\"$H\" lock check \"$L\" --token \"$t\"; echo after=$?\n",
		 lock);
	char *out, *err;
	cr_assert_eq(hft_sh(&out, &err, shell, NULL, script), 0, "%s: %s", shell, err);
	cr_assert_str_eq(out,
			 "free=69\nheld=yes\nmine=0\nother=1\nbusy=75\ne0=64\nbad=64\nreleased=0\n"
			 "after=69\n",
			 "%s: %s", shell, err);
	free(out);
	free(err);
}

Test(cli, check_branches_on_held_and_mine_in_bash)
{
	check_in("bash");
}

Test(cli, check_branches_on_held_and_mine_in_dash)
{
	check_in("dash");
}

/* A script that acquires a lock it holds already would wait for itself
 * forever: it is told at once, named. */
Test(cli, acquiring_again_what_the_script_holds_fails_at_once_naming_it)
{
	char script[2048];
	snprintf(script, sizeof script,
		 "L='%s'; H=\"$HOLDFAST_BIN\"\n"
		 "t=$(\"$H\" lock acquire \"$L\")\n"
		 "\"$H\" lock acquire \"$L\" >/dev/null; echo again=$?\n"
		 "\"$H\" lock release \"$L\" --token \"$t\"; echo released=$?\n",
		 lock);
	char *out, *err;
	cr_assert_eq(hft_sh(&out, &err, "bash", NULL, script), 0, "%s", err);
	cr_assert_str_eq(out, "again=1\nreleased=0\n", "%s", err);
	cr_assert(strstr(err, "itself"), "names the holder as the script itself: %s", err);
	free(out);
	free(err);
}

Test(cli, numbers_and_tokens_are_refused_unless_written_as_printed)
{
	/* strtol took " 5" and "+5"; the --token form took "TOKEN FENCE\nanything" */
	static const char *const bad[][3] = {
		{ "-E", "+5", NULL }, { "-E", " 5", NULL }, { "--pid", " 1", NULL },
		{ "--pid", "+1", NULL }, { "-w", "0x10", NULL }, { "-w", "1e3", NULL },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		const char *argv[] = { "holdfast", "lock", "acquire", bad[i][0], bad[i][1], lock, NULL };
		int st = hft_cli(NULL, &err, argv);
		cr_assert_eq(st, 64, "%s '%s': exit %d: %s", bad[i][0], bad[i][1], st, err);
		free(err);
	}
	char token[64];
	uint64_t fence;
	acquire(token, &fence, NULL);
	char form[128], *err = NULL;
	snprintf(form, sizeof form, "%s %" PRIu64 "\nrm -rf /", token, fence);
	cr_assert_eq(release(form, &err), 64, "%s", err);
	free(err);
	snprintf(form, sizeof form, "%s %" PRIu64 "\n", token, fence);
	cr_assert_eq(release(form, &err), 0, "the form acquire printed: %s", err);
	free(err);
}

/* A lock being acquired (a directory whose record is not complete yet) is
 * another acquisition's: `check --fence N` and `check --token T` never call
 * it the caller's (a resource checking an old holder's fence before a write
 * would let it write while the next holder comes in). */
Test(cli, check_of_a_lock_being_acquired_is_never_yours)
{
	cr_assert_eq(mkdir(lock, 0700), 0);
	char *owner;
	cr_assert_gt(asprintf(&owner, "%s/owner", lock), 0);
	FILE *f = fopen(owner, "w");
	cr_assert(f);
	fputs("{\"tok", f); /* a record still being written */
	fclose(f);
	char *err;
	const char *fence[] = { "holdfast", "lock", "check", lock, "--fence", "5", NULL };
	cr_assert_eq(hft_cli(NULL, &err, fence), 1, "%s", err);
	free(err);
	const char *token[] = { "holdfast", "lock",   "check",
				lock,       "--token", "0123456789abcdef0123456789abcdef",
				NULL };
	cr_assert_eq(hft_cli(NULL, &err, token), 1, "%s", err);
	free(err);
	free(owner);
}

/* Issue 16: a keeper that cannot start (fork fails: EAGAIN, as under
 * RLIMIT_NPROC) fails the acquisition with 71 and holds nothing - before,
 * it said a warning and exited 0 with a lock no keeper held. */
Test(cli, no_keeper_no_lock)
{
	char *out, *err;
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	int st = hft_cli_env(&out, &err, "HOLDFAST_FAULTS=fail:fork:1:EAGAIN", NULL,
			     (const char *const[]){ "holdfast", "lock", "acquire", lock, "-n", "--pid",
						    pid, NULL });
	cr_assert_eq(st, 71, "exit %d: %s%s", st, out, err);
	cr_assert_str_eq(out, "", "no token is printed: %s", out);
	cr_assert(strstr(err, "no keeper could start") && strstr(err, lock) &&
		      strstr(err, "released again, nothing is held"),
		  "%s", err);
	cr_assert(!hft_exists(lock), "nothing is held");
	free(out);
	free(err);
	/* --json names it */
	st = hft_cli_env(&out, &err, "HOLDFAST_FAULTS=fail:fork:1:EAGAIN", NULL,
			 (const char *const[]){ "holdfast", "lock", "acquire", lock, "-n", "--pid", pid,
						"--json", NULL });
	cr_assert_eq(st, 71);
	cr_assert(strstr(out, "\"error\": \"no_keeper\"") || strstr(out, "\"error\":\"no_keeper\""),
		  "%s", out);
	cr_assert(!hft_exists(lock));
	free(out);
	free(err);
}

/* Issue 16: "TOKEN FENCE" whose fence is not the token's names no
 * acquisition: renew and release refuse it (exit 1, nothing changed) -
 * 0.2.0 renewed with any fence. The right pair still works. */
Test(cli, token_with_a_wrong_fence_renews_and_releases_nothing)
{
	char tok[64], pair[128], wrong[128];
	uint64_t f;
	acquire(tok, &f, NULL);
	snprintf(pair, sizeof pair, "%s %" PRIu64, tok, f);
	snprintf(wrong, sizeof wrong, "%s %" PRIu64, tok, f + 1);
	char *p = dl_path(lock, "owner"), *before = hft_slurp(p), *err;
	int st = hft_cli(NULL, &err, (const char *const[]){ "holdfast", "lock", "renew", lock,
							   "--token", wrong, NULL });
	cr_assert_eq(st, 1, "renew with a wrong fence: exit %d: %s", st, err);
	cr_assert(strstr(err, "refused") && strstr(err, lock), "%s", err);
	free(err);
	char *after = hft_slurp(p);
	cr_assert_str_eq(before, after, "nothing changed");
	cr_assert_eq(hft_cli(NULL, NULL, (const char *const[]){ "holdfast", "lock", "release", lock,
								"--token", wrong, NULL }),
		     1);
	cr_assert(hft_exists(lock), "not released");
	cr_assert_eq(hft_cli(NULL, NULL, (const char *const[]){ "holdfast", "lock", "renew", lock,
								"--token", pair, NULL }),
		     0);
	cr_assert_eq(release(pair, NULL), 0);
	free(p);
	free(before);
	free(after);
}

/* Issue 16: release of a lock whose record is unreadable says 65 (the
 * unreadable record), not 1 (another's), and releases nothing. */
Test(cli, release_of_an_unreadable_record_is_65)
{
	char tok[64];
	uint64_t f;
	acquire(tok, &f, NULL);
	char *p = dl_path(lock, "owner");
	FILE *w = fopen(p, "w");
	cr_assert_not_null(w);
	fputs("{not json", w);
	fclose(w);
	char *err;
	cr_assert_eq(release(tok, &err), 65, "%s", err);
	cr_assert(strstr(err, "unreadable") && strstr(err, lock), "%s", err);
	cr_assert(hft_exists(lock), "nothing released");
	free(err);
	free(p);
}

/* A held lock on a file system the acquirer cannot write (read-only here)
 * is refused for being held, naming the holder (exit 1), by acquire, run
 * and edit alike; a free name there is refused for the write (73, the
 * file system's error named). Issue 16, item 7. */
Test(cli, held_lock_on_a_read_only_file_system_names_the_holder)
{
	if (!hft_private_mounts())
		cr_skip_test("needs root and a mount namespace (unshare(CLONE_NEWNS))");
	char t[64];
	uint64_t f;
	acquire(t, &f, NULL);
	char *M = dl_path(dir, "M"), *F = dl_path(dir, "f"), *FL = dl_path(dir, "f.lock");
	const char *af[] = { "holdfast", "lock", "acquire", "-n", FL, "--pid", "1", NULL };
	char *ftok;
	cr_assert_eq(hft_cli(&ftok, NULL, af), 0);
	ftok[strcspn(ftok, " ")] = '\0';
	hft_write(F, "x\n");
	hft_bind_ro(dir, dir);
	char pid[32], *err;
	snprintf(pid, sizeof pid, "pid %d", (int)getpid());
	const char *a[] = { "holdfast", "lock", "acquire", "-n", lock, NULL };
	cr_assert_eq(hft_cli(NULL, &err, a), 1, "%s", err);
	cr_assert(strstr(err, lock) && strstr(err, pid) && !strstr(err, "Read-only"), "%s", err);
	free(err);
	const char *r[] = { "holdfast", "run", "-n", "--lock", lock, "--", "true", NULL };
	cr_assert_eq(hft_cli(NULL, &err, r), 1, "%s", err);
	cr_assert(strstr(err, lock) && strstr(err, pid), "%s", err);
	free(err);
	const char *e[] = { "holdfast", "edit", "-n", F, "--", "cat", NULL };
	cr_assert_eq(hft_cli(NULL, &err, e), 1, "%s", err);
	cr_assert(strstr(err, FL) && strstr(err, "pid 1 "), "%s", err);
	free(err);
	const char *m[] = { "holdfast", "lock", "acquire", "-n", M, NULL };
	cr_assert_eq(hft_cli(NULL, &err, m), 73, "%s", err);
	cr_assert(strstr(err, M) && strstr(err, "Read-only file system"), "%s", err);
	free(err);
	hft_unmount(dir);
	cr_assert_eq(release(t, NULL), 0);
	const char *rf[] = { "holdfast", "lock", "release", FL, "--token", ftok, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, rf), 0, "its keeper ends with it");
	free(ftok);
	free(M);
	free(F);
	free(FL);
}

/* DL19: a lock directory holding a subdirectory (a user's or a tool's:
 * holdfast never makes one) is neither reaped nor released. An acquirer
 * over its dead owner is refused at once (65, the subdirectory named; a
 * wait does not wait for a human), and L stays as it was with no claim left
 * beside it; its owner's release is refused the same way. Once the
 * subdirectory is gone, the dead owner's lock is reaped as usual. 0.2.0
 * said 71 "Directory not empty" and left the directory in a claim. */
Test(cli, lock_directory_with_a_subdirectory_is_refused_and_left_as_it_was)
{
	char t[64], t2[64];
	uint64_t f, f2;
	pid_t life = acquire_for_a_life(t, &f);
	char *sub = dl_path(lock, "sub"), *state = dl_path(dir, "L.holdfast");
	cr_assert_eq(mkdir(sub, 0700), 0);
	char *err;
	cr_assert_eq(release(t, &err), 65, "%s", err);
	cr_assert(strstr(err, "subdirectory") && strstr(err, lock), "%s", err);
	free(err);
	dl_kill(life);
	const char *n[] = { "holdfast", "lock", "acquire", "-n", lock, NULL };
	const char *w[] = { "holdfast", "lock", "acquire", "-w", "600", lock, NULL };
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(hft_cli(NULL, &err, i ? w : n), 65, "%s", err);
		cr_assert(strstr(err, "subdirectory") && strstr(err, lock), "%s", err);
		free(err);
		cr_assert(hft_exists(sub), "the user's subdirectory stays");
		char *rec = dl_path(lock, "owner"), *s = hft_slurp(rec);
		cr_assert(s && strstr(s, t), "the record stays at L: %s", s ? s : "(none)");
		free(s);
		free(rec);
		cr_assert_eq(hft_count_prefix(state, "c-"), 0, "no claim left beside L");
	}
	cr_assert_eq(rmdir(sub), 0);
	acquire(t2, &f2, "-n");
	cr_assert_gt(f2, f);
	cr_assert_eq(release(t2, NULL), 0);
	free(sub);
	free(state);
}

/* --- explicit lifetimes: leases (OW6) and kept records (OW7, K5) ------------ */

static bool pid_namespaces_allowed(void)
{
	return hft_sh(NULL, NULL, "sh", NULL, "unshare --pid --fork true") == 0;
}

/* `lock status L` in words. */
static char *status_words(void)
{
	char *out;
	const char *st[] = { "holdfast", "lock", "status", lock, NULL };
	cr_assert_eq(hft_cli(&out, NULL, st), 0);
	return out;
}

/* A lease is held by no process: taken inside a pid namespace that is gone
 * once the acquire returns (its every process ended, so its kernel lock is
 * free and its pids mean nothing here: without the lease the next acquirer
 * reaps it at once), it stays held until its length has passed, measured
 * from before the acquisition on the monotonic clock. */
Test(cli, lease_is_held_by_no_process_until_it_expires)
{
	if (!pid_namespaces_allowed())
		cr_skip_test("unshare --pid is not allowed here");
	int64_t t0 = hf_sys_mono_ns();
	char script[1024], *out, *err;
	snprintf(script, sizeof script,
		 "unshare --pid --fork sh -c '\"$HOLDFAST_BIN\" lock acquire --lease 2s %s'", lock);
	cr_assert_eq(hft_sh(&out, &err, "sh", NULL, script), 0, "%s", err);
	char token[64];
	cr_assert_eq(sscanf(out, "%63s", token), 1, "%s", out);
	free(out);
	free(err);
	const char *js[] = { "holdfast", "lock", "status", lock, "--json", NULL };
	cr_assert_eq(hft_cli(&out, NULL, js), 0);
	json_t *j = json_loads(out, 0, NULL);
	cr_assert_not_null(j, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "held", "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(j, "lease_ms")), 2000, "%s", out);
	cr_assert_null(json_object_get(j, "kept"), "a lease is kept by nobody: %s", out);
	json_decref(j);
	free(out);
	const char *try[] = { "holdfast", "lock", "acquire", lock, "-n", NULL };
	int64_t before_try = hf_sys_mono_ns();
	int st = hft_cli(NULL, &err, try);
	if (hf_sys_mono_ns() - t0 < 2000000000LL) { /* else the lease may be over: no verdict */
		cr_assert_eq(st, 1, "the lease holds it: %s", err);
		cr_assert_not_null(strstr(err, "a lease of 2 s"), "the holder is named: %s", err);
	}
	(void)before_try;
	free(err);
	out = status_words();
	cr_assert(strstr(out, "a lease of 2 s"), "%s", out);
	free(out);
	/* it expires: a waiter gets it, and never before the 2 s were over */
	const char *wait[] = { "holdfast", "lock", "acquire", lock, "-w", "20", NULL };
	cr_assert_eq(hft_cli(&out, &err, wait), 0, "%s", err);
	cr_assert_geq(hf_sys_mono_ns() - t0, 2000000000LL, "taken before the lease ended");
	free(out);
	free(err);
}

/* `lock renew` restarts a lease; one that expired and that nobody took yet
 * renews too (its record is still at L: nobody entered). */
Test(cli, renew_restarts_an_expired_lease_nobody_took)
{
	char t[64];
	uint64_t f;
	acquire(t, &f, "--lease=1s");
	const char *chk[] = { "holdfast", "lock", "check", lock, NULL };
	int st = 0;
	for (int i = 0; i < 400 && (st = hft_cli(NULL, NULL, chk)) == 0; i++) {
		struct timespec ts = { 0, 10 * 1000000L }; /* a poll, bounded: no verdict rests on it */
		nanosleep(&ts, NULL);
	}
	cr_assert_eq(st, 69, "an expired lease is no holder");
	char *out = status_words();
	cr_assert_eq(strncmp(out, "stale (lease expired)", 21), 0, "%s", out);
	free(out);
	const char *renew[] = { "holdfast", "lock", "renew", lock, "--token", t, NULL };
	char *err;
	cr_assert_eq(hft_cli(NULL, &err, renew), 0, "%s", err);
	free(err);
	cr_assert_eq(hft_cli(NULL, NULL, chk), 0, "held again after the renewal");
	cr_assert_eq(release(t, NULL), 0);
}

Test(cli, lease_usage_is_checked)
{
	const char *cases[][9] = {
		{ "holdfast", "lock", "acquire", "X", "--lease", "500ms", NULL },
		{ "holdfast", "lock", "acquire", "X", "--lease", "366d", NULL },
		{ "holdfast", "lock", "acquire", "X", "--lease", "soon", NULL },
		{ "holdfast", "lock", "acquire", "X", "--lease", "1m", "--pid", "1", NULL },
		{ "holdfast", "lock", "renew", "X", "--token", "t", "--lease", "1m", NULL },
	};
	for (size_t i = 0; i < HF_ARRAY_SIZE(cases); i++) {
		char *err;
		cr_assert_eq(hft_cli(NULL, &err, cases[i]), 64, "case %zu", i);
		cr_assert_not_null(strstr(err, "lease"), "case %zu names the lease: %s", i, err);
		free(err);
	}
	char *err;
	const char *acq[] = { "holdfast", "lock", "acquire", lock, NULL };
	cr_assert_eq(hft_cli_env(NULL, &err, "HOLDFAST_LEASE=forever", NULL, acq), 64);
	cr_assert_not_null(strstr(err, "HOLDFAST_LEASE"), "%s", err);
	free(err);
	struct stat sb;
	cr_assert_eq(stat(lock, &sb), -1, "nothing was taken");
	/* HOLDFAST_LEASE is the default lifetime of a detached acquire */
	char *out;
	cr_assert_eq(hft_cli_env(&out, &err, "HOLDFAST_LEASE=90s", NULL, acq), 0, "%s", err);
	free(out);
	free(err);
	char *p = dl_path(lock, "owner"), *rec = hft_slurp(p);
	cr_assert_not_null(strstr(rec, "\"lease_ms\":90000"), "%s", rec);
	free(rec);
	free(p);
}

/* A child of this test other than not: the keeper (we are its subreaper). */
static pid_t keeper_child(pid_t not)
{
	pid_t kids[8];
	int n = hft_children(getpid(), kids, 8);
	for (int i = 0; i < n && i < 8; i++)
		if (kids[i] != not)
			return kids[i];
	cr_assert_fail("no keeper among our %d children", n);
	return -1;
}

/* OW7: a keeper SIGKILLed while its owner lives drops the directory's
 * kernel lock. A judge in another pid namespace, for whom the owner's pid
 * means nothing, must not take that for the owner's death: the record says
 * it is kept, so it is held until its max-hold. In the owner's own pid
 * namespace its pid decides: held while it lives, taken at once after. */
Test(cli, killed_keeper_never_lets_a_judge_in_another_pid_namespace_in)
{
	if (!pid_namespaces_allowed())
		cr_skip_test("unshare --pid is not allowed here");
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	char t[64];
	uint64_t f;
	pid_t life = acquire_for_a_life(t, &f);
	char *p = dl_path(lock, "owner"), *rec = hft_slurp(p);
	cr_assert_not_null(strstr(rec, "\"kept\":true"), "%s", rec);
	free(rec);
	free(p);
	pid_t k = keeper_child(life);
	kill(k, SIGKILL);
	cr_assert_eq(hft_exit_within(k, 5000), 128 + SIGKILL);
	char script[1024], *err;
	snprintf(script, sizeof script,
		 "unshare --pid --fork sh -c '\"$HOLDFAST_BIN\" lock acquire -n %s; st=$?; exit $st'",
		 lock);
	cr_assert_eq(hft_sh(NULL, &err, "sh", NULL, script), 1,
		     "a judge in another pid namespace took a live owner's lock: %s", err);
	cr_assert_not_null(strstr(err, "held by"), "%s", err);
	free(err);
	char *out = status_words();
	cr_assert_eq(strncmp(out, "held:", 5), 0, "%s", out);
	free(out);
	dl_kill(life);
	char t2[64];
	uint64_t f2;
	acquire(t2, &f2, "-n"); /* our namespace: its pid proves it dead */
	cr_assert_gt(f2, f);
	cr_assert_eq(release(t2, NULL), 0);
}

/* K5: when the owner ends, its keeper releases the lock - so judges that
 * cannot see the owner's pid (another pid namespace: OW7 keeps a kept
 * record until its max-hold) need not wait. */
Test(cli, keeper_releases_the_lock_when_its_owner_ends)
{
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	char t[64];
	uint64_t f;
	pid_t life = acquire_for_a_life(t, &f);
	pid_t k = keeper_child(life);
	dl_kill(life);
	int code = hft_exit_within(k, 10000);
	if (code < 0) {
		kill(k, SIGKILL);
		waitpid(k, NULL, 0);
	}
	cr_assert_eq(code, 0, "the keeper ended with its owner");
	char *out = status_words();
	cr_assert_eq(strncmp(out, "free", 4), 0, "released, not left for a judge: %s", out);
	free(out);
}
