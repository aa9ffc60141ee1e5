/*
 * session.h - session lock internals shared with the CLI and the tests.
 * Not part of the public API; the protocol is in session.c's header.
 */
#ifndef HF_SESSION_H
#define HF_SESSION_H

#include "holdfast.h"
#include "owner.h"

#include <stddef.h>
#include <stdint.h>

#define HF_SESSION_STALE_MS_DEFAULT (90LL * 60 * 1000)
#define HF_SESSION_ASIDE_INFIX ".aside-"  /* <name>.aside-<16 hex>             */

struct hf_sessionlock_record {
	char lane[HF_LANE_MAX + 1];       /* "" only for a legacy record             */
	char owner[HF_OWNER_MAX + 1];     /* the caller's token, or a generated one */
	int64_t pid;                      /* the process that wrote it (0: unknown) */
	char host[HF_HOST_MAX + 1];
	int64_t started_ms;               /* Unix ms                                */
	int legacy;                       /* 1: a bare ISO-8601 timestamp lock      */
	int has_broke;                    /* 1: this take broke a stale lock        */
	struct {
		char lane[HF_LANE_MAX + 1];
		char owner[HF_OWNER_MAX + 1];
		int64_t started_ms;
		int64_t age_s;
		int legacy;
	} broke;
	/* When "started" was, on the writer's kernel: with these its age is
	 * boot-relative for a judge on the same kernel and time namespace (a
	 * wall-clock step moves it neither way); absent in older records. */
	char boot_id[HF_BOOTID_LEN + 1];  /* "": unknown                            */
	uint64_t timens;                  /* time namespace inode; 0: unknown       */
	int64_t boot_ms;                  /* CLOCK_BOOTTIME ms; 0: unknown          */
};

struct hf_sessionlock_opts {
	const char *path;                 /* the lock file; NULL: the default path  */
	const char *lane;                 /* required for take and release          */
	const char *owner;                /* NULL: take generates; release: unchecked */
	int64_t stale_ms;                 /* <= 0: HF_SESSION_STALE_MS_DEFAULT      */
};

enum hf_session_state {
	HF_SESSION_FREE = 0,
	HF_SESSION_HELD = 1,              /* a live lock                            */
	HF_SESSION_STALE = 2,             /* older than the stale window            */
	HF_SESSION_SKEW = 3,              /* dated in the future: live, clock skew  */
	HF_SESSION_UNREADABLE = 4,        /* garbage, unparseable, unreadable       */
};

struct hf_sessionlock_status {
	int state;                        /* enum hf_session_state                  */
	struct hf_sessionlock_record rec;     /* valid for HELD, STALE, SKEW            */
	int64_t age_ms;                   /* from rec.started_ms, never from mtime  */
	int64_t mtime_ms;                 /* evidence only (UNREADABLE included)    */
	int in_aside;                     /* 1: the record sits in an aside         */
	char aside[256];                  /* its name, when in_aside                */
	char reason[160];                 /* UNREADABLE: what was wrong             */
};

/* Take the lock for o->lane (session.c, ST1-ST5). 0 and *ret_taken (may be
 * NULL); HF_EHELD (a live lock at the name or in an aside: *reterr_holder),
 * HF_EUNREADABLE (the lock or an aside cannot be read: *reterr_holder with
 * the reason), -EINVAL (lane or owner not text), -EAGAIN (the lock changed
 * hands ROUNDS_MAX times meanwhile), other -errno. */
int hf_sessionlock_take(const struct hf_sessionlock_opts *o, struct hf_sessionlock_record *ret_taken,
		    struct hf_sessionlock_status *reterr_holder);
/* Release o->lane's lock (SR1-SR3). 0; HF_ENOTHELD (no record at the name
 * or in an aside); HF_ENOTYOURS (another lane's or owner's: *reterr_holder);
 * HF_EUNREADABLE (the lock cannot be read); -EAGAIN (SH10); -EINVAL; other
 * -errno. */
int hf_sessionlock_release(const struct hf_sessionlock_opts *o, struct hf_sessionlock_status *reterr_holder);
/* Renew o->lane's lock (SN1-SN4): its record replaced by one of the same
 * lane and owner, "started" now. 0 and *ret (may be NULL); HF_ENOTHELD
 * (nothing at the name); HF_ENOTYOURS (another lane's or owner's:
 * *reterr_holder); HF_EUNREADABLE; HF_ELOST (broken or released while it
 * was renewed: *reterr_holder names who holds it now, if anyone); -EAGAIN;
 * -EINVAL; other -errno. */
int hf_sessionlock_renew(const struct hf_sessionlock_opts *o, struct hf_sessionlock_record *ret,
			 struct hf_sessionlock_status *reterr_holder);
/* 0 and *ret filled (any state, UNREADABLE included); -errno when the
 * directory cannot be read. path NULL: the default path; stale_ms <= 0:
 * the default window. */
int hf_sessionlock_status(const char *path, int64_t stale_ms, struct hf_sessionlock_status *ret);


/* *path, or when it is NULL the default path (hf_session_default_path) into
 * def (n bytes) and *path = def. 0 or -errno. */
int hf_session_resolve_path(const char **path, char *def, size_t n);

/* A lock file larger than this is not a lock (a record is well under 1 KiB). */
#define HF_SESSION_FILE_MAX 4096

/* The record as one line of JSON plus "\n" (fields in contract order;
 * "broke" only when has_broke). The length, or -ENAMETOOLONG. */
int hf_session_format(const struct hf_sessionlock_record *r, char *buf, size_t n);

/* Parse a lock file's bytes: a JSON record, or a bare ISO-8601 timestamp
 * (legacy). 0 and *ret; HF_EUNREADABLE with a reason in why (n bytes). */
int hf_session_parse(const char *buf, size_t len, struct hf_sessionlock_record *ret, char *why,
		     size_t n);

/* A record's age at wall-clock time now_ms (SL2): boot-relative when the
 * record carries boot_id, timens and boottime_ms of this kernel and time
 * namespace (never negative then), else now - started by the wall clock
 * (negative when dated in the future). */
int64_t hf_session_age_ms(const struct hf_sessionlock_record *r, int64_t now_ms);

/* HF_SESSION_HELD, _STALE or _SKEW for a parsed record at time now_ms, and
 * its age (hf_session_age_ms; _SKEW when negative). */
int hf_session_judge(const struct hf_sessionlock_record *r, int64_t now_ms, int64_t stale_ms,
		     int64_t *ret_age_ms);

/* Is name an aside of the lock file lock_name ("<lock_name>.aside-<16 hex>")? */
int hf_session_is_aside(const char *lock_name, const char *name);

#endif
