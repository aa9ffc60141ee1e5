/* A zombie is dead (it has exited; an orphaned CMD under an init that never
 * reaps stays one forever), except a thread-group leader whose other
 * threads still run. What makes a SIGKILLed `run`'s lock reapable. */
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* A child blocked on a pipe; returns its pid, *wr the pipe's write end. */
static pid_t blocked_child(int *wr, int mode)
{
	int p[2], ready[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(pipe(ready), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[1]);
		close(ready[0]);
		char c;
		if (mode == 1) {
			/* leader exits, one thread lives on (blocked on the pipe) */
			pthread_t t;
			if (pthread_create(&t, NULL, sleeper, NULL) != 0)
				_exit(2);
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			if (read(p[0], &c, 1) < 0)
				_exit(2);
			pthread_exit(NULL);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		if (read(p[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(p[0]);
	close(ready[1]);
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	*wr = p[1];
	return pid;
}

/* Wait (without reaping) until pid is a zombie: /proc says state Z. */
static void await_zombie(pid_t pid)
{
	siginfo_t si;
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
}

Test(liveness, zombie_is_dead)
{
	int wr;
	pid_t pid = blocked_child(&wr, 0);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE);
	cr_assert_eq(write(wr, "g", 1), 1);
	close(wr);
	await_zombie(pid);
	cr_assert_eq(kill(pid, 0), 0, "a zombie still has its pid");
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD, "but it can never act again");
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD);
}

Test(liveness, exited_leader_with_live_thread_is_alive)
{
	int wr;
	pid_t pid = blocked_child(&wr, 1);
	struct hf_owner o;
	cr_assert_eq(hf_owner_init(&o, pid), 0);
	cr_assert_eq(write(wr, "g", 1), 1);
	close(wr);
	/* The leader exits; /proc/<pid>/stat shows Z until the thread ends. */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	for (;;) {
		char *s = hft_slurp(path);
		cr_assert_not_null(s);
		char state = strrchr(s, ')')[2];
		free(s);
		if (state == 'Z')
			break;
		sched_yield();
	}
	cr_assert_eq(hf_owner_liveness(&o), HF_ALIVE, "its other thread still runs");
	cr_assert_eq(kill(pid, SIGKILL), 0);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(hf_owner_liveness(&o), HF_DEAD);
}
