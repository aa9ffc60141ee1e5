/* Stress with the callers' idioms (issue 16): K callers at once take one
 * lock the way real programs call holdfast - a make recipe (acquire on one
 * line, the work on the next, release on a third), python3's
 * subprocess.run(shell=True), xargs in a bash script, and an agent's
 * separate `bash -c` tool calls - each lock held by a keeper tied to the
 * caller's chain (keeper.c, owner_find.c O4/O5). Some holders are SIGKILLed
 * in their work: the work process alone (its caller then fails and ends),
 * or the caller's whole process group; either way the lock is reaped once
 * the chain is dead and the next holder enters.
 *
 * The work (work.sh, the overlap detector): mkdir the mark D/in, write
 * "pid starttime" into it, increment D/count by read-then-write, append to
 * D/entries, then remove the mark. A mark found already there belongs to
 * another holder: if that process lives (same pid and start time, not a
 * zombie), or its mark is not complete yet, that is an overlap (D/ovl);
 * a mark of a dead process is a killed holder's, taken over (D/stale). A
 * victim announces "pid slot" on the FIFO D/victim from inside and blocks
 * on the FIFO D/never; the test kills it there. No sleeps: the test reacts
 * to the announcements and to each caller's end (EOF on its stdout).
 *
 * Asserted: 0 overlaps, D/count equals the lines of D/entries (no lost
 * increment), every caller that was not a victim exited 0, every victim's
 * mark was taken over or cleared, and the lock is free or reapable at the
 * end. The
 * number of acquisitions is reported. HF_STRESS_SCALE=PERCENT scales the
 * rounds (the ASan build: 25 %; `make check-long`: 500 %). */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;
/* the slots' idioms: each of the four, and the cheap ones (make, xargs: no
 * Python to start) twice */
enum { SLOTS = 6 };
static const int slot_idiom[SLOTS] = { 0, 1, 2, 3, 0, 2 };
static struct slot {
	struct hft_child c;
	bool running;
	bool victim;   /* this cycle is killed in its work             */
	int cycles;    /* started so far                               */
	int idiom;
} slots[SLOTS];

static void setup(void)
{
	dir = hft_tmpdir();
	memset(slots, 0, sizeof slots);
}

static void teardown(void)
{
	/* a test that failed half way: every caller's group goes (a victim
	 * blocked on D/never among them); their keepers end with them */
	for (int i = 0; i < SLOTS; i++)
		if (slots[i].running) {
			kill(-slots[i].c.pid, SIGKILL);
			waitpid(slots[i].c.pid, NULL, 0);
			close(slots[i].c.out_rd);
			close(slots[i].c.err_rd);
		}
	hft_rmtree(dir);
	free(dir);
}

TestSuite(callers_stress, .init = setup, .fini = teardown, .timeout = 180);

/* The critical section. $1 = victim: announce and block inside. */
static const char work_sh[] =
	"set -u\n"
	"st() { cut -d' ' -f3,22 /proc/$1/stat 2>/dev/null; }\n"
	"ovl() { echo \"overlap: $1\" >> \"$D/ovl\"; }\n"
	"me=\"$$ $(st $$ | cut -d' ' -f2)\"\n"
	"if ! mkdir \"$D/in\" 2>/dev/null; then\n"
	"  o=$(cat \"$D/in/who\" 2>/dev/null) || o=\n"
	"  p=${o%% *}; s=${o#* }\n"
	"  now=$(st \"$p\")\n"
	"  if [ -z \"$o\" ] || { [ -n \"$now\" ] && [ \"${now%% *}\" != Z ] && [ \"${now#* }\" = \"$s\" ]; }; then\n"
	"    ovl \"$me entered while ${o:-a holder making its mark} was in\"\n"
	"  else\n"
	"    echo \"$o\" >> \"$D/stale\"\n"
	"  fi\n"
	"fi\n"
	"{ echo \"$me\" > \"$D/in/who\"; } 2>/dev/null || ovl \"$me: its mark was removed by another\"\n"
	"n=$(cat \"$D/count\"); echo $((n + 1)) > \"$D/count\"\n"
	"echo \"$me\" >> \"$D/entries\"\n"
	"if [ \"${1:-}\" = victim ]; then echo \"$$ $SLOT\" > \"$D/victim\"; read x < \"$D/never\"; fi\n"
	"rm -f \"$D/in/who\"; rmdir \"$D/in\" 2>/dev/null || ovl \"$me: its mark was changed by another\"\n";

/* Each idiom: acquire (waiting, bounded), work, release with the token. */
static const char makefile[] =
	"all:\n"
	"\t\"$$H\" lock acquire -w 60 \"$$L\" > \"$$T\"\n"
	"\tsh \"$$D/work.sh\" $$V\n"
	"\t\"$$H\" lock release \"$$L\" --token \"$$(cat \"$$T\")\"\n";

static const char python_py[] =
	"import subprocess\n"
	"def sh(line):\n"
	"    subprocess.run(line, shell=True, check=True)\n"
	"sh('\"$H\" lock acquire -w 60 \"$L\" > \"$T\"')\n"
	"sh('sh \"$D/work.sh\" $V')\n"
	"sh('\"$H\" lock release \"$L\" --token \"$(cat \"$T\")\"')\n";

static const char xargs_sh[] =
	"set -e\n"
	"echo \"$L\" | xargs \"$H\" lock acquire -w 60 > \"$T\"\n"
	"sh \"$D/work.sh\" $V\n"
	"echo \"$L\" | xargs -I{} \"$H\" lock release {} --token \"$(cat \"$T\")\"\n";

/* an agent: each step a tool call of its own, a fresh `bash -c` */
static const char agent_py[] =
	"import subprocess\n"
	"def tool(cmd):\n"
	"    subprocess.run(['bash', '-c', cmd], check=True, stdout=subprocess.DEVNULL)\n"
	"tool('\"$H\" lock acquire -w 60 \"$L\" > \"$T\"')\n"
	"tool('sh \"$D/work.sh\" $V')\n"
	"tool('\"$H\" lock release \"$L\" --token \"$(cat \"$T\")\"')\n";

static const char *const idiom_names[] = { "make", "python3 shell=True", "xargs", "agent bash -c" };

static char *path_in(const char *name)
{
	return dl_path(dir, name);
}

static void start(struct slot *s, int slot, int cycle, bool victim)
{
	char *env, *mk = path_in("Makefile"), *py = path_in("python.py"), *xa = path_in("xargs.sh"),
		   *ag = path_in("agent.py");
	cr_assert_geq(asprintf(&env, "H=%s;L=%s/L;D=%s;T=%s/tok.%d.%d;V=%s;SLOT=%d", hft_bin(), dir,
			       dir, dir, slot, cycle, victim ? "victim" : "", slot),
		      0);
	s->victim = victim;
	s->running = true;
	switch (s->idiom) {
	case 0:
		hft_spawn_cmd(&s->c, (const char *const[]){ "make", "-s", "-f", mk, NULL }, env);
		break;
	case 1:
		hft_spawn_cmd(&s->c, (const char *const[]){ "python3", py, NULL }, env);
		break;
	case 2:
		hft_spawn_cmd(&s->c, (const char *const[]){ "bash", xa, NULL }, env);
		break;
	default:
		hft_spawn_cmd(&s->c, (const char *const[]){ "python3", ag, NULL }, env);
		break;
	}
	free(env);
	free(mk);
	free(py);
	free(xa);
	free(ag);
}

static int lines_of(const char *name)
{
	char *p = path_in(name), *t = hft_slurp(p);
	int n = 0;
	for (char *c = t; c && *c; c++)
		n += *c == '\n';
	free(t);
	free(p);
	return n;
}

Test(callers_stress, every_idiom_at_once_with_killed_holders)
{
	struct {
		const char *name, *text;
	} files[] = { { "work.sh", work_sh },	  { "Makefile", makefile }, { "python.py", python_py },
		      { "xargs.sh", xargs_sh }, { "agent.py", agent_py },  { "count", "0\n" } };
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		char *p = path_in(files[i].name);
		hft_write(p, files[i].text);
		free(p);
	}
	char *vf = path_in("victim"), *nf = path_in("never");
	cr_assert_eq(mkfifo(vf, 0600), 0);
	cr_assert_eq(mkfifo(nf, 0600), 0);
	/* read-write: the victims' opens never wait for a reader */
	int vfd = open(vf, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(vfd, 0);

	/* cycles per slot: 4 (24 acquisitions; 2 under ASan, where a holdfast
	 * costs ~215 ms; `make check-long` runs 20: HF_STRESS_SCALE=500);
	 * every 4th cycle overall is a victim, killed alternately as its work
	 * process alone and as its caller's whole group */
	int per_slot = dl_scaled(40) / 10;
	if (per_slot < 2)
		per_slot = 2;
	int started = 0, victims = 0, killed_work = 0, killed_group = 0, ended = 0;
	for (int i = 0; i < SLOTS; i++) {
		slots[i].idiom = slot_idiom[i];
		start(&slots[i], i, slots[i].cycles++, started % 4 == 3);
		victims += slots[i].victim;
		started++;
	}
	int64_t deadline = hf_sys_mono_ns() + 150 * 1000000000LL;
	char vbuf[512];
	size_t vlen = 0;
	for (;;) {
		struct pollfd p[SLOTS + 1];
		int who[SLOTS + 1];
		nfds_t n = 0;
		p[n] = (struct pollfd){ .fd = vfd, .events = POLLIN };
		who[n++] = -1;
		for (int i = 0; i < SLOTS; i++)
			if (slots[i].running) {
				p[n] = (struct pollfd){ .fd = slots[i].c.out_rd, .events = POLLIN };
				who[n++] = i;
			}
		if (n == 1)
			break; /* every slot done */
		cr_assert_lt(hf_sys_mono_ns(), deadline, "the callers did not finish within 150 s");
		if (poll(p, n, 1000) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			ssize_t r = read(vfd, vbuf + vlen, sizeof vbuf - 1 - vlen);
			if (r > 0)
				vlen += (size_t)r;
			char *nl;
			while ((nl = memchr(vbuf, '\n', vlen))) {
				*nl = '\0';
				int vpid, vslot;
				cr_assert_eq(sscanf(vbuf, "%d %d", &vpid, &vslot), 2, "victim: %s", vbuf);
				cr_assert(vslot >= 0 && vslot < SLOTS && slots[vslot].victim,
					  "an announcement from a holder that is no victim: %s", vbuf);
				/* kill it in its work: the work process alone, or the
				 * caller's whole group (the work is in it) */
				if ((killed_work + killed_group) % 2 == 0) {
					cr_assert_eq(kill(vpid, SIGKILL), 0);
					killed_work++;
				} else {
					cr_assert_eq(kill(-slots[vslot].c.pid, SIGKILL), 0);
					killed_group++;
				}
				vlen -= (size_t)(nl + 1 - vbuf);
				memmove(vbuf, nl + 1, vlen);
			}
		}
		for (nfds_t k = 1; k < n; k++) {
			if (!(p[k].revents & (POLLIN | POLLHUP)))
				continue;
			struct slot *s = &slots[who[k]];
			char b[256];
			if (read(s->c.out_rd, b, sizeof b) > 0)
				continue; /* output: not the end yet */
			char *err;
			int st = hft_collect(s->c.pid, s->c.out_rd, s->c.err_rd, NULL, &err);
			s->running = false;
			hft_reap_group(&s->c);
			ended++;
			if (!s->victim)
				cr_assert_eq(st, 0, "%s (slot %d, cycle %d): exit %d:\n%s",
					     idiom_names[s->idiom], who[k], s->cycles, st, err);
			else
				cr_assert_neq(st, 0, "%s: a victim's caller succeeded", idiom_names[s->idiom]);
			free(err);
			if (s->cycles < per_slot) {
				start(s, who[k], s->cycles++, started % 4 == 3);
				victims += s->victim;
				started++;
			}
		}
	}
	close(vfd);
	char *ovl = path_in("ovl"), *o = hft_slurp(ovl);
	int entries = lines_of("entries"), stale = lines_of("stale");
	char *cp = path_in("count"), *c = hft_slurp(cp);
	int count = c ? atoi(c) : -1;
	/* the last holder may have been killed: its lock is reapable at once */
	char *L = path_in("L"), *out, *err, me[16], tok[64];
	snprintf(me, sizeof me, "%d", (int)getpid());
	int st = hft_cli(&out, &err,
			 (const char *const[]){ "holdfast", "lock", "acquire", "-n", L, "--pid", me,
						NULL });
	cr_assert_eq(st, 0, "after the last caller the lock is not free nor reapable: %s", err);
	cr_assert_eq(sscanf(out, "%63s", tok), 1);
	free(out);
	free(err);
	cr_assert_eq(hft_cli(NULL, NULL,
			     (const char *const[]){ "holdfast", "lock", "release", L, "--token", tok,
						    NULL }),
		     0);
	cr_log_info("%d acquisitions by %d callers (%d killed in their work: %d as the work "
		    "process, %d with the caller's group; %d killed holders' marks taken over), "
		    "%d overlaps",
		    entries, ended, victims, killed_work, killed_group, stale, o ? lines_of("ovl") : 0);
	cr_assert_null(o, "two holders at once:\n%s", o);
	cr_assert_eq(count, entries, "count %d after %d entries: an increment was lost", count,
		     entries);
	cr_assert_eq(entries, started, "every caller entered once (%d of %d)", entries, started);
	cr_assert_eq(killed_work + killed_group, victims, "every victim was killed in its work");
	cr_assert_leq(stale, victims, "a mark of a live holder was taken for a killed one's");
	free(L);
	free(c);
	free(cp);
	free(o);
	free(ovl);
	free(vf);
	free(nf);
}
