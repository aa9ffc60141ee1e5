/*
 * backend.c - the one list of backends and the one place a handle's
 * backend options are parsed (backend.h: BE1). A backend is selected by
 * its URI's scheme; "file" or none is the file system.
 *
 * One list, as curl's vtls.c has: a build without the etcd objects (the
 * static CLI: libcurl has no static archive on Debian) compiles this file
 * with HF_NO_ETCD, and its list has the etcd row with no entry - an etcd
 * URI is known there and refused with -EPROTONOSUPPORT, by this file only,
 * and the CLI hands the command to holdfast-etcd (docs/etcd.md). No
 * backend has stubs.
 */
#include "backend.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifndef HF_NO_ETCD
extern const struct hf_backend hf_etcd_backend;
#define ETCD_ENTRY (&hf_etcd_backend)
#else
#define ETCD_ENTRY NULL
#endif

static const struct row {
	const char *scheme[2];            /* a URI's prefix selects the row   */
	const struct hf_backend *entry;   /* NULL: not in this build          */
} backends[] = {
	{ { "etcd://", "etcds://" }, ETCD_ENTRY },
};

/* The backend of uri (NULL: the file system's): 0 and *ret; -EINVAL no
 * backend's URI; -EPROTONOSUPPORT a backend this build has not. */
static int find(const char *uri, const struct hf_backend **ret)
{
	if (!uri || !strcmp(uri, "file")) {
		*ret = &hf_fs_backend;
		return 0;
	}
	for (size_t i = 0; i < sizeof backends / sizeof *backends; i++)
		for (size_t k = 0; k < 2; k++) {
			const char *p = backends[i].scheme[k];
			if (!p || strncmp(uri, p, strlen(p)))
				continue;
			if (!backends[i].entry)
				return -EPROTONOSUPPORT;
			*ret = backends[i].entry;
			return ret[0]->check ? ret[0]->check(uri) : 0;
		}
	return -EINVAL;
}

const struct hf_backend *hf_backend_of(const struct hf_backend_opts *b)
{
	return b->backend ? b->backend : &hf_fs_backend;
}

int hf_backend_set_str(struct hf_backend_opts *b, int opt, const char *v, bool held)
{
	char **slot;
	switch (opt) {
	case HF_OPT_BACKEND:
		slot = &b->uri;
		break;
	case HF_OPT_ETCD_USER:
		slot = &b->user;
		break;
	case HF_OPT_ETCD_PASSWORD_FILE:
		slot = &b->password_file;
		break;
	case HF_OPT_ETCD_CA_FILE:
		slot = &b->ca_file;
		break;
	default:
		return 1;
	}
	const struct hf_backend *be = b->backend;
	if (opt == HF_OPT_BACKEND) {
		if (v && !strcmp(v, "file"))
			v = NULL;
		int rc = find(v, &be);
		if (rc < 0)
			return rc;
	}
	if (v && (!*v || strlen(v) >= PATH_MAX))
		return -EINVAL;
	if (held && opt == HF_OPT_BACKEND)
		return -EBUSY; /* BE2: what is held stays where it was taken */
	char *c = v ? strdup(v) : NULL;
	if (v && !c)
		return -ENOMEM;
	free(*slot);
	*slot = c;
	b->backend = be;
	b->changes++;
	return 0;
}

int hf_backend_set(struct hf_backend_opts *b, int opt, int64_t v)
{
	if (opt == HF_OPT_TTL_MS)
		b->ttl_ms = v;
	else if (opt == HF_OPT_TIMEOUT_MS)
		b->timeout_ms = v;
	else
		return 1;
	b->changes++;
	return 0;
}

void hf_backend_clear(struct hf_backend_opts *b)
{
	free(b->uri);
	free(b->user);
	free(b->password_file);
	free(b->ca_file);
	memset(b, 0, sizeof *b);
}
