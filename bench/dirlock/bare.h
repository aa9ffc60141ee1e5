/*
 * bare.h - the bare system-call floor of one uncontended acquire+release of
 * the directory lock DIR/L: the exact calls `strace` shows the library
 * making in a warm process (exclusive mode), made directly, with a record of
 * the same size. Used by bench_uncontended.c and bench/modes/bench_modes.c.
 * DIR/L.holdfast and its fence counter must exist (one library cycle on
 * DIR/L first). bare_init() once before the first cycle.
 */
#ifndef HF_BENCH_BARE_H
#define HF_BENCH_BARE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

static inline void bare_die(const char *what)
{
	perror(what);
	exit(1);
}

/* The same calls, in the same order, with the same flags and sizes (as
 * strace shows them for one warm cycle of the library). */
static char record[280];
static inline void bare_init(void)
{
	memset(record, 'x', sizeof record);
}

#define ODIR (O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_DIRECTORY)
#define OREC (O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
static inline void bare_cycle(const char *dir)
{
	char buf[4097], name[128], path[160];
	unsigned char rnd[16];
	struct stat st;
	struct statfs sf;
	/* acquire */
	int p = openat(AT_FDCWD, dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	int s = openat(p, "L.holdfast", ODIR);
	if (p < 0 || s < 0)
		bare_die("open");
	fstat(s, &st);
	if (st.st_uid != geteuid())
		bare_die("uid");
	fstatfs(s, &sf);
	getrandom(rnd, 16, 0);
	getrandom(rnd, 8, 0);
	snprintf(name, sizeof name, "n-1796117716794-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (mkdirat(s, name, 0700) < 0)
		bare_die("mkdir");
	int l = openat(s, name, ODIR);
	flock(l, LOCK_SH | LOCK_NB);
	if (syscall(SYS_renameat2, s, name, p, "L", RENAME_NOREPLACE) < 0)
		bare_die("rename");
	int c = openat(s, "fence", O_RDWR | O_CREAT | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	flock(c, LOCK_EX | LOCK_NB);
	if (pread(c, buf, 127, 0) < 0 || pwrite(c, buf, 100, 0) < 0)
		bare_die("fence");
	flock(c, LOCK_UN);
	int t = openat(s, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (write(t, record, sizeof record) < 0)
		bare_die("write");
	if (linkat(t, "", l, "owner", AT_EMPTY_PATH) < 0)
		bare_die("link");
	close(t);
	fstat(s, &st);
	int r = openat(p, "L/owner", OREC);
	if (read(r, buf, sizeof buf) < 0)
		bare_die("read");
	close(r);
	flock(c, LOCK_EX | LOCK_NB);
	if (pread(c, buf, 127, 0) < 0 || pwrite(c, buf, 100, 0) < 0)
		bare_die("pread");
	flock(c, LOCK_UN);
	/* release: the holder's own (the directories and the counter stayed
	 * open), L identified by the inode its descriptor pins */
	struct stat at;
	fstat(l, &st);
	if (fstatat(p, "L", &at, AT_SYMLINK_NOFOLLOW) < 0 || at.st_ino != st.st_ino)
		bare_die("not ours");
	getrandom(rnd, 8, 0);
	snprintf(name, sizeof name, "c-1796009672989-aca5127502d53742ccac26ac54196783-%02x%02x%02x%02x%02x%02x%02x%02x",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (syscall(SYS_renameat2, p, "L", s, name, RENAME_NOREPLACE) < 0)
		bare_die("rename");
	if (fstatat(s, name, &at, AT_SYMLINK_NOFOLLOW) < 0 || at.st_ino != st.st_ino)
		bare_die("claim");
	snprintf(path, sizeof path, "%s/owner", name);
	unlinkat(s, path, 0);
	if (unlinkat(s, name, AT_REMOVEDIR) < 0)
		bare_die("rmdir");
	close(s);
	close(p);
	close(c);
	close(l); /* the holder's kernel lock, closed after its release */
}

#endif
