/*
 * sx.h - helpers for the session lock's tests: a scratch lock, records of a
 * chosen age, the CLI run to completion or paused at named points.
 */
#ifndef SX_H
#define SX_H

#include "hft.h"

#include <stdint.h>

#define SX_HOUR (3600LL * 1000)

struct sx {
	char *dir;
	char lock[800];   /* dir/.session.lock */
};

void sx_init(struct sx *x);
void sx_fini(struct sx *x);

void sx_put(struct sx *x, const char *content);
/* A JSON record of lane and owner, started age_ms ago (< 0: in the future). */
void sx_put_record(struct sx *x, const char *lane, const char *owner, int64_t age_ms);
/* A record of this machine's kind: with "boot_id" (NULL: none of the boot
 * fields), this time namespace and a "boottime_ms" boot_age_ms ago, while
 * "started" is age_ms ago by the wall clock. */
void sx_put_record_boot(struct sx *x, const char *lane, const char *owner, int64_t age_ms,
			const char *boot_id, int64_t boot_age_ms);
/* The same record written into an aside, <lock>.aside-<hex16> (as a
 * breaker killed between its move and its restore leaves it). */
void sx_put_aside_record(struct sx *x, const char *hex16, const char *lane, const char *owner,
			 int64_t age_ms);
/* A legacy lock: a bare ISO-8601 timestamp, age_ms old. */
void sx_put_legacy(struct sx *x, int64_t age_ms);
/* The lock's bytes (malloc'd), NULL when absent. */
char *sx_read(struct sx *x);
/* How many <lock>.aside-* entries sit beside the lock. */
int sx_asides(struct sx *x);

/* `holdfast session VERB --lane LANE --file LOCK [extra...]` to completion. */
int sx_cli(struct sx *x, char **out, char **err, const char *verb, const char *lane,
	   const char *extra1, const char *extra2);
/* The same, as a child armed with rules (see hft_spawn_cli). */
void sx_spawn(struct hft_child *c, struct sx *x, const char *rules, const char *verb,
	      const char *lane);

/* The lock is live at its name, held by lane, with no aside beside it. */
void sx_assert_held(struct sx *x, const char *lane);

#endif
