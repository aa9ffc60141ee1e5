/*
 * lockpath.c - why a directory lock's path was refused, in words.
 *
 * The library answers HF_EUNSAFE (or -EACCES) for every lock path it will
 * not touch, without saying which of several reasons applies; the reasons
 * call for different remedies, so the CLI looks again (lstat only: nothing
 * is opened, nothing changed) and names the one it finds:
 *
 *   (LP1) Something that is not a directory occupies PATH: a regular file
 *         (typically an flock(1) or dotlockfile lock left by an older
 *         script), a FIFO, a socket, a device - 73, cannot create the lock
 *         directory; a symbolic link - 77, holdfast never follows one.
 *   (LP2) PATH.holdfast (the state directory) or PATH itself is another
 *         user's: 77, naming that user and uid ("owned by user bob (uid
 *         1001), not you"). Writable by group or others, or not a
 *         directory: 77, saying which.
 *   (LP3) The parent directory cannot be written by us: 77, naming its
 *         owner and mode.
 *
 * Nothing found: the caller's own words stand. What the kernel says after
 * our look may differ (another process may change the path meanwhile): the
 * words are evidence, the refusal stands either way.
 */
#include "cli.h"
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "holdfast.h"
#include "sys.h"

/* The name /etc/passwd gives uid (no NSS: the CLI links statically), into
 * buf; false when it has none. */
static bool passwd_name(unsigned uid, char *buf, size_t n)
{
	char *all = NULL;
	size_t len = 0;
	if (hf_read_file_at(AT_FDCWD, "/etc/passwd", 0, 4 << 20, &all, &len, NULL) < 0)
		return false;
	bool found = false;
	for (char *line = all, *next; !found && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *name = line, *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c1 == name)
			continue;
		char *end;
		unsigned long v = strtoul(c2 + 1, &end, 10);
		if (end == c2 + 1 || *end != ':' || v != uid)
			continue;
		snprintf(buf, n, "%.*s", (int)(c1 - name), name);
		found = true;
	}
	free(all);
	return found;
}

const char *cli_user_words(unsigned uid, char *buf, size_t n)
{
	char name[256];
	if (passwd_name(uid, name, sizeof name))
		snprintf(buf, n, "user %s (uid %u)", CLI_SHOW(name), uid);
	else
		snprintf(buf, n, "uid %u", uid);
	return buf;
}

void cli_name_uid(const char *in, char *out, size_t n)
{
	/* every "uid N" starting a word */
	size_t o = 0;
	out[0] = '\0';
	for (const char *p = in; *p && o + 1 < n;) {
		bool bare = !strncmp(p, "uid ", 4) && p[4] >= '0' && p[4] <= '9' &&
			    (p == in || p[-1] == ' ' || p[-1] == '(');
		if (!bare) {
			out[o++] = *p++;
			out[o] = '\0';
			continue;
		}
		char *end, who[300];
		unsigned long uid = strtoul(p + 4, &end, 10);
		int w = snprintf(out + o, n - o, "%s", cli_user_words((unsigned)uid, who, sizeof who));
		o = w < 0 || (size_t)w >= n - o ? n - 1 : o + (size_t)w;
		p = end;
	}
}

static const char *kind_words(mode_t m)
{
	return S_ISREG(m)   ? "a regular file"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISLNK(m)  ? "a symbolic link"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
			     : "not a directory";
}

/* Can we make an entry in the directory st describes (write and search)? */
static bool writable(const struct stat *st)
{
	if (geteuid() == 0)
		return true;
	mode_t m = st->st_mode;
	if (st->st_uid == geteuid())
		return (m & 0300) == 0300;
	gid_t groups[256];
	int ng = getgroups(256, groups);
	bool in = st->st_gid == getegid();
	for (int i = 0; !in && i < ng; i++)
		in = groups[i] == st->st_gid;
	return in ? (m & 030) == 030 : (m & 03) == 03;
}

int cli_lock_refused(const char *verb, const char *path, int rc)
{
	if (rc != HF_EUNSAFE && rc != -EACCES && rc != -EPERM && rc != -ENOTDIR && rc != -ELOOP)
		return 0;
	struct stat st;
	char who[300], state[PATH_MAX + 16];
	/* LP1: what occupies the lock's own path */
	if (hf_sys_fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
		if (S_ISLNK(st.st_mode)) {
			char to[PATH_MAX] = "?";
			ssize_t l = hf_sys_readlinkat(AT_FDCWD, path, to, sizeof to - 1);
			to[l > 0 ? l : 1] = '\0';
			cli_err("%s %s: %s is a symbolic link (to %s), not a holdfast lock directory: "
				"holdfast never follows one at a lock path; remove it if no process "
				"uses it",
				verb, path, path, CLI_SHOW(to));
			return cli_fail(HF_EXIT_NOPERM, NULL, path, NULL);
		}
		cli_err("%s %s: %s is %s, not a holdfast lock directory%s; remove it if no process "
			"uses it",
			verb, path, path, kind_words(st.st_mode),
			S_ISREG(st.st_mode) ? " \xe2\x80\x94 perhaps an flock(1)/dotlockfile lock "
					      "from an older script"
					    : "");
		return cli_fail(HF_EXIT_CANTCREAT, NULL, path, NULL);
	}
	/* LP2: the state directory beside it, then the lock directory */
	snprintf(state, sizeof state, "%s.holdfast", path);
	for (int i = 0; i < 2; i++) {
		const char *p = i ? path : state;
		if (hf_sys_fstatat(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (st.st_uid != geteuid()) {
			cli_err("%s %s: %s is owned by %s, not you (%s); only that user (or root) "
				"may remove it",
				verb, path, p, cli_user_words(st.st_uid, who, sizeof who),
				cli_user_words(geteuid(), (char[300]){ 0 }, 300));
			return cli_fail(HF_EXIT_NOPERM, NULL, path, NULL);
		}
		if (!S_ISDIR(st.st_mode)) {
			cli_err("%s %s: %s is %s, not holdfast's state directory; remove it if no "
				"process uses it",
				verb, path, p, kind_words(st.st_mode));
			return cli_fail(HF_EXIT_NOPERM, NULL, path, NULL);
		}
		if (st.st_mode & 022) {
			cli_err("%s %s: %s is writable by group or others (mode %04o): refused, "
				"another user could forge its records",
				verb, path, p, (unsigned)(st.st_mode & 07777));
			return cli_fail(HF_EXIT_NOPERM, NULL, path, NULL);
		}
	}
	/* LP3: the parent directory */
	char dir[PATH_MAX], base[NAME_MAX + 1];
	if (hf_path_split(path, dir, sizeof dir, base, sizeof base) == 0 &&
	    hf_sys_fstatat(AT_FDCWD, dir, &st, 0) == 0 && !writable(&st)) {
		cli_err("%s %s: cannot create it: the directory %s is not writable by you (%s; it "
			"is owned by %s, mode %04o)",
			verb, path, dir, cli_user_words(geteuid(), (char[300]){ 0 }, 300),
			cli_user_words(st.st_uid, who, sizeof who), (unsigned)(st.st_mode & 07777));
		return cli_fail(HF_EXIT_NOPERM, NULL, path, NULL);
	}
	return 0;
}
