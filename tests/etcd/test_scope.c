/*
 * test_scope.c - the scope registry on etcd (etcdscope.c) from real shells
 * and through the library: register / conflict naming the deepest holder /
 * release / effective / check, the --json fields of the file's registry,
 * all-or-nothing multi-spec registration, delegation refused outside the
 * parent, the A->B->D chain with B's owner killed (its keeper revokes B's
 * lease) and with B's keeper killed (B's lease expires): D stays under A,
 * A's effective scope regains B's part minus D's; a delegation whose parent
 * is released between its decision and its txn is refused (ES2). Waits
 * (ES5): `scope register -w` woken by the holder's release, -w short timed
 * out naming the holder, a library waiter cancelled, one woken by an
 * unrelated registration deciding again and waiting on, one whose lease
 * outlives a wait of three TTLs.
 */
#include "et.h"
#include "faults.h"
#include "../scope/glob_script.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "holdfast.h"

ET_SUITE(etcd_scope, 240);

/* A script's line starting owner $v (a `sleep 1000` killed when the
 * script ends); BIN_H, a script's first line: $H runs holdfast. */
#define OWNER(v) "sleep 1000 </dev/null >/dev/null 2>&1 & " v "=$!; trap 'kill $a $b $d 2>/dev/null' EXIT\n"
#define BIN_H "H=\"$HOLDFAST_BIN\"\n"
/* A script's last lines: its owners killed and reaped, exit 0. */
#define OWNERS_END "kill $a $b $d 2>/dev/null; wait $a $b $d 2>/dev/null\n" "exit 0\n"

static void register_conflict_release(const char *sh)
{
	struct et_out r = et_run(
		sh,
		BIN_H
		"mkdir -p p/src/core\n"
		OWNER("a")
		OWNER("b")
		"\"$H\" scope register A p/src:write:recursive --pid $a >/dev/null || exit 10\n"
		"\"$H\" scope register B p/src/core:write:recursive --pid $b --from A >/dev/null || exit 11\n"
		"\"$H\" scope register X p/src/core/y:write --pid $a 2>x.err; echo \"conflict=$?\"\n"
		"cat x.err >&2\n"
		"\"$H\" scope register X p/src/core/y:write --pid $a --json 2>/dev/null >x.json\n"
		"echo; cat x.json; echo\n"
		"\"$H\" scope register A p/other:write --pid $a 2>/dev/null; echo \"taken=$?\"\n"
		"\"$H\" scope check p/src/core/y; echo \"check=$?\"\n"
		"\"$H\" scope check p/src/core/y --pod B; echo \"mine=$?\"\n"
		"\"$H\" scope check p/elsewhere; echo \"free=$?\"\n"
		"\"$H\" scope effective A\n"
		"\"$H\" scope release B; echo \"release=$?\"\n"
		"\"$H\" scope release B 2>/dev/null; echo \"again=$?\"\n"
		"\"$H\" scope effective A\n"
		"\"$H\" scope check p/src/core/y --pod A; echo \"back=$?\"\n"
		"\"$H\" scope release A; echo \"releaseA=$?\"\n"
		"\"$H\" scope list\n"
		OWNERS_END);
	char *out = r.out, *err = r.err;
	cr_assert(strstr(out, "conflict=1\n"), "%s", out);
	/* the deepest holder named: B, not A */
	cr_assert(strstr(err, "overlaps the write scope ") && strstr(err, "/p/src/core:write:recursive of B (pid "),
		  "%s", err);
	cr_assert(strstr(err, E.uri), "the registry named: %s", err);
	char want[200]; /* the JSON error's "path" is the registry: the backend's URI, as given */
	snprintf(want, sizeof want, "\"path\":\"%s\"", E.uri);
	cr_assert(strstr(out, "{\"error\":\"conflict\"") && strstr(out, want), "%s", out);
	ET_HAS(out, "taken=1\n", "check=1\n", "mine=0\n", "free=0\n");
	cr_assert(strstr(out, "minus ") && strstr(out, "(delegated to B, pid "), "%s", out);
	ET_HAS(out, "release=0\n", "again=69\n", "back=0\n", "releaseA=0\n");
	cr_assert(strstr(out, "generation ") && strstr(out, ", 0 allocations"), "%s", out);
	et_out_free(&r);
}

ET_EACH_SHELL(etcd_scope, register_conflict_release, register_conflict_release)

/* The keys of a JSON object, sorted, as one string. */
static char *keys_of(const char *text, const char *member)
{
	json_t *o = json_loads(text, 0, NULL);
	cr_assert_not_null(o, "not JSON: %s", text);
	json_t *x = member ? json_array_get(json_object_get(o, member), 0) : o;
	cr_assert_not_null(x, "no %s in %s", member ? member : "object", text);
	const char *k[64];
	size_t n = 0;
	const char *key;
	json_t *v;
	json_object_foreach(x, key, v)
		if (n < 64)
			k[n++] = key;
	for (size_t i = 0; i < n; i++) /* insertion sort */
		for (size_t j = i; j > 0 && strcmp(k[j - 1], k[j]) > 0; j--) {
			const char *t = k[j];
			k[j] = k[j - 1];
			k[j - 1] = t;
		}
	char *s = calloc(1, 4096);
	for (size_t i = 0; i < n; i++)
		strcat(strcat(s, k[i]), " ");
	json_decref(o);
	return s;
}

/* --json of register, list and effective: the file registry's fields, less
 * what has no meaning on etcd ("token", "scope_fs": a liveness file, a
 * mount's device numbers). */
Test(etcd_scope, json_fields_are_the_local_ones)
{
	struct et_out r = et_run(
		"sh",
		BIN_H
		"mkdir -p q\n"
		OWNER("a")
		"for b in etcd file; do u=$b; [ $b = etcd ] && u=$HOLDFAST_BACKEND\n"
		"  HOLDFAST_REGISTRY=$PWD/reg/scope.lock \"$H\" scope register J q:write --pid $a --json --backend \"$u\" > reg.$b || exit 10\n"
		"  HOLDFAST_REGISTRY=$PWD/reg/scope.lock \"$H\" scope list --json --backend \"$u\" > list.$b || exit 11\n"
		"  HOLDFAST_REGISTRY=$PWD/reg/scope.lock \"$H\" scope effective J --json --backend \"$u\" > eff.$b || exit 12\n"
		"done\n"
		"kill $a; wait $a 2>/dev/null\n" /* $b is a word here, not an owner */
		"exit 0\n");
	const char *files[][2] = { { "reg", NULL }, { "list", "allocations" }, { "list", NULL },
				   { "eff", NULL } };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char pe[600], pf[600];
		snprintf(pe, sizeof pe, "%s/%s.etcd", et_dir, files[i][0]);
		snprintf(pf, sizeof pf, "%s/%s.file", et_dir, files[i][0]);
		char *te = hft_slurp(pe), *tf = hft_slurp(pf);
		cr_assert(te && tf, "%s / %s", pe, pf);
		char *ke = keys_of(te, files[i][1]), *kf = keys_of(tf, files[i][1]);
		/* the file's, without what needs the file system */
		char want[4096] = "";
		for (char *w = strtok(kf, " "); w; w = strtok(NULL, " "))
			if (strcmp(w, "token") && strcmp(w, "scope_fs"))
				strcat(strcat(want, w), " ");
		cr_assert_str_eq(ke, want, "%s: etcd %s\nfile %s", files[i][0], te, tf);
		free(te), free(tf), free(ke), free(kf);
	}
	et_out_free(&r);
}

/* Two specs, the second conflicting: neither is registered (one txn). */
Test(etcd_scope, multi_spec_all_or_nothing)
{
	struct et_out r = et_run(
		"sh",
		BIN_H
		"mkdir -p m/one m/two\n"
		OWNER("a")
		"\"$H\" scope register HOLD m/two:write:recursive --pid $a >/dev/null || exit 10\n"
		"\"$H\" scope register MULTI m/one:write m/two/x:write --pid $a 2>multi.err; echo \"multi=$?\"\n"
		"cat multi.err >&2\n"
		"\"$H\" scope list --json > list.json\n"
		"\"$H\" scope check m/one; echo \"one=$?\"\n"
		"\"$H\" scope register MULTI m/one:write m/three:write --pid $a >/dev/null; echo \"again=$?\"\n"
		"\"$H\" scope check m/one --pod MULTI; echo \"mine=$?\"\n"
		"ETCDCTL_API=3 etcdctl --endpoints=${HOLDFAST_BACKEND#etcd://} get --prefix --keys-only /holdfast/scope/ >&2\n"
		OWNERS_END);
	char *out = r.out, *err = r.err;
	cr_assert(strstr(out, "multi=1\n"), "%s", out);
	cr_assert(strstr(err, "'m/two/x:write'") && strstr(err, " of HOLD (pid "), "%s", err);
	cr_assert(strstr(out, "one=0\n"), "the first spec was not registered alone: %s", out);
	char p[600];
	snprintf(p, sizeof p, "%s/list.json", et_dir);
	char *l = hft_slurp(p);
	cr_assert(l && !strstr(l, "\"MULTI\""), "%s", l);
	cr_assert(strstr(out, "again=0\n"), "%s %s", out, err);
	cr_assert(strstr(out, "mine=0\n"), "%s", out);
	/* on etcd: one key per pod, both pods' */
	cr_assert(strstr(err, "/holdfast/scope/HOLD\n") && strstr(err, "/holdfast/scope/MULTI\n"),
		  "%s", err);
	free(l);
	et_out_free(&r);
}

/* A delegation outside the parent's effective scope (outside its own; inside
 * a part delegated to another child), and from a parent that is not there. */
Test(etcd_scope, delegation_refused_outside_the_parent)
{
	struct et_out r = et_run(
		"sh",
		BIN_H
		"mkdir -p d/src/core d/doc\n"
		OWNER("a")
		"\"$H\" scope register PA d/src:write:recursive --pid $a >/dev/null || exit 10\n"
		"\"$H\" scope register PB d/src/core:write:recursive --pid $a --from PA >/dev/null || exit 11\n"
		"\"$H\" scope register OUT d/doc:write --pid $a --from PA 2>out.err; echo \"outside=$?\"\n"
		"cat out.err >&2\n"
		"\"$H\" scope register SIB d/src/core/x:write --pid $a --from PA 2>/dev/null; echo \"sibling=$?\"\n"
		"\"$H\" scope register ORPHAN d/src/y:write --pid $a --from NOPE 2>/dev/null; echo \"noparent=$?\"\n"
		"\"$H\" scope register IN d/src/y:write --pid $a --from PA >/dev/null; echo \"inside=$?\"\n"
		"\"$H\" scope list --json | grep -c '\"OUT\"\\|\"SIB\"\\|\"ORPHAN\"'; echo\n"
		OWNERS_END);
	char *out = r.out, *err = r.err;
	cr_assert(strstr(out, "outside=1\n"), "%s", out);
	cr_assert(strstr(err, "PA"), "the parent named: %s", err);
	ET_HAS(out, "sibling=1\n", "noparent=1\n", "inside=0\n");
	cr_assert(strstr(out, "\n0\n") || !strncmp(out, "0\n", 2), "nothing refused was written: %s",
		  out);
	et_out_free(&r);
}

/* A -> B -> D; B ends (how: the script's $END_B); then D is A's child, A's
 * effective scope is its own minus D's (B's part is A's again), a new
 * delegation under B's old path works from A. */
static void chain(const char *end_b)
{
	struct et_out r = et_run(
		"sh",
		BIN_H
		"mkdir -p c/src/core/x c/src/core/z\n"
		OWNER("a")
		OWNER("b")
		OWNER("d")
		"\"$H\" scope register CA c/src:write:recursive --pid $a >/dev/null || exit 10\n"
		"\"$H\" scope register CB c/src/core:write:recursive --pid $b --from CA --ttl 2s --json >cb.json || exit 11\n"
		"\"$H\" scope register CD c/src/core/x:write:recursive --pid $d --from CB >/dev/null || exit 12\n"
		"\"$H\" scope check c/src/core/z; echo \"before=$?\"\n"
		"%s\n"
		"i=0; while \"$H\" scope list | grep -q ' CB '; do\n"
		"  i=$((i+1)); [ $i -gt 300 ] && { echo CB-stayed; break; }; sleep 0.1\n"
		"done\n"
		"\"$H\" scope list --json > chain.json\n"
		"\"$H\" scope effective CA --json > eff.json\n"
		"\"$H\" scope check c/src/core/z --pod CA; echo \"regained=$?\"\n"
		"\"$H\" scope check c/src/core/x/f --pod CA; echo \"delegated=$?\"\n"
		"\"$H\" scope check c/src/core/x/f --pod CD; echo \"dstays=$?\"\n"
		"\"$H\" scope register CZ c/src/core/z:write --pid $a --from CA >/dev/null; echo \"redelegate=$?\"\n"
		OWNERS_END,
		end_b);
	char *out = r.out, *err = r.err;
	cr_assert(strstr(out, "before=1\n"), "%s", out);
	cr_assert_null(strstr(out, "CB-stayed"), "%s", out);
	char p[600];
	snprintf(p, sizeof p, "%s/chain.json", et_dir);
	char *t = hft_slurp(p);
	json_t *o = json_loads(t, 0, NULL);
	cr_assert_not_null(o, "%s", t);
	json_t *allocs = json_object_get(o, "allocations"), *e;
	size_t i;
	bool sawD = false;
	json_array_foreach(allocs, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		cr_assert_str_neq(n, "CB", "%s", t);
		if (!strcmp(n, "CD")) {
			sawD = true;
			cr_assert_str_eq(json_string_value(json_object_get(e, "delegated_from")), "CA",
					 "D re-parented to A lazily: %s", t);
		}
	}
	cr_assert(sawD, "%s", t);
	json_decref(o);
	free(t);
	snprintf(p, sizeof p, "%s/eff.json", et_dir);
	t = hft_slurp(p);
	o = json_loads(t, 0, NULL);
	cr_assert_not_null(o, "%s", t);
	json_t *deny = json_object_get(o, "scope_deny");
	cr_assert_eq(json_array_size(deny), 1, "A's own minus D's only: %s", t);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(deny, 0), "name")), "CD",
			 "%s", t);
	json_decref(o);
	free(t);
	ET_HAS(out, "regained=0\n", "delegated=1\n", "dstays=0\n");
	cr_assert(strstr(out, "redelegate=0\n"), "%s %s", out, err);
	et_out_free(&r);
}

/* B's owner killed: its keeper revokes B's lease at once. */
Test(etcd_scope, chain_b_owner_killed)
{
	chain("kill -9 $b; wait $b 2>/dev/null");
}

/* B's keeper killed while its owner lives: B's lease (2 s) expires. */
Test(etcd_scope, chain_b_keeper_killed_lease_expires)
{
	chain("kill -9 $(sed -n 's/.*\"keeper\":\\([0-9]*\\).*/\\1/p' cb.json)");
}

/* The library: hf_scope with HF_OPT_BACKEND registers on etcd with no
 * descriptor, the registry read through the handle shows it, free
 * releases it (HC2). */
Test(etcd_scope, library_register_read_free)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/lib", et_dir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	char spec[700];
	snprintf(spec, sizeof spec, "%s:write:recursive", dir);
	hf_scope *s;
	cr_assert_eq(hf_scope_new("LIB", &s), 0);
	cr_assert_eq(hf_scope_add(s, spec), 0);
	cr_assert_eq(hf_scope_set_str(s, HF_OPT_BACKEND, E.uri), 0);
	cr_assert_eq(hf_scope_set(s, HF_OPT_WAIT_MS, 1000), 0); /* free: no wait */
	cr_assert_eq(hf_scope_register(s), 0, "%s", hf_rec_json(hf_scope_holder(s)));
	cr_assert_eq(hf_scope_fd(s), -1);
	uint64_t gen = hf_scope_generation(s);
	cr_assert_gt(gen, 0);
	cr_assert_eq(hf_scope_set_str(s, HF_OPT_BACKEND, NULL), -EBUSY);

	hf_scope *q;
	cr_assert_eq(hf_scope_new("LIB2", &q), 0);
	cr_assert_eq(hf_scope_add(q, spec), 0);
	cr_assert_eq(hf_scope_set_str(q, HF_OPT_BACKEND, E.uri), 0);
	cr_assert_eq(hf_scope_register(q), HF_ECONFLICT);
	cr_assert_str_eq(hf_rec_str(hf_scope_holder(q), "name"), "LIB");
	hf_registry *r;
	cr_assert_eq(hf_scope_registry_read(q, &r, NULL), 0);
	long i = hf_registry_find(r, "LIB");
	cr_assert_geq(i, 0);
	int64_t g = 0;
	cr_assert_eq(hf_rec_int(hf_registry_get(r, (size_t)i), "generation", &g), 0);
	cr_assert_eq((uint64_t)g, gen);
	cr_assert_eq(hf_registry_check(r, dir, "LIB", gen, NULL), HF_SCOPE_YOURS);
	hf_registry_free(r);

	hf_scope_free(s); /* releases it */
	cr_assert_eq(hf_scope_registry_read(q, &r, NULL), 0);
	cr_assert_eq(hf_registry_find(r, "LIB"), -1);
	hf_registry_free(r);
	cr_assert_eq(hf_scope_register(q), 0, "%s", hf_rec_json(hf_scope_holder(q)));
	cr_assert_gt(hf_scope_generation(q), gen, "generations grow");
	cr_assert_eq(hf_scope_release(q), 0);
	cr_assert_eq(hf_scope_release(q), HF_ENOTHELD);
	hf_scope_free(q);
}

/* ES2: a delegation decided while its parent was there, whose parent is
 * released before the txn, is refused (the parent's create_revision
 * compared), never written under a parent that is gone. */
Test(etcd_scope, parent_released_between_decision_and_txn)
{
	char src[600], core[700], x[800], sp[900], sc[900], sx[900];
	snprintf(src, sizeof src, "%s/e/src", et_dir);
	snprintf(core, sizeof core, "%s/core", src);
	snprintf(x, sizeof x, "%s/x", core);
	char mk[900];
	snprintf(mk, sizeof mk, "mkdir -p %s", x);
	cr_assert_eq(system(mk), 0);
	snprintf(sp, sizeof sp, "%s:write:recursive", src);
	snprintf(sc, sizeof sc, "%s:write:recursive", core);
	snprintf(sx, sizeof sx, "%s:write", x);
	pid_t owner = et_sleeper();
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)owner);
	const char *ra[] = { "holdfast", "scope", "register", "EA", sp, "--pid", pid, "--backend",
			     E.uri, NULL };
	const char *rb[] = { "holdfast", "scope", "register", "EB", sc, "--pid", pid, "--from", "EA",
			     "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, ra), 0);
	cr_assert_eq(hft_cli(NULL, NULL, rb), 0);
	struct hft_child c;
	const char *rd[] = { "holdfast", "scope", "register", "ED", sx, "--pid", pid, "--from", "EB",
			     "--backend", E.uri, NULL };
	hft_spawn_cli(&c, "pause:scope.register.decided", rd, NULL);
	hft_expect(&c, "scope.register.decided");
	const char *rel[] = { "holdfast", "scope", "release", "EB", "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, rel), 0);
	hft_go(&c);
	char *out = NULL, *err = NULL;
	int st = hft_collect(c.pid, c.out_rd, c.err_rd, &out, &err);
	cr_assert_eq(st, 1, "exit %d: %s %s", st, out, err);
	cr_assert(strstr(err, "its parent 'EB' is not registered"), "%s", err);
	free(out);
	free(err);
	const char *ls[] = { "holdfast", "scope", "list", "--json", "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(&out, NULL, ls), 0);
	cr_assert(strstr(out, "\"EA\"") && !strstr(out, "\"ED\""), "%s", out);
	free(out);
	et_reap(owner);
}

/* ---- waits (ES5) ------------------------------------------------------------ */

/* `scope register -w 30s` from a shell, refused while WA holds the scope,
 * paused (scope.register.waiting, through fifos) after its refused decision;
 * WA released meanwhile: its watch from the next revision delivers the
 * delete, the waiter registers and holds. -w 0.3s: exit 1 naming WA. */
static void waiter_woken_by_release(const char *sh)
{
	struct et_out r = et_run(
		sh,
		BIN_H
		"mkdir -p w/src\n"
		OWNER("a")
		OWNER("b")
		"\"$H\" scope register WA w/src:write:recursive --pid $a >/dev/null || exit 10\n"
		"\"$H\" scope register WS w/src/x:write -w 0.3s --pid $b 2>short.err; echo \"short=$?\"\n"
		"cat short.err >&2\n"
		"mkfifo n g; exec 5<>n 6<>g\n"
		"HOLDFAST_FAULTS=pause:scope.register.waiting HOLDFAST_PAUSE_FDS=5,6 \\\n"
		"  \"$H\" scope register WB w/src/x:write -w 30s --pid $b >wb.out 2>wb.err & w=$!\n"
		"pt=$(timeout 60 head -n1 <&5); echo \"point=$pt\"\n"
		"\"$H\" scope check w/src/x --pod WB; echo \"before=$?\"\n"
		"\"$H\" scope release WA; echo \"release=$?\"\n"
		"printf x >&6\n"
		"wait $w; echo \"waiter=$?\"\n" /* bounded: its own -w 30s */
		"cat wb.err >&2\n"
		"\"$H\" scope check w/src/x --pod WB; echo \"holds=$?\"\n"
		"\"$H\" scope check w/src/x; echo \"taken=$?\"\n"
		"\"$H\" scope release WB; echo \"releaseB=$?\"\n"
		OWNERS_END);
	char *out = r.out, *err = r.err;
	cr_assert(strstr(out, "short=1\n"), "%s", out);
	cr_assert(strstr(err, "scope register (timed out waiting) WS: 'w/src/x:write'") &&
		  strstr(err, "/w/src:write:recursive of WA (pid "),
		  "the holder named: %s", err);
	ET_HAS(out, "point=scope.register.waiting\n", "before=1\n", "release=0\n", "waiter=0\n",
	       "holds=0\n", "taken=1\n", "releaseB=0\n");
	et_out_free(&r);
}

ET_EACH_SHELL(etcd_scope, waiter_woken_by_release, waiter_woken_by_release)

/* A registry dir of the test and its write spec (dir/src:write:recursive),
 * held by pod name for a sleeper: the sleeper's pid. */
static char wdir[600], wspec[700];
static pid_t hold_src(const char *name)
{
	snprintf(wdir, sizeof wdir, "%s/lw/src", et_dir);
	char mk[1400];
	snprintf(mk, sizeof mk, "mkdir -p %s/x %s/../other", wdir, wdir);
	cr_assert_eq(system(mk), 0);
	snprintf(wspec, sizeof wspec, "%s:write:recursive", wdir);
	pid_t owner = et_sleeper();
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)owner);
	const char *ra[] = { "holdfast", "scope", "register", name, wspec, "--pid", pid,
			     "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, ra), 0);
	return owner;
}

static void cli_ok(const char *const *argv)
{
	char *err = NULL;
	int st = hft_cli(NULL, &err, argv);
	cr_assert_eq(st, 0, "%s %s: exit %d: %s", argv[1], argv[2], st, err);
	free(err);
}

static int fds_cancel[2], fds_res[2], fds_done[2];
static int64_t waiter_ttl_ms;

/* The library's waiter for WX dir/src/x:write (wait at most 60 s): writes
 * its outcome (rc) and the holder named, then (registered) holds until
 * told. */
static int lib_waiter(void *arg)
{
	(void)arg;
	char spec[800];
	snprintf(spec, sizeof spec, "%s/x:write", wdir);
	hf_scope *s;
	if (hf_scope_new("WX", &s) < 0 || hf_scope_add(s, spec) < 0 ||
	    hf_scope_set_str(s, HF_OPT_BACKEND, E.uri) < 0 ||
	    hf_scope_set(s, HF_OPT_WAIT_MS, 60000) < 0 ||
	    hf_scope_set(s, HF_OPT_CANCEL_FD, fds_cancel[0]) < 0 ||
	    (waiter_ttl_ms && hf_scope_set(s, HF_OPT_TTL_MS, waiter_ttl_ms) < 0))
		return 90;
	char res[256] = "";
	int rc = hf_scope_register(s);
	const hf_rec *h = hf_scope_holder(s);
	snprintf(res, sizeof res, "rc=%d holder=%s refused=%s", rc,
		 rc ? hf_rec_str(h, "name") ?: "" : "", rc ? hf_rec_str(h, "refused") ?: "" : "");
	if (write(fds_res[1], res, sizeof res) != sizeof res)
		return 91;
	char b;
	if (rc == 0 && read(fds_done[0], &b, 1) != 1)
		return 92;
	hf_scope_free(s); /* releases it (HC2) */
	return rc == 0 ? 0 : 1;
}

static void waiter_pipes(void)
{
	cr_assert_eq(pipe(fds_cancel), 0);
	cr_assert_eq(pipe(fds_res), 0);
	cr_assert_eq(pipe(fds_done), 0);
}

static void waiter_pipes_close(void)
{
	int *all[] = { fds_cancel, fds_res, fds_done };
	for (size_t i = 0; i < 3; i++)
		close(all[i][0]), close(all[i][1]);
}

/* The waiter's outcome, read within 60 s. */
static void waiter_result(char *res, size_t n)
{
	struct pollfd p = { .fd = fds_res[0], .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 60000), 1, "the waiter said nothing within 60 s");
	cr_assert_eq(read(fds_res[0], res, n), (ssize_t)n);
}

/* HF_OPT_CANCEL_FD readable while the waiter watches: HF_ECANCELED, the
 * holder it waited for named, nothing registered. */
Test(etcd_scope, library_waiter_cancelled)
{
	pid_t owner = hold_src("CH");
	waiter_pipes();
	struct hft_child w;
	hft_spawn_fn(&w, "pause:scope.register.waiting", lib_waiter, NULL);
	hft_expect(&w, "scope.register.waiting"); /* refused: CH holds it */
	hft_go(&w);
	cr_assert_eq(write(fds_cancel[1], "c", 1), 1);
	char res[256];
	waiter_result(res, sizeof res);
	char want[128];
	snprintf(want, sizeof want, "rc=%d holder=CH refused=%s", HF_ECANCELED,
		 hf_error_name(HF_ECONFLICT));
	cr_assert_str_eq(res, want);
	cr_assert_eq(hft_exit_within(w.pid, 30000), 1);
	char *out = NULL;
	const char *ls[] = { "holdfast", "scope", "list", "--json", "--backend", E.uri, NULL };
	cr_assert_eq(hft_cli(&out, NULL, ls), 0);
	cr_assert(strstr(out, "\"CH\"") && !strstr(out, "\"WX\""), "%s", out);
	free(out);
	waiter_pipes_close();
	et_reap(owner);
}

/* An unrelated registration (a spec that overlaps nothing) wakes the
 * waiter (the whole prefix is watched): it decides again, is refused again
 * (the second scope.register.waiting) and waits on; the holder's release
 * then lets it register. */
Test(etcd_scope, library_waiter_unrelated_change_decides_again)
{
	pid_t owner = hold_src("UH");
	waiter_pipes();
	struct hft_child w;
	hft_spawn_fn(&w, "pause:scope.register.waiting:1;pause:scope.register.waiting:2",
		     lib_waiter, NULL);
	hft_expect(&w, "scope.register.waiting");
	hft_go(&w);
	char other[700], pid[16];
	snprintf(other, sizeof other, "%s/../other:write", wdir);
	snprintf(pid, sizeof pid, "%d", (int)owner);
	const char *ru[] = { "holdfast", "scope", "register", "UU", other, "--pid", pid,
			     "--backend", E.uri, NULL };
	cli_ok(ru);
	hft_expect(&w, "scope.register.waiting"); /* woken, refused again (ES5) */
	const char *chk[] = { "holdfast", "scope", "check", wdir, "--pod", "WX", "--backend",
			      E.uri, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, chk), 1, "WX took the scope while UH holds it");
	const char *rel[] = { "holdfast", "scope", "release", "UH", "--backend", E.uri, NULL };
	cli_ok(rel);
	hft_go(&w);
	char res[256];
	waiter_result(res, sizeof res);
	cr_assert_str_eq(res, "rc=0 holder= refused=");
	char x[700];
	snprintf(x, sizeof x, "%s/x", wdir);
	const char *mine[] = { "holdfast", "scope", "check", x, "--pod", "WX", "--backend",
			       E.uri, NULL };
	cr_assert_eq(hft_cli(NULL, NULL, mine), 0);
	cr_assert_eq(write(fds_done[1], "d", 1), 1);
	cr_assert_eq(hft_exit_within(w.pid, 30000), 0);
	waiter_pipes_close();
	et_reap(owner);
}

/* A waiter with a 2 s lease waits about 3 TTLs (CLOCK_MONOTONIC) without
 * deciding again (no event: no second scope.register.waiting); its lease is
 * kept alive meanwhile, so when the holder releases, its registration -
 * a put with that lease - works. */
Test(etcd_scope, library_waiter_lease_outlives_its_ttl)
{
	pid_t owner = hold_src("LH");
	waiter_pipes();
	waiter_ttl_ms = 2000;
	struct hft_child w;
	hft_spawn_fn(&w, "pause:scope.register.waiting:1;pause:scope.register.waiting:2",
		     lib_waiter, NULL);
	hft_expect(&w, "scope.register.waiting");
	hft_go(&w);
	int64_t until = et_mono_ms() + 3 * 2000 + 500;
	for (int64_t now; (now = et_mono_ms()) < until;) {
		struct pollfd p = { .fd = w.notify_rd, .events = POLLIN };
		int n = poll(&p, 1, (int)(until - now));
		cr_assert_eq(n, 0, "the waiter decided again with nothing changed");
	}
	const char *rel[] = { "holdfast", "scope", "release", "LH", "--backend", E.uri, NULL };
	cli_ok(rel);
	char res[256];
	waiter_result(res, sizeof res);
	cr_assert_str_eq(res, "rc=0 holder= refused=", "its lease ended while waiting?");
	cr_assert_eq(write(fds_done[1], "d", 1), 1);
	cr_assert_eq(hft_exit_within(w.pid, 30000), 0);
	waiter_pipes_close();
	et_reap(owner);
}

/* A waiting registration whose txn etcd applied but whose answer was lost
 * (the 3rd answer: lease grant, registry read, txn) reads again within its
 * deadline (ES6) and finds its own put (step 4): registered, with that
 * put's generation; released after. Where the try-once one fails. */
Test(etcd_scope, waiting_register_whose_answer_was_lost_finds_its_own)
{
	char dir[600], spec[700], why[200];
	snprintf(dir, sizeof dir, "%s/lost", et_dir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(spec, sizeof spec, "%s:write:recursive", dir);
	hf_scope *s;
	cr_assert_eq(hf_scope_new("LOST", &s), 0);
	cr_assert_eq(hf_scope_add(s, spec), 0);
	cr_assert_eq(hf_scope_set_str(s, HF_OPT_BACKEND, E.uri), 0);
	cr_assert_eq(hf_scope_set(s, HF_OPT_WAIT_MS, 5000), 0);
	cr_assert_eq(hf_fault_inject("fail:etcd_answer:3:EIO", why, sizeof why), 0, "%s", why);
	int rc = hf_scope_register(s);
	cr_assert_eq(rc, 0, "%s: %s", hf_error_name(rc),
		     hf_scope_holder(s) ? hf_rec_json(hf_scope_holder(s)) : "");
	cr_assert_gt(hf_scope_generation(s), 0);
	struct et_out r = et_run("sh", "\"$HOLDFAST_BIN\" scope list\n");
	cr_assert(strstr(r.out, "  LOST "), "%s", r.out);
	et_out_free(&r);
	cr_assert_eq(hf_scope_release(s), 0);
	r = et_run("sh", "\"$HOLDFAST_BIN\" scope list\n");
	cr_assert_null(strstr(r.out, "  LOST "), "%s", r.out);
	et_out_free(&r);
	hf_scope_free(s);
}

/* A verb without a name says so without a hole: "scope list: etcd …". */
Test(etcd_scope, unreachable_list_names_the_endpoint)
{
	struct et_out r = et_run_env(NULL, "sh",
				     "\"$HOLDFAST_BIN\" scope list --backend etcd://127.0.0.1:1 2>e\n"
				     "echo \"st=$?\"; cat e\n");
	ET_HAS(r.out, "st=74\n", "holdfast: scope list: etcd http://127.0.0.1:1");
	et_out_free(&r);
}

/* Glob specs on etcd (spec_glob.c, SC7-SC12): the script test_glob.c runs
 * on the file registry - two pods' src globs conflict naming the pair and
 * the holder, *.ts and *.c do not, '{' is a usage error naming it, a glob
 * child inside its parent's prefix is delegated and one outside refused
 * naming a path outside, a dead child's glob returns to its parent. */
Test(etcd_scope, glob_specs_as_on_the_file_registry)
{
	struct et_out r = et_run("sh", "%s", GLOB_SCRIPT);
	GLOB_SCRIPT_CHECK(r.out, r.err);
	et_out_free(&r);
}

/* The commit guard on etcd (issue 22, part 4): `scope check --staged` and
 * the pre-commit hook judge the staged paths against the etcd registry
 * (HOLDFAST_BACKEND, as every scope verb): agent B's commit into A's scope
 * refused naming the path, A and the etcd; its own path committed. */
Test(etcd_scope, commit_guard_on_etcd)
{
	struct et_out r = et_run(
		"sh",
		BIN_H
		"git init -q g && cd g || exit 10\n"
		"git config user.email g@example.com && git config user.name g || exit 10\n"
		"mkdir a b && echo 1 > a/x && echo 2 > b/y && git add . && git commit -qm init || exit 10\n"
		"cp \"$HOLDFAST_SRC/contrib/git-hooks/pre-commit\" .git/hooks/pre-commit || exit 10\n"
		OWNER("a")
		"\"$H\" scope register GA \"$PWD/a:write:recursive\" --pid $a >/dev/null || exit 11\n"
		"\"$H\" scope register GB \"$PWD/b:write:recursive\" --pid $a >/dev/null || exit 11\n"
		"echo 3 >> a/x && echo 4 >> b/y && git add -A\n"
		"HOLDFAST=\"$H\" HOLDFAST_POD=GB git commit -qm into 2>&1; echo \"refused=$?\"\n"
		"\"$H\" scope check --staged --pod GB --json; echo \"json=$?\"\n"
		"git reset -q a && git checkout a\n"
		"HOLDFAST=\"$H\" HOLDFAST_POD=GB git commit -qm own 2>&1; echo \"own=$?\"\n"
		OWNERS_END);
	ET_HAS(r.out, "refused=1\n", "modified a/x: held by GA (pid ", "/g/a:write:recursive", "json=1\n",
	       "\"registry\":\"", "\"name\":\"GA\"", "own=0\n");
	cr_assert(strstr(r.out, E.uri), "the registry named: %s", r.out);
	cr_assert(!strstr(r.out, "b/y: held"), "B's own path is not refused: %s", r.out);
	et_out_free(&r);
}
