/* Scope specs, canonical paths, kernel identities and pod names
 * (spec.c). Properties: a stored spec that parses is its own format and
 * its path is normal; canonicalisation is idempotent and its result
 * normal; a parsed identity's path is normal; an accepted pod name obeys
 * its rule. */
#include "fuzz.h"

#include "spec.h"

#include <stdbool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > HF_FSID_MAX + 64)
		return 0;
	const char *s = (const char *)data;
	struct hf_spec sp;
	if (hf_spec_parse_canonical(s, size, &sp) == 0) {
		unsigned depth;
		if (sp.glob) /* SC8: its literal prefix is normal */
			FUZZ_CHECK(hf_path_normal(sp.path, sp.lit_len, &depth) &&
				   depth == sp.lit_depth && depth < sp.depth);
		else
			FUZZ_CHECK(hf_path_normal(sp.path, sp.len, &depth) && depth == sp.depth);
		char back[HF_FSID_MAX + 64];
		int n = hf_spec_format(&sp, back, sizeof back);
		FUZZ_CHECK(n >= 0 && (size_t)n == size && !memcmp(back, s, size));
		FUZZ_CHECK(hf_spec_covers(&sp, &sp) && hf_spec_overlap(&sp, &sp));
	}
	size_t plen;
	bool w, rec;
	if (hf_spec_split(s, size, &plen, &w, &rec) == 0)
		FUZZ_CHECK(plen > 0 && plen < size);
	struct hf_fsid id;
	if (hf_fsid_parse(s, size, &id) == 0) {
		unsigned depth;
		FUZZ_CHECK(id.kind == 'r' || id.kind == 'c' || id.kind == 'e' || id.kind == 'g');
		if (id.kind != 'g')
			FUZZ_CHECK(hf_path_normal(id.path, id.len, &depth) && depth == id.depth);
		FUZZ_CHECK(hf_fsid_overlap(&id, &id));
	}
	char *z = fuzz_str(data, size);
	if (hf_pod_name_ok(z)) {
		FUZZ_CHECK(z[0] && z[0] != '-' && !strpbrk(z, " \t\n\"'\\/"));
	}
	/* canonicalisation: the file system is read (lstat, readlink), never
	 * written; a result is absolute, normal, and its own canonical form */
	char c1[PATH_MAX], c2[PATH_MAX];
	if (strlen(z) == size && hf_path_canonicalize(z, c1, sizeof c1) == 0) {
		unsigned depth;
		FUZZ_CHECK(hf_path_normal(c1, strlen(c1), &depth));
		FUZZ_CHECK(hf_path_canonicalize(c1, c2, sizeof c2) == 0 && !strcmp(c1, c2));
	}
	free(z);
	return 0;
}
