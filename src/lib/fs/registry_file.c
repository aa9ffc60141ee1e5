/*
 * registry_file.c - the scope registry's files (where it is by default is
 * registry_where.c's): the verification of its directory and files (owner,
 * mode, type, no symbolic links), the registry's lock (flock(2) on <base>.flock, waited for without
 * ever blocking in the kernel), reading and writing the table, the live
 * files, and the sweep of what crashes left. The artifacts, the steps of a
 * change and the invariants kept here (RG1, RG2, RG3, RG8, RG9, RG10, RG11)
 * are in registry.c's header, which uses these functions in that order.
 */
#include "registry_fs.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int hf_regfile_say(struct hf_scopereg_holder *err, int rc, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->reason, sizeof err->reason, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#define unsafe(err, ...) hf_regfile_say(err, HF_EUNSAFE, __VA_ARGS__)

static const char *type_name(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISREG(m) ? "a regular file" : S_ISFIFO(m) ? "a FIFO"
	       : S_ISLNK(m) ? "a symbolic link" : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "of an unknown type";
}

/* RG8: ours, not writable by others, of the right type. */
static int verify_stat(const struct stat *st, bool dir, const char *what,
		       struct hf_scopereg_holder *err)
{
	if (st->st_uid != geteuid())
		return unsafe(err,
			      "%s is owned by uid %u, not you (uid %u): another user made it; "
			      "remove it (as that user or root) or set HOLDFAST_REGISTRY",
			      what, (unsigned)st->st_uid, (unsigned)geteuid());
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return unsafe(err, "%s is %s, not %s", what, type_name(st->st_mode),
			      dir ? "a directory" : "a regular file");
	if (st->st_mode & 022)
		return unsafe(err, "%s is writable by group or others (mode %04o)", what,
			      (unsigned)(st->st_mode & 07777));
	return 0;
}

static void gone_close(struct hf_regfile *r)
{
	for (size_t i = 0; i < r->ngone; i++)
		if (r->gone[i].fd >= 0)
			hf_sys_close(r->gone[i].fd);
	free(r->gone);
	r->gone = NULL;
	r->ngone = r->capgone = 0;
}

void hf_regfile_close(struct hf_regfile *r)
{
	gone_close(r);
	if (r->lockfd >= 0)
		hf_sys_close(r->lockfd); /* unlocks */
	if (r->dirfd >= 0)
		hf_sys_close(r->dirfd);
	r->lockfd = r->dirfd = -1;
}

/* /proc/<pid>/stat's state letter ('T' stopped, 't' traced), or 0. */
static char pid_state(long pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	int fd = hf_sys_openat(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return 0;
	ssize_t n = hf_sys_read(fd, buf, sizeof buf - 1);
	hf_sys_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Who holds a flock on st's file, from /proc/locks: the pid (in our pid
 * namespace; 0 when the holder is not visible here), or -1 when none is
 * listed. */
static long flock_holder(const struct stat *st)
{
	char *buf;
	size_t len;
	if (hf_read_file_at(AT_FDCWD, "/proc/locks", O_NONBLOCK | O_NOCTTY, 16u << 20, &buf, &len,
			    NULL) < 0)
		return -1;
	long who = -1;
	for (char *line = buf; line && *line && who < 0;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		/* "1: FLOCK  ADVISORY  WRITE 4242 00:2a:1234 0 EOF"; waiters
		 * are listed with "->" and hold nothing */
		char type[16], adv[16], mode[16];
		long pid;
		unsigned maj, min;
		unsigned long long ino;
		if (!strstr(line, "->") &&
		    sscanf(line, "%*[^:]: %15s %15s %15s %ld %x:%x:%llu", type, adv, mode, &pid, &maj,
			   &min, &ino) == 7 &&
		    !strcmp(type, "FLOCK") && maj == major(st->st_dev) && min == minor(st->st_dev) &&
		    ino == (unsigned long long)st->st_ino)
			who = pid;
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	return who;
}

/* Step 2's wait (RG11): flock(LOCK_EX) without ever blocking in the kernel,
 * retried with a growing sleep. The bound: r->lock_wait_ms when the caller
 * set one; else HF_SCOPE_LOCK_WAIT_MS while one holder keeps the lock (a
 * holder that changed since the last look, or none at that instant, means
 * progress: another window, at most 12).
 * HF_ETIMEDOUT naming the holder; HF_ECANCELED when r->cancel_fd (if any)
 * became readable. */
static int lock_wait(struct hf_regfile *r, int fd, const struct stat *st,
		     struct hf_scopereg_holder *err)
{
	int rc = hf_sys_flock(fd, LOCK_EX | LOCK_NB);
	if (rc != -EWOULDBLOCK)
		return rc;
	bool strict = r->lock_wait_ms > 0;
	int64_t window = strict ? r->lock_wait_ms : HF_SCOPE_LOCK_WAIT_MS;
	int64_t start = hf_sys_mono_ns(), deadline = start + window * 1000000LL;
	long holder = flock_holder(st);
	unsigned tries = 0;
	for (int windows = 1;;) {
		int64_t now = hf_sys_mono_ns();
		if (now >= deadline) {
			long h = flock_holder(st);
			/* progress: the lock changed hands, or is free this instant
			 * (released, the next one not in yet: many lockers poll) */
			if (!strict && h != 0 && (h < 0 || h != holder) && windows < 12) {
				holder = h;
				deadline = now + window * 1000000LL;
				windows++;
				continue;
			}
			holder = h;
			break;
		}
		int64_t ms = (int64_t)(tries + 1) * (tries + 1);
		tries++;
		if (ms > 20)
			ms = 20;
		int64_t left = (deadline - now + 999999) / 1000000;
		ms = ms < left ? ms : left;
		if (r->cancel_fd >= 0) {
			/* the caller's cancel descriptor ends the wait (RG11) */
			struct pollfd p = { .fd = r->cancel_fd, .events = POLLIN };
			rc = hf_sys_poll(&p, 1, (int)ms);
			if (rc > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)))
				return hf_regfile_say(err, HF_ECANCELED,
						      "canceled while waiting for its lock %s/%s; "
						      "nothing was changed",
						      r->dir, r->lockname);
			rc = rc < 0 && rc != -EINTR ? rc : 0;
		} else {
			rc = hf_sys_sleep_ms(ms);
		}
		if (rc < 0)
			return rc;
		rc = hf_sys_flock(fd, LOCK_EX | LOCK_NB);
		if (rc != -EWOULDBLOCK)
			return rc;
	}
	double waited = (double)(hf_sys_mono_ns() - start) / 1e9;
	if (err)
		err->pid = holder > 0 ? holder : 0;
	if (holder > 0) {
		char comm[HF_COMM_MAX + 1] = "";
		hf_pid_comm((pid_t)holder, comm, sizeof comm);
		char state = pid_state(holder);
		return hf_regfile_say(err, HF_ETIMEDOUT,
			   "its lock %s/%s stayed held for %.1f s by pid %ld (%s%s); nothing was "
			   "changed",
			   r->dir, r->lockname, waited, holder, comm[0] ? comm : "?",
			   state == 'T' || state == 't' ? ", stopped" : "");
	}
	return hf_regfile_say(err, HF_ETIMEDOUT,
		   "its lock %s/%s stayed held for %.1f s by %s; nothing was changed", r->dir,
		   r->lockname, waited,
		   holder == 0 ? "a process of another pid namespace" : "an unknown process");
}

/* Name the owner of something at dir that could not be opened (RG8). */
static int refuse_dir(const char *dir, int rc, struct hf_scopereg_holder *err)
{
	struct stat st;
	if (hf_sys_fstatat(AT_FDCWD, dir, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return rc;
	char what[PATH_MAX + 32];
	snprintf(what, sizeof what, "the registry directory %s", dir);
	if (st.st_uid != geteuid() || !S_ISDIR(st.st_mode))
		return verify_stat(&st, true, what, err);
	return rc;
}

/* Steps 1 (and 2 when lock): 0, or -ENOENT when !create and there is no
 * directory yet. */
int hf_regfile_open(const char *registry, bool create, bool lock, struct hf_regfile *r,
		    struct hf_scopereg_holder *err)
{
	char path[PATH_MAX];
	r->dirfd = r->lockfd = -1;
	r->gone = NULL;
	r->ngone = r->capgone = 0;
	int rc = registry ? (snprintf(path, sizeof path, "%s", registry) < (int)sizeof path ? 0
										  : -ENAMETOOLONG)
			  : hf_scopereg_path_for(".", path, sizeof path, err ? err->reason : NULL,
						 err ? sizeof err->reason : 0); /* RG12 */
	if (rc < 0)
		return rc;
	if (err)
		snprintf(err->registry, sizeof err->registry, "%s", path);
	size_t len = strlen(path);
	char base[PATH_MAX];
	if (len == 0 || path[len - 1] == '/')
		return -EINVAL;
	rc = hf_path_split(path, r->dir, sizeof r->dir, base, sizeof base);
	if (rc < 0)
		return rc;
	/* "<base>.live-<32 hex>" is the longest name made from it */
	size_t blen = strlen(base);
	if (blen + 40 > NAME_MAX)
		return -EINVAL;
	memcpy(r->base, base, blen + 1);
	memcpy(r->lockname, base, blen);
	memcpy(r->lockname + blen, ".flock", 7);
	const char *dir = r->dir;

	bool made = false;
	int fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd == -ENOENT && create) {
		rc = hf_sys_mkdirat(AT_FDCWD, dir, 0700);
		if (rc < 0 && rc != -EEXIST)
			return rc;
		made = rc == 0;
		fd = hf_sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK, 0);
	}
	if (fd == -ELOOP || fd == -ENOTDIR || fd == -EACCES || fd == -EPERM) {
		rc = refuse_dir(dir, fd, err);
		if (rc == HF_EUNSAFE || fd == -EACCES || fd == -EPERM)
			return rc;
		return unsafe(err, "the registry directory %s is a symbolic link or not a directory",
			      dir);
	}
	if (fd < 0)
		return fd;
	r->dirfd = fd;
	struct stat st;
	rc = hf_sys_fstat(fd, &st);
	if (rc == 0 && made && (st.st_mode & 07777) != 0700)
		rc = hf_sys_fchmod(fd, 0700); /* RG8: whatever the umask */
	if (rc == 0 && !made) {
		char what[PATH_MAX + 32];
		snprintf(what, sizeof what, "the registry directory %s", dir);
		rc = verify_stat(&st, true, what, err);
	}
	if (rc < 0 || !lock) {
		if (rc < 0)
			hf_regfile_close(r);
		return rc;
	}

	for (int attempt = 0; attempt < 100; attempt++) {
		fd = hf_sys_openat(r->dirfd, r->lockname,
				   O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
		if (fd == -ELOOP)
			rc = unsafe(err, "the lock file %s is a symbolic link", r->lockname);
		else if (fd == -EISDIR)
			rc = unsafe(err, "the lock file %s is a directory, not a regular file",
				    r->lockname);
		else if (fd == -EACCES || fd == -EPERM) {
			struct stat lst;
			rc = hf_sys_fstatat(r->dirfd, r->lockname, &lst, AT_SYMLINK_NOFOLLOW) == 0
				     ? verify_stat(&lst, false, "the lock file", err)
				     : 0;
			if (rc == 0)
				rc = unsafe(err, "the lock file %s is not ours to open", r->lockname);
		} else
			rc = fd < 0 ? fd : hf_sys_fstat(fd, &st);
		if (rc == 0)
			rc = verify_stat(&st, false, "the lock file", err); /* RG11: before flock */
		if (rc == 0 && (st.st_mode & 07777) != 0600)
			rc = hf_sys_fchmod(fd, 0600); /* RG8 */
		if (rc == 0)
			rc = lock_wait(r, fd, &st, err); /* RG1, RG11 */
		if (rc < 0) {
			if (fd >= 0)
				hf_sys_close(fd);
			hf_regfile_close(r);
			return rc;
		}
		hf_sys_point(HF_PT_SCOPE_OPEN_LOCKED);
		struct stat now;
		rc = hf_sys_fstatat(r->dirfd, r->lockname, &now, AT_SYMLINK_NOFOLLOW);
		if (rc == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) {
			r->lockfd = fd;
			return 0;
		}
		hf_sys_close(fd); /* RG1: the name now holds another file: lock that */
	}
	hf_regfile_close(r);
	return -EAGAIN;
}

struct scan_ctx {
	struct hf_regfile *r;
	const struct hf_scopereg_table *t;
	const struct hf_regindex *tokens;
};

/* Step 3's sweep, under the lock: crash temporaries, and live files that no
 * entry names and whose flock is free (RG9). */
static int sweep_file(int dirfd, const char *name, void *arg)
{
	struct scan_ctx *c = arg;
	const char *rest = name + strlen(c->r->base);
	if (!strncmp(rest, ".tmp-", 5)) {
		hf_sys_unlinkat(dirfd, name, 0);
		return 0;
	}
	size_t il = strlen(HF_SCOPE_LIVE_INFIX);
	if (strncmp(rest, HF_SCOPE_LIVE_INFIX, il) || !hf_regtable_token_ok(rest + il) ||
	    hf_regindex_find(c->tokens, c->t, HF_REGKEY_TOKEN, rest + il) >= 0)
		return 0;
	int fd = hf_regfile_live_open(dirfd, name);
	if (fd < 0)
		return 0; /* not a file of ours: not ours to remove */
	if (hf_kernel_lock_probe(fd) == 0)
		hf_sys_unlinkat(dirfd, name, 0); /* no one holds it, no entry names it */
	hf_sys_close(fd);
	return 0;
}

/* Step 3: an empty table when there is no file yet. */
int hf_regfile_load(struct hf_regfile *r, bool locked, struct hf_scopereg_table *t,
		    struct hf_scopereg_holder *err)
{
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	memset(t, 0, sizeof *t);
	/* RG11: never blocks (a FIFO opens at once), checked before any read */
	int fd = hf_sys_openat(r->dirfd, r->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd == -ENOENT)
		goto sweep;
	if (fd == -ELOOP)
		return unsafe(err, "the registry %s is a symbolic link", r->base);
	if (fd == -EACCES || fd == -EPERM) {
		int rc = hf_sys_fstatat(r->dirfd, r->base, &st, AT_SYMLINK_NOFOLLOW);
		if (rc == 0 && (rc = verify_stat(&st, false, "the registry file", err)) < 0)
			return rc;
		return fd;
	}
	if (fd < 0)
		return fd;
	int rc = hf_sys_fstat(fd, &st);
	if (rc == 0)
		rc = verify_stat(&st, false, "the registry file", err);
	if (rc == 0)
		rc = hf_read_fd(fd, &st, HF_REG_MAX_BYTES, &buf, &len);
	hf_sys_close(fd);
	if (rc == -EFBIG) {
		if (err)
			snprintf(err->reason, sizeof err->reason, "larger than %u MiB",
				 HF_REG_MAX_BYTES >> 20);
		return HF_EUNREADABLE;
	}
	if (rc < 0)
		return rc;
	char reason[sizeof err->reason];
	rc = hf_regtable_parse(buf, len, t, reason, sizeof reason); /* RG3 */
	if (rc == HF_EUNREADABLE && err)
		snprintf(err->reason, sizeof err->reason, "%s", reason);
	free(buf);
	if (rc < 0)
		return rc;
sweep:
	if (locked) {
		struct hf_regindex tokens = { 0 };
		if (hf_regindex_build(&tokens, t, HF_REGKEY_TOKEN, NULL) == 0) {
			char prefix[NAME_MAX + 2];
			snprintf(prefix, sizeof prefix, "%s.", r->base);
			struct scan_ctx c = { .r = r, .t = t, .tokens = &tokens };
			hf_dir_each(r->dirfd, prefix, sweep_file, &c);
		}
		hf_regindex_free(&tokens);
	}
	return 0;
}

/* Step 6 (RG2, RG10). */
int hf_regfile_store(struct hf_regfile *r, const struct hf_scopereg_table *t,
		     struct hf_scopereg_holder *err)
{
	assert(r->lockfd >= 0 && "RG1"); /* a change is written only under the lock */
	if (t->generation > HF_REG_GEN_MAX)
		return hf_regfile_say(err, -EOVERFLOW,
			   "its generation would pass 2^63-1, more than any reader accepts; nothing "
			   "was changed (move the registry aside to start a new one)");
	char *buf;
	size_t len;
	int rc = hf_regtable_format(t, &buf, &len);
	if (rc < 0)
		return rc;
	if (len > HF_REG_MAX_BYTES) {
		free(buf);
		return hf_regfile_say(err, -EFBIG,
			   "the table would be larger than %u MiB, more than any reader accepts; "
			   "nothing was changed",
			   HF_REG_MAX_BYTES >> 20);
	}
	hf_sys_point(HF_PT_SCOPE_STORE_FORMATTED);
	rc = hf_replace_file_at(r->dirfd, r->base, buf, len, 0600, false);
	free(buf);
	return rc;
}

/* After step 6: remove the live files of the entries the stored table no
 * longer names (stored), then close the judges' probes (RG9). */
void hf_regfile_finish(struct hf_regfile *r, const struct hf_scopereg_table *t, bool stored)
{
	struct hf_regindex keep = { 0 };
	if (stored && r->ngone && hf_regindex_build(&keep, t, HF_REGKEY_TOKEN, NULL) == 0) {
		for (size_t i = 0; i < r->ngone; i++) {
			const char *token = r->gone[i].token;
			if (!token || hf_regindex_find(&keep, t, HF_REGKEY_TOKEN, token) >= 0)
				continue;
			char live[NAME_MAX + 1];
			hf_regfile_live_name(r->base, token, live);
			hf_sys_unlinkat(r->dirfd, live, 0);
		}
		hf_sys_point(HF_PT_SCOPE_LIVE_REMOVED);
	}
	hf_regindex_free(&keep);
	gone_close(r);
}



/* buf: NAME_MAX + 1 bytes; base is at most NAME_MAX - 40 (hf_regfile_open). */
void hf_regfile_live_name(const char *base, const char *token, char *buf)
{
	size_t bl = strnlen(base, NAME_MAX - 40), il = strlen(HF_SCOPE_LIVE_INFIX);
	size_t tl = strnlen(token, HF_REG_TOKEN_HEX);
	memcpy(buf, base, bl);
	memcpy(buf + bl, HF_SCOPE_LIVE_INFIX, il);
	memcpy(buf + bl + il, token, tl);
	buf[bl + il + tl] = '\0';
}

/* Open an existing live file for a probe: a regular file of ours, opened
 * without blocking (RG11). The fd, or <0. */
int hf_regfile_live_open(int dirfd, const char *name)
{
	struct stat st, fst;
	int rc = hf_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc < 0)
		return rc;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return HF_EUNSAFE;
	int fd = hf_sys_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0)
		return fd;
	rc = hf_sys_fstat(fd, &fst);
	if (rc < 0 || !S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		hf_sys_close(fd);
		return rc < 0 ? rc : HF_EUNSAFE;
	}
	return fd;
}


void hf_regfile_gone(struct hf_regfile *r, const char *token, int fd)
{
	if (r->ngone == r->capgone) {
		size_t cap = r->capgone ? 2 * r->capgone : 8;
		struct hf_reg_gone *g = realloc(r->gone, cap * sizeof *g);
		if (!g) {
			/* not listed: the orphan sweep of a later change removes it */
			if (fd >= 0)
				hf_sys_close(fd);
			return;
		}
		r->gone = g;
		r->capgone = cap;
	}
	r->gone[r->ngone++] = (struct hf_reg_gone){ .token = token, .fd = fd };
}


/* Step 5 of a registration: the allocation's live file, created new (never
 * an existing one), 0600, holding LOCK_SH (RG9, RG11). The fd, token set. */
int hf_regfile_live_create(struct hf_regfile *r, char token[HF_REG_TOKEN_HEX + 1])
{
	int fd = -EEXIST;
	char live[NAME_MAX + 1];
	for (int attempt = 0; attempt < 8 && fd == -EEXIST; attempt++) {
		int rc = hf_random_hex(token, HF_REG_TOKEN_HEX / 2);
		if (rc < 0)
			return rc;
		hf_regfile_live_name(r->base, token, live);
		fd = hf_sys_openat(r->dirfd, live,
				   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
				   0600);
	}
	if (fd < 0)
		return fd;
	struct stat st;
	int rc = hf_sys_fstat(fd, &st);
	if (rc == 0 && (st.st_mode & 07777) != 0600)
		rc = hf_sys_fchmod(fd, 0600); /* RG8: whatever the umask */
	if (rc == 0)
		rc = hf_sys_flock(fd, LOCK_SH | LOCK_NB); /* new: no one else has it */
	if (rc < 0) {
		hf_sys_unlinkat(r->dirfd, live, 0);
		hf_sys_close(fd);
		return rc;
	}
	hf_sys_point(HF_PT_SCOPE_LIVE_CREATED);
	return fd;
}
