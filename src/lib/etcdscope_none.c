/*
 * etcdscope_none.c - the scope registry on etcd in a build without the
 * etcd client (the static CLI): never reached, because hf_etcd_cfg_parse
 * refuses every backend URI there (etcd_none.c), so no registry on etcd
 * can be made; these are for the linker.
 */
#include "etcdscope.h"

#include <errno.h>

int hf_etcdscope_new(const char *uri, struct hf_etcd_cfg *cfg, struct hf_etcdscope **ret)
{
	(void)uri, (void)cfg, (void)ret;
	return -EPROTONOSUPPORT;
}

void hf_etcdscope_free(struct hf_etcdscope *es)
{
	(void)es;
}

void hf_etcdscope_set_ttl(struct hf_etcdscope *es, int64_t ttl_ms)
{
	(void)es, (void)ttl_ms;
}

int64_t hf_etcdscope_ttl_ms(const struct hf_etcdscope *es)
{
	(void)es;
	return 0;
}

int hf_etcdscope_register(struct hf_etcdscope *es, const struct hf_scopereg_request *req,
			  struct hf_etcdscope_wait *w, uint64_t *ret_generation,
			  struct hf_scopereg_holder *err)
{
	(void)es, (void)req, (void)w, (void)ret_generation, (void)err;
	return -EPROTONOSUPPORT;
}

int hf_etcdscope_release(struct hf_etcdscope *es, const char *name, uint64_t generation,
			 struct hf_scopereg_holder *err)
{
	(void)es, (void)name, (void)generation, (void)err;
	return -EPROTONOSUPPORT;
}

int hf_etcdscope_read(struct hf_etcdscope *es, struct hf_scopereg_table **ret,
		      struct hf_scopereg_holder *err)
{
	(void)es, (void)ret, (void)err;
	return -EPROTONOSUPPORT;
}

int hf_etcdscope_reap(struct hf_etcdscope *es, struct hf_scopereg_table **ret,
		      struct hf_scopereg_holder *err)
{
	(void)es, (void)ret, (void)err;
	return -EPROTONOSUPPORT;
}

void hf_etcdscope_unkeep(struct hf_etcdscope *es)
{
	(void)es;
}

int hf_etcdscope_keep(struct hf_etcdscope *es, int64_t pid, uint64_t start)
{
	(void)es, (void)pid, (void)start;
	return -EPROTONOSUPPORT;
}

int64_t hf_etcdscope_lease(const struct hf_etcdscope *es)
{
	(void)es;
	return 0;
}
