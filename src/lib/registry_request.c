/*
 * registry_request.c - a registration's specs: made canonical and
 * identified (what each path reaches, by this process's mount table) before
 * the registry's lock is taken, since look-ups are slow; then stored into
 * the table's arena (RT1) with the entry registry.c adds.
 */
#include "registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hf_regreq_free(struct hf_regreq *q)
{
	for (size_t i = 0; i < q->n; i++) {
		hf_strv_free(q->ids_text[i], q->nids[i]);
		free(q->ids[i]);
	}
	free(q->canon);
	free(q->specs);
	free(q);
}

int hf_regreq_make(const struct hf_scopereg_request *req, struct hf_regreq **ret,
			  struct hf_scopereg_holder *err)
{
	struct hf_regreq *q = calloc(1, sizeof *q);
	if (!q)
		return -ENOMEM;
	q->canon = malloc(req->nspecs * sizeof *q->canon);
	q->specs = calloc(req->nspecs, sizeof *q->specs);
	if (!q->canon || !q->specs) {
		hf_regreq_free(q);
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < req->nspecs && rc == 0; i++) {
		rc = hf_spec_canonicalize(req->specs[i], q->canon[i], sizeof q->canon[i],
					  &q->specs[i]);
		if (rc < 0 && err) {
			err->request_index = i;
			snprintf(err->reason, sizeof err->reason,
				 rc == -EINVAL ? "not a spec PATH:MODE[:recursive] (MODE read or write) "
						 "of UTF-8 text without control characters"
					       : "cannot resolve its path: %s",
				 hf_strerror(rc));
		}
	}
	/* SC5, SC6: what each path reaches, by the mount table; unknown when it
	 * cannot be read (then by path only) */
	struct hf_mounts m;
	if (req->by_path) { /* etcd: nothing to identify (no mount table read) */
		memset(&m, 0, sizeof m);
		m.top = -1;
	} else {
		hf_mounts_load(&m);
	}
	for (size_t i = 0; i < req->nspecs && rc == 0; i++, q->n++) {
		rc = hf_spec_identify(&m, &q->specs[i], &q->ids_text[i], &q->nids[i]);
		if (rc < 0)
			break;
		/* RG10: only text a reader accepts */
		size_t w = 0;
		for (size_t k = 0; k < q->nids[i]; k++) {
			if (hf_text_ok(q->ids_text[i][k], HF_FSID_MAX - 1))
				q->ids_text[i][w++] = q->ids_text[i][k];
			else
				free(q->ids_text[i][k]);
		}
		q->nids[i] = w;
		q->ids[i] = calloc(w ? w : 1, sizeof *q->ids[i]);
		if (!q->ids[i]) {
			rc = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < w && rc == 0; k++)
			if (hf_fsid_parse(q->ids_text[i][k], strlen(q->ids_text[i][k]),
					  &q->ids[i][k]) < 0)
				rc = -EINVAL; /* never: hf_spec_identify writes this form */
		if (rc < 0)
			break;
		q->specs[i].ids = q->ids[i];
		q->specs[i].id_text = (const char *const *)q->ids_text[i];
		q->specs[i].nids = (unsigned)w;
	}
	hf_mounts_free(&m);
	if (rc < 0) {
		q->n = req->nspecs < q->n + 1 ? req->nspecs : q->n + 1;
		hf_regreq_free(q);
		return rc;
	}
	*ret = q;
	return 0;
}

/* Store the request's specs, identities included, in a (arena-owned). */
int hf_regreq_store(struct hf_scopereg_table *t, struct hf_alloc *a, const struct hf_regreq *q)
{
	a->nspecs = q->n;
	a->spec_text = hf_regtable_alloc(t, q->n * sizeof *a->spec_text);
	a->specs = hf_regtable_alloc(t, q->n * sizeof *a->specs);
	size_t nfs = 0;
	for (size_t i = 0; i < q->n; i++)
		nfs += q->nids[i];
	a->nfs = nfs;
	if (nfs) {
		a->fs = hf_regtable_alloc(t, nfs * sizeof *a->fs);
		a->fs_text = hf_regtable_alloc(t, nfs * sizeof *a->fs_text);
		a->fs_spec = hf_regtable_alloc(t, nfs * sizeof *a->fs_spec);
		if (!a->fs || !a->fs_text || !a->fs_spec)
			return -ENOMEM;
	}
	if (!a->spec_text || !a->specs)
		return -ENOMEM;
	size_t at = 0;
	for (size_t i = 0; i < q->n; i++) {
		size_t len = strlen(q->canon[i]);
		a->spec_text[i] = hf_regtable_strndup(t, q->canon[i], len);
		if (!a->spec_text[i])
			return -ENOMEM;
		hf_spec_parse_canonical(a->spec_text[i], len, &a->specs[i]);
		a->specs[i].ids = a->fs ? a->fs + at : NULL;
		a->specs[i].id_text = a->fs_text ? a->fs_text + at : NULL;
		a->specs[i].nids = (unsigned)q->nids[i];
		for (size_t k = 0; k < q->nids[i]; k++, at++) {
			const char *s = q->ids_text[i][k];
			size_t l = strlen(s);
			a->fs_text[at] = hf_regtable_strndup(t, s, l);
			if (!a->fs_text[at])
				return -ENOMEM;
			hf_fsid_parse(a->fs_text[at], l, &a->fs[at]);
			a->fs_spec[at] = i;
		}
	}
	return 0;
}
