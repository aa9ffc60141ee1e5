/*
 * schedule.h - the session lock's race schedules, written once (schedule.c)
 * and run by two harnesses: `holdfast selftest` (cmd_selftest.c, on the
 * user's file system) and the tests (tests/session/test_race.c, under
 * Criterion). A schedule is a list of steps: start a `holdfast` child armed
 * with pause rules, wait until it reports a named point, let it go, expect
 * its exit code, run a command to its end, look at the lock. The harness
 * gives the process steps (how a child is started, paused, waited for);
 * sched_run does every step and every look itself, so both harnesses check
 * exactly the same things.
 */
#ifndef HF_CLI_SCHEDULE_H
#define HF_CLI_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

enum sched_op {
	SO_END = 0,
	SO_RECORD,        /* a record of lane `a`, owner `b`, started n ms ago  */
	SO_ASIDE_RECORD,  /* the same in <lock>.aside-<text>                     */
	SO_SPAWN,         /* child kid: `verb` ("take", "release": lane `a`;
			     "naive": the read-then-write guard) armed with the
			     rules `text`                                         */
	SO_EXPECT,        /* child kid reports point `text`                      */
	SO_GO,            /* child kid goes on from its pause                    */
	SO_EXIT,          /* child kid ends with exit code n                     */
	SO_CLI,           /* `verb` lane `a` run to its end: exit code n, and
			     `text` (when set) in its stderr                      */
	SO_ABSENT,        /* nothing at the lock's name                          */
	SO_ASIDES,        /* exactly n asides beside the lock                    */
	SO_SAVE,          /* remember the lock's bytes and inode                 */
	SO_SAME,          /* the lock's bytes are those remembered               */
	SO_SAME_INODE,    /* ... and its inode too (never moved)                 */
	SO_HELD,          /* live at its name, by lane `a`, no aside beside it   */
	SO_BROKE,         /* its record names lane `a` under "broke"             */
	SO_UNLINK,        /* remove the lock                                     */
};

struct sched_step {
	enum sched_op op;
	int kid;          /* 0-3 */
	const char *verb, *a, *b, *text;
	int64_t n;
};

struct sched {
	const char *name; /* "third-taker" */
	const char *what; /* one line: what it shows */
	const struct sched_step *steps;
};

extern const struct sched sched_table[];
extern const size_t sched_count;

/* The harness: how a child is started, paused and waited for. Each
 * function reports its own failure through fail (and returns -1). */
#define SCHED_KIDS 4
struct sched_ops {
	void *ctx;
	/* start `holdfast ARGS...` (argv NULL-terminated, argv[0] is
	 * "holdfast") as child kid with HOLDFAST_FAULTS=rules */
	int (*spawn)(void *ctx, int kid, const char *rules, const char *const *argv);
	/* the next point child kid reports must be point */
	int (*expect)(void *ctx, int kid, const char *point);
	void (*go)(void *ctx, int kid);
	/* let child kid run to its end: its exit code (128+N: signal N), -1
	 * when it never started */
	int (*wait)(void *ctx, int kid);
	/* `holdfast ARGS...` to its end: its exit code; *err its stderr
	 * (malloc'd) */
	int (*run)(void *ctx, const char *const *argv, char **err);
	/* note the first failure (message); returns -1 */
	int (*fail)(void *ctx, const char *msg);
};

/* Run schedule s on the lock file lock (its directory is the schedule's
 * own, empty at the start). 0 when every step held; -1 after ops->fail was
 * told why. Every child started is waited for either way. */
int sched_run(const struct sched *s, const char *lock, const struct sched_ops *ops);

/* What both harnesses look at. A record of lane and owner started age_ms
 * ago (negative: in the future) at path, in the file's format, as another
 * holder would write it: 0 or -errno. */
int sched_put_record(const char *path, const char *lane, const char *owner, int64_t age_ms);
/* The lock file's bytes (malloc'd), NULL when absent. */
char *sched_lock_bytes(const char *lock);
/* How many <lock>.aside-* entries sit beside lock (-1: unreadable). */
int sched_asides(const char *lock);

#endif
