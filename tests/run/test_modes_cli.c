/* Shared and slot holders from the callers, as users call them: readers
 * from sh, bash, python3 (subprocess) and node (child_process) holding
 * `lock acquire --shared` at once while a writer waits; a reader after the
 * waiting writer queuing behind it; `run --slots 2` admitting two; a
 * SIGKILLed reader's place coming back at once; a reader in another pid
 * namespace judged from outside (cmd_lock.c, cmd_run.c; the protocol:
 * dirlock.c DS1-DS5, SM1-SM6, fs_backend.c FB4). Coordination by fifos and
 * named pause points, never sleeps. */
#include "rt.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

HFT_SCRATCH_SUITE(modes_cli, 90);

/* A reader script: takes L shared (detached: held for its own process, the
 * caller's next step), says "held TOKEN FENCE", waits on its fifo F, then
 * releases by token. */
static const char reader_sh[] =
	"t=$(\"$HOLDFAST_BIN\" lock acquire \"$L\" --shared -w 30) || exit 9\n"
	"echo \"held $t\"\n"
	"read x < \"$F\"\n"
	"\"$HOLDFAST_BIN\" lock release \"$L\" --token \"$t\" || exit 8\n";
static const char reader_py[] =
	"import os, subprocess\n"
	"e = os.environ\n"
	"t = subprocess.run([e['HOLDFAST_BIN'], 'lock', 'acquire', e['L'], '--shared', '-w', '30'],\n"
	"                   stdout=subprocess.PIPE, check=True).stdout.decode().strip()\n"
	"print('held ' + t, flush=True)\n"
	"open(e['F']).read()\n"
	"subprocess.run([e['HOLDFAST_BIN'], 'lock', 'release', e['L'], '--token', t], check=True)\n";
static const char reader_js[] =
	"const cp = require('child_process'), fs = require('fs'), e = process.env;\n"
	"const t = cp.execFileSync(e.HOLDFAST_BIN, ['lock', 'acquire', e.L, '--shared', '-w', "
	"'30']).toString().trim();\n"
	"process.stdout.write('held ' + t + '\\n');\n"
	"fs.readFileSync(e.F);\n"
	"cp.execFileSync(e.HOLDFAST_BIN, ['lock', 'release', e.L, '--token', t]);\n";

struct reader {
	const char *prog, *file; /* the interpreter, the script's name in dir */
	const char *text;
	struct hft_child c;
	char *fifo;
	uint64_t fence;
};

static bool have(const char *prog)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null", prog);
	return hft_sh(NULL, NULL, "sh", NULL, cmd) == 0;
}

/* Start reader r on lock L and wait until it holds (its "held" line). */
static void reader_start(struct reader *r, const char *L)
{
	char *script = rt_path(dir, r->file);
	hft_write(script, r->text);
	r->fifo = rt_path(dir, r->file);
	r->fifo = realloc(r->fifo, strlen(r->fifo) + 6);
	strcat(r->fifo, ".fifo");
	cr_assert_eq(mkfifo(r->fifo, 0600), 0);
	char env[1024];
	snprintf(env, sizeof env, "L=%s;F=%s;HOLDFAST_BIN=%s", L, r->fifo, hft_bin());
	hft_spawn_cmd(&r->c, (const char *const[]){ r->prog, script, NULL }, env);
	char *line = rt_line(r->c.out_rd);
	cr_assert_not_null(line, "%s: no line (it could not take L shared)", r->prog);
	char tok[64];
	unsigned long long f = 0;
	cr_assert_eq(sscanf(line, "held %63s %llu", tok, &f), 2, "%s said '%s'", r->prog, line);
	r->fence = f;
	free(line);
	free(script);
}

/* Let reader r release and end: its exit code. */
static int reader_end(struct reader *r)
{
	int w = open(r->fifo, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(w, 0);
	cr_assert_eq(write(w, "x\n", 2), 2);
	close(w);
	char *err = NULL;
	int rc = hft_collect(r->c.pid, r->c.out_rd, r->c.err_rd, NULL, &err);
	cr_assert_eq(rc, 0, "%s ended %d: %s", r->prog, rc, err ? err : "");
	free(err);
	free(r->fifo);
	return rc;
}

static char *status_text(const char *L)
{
	char *out = NULL;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("lock", "status", L)), 0);
	return out;
}

static int count_lines(const char *text, const char *prefix)
{
	int n = 0;
	size_t pl = strlen(prefix);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += !strncmp(p, prefix, pl);
	return n;
}

Test(modes_cli, readers_from_four_callers_share_a_writer_waits_for_the_last_and_a_late_reader_waits_behind_it)
{
	if (!have("python3") || !have("node") || !have("bash"))
		cr_skip_test("needs python3, node and bash");
	char *L = rt_path(dir, "L");
	struct reader r[] = {
		{ .prog = "sh", .file = "r-sh", .text = reader_sh },
		{ .prog = "bash", .file = "r-bash", .text = reader_sh },
		/* Debian's, not a version manager's shim (seconds to start) */
		{ .prog = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3",
		  .file = "r.py", .text = reader_py },
		{ .prog = "node", .file = "r.js", .text = reader_js },
	};
	size_t n = sizeof r / sizeof r[0];
	uint64_t top = 0;
	for (size_t i = 0; i < n; i++) {
		reader_start(&r[i], L); /* each while the others hold */
		top = r[i].fence > top ? r[i].fence : top;
	}
	char *st = status_text(L);
	cr_assert_eq(count_lines(st, "held: "), 4, "four holders at once:\n%s", st);
	cr_assert(strstr(st, "(shared)"), "%s", st);
	free(st);

	/* the writer: exclusive, for a process that lives until we close */
	int owner_end;
	pid_t owner = hft_fork_until_closed(&owner_end);
	char opid[16];
	snprintf(opid, sizeof opid, "%d", (int)owner);
	struct hft_child w;
	hft_spawn_cli(&w, "pause:dirlock.share.draining:1",
		      RT_ARGV("lock", "acquire", L, "-w", "60", "--pid", opid), NULL);
	hft_expect(&w, "dirlock.share.draining"); /* at L, the readers to drain */
	hft_go(&w);

	/* a reader now: refused at once naming the waiting writer, or queued */
	char *err = NULL, me[16];
	snprintf(me, sizeof me, "%d", (int)getpid());
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("lock", "acquire", L, "--shared", "-n", "--pid", me)),
		     1);
	cr_assert(strstr(err, "(waiting, exclusive)") && strstr(err, opid), "%s", err);
	free(err);
	struct hft_child late;
	hft_spawn_cmd(&late,
		      (const char *const[]){ hft_bin(), "run", "--lock", L, "--shared", "-w", "60", "--",
					     "sh", "-c", "echo in $HOLDFAST_FENCE", NULL },
		      NULL);

	for (size_t i = 0; i + 1 < n; i++) {
		reader_end(&r[i]);
		cr_assert_eq(hft_exit_within(w.pid, 0), -1, "the writer is still out after %s left",
			     r[i].prog);
	}
	st = status_text(L);
	cr_assert_eq(count_lines(st, "waiting: "), 1, "the writer waits at L:\n%s", st);
	cr_assert_eq(count_lines(st, "held: "), 1, "behind the last reader:\n%s", st);
	free(st);
	reader_end(&r[n - 1]);
	char *out = NULL;
	cr_assert_eq(hft_collect(w.pid, w.out_rd, w.err_rd, &out, NULL), 0,
		     "the writer got it once the last reader left");
	unsigned long long wf = 0;
	char tok[64];
	cr_assert_eq(sscanf(out, "%63s %llu", tok, &wf), 2, "%s", out);
	cr_assert_gt(wf, top, "its fence is above every reader's");
	free(out);
	close(w.notify_rd);
	close(w.go_wr);

	/* the late reader waits behind the writer, and enters after it */
	cr_assert_eq(hft_exit_within(late.pid, 0), -1, "the late reader waits for the writer");
	close(owner_end);
	cr_assert_eq(waitpid(owner, NULL, 0), owner);
	char *line = rt_line(late.out_rd);
	cr_assert_not_null(line);
	unsigned long long lf = 0;
	cr_assert_eq(sscanf(line, "in %llu", &lf), 1, "%s", line);
	cr_assert_gt(lf, wf, "after the writer: above its fence");
	free(line);
	cr_assert_eq(hft_collect(late.pid, late.out_rd, late.err_rd, NULL, NULL), 0);
	st = status_text(L);
	cr_assert_eq(strcmp(st, "free\n"), 0, "%s", st);
	free(st);
	free(L);
}

/* `run --slots 2 -- CMD` three times: two run, the third waits for a
 * place and runs when one ends. */
Test(modes_cli, slots_2_admit_two_runs_and_the_third_waits)
{
	char *L = rt_path(dir, "L");
	struct hft_child c[3];
	char *fifo[3];
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof name, "f%d", i);
		fifo[i] = rt_path(dir, name);
		cr_assert_eq(mkfifo(fifo[i], 0600), 0);
		const char *const argv[] = { "holdfast", "run", "--lock", L, "--slots", "2", "-w", "60",
					     "--", "sh", "-c", "echo in; read x < \"$0\"", fifo[i],
					     NULL };
		hft_spawn_cli(&c[i], i == 2 ? "pause:dirlock.share.draining:1" : "", argv, NULL);
		if (i < 2) {
			char *line = rt_line(c[i].out_rd);
			cr_assert_str_eq(line ? line : "", "in", "run %d got a slot", i);
			free(line);
		}
	}
	hft_expect(&c[2], "dirlock.share.draining"); /* both slots taken: it waits */
	hft_go(&c[2]);
	char *st = status_text(L);
	cr_assert_eq(count_lines(st, "held: "), 2, "%s", st);
	cr_assert(strstr(st, "(slots 2)"), "%s", st);
	cr_assert_eq(count_lines(st, "waiting: "), 1, "%s", st);
	free(st);
	cr_assert_eq(hft_exit_within(c[2].pid, 0), -1);
	for (int i = 0; i < 3; i++) {
		if (i == 2) {
			char *line = rt_line(c[2].out_rd);
			cr_assert_str_eq(line ? line : "", "in", "the third ran once a slot came back");
			free(line);
		}
		int w = open(fifo[i], O_WRONLY | O_CLOEXEC);
		cr_assert_geq(w, 0);
		cr_assert_eq(write(w, "x\n", 2), 2);
		close(w);
		cr_assert_eq(hft_wait(&c[i]), 0);
		free(fifo[i]);
	}
	free(L);
}

/* A reader SIGKILLed - a bash script holding through a keeper, and a
 * `run --shared` killed with its CMD - gives its place back at once: the
 * next exclusive acquisition (-n) succeeds. */
Test(modes_cli, a_sigkilled_reader_frees_its_place_at_once)
{
	char *L = rt_path(dir, "L");
	struct reader r = { .prog = "bash", .file = "r-bash", .text = reader_sh };
	reader_start(&r, L);
	char me[16];
	snprintf(me, sizeof me, "%d", (int)getpid());
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "acquire", L, "-n", "--pid", me)), 1,
		     "held by the reader");
	char *st = status_text(L);
	cr_assert(strstr(st, "(shared)"), "a shared holder:\n%s", st);
	free(st);
	cr_assert_eq(kill(r.c.pid, SIGKILL), 0);
	cr_assert_eq(hft_collect(r.c.pid, r.c.out_rd, r.c.err_rd, NULL, NULL), 128 + SIGKILL);
	char *out = NULL;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("lock", "acquire", L, "-n", "--pid", me)), 0,
		     "the killed reader's place is free at once");
	char tok[64];
	cr_assert_eq(sscanf(out, "%63s", tok), 1);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", L, "--token", tok)), 0);
	free(out);
	free(r.fifo);

	/* run --shared, killed (holdfast and CMD, its process group). CMD is
	 * the record's owner (RUN1), and holdfast's exit is not CMD's: the
	 * SIGKILL reaches both, but each exits when the scheduler runs it, and
	 * until then /proc shows CMD alive. So the test is CMD's subreaper
	 * (orphaned by holdfast's death, it becomes our child) and collects it
	 * before it asks: the owner gone, not merely its supervisor. */
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	char *fifo = rt_path(dir, "g");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	struct hft_child c;
	hft_spawn_cli(&c, "",
		      RT_ARGV("run", "--lock", L, "--shared", "--", "sh", "-c",
			      "echo in $$; read x < \"$0\"", fifo),
		      NULL);
	char *line = rt_line(c.out_rd);
	int cmd = 0;
	cr_assert(line && sscanf(line, "in %d", &cmd) == 1 && cmd > 0, "CMD said '%s'",
		  line ? line : "");
	free(line);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "acquire", L, "-n", "--pid", me)), 1);
	st = status_text(L);
	cr_assert(strstr(st, "(shared)"), "a shared holder:\n%s", st);
	free(st);
	cr_assert_eq(kill(-c.pid, SIGKILL), 0);
	cr_assert_eq(hft_wait(&c), 128 + SIGKILL);
	int cst;
	pid_t w;
	do
		w = waitpid(cmd, &cst, 0);
	while (w < 0 && errno == EINTR);
	cr_assert_eq(w, cmd, "waitpid CMD %d: %s", cmd, strerror(errno));
	cr_assert(WIFSIGNALED(cst) && WTERMSIG(cst) == SIGKILL, "CMD ended with status %#x", cst);
	out = NULL;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("lock", "acquire", L, "-n", "--pid", me)), 0,
		     "the killed run's place is free at once");
	cr_assert_eq(sscanf(out, "%63s", tok), 1);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", L, "--token", tok)), 0);
	free(out);
	free(fifo);
	free(L);
}

/* A reader in another pid namespace, judged from outside: live while it
 * lives (its pid means nothing here; its kernel lock is the proof), dead
 * once its namespace is killed. */
Test(modes_cli, a_reader_in_another_pid_namespace_is_live_then_dead)
{
	if (geteuid() != 0 ||
	    hft_sh(NULL, NULL, "sh", NULL, "unshare --pid --fork --mount-proc true") != 0)
		cr_skip_test("needs unshare --pid --fork --mount-proc (root)");
	char *L = rt_path(dir, "L"), *fifo = rt_path(dir, "go"), *script = rt_path(dir, "r.sh");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	hft_write(script, reader_sh);
	char env[1024];
	snprintf(env, sizeof env, "L=%s;F=%s;HOLDFAST_BIN=%s", L, fifo, hft_bin());
	struct hft_child c;
	hft_spawn_cmd(&c, (const char *const[]){ "unshare", "--pid", "--fork", "--kill-child",
						 "--mount-proc", "sh", script, NULL },
		      env);
	char *line = rt_line(c.out_rd);
	cr_assert(line && !strncmp(line, "held ", 5), "%s", line ? line : "(nothing)");
	free(line);
	char me[16];
	snprintf(me, sizeof me, "%d", (int)getpid());
	char *err = NULL;
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("lock", "acquire", L, "-n", "--pid", me)), 1,
		     "live: refused from outside");
	cr_assert(strstr(err, "(shared)"), "%s", err);
	free(err);
	char *out = NULL, tok[64];
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("lock", "acquire", L, "--shared", "-n", "--pid", me)),
		     0, "another reader outside shares with it");
	cr_assert_eq(sscanf(out, "%63s", tok), 1);
	free(out);
	cr_assert_eq(kill(hft_only_child(c.pid), SIGKILL), 0); /* its namespace's init */
	hft_wait(&c);
	out = NULL;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("lock", "status", L)), 0);
	cr_assert_eq(count_lines(out, "held: "), 1, "only ours is held:\n%s", out);
	cr_assert_eq(count_lines(out, "stale (owner dead): "), 1, "the killed one is dead:\n%s", out);
	free(out);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", L, "--token", tok)), 0);
	out = NULL;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("lock", "acquire", L, "-n", "--pid", me)), 0,
		     "an exclusive acquirer reaps the dead reader at once");
	cr_assert_eq(sscanf(out, "%63s", tok), 1);
	free(out);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", L, "--token", tok)), 0);
	free(L);
	free(fifo);
	free(script);
}

/* The words: usage errors name the option (64); check --fence finds the
 * second of two shared holders; list has a row per holder. */
Test(modes_cli, usage_check_fence_and_list_name_every_holder)
{
	char *L = rt_path(dir, "L"), *err = NULL, me[16];
	snprintf(me, sizeof me, "%d", (int)getpid());
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("lock", "acquire", L, "--shared", "--slots", "2")), 64);
	cr_assert(strstr(err, "--shared and --slots"), "%s", err);
	free(err);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("lock", "acquire", L, "--slots", "1025")), 64);
	cr_assert(strstr(err, "--slots 1025"), "%s", err);
	free(err);
	cr_assert_eq(hft_cli(NULL, &err, RT_ARGV("run", "--slots", "0", "--lock", L, "--", "true")), 64);
	cr_assert(strstr(err, "--slots 0"), "%s", err);
	free(err);
	char *o1 = NULL, *o2 = NULL, t1[64], t2[64];
	unsigned long long f1, f2;
	cr_assert_eq(hft_cli(&o1, NULL, RT_ARGV("lock", "acquire", L, "--shared", "--pid", me)), 0);
	cr_assert_eq(hft_cli(&o2, NULL, RT_ARGV("lock", "acquire", L, "--shared", "--pid", me)), 0);
	cr_assert_eq(sscanf(o1, "%63s %llu", t1, &f1), 2);
	cr_assert_eq(sscanf(o2, "%63s %llu", t2, &f2), 2);
	char fs[32];
	snprintf(fs, sizeof fs, "%llu", f2);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "check", L, "--fence", fs)), 0,
		     "the second holder's fence holds too");
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "check", L, "--token", t2)), 0);
	char *out = NULL;
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("list", dir)), 0);
	cr_assert_eq(count_lines(out, "lock held,shared "), 2, "%s", out);
	free(out);
	cr_assert_eq(hft_cli(&out, NULL, RT_ARGV("lock", "status", L, "-v")), 0);
	cr_assert(strstr(out, t1) && strstr(out, t2), "-v names both tokens: %s", out);
	free(out);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "renew", L, "--token", t2)), 0);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", L, "--token", t1)), 0);
	cr_assert_eq(hft_cli(NULL, NULL, RT_ARGV("lock", "release", L, "--token", t2)), 0);
	free(o1);
	free(o2);
	free(L);
}
