/*
 * etcdlease.c - a lease of etcd and its keep-alive, for the handles that
 * hold one: the lock on etcd (etcdlock.c: one lease per acquisition, its
 * key attached) and the scope registry on etcd (etcdscope.c: one per
 * registration, its pod key attached). Grant, revoke, one keep-alive, the
 * keep-alive thread, "lost", and keeping a lease alive for an owner process
 * (a keeper: `holdfast lock acquire`, `holdfast scope register`).
 *
 * Artifacts
 * ---------
 *   lease   granted with the handle's TTL rounded up to a second (default
 *           HF_ETCD_TTL_MS_DEFAULT, 10 s); the keys attached to it live
 *           while it is kept alive and go with its revoke or expiry.
 *
 * Steps
 * -----
 *   keep-alive thread (hf_etcdlease_start): every TTL/3, on a connection
 *     of its own (made from the handle's config, starting at the member
 *     that answered the handle last, each request capped at TTL/6), renew
 *     the lease (hf_etcdlease_renew); gone or not renewed within its proven
 *     life: "lost", the thread ends. Stopped through its pipe and joined.
 *   keep (hf_etcdlease_keep, a keeper process): wait on the owner's and its
 *     chain's pidfds up to TTL/3 at a time; all ended: revoke the lease
 *     (0); else renew as the thread does.
 *
 * Invariants (their numbers are the lock's, etcdlock.c, where they were
 * stated first; they hold for every lease a handle holds)
 * ----------
 *   (LE1) The keep-alive renews only the lease of what the handle holds;
 *         it stops (joined) before the release, detach or free returns.
 *   (LE2) A holder believes its lease live only until TTL after the send
 *         of the last grant or keep-alive etcd answered (etcd renews at a
 *         time after the send, so the lease lives at least that long):
 *         hf_etcdlease_lost turns true then, even while a keep-alive is in
 *         flight. A keep-alive is idempotent, so after a failure it goes
 *         to the next member at once; each attempt is bounded by TTL/6
 *         (renewals start every TTL/3), so one unreachable member costs at
 *         most a sixth of the TTL and leaves half of it for the others.
 *
 * Hazards
 * -------
 *   - Killing the keeper (kill -9) stops the keep-alive: the keys end after
 *     the TTL while their owner may live on.
 *   - Leases survive a member restart; a TTL is extended by etcd on a leader
 *     change. A paused holder (SIGSTOP) loses its lease after its TTL.
 *   - A grant whose answer was lost and that is granted again leaves the
 *     first lease, with no key, until its TTL: harmless, not reused.
 *   - A forked child shares the parent's thread and socket: it forgets
 *     them (hf_etcdlease_unkeep, hf_etcd_forget), never stops them.
 */
#include "etcdlease.h"
#include "floor.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void hf_etcdlease_init(struct hf_etcdlease *l, const struct hf_etcd_cfg *cfg)
{
	memset(l, 0, sizeof *l);
	l->cfg = cfg;
	l->ttl_ms = HF_ETCD_TTL_MS_DEFAULT;
	l->ka_pipe[0] = l->ka_pipe[1] = -1;
}

void hf_etcdlease_set_ttl(struct hf_etcdlease *l, int64_t ttl_ms)
{
	l->ttl_ms = ttl_ms > 0 ? ttl_ms : HF_ETCD_TTL_MS_DEFAULT;
}

int64_t hf_etcdlease_ttl_ms(const struct hf_etcdlease *l)
{
	return (l->ttl_ms + 999) / 1000 * 1000;
}

bool hf_etcdlease_lost(struct hf_etcdlease *l)
{
	/* LE2: past the lease's last proven life, whatever the thread does */
	return atomic_load(&l->lost) != 0 ||
	       (l->ka_on && hf_sys_mono_ns() >= atomic_load(&l->alive_until));
}

/* ---- requests ---------------------------------------------------------------- */

int hf_etcdlease_grant(const struct hf_etcdlease *l, struct hf_etcd *c, int64_t *ret, char *why,
		       size_t n)
{
	json_t *a = NULL;
	*ret = 0;
	int rc = hf_etcd_request(c, "/v3/lease/grant",
				 json_pack("{s:I}", "TTL",
					   (json_int_t)(hf_etcdlease_ttl_ms(l) / 1000)),
				 &a, why, n);
	if (rc < 0)
		return rc;
	rc = hf_etcd_i64(a, "ID", ret);
	json_decref(a);
	if (rc < 0 || *ret == 0) {
		*ret = 0;
		snprintf(why, n, "etcd: a lease grant answered without an ID");
		return -EPROTO;
	}
	return 0;
}

int hf_etcdlease_revoke(struct hf_etcd *c, int64_t id, char *why, size_t n)
{
	char s[24];
	snprintf(s, sizeof s, "%lld", (long long)id);
	return hf_etcd_request(c, "/v3/lease/revoke", json_pack("{s:s}", "ID", s), NULL, why, n);
}

int hf_etcdlease_keepalive(struct hf_etcd *c, int64_t id, char *why, size_t n)
{
	char s[24];
	snprintf(s, sizeof s, "%lld", (long long)id);
	json_t *a = NULL;
	int rc = hf_etcd_call(c, "/v3/lease/keepalive", json_pack("{s:s}", "ID", s), &a, why, n);
	if (rc < 0)
		return rc;
	int64_t ttl = 0;
	hf_etcd_i64(json_object_get(a, "result"), "TTL", &ttl); /* absent: 0, gone */
	json_decref(a);
	return ttl > 0 ? 0 : -ENOENT;
}

int hf_etcdlease_renew(struct hf_etcdlease *l, struct hf_etcd *c, int stop_fd, char *why,
		       size_t n)
{
	int64_t ttl_ns = hf_etcdlease_ttl_ms(l) * 1000000LL;
	for (;;) {
		int64_t sent = hf_sys_mono_ns();
		int rc = hf_etcdlease_keepalive(c, l->id, why, n);
		if (rc == 0) {
			atomic_store(&l->alive_until, sent + ttl_ns);
			return 0;
		}
		if (rc == -ENOENT || hf_sys_mono_ns() >= atomic_load(&l->alive_until))
			return rc;
		/* a keep-alive may go anywhere: a request that got no answer moved
		 * the next one to the next member already (etcd.c step 3) */
		if (stop_fd >= 0) {
			struct pollfd p = { .fd = stop_fd, .events = POLLIN };
			if (hf_sys_poll(&p, 1, 50) != 0)
				return -EINTR;
		} else {
			hf_sys_sleep_ms(50); /* members that refuse at once: no hot loop */
		}
	}
}

/* ---- the keep-alive thread (LE1) ----------------------------------------------- */

static void *ka_main(void *arg)
{
	struct hf_etcdlease *l = arg;
	struct hf_etcd *c = NULL;
	int64_t period = hf_etcdlease_ttl_ms(l) / 3;
	char why[HF_ETCD_WHY_MAX];
	for (;;) {
		struct pollfd p = { .fd = l->ka_pipe[0], .events = POLLIN };
		if (hf_sys_poll(&p, 1, (int)period) != 0)
			break; /* told to stop (or the pipe broke) */
		if (!c) {
			if (hf_etcd_open(l->cfg, &c) < 0) {
				c = NULL;
				if (hf_sys_mono_ns() < atomic_load(&l->alive_until))
					continue;
				atomic_store(&l->lost, 1);
				break;
			}
			hf_etcd_cap_ms(c, period / 2); /* LE2 */
			hf_etcd_prefer(c, l->ka_ep);
		}
		int rc = hf_etcdlease_renew(l, c, l->ka_pipe[0], why, sizeof why);
		if (rc == -EINTR)
			break;
		if (rc < 0) {
			atomic_store(&l->lost, 1);
			break;
		}
	}
	hf_etcd_close(c);
	return NULL;
}

void hf_etcdlease_set(struct hf_etcdlease *l, int64_t id, int64_t sent_ns)
{
	l->id = id;
	/* LE2: from the send of its grant or last answered keep-alive */
	atomic_store(&l->alive_until, sent_ns + hf_etcdlease_ttl_ms(l) * 1000000LL);
}

int hf_etcdlease_start(struct hf_etcdlease *l, struct hf_etcd *c)
{
	assert(!l->ka_on && l->id && "LE1"); /* one keep-alive, of what is held */
	atomic_store(&l->lost, 0);
	l->ka_ep = hf_etcd_endpoint(c); /* the member that answered us last */
	int rc = hf_sys_pipe2(l->ka_pipe, O_CLOEXEC);
	if (rc < 0)
		return rc;
	rc = -pthread_create(&l->ka, NULL, ka_main, l);
	if (rc < 0) {
		hf_sys_close(l->ka_pipe[0]);
		hf_sys_close(l->ka_pipe[1]);
		l->ka_pipe[0] = l->ka_pipe[1] = -1;
		return rc;
	}
	l->ka_on = true;
	l->ka_pid = hf_sys_getpid();
	return 0;
}

void hf_etcdlease_unkeep(struct hf_etcdlease *l, struct hf_etcd *c)
{
	if (!l->ka_on)
		return;
	if (l->ka_pid != hf_sys_getpid()) { /* a forked child: the thread and its pipe
					are the parent's (LE1) */
		l->ka_on = false;
		l->ka_pipe[0] = l->ka_pipe[1] = -1;
		hf_etcd_forget(c);
		return;
	}
	char b = 1;
	hf_sys_write(l->ka_pipe[1], &b, 1);
	pthread_join(l->ka, NULL);
	hf_sys_close(l->ka_pipe[0]);
	hf_sys_close(l->ka_pipe[1]);
	l->ka_pipe[0] = l->ka_pipe[1] = -1;
	l->ka_on = false;
}

void hf_etcdlease_clear(struct hf_etcdlease *l, struct hf_etcd *c)
{
	if (l->ka_on && l->ka_pid != hf_sys_getpid())
		hf_etcd_forget(c); /* a forked child: the parent's socket */
	hf_etcdlease_unkeep(l, c);
}

/* ---- keeping a lease alive for an owner process --------------------------------- */

int hf_etcdlease_keep(struct hf_etcdlease *l, struct hf_etcd *c, const struct hf_owner *o,
		      char *why, size_t n)
{
	if (!l->id)
		return HF_ENOTHELD;
	int rc;
	struct hf_procset owners; /* the owner and its chain (OW5) */
	hf_procset_init(&owners);
	hf_procset_add(&owners, (pid_t)o->pid, o->pid_start);
	for (unsigned i = 0; i < o->nchain && i < HF_OWNER_CHAIN_MAX; i++)
		hf_procset_add(&owners, (pid_t)o->chain[i].pid, o->chain[i].start);
	if (owners.n == 0) {
		rc = hf_etcdlease_revoke(c, l->id, why, n); /* its owners are gone already */
		l->id = 0;
		return rc == -ENOENT ? HF_ENOTHELD : rc;
	}
	int64_t period = hf_etcdlease_ttl_ms(l) / 3, last_ok = hf_sys_mono_ns();
	if (atomic_load(&l->alive_until) == 0)
		atomic_store(&l->alive_until, last_ok + hf_etcdlease_ttl_ms(l) * 1000000LL);
	hf_etcd_cap_ms(c, period / 2); /* LE2 */
	for (;;) {
		int fds[HF_PROCSET_MAX];
		unsigned nfd = hf_procset_fds(&owners, fds);
		int64_t left = period - (hf_sys_mono_ns() - last_ok) / 1000000;
		if (left < 0)
			left = 0;
		if (nfd) {
			struct pollfd p[HF_PROCSET_MAX];
			for (unsigned i = 0; i < nfd; i++)
				p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
			hf_sys_poll(p, nfd, (int)left);
		} else {
			hf_sys_sleep_ms((int)(left < 1000 ? left : 1000));
		}
		if (hf_procset_reap(&owners) == 0) {
			rc = hf_etcdlease_revoke(c, l->id, why, n);
			l->id = 0;
			break;
		}
		if (hf_sys_mono_ns() - last_ok < period * 1000000LL)
			continue; /* an owner ended, the others live: not time to renew */
		rc = hf_etcdlease_renew(l, c, -1, why, n);
		if (rc == 0) {
			last_ok = hf_sys_mono_ns();
			continue;
		}
		if (rc == -ENOENT) {
			rc = HF_ENOTHELD; /* released (revoked) elsewhere, or expired */
			l->id = 0;
			break;
		}
		rc = HF_ELOST; /* not renewed within its TTL (LE2) */
		break;
	}
	hf_procset_close(&owners);
	return rc == -ENOENT ? 0 : rc;
}
