/*
 * holds.c - the acquisitions this process holds, each with the thread it
 * is held for (handle_lock.c's HL5): a thread never waits for a lock only
 * it could release. Shared by every backend's wait (dirlock.c DL13,
 * etcdlock.c step 5).
 */
#include "holds.h"
#include "sys.h"

#include "holdfast.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct self_hold {
	char token[HF_TOKEN_LEN + 1];
	pid_t pid; /* hf_sys_getpid() when listed: a forked child's copy is not its own */
	pid_t tid;
};
static pthread_mutex_t holds_mu = PTHREAD_MUTEX_INITIALIZER;
static struct self_hold *holds;
static size_t nholds, capholds;
static pthread_once_t holds_once = PTHREAD_ONCE_INIT;

static void holds_child(void)
{
	/* a fork's child has one thread: a mutex another thread held at the
	 * fork would never be unlocked there */
	pthread_mutex_init(&holds_mu, NULL);
}

static void holds_init(void)
{
	pthread_atfork(NULL, NULL, holds_child);
}

/* This thread's id, read once per thread and process: a thread's id never
 * changes, and a fork's child (another pid) reads its own. */
static pid_t self_tid(pid_t pid)
{
	static __thread pid_t for_pid, tid;
	if (for_pid != pid) {
		tid = gettid();
		for_pid = pid;
	}
	return tid;
}

void hf_holds_add(const char *token, pid_t tid)
{
	pthread_once(&holds_once, holds_init);
	pid_t pid = hf_sys_getpid();
	if (!tid)
		tid = self_tid(pid);
	pthread_mutex_lock(&holds_mu);
	if (nholds == capholds) {
		size_t cap = capholds ? 2 * capholds : 8;
		struct self_hold *n = realloc(holds, cap * sizeof *n);
		if (!n) {
			pthread_mutex_unlock(&holds_mu);
			return; /* unlisted: a wait for it waits, as before HL5 */
		}
		holds = n;
		capholds = cap;
	}
	struct self_hold *h = &holds[nholds++];
	snprintf(h->token, sizeof h->token, "%s", token);
	h->pid = pid;
	h->tid = tid;
	pthread_mutex_unlock(&holds_mu);
}

void hf_holds_drop(const char *token)
{
	pthread_once(&holds_once, holds_init);
	pthread_mutex_lock(&holds_mu);
	for (size_t i = 0; i < nholds; i++)
		if (!strcmp(holds[i].token, token)) {
			holds[i] = holds[--nholds];
			break;
		}
	pthread_mutex_unlock(&holds_mu);
}

bool hf_lock_self_wait(const struct hf_lock_info *h, int64_t wait_ms, int64_t stale_ms)
{
	if (wait_ms == 0 || h->partial)
		return false;
	/* a bounded wait that outlasts the hold's leak (max(max-hold, stale)
	 * old: reaped) can end without this thread: it waits, as before HL5 */
	if (wait_ms > 0 && h->max_hold_ms > 0 && h->max_hold_ms < INT64_MAX) {
		int64_t window = h->max_hold_ms > stale_ms ? h->max_hold_ms : stale_ms;
		if (window - h->age_ms < wait_ms)
			return false;
	}
	return hf_lock_held_by_caller(h->owner.token);
}

bool hf_lock_held_by_caller(const char *token)
{
	if (!token || !token[0])
		return false;
	pthread_once(&holds_once, holds_init);
	pid_t pid = hf_sys_getpid(), tid = self_tid(pid);
	bool found = false;
	pthread_mutex_lock(&holds_mu);
	for (size_t i = 0; i < nholds && !found; i++)
		found = holds[i].pid == pid && holds[i].tid == tid && !strcmp(holds[i].token, token);
	pthread_mutex_unlock(&holds_mu);
	return found;
}
