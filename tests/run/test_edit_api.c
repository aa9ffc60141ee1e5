/* hf_edit (holdfast.h) called as a C program calls it: open under a held
 * lock, read, commit; refusals come with a record that names the reason,
 * and an edit is spent after one commit. */
#include "rt.h"

#include <fcntl.h>
#include <sys/stat.h>

HFT_SCRATCH_SUITE(edit_api, 60);

static hf_lock *held_lock(const char *file)
{
	char *lp;
	cr_assert_geq(asprintf(&lp, "%s.lock", file), 0);
	hf_lock *l;
	cr_assert_eq(hf_lock_new(lp, &l), 0);
	cr_assert_eq(hf_lock_acquire(l), 0);
	free(lp);
	return l;
}

Test(edit_api, replaces_the_file_and_keeps_its_mode)
{
	char *f = rt_path(dir, "state");
	hft_write(f, "old\n");
	cr_assert_eq(chmod(f, 0640), 0);
	hf_lock *l = held_lock(f);
	hf_edit *e;
	cr_assert_eq(hf_edit_open(l, f, &e, NULL), 0);
	char buf[16] = "";
	cr_assert_eq(pread(hf_edit_fd(e), buf, sizeof buf - 1, 0), 4);
	cr_assert_str_eq(buf, "old\n");
	cr_assert_eq(hf_edit_commit(e, "new\n", 4), 0);
	cr_assert_eq(hf_edit_commit(e, "again\n", 6), -EALREADY, "an edit is spent after a commit");
	hf_edit_free(e);
	char *s = hft_slurp(f);
	cr_assert_str_eq(s, "new\n");
	struct stat st;
	cr_assert_eq(stat(f, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640);
	cr_assert_eq(hft_count_prefix(dir, "state.tmp-"), 0, "no temporary left");
	cr_assert_eq(hf_lock_release(l), 0);
	hf_lock_free(l);
	free(s);
	free(f);
}

Test(edit_api, a_missing_file_is_created_and_a_symlink_refused_with_its_reason)
{
	char *f = rt_path(dir, "new"), *link = rt_path(dir, "link");
	hf_lock *l = held_lock(f);
	hf_edit *e;
	cr_assert_eq(hf_edit_open(l, f, &e, NULL), 0);
	cr_assert_eq(hf_edit_fd(e), -1, "FILE does not exist");
	cr_assert_eq(hf_edit_commit(e, "x", 1), 0);
	hf_edit_free(e);
	char *s = hft_slurp(f);
	cr_assert_str_eq(s, "x");
	free(s);
	cr_assert_eq(symlink(f, link), 0);
	hf_lock *l2 = held_lock(link);
	hf_rec *why = NULL;
	cr_assert_eq(hf_edit_open(l2, link, &e, &why), HF_EUNSAFE);
	cr_assert_not_null(why);
	cr_assert_str_eq(hf_rec_str(why, "reason"), "symlink");
	cr_assert_str_eq(hf_rec_str(why, "path"), link);
	hf_rec_free(why);
	hf_lock_free(l2);
	hf_lock_free(l);
	free(f);
	free(link);
}

Test(edit_api, nothing_is_opened_without_the_lock_and_a_lost_lock_commits_nothing)
{
	char *f = rt_path(dir, "s"), *lp = rt_path(dir, "s.lock");
	hft_write(f, "keep\n");
	hf_lock *l;
	cr_assert_eq(hf_lock_new(lp, &l), 0);
	hf_edit *e;
	cr_assert_eq(hf_edit_open(l, f, &e, NULL), HF_ENOTHELD);
	cr_assert_eq(hf_lock_acquire(l), 0);
	cr_assert_eq(hf_edit_open(l, f, &e, NULL), 0);
	/* the lock is taken from us: released behind the handle's back and
	 * acquired by another */
	hf_lock *thief;
	cr_assert_eq(hf_lock_new(lp, &thief), 0);
	hf_lock *mine;
	cr_assert_eq(hf_lock_new(lp, &mine), 0);
	cr_assert_eq(hf_lock_adopt(mine, hf_lock_token(l)), 0);
	cr_assert_eq(hf_lock_release(mine), 0);
	cr_assert_eq(hf_lock_acquire(thief), 0);
	cr_assert_eq(hf_edit_commit(e, "lost\n", 5), HF_ELOST);
	cr_assert_str_eq(hf_rec_str(hf_edit_notes(e), "reason"), "lost");
	hf_edit_free(e);
	char *s = hft_slurp(f);
	cr_assert_str_eq(s, "keep\n", "FILE untouched");
	cr_assert_eq(hft_count_prefix(dir, "s.tmp-"), 0, "the staged file is removed");
	hf_lock_free(mine);
	hf_lock_free(thief);
	hf_lock_free(l);
	free(s);
	free(f);
	free(lp);
}
