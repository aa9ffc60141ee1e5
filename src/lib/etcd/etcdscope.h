/*
 * etcdscope.h - the scope registry kept in etcd (etcdscope.c): the same
 * registrations, refusals, effective scopes and verdicts as the file
 * system's registry (fs/registry.c), with one key per pod attached to the
 * pod's lease (etcdlease.h). Not part of the public API; the protocol, its
 * invariants (ES) and hazards are in etcdscope.c.
 */
#ifndef HF_ETCDSCOPE_H
#define HF_ETCDSCOPE_H

#include "etcd.h"
#include "registry.h"

#define HF_ETCD_SCOPE_PREFIX "/holdfast/scope/" /* + the pod's name         */
#define HF_ETCD_SCOPE_END "/holdfast/scope0"    /* the prefix's range end   */
#define HF_ETCD_SCOPE_ATTEMPTS 64               /* txns lost to other changes */
#define HF_ETCD_SCOPE_WATCH_RETRIES 3          /* broken watches in a row    */

/* How a registration waits (hf_etcdscope_register; NULL: tries once). */
struct hf_etcdscope_wait {
	int64_t wait_ms; /* 0 try once, < 0 forever, else a bound (HF_ETIMEDOUT) */
	int cancel_fd;   /* readable: stop waiting (HF_ECANCELED); -1 none        */
	int refused;     /* out: the last refusal waited on (HF_ECONFLICT,
			    HF_EHELD; its holder in *err), 0 none               */
};

struct hf_etcdscope;

/* A registry on the etcd of cfg (taken: left empty), named uri in
 * messages. 0; -ENOMEM. No I/O. */
int hf_etcdscope_new(const char *uri, struct hf_etcd_cfg *cfg, struct hf_etcdscope **ret);
void hf_etcdscope_free(struct hf_etcdscope *es);
void hf_etcdscope_set_ttl(struct hf_etcdscope *es, int64_t ttl_ms);
int64_t hf_etcdscope_ttl_ms(const struct hf_etcdscope *es);
/* As hf_scopereg_register, on etcd (req->registry, lock_wait_ms and
 * cancel_fd unused): 0 and the generation (the pod key's create_revision);
 * its lease is kept alive by a thread of es until release, unkeep or free.
 * With w (wait_ms != 0), a refusal (HF_ECONFLICT, HF_EHELD) is waited out
 * by a watch (ES5): HF_ETIMEDOUT at the deadline, HF_ECANCELED, -EBADF
 * (cancel_fd), the last holder in *err and its refusal in w->refused. */
int hf_etcdscope_register(struct hf_etcdscope *es, const struct hf_scopereg_request *req,
			  struct hf_etcdscope_wait *w, uint64_t *ret_generation,
			  struct hf_scopereg_holder *err);
/* As hf_scopereg_release: revoke name's lease (its key goes with it). */
/* ES7: one keep-alive of leased pod name's etcd lease (lease_ms 0 or its
 * own length: etcd keeps a lease's TTL). 0; HF_ENOTHELD (no key: never
 * registered, released, or expired); HF_ELOST (expired between the read and
 * the keep-alive); HF_ENOTYOURS; -EINVAL (not leased); -EOPNOTSUPP (another
 * length). */
int hf_etcdscope_renew(struct hf_etcdscope *es, const char *name, uint64_t generation,
		       int64_t lease_ms, struct hf_scopereg_holder *err);
int hf_etcdscope_release(struct hf_etcdscope *es, const char *name, uint64_t generation,
			 struct hf_scopereg_holder *err);
/* As hf_scopereg_read / hf_scopereg_reap. */
int hf_etcdscope_read(struct hf_etcdscope *es, struct hf_scopereg_table **ret,
		      struct hf_scopereg_holder *err);
int hf_etcdscope_reap(struct hf_etcdscope *es, struct hf_scopereg_table **ret,
		      struct hf_scopereg_holder *err);
/* Stop keeping the registration's lease alive here (detach). */
void hf_etcdscope_unkeep(struct hf_etcdscope *es);
/* Keep the registration's lease alive for its owner (pid, start) until it
 * ends (then revoke it: 0), HF_ENOTHELD (released elsewhere or expired),
 * HF_ELOST (not renewed within its TTL): hf_etcdlease_keep. */
int hf_etcdscope_keep(struct hf_etcdscope *es, int64_t pid, uint64_t start);
/* The lease of the registration es made (0: none). */
int64_t hf_etcdscope_lease(const struct hf_etcdscope *es);

#endif
