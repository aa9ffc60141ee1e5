/* sx.c - helpers for the session lock's tests (see sx.h). */
#include "sx.h"

#include "internal.h"
#include "session_file.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sx_init(struct sx *x)
{
	x->dir = hft_tmpdir();
	snprintf(x->lock, sizeof x->lock, "%s/%s", x->dir, HF_SESSION_FILE);
}

void sx_fini(struct sx *x)
{
	hft_rmtree(x->dir);
	free(x->dir);
}

void sx_put(struct sx *x, const char *content)
{
	hft_write(x->lock, content);
}

/* A record of lane and owner started age_ms ago, written by pid 4242 on
 * "box"; with boot_id, also its boot-relative time boot_age_ms ago. */
static void record_bytes(char *buf, size_t n, const char *lane, const char *owner,
			 int64_t age_ms, const char *boot_id, int64_t boot_age_ms)
{
	struct hf_sessionlock_record r;
	memset(&r, 0, sizeof r);
	snprintf(r.lane, sizeof r.lane, "%s", lane);
	snprintf(r.owner, sizeof r.owner, "%s", owner);
	r.pid = 4242;
	snprintf(r.host, sizeof r.host, "box");
	r.started_ms = hf_sys_now_ms() - age_ms;
	if (boot_id) {
		snprintf(r.boot_id, sizeof r.boot_id, "%s", boot_id);
		r.timens = hf_self_timens();
		r.boot_ms = hf_sys_boot_ms() - boot_age_ms;
	}
	cr_assert_gt(hf_session_format(&r, buf, n), 0);
}

void sx_put_record(struct sx *x, const char *lane, const char *owner, int64_t age_ms)
{
	char buf[1024];
	record_bytes(buf, sizeof buf, lane, owner, age_ms, NULL, 0);
	sx_put(x, buf);
}

void sx_put_record_boot(struct sx *x, const char *lane, const char *owner, int64_t age_ms,
			const char *boot_id, int64_t boot_age_ms)
{
	char buf[1024];
	record_bytes(buf, sizeof buf, lane, owner, age_ms, boot_id, boot_age_ms);
	sx_put(x, buf);
}

void sx_put_aside_record(struct sx *x, const char *hex16, const char *lane, const char *owner,
			 int64_t age_ms)
{
	char buf[1024], path[900];
	record_bytes(buf, sizeof buf, lane, owner, age_ms, NULL, 0);
	snprintf(path, sizeof path, "%s%s%s", x->lock, HF_SESSION_ASIDE_INFIX, hex16);
	hft_write(path, buf);
}

void sx_put_legacy(struct sx *x, int64_t age_ms)
{
	char buf[64];
	hf_time_format(hf_sys_now_ms() - age_ms, buf, sizeof buf - 1);
	strcat(buf, "\n");
	sx_put(x, buf);
}

char *sx_read(struct sx *x)
{
	return hft_slurp(x->lock);
}

int sx_asides(struct sx *x)
{
	return hft_count_prefix(x->dir, HF_SESSION_FILE HF_SESSION_ASIDE_INFIX);
}

int sx_cli(struct sx *x, char **out, char **err, const char *verb, const char *lane,
	   const char *extra1, const char *extra2)
{
	const char *argv[] = { "holdfast", "session", verb, "--lane", lane, "--file", x->lock,
			       extra1, extra2, NULL };
	return hft_cli(out, err, argv);
}

void sx_spawn(struct hft_child *c, struct sx *x, const char *rules, const char *verb,
	      const char *lane)
{
	const char *argv[] = { "holdfast", "session", verb, "--lane", lane, "--file", x->lock,
			       NULL };
	hft_spawn_cli(c, rules, argv, NULL);
}

void sx_assert_held(struct sx *x, const char *lane)
{
	struct hf_sessionlock_status st;
	cr_assert_eq(hf_sessionlock_status(x->lock, 0, &st), 0);
	cr_assert_eq(st.state, HF_SESSION_HELD, "state %d, expected held by %s", st.state, lane);
	cr_assert_not(st.in_aside, "the live record sits in an aside, not at the name");
	cr_assert_str_eq(st.rec.lane, lane);
	cr_assert_eq(sx_asides(x), 0, "no aside may remain beside the lock");
}
