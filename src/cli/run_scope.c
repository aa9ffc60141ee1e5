/*
 * run_scope.c - the scope side of `holdfast run --scope`: one registration
 * for CMD's pid (cli_scope_run_register: a generated or given name, the
 * specs, delegated from $HOLDFAST_POD, a wait with the status line that a
 * forwarded signal ends), its liveness descriptor kept by run until CMD has
 * ended (on etcd the handle, whose thread keeps the lease), and its release
 * with the generation it was granted (cli_scope_run_release), so a name
 * reaped and taken by another meanwhile is left alone. Over the public API
 * alone; the words are cmd_scope.c's (scope_words.h).
 */
#include "cli.h"
#include "scope_words.h"

#include "holdfast.h"
#include "sys.h"
#include "text.h"

#include "run.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW(s) CLI_SHOW(s)

/* One registration per process: released with the same generation. */
static char run_name[HF_POD_NAME_MAX + 1];
static char run_registry[PATH_MAX]; /* the file's registry it was registered in */
static uint64_t run_generation;
static hf_scope *run_handle; /* etcd: its thread keeps the lease while CMD runs */


struct specs {
	const char *const *specs;
	size_t n;
};

/* Who holds one of the specs' paths now, for the waitline (ctx: struct
 * specs): the first live pod whose write scope holds one. */
static void scope_holder_now(const void *ctx, char *buf, size_t n)
{
	const struct specs *sp = ctx;
	buf[0] = '\0';
	hf_registry *r;
	char path[PATH_MAX], canon[PATH_MAX], reg[PATH_MAX];
	cli_scope_spec_path(sp->specs[0], path, sizeof path);
	if (hf_registry_path_for(path, reg, sizeof reg) < 0 || hf_registry_read(reg, &r, NULL) < 0)
		return; /* RG13: the specs' registry */
	for (size_t i = 0; i < sp->n && !buf[0]; i++) {
		cli_scope_spec_path(sp->specs[i], path, sizeof path);
		hf_rec *v = NULL;
		if (hf_path_canonical(path, canon, sizeof canon) == 0 &&
		    hf_registry_check(r, canon, NULL, 0, &v) == HF_SCOPE_HELD) {
			long hi = hf_registry_find(r, cli_scope_field(v, "holder"));
			if (hi >= 0)
				cli_scope_holder_words(hf_registry_get(r, (size_t)hi), buf, n);
		}
		hf_rec_free(v);
	}
	hf_registry_free(r);
}

int cli_scope_run_register(const char *name, const char *const *specs, size_t nspecs, int pid,
			   int64_t deadline_ns, struct cli_child *c, int *ret_live_fd,
			   char *ret_name, size_t n)
{
	/* on a terminal or with -v, a try (wait 0) before the wait says whether
	 * this is one (waitline.c) */
	struct specs sp = { specs, nspecs };
	struct cli_waitline wl;
	bool wanted = cli_waitline_wanted();
	cli_scope_use_backend(); /* run's --backend holds for its scope too */
	const char *env = getenv("HOLDFAST_POD");
	char gen_name[32];
	hf_scope *s = NULL;
	int rc = 0;
	const char *pname = name;
	char what[256];
	snprintf(what, sizeof what, "scope %s%s", SHOW(specs[0]), nspecs > 1 ? " ..." : "");
	cli_waitline_init(&wl, what, scope_holder_now, &sp);
	bool fresh = !name; /* a generated name: tried once first (drawn again if taken) */
	for (int attempt = 0;; attempt++) {
		if (fresh) {
			char hex[9];
			rc = hf_random_hex(hex, 4);
			if (rc < 0)
				return cli_scope_report("register", "(run)", NULL, rc, NULL);
			snprintf(gen_name, sizeof gen_name, "run-%s", hex);
			pname = gen_name;
		}
		hf_scope_free(s);
		rc = cli_scope_make("register", pname, specs, nspecs, &s);
		if (rc) {
			cli_waitline_end(&wl);
			return rc;
		}
		/* the wait, woken when the registry changes (hf_scope_register),
		 * ends on a forwarded signal: c's signal descriptor */
		/* what is left of the deadline, never negative: a deadline that
		 * passed during the last try (a short -w on a loaded machine)
		 * leaves one more try, not HF_OPT_WAIT_MS < 0, "wait forever"
		 * (AQ1, as cli_wait_left) */
		int64_t left = deadline_ns > 0 ? cli_wait_left(deadline_ns) : 0;
		int64_t wait_ms = deadline_ns < 0 ? -1 : deadline_ns == 0 || fresh ? 0 : left;
		bool probing = wait_ms != 0 && wanted && !wl.begun;
		if (probing)
			wait_ms = 0;
		hf_scope_set(s, HF_OPT_PID, pid);
		hf_scope_set_str(s, HF_OPT_FROM, env && *env ? env : NULL);
		hf_scope_set(s, HF_OPT_WAIT_MS, wait_ms);
		/* -n: the scope is tried once, but the registry's lock (a short
		 * critical section, not the thing held) gets its usual bound */
		hf_scope_set(s, HF_OPT_LOCK_WAIT_MS, left > 0 ? left : 0);
		hf_scope_set(s, HF_OPT_CANCEL_FD, c ? c->sigfd : -1);
		rc = hf_scope_register(s);
		const hf_rec *h = hf_scope_holder(s);
		if (probing && (rc == HF_ECONFLICT || rc == HF_EHELD)) {
			char who[2048];
			cli_scope_holder_words(h, who, sizeof who);
			cli_waitline_begin(&wl, who);
			continue; /* now the wait, for the time left */
		}
		if (rc == HF_ECANCELED && c && !cli_child_stop_pending(c) &&
		    (deadline_ns < 0 || hf_sys_mono_ns() < deadline_ns))
			continue; /* not a stop (CMD's SIGCHLD): wait on */
		int sig = c && rc < 0 ? cli_child_stop_pending(c) : 0;
		cli_waitline_end(&wl); /* WL2: this attempt ends the wait, if any */
		if (sig) {
			cli_err("scope register %s: stopped by %s while waiting", SHOW(pname),
				strsignal(sig));
			hf_scope_free(s);
			return 128 + sig;
		}
		if (fresh && rc == HF_EHELD && attempt < 4)
			continue; /* a generated name taken: draw another */
		if (fresh && (rc == HF_ECONFLICT || rc == HF_EHELD) && deadline_ns != 0) {
			fresh = false; /* now wait, under this name */
			continue;
		}
		if (rc < 0) {
			bool waited = deadline_ns > 0 && hf_sys_mono_ns() >= deadline_ns;
			int was = cli_scope_refusal_of(rc, h);
			int code = cli_scope_report(waited ? "register (timed out waiting)" : "register", pname,
					  cli_scope_spec_of(specs, nspecs, h), was, h);
			hf_scope_free(s);
			return code;
		}
		break;
	}
	uint64_t gen = hf_scope_generation(s);
	int live_fd = -1;
	if (strlen(pname) + 1 > n) {
		hf_scope_free(s);
		return HF_EXIT_SOFTWARE;
	}
	bool leased = hf_scope_fd(s) < 0; /* on etcd: a lease, no descriptor */
	if (leased) {
		run_handle = s; /* etcd: held, its lease kept alive, until CMD has ended */
	} else {
		live_fd = hf_scope_detach(s); /* run keeps it until CMD has ended */
		hf_scope_free(s);
	}
	snprintf(run_name, sizeof run_name, "%s", pname);
	char first[PATH_MAX];
	cli_scope_spec_path(specs[0], first, sizeof first);
	if (leased || hf_registry_path_for(first, run_registry, sizeof run_registry) < 0)
		run_registry[0] = '\0'; /* RG13: released where it was registered */
	run_generation = gen;
	strcpy(ret_name, pname);
	*ret_live_fd = live_fd;
	return HF_EXIT_OK;
}

int cli_scope_run_release(const char *name, int live_fd)
{
	uint64_t gen = !strcmp(name, run_name) ? run_generation : 0;
	hf_scope *s = NULL;
	int rc;
	bool on_etcd = run_handle && !strcmp(name, run_name);
	if (on_etcd) { /* etcd: the handle that holds it */
		s = run_handle;
		run_handle = NULL;
		rc = hf_scope_release(s);
	} else if ((rc = hf_scope_new(name, &s)) == 0) {
		hf_scope_set(s, HF_OPT_GENERATION, (int64_t)gen);
		if (!strcmp(name, run_name) && run_registry[0])
			hf_scope_set_str(s, HF_OPT_REGISTRY, run_registry);
		rc = hf_scope_release(s);
	}
	if (live_fd >= 0)
		hf_sys_close(live_fd); /* after the release: the owner was alive until now */
	int code = HF_EXIT_OK;
	if (rc == HF_ENOTYOURS) {
		cli_err("run: the scope '%s' was reaped and registered again by another (pid %lld) "
			"while CMD ran; left alone",
			SHOW(name), (long long)cli_scope_field_int(hf_scope_holder(s), "pid", 0));
		code = HF_EXIT_CONFLICT;
	} else if (rc == HF_ENOTHELD && on_etcd) { /* its lease expired while CMD ran */
		cli_err("run: the scope '%s' was lost while CMD ran (its lease expired)", SHOW(name));
		code = HF_EXIT_CONFLICT;
	} else if (rc < 0 && rc != HF_ENOTHELD) {
		/* not held in the file's registry: reaped already, CMD having ended
		 * (a run that is pid 1 of its pid namespace sees CMD's end before
		 * its release) */
		code = cli_scope_report_words("release", name, NULL, rc, s ? hf_scope_holder(s) : NULL);
	}
	hf_scope_free(s);
	return code;
}
