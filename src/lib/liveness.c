/*
 * liveness.c - is an owner alive? Dead only on proof.
 *
 * Proof of death, on this host and this boot only:
 *   (L1) no process has the pid (kill(pid, 0) says ESRCH, /proc says so too);
 *   (L2) a process has the pid but started at another time: the pid was
 *        reused, so the owner that recorded it is gone.
 * Everything else is alive: another host (a pid there means nothing here),
 * another boot id (the record may come from a machine sharing the file
 * system), a record without start time or boot id, EPERM from kill (the
 * process exists, owned by another user), any error reading /proc.
 *
 * A zombie (exited, not yet waited for) still has its pid and start time.
 * While its parent lives it counts as alive: the parent may still act for
 * it (`holdfast run` releases its command's locks, then collects it). An
 * orphaned zombie under init (pid 1) is gone (hf_pid_start says -ESRCH):
 * no one acts for it, and an init that never reaps (some container inits
 * do not) must not keep its locks forever. A thread-group leader that
 * exited while its other threads run shows as a zombie too: alive.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

int hf_owner_liveness(const struct hf_owner *o)
{
	if (o->pid <= 0 || o->pid > 0x7fffffff)
		return HF_ALIVE; /* nonsense pid: unknown, so alive */
	if (!o->host[0] || strcmp(o->host, hf_host_name()) != 0)
		return HF_ALIVE;
	const char *boot = hf_boot_id();
	if (!o->boot_id[0] || !boot[0] || strcmp(o->boot_id, boot) != 0)
		return HF_ALIVE;
	int rc = hf_sys_kill((pid_t)o->pid, 0);
	if (rc == -ESRCH)
		return HF_DEAD; /* L1 */
	if (rc < 0 && rc != -EPERM)
		return HF_ALIVE;
	if (o->pid_start == 0)
		return HF_ALIVE;
	uint64_t start;
	rc = hf_pid_start((pid_t)o->pid, &start);
	if (rc == -ESRCH)
		return HF_DEAD; /* L1: gone between the two looks */
	if (rc < 0)
		return HF_ALIVE;
	return start == o->pid_start ? HF_ALIVE : HF_DEAD; /* L2 */
}
