/*
 * owner.c - owner records: who holds a lock, with enough to prove death.
 *
 * A record names a process by (pid, pid_start, boot_id, host) and carries a
 * 128-bit random token that is the record's identity: two records are the
 * same record only if their tokens are equal (inode numbers are reused by
 * the kernel at once and prove nothing by themselves).
 *
 * It also names the namespaces its numbers belong to: the pid namespace the
 * pid was read in (a pid means nothing in another one: see Liveness) and the
 * time namespace of its boot-relative time (CLOCK_BOOTTIME, which a step of
 * the wall clock does not move: ages on one kernel come from it).
 *
 * JSON form (the directory lock's <lock>/owner and the registry's entries):
 *   {"token":"…","pid":4242,"pid_start":123456,"boot_id":"…","host":"box",
 *    "<time_key>":"2026-09-22T10:00:00Z","pidns":4026531836,
 *    "timens":4026531834,"boottime_ms":8123456,"comm":"make"}
 * pidns, timens, boottime_ms and comm are absent in records of older writers
 * (read as 0 / "": unknown).
 *
 * chain (OW5) is absent unless the owner was given one.
 *
 *   (OW4) One writer: hf_owner_put_json writes these members for every
 *         owner record - the directory lock's file, with its own members
 *         between the time and pidns, and hf_owner_to_json - and
 *         hf_owner_from_json reads back every field it wrote.
 *
 * Liveness
 * --------
 * Is an owner alive? Dead only on proof, and only on a proof
 * that cannot be confused by a pid namespace, a reused pid or a clock.
 *
 * Proof of death, on this kernel only (the record's boot id is ours):
 *   (OW1) same pid namespace (the record's pidns is ours): no process has
 *         the pid (kill(pid, 0) says ESRCH, /proc says so too);
 *   (OW2) same pid namespace: a process has the pid but started at another
 *         time: the pid was reused, so the owner that recorded it is gone;
 *   (OW3) another pid namespace of this kernel (a container, a sandbox,
 *         `unshare --pid`), or a record whose namespace is unknown: a pid
 *         there is not a pid here, so it proves nothing either way. The
 *         owner holds a kernel lock (flock(2), shared) on its liveness object
 *         - the lock directory, a registry allocation's live file - for its
 *         whole life; the kernel drops it when the last process holding that
 *         open file description ends, whatever namespace or user it is in.
 *         The judge opens the object itself and tries LOCK_EX | LOCK_NB: got
 *         it, the owner is dead (and the judge keeps the lock while it acts,
 *         so no late taker can take the object meanwhile).
 *   (OW5) A record may name, besides its owner, a chain of up to
 *         HF_OWNER_CHAIN_MAX more processes of the same pid namespace
 *         ("chain": [[pid, start], ...]): a detached acquisition's calling
 *         chain, any of which may still run the caller's next step (the
 *         CLI's owner_find.c). The owner is dead by OW1/OW2 only when the
 *         owner and every process of its chain is (each by its pid and start
 *         time); in another pid namespace OW3 decides as before (the keeper
 *         that holds the kernel lock watches the whole chain). Writers
 *         before 0.3 wrote no chain; readers before 0.3 ignore it, judging
 *         by the owner's pid alone - a mixed fleet errs towards two holders
 *         only through those old readers.
 *   (OW6) A record with a lease ("lease_ms": N > 0) is held by no process:
 *         no pid, chain or kernel lock proves it dead (its pid is who took
 *         it, for the reader). It expires N ms after its time (acquired, or
 *         the last renewal), by hf_owner_age_ms - the backend judges that
 *         (dirlock.c DL6: "expired"; on etcd the key's lease of N ms).
 *   (OW7) A kept record ("kept": true) names an owner whose kernel lock
 *         another process holds for it (the CLI's keeper, a library caller
 *         with HF_OPT_PID): that holder can end - a keeper SIGKILLed, OOM
 *         killed - while the owner lives, so in another pid namespace (OW3)
 *         a free kernel lock proves nothing of a kept owner: it is alive
 *         until its max-hold (leaked), never dead by OW3. In the owner's
 *         own pid namespace its pids decide as before. A record without a
 *         max-hold (HF_MAX_HOLD_NONE: run, flock, edit, whose holder is the
 *         owner's own parent) is never kept: it would never end there.
 *         One proof of death stays for a kept owner: its whole pid
 *         namespace is gone. A judge in the initial pid namespace sees
 *         every process of the machine, so when the kernel lock is free
 *         and no process lives in the owner's namespace (a container whose
 *         init ended: the kernel killed the rest, its keeper too), the
 *         owner is dead. A judge in another container cannot see that (a
 *         namespace cannot learn its parents: NS_GET_PARENT is refused
 *         inside one), so it waits for the max-hold. The kernel gives a
 *         freed namespace's inode number to the next new namespace at
 *         once: a new namespace with that number keeps the owner alive
 *         (towards holding) until it ends too, or the max-hold.
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
 * Records without pidns (older writers) are judged by pid when host and
 * boot id are ours, and never by a kernel lock (their holders held none).
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
#include "floor.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int hf_owner_init(struct hf_owner *ret, pid_t pid)
{
	struct hf_owner o;
	memset(&o, 0, sizeof o);
	int rc = hf_random_hex(o.token, HF_TOKEN_LEN / 2);
	if (rc < 0)
		return rc;
	/* Our own start time never changes while our pid is ours: read
	 * /proc once per process (a fork's child has another pid). */
	static __thread pid_t self_pid;
	static __thread uint64_t self_start;
	pid_t me = hf_sys_getpid();
	if (pid == 0)
		pid = me;
	o.pid = pid;
	if (pid == me && self_pid == me) {
		o.pid_start = self_start;
	} else {
		rc = hf_pid_start(pid, &o.pid_start);
		if (rc == -ENOENT)
			o.pid_start = 0; /* PR1: no /proc showing it (kill(2) finds it):
					  * no start time, judged by kill alone */
		else if (rc < 0)
			return rc; /* -ESRCH: no such process to own anything */
		if (pid == me && o.pid_start) {
			self_pid = me;
			self_start = o.pid_start;
		}
	}
	hf_copy_str(o.boot_id, sizeof o.boot_id, hf_boot_id());
	hf_copy_str(o.host, sizeof o.host, hf_host_name());
	/* the pid is a pid of our namespace: we read it (getpid, getppid, or
	 * checked it in our /proc) */
	hf_self_ns(me, &o.pidns, &o.timens);
	static __thread pid_t comm_pid;
	static __thread char comm[HF_COMM_MAX + 1];
	if (pid == me && comm_pid == me) {
		memcpy(o.comm, comm, sizeof o.comm);
	} else if (hf_pid_comm(pid, o.comm, sizeof o.comm) == 0 && pid == me) {
		comm_pid = me;
		memcpy(comm, o.comm, sizeof comm);
	}
	o.time_ms = hf_sys_now_ms();
	o.boot_ms = hf_sys_boot_ms();
	*ret = o;
	return 0;
}

int hf_owner_chain_add(struct hf_owner *o, const pid_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (pids[i] <= 0 || pids[i] == o->pid)
			continue;
		bool there = false;
		for (unsigned k = 0; k < o->nchain && !there; k++)
			there = o->chain[k].pid == pids[i];
		if (there)
			continue;
		uint64_t start;
		int rc = hf_pid_start(pids[i], &start);
		if (rc == -ENOENT)
			start = 0; /* PR1: not in /proc, found by kill(2): kill judges it */
		else if (rc < 0)
			continue; /* gone already: nothing of the caller's left there */
		if (o->nchain >= HF_OWNER_CHAIN_MAX)
			return -E2BIG;
		o->chain[o->nchain++] = (struct hf_owner_link){ pids[i], start };
	}
	return 0;
}

/* A JSON integer at p: v in decimal, '-' first when negative. */
static char *put_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return hf_put_u64w(p, -(uint64_t)v, 1);
	}
	return hf_put_u64w(p, (uint64_t)v, 1);
}

/* Built by hand: the directory lock writes one in every acquisition, and
 * stdio formats slower than the system calls around it. */
char *hf_owner_put_json(char *p, const struct hf_owner *o, const char *time_key,
			const char *mid)
{
	char when[HF_TIME_MAX];
	hf_time_format(o->time_ms, when, sizeof when);
	p = HF_PUT_LIT(p, "\"token\":\"");
	p = hf_json_escape(p, o->token);
	p = HF_PUT_LIT(p, "\",\"pid\":");
	p = put_i64(p, o->pid);
	p = HF_PUT_LIT(p, ",\"pid_start\":");
	p = hf_put_u64w(p, o->pid_start, 1);
	p = HF_PUT_LIT(p, ",\"boot_id\":\"");
	p = hf_json_escape(p, o->boot_id);
	p = HF_PUT_LIT(p, "\",\"host\":\"");
	p = hf_json_escape(p, o->host);
	p = HF_PUT_LIT(p, "\",\"");
	p = hf_json_escape(p, time_key);
	p = HF_PUT_LIT(p, "\":\"");
	p = hf_put_str(p, when);
	*p++ = '"';
	if (mid)
		p = hf_put_str(p, mid);
	p = HF_PUT_LIT(p, ",\"pidns\":");
	p = hf_put_u64w(p, o->pidns, 1);
	p = HF_PUT_LIT(p, ",\"timens\":");
	p = hf_put_u64w(p, o->timens, 1);
	p = HF_PUT_LIT(p, ",\"boottime_ms\":");
	p = hf_put_u64w(p, (uint64_t)(o->boot_ms > 0 ? o->boot_ms : 0), 1);
	p = HF_PUT_LIT(p, ",\"comm\":\"");
	p = hf_json_escape(p, o->comm);
	*p++ = '"';
	if (o->nchain) { /* OW5 */
		p = HF_PUT_LIT(p, ",\"chain\":[");
		for (unsigned i = 0; i < o->nchain && i < HF_OWNER_CHAIN_MAX; i++) {
			p = HF_PUT_LIT(p, "[");
			p = put_i64(p, o->chain[i].pid);
			*p++ = ',';
			p = hf_put_u64w(p, o->chain[i].start, 1);
			*p++ = ']';
			if (i + 1 < o->nchain)
				*p++ = ',';
		}
		*p++ = ']';
	}
	if (o->lease_ms > 0) { /* OW6 */
		p = HF_PUT_LIT(p, ",\"lease_ms\":");
		p = put_i64(p, o->lease_ms);
	}
	if (o->kept) /* OW7 */
		p = HF_PUT_LIT(p, ",\"kept\":true");
	return p;
}

json_t *hf_owner_to_json(const struct hf_owner *o, const char *time_key)
{
	char buf[HF_OWNER_JSON_MAX + 2];
	if (strlen(time_key) > HF_OWNER_TIME_KEY_MAX)
		return NULL;
	char *p = buf;
	*p++ = '{';
	p = hf_owner_put_json(p, o, time_key, NULL);
	*p++ = '}';
	assert((size_t)(p - buf) <= sizeof buf && "OW4");
	return json_loadb(buf, (size_t)(p - buf), 0, NULL); /* OW4: the one writer */
}

/* An optional non-negative integer field (0 when absent); -1 when present
 * and not a non-negative integer. */
static int get_u63(const json_t *obj, const char *key, uint64_t *ret)
{
	const json_t *v = json_object_get(obj, key);
	*ret = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

static void copy_str(char *dst, size_t n, const json_t *v)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;
	if (s && strlen(s) < n)
		strcpy(dst, s);
	else
		dst[0] = '\0';
}

void hf_owner_restart(struct hf_owner *o)
{
	o->time_ms = hf_sys_now_ms();
	if (!strcmp(o->boot_id, hf_boot_id())) {
		o->boot_ms = hf_sys_boot_ms();
		o->timens = hf_self_timens();
	} else {
		o->boot_ms = 0;
		o->timens = 0;
	}
}

int hf_owner_from_json(const json_t *obj, const char *time_key, struct hf_owner *ret)
{
	struct hf_owner o;
	memset(&o, 0, sizeof o);
	if (!json_is_object(obj))
		return -EINVAL;
	const json_t *tok = json_object_get(obj, "token");
	const json_t *pid = json_object_get(obj, "pid");
	if (!json_is_string(tok) || strlen(json_string_value(tok)) > HF_TOKEN_LEN ||
	    !json_string_value(tok)[0] || !json_is_integer(pid) || json_integer_value(pid) <= 0)
		return -EINVAL;
	strcpy(o.token, json_string_value(tok));
	o.pid = json_integer_value(pid);
	const json_t *st = json_object_get(obj, "pid_start");
	if (json_is_integer(st) && json_integer_value(st) > 0)
		o.pid_start = (uint64_t)json_integer_value(st);
	copy_str(o.boot_id, sizeof o.boot_id, json_object_get(obj, "boot_id"));
	copy_str(o.host, sizeof o.host, json_object_get(obj, "host"));
	const json_t *t = json_object_get(obj, time_key);
	if (json_is_string(t) && hf_time_parse(json_string_value(t), &o.time_ms) < 0)
		return -EINVAL;
	uint64_t boot;
	if (get_u63(obj, "pidns", &o.pidns) < 0 || get_u63(obj, "timens", &o.timens) < 0 ||
	    get_u63(obj, "boottime_ms", &boot) < 0)
		return -EINVAL;
	o.boot_ms = (int64_t)boot;
	const json_t *c = json_object_get(obj, "comm");
	if (c && (!json_is_string(c) || !hf_text_ok(json_string_value(c), HF_COMM_MAX)))
		return -EINVAL;
	copy_str(o.comm, sizeof o.comm, c);
	const json_t *ch = json_object_get(obj, "chain"); /* OW5 */
	if (ch) {
		if (!json_is_array(ch) || json_array_size(ch) > HF_OWNER_CHAIN_MAX)
			return -EINVAL;
		size_t i;
		const json_t *e;
		json_array_foreach(ch, i, e) {
			const json_t *cp = json_array_get(e, 0), *cs = json_array_get(e, 1);
			if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(cp) ||
			    json_integer_value(cp) <= 0 || !json_is_integer(cs) ||
			    json_integer_value(cs) < 0)
				return -EINVAL;
			o.chain[o.nchain++] = (struct hf_owner_link){
				json_integer_value(cp), (uint64_t)json_integer_value(cs)
			};
		}
	}
	const json_t *ls = json_object_get(obj, "lease_ms"); /* OW6 */
	if (ls && (!json_is_integer(ls) || json_integer_value(ls) <= 0))
		return -EINVAL;
	o.lease_ms = ls ? json_integer_value(ls) : 0;
	const json_t *kp = json_object_get(obj, "kept"); /* OW7 */
	if (kp && !json_is_boolean(kp))
		return -EINVAL;
	o.kept = json_is_true(kp);

	*ret = o;
	return 0;
}

/* --- liveness -------------------------------------------------------------- */

enum { PID_DEAD = HF_DEAD, PID_ALIVE = HF_ALIVE, PID_UNKNOWN = -1 };

static bool same_kernel(const struct hf_owner *o)
{
	const char *boot = hf_boot_id();
	return o->boot_id[0] && boot[0] && strcmp(o->boot_id, boot) == 0;
}

/* OW1, OW2 for one process of this kernel and of our pid namespace: its
 * pid and start time (0: unknown). With a start time, /proc is read first:
 * its start time there is the whole proof for a live owner, one read and no
 * kill(2) before it; not there (or an orphaned zombie) is death, as kill's
 * ESRCH is. Without a start time, or with /proc unreadable or not there
 * (PR1: a chroot, a mount over it), kill(2) alone. */
static int one_verdict(int64_t pid, uint64_t pid_start)
{
	if (pid <= 0 || pid > 0x7fffffff)
		return PID_ALIVE; /* nonsense: proves nothing */
	if (pid_start != 0) {
		uint64_t start;
		int rc = hf_pid_start((pid_t)pid, &start);
		if (rc == -ESRCH)
			return PID_DEAD; /* OW1 */
		if (rc == 0) {
			assert(pid_start != 0 && "OW2"); /* a start time to compare */
			return start == pid_start ? PID_ALIVE : PID_DEAD; /* OW2 */
		}
	}
	int rc = hf_sys_kill((pid_t)pid, 0);
	return rc == -ESRCH ? PID_DEAD : PID_ALIVE; /* OW1 (EPERM: there, not ours) */
}

/* What the pids alone prove: PID_DEAD, PID_ALIVE, or PID_UNKNOWN when a
 * pid of that record is not a pid here (OW3). */
static int pid_verdict(const struct hf_owner *o)
{
	if (o->pid <= 0 || o->pid > 0x7fffffff)
		return PID_UNKNOWN; /* nonsense pid */
	if (!same_kernel(o))
		return PID_UNKNOWN;
	if (o->pidns) {
		uint64_t mine = hf_self_pidns();
		if (mine == HF_PIDNS_UNKNOWN || mine != o->pidns)
			return PID_UNKNOWN; /* OW3 (an unknown namespace never matches) */
	} else if (!o->host[0] || strcmp(o->host, hf_host_name()) != 0) {
		return PID_UNKNOWN; /* a record without pidns, of another host */
	}
	/* OW1, OW2: a pid of this kernel and of our pid namespace (or of a
	 * record without pidns, of this host) */
	assert(same_kernel(o) && "OW1");
	if (one_verdict(o->pid, o->pid_start) == PID_ALIVE)
		return PID_ALIVE;
	for (unsigned i = 0; i < o->nchain && i < HF_OWNER_CHAIN_MAX; i++)
		if (one_verdict(o->chain[i].pid, o->chain[i].start) == PID_ALIVE)
			return PID_ALIVE; /* OW5: a process of its chain lives */
	return PID_DEAD;
}

pid_t hf_owner_local_pid(const struct hf_owner *o)
{
	if (o->pid <= 0 || o->pid > 0x7fffffff || !same_kernel(o))
		return 0;
	if (o->pidns) {
		uint64_t mine = hf_self_pidns();
		if (mine == HF_PIDNS_UNKNOWN || mine != o->pidns)
			return 0; /* OW3 */
	} else if (!o->host[0] || strcmp(o->host, hf_host_name()) != 0) {
		return 0;
	}
	return (pid_t)o->pid;
}

/* OW7: do we see every process of the owner's pid namespace? In the
 * initial one we see every process of the machine. */
static bool below_us(const struct hf_owner *o)
{
	(void)o;
	return hf_self_pidns() == HF_PIDNS_INIT;
}

int hf_owner_liveness(const struct hf_owner *o)
{
	if (o->lease_ms > 0)
		return HF_ALIVE; /* OW6: its lease decides, never a process */
	return pid_verdict(o) == PID_DEAD ? HF_DEAD : HF_ALIVE;
}

int hf_owner_liveness_fd(const struct hf_owner *o, int probe_fd)
{
	if (o->lease_ms > 0)
		return HF_ALIVE; /* OW6 */
	int v = pid_verdict(o);
	if (v != PID_UNKNOWN)
		return v;
	if (o->kept && (probe_fd < 0 || !o->pidns || !same_kernel(o) || !below_us(o)))
		return HF_ALIVE; /* OW7: its keeper's end proves nothing of it */
	/* OW3: only records that name their namespace held a kernel lock, and
	 * only a lock of this kernel is proof. */
	if (probe_fd < 0 || !o->pidns || !same_kernel(o))
		return HF_ALIVE;
	assert(v == PID_UNKNOWN && "OW3"); /* the pid proves nothing here */
	if (hf_kernel_lock_probe(probe_fd) != 0)
		return HF_ALIVE;
	if (o->kept) /* OW7: dead only with its whole namespace */
		return hf_pidns_seen(o->pidns) == 0 ? HF_DEAD : HF_ALIVE;
	return HF_DEAD;
}

int64_t hf_owner_age_ms(const struct hf_owner *o, int64_t now_ms)
{
	if (o->boot_ms > 0 && o->timens && o->timens == hf_self_timens() && same_kernel(o)) {
		int64_t age = hf_sys_boot_ms() - o->boot_ms;
		return age < 0 ? 0 : age; /* a lie: no clock runs backwards here */
	}
	return now_ms - o->time_ms;
}
