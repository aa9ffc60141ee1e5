/* Renewal (dirlock.c DR1-DR5, DL14), max-hold none, fences across a deleted
 * state directory (FC2), and the state directory's .gitignore (DL16): at
 * the API, in pause-point races with a reaper, and from real shells. */
#include "dl.h"
#include "hft.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir, *lock;

static void setup(void)
{
	dl_fixture(&dir, &lock);
}

static void teardown(void)
{
	dl_fixture_end(&dir, &lock);
}

TestSuite(renew, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(epoch, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(git, .init = setup, .fini = teardown, .timeout = 120);

#define HOUR (3600LL * 1000)

static hf_rec *status(void)
{
	hf_rec *r;
	cr_assert_eq(hf_lock_status(lock, &r), 0);
	return r;
}

static int64_t field(const hf_rec *r, const char *k)
{
	int64_t v = -1;
	hf_rec_int(r, k, &v);
	return v;
}

/* An adopted handle renewing token with max-hold mh (0: keep). */
static int renew_token(const char *token, int64_t mh, hf_lock **ret)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new(lock, &l), 0);
	cr_assert_eq(hf_lock_adopt(l, token), 0);
	if (mh)
		cr_assert_eq(hf_lock_set(l, HF_OPT_MAX_HOLD_MS, mh), 0);
	int rc = hf_lock_renew(l);
	if (ret)
		*ret = l;
	else
		hf_lock_free(l);
	return rc;
}

/* A leaked record (2 h old, a live owner) is renewed: the same token and
 * fence, a new window, the new max-hold; judges see it held again. */
Test(renew, renew_keeps_token_and_fence_restarts_the_window)
{
	pid_t life = dl_life();
	char token[40];
	dl_write_record(lock, life, hf_sys_now_ms() - 2 * HOUR, 7, 0, token);
	hf_rec *r = status();
	cr_assert_str_eq(hf_rec_str(r, "state"), "leaked");
	hf_rec_free(r);
	hf_lock *l;
	cr_assert_eq(renew_token(token, 3 * HOUR, &l), 0);
	cr_assert_eq(field(hf_lock_holder(l), "fence"), 7);
	hf_lock_free(l); /* adopted: frees without releasing */
	r = status();
	cr_assert_str_eq(hf_rec_str(r, "state"), "held");
	cr_assert_str_eq(hf_rec_str(r, "token"), token);
	cr_assert_eq(field(r, "fence"), 7, "the fence is unchanged");
	cr_assert_eq(field(r, "pid"), life, "the owner is unchanged");
	cr_assert_eq(field(r, "max_hold_ms"), 3 * HOUR);
	cr_assert_lt(field(r, "age_ms"), HOUR, "the window restarted");
	hf_rec_free(r);
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), HF_EHELD, "no longer reapable as leaked");
	dl_kill(life);
}

/* An acquired handle renews its own lock; the handle's record follows. */
Test(renew, acquired_handle_renews_and_still_releases)
{
	hf_lock *l;
	cr_assert_eq(hf_lock_new(lock, &l), 0);
	cr_assert_eq(hf_lock_acquire(l), 0);
	uint64_t f = hf_lock_fence(l);
	cr_assert_eq(hf_lock_set(l, HF_OPT_MAX_HOLD_MS, HF_MAX_HOLD_NONE), 0);
	cr_assert_eq(hf_lock_renew(l), 0);
	cr_assert_eq(hf_lock_fence(l), f);
	cr_assert_eq(hf_lock_check(l), 0, "still ours");
	hf_rec *r = status();
	cr_assert_eq(field(r, "max_hold_ms"), HF_MAX_HOLD_NONE);
	hf_rec_free(r);
	cr_assert_eq(hf_lock_release(l), 0);
	cr_assert_eq(hf_lock_renew(l), HF_ENOTHELD, "a released handle renews nothing");
	hf_lock_free(l);
	cr_assert_not(hft_exists(lock));
}

Test(renew, refused_when_not_yours_and_not_held_when_free)
{
	pid_t life = dl_life();
	char token[40];
	dl_write_record(lock, life, hf_sys_now_ms(), 3, 0, token);
	hf_lock *l;
	cr_assert_eq(renew_token("0123456789abcdef0123456789abcdef", 0, &l), HF_ENOTYOURS);
	cr_assert_eq(field(hf_lock_holder(l), "pid"), life, "the holder is named");
	hf_lock_free(l);
	char *p = dl_path(lock, "owner"), *before = hft_slurp(p);
	hft_rmtree(lock);
	cr_assert_eq(renew_token(token, 0, NULL), HF_ENOTHELD);
	cr_assert_not(hft_exists(lock), "a refused renewal makes nothing");
	free(p);
	free(before);
	dl_kill(life);
}

Test(renew, dead_owner_is_not_renewed)
{
	pid_t life = dl_life();
	char token[40];
	dl_write_record(lock, life, hf_sys_now_ms(), 3, 0, token);
	dl_kill(life);
	cr_assert_eq(renew_token(token, 0, NULL), HF_ELOST);
}

/* The race the identity by bytes is for (DL14): a reaper judged the old,
 * leaked record; the holder renews before the reaper takes it. The reaper's
 * verification finds another record (same token, other bytes) and puts it
 * back: the renewed holder keeps its lock, the reaper is told it is held.
 * With the token alone as identity the reaper would remove the renewed
 * record and enter. */
Test(renew, reaper_that_judged_the_old_record_puts_the_renewed_one_back)
{
	pid_t life = dl_life();
	char token[40];
	dl_write_record(lock, life, hf_sys_now_ms() - 2 * HOUR, 5, 0, token);
	char *res = dl_path(dir, "result");
	struct dl_acq a = { .path = lock, .result = res };
	struct hft_child c;
	hft_spawn_fn(&c, "pause:dirlock.reap.judged", dl_acq, &a);
	hft_expect(&c, "dirlock.reap.judged");
	cr_assert_eq(renew_token(token, 0, NULL), 0);
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), DL_HELD, "the reaper finds the renewed holder");
	hf_rec *r = status();
	cr_assert_str_eq(hf_rec_str(r, "state"), "held");
	cr_assert_str_eq(hf_rec_str(r, "token"), token);
	cr_assert_eq(field(r, "fence"), 5);
	cr_assert_eq(field(r, "claims"), 0, "put back, no barrier left");
	hf_rec_free(r);
	free(res);
	dl_kill(life);
}

static int renew_fn(void *arg)
{
	const char *token = arg;
	hf_lock *l;
	if (hf_lock_new(lock, &l) || hf_lock_adopt(l, token))
		return 9;
	int rc = hf_lock_renew(l);
	hf_lock_free(l);
	return rc == 0 ? 0 : rc == HF_ELOST ? 3 : rc == HF_ENOTHELD ? 4 : rc == HF_ENOTYOURS ? 5 : 6;
}

/* The lock's record, written age_ms ago under a new token (into token) and
 * bound to a live owner (returned: dl_kill it), and a child c that adopts
 * and renews it, paused once it has judged the record its own. c's exit is
 * renew_fn's: 0 renewed, 3 lost, 4 not held, 5 not yours. */
static pid_t spawn_judged_renewer(struct hft_child *c, int64_t age_ms, char token[40])
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms() - age_ms, 5, 0, token);
	hft_spawn_fn(c, "pause:dirlock.renew.judged", renew_fn, token);
	hft_expect(c, "dirlock.renew.judged");
	return life;
}

/* The other order: the renewer judged its record its own; a reaper takes
 * the leaked lock and enters before the renewer replaces the record. The
 * renewal is lost (the directory it pinned is gone) and leaves nothing:
 * the new holder's record is untouched. */
Test(renew, renewal_after_the_reap_is_lost_and_leaves_nothing)
{
	char token[40];
	struct hft_child c;
	pid_t life = spawn_judged_renewer(&c, 2 * HOUR, token);
	struct hf_lock_opts o = { .path = lock };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0, "the leaked lock is reaped");
	char *p = dl_path(lock, "owner"), *mine = hft_slurp(p);
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 3, "HF_ELOST");
	char *now = hft_slurp(p);
	cr_assert_str_eq(now, mine, "the new holder's record is untouched");
	cr_assert_eq(dl_claims(lock), 0);
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
	free(p);
	free(mine);
	free(now);
	dl_kill(life);
}

/* A release (by token) moved the directory into its claim and unlinked the
 * record there when the renewal lands: the renewer's replace puts a record
 * into that claim, sees its directory gone from PATH and answers lost; the
 * lock ends free with no claim left (the release's next pass would find a
 * record left there too: the reaper's case below is the one that needs
 * DR5's take-back). */
Test(renew, renewal_under_a_release_takes_its_record_back)
{
	char token[40];
	struct hft_child c;
	pid_t life = spawn_judged_renewer(&c, 0, token);
	struct hft_child r;
	const char *rel[] = { "holdfast", "lock", "release", lock, "--token", token, NULL };
	hft_spawn_cli(&r, "pause:dirlock.release.unlinked", rel, NULL);
	hft_expect(&r, "dirlock.release.unlinked");
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 3, "lost: the directory left PATH");
	hft_go(&r);
	cr_assert_eq(hft_wait(&r), 0, "the release ends");
	cr_assert_eq(dl_claims(lock), 0, "no claim keeps a record of the renewal");
	cr_assert_not(hft_exists(lock));
	dl_kill(life);
}

/* A reaper took the leaked lock into its claim and unlinked the record
 * there; the renewal lands in that claim. The renewer sees its directory
 * gone from PATH and takes the renewed record back (DR5), so the reaper
 * removes its claim and enters. Without the take-back the claim would keep
 * a live, renewed record: a barrier denying the reaper and every acquirer
 * after it. */
Test(renew, renewal_in_a_reapers_claim_takes_its_record_back)
{
	char token[40];
	struct hft_child c;
	pid_t life = spawn_judged_renewer(&c, 2 * HOUR, token);
	struct dl_acq a = { .path = lock };
	struct hft_child r;
	hft_spawn_fn(&r, "pause:dirlock.reap.unlinked", dl_acq, &a);
	hft_expect(&r, "dirlock.reap.unlinked");
	hft_go(&c);
	cr_assert_eq(hft_wait(&c), 3, "lost: its directory is in the reaper's claim");
	hft_go(&r);
	cr_assert_eq(hft_wait(&r), DL_ENTERED, "the reaper removes its claim and enters");
	cr_assert_eq(dl_claims(lock), 0, "no claim keeps a record of the renewal");
	dl_kill(life);
}

/* max-hold none: never leaked by age, whatever the reaper's window; gone at
 * once when its owner dies. Every judge: status, acquire, list. */
Test(renew, max_hold_none_is_never_leaked_while_its_owner_lives)
{
	pid_t life = dl_life();
	dl_write_record(lock, life, hf_sys_now_ms() - 400 * 24 * HOUR, 5, HF_MAX_HOLD_NONE, NULL);
	hf_rec *r = status();
	cr_assert_str_eq(hf_rec_str(r, "state"), "held", "400 days old, bound to a live owner");
	hf_rec_free(r);
	struct hf_lock_opts o = { .path = lock, .stale_ms = 1 };
	struct hf_lock_info got, h;
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), HF_EHELD);
	char *out;
	const char *ls[] = { "holdfast", "list", dir, NULL };
	cr_assert_eq(hft_cli(&out, NULL, ls), 0);
	cr_assert(strstr(out, " none ") && strstr(out, "held"), "%s", out);
	free(out);
	dl_kill(life);
	cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0, "its owner died: reaped at once");
	cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
	close(got.live_fd);
}

/* From real shells: acquire, renew with --max-hold none (the same fence),
 * refused with another token (exit 1, naming the holder), 69 once free. */
static void renew_from(const char *shell)
{
	char *script;
	cr_assert_geq(asprintf(&script,
			       "L='%s'\n"
			       "t=$(\"$HOLDFAST_BIN\" lock acquire \"$L\" --max-hold 1s) || exit 10\n"
			       "set -- $t; fence=$2\n"
			       "\"$HOLDFAST_BIN\" lock renew \"$L\" --token \"$t\" --max-hold none || exit 11\n"
			       "\"$HOLDFAST_BIN\" lock status \"$L\" --json | grep -q "
			       "'\"max_hold_ms\":9223372036854775807' || exit 12\n"
			       "\"$HOLDFAST_BIN\" lock status \"$L\" | grep -q \"fence $fence\" || exit 13\n"
			       "\"$HOLDFAST_BIN\" lock renew \"$L\" --token "
			       "0123456789abcdef0123456789abcdef 2>err\n"
			       "[ $? = 1 ] || exit 14\n"
			       "grep -q \"held by pid $$\" err || exit 15\n"
			       "\"$HOLDFAST_BIN\" lock release \"$L\" --token \"$1\" || exit 16\n"
			       "\"$HOLDFAST_BIN\" lock renew \"$L\" --token \"$1\" 2>/dev/null\n"
			       "[ $? = 69 ] || exit 17\n"
			       "echo ok\n",
			       lock),
		     0);
	char *out, *err;
	char cwd[4096];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	cr_assert_eq(chdir(dir), 0);
	int st = hft_sh(&out, &err, shell, NULL, script);
	cr_assert_eq(chdir(cwd), 0);
	cr_assert_eq(st, 0, "%s: exit %d: %s %s", shell, st, out, err);
	cr_assert_str_eq(out, "ok\n");
	free(out);
	free(err);
	free(script);
}

Test(renew, from_bash)
{
	renew_from("bash");
}

Test(renew, from_dash)
{
	renew_from("dash");
}

/* FC2: the state directory deleted (git clean -fdx) restarts the counter,
 * above every fence the old one handed out: a resource that remembers the
 * greatest fence it saw accepts the new holder and still refuses the old
 * one. (With a counter restarting at 1, the new holder's fence would equal
 * the old holder's, and both would be accepted.) */
static void epoch_from(const char *shell)
{
	char *script;
	cr_assert_geq(asprintf(&script,
			       "L='%s'; res='%s/resource'\n"
			       "check() { last=$(cat \"$res\" 2>/dev/null || echo 0)\n"
			       "  [ \"$1\" -ge \"$last\" ] || return 1; echo \"$1\" > \"$res\"; }\n"
			       "set -- $(\"$HOLDFAST_BIN\" lock acquire \"$L\" --pid $$); t1=$1 f1=$2\n"
			       "check \"$f1\" || exit 10\n"
			       "\"$HOLDFAST_BIN\" lock release \"$L\" --token \"$t1\" || exit 11\n"
			       "rm -rf \"$L.holdfast\"\n"
			       "set -- $(\"$HOLDFAST_BIN\" lock acquire \"$L\" --pid $$); t2=$1 f2=$2\n"
			       "check \"$f2\" || exit 12\n"
			       "check \"$f1\" && exit 13\n"
			       "\"$HOLDFAST_BIN\" lock release \"$L\" --token \"$t2\" || exit 14\n"
			       "echo \"$f1 $f2\"\n",
			       lock, dir),
		     0);
	char *out, *err;
	int st = hft_sh(&out, &err, shell, NULL, script);
	cr_assert_eq(st, 0, "%s: exit %d: %s %s", shell, st, out, err);
	unsigned long long f1, f2;
	cr_assert_eq(sscanf(out, "%llu %llu", &f1, &f2), 2, "%s", out);
	cr_assert_gt(f2, f1, "%s", out);
	free(out);
	free(err);
	free(script);
}

Test(epoch, deleted_state_directory_never_repeats_a_fence_sh)
{
	epoch_from("sh");
}

Test(epoch, deleted_state_directory_never_repeats_a_fence_dash)
{
	epoch_from("dash");
}

/* The same at the API, many times over: each recreated counter starts
 * above the last fence of the one before. */
Test(epoch, each_new_counter_starts_above_the_last)
{
	char *state = dl_path(dir, "L.holdfast");
	uint64_t last = 0;
	for (int i = 0; i < 20; i++) {
		struct hf_lock_opts o = { .path = lock };
		struct hf_lock_info got, h;
		for (int k = 0; k < 3; k++) {
			cr_assert_eq(hf_dirlock_acquire(&o, &got, &h), 0);
			cr_assert_gt(got.fence, last, "round %d: %" PRIu64 " after %" PRIu64, i,
				     got.fence, last);
			last = got.fence;
			cr_assert_eq(hf_dirlock_release(lock, got.owner.token, &h), 0);
			close(got.live_fd);
		}
		hft_rmtree(state);
	}
	free(state);
}

/* DL16: in a real git repository, acquire and release leave nothing git
 * shows or stages; while the lock is held only the lock directory itself
 * shows (ignore it, or the pattern of its name, if that matters). */
Test(git, state_directory_is_invisible_to_git)
{
	if (system("git --version >/dev/null 2>&1") != 0)
		cr_skip_test("no git");
	char *script;
	cr_assert_geq(asprintf(&script,
			       "cd '%s' && git init -q . || exit 10\n"
			       "set -- $(\"$HOLDFAST_BIN\" lock acquire build.lock --pid $$) || exit 11\n"
			       "held=$(git status --porcelain --untracked-files=all)\n"
			       "[ \"$held\" = '?? build.lock/owner' ] || { echo \"held: $held\"; exit 12; }\n"
			       "\"$HOLDFAST_BIN\" lock release build.lock --token \"$1\" || exit 13\n"
			       "[ -d build.lock.holdfast ] || exit 14\n"
			       "[ -z \"$(git status --porcelain --untracked-files=all)\" ] || exit 15\n"
			       "git add -A && [ -z \"$(git diff --cached --name-only)\" ] || exit 16\n"
			       "[ -z \"$(git status --porcelain --ignored=no)\" ] || exit 17\n"
			       "ls -a | grep -q '\\.new-' && exit 18\n"
			       "echo ok\n",
			       dir),
		     0);
	char *out, *err;
	int st = hft_sh(&out, &err, "sh", "GIT_CONFIG_NOSYSTEM=1;HOME=/nonexistent", script);
	cr_assert_eq(st, 0, "exit %d: %s %s", st, out, err);
	free(out);
	free(err);
	free(script);
}
