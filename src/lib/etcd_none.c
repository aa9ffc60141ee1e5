/*
 * etcd_none.c - the etcd backend's entry points in a build without the
 * etcd client (the static CLI: libcurl cannot be linked statically). A
 * backend URI is recognised and refused with -EPROTONOSUPPORT, so the CLI
 * hands the command to holdfast-etcd (docs/etcd.md); nothing else here
 * is ever reached, because no etcd lock can be made.
 */
#include "etcd.h"
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hf_etcd_cfg_parse(const char *uri, struct hf_etcd_cfg *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	return strncmp(uri, "etcd://", 7) && strncmp(uri, "etcds://", 8) ? -EINVAL
									  : -EPROTONOSUPPORT;
}

int hf_etcd_cfg_str(char **slot, const char *s)
{
	(void)slot, (void)s;
	return -EPROTONOSUPPORT;
}

void hf_etcd_cfg_clear(struct hf_etcd_cfg *cfg)
{
	memset(cfg, 0, sizeof *cfg);
}

int hf_etcdlock_new(const char *path, struct hf_etcd_cfg *cfg, struct hf_etcdlock **ret)
{
	(void)path, (void)cfg, (void)ret;
	return -EPROTONOSUPPORT;
}

void hf_etcdlock_free(struct hf_etcdlock *el)
{
	(void)el;
}

void hf_etcdlock_set_ttl(struct hf_etcdlock *el, int64_t ttl_ms)
{
	(void)el, (void)ttl_ms;
}

const char *hf_etcdlock_key(const struct hf_etcdlock *el)
{
	(void)el;
	return "";
}

const char *hf_etcdlock_why(const struct hf_etcdlock *el)
{
	(void)el;
	return "";
}

int64_t hf_etcdlock_lease(const struct hf_etcdlock *el)
{
	(void)el;
	return 0;
}

int64_t hf_etcdlock_ttl_ms(const struct hf_etcdlock *el)
{
	(void)el;
	return 0;
}

int hf_etcdlock_acquire(struct hf_etcdlock *el, const struct hf_lock_opts *o,
			struct hf_lock_info *ret, struct hf_lock_info *reterr_holder)
{
	(void)el, (void)o, (void)ret, (void)reterr_holder;
	return -EPROTONOSUPPORT;
}

int hf_etcdlock_release(struct hf_etcdlock *el, const char *token,
			struct hf_lock_info *reterr_holder)
{
	(void)el, (void)token, (void)reterr_holder;
	return -EPROTONOSUPPORT;
}

int hf_etcdlock_renew(struct hf_etcdlock *el, const char *token, uint64_t fence,
		      int64_t max_hold_ms, struct hf_lock_info *ret,
		      struct hf_lock_info *reterr_holder)
{
	(void)el, (void)token, (void)fence, (void)max_hold_ms, (void)ret, (void)reterr_holder;
	return -EPROTONOSUPPORT;
}

int hf_etcdlock_status(struct hf_etcdlock *el, struct hf_lock_info *ret)
{
	(void)el, (void)ret;
	return -EPROTONOSUPPORT;
}

bool hf_etcdlock_lost(struct hf_etcdlock *el)
{
	(void)el;
	return true;
}

void hf_etcdlock_unkeep(struct hf_etcdlock *el)
{
	(void)el;
}

int hf_etcdlock_keep(struct hf_etcdlock *el, const struct hf_owner *o)
{
	(void)el, (void)o;
	return -EPROTONOSUPPORT;
}

int hf_etcdsession_new(const char *path, struct hf_etcd_cfg *cfg, struct hf_etcdsession **ret)
{
	(void)path, (void)cfg, (void)ret;
	return -EPROTONOSUPPORT;
}

void hf_etcdsession_free(struct hf_etcdsession *es)
{
	(void)es;
}

const char *hf_etcdsession_key(const struct hf_etcdsession *es)
{
	(void)es;
	return "";
}

const char *hf_etcdsession_why(const struct hf_etcdsession *es)
{
	(void)es;
	return "";
}

int hf_etcd_again(int64_t deadline_ns, int cancel_fd, int broken)
{
	(void)deadline_ns, (void)cancel_fd, (void)broken;
	return -EIO;
}

void hf_etcdsession_wait_begin(struct hf_etcdsession *es)
{
	(void)es;
}

void hf_etcdsession_wait_unanswered(struct hf_etcdsession *es)
{
	(void)es;
}

int hf_etcdsession_take(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			struct hf_sessionlock_record *ret_taken,
			struct hf_sessionlock_status *reterr_holder, int64_t *ret_rev)
{
	(void)es, (void)o, (void)ret_taken, (void)reterr_holder, (void)ret_rev;
	return -EPROTONOSUPPORT;
}

int hf_etcdsession_release(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			   struct hf_sessionlock_status *reterr_holder)
{
	(void)es, (void)o, (void)reterr_holder;
	return -EPROTONOSUPPORT;
}

int hf_etcdsession_renew(struct hf_etcdsession *es, const struct hf_sessionlock_opts *o,
			 struct hf_sessionlock_record *ret,
			 struct hf_sessionlock_status *reterr_holder)
{
	(void)es, (void)o, (void)ret, (void)reterr_holder;
	return -EPROTONOSUPPORT;
}

int hf_etcdsession_status(struct hf_etcdsession *es, int64_t stale_ms,
			  struct hf_sessionlock_status *ret)
{
	(void)es, (void)stale_ms, (void)ret;
	return -EPROTONOSUPPORT;
}

int hf_etcdsession_watch(struct hf_etcdsession *es, int64_t rev, int64_t deadline_ns,
			 int cancel_fd)
{
	(void)es, (void)rev, (void)deadline_ns, (void)cancel_fd;
	return -EPROTONOSUPPORT;
}

int hf_etcd_list(const struct hf_etcd_cfg *cfg, const char *dir, json_t **ret, char *why,
		 size_t n)
{
	(void)cfg, (void)dir, (void)ret, (void)why, (void)n;
	return -EPROTONOSUPPORT;
}

struct hf_etcd_cfg *hf_etcdlock_cfg(struct hf_etcdlock *el)
{
	(void)el;
	return NULL;
}
