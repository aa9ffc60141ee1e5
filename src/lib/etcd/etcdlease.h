/*
 * etcdlease.h - a lease of etcd and its keep-alive (etcdlease.c): grant,
 * revoke, one keep-alive, a thread renewing it every TTL/3 for a handle,
 * "lost" once its last proven life is over (LE2), and keeping it alive for
 * an owner process. The lock on etcd (etcdlock.c) and the scope registry
 * on etcd (etcdscope.c) hold one each. Not part of the public API; the
 * invariants (LE1, LE2) and hazards are in etcdlease.c.
 */
#ifndef HF_ETCDLEASE_H
#define HF_ETCDLEASE_H

#include "etcd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct hf_owner;

/* The lease a handle holds (embedded in the handle; cfg is the handle's,
 * for the keep-alive thread's own connection). */
struct hf_etcdlease {
	const struct hf_etcd_cfg *cfg;
	int64_t ttl_ms;              /* asked; granted rounded up to a second     */
	int64_t id;                  /* the lease held (0: none)                  */
	/* the keep-alive (LE1) */
	pthread_t ka;
	bool ka_on;
	int ka_pipe[2];
	atomic_int lost;
	_Atomic int64_t alive_until; /* LE2: CLOCK_MONOTONIC ns                   */
	size_t ka_ep;                /* the endpoint the keep-alive starts at     */
	pid_t ka_pid;                /* the process whose thread it is            */
};

/* No lease, the default TTL, the thread's connections made from cfg. */
void hf_etcdlease_init(struct hf_etcdlease *l, const struct hf_etcd_cfg *cfg);
/* Stop the keep-alive (hf_etcdlease_unkeep; in a forked child forget c's
 * connection, the parent's). The lease itself is left as it is. */
void hf_etcdlease_clear(struct hf_etcdlease *l, struct hf_etcd *c);
void hf_etcdlease_set_ttl(struct hf_etcdlease *l, int64_t ttl_ms);
/* The TTL granted: ttl_ms rounded up to a second. */
int64_t hf_etcdlease_ttl_ms(const struct hf_etcdlease *l);

/* Grant a lease of l's TTL on c: 0 and *ret (not held by l yet); the
 * client's failures, -EPROTO (an answer without an ID), why (n bytes). */
int hf_etcdlease_grant(const struct hf_etcdlease *l, struct hf_etcd *c, int64_t *ret, char *why,
		       size_t n);
/* Revoke lease id on c (the keys attached to it go with it): 0; -ENOENT
 * (no such lease: expired or revoked); the client's. */
int hf_etcdlease_revoke(struct hf_etcd *c, int64_t id, char *why, size_t n);
/* One keep-alive of lease id on c: 0 renewed; -ENOENT it is gone; the
 * client's. */
int hf_etcdlease_keepalive(struct hf_etcd *c, int64_t id, char *why, size_t n);

/* l holds lease id from now on (0: none; not revoked), its life proven
 * until TTL after sent_ns (CLOCK_MONOTONIC at the send of its grant or of
 * the last keep-alive etcd answered, LE2). No thread. */
void hf_etcdlease_set(struct hf_etcdlease *l, int64_t id, int64_t sent_ns);
/* Start the keep-alive thread of the lease l holds (LE1), at the endpoint
 * that answered c last. 0; -errno (no thread). */
int hf_etcdlease_start(struct hf_etcdlease *l, struct hf_etcd *c);
/* Stop keeping the lease alive here (detach): the lease stays, with its
 * TTL running; the thread is joined before this returns (LE1). c: the
 * handle's connection (forgotten in a forked child: the parent's). */
void hf_etcdlease_unkeep(struct hf_etcdlease *l, struct hf_etcd *c);
/* Is the lease held past its last proven life (LE2), or did its keep-alive
 * see it end (expired, revoked elsewhere)? */
bool hf_etcdlease_lost(struct hf_etcdlease *l);
/* LE2: renew l's lease on c once, failing over to the next member at once
 * after a failure (each attempt bounded by c's cap) until it is renewed (0:
 * its life proven until TTL after the send of the answered attempt), it is
 * gone (-ENOENT), its last proven life is over (the last failure), or
 * stop_fd (>= 0) is readable (-EINTR). */
int hf_etcdlease_renew(struct hf_etcdlease *l, struct hf_etcd *c, int stop_fd, char *why,
		       size_t n);
/* Keep l's lease alive on c for its owner (o's pid and start time, and its
 * chain, OW5): until the owner and its chain have all ended (then the lease
 * is revoked: 0), the lease ends elsewhere (HF_ENOTHELD), or it could not be
 * renewed within its TTL (HF_ELOST, LE2). No lease held: HF_ENOTHELD. */
int hf_etcdlease_keep(struct hf_etcdlease *l, struct hf_etcd *c, const struct hf_owner *o,
		      char *why, size_t n);

#endif
