/*
 * faults.c - the fault engine (faults.h): rules armed by a test or the
 * environment, obeyed at the seam's points through hf_sys_hook.
 */
#include "faults.h"

#include "sys.h"
#include "text.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { RULE_FAIL = 1, RULE_PAUSE, RULE_CRASH, RULE_SKEW, RULE_CAP };

#define POINT_ALL_CALLS (-2) /* "*" */

struct rule {
	int kind;
	int point;             /* enum hf_point, or POINT_ALL_CALLS          */
	unsigned long target;  /* fire at this hit                           */
	unsigned long hits;
	int err;
	int persist;
	int64_t skew_ms;       /* RULE_SKEW; RULE_CAP: the cap               */
};

#define MAX_RULES 16
static struct rule rules[MAX_RULES];
static int nrules;
static int notify_fd = -1, go_fd = -1;

static const struct {
	const char *name;
	int value;
} errnames[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EINTR", EINTR }, { "EIO", EIO },
	{ "EBADF", EBADF }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM }, { "EACCES", EACCES },
	{ "EBUSY", EBUSY }, { "EEXIST", EEXIST }, { "EXDEV", EXDEV }, { "ENOTDIR", ENOTDIR },
	{ "EISDIR", EISDIR }, { "EINVAL", EINVAL }, { "EMFILE", EMFILE }, { "ENOSPC", ENOSPC },
	{ "EROFS", EROFS }, { "EMLINK", EMLINK }, { "ENAMETOOLONG", ENAMETOOLONG },
	{ "ENOSYS", ENOSYS }, { "ENOTEMPTY", ENOTEMPTY }, { "ELOOP", ELOOP },
	{ "ESTALE", ESTALE }, { "EDQUOT", EDQUOT }, { "ESRCH", ESRCH }, { "ECHILD", ECHILD },
	{ "EOPNOTSUPP", EOPNOTSUPP }, { "ENOLCK", ENOLCK }, { "EDEADLK", EDEADLK },
};

static int parse_errno(const char *s)
{
	for (size_t i = 0; i < sizeof errnames / sizeof errnames[0]; i++)
		if (!strcmp(s, errnames[i].name))
			return errnames[i].value;
	uint64_t v;
	if (hf_parse_u64(s, 4095, &v) == 0 && v > 0)
		return (int)v; /* FA3 */
	return 0;
}

/* One rule "kind:point[:n[:errno[:persist]]]" (s is cut up); 0 or -EINVAL. */
static int parse_rule(char *s, struct rule *r, char *why, size_t wn)
{
	char whole[256];
	snprintf(whole, sizeof whole, "%s", s);
	char *f[5] = { 0 };
	int nf = 0;
	for (char *p = s; nf < 5;) {
		f[nf++] = p;
		p = strchr(p, ':');
		if (!p)
			break;
		*p++ = '\0';
	}
	memset(r, 0, sizeof *r);
	r->target = 1;
	if (nf < 2 || !*f[1])
		return hf_why(why, wn, -EINVAL, "rule '%s': no point", whole);
	if (!strcmp(f[0], "fail"))
		r->kind = RULE_FAIL;
	else if (!strcmp(f[0], "pause"))
		r->kind = RULE_PAUSE;
	else if (!strcmp(f[0], "crash"))
		r->kind = RULE_CRASH;
	else if (!strcmp(f[0], "skew"))
		r->kind = RULE_SKEW;
	else if (!strcmp(f[0], "cap"))
		r->kind = RULE_CAP;
	else
		return hf_why(why, wn, -EINVAL, "rule '%s': kind '%s' is not fail, pause, crash, skew or cap",
			      whole, f[0]);
	if (r->kind == RULE_CAP) {
		/* cap:wait:MS, MS > 0 */
		char *end;
		if (strcmp(f[1], "wait") || nf != 3 || !*f[2])
			return hf_why(why, wn, -EINVAL, "rule '%s': cap:wait:MS", whole);
		errno = 0;
		long long ms = strtoll(f[2], &end, 10);
		if (*end || errno || ms <= 0 || ms > 86400000)
			return hf_why(why, wn, -EINVAL, "rule '%s': MS is not 1 to 86400000 ms", whole);
		r->skew_ms = ms;
		return 0;
	}
	if (r->kind == RULE_SKEW) {
		/* skew:wall:MS, MS signed */
		if (strcmp(f[1], "wall") || nf != 3 || !*f[2])
			return hf_why(why, wn, -EINVAL, "rule '%s': skew:wall:MS", whole);
		bool neg = f[2][0] == '-', sign = neg || f[2][0] == '+';
		uint64_t ms;
		if (hf_parse_u64(f[2] + sign, 100ULL * 365 * 86400000, &ms) < 0)
			return hf_why(why, wn, -EINVAL, "rule '%s': MS is not milliseconds", whole);
		r->skew_ms = neg ? -(int64_t)ms : (int64_t)ms;
		return 0;
	}
	if (!strcmp(f[1], "*")) {
		r->point = POINT_ALL_CALLS;
	} else {
		r->point = hf_point_find(f[1]);
		if (r->point < 0)
			return hf_why(why, wn, -EINVAL, "rule '%s': no point '%s' (points.def)", whole, f[1]);
	}
	if (r->kind == RULE_FAIL && r->point > HF_PT_CALLS_END)
		return hf_why(why, wn, -EINVAL, "rule '%s': '%s' is a named point, not a system call",
			      whole, f[1]);
	if (nf >= 3 && *f[2]) {
		uint64_t n;
		if (hf_parse_u64(f[2], ULONG_MAX, &n) < 0 || n == 0) /* FA3: not "-1" */
			return hf_why(why, wn, -EINVAL, "rule '%s': N is not a count from 1", whole);
		r->target = (unsigned long)n;
	}
	if (r->kind == RULE_FAIL) {
		if (nf < 4 || !(r->err = parse_errno(f[3])))
			return hf_why(why, wn, -EINVAL, "rule '%s': no errno (EIO, ENOSPC, ... or a number)",
				      whole);
		if (nf == 5) {
			if (strcmp(f[4], "persist"))
				return hf_why(why, wn, -EINVAL, "rule '%s': '%s' is not persist", whole, f[4]);
			r->persist = 1;
		}
	} else if (nf > 3) {
		return hf_why(why, wn, -EINVAL, "rule '%s': too many fields", whole);
	}
	return 0;
}

static void do_pause(enum hf_point point)
{
	if (notify_fd >= 0) {
		char line[80];
		int len = snprintf(line, sizeof line, "%s\n", hf_point_name(point));
		(void)HF_EINTR_RETRY(write(notify_fd, line, (size_t)len));
	}
	if (go_fd >= 0) {
		char c;
		(void)HF_EINTR_RETRY(read(go_fd, &c, 1));
	}
}

static int hook(enum hf_point point)
{
	int rc = 0;
	for (int i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];
		int match = r->point == (int)point ||
			    (r->point == POINT_ALL_CALLS && point < HF_PT_CALLS_END);
		if (!match)
			continue;
		r->hits++; /* FA1 */
		int fire = r->hits == r->target || (r->persist && r->hits > r->target);
		if (!fire)
			continue;
		switch (r->kind) {
		case RULE_FAIL:
			if (!rc)
				rc = -r->err;
			break;
		case RULE_PAUSE:
			do_pause(point);
			break;
		case RULE_CRASH:
			kill(hf_sys_getpid(), SIGKILL);
			for (;;)
				pause();
		}
	}
	return rc;
}

int hf_fault_inject(const char *spec, char *why, size_t wn)
{
	struct rule tmp[MAX_RULES];
	int n = 0;
	int64_t skew = 0, cap = 0;
	if (spec && *spec) {
		char buf[1024];
		if (strlen(spec) >= sizeof buf)
			return hf_why(why, wn, -EINVAL, "rules longer than %zu bytes", sizeof buf - 1);
		strcpy(buf, spec);
		char *save = NULL;
		for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			if (!*tok)
				continue;
			if (n == MAX_RULES)
				return hf_why(why, wn, -EINVAL, "more than %d rules", MAX_RULES);
			int rc = parse_rule(tok, &tmp[n], why, wn);
			if (rc < 0)
				return rc; /* FA2 */
			if (tmp[n].kind == RULE_SKEW)
				skew += tmp[n].skew_ms; /* not a counted rule: it sets the offset */
			else if (tmp[n].kind == RULE_CAP)
				cap = tmp[n].skew_ms; /* not counted either: it sets the cap */
			else
				n++;
		}
	}
	memcpy(rules, tmp, sizeof(struct rule) * (size_t)n);
	nrules = n;
	hf_sys_wall_skew_ms = skew;
	hf_sys_wait_cap_ms = cap;
	hf_sys_hook = n > 0 ? hook : NULL;
	return 0;
}

void hf_fault_pause_fds(int nfd, int gfd)
{
	notify_fd = nfd;
	go_fd = gfd;
}

int hf_fault_parse_fds(const char *s, int *ret_notify, int *ret_go)
{
	char a[16], b[16];
	const char *comma = strchr(s, ',');
	size_t la = comma ? (size_t)(comma - s) : 0;
	if (!comma || la >= sizeof a || strlen(comma + 1) >= sizeof b)
		return -EINVAL;
	memcpy(a, s, la);
	a[la] = '\0';
	strcpy(b, comma + 1);
	uint64_t x, y;
	if (hf_parse_u64(a, INT_MAX, &x) < 0 || hf_parse_u64(b, INT_MAX, &y) < 0)
		return -EINVAL; /* FA3: " 3", "+3", "3x" and 2^32+3 are no descriptors */
	*ret_notify = (int)x;
	*ret_go = (int)y;
	return 0;
}

int hf_fault_arm_from_env(char *why, size_t n)
{
	const char *fds = getenv("HOLDFAST_PAUSE_FDS");
	if (fds && *fds) {
		int a, b;
		if (hf_fault_parse_fds(fds, &a, &b) < 0)
			return hf_why(why, n, -EINVAL, "HOLDFAST_PAUSE_FDS='%s': not NOTIFY,GO", fds);
		hf_fault_pause_fds(a, b);
	}
	const char *spec = getenv("HOLDFAST_FAULTS");
	if (!spec || !*spec)
		return 0;
	return hf_fault_inject(spec, why, n);
}
