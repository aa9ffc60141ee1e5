/* claim.c: take, verify, restore or barrier, scan. A lock object here is a
 * file whose whole content is its token. */
#include "claim.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ident_file(int dirfd, const char *name, char *token, size_t n, void *ctx)
{
	(void)ctx;
	char *buf;
	size_t len;
	int rc = hf_read_file_at(dirfd, name, 0, 4096, &buf, &len, NULL);
	if (rc < 0)
		return rc;
	if (len == 0 || len >= n) {
		free(buf);
		return HF_EUNREADABLE;
	}
	strcpy(token, buf);
	free(buf);
	return 0;
}

static char *dir;
static int dfd;

static void setup(void)
{
	dir = hft_tmpdir();
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
}

static void teardown(void)
{
	hf_fault_inject(NULL, NULL, 0);
	close(dfd);
	hft_rmtree(dir);
	free(dir);
}

TestSuite(claim, .init = setup, .fini = teardown);

static void put(const char *name, const char *content)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	hft_write(p, content);
}

Test(claim, take_verify_match)
{
	put("L", "tokA");
	char claim[HF_CLAIM_NAME_MAX];
	cr_assert_eq(hf_claim_take(dfd, "L", dfd, "L.aside-", claim, sizeof claim), 0);
	cr_assert_eq(strncmp(claim, "L.aside-", 8), 0);
	cr_assert_eq(strlen(claim), 8 + 16);
	cr_assert_eq(hf_claim_verify(dfd, claim, "tokA", ident_file, NULL), 1);
	cr_assert_eq(hf_claim_verify(dfd, claim, "tokB", ident_file, NULL), 0);
	char again[HF_CLAIM_NAME_MAX];
	cr_assert_eq(hf_claim_take(dfd, "L", dfd, "L.aside-", again, sizeof again), -ENOENT,
		     "a second mover finds nothing");
}

Test(claim, restore_mismatch_puts_back)
{
	put("L", "fresh");
	char claim[HF_CLAIM_NAME_MAX];
	cr_assert_eq(hf_claim_take(dfd, "L", dfd, "L.aside-", claim, sizeof claim), 0);
	cr_assert_eq(hf_claim_verify(dfd, claim, "stale", ident_file, NULL), 0);
	cr_assert_eq(hf_claim_restore(dfd, claim, dfd, "L", "fresh", ident_file, NULL), 0);
	char p[600];
	snprintf(p, sizeof p, "%s/L", dir);
	char *s = hft_slurp(p);
	cr_assert_str_eq(s, "fresh");
	free(s);
	cr_assert_eq(hft_count_prefix(dir, "L.aside-"), 0);
}

Test(claim, restore_onto_taken_name_leaves_barrier)
{
	put("L", "fresh");
	char claim[HF_CLAIM_NAME_MAX];
	cr_assert_eq(hf_claim_take(dfd, "L", dfd, "L.aside-", claim, sizeof claim), 0);
	put("L", "third"); /* a third taker arrived while it was aside */
	cr_assert_eq(hf_claim_restore(dfd, claim, dfd, "L", "fresh", ident_file, NULL),
		     HF_EBARRIER);
	char p[600];
	snprintf(p, sizeof p, "%s/L", dir);
	char *s = hft_slurp(p);
	cr_assert_str_eq(s, "third", "CL3: never replaced");
	free(s);
	cr_assert_eq(hft_count_prefix(dir, "L.aside-"), 1, "CL4: the claim stays as a barrier");
}

Test(claim, restore_refuses_changed_claim)
{
	put("L", "fresh");
	char claim[HF_CLAIM_NAME_MAX];
	cr_assert_eq(hf_claim_take(dfd, "L", dfd, "L.aside-", claim, sizeof claim), 0);
	put(claim, ""); /* emptied meanwhile (a sweeper) */
	cr_assert_eq(hf_claim_restore(dfd, claim, dfd, "L", "fresh", ident_file, NULL),
		     HF_EBARRIER, "CL3: an emptied claim never goes back");
	char p[600];
	snprintf(p, sizeof p, "%s/L", dir);
	cr_assert_not(hft_exists(p));
}

static int count_cb(int cfd, const char *name, void *ctx)
{
	(void)cfd;
	(void)name;
	(*(int *)ctx)++;
	return 0;
}

Test(claim, scan_finds_prefixed_and_errors_deny)
{
	put("L.aside-0001", "x");
	put("L.aside-0002", "y");
	put("L", "z");
	put("other", "w");
	int n = 0;
	cr_assert_eq(hf_claim_scan(dfd, "L.aside-", count_cb, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(hf_fault_inject("fail:getdents:1:EIO", NULL, 0), 0);
	n = 0;
	cr_assert_eq(hf_claim_scan(dfd, "L.aside-", count_cb, &n), -EIO, "CL4: a scan error denies");
}

Test(claim, without_noreplace_take_still_moves_and_restore_leaves_a_barrier)
{
	/* A file system that refuses RENAME_NOREPLACE: the kernel's EINVAL is
	 * reported by sys.c as EOPNOTSUPP (simulated here for every rename). */
	put("L", "fresh");
	cr_assert_eq(hf_fault_inject("fail:rename:1:EOPNOTSUPP", NULL, 0), 0);
	char claim[HF_CLAIM_NAME_MAX];
	cr_assert_eq(hf_claim_take(dfd, "L", dfd, "L.aside-", claim, sizeof claim), 0,
		     "CL5: a plain rename to the fresh random name");
	cr_assert_eq(hft_count_prefix(dir, "L.aside-"), 1);
	put("L", "third");
	cr_assert_eq(hf_fault_inject("fail:rename:1:EOPNOTSUPP", NULL, 0), 0);
	cr_assert_eq(hf_claim_restore(dfd, claim, dfd, "L", "fresh", ident_file, NULL),
		     HF_EBARRIER, "CL3: no restore without NOREPLACE");
	char p[600];
	snprintf(p, sizeof p, "%s/L", dir);
	char *s = hft_slurp(p);
	cr_assert_str_eq(s, "third", "never replaced");
	free(s);
	cr_assert_eq(hft_count_prefix(dir, "L.aside-"), 1, "CL4: the claim stays a barrier");
}
