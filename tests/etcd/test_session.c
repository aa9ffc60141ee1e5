/*
 * test_session.c - the session lock on etcd (etcdsession.c): take,
 * conflict naming the holder, status, assert-held, renew, release from real
 * shells and through the library; a stale session broken by exactly one of
 * two racing breakers (ordered by the named pause point, never a sleep);
 * --json fields; nothing made on the file system.
 */
#include "et.h"
#include "faults.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ET_SUITE(etcd_session, 240);

static void take_conflict_release(const char *sh)
{
	struct et_out r = et_run(
		sh,
		"H=\"$HOLDFAST_BIN\"; F=s.lock\n"
		"\"$H\" session take --lane a --file $F; echo \"take=$?\"\n"
		"\"$H\" session take --lane b --file $F 2>conflict.err; echo \"conflict=$?\"\n"
		"cat conflict.err >&2\n"
		"\"$H\" session take --lane a --file $F 2>/dev/null; echo \"same=$?\"\n"
		"\"$H\" session status --file $F\n"
		"\"$H\" session assert-held a --file $F; echo \"assert_a=$?\"\n"
		"\"$H\" session assert-held b --file $F 2>/dev/null; echo \"assert_b=$?\"\n"
		"\"$H\" session renew --lane a --file $F; echo \"renew=$?\"\n"
		"\"$H\" session renew --lane b --file $F 2>/dev/null; echo \"renew_b=$?\"\n"
		"\"$H\" session release --lane b --file $F 2>/dev/null; echo \"release_b=$?\"\n"
		"\"$H\" session release --lane a --file $F; echo \"release=$?\"\n"
		"\"$H\" session release --lane a --file $F 2>/dev/null; echo \"again=$?\"\n"
		"\"$H\" session assert-held a --file $F 2>/dev/null; echo \"assert_free=$?\"\n"
		"\"$H\" session status --file $F\n"
		"\"$H\" session status --file $F --backend file\n"
		"ls -a | grep -c lock || true\n");
	char *out = r.out, *err = r.err;
	ET_HAS(out, "take=0\n", "conflict=1\n");
	cr_assert(strstr(err, "held by lane a (pid ") && strstr(err, " on ") &&
			  strstr(err, " old; take refused"),
		  "the conflict names the holder's lane, pid, host and age: %s", err);
	cr_assert(strstr(out, "same=1\n"), "SL6: the same lane is refused too: %s", out);
	cr_assert(strstr(out, "held by a, "), "%s", out);
	cr_assert(strstr(out, "assert_a=0\n") && strstr(out, "assert_b=1\n"), "%s", out);
	cr_assert(strstr(out, "renew=0\n") && strstr(out, "renew_b=1\n"), "%s", out);
	cr_assert(strstr(out, "release_b=1\n") && strstr(out, "release=0\n"), "%s", out);
	cr_assert(strstr(out, "again=69\n") && strstr(out, "assert_free=69\n"), "%s", out);
	/* free on etcd, free on the file system, and no file made there */
	cr_assert(strstr(out, "\nfree\nfree\n0\n"), "%s", out);
	et_out_free(&r);
}

ET_EACH_SHELL(etcd_session, take_conflict_release, take_conflict_release)

static json_t *json_line(const char *s)
{
	json_error_t je;
	json_t *j = json_loads(s, JSON_DISABLE_EOF_CHECK, &je);
	cr_assert(j, "not JSON: %s", s);
	return j;
}

static void has_fields(json_t *j, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		cr_assert(json_object_get(j, names[i]), "no \"%s\" in %s", names[i],
			  json_dumps(j, 0));
}

/* --json: the local session's fields, and the backend's "backend", "key". */
Test(etcd_session, json_fields_are_the_local_ones)
{
	struct et_out r = et_run("sh", "F=\"$PWD/j.lock\"\n"
				       "\"$HOLDFAST_BIN\" session take --lane a --file \"$F\" --json\n"
				       "\"$HOLDFAST_BIN\" session take --lane b --file \"$F\" --json; echo \"$?\"\n"
				       "\"$HOLDFAST_BIN\" session status --file \"$F\" --json\n");
	char *out = r.out;
	char *l2 = strchr(out, '\n') + 1, *l3 = strchr(l2, '\n') + 1, *l4 = strchr(l3, '\n') + 1;
	json_t *took = json_line(out), *held = json_line(l2), *st = json_line(l4);
	cr_assert(!strncmp(l3, "1\n", 2), "%s", out);
	static const char *const rec[] = { "lane", "owner", "pid", "host", "started", "boot_id",
					   "timens", "boottime_ms", "file", "backend", "key",
					   NULL };
	has_fields(took, rec);
	char *key = et_fmt("/holdfast/session%s/j.lock", et_dir);
	cr_assert_str_eq(json_string_value(json_object_get(took, "key")), key);
	cr_assert_str_eq(json_string_value(json_object_get(took, "backend")), "etcd");
	cr_assert_str_eq(json_string_value(json_object_get(held, "error")), "held");
	json_t *h = json_object_get(held, "holder");
	has_fields(h, rec);
	cr_assert_str_eq(json_string_value(json_object_get(h, "lane")), "a");
	cr_assert_str_eq(json_string_value(json_object_get(h, "state")), "held");
	has_fields(st, rec);
	cr_assert(json_object_get(st, "age_ms"));
	cr_assert_str_eq(json_string_value(json_object_get(st, "owner")),
			 json_string_value(json_object_get(took, "owner")));
	/* the key is the one etcdctl sees */
	char *got = NULL, *q = et_fmt("get --keys-only %s", key);
	cr_assert_eq(et_ctl(q, &got), 0);
	cr_assert(strstr(got, key), "%s", got);
	json_decref(took);
	json_decref(held);
	json_decref(st);
	free(got);
	free(q);
	free(key);
	et_out_free(&r);
}

static hf_session *session_on_etcd(const char *name, const char *lane)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", et_dir, name);
	hf_session *s;
	cr_assert_eq(hf_session_new(path, lane, &s), 0);
	cr_assert_eq(hf_session_set_str(s, HF_OPT_BACKEND, E.uri), 0);
	return s;
}

static const char *str(const hf_rec *r, const char *f)
{
	const char *v = r ? hf_rec_str(r, f) : NULL;
	return v ? v : "";
}

Test(etcd_session, library_take_release_renew_query)
{
	hf_session *a = session_on_etcd("api.lock", "a"), *b = session_on_etcd("api.lock", "b");
	cr_assert_eq(hf_session_take(a), 0, "%s", str(hf_session_holder(a), "reason"));
	cr_assert_str_eq(str(hf_session_holder(a), "backend"), "etcd");
	cr_assert_eq(hf_session_take(b), HF_EHELD);
	cr_assert_str_eq(str(hf_session_holder(b), "lane"), "a");
	cr_assert_str_eq(str(hf_session_holder(b), "owner"), hf_session_owner(a));
	hf_rec *q = NULL;
	cr_assert_eq(hf_session_query(b, &q), 0);
	cr_assert_str_eq(str(q, "state"), "held");
	hf_rec_free(q);
	cr_assert_eq(hf_session_release(b), HF_ENOTYOURS);
	cr_assert_eq(hf_session_renew(b), HF_ENOTYOURS);
	cr_assert_eq(hf_session_renew(a), 0);
	/* another handle of lane a, another owner token: not a theft (HS3) */
	hf_session *a2 = session_on_etcd("api.lock", "a");
	cr_assert_eq(hf_session_set_str(a2, HF_OPT_OWNER, "someone-else"), 0);
	cr_assert_eq(hf_session_release(a2), HF_ENOTYOURS);
	cr_assert_eq(hf_session_release(a), 0);
	cr_assert_eq(hf_session_release(a), HF_ENOTHELD);
	cr_assert_eq(hf_session_renew(a), HF_ENOTHELD);
	cr_assert_eq(hf_session_query(a, &q), 0);
	cr_assert_str_eq(str(q, "state"), "free");
	hf_rec_free(q);
	/* a waiter bounded by its deadline, then free */
	cr_assert_eq(hf_session_take(b), 0);
	cr_assert_eq(hf_session_set(a, HF_OPT_WAIT_MS, 300), 0);
	cr_assert_eq(hf_session_take(a), HF_ETIMEDOUT);
	cr_assert_str_eq(str(hf_session_holder(a), "lane"), "b", "a timed-out wait names the holder");
	cr_assert_eq(hf_session_release(b), 0);
	cr_assert_eq(access(et_dir, F_OK), 0);
	char p[700];
	snprintf(p, sizeof p, "%s/api.lock", et_dir);
	cr_assert_neq(access(p, F_OK), 0, "nothing made on the file system");
	hf_session_free(a);
	hf_session_free(a2);
	hf_session_free(b);
}

Test(etcd_session, etcd_gone_is_an_io_error_naming_the_endpoint)
{
	hf_session *a = session_on_etcd("gone.lock", "a");
	cr_assert_eq(hf_session_set(a, HF_OPT_TIMEOUT_MS, 2000), 0);
	et_kill();
	cr_assert_eq(hf_session_take(a), -EIO);
	cr_assert(strstr(str(hf_session_holder(a), "reason"), "127.0.0.1"), "%s",
		  str(hf_session_holder(a), "reason"));
	hf_session_free(a);
}

/* A stale record (another host's, started long ago: aged by the wall clock). */
static void put_stale(const char *name)
{
	char *q = et_fmt("put /holdfast/session%s/%s "
		      "'{\"lane\":\"old\",\"owner\":\"o1d\",\"pid\":7,\"host\":\"elsewhere\","
		      "\"started\":\"2020-01-01T00:00:00.000Z\"}'",
		      et_dir, name);
	char *out = NULL;
	cr_assert_eq(et_ctl(q, &out), 0, "%s", out);
	free(out);
	free(q);
}

static int breaker(void *arg)
{
	hf_session *s = session_on_etcd("race.lock", arg);
	int rc = hf_session_take(s);
	hf_session_free(s);
	return rc == 1 ? 0 : rc == HF_EHELD ? 1 : 2; /* 0 broke, 1 held */
}

/* EN2: both breakers judge the same stale record; the first to go wins by
 * its mod_revision compare, the second's compare fails and it finds the
 * winner's live record. Ordered by etcdsession.take.judged, no sleep. */
Test(etcd_session, two_stale_breakers_exactly_one_wins)
{
	put_stale("race.lock");
	struct hft_child x, y;
	hft_spawn_fn(&x, "pause:etcdsession.take.judged", breaker, "x");
	hft_expect(&x, "etcdsession.take.judged");
	hft_spawn_fn(&y, "pause:etcdsession.take.judged", breaker, "y");
	hft_expect(&y, "etcdsession.take.judged"); /* both judged it stale */
	hft_go(&y);
	int sy = hft_exit_within(y.pid, 60000);
	hft_go(&x);
	int sx = hft_exit_within(x.pid, 60000);
	cr_assert_eq(sy, 0, "the first breaker broke it: %d", sy);
	cr_assert_eq(sx, 1, "the second found the winner's live session: %d", sx);
	hf_session *q = session_on_etcd("race.lock", "q");
	hf_rec *r = NULL;
	cr_assert_eq(hf_session_query(q, &r), 0);
	cr_assert_str_eq(str(r, "lane"), "y");
	cr_assert_str_eq(str(r, "broke.lane"), "old");
	hf_rec_free(r);
	hf_session_free(q);
}

/* The break from a shell says whose session it broke. */
Test(etcd_session, stale_broken_from_the_shell)
{
	put_stale("st.lock");
	struct et_out r = et_run("sh", "\"$HOLDFAST_BIN\" session status --file st.lock\n"
				       "\"$HOLDFAST_BIN\" session take --lane b --file st.lock; echo \"take=$?\"\n"
				       "\"$HOLDFAST_BIN\" session assert-held b --file st.lock; echo \"b=$?\"\n");
	cr_assert(strstr(r.out, "held by old, ") && strstr(r.out, "(stale: the next take breaks it)"),
		  "%s", r.out);
	cr_assert(strstr(r.out, "take=0\n") && strstr(r.out, "b=0\n"), "%s", r.out);
	cr_assert(strstr(r.err, "broke a stale lock of lane old (owner o1d"), "%s", r.err);
	et_out_free(&r);
}

/* Renew against a break: the record it read was broken meanwhile. */
static int renewer(void *arg)
{
	(void)arg;
	hf_session *s = session_on_etcd("rn.lock", "old");
	if (hf_session_set_str(s, HF_OPT_OWNER, "o1d") < 0)
		return 2;
	int rc = hf_session_renew(s);
	int ok = rc == HF_ELOST && !strcmp(str(hf_session_holder(s), "lane"), "new");
	hf_session_free(s);
	return ok ? 0 : 1;
}

Test(etcd_session, renew_lost_to_a_breaker)
{
	put_stale("rn.lock");
	struct hft_child r;
	hft_spawn_fn(&r, "pause:etcdsession.renew.read", renewer, NULL);
	hft_expect(&r, "etcdsession.renew.read"); /* it read its own record */
	hf_session *n = session_on_etcd("rn.lock", "new");
	cr_assert_eq(hf_session_take(n), 1, "broke the stale one");
	hft_go(&r);
	cr_assert_eq(hft_exit_within(r.pid, 60000), 0, "renew reported HF_ELOST naming lane new");
	cr_assert_eq(hf_session_release(n), 0);
	hf_session_free(n);
}

/* holdfast list --backend: the locks and sessions etcd keeps under DIR (a
 * range read), not a sibling's ("t" lists t/..., not tx/...). */
Test(etcd_session, list_on_etcd)
{
	struct et_out r = et_run("sh", "mkdir t && H=\"$HOLDFAST_BIN\"\n"
		      "\"$H\" session take --lane a --file t/.session.lock || exit 10\n"
		      "\"$H\" session take --lane z --file tx/.session.lock || exit 11\n"
		      "\"$H\" run --lock t/x.lock -- \"$H\" list t --json > l.json || exit 12\n"
		      "\"$H\" list t; echo \"list=$?\"\n"
		      "\"$H\" list t --backend etcd://127.0.0.1:1 --etcd-timeout 1s; echo \"down=$?\"\n"
		      "ls -A t | wc -l\n"
		      "cat l.json\n");
	char *out = r.out, *err = r.err;
	cr_assert(strstr(out, "list=0\n") && strstr(out, "down=74\n"), "%s", out);
	cr_assert(strstr(out, "session held  a "), "the table names the session: %s", out);
	cr_assert(!strstr(out, "tx/.session.lock"), "a sibling is not under t: %s", out);
	cr_assert(strstr(err, "127.0.0.1:1"), "the endpoint named: %s", err);
	cr_assert(strstr(out, "\n0\n"), "nothing made on the file system: %s", out);
	json_t *j = json_line(strstr(out, "{\"dir\""));
	json_t *items = json_object_get(j, "locks");
	cr_assert_eq(json_array_size(items), 2, "%s", out);
	json_t *lock = NULL, *sess = NULL;
	for (size_t i = 0; i < 2; i++) {
		json_t *it = json_array_get(items, i);
		const char *kind = json_string_value(json_object_get(it, "kind"));
		if (!strcmp(kind, "lock"))
			lock = it;
		else if (!strcmp(kind, "session"))
			sess = it;
	}
	cr_assert(lock && sess, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(sess, "lane")), "a");
	cr_assert_str_eq(json_string_value(json_object_get(sess, "state")), "held");
	cr_assert_str_eq(json_string_value(json_object_get(lock, "state")), "held");
	cr_assert_gt(json_integer_value(json_object_get(lock, "fence")), 0);
	char *key = et_fmt("/holdfast/lock%s/t/x.lock", et_dir);
	cr_assert_str_eq(json_string_value(json_object_get(lock, "key")), key);
	/* read-only: the session is still there, as it was */
	char *got = NULL;
	cr_assert_eq(et_ctl("get --prefix /holdfast/session --keys-only", &got), 0);
	cr_assert(strstr(got, "/t/.session.lock") && strstr(got, "/tx/.session.lock"), "%s", got);
	json_decref(j);
	free(got);
	free(key);
	et_out_free(&r);
}

/* A waiting take whose txn etcd applied but whose answer was lost (the
 * fault "etcd.answered": -EIO after the answer came) tries again within
 * its deadline (HS6) and finds its own take (EN4): it holds the session,
 * never waits for itself; its release removes it. */
Test(etcd_session, waiting_take_whose_answer_was_lost_finds_its_own)
{
	hf_session *b = session_on_etcd("lost.lock", "L");
	cr_assert_eq(hf_session_set(b, HF_OPT_WAIT_MS, 5000), 0);
	char why[200];
	cr_assert_eq(hf_fault_inject("fail:etcd_answer:1:EIO", why, sizeof why), 0, "%s", why);
	int rc = hf_session_take(b);
	cr_assert_geq(rc, 0, "%s: %s", hf_error_name(rc),
		      hf_session_holder(b) ? hf_rec_json(hf_session_holder(b)) : "");
	hf_rec *q = NULL;
	cr_assert_eq(hf_session_query(b, &q), 0);
	cr_assert_str_eq(str(q, "lane"), "L");
	cr_assert_str_eq(str(q, "owner"), hf_session_owner(b));
	hf_rec_free(q);
	cr_assert_eq(hf_session_release(b), 0);
	hf_session_free(b);
}
