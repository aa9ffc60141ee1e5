/* The public scope API (holdfast.h): hf_scope handles and hf_registry
 * snapshots, with the refusals named through hf_rec fields. Waiting
 * registrations are paused at the library's named point
 * scope.register.waiting and driven from the test: no sleeps. */
#include "hft.h"
#include "scope_support.h"

#include "holdfast.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(api, .init = sc_setup, .fini = sc_teardown, .timeout = 120);

static const char *spec(const char *rel, const char *mode)
{
	static char buf[4][1024];
	static int at;
	char *b = buf[at++ % 4];
	snprintf(b, sizeof buf[0], "%s:%s", sc_path(rel), mode);
	return b;
}

static hf_scope *pod(const char *name, const char *s1)
{
	hf_scope *s;
	cr_assert_eq(hf_scope_new(name, &s), 0);
	cr_assert_eq(hf_scope_add(s, s1), 0);
	return s;
}

static const char *F_or_empty(const hf_rec *r, const char *field)
{
	const char *v = hf_rec_str(r, field);
	return v ? v : "";
}

static int64_t rec_int(const hf_rec *r, const char *field)
{
	int64_t v = -1;
	cr_assert_eq(hf_rec_int(r, field, &v), 0, "field %s", field);
	return v;
}

Test(api, new_and_add_refuse_bad_input)
{
	hf_scope *s;
	cr_assert_eq(hf_scope_new("has space", &s), -EINVAL);
	cr_assert_eq(hf_scope_new("-dash", &s), -EINVAL);
	cr_assert_eq(hf_scope_new("ok", &s), 0);
	cr_assert_eq(hf_scope_add(s, "/p:scribble"), -EINVAL);
	cr_assert_not_null(hf_rec_str(hf_scope_holder(s), "reason"));
	cr_assert_eq(hf_scope_register(s), -EINVAL, "no spec: nothing to register");
	cr_assert_eq(hf_scope_set(s, HF_OPT_STALE_MS, 1), -EINVAL, "not a scope option");
	cr_assert_eq(hf_scope_set_str(s, HF_OPT_OWNER, "x"), -EINVAL);
	hf_scope_free(s);
	hf_scope_free(NULL);
}

Test(api, register_release_and_the_conflict_names_the_holder)
{
	hf_scope *a = pod("a", spec("p", "write:recursive"));
	cr_assert_eq(hf_scope_register(a), 0);
	cr_assert_geq(hf_scope_fd(a), 0, "the liveness descriptor is the handle's");
	cr_assert_gt(hf_scope_generation(a), 0);
	cr_assert_null(hf_scope_holder(a));
	cr_assert_eq(hf_scope_register(a), -EALREADY);

	hf_scope *b = pod("b", spec("p/x", "write"));
	cr_assert_eq(hf_scope_register(b), HF_ECONFLICT);
	const hf_rec *h = hf_scope_holder(b);
	cr_assert_not_null(h);
	cr_assert_str_eq(hf_rec_str(h, "name"), "a");
	cr_assert_eq(rec_int(h, "pid"), getpid());
	cr_assert_eq((uint64_t)rec_int(h, "generation"), hf_scope_generation(a));
	char canon[1024];
	cr_assert_eq(hf_scope_canonical(spec("p", "write:recursive"), canon, sizeof canon), 0);
	cr_assert_str_eq(hf_rec_str(h, "scope"), canon);
	cr_assert_eq(hf_scope_canonical(spec("p/x", "write"), canon, sizeof canon), 0);
	cr_assert_str_eq(hf_rec_str(h, "request"), canon);
	cr_assert_eq(rec_int(h, "request_index"), 0);
	cr_assert_str_eq(hf_rec_str(h, "registry"), sc_reg);
	cr_assert_eq(hf_scope_fd(b), -1);

	/* the same name twice: HF_EHELD, naming who has it */
	hf_scope *a2 = pod("a", spec("q", "write"));
	cr_assert_eq(hf_scope_register(a2), HF_EHELD);
	cr_assert_str_eq(hf_rec_str(hf_scope_holder(a2), "name"), "a");
	hf_scope_free(a2);

	uint64_t ga = hf_scope_generation(a);
	cr_assert_eq(hf_scope_release(a), 0);
	cr_assert_eq(hf_scope_fd(a), -1, "closed after the release");
	cr_assert_eq(hf_scope_release(a), HF_ENOTHELD, "nothing left to release");
	cr_assert_eq(hf_scope_register(b), 0, "free once a released");
	cr_assert_gt(hf_scope_generation(b), ga, "generations only grow");
	hf_scope_free(a);
	hf_scope_free(b); /* releases b */
	hf_registry *r;
	cr_assert_eq(hf_registry_read(NULL, &r, NULL), 0);
	cr_assert_eq(hf_registry_count(r), 0, "free released b");
	hf_registry_free(r);
}

Test(api, release_by_generation_leaves_a_newer_registration_alone)
{
	hf_scope *a = pod("a", spec("p", "write"));
	cr_assert_eq(hf_scope_register(a), 0);
	hf_scope *other;
	cr_assert_eq(hf_scope_new("a", &other), 0);
	cr_assert_eq(hf_scope_set(other, HF_OPT_GENERATION, (int64_t)hf_scope_generation(a) + 7),
		     0);
	cr_assert_eq(hf_scope_release(other), HF_ENOTYOURS);
	cr_assert_eq((uint64_t)rec_int(hf_scope_holder(other), "generation"),
		     hf_scope_generation(a));
	cr_assert_eq(hf_scope_set(a, HF_OPT_GENERATION, 1), -EBUSY);
	/* the registration handed over: released elsewhere by its generation */
	uint64_t g = hf_scope_generation(a);
	int fd = hf_scope_detach(a);
	cr_assert_geq(fd, 0);
	cr_assert_eq(hf_scope_detach(a), -1);
	cr_assert_eq(hf_scope_generation(a), g, "the generation stays readable");
	cr_assert_eq(hf_scope_set(other, HF_OPT_GENERATION, (int64_t)g), 0);
	cr_assert_eq(hf_scope_release(other), 0);
	close(fd);
	hf_scope_free(a); /* detached: releases nothing, fails nothing */
	hf_scope_free(other);
}

Test(api, delegation_with_from_and_effective_scope)
{
	hf_scope *a = pod("a", spec("p", "write:recursive"));
	cr_assert_eq(hf_scope_register(a), 0);
	hf_scope *c = pod("c", spec("p/sub", "write:recursive"));
	cr_assert_eq(hf_scope_set_str(c, HF_OPT_FROM, "a"), 0);
	cr_assert_eq(hf_scope_register(c), 0, "inside the parent's scope");

	hf_scope *out = pod("out", spec("q", "write"));
	cr_assert_eq(hf_scope_set_str(out, HF_OPT_FROM, "a"), 0);
	cr_assert_eq(hf_scope_register(out), HF_ENOTYOURS);
	cr_assert_str_eq(hf_rec_str(hf_scope_holder(out), "name"), "a");
	cr_assert_eq(hf_scope_set_str(out, HF_OPT_FROM, "nobody"), 0);
	cr_assert_eq(hf_scope_register(out), HF_ELOST);
	cr_assert_str_eq(hf_rec_str(hf_scope_holder(out), "name"), "nobody");
	hf_scope_free(out);

	hf_registry *r;
	cr_assert_eq(hf_registry_read(NULL, &r, NULL), 0);
	cr_assert_eq(hf_registry_count(r), 2);
	long i = hf_registry_find(r, "c");
	cr_assert_geq(i, 0);
	cr_assert_eq(hf_registry_find(r, "nobody"), -1);
	const hf_rec *e = hf_registry_get(r, (size_t)i);
	cr_assert_str_eq(hf_rec_str(e, "delegated_from"), "a");
	cr_assert_str_eq(hf_rec_str(e, "live"), "alive");
	cr_assert_eq(rec_int(e, "depth"), 1);
	cr_assert_eq(hf_rec_len(e, "scope_allow"), 1);
	cr_assert_null(hf_registry_get(r, 2), "out of range");
	hf_rec *eff;
	cr_assert_eq(hf_registry_effective(r, "a", &eff), 0);
	cr_assert_eq(hf_rec_len(eff, "scope"), 1);
	cr_assert_eq(hf_rec_len(eff, "denied"), 1, "c's write scope is taken out of a's");
	cr_assert_str_eq(hf_rec_str(eff, "name"), "a");
	hf_rec_free(eff);
	cr_assert_eq(hf_registry_effective(r, "nobody", &eff), HF_ENOTHELD);
	hf_registry_free(r);
	hf_scope_free(c);
	hf_scope_free(a);
}

Test(api, check_verdicts)
{
	hf_scope *a = pod("a", spec("p", "write:recursive"));
	cr_assert_eq(hf_scope_register(a), 0);
	hf_scope *c = pod("c", spec("p/sub", "write:recursive"));
	cr_assert_eq(hf_scope_set_str(c, HF_OPT_FROM, "a"), 0);
	cr_assert_eq(hf_scope_register(c), 0);
	hf_registry *r;
	cr_assert_eq(hf_registry_read(NULL, &r, NULL), 0);
	char x[1024], y[1024], q[1024];
	cr_assert_eq(hf_path_canonical(sc_path("p/x"), x, sizeof x), 0);
	cr_assert_eq(hf_path_canonical(sc_path("p/sub/y"), y, sizeof y), 0);
	cr_assert_eq(hf_path_canonical(sc_path("q"), q, sizeof q), 0);
	hf_rec *v;
	cr_assert_eq(hf_registry_check(r, x, NULL, 0, &v), HF_SCOPE_HELD);
	cr_assert_str_eq(hf_rec_str(v, "state"), "held");
	cr_assert_str_eq(hf_rec_str(v, "holder"), "a");
	hf_rec_free(v);
	cr_assert_eq(hf_registry_check(r, x, "a", 0, NULL), HF_SCOPE_YOURS);
	cr_assert_eq(hf_registry_check(r, y, "a", 0, &v), HF_SCOPE_HELD, "delegated away to c");
	cr_assert_str_eq(hf_rec_str(v, "holder"), "c");
	cr_assert_str_eq(hf_rec_str(v, "pod"), "a");
	hf_rec_free(v);
	cr_assert_eq(hf_registry_check(r, y, "c", hf_scope_generation(c), NULL), HF_SCOPE_YOURS);
	cr_assert_eq(hf_registry_check(r, y, "c", hf_scope_generation(c) + 1, NULL),
		     HF_SCOPE_LOST, "another generation is not the pod's");
	cr_assert_eq(hf_registry_check(r, q, "a", 0, NULL), HF_SCOPE_OUTSIDE);
	cr_assert_eq(hf_registry_check(r, q, NULL, 0, &v), HF_SCOPE_FREE);
	cr_assert_null(hf_rec_str(v, "holder"));
	hf_rec_free(v);
	cr_assert_eq(hf_registry_check(r, q, "gone", 0, NULL), HF_SCOPE_LOST);
	cr_assert_eq(hf_registry_check(r, "rel/ative", NULL, 0, NULL), -EINVAL);
	hf_registry_free(r);
	hf_scope_free(c);
	hf_scope_free(a);
}

/* --- waiting ------------------------------------------------------------- */

static int cancel_rd = -1;

/* A pod that waits for p/x: the exit code says how its register ended. */
static int waiter(void *arg)
{
	bool cancel = arg != NULL;
	hf_scope *w = pod("w", spec("p/x", "write"));
	hf_scope_set(w, HF_OPT_WAIT_MS, -1);
	if (cancel)
		hf_scope_set(w, HF_OPT_CANCEL_FD, cancel_rd);
	int rc = hf_scope_register(w);
	const char *who = hf_rec_str(hf_scope_holder(w), "name");
	int code = rc == 0 && !cancel                                    ? 0
		   : rc == HF_ECANCELED && cancel && who && !strcmp(who, "a") ? 0
		   : rc == 0                                                ? 20
										: 10;
	hf_scope_free(w);
	return code;
}

/* The waiter is refused, sets up its watch, is refused again and pauses
 * before its wait (the second hit of the point): the release made then is
 * an event its wait finds. */
Test(api, a_waiting_register_gets_the_scope_on_release)
{
	hf_scope *a = pod("a", spec("p", "write:recursive"));
	cr_assert_eq(hf_scope_register(a), 0);
	struct hft_child c;
	hft_spawn_fn(&c, "pause:scope.register.waiting:2", waiter, NULL);
	hft_expect(&c, "scope.register.waiting");
	hf_registry *r = NULL;
	int rrc = hf_registry_read(NULL, &r, NULL);
	long early = rrc == 0 ? hf_registry_find(r, "w") : -1;
	hf_registry_free(r);
	int rel = hf_scope_release(a);
	hft_go(&c); /* before any assertion: a failed test must not leave c paused */
	cr_assert_eq(hft_wait(&c), 0, "the waiter registered after the release");
	cr_assert_eq(rrc, 0);
	cr_assert_eq(early, -1, "refused while a held p");
	cr_assert_eq(rel, 0);
	hf_scope_free(a);
}

Test(api, the_cancel_descriptor_ends_a_wait)
{
	hf_scope *a = pod("a", spec("p", "write:recursive"));
	cr_assert_eq(hf_scope_register(a), 0);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cancel_rd = p[0];
	struct hft_child c;
	hft_spawn_fn(&c, "pause:scope.register.waiting:2", waiter, (void *)1);
	hft_expect(&c, "scope.register.waiting");
	ssize_t wr = write(p[1], "x", 1); /* stop */
	hft_go(&c);
	int code = sc_wait_within(c.pid, 10000);
	if (code < 0)
		kill(c.pid, SIGKILL);
	cr_assert_eq(wr, 1);
	cr_assert_eq(code, 0, "HF_ECANCELED, the holder named (-1: still waiting)");
	close(p[0]);
	close(p[1]);
	hf_registry *r;
	cr_assert_eq(hf_registry_read(NULL, &r, NULL), 0);
	cr_assert_eq(hf_registry_find(r, "w"), -1, "nothing registered");
	cr_assert_geq(hf_registry_find(r, "a"), 0, "a keeps its scope");
	hf_registry_free(r);
	hf_scope_free(a);
}

Test(api, a_bounded_wait_times_out_naming_the_holder)
{
	hf_scope *a = pod("a", spec("p", "write:recursive"));
	cr_assert_eq(hf_scope_register(a), 0);
	hf_scope *w = pod("w", spec("p/x", "write"));
	cr_assert_eq(hf_scope_set(w, HF_OPT_WAIT_MS, 30), 0);
	cr_assert_eq(hf_scope_register(w), HF_ETIMEDOUT);
	cr_assert_str_eq(hf_rec_str(hf_scope_holder(w), "name"), "a");
	hf_scope_free(w);
	hf_scope_free(a);
}

Test(api, reap_returns_the_dead_with_where_their_scope_went)
{
	struct sc_sleeper s;
	sc_sleeper_start(&s);
	hf_scope *a = pod("a", spec("p", "write:recursive"));
	cr_assert_eq(hf_scope_register(a), 0);
	hf_scope *d = pod("d", spec("p/d", "write"));
	cr_assert_eq(hf_scope_set(d, HF_OPT_PID, s.pid), 0);
	cr_assert_eq(hf_scope_set_str(d, HF_OPT_FROM, "a"), 0);
	cr_assert_eq(hf_scope_register(d), 0);
	close(hf_scope_detach(d));
	hf_scope_free(d);
	sc_sleeper_end(&s, SIGKILL);
	hf_registry *r;
	cr_assert_eq(hf_registry_reap(NULL, &r, NULL), 1);
	cr_assert_eq(hf_registry_count(r), 1);
	const hf_rec *e = hf_registry_get(r, 0);
	cr_assert_str_eq(hf_rec_str(e, "name"), "d");
	cr_assert_str_eq(hf_rec_str(e, "returned_to"), "a");
	cr_assert_eq(hf_registry_find(r, "d"), 0);
	hf_registry_free(r);
	cr_assert_eq(hf_registry_reap(NULL, NULL, NULL), 0, "nothing left to reap");
	hf_scope_free(a);
}

Test(api, an_unreadable_registry_is_named_in_reterr)
{
	char dir[sizeof sc_reg];
	snprintf(dir, sizeof dir, "%s", sc_reg);
	*strrchr(dir, '/') = '\0';
	cr_assert(mkdir(dir, 0700) == 0 || errno == EEXIST);
	hft_write(sc_reg, "{not json");
	hf_registry *r;
	hf_rec *err = NULL;
	cr_assert_eq(hf_registry_read(NULL, &r, &err), HF_EUNREADABLE);
	cr_assert_not_null(err);
	cr_assert_str_eq(hf_rec_str(err, "registry"), sc_reg);
	cr_assert_not_null(hf_rec_str(err, "reason"));
	hf_rec_free(err);
	hf_scope *a = pod("a", spec("p", "write"));
	cr_assert_eq(hf_scope_register(a), HF_EUNREADABLE, "never written over");
	cr_assert_not_null(hf_rec_str(hf_scope_holder(a), "reason"));
	hf_scope_free(a);
}

/* Holds the registry's lock: paused after judging, inside a change. */
static int locker(void *arg)
{
	hf_scope *x = pod("x", spec("x", "write"));
	int rc = hf_scope_register(x);
	close(hf_scope_detach(x)); /* left registered: the test reads it back */
	hf_scope_free(x);
	return rc == 0 ? 0 : 10;
}

/* The cancel descriptor also ends the wait for the registry's own lock
 * (held by a change in progress), at once and without changing anything. */
Test(api, the_cancel_descriptor_ends_the_wait_for_the_registry_lock)
{
	struct hft_child c;
	hft_spawn_fn(&c, "pause:scope.register.judged", locker, NULL);
	hft_expect(&c, "scope.register.judged"); /* c holds the registry's lock */
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "x", 1), 1); /* readable before we start */
	hf_scope *w = pod("w", spec("p", "write"));
	cr_assert_eq(hf_scope_set(w, HF_OPT_CANCEL_FD, p[0]), 0);
	cr_assert_eq(hf_scope_set(w, HF_OPT_LOCK_WAIT_MS, 20000), 0); /* the bound is not it */
	int rc = hf_scope_register(w);
	bool said = strstr(F_or_empty(hf_scope_holder(w), "reason"), "canceled") != NULL;
	hf_scope_free(w);
	close(p[0]);
	close(p[1]);
	hft_go(&c); /* before any assertion: a failed test must not leave c paused */
	cr_assert_eq(hft_wait(&c), 0, "the change in progress completes");
	cr_assert_eq(rc, HF_ECANCELED);
	cr_assert(said, "the reason says it was canceled");
	hf_registry *r;
	cr_assert_eq(hf_registry_read(NULL, &r, NULL), 0);
	cr_assert_eq(hf_registry_find(r, "w"), -1, "nothing of the canceled one");
	cr_assert_geq(hf_registry_find(r, "x"), 0, "the change in progress was written");
	hf_registry_free(r);
}
