/*
 * selftest.h - the file system and /proc probes of `holdfast selftest`
 * (selftest_fs.c), run by cmd_selftest.c before its interleavings.
 */
#ifndef HF_CLI_SELFTEST_H
#define HF_CLI_SELFTEST_H

#include <stddef.h>

enum { ST_OK = 0, ST_NOTE = 1, ST_FAIL = -1 };

enum {
	ST_P_LINK,      /* hard links: needed                       */
	ST_P_TMPFILE,   /* O_TMPFILE + linkat: optional (fallback)  */
	ST_P_NOREPLACE, /* renameat2 RENAME_NOREPLACE: needed       */
	ST_P_FLOCK,     /* flock(2) on files and directories: needed */
	ST_P_INOTIFY,   /* inotify on DIR: optional (backoff)       */
	ST_P_PROC,      /* /proc start times: needed                */
	ST_P_PIDNS,     /* /proc of this pid namespace: needed      */
};

/* Run probe which in the scratch directory dfd (its path dir): ST_OK;
 * ST_NOTE (works without it; why says how); ST_FAIL (why says what
 * fails). Leaves nothing in the directory. */
int st_probe(int which, int dfd, const char *dir, char *why, size_t n);

#endif
