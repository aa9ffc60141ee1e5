/* Zombies and liveness (owner.c): a zombie whose parent lives is alive (the
 * parent may still act for it: run releases its command's locks before it
 * collects it); an orphaned zombie under init is dead (an init that never
 * reaps would otherwise keep a killed run's locks forever); a thread-group
 * leader that exited while a thread runs is alive. */
#include "rt.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* In the process that will exit: block until a byte (or EOF) on go_rd, then
 * exit (mode 0) or let only the leader exit, one thread living on (mode 1). */
static void __attribute__((noreturn)) exiter(int go_rd, int mode)
{
	pthread_t t;
	if (mode == 1 && pthread_create(&t, NULL, sleeper, NULL) != 0)
		_exit(2);
	char c;
	if (read(go_rd, &c, 1) < 0)
		_exit(2);
	if (mode == 1)
		pthread_exit(NULL);
	_exit(0);
}

/* A child of ours, blocked; *go_wr lets it go. */
static pid_t child(int *go_wr)
{
	int go[2];
	cr_assert_eq(pipe(go), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(go[1]);
		exiter(go[0], 0);
	}
	close(go[0]);
	*go_wr = go[1];
	return pid;
}

/* An orphan (its parent exited: now init's), blocked, its owner record in
 * *o; *go_wr lets it go. Skips the test when the orphan went to a subreaper
 * instead of init. */
static pid_t orphan(int *go_wr, int mode, struct hf_owner *o)
{
	int p[2], go[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(pipe(go), 0);
	fflush(NULL);
	pid_t a = fork();
	cr_assert_geq(a, 0);
	if (a == 0) {
		pid_t b = fork();
		if (b == 0) {
			close(go[1]);
			close(p[0]);
			close(p[1]);
			exiter(go[0], mode);
		}
		if (write(p[1], &b, sizeof b) != sizeof b)
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	close(go[0]);
	pid_t b;
	cr_assert_eq(read(p[0], &b, sizeof b), (ssize_t)sizeof b);
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(a, &st, 0), a);
	pid_t ppid = hft_ppid(b);
	if (ppid != 1) {
		close(go[1]);
		cr_skip_test("the orphan went to a subreaper (pid %d), not to init", ppid);
	}
	cr_assert_eq(hf_owner_init(o, b), 0);
	*go_wr = go[1];
	return b;
}

static char state_of(pid_t pid)
{
	char *s = hft_proc_slurp(pid, "stat");
	if (!s)
		return 0;
	char st = strrchr(s, ')')[2];
	free(s);
	return st;
}

Test(liveness, zombie_with_live_parent_is_alive)
{
	int go;
	pid_t pid = child(&go);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	close(go);
	siginfo_t si;
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0); /* a zombie now */
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE, "its parent (this test) may still act for it");
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "collected: gone");
}

Test(liveness, orphaned_zombie_is_dead)
{
	int go;
	struct hf_owner o;
	pid_t pid = orphan(&go, 0, &o);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE);
	close(go);
	rt_await_exit(pid); /* init reaps it at once, or never */
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "an exited orphan is gone, collected or not");
}

Test(liveness, orphaned_leader_with_live_thread_is_alive)
{
	int go;
	struct hf_owner o;
	pid_t pid = orphan(&go, 1, &o);
	close(go); /* the leader exits; /proc shows Z while its thread runs */
	while (state_of(pid) != 'Z')
		sched_yield();
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE, "its other thread still runs");
	cr_assert_eq(kill(pid, SIGKILL), 0);
	rt_await_exit(pid);
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD);
}
