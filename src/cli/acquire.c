/*
 * acquire.c - taking a directory lock on behalf of a command (run.h): the
 * -n / -w / -E options, the deadline, a wait that a forwarded signal ends,
 * the words for a holder, and the status line of the wait (waitline.c).
 *
 * The wait is the library's (HF_OPT_WAIT_MS): it wakes on the release, not
 * on a timer. Its cancel descriptor (HF_OPT_CANCEL_FD) is the child's
 * signalfd: a forwarded signal ends the wait with HF_ECANCELED, and so does
 * a SIGCHLD; the first stops the acquisition, the second stops it when
 * CMD's (still blocked) process is gone - killed before it could run -
 * and otherwise is read and the wait resumes with the time that is left.
 *
 * Invariants
 * ----------
 *   (AQ1) The wait never passes the deadline: each (re)start of the
 *         library's wait gets the time left, rounded up to a millisecond,
 *         and the library's waits never sleep past theirs (WT1).
 *   (AQ2) A refusal is never reported as success: every failure returns an
 *         exit code that is not 0 (HF_EXIT_CONFLICT for held or timed out);
 *         only the caller turns it into -E CODE, when it exits.
 */
#include "cli.h"
#include "proc.h"
#include "run.h"
#include "sys.h"
#include "text.h"

#include <assert.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_wait_opt(struct cli_wait_opts *w, int opt, const char *arg)
{
	switch (opt) {
	case 'n':
		w->wait_ms = 0;
		return 0;
	case 'w':
		return cli_duration_arg("-w", arg, &w->wait_ms);
	case 'E': {
		uint64_t v;
		if (hf_parse_u64(arg, 255, &v) < 0) { /* digits only: not " 5", "+5" */
			cli_err("-E %s: not an exit code (0-255)", arg);
			return HF_EXIT_USAGE;
		}
		w->conflict_exit = (int)v;
		return 0;
	}
	}
	return HF_EXIT_USAGE;
}

int64_t cli_deadline(int64_t wait_ms)
{
	if (wait_ms < 0)
		return -1;
	if (wait_ms == 0)
		return 0;
	return hf_sys_mono_ns() + wait_ms * 1000000LL;
}

int64_t cli_wait_left(int64_t deadline_ns)
{
	if (deadline_ns <= 0)
		return deadline_ns < 0 ? -1 : 0;
	int64_t left = deadline_ns - hf_sys_mono_ns();
	return left <= 0 ? 0 : (left + 999999) / 1000000; /* AQ1 */
}

/* field of the record at pre ("" the record itself, "holders.1." one of
 * its holders), into f */
static const char *at(const char *pre, const char *field, char f[96])
{
	snprintf(f, 96, "%s%s", pre, field);
	return f;
}

void cli_holder_words(const hf_rec *h, char *buf, size_t n)
{
	cli_holder_words_at(h, "", buf, n);
}

void cli_holder_words_at(const hf_rec *h, const char *pre, char *buf, size_t n)
{
	char f[96];
	int64_t v, pid = 0, age = 0, fence = 0;
	if (hf_rec_int(h, at(pre, "age_ms", f), &v) == 0)
		age = v;
	char ages[32];
	cli_format_age(age < 0 ? -age : age, ages, sizeof ages);
	bool in_claim = hf_rec_int(h, at(pre, "in_claim", f), &v) == 0 && v;
	const char *claim = in_claim ? ", in a claim beside it" : "";
	if (hf_rec_int(h, at(pre, "pid", f), &v) == 0)
		pid = v;
	if ((hf_rec_int(h, at(pre, "partial", f), &v) == 0 && v) || (!hf_rec_str(h, at(pre, "token", f)) && pid <= 0)) {
		if (hf_rec_int(h, at(pre, "age_ms", f), &v) == 0)
			snprintf(buf, n, "a holder whose owner record is not complete yet (%s old%s)",
				 ages, claim);
		else
			snprintf(buf, n, "an unknown holder");
		return;
	}
	if (hf_rec_int(h, at(pre, "fence", f), &v) == 0)
		fence = v;
	const char *host = hf_rec_str(h, at(pre, "host", f));
	const char *comm = hf_rec_str(h, at(pre, "comm", f));
	const char *state = hf_rec_str(h, at(pre, "state", f));
	char live[HF_COMM_MAX + 1] = "";
	if ((!comm || !*comm) && host && !strcmp(host, hf_host_name()) &&
	    hf_pid_comm((pid_t)pid, live, sizeof live) == 0)
		comm = live; /* a record without its command's name */
	char shown[64] = "";
	if (comm && *comm)
		snprintf(shown, sizeof shown, " (%s)", CLI_SHOW(comm));
	bool skew = state && !strcmp(state, "skew");
	int64_t lease = 0;
	if (hf_rec_int(h, at(pre, "lease_ms", f), &v) == 0 && v > 0)
		lease = v; /* OW6: held by no process; its pid took it */
	char lease_words[96] = "";
	if (lease) {
		char len[32], left[32];
		cli_format_age(lease, len, sizeof len);
		cli_format_age(lease > age ? lease - age : 0, left, sizeof left);
		snprintf(lease_words, sizeof lease_words, "a lease of %s (%s%s%s), taken by ", len,
			 age >= lease ? "expired" : "ends in ", age >= lease ? "" : left, "");
	}
	/* its mode, when it shares (an exclusive record says nothing, as
	 * before modes); an acquisition standing at L waits (FB4) */
	const char *mode = hf_rec_str(h, at(pre, "mode", f));
	bool waiting = hf_rec_int(h, at(pre, "waiting", f), &v) == 0 && v;
	char how[64] = "";
	int64_t slots = 0;
	if (mode && !strcmp(mode, "slots") && hf_rec_int(h, at(pre, "slots", f), &v) == 0)
		slots = v;
	if (mode && !strcmp(mode, "slots"))
		snprintf(how, sizeof how, " (%sslots %" PRId64 ")", waiting ? "waiting, " : "", slots);
	else if (mode && (waiting || strcmp(mode, "exclusive")))
		snprintf(how, sizeof how, " (%s%s)", waiting ? "waiting, " : "", CLI_SHOW(mode));
	else if (waiting)
		snprintf(how, sizeof how, " (waiting)");
	snprintf(buf, n, "%spid %" PRId64 "%s on %s, %s%s%s, fence %" PRId64 "%s%s", lease_words, pid,
		 shown, host && *host ? CLI_SHOW(host) : "an unknown host", skew ? "dated " : "", ages,
		 skew ? " in the future (clock skew)" : " old", fence, claim, how);
}

void cli_refusal_words(const char *path, const hf_rec *h, char *buf, size_t n)
{
	cli_holder_words(h, buf, n);
	int64_t v;
	const char *token = hf_rec_str(h, "token");
	if (!token || hf_rec_int(h, "waiting", &v) == 0 || cli_backend())
		return;
	/* the record met at L does not say it waits there (FB4): the status
	 * does, by its token */
	hf_rec *r;
	if (hf_lock_status(path, &r) < 0)
		return;
	for (size_t k = 0; k < hf_rec_len(r, "holders"); k++) {
		char f[48];
		snprintf(f, sizeof f, "holders.%zu.token", k);
		const char *t = hf_rec_str(r, f);
		snprintf(f, sizeof f, "holders.%zu.waiting", k);
		if (t && !strcmp(t, token) && hf_rec_int(r, f, &v) == 0 && v) {
			char pre[32];
			snprintf(pre, sizeof pre, "holders.%zu.", k);
			cli_holder_words_at(r, pre, buf, n);
			break;
		}
	}
	hf_rec_free(r);
}

bool cli_lock_waitable(int rc)
{
	return rc == HF_EHELD || rc == HF_EBARRIER || rc == HF_EUNREADABLE;
}

void cli_lock_holder_now(const void *path, char *buf, size_t n)
{
	hf_rec *r;
	buf[0] = '\0';
	if (cli_backend())
		return; /* on etcd: the holder the first try named stays on the line */
	if (hf_lock_status(path, &r) < 0)
		return;
	const char *st = hf_rec_str(r, "state");
	if (st && strcmp(st, "free"))
		cli_holder_words(r, buf, n);
	hf_rec_free(r);
}

int cli_lock_take(hf_lock *l, const char *path, int64_t deadline_ns, struct cli_child *c)
{
	int rc;
	if (c)
		hf_lock_set(l, HF_OPT_CANCEL_FD, c->sigfd);
	/* on a terminal or with -v, a first try says whether this is a wait
	 * (waitline.c); otherwise the one call of the library waits */
	bool probe = deadline_ns != 0 && cli_waitline_wanted();
	struct cli_waitline wl;
	cli_waitline_init(&wl, path, cli_lock_holder_now, path);
	for (;;) {
		hf_lock_set(l, HF_OPT_WAIT_MS, probe ? 0 : cli_wait_left(deadline_ns));
		rc = hf_lock_acquire(l);
		if (probe) {
			probe = false;
			if (cli_lock_waitable(rc)) {
				char who[400];
				cli_holder_words(hf_lock_holder(l), who, sizeof who);
				cli_waitline_begin(&wl, who);
				continue; /* now the wait, for the time left (AQ1) */
			}
		}
		if (rc != HF_ECANCELED)
			break;
		int sig = c ? cli_child_stop_pending(c) : 0;
		if (sig) {
			cli_waitline_end(&wl);
			cli_err("lock %s: stopped by %s while waiting", path, strsignal(sig));
			return cli_fail(128 + sig, "stopped_by_signal", path, NULL);
		}
		if (c && c->exited) {
			/* CMD's process, blocked before exec, was killed: nobody to
			 * hold the lock for, and nothing will run */
			cli_waitline_end(&wl);
			cli_err("lock %s: CMD's process ended (status %d) while waiting; nothing ran",
				path, c->code);
			return cli_fail(c->code ? c->code : HF_EXIT_SOFTWARE, /* AQ2: never 0 */
					"cmd_ended", path, NULL);
		}
		/* another SIGCHLD (read now): wait on with the time that is left */
	}
	cli_waitline_end(&wl); /* WL2 */
	if (rc == 0)
		return 0;
	if (rc == -EDEADLK) { /* CMD's own pid cannot hold it already: only a --pid caller */
		char who[400];
		cli_holder_words(hf_lock_holder(l), who, sizeof who);
		cli_err("lock %s: held by the process it is wanted for (%s): waiting would last as "
			"long as it does",
			path, who);
		return cli_fail(HF_EXIT_CONFLICT, hf_error_name(rc), path, hf_lock_holder(l));
	}
	if (rc == -ESRCH) {
		/* the process the lock is wanted for (HF_OPT_PID: a shell whose
		 * descriptor it stands for) ended before it could be taken */
		cli_err("lock %s: the process it was wanted for ended while waiting; nothing was "
			"acquired",
			path);
		return cli_fail(cli_exit_for(rc), "no_process", path, NULL); /* AQ2: never 0 */
	}
	if (rc != HF_EHELD && rc != HF_ETIMEDOUT && rc != HF_EBARRIER) {
		int code = cli_lock_refused("lock", path, rc);
		if (code)
			return code; /* AQ2: a refusal's code, never 0 */
		const char *why = hf_rec_str(hf_lock_holder(l), "reason");
		if (why)
			cli_err("lock %s: %s: %s", path, hf_strerror(rc), CLI_SHOW(why));
		else
			cli_err("lock %s: %s", path, hf_strerror(rc));
		code = cli_exit_for(rc);
		assert(code != 0 && "AQ2");
		return cli_fail(code, hf_error_name(rc), path, why ? hf_lock_holder(l) : NULL);
	}
	char who[400];
	cli_refusal_words(path, hf_lock_holder(l), who, sizeof who);
	if (rc == HF_EBARRIER)
		cli_err("lock %s: a claim beside it denies entry (being reaped or released); "
			"last holder: %s",
			path, who);
	else if (deadline_ns == 0)
		cli_err("lock %s is held by %s", path, who);
	else
		cli_err("lock %s: timed out waiting; held by %s", path, who);
	/* AQ2: never 0, the caller applies -E; the holder nested (JS2) */
	return cli_fail(HF_EXIT_CONFLICT, hf_error_name(rc), path, hf_lock_holder(l));
}

json_t *cli_child_json(const struct cli_child *c, char *const argv[])
{
	json_t *args = json_array();
	for (size_t i = 0; argv && argv[i]; i++) {
		json_t *a = json_string(argv[i]);
		json_array_append_new(args, a ? a : json_string(CLI_SHOW(argv[i])));
	}
	char sig[32] = "";
	if (c->exited && c->term_signal) {
		const char *abbrev = sigabbrev_np(c->term_signal);
		if (abbrev)
			snprintf(sig, sizeof sig, "SIG%s", abbrev);
		else
			snprintf(sig, sizeof sig, "%d", c->term_signal);
	}
	return json_pack("{s:o, s:i, s:o, s:o}", "argv", args, "pid", (int)c->pid, "exit",
			 c->exited && !c->term_signal ? json_integer(c->code) : json_null(),
			 "signal", sig[0] ? json_string(sig) : json_null());
}
