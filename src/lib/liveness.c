/*
 * liveness.c - is an owner alive? Dead only on proof, and only on a proof
 * that cannot be confused by a pid namespace, a reused pid or a clock.
 *
 * Proof of death, on this kernel only (the record's boot id is ours):
 *   (L1) same pid namespace (the record's pidns is ours): no process has
 *        the pid (kill(pid, 0) says ESRCH, /proc says so too);
 *   (L2) same pid namespace: a process has the pid but started at another
 *        time: the pid was reused, so the owner that recorded it is gone;
 *   (L3) another pid namespace of this kernel (a container, a sandbox,
 *        `unshare --pid`), or a record whose namespace is unknown: a pid
 *        there is not a pid here, so it proves nothing either way. The
 *        owner holds a kernel lock (flock(2), shared) on its liveness object
 *        - the lock directory, a registry allocation's live file - for its
 *        whole life; the kernel drops it when the last process holding that
 *        open file description ends, whatever namespace or user it is in.
 *        The judge opens the object itself and tries LOCK_EX | LOCK_NB: got
 *        it, the owner is dead (and the judge keeps the lock while it acts,
 *        so no late taker can take the object meanwhile).
 * Everything else is alive: another kernel (another boot id: a machine
 * sharing the file system, or this one before a reboot - its pids are gone,
 * but its record may come from a live host), a record without start time or
 * boot id, EPERM from kill (the process exists, owned by another user), any
 * error reading /proc or probing the lock.
 *
 * Why not the kernel lock everywhere: a holder may close descriptors it
 * inherited (ssh, daemons, closefrom(3)), which would look like death. In
 * its own pid namespace the pid is the better proof; the kernel lock is the
 * proof only where a pid cannot be one.
 *
 * Records of holdfast 0.1 carry no pidns: they are judged as 0.1 judged
 * them (by pid when host and boot id are ours), and never by a kernel lock
 * (0.1 holders held none).
 *
 * A zombie (exited, not yet waited for) still has its pid and start time.
 * While its parent lives it counts as alive: the parent may still act for
 * it (`holdfast run` releases its command's locks, then collects it). An
 * orphaned zombie under init (pid 1) is gone (hf_pid_start says -ESRCH):
 * no one acts for it, and an init that never reaps (some container inits
 * do not) must not keep its locks forever. A thread-group leader that
 * exited while its other threads run shows as a zombie too: alive.
 *
 * Ages (hf_owner_age_ms): on this kernel and time namespace, from the
 * record's CLOCK_BOOTTIME, which a wall-clock step moves neither way; else
 * from its wall-clock time.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <sys/file.h>

enum { PID_DEAD = HF_DEAD, PID_ALIVE = HF_ALIVE, PID_UNKNOWN = -1 };

static bool same_kernel(const struct hf_owner *o)
{
	const char *boot = hf_boot_id();
	return o->boot_id[0] && boot[0] && strcmp(o->boot_id, boot) == 0;
}

/* What the pid alone proves: PID_DEAD, PID_ALIVE, or PID_UNKNOWN when a
 * pid of that record is not a pid here (L3). */
static int pid_verdict(const struct hf_owner *o)
{
	if (o->pid <= 0 || o->pid > 0x7fffffff)
		return PID_UNKNOWN; /* nonsense pid */
	if (!same_kernel(o))
		return PID_UNKNOWN;
	if (o->pidns) {
		uint64_t mine = hf_self_pidns();
		if (mine == HF_PIDNS_UNKNOWN || mine != o->pidns)
			return PID_UNKNOWN; /* L3 (an unknown namespace never matches) */
	} else if (!o->host[0] || strcmp(o->host, hf_host_name()) != 0) {
		return PID_UNKNOWN; /* a 0.1 record of another host */
	}
	int rc = hf_sys_kill((pid_t)o->pid, 0);
	if (rc == -ESRCH)
		return PID_DEAD; /* L1 */
	if (rc < 0 && rc != -EPERM)
		return PID_ALIVE;
	if (o->pid_start == 0)
		return PID_ALIVE;
	uint64_t start;
	rc = hf_pid_start((pid_t)o->pid, &start);
	if (rc == -ESRCH)
		return PID_DEAD; /* L1: gone between the two looks */
	if (rc < 0)
		return PID_ALIVE;
	return start == o->pid_start ? PID_ALIVE : PID_DEAD; /* L2 */
}

int hf_owner_liveness(const struct hf_owner *o)
{
	return pid_verdict(o) == PID_DEAD ? HF_DEAD : HF_ALIVE;
}

int hf_kernel_lock_probe(int fd)
{
	int rc = hf_sys_flock(fd, LOCK_EX | LOCK_NB);
	if (rc == 0)
		return 0;
	return rc == -EWOULDBLOCK ? 1 : rc;
}

int hf_owner_liveness_fd(const struct hf_owner *o, int probe_fd)
{
	int v = pid_verdict(o);
	if (v != PID_UNKNOWN)
		return v;
	/* L3: only records that name their namespace held a kernel lock, and
	 * only a lock of this kernel is proof. */
	if (probe_fd < 0 || !o->pidns || !same_kernel(o))
		return HF_ALIVE;
	return hf_kernel_lock_probe(probe_fd) == 0 ? HF_DEAD : HF_ALIVE;
}

int64_t hf_owner_age_ms(const struct hf_owner *o, int64_t now_ms)
{
	if (o->boot_ms > 0 && o->timens && o->timens == hf_self_timens() && same_kernel(o)) {
		int64_t age = hf_sys_boot_ms() - o->boot_ms;
		return age < 0 ? 0 : age; /* a lie: no clock runs backwards here */
	}
	return now_ms - o->time_ms;
}
