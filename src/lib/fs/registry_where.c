/*
 * registry_where.c - where the scope registry of a path is by default
 * (RG12 in registry.c's header): $HOLDFAST_REGISTRY; else the enclosing git
 * work tree's common directory (the one `git rev-parse --git-common-dir`
 * names: every worktree of a repository shares it); else the root of the
 * mount that holds the path, when a registry placed there is one for
 * everyone who sees the path; else none (HF_EUNSAFE, the reason said).
 * Found from the path's own file system, never from the process's /tmp,
 * HOME or XDG_RUNTIME_DIR: two mount namespaces that share a tree share its
 * registry whatever else each has of its own.
 */
#include "registry_fs.h"
#include "text.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/name into buf: -ENAMETOOLONG when it does not fit. */
static int join(char *buf, size_t n, const char *dir, const char *name)
{
	int w = snprintf(buf, n, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name);
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

/* The first line of a small file at path, without its newline: its length,
 * or <0 (-ENOENT when there is none). */
static int first_line(const char *path, char *buf, size_t n)
{
	ssize_t len = hf_read_small_at(AT_FDCWD, path, O_NONBLOCK | O_NOCTTY, buf, n, NULL);
	if (len < 0)
		return (int)len;
	buf[len] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return (int)strlen(buf);
}

/* rel made absolute against base (when relative) and canonical. */
static int resolve(const char *base, const char *rel, char *buf, size_t n)
{
	char abs[PATH_MAX];
	int rc = rel[0] == '/' ? (snprintf(abs, sizeof abs, "%s", rel) < (int)sizeof abs
					  ? 0 : -ENAMETOOLONG)
			       : join(abs, sizeof abs, base, rel);
	return rc < 0 ? rc : hf_path_canonicalize(abs, buf, n);
}

/* Is dir a git work tree's top (it holds .git)? 1 and its common directory
 * in common; 0 not one; HF_EUNSAFE (why) a .git that names no git
 * directory; -errno. As git: .git is a directory holding HEAD, or a file
 * "gitdir: X" (X relative to dir), whose X/commondir (relative to X), when
 * present, names the common directory (a worktree's). */
static int git_common(const char *dir, char *common, size_t n, char *why, size_t whyn)
{
	char dotgit[PATH_MAX], head[PATH_MAX];
	struct stat st;
	int rc = join(dotgit, sizeof dotgit, dir, ".git");
	if (rc < 0)
		return rc;
	rc = hf_sys_fstatat(AT_FDCWD, dotgit, &st, 0); /* git follows a link too */
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	if (rc < 0)
		return rc;
	if (S_ISDIR(st.st_mode)) {
		if (join(head, sizeof head, dotgit, "HEAD") < 0 ||
		    hf_sys_fstatat(AT_FDCWD, head, &st, 0) < 0)
			return 0; /* not a repository: git looks further up too */
		return hf_path_canonicalize(dotgit, common, n) < 0 ? -ENAMETOOLONG : 1;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	char line[PATH_MAX + 16], gitdir[PATH_MAX], cd[PATH_MAX];
	int len = first_line(dotgit, line, sizeof line);
	if (len < 0 && len != -EFBIG)
		return len;
	if (len < 0 || strncmp(line, "gitdir: ", 8) || !line[8])
		return hf_why(why, whyn, HF_EUNSAFE, "%s is neither a git directory nor a 'gitdir: PATH' file",
			      dotgit);
	rc = resolve(dir, line + 8, gitdir, sizeof gitdir);
	if (rc < 0)
		return rc;
	if ((rc = join(cd, sizeof cd, gitdir, "commondir")) < 0)
		return rc;
	len = first_line(cd, line, sizeof line);
	if (len == -ENOENT || len == 0)
		rc = snprintf(common, n, "%s", gitdir) < (int)n ? 0 : -ENAMETOOLONG;
	else if (len < 0)
		rc = len;
	else
		rc = resolve(gitdir, line, common, n);
	if (rc < 0)
		return rc;
	if (hf_sys_fstatat(AT_FDCWD, common, &st, 0) < 0 || !S_ISDIR(st.st_mode))
		return hf_why(why, whyn, HF_EUNSAFE, "%s names the git directory %s, which is not a directory",
			      dotgit, common);
	return 1;
}

/* The parent of an absolute normal path, in place ("/" stays). */
static void up(char *p)
{
	char *slash = strrchr(p, '/');
	if (slash == p)
		p[1] = '\0';
	else if (slash)
		*slash = '\0';
}

/* RG12, the mount: the root of the mount holding canon, when a registry
 * there is everyone's who sees canon. */
static int mount_place(const char *canon, char *buf, size_t n, char *why, size_t whyn)
{
	struct hf_mounts m;
	int rc = hf_mounts_load(&m);
	const struct hf_mount *mt = rc == 0 ? hf_mount_of(&m, canon, strlen(canon)) : NULL;
	char point[PATH_MAX] = "";
	if (mt)
		snprintf(point, sizeof point, "%.*s", (int)mt->pointlen, mt->point);
	if (!mt)
		rc = hf_why(why, whyn, HF_EUNSAFE,
			    "%s is outside any git work tree and the mount table does not show "
			    "which mount holds it (a chroot)",
			    canon);
	else if (mt->rootlen != 1)
		rc = hf_why(why, whyn, HF_EUNSAFE,
			    "%s is outside any git work tree, on the mount %s, which shows only "
			    "%.*s of its file system (a bind mount): another mount namespace may "
			    "reach the same files through another mount, and a registry at this "
			    "mount's root would not be its",
			    canon, point, (int)mt->rootlen, mt->root);
	else if (!strcmp(point, "/"))
		rc = hf_why(why, whyn, HF_EUNSAFE,
			    "%s is outside any git work tree, on the root file system of this "
			    "mount namespace (a container has its own, and holdfast makes no "
			    "/.holdfast)",
			    canon);
	hf_mounts_free(&m);
	if (rc < 0)
		return rc;
	struct stat st;
	rc = hf_sys_fstatat(AT_FDCWD, point, &st, 0);
	if (rc < 0)
		return rc;
	assert(strcmp(point, "/") && "RG12"); /* a whole file system's root, not / */
	if (st.st_mode & S_IWOTH)
		return hf_why(why, whyn, HF_EUNSAFE,
			      "%s is outside any git work tree, on the mount %s, which everyone may "
			      "write to (a /tmp): a registry there could be another user's, or "
			      "private to a mount namespace with its own /tmp",
			      canon, point);
	return join(buf, n, point, ".holdfast/scope.lock");
}

int hf_scopereg_path_for(const char *path, char *buf, size_t n, char *why, size_t whyn)
{
	if (why && whyn)
		why[0] = '\0';
	if (!buf)
		return -EINVAL;
	const char *env = getenv("HOLDFAST_REGISTRY");
	if (env && *env) { /* the explicit override */
		int len = snprintf(buf, n, "%s", env);
		return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
	}
	char canon[PATH_MAX], dir[PATH_MAX], common[PATH_MAX];
	int rc = hf_path_canonicalize(path ? path : ".", canon, sizeof canon);
	if (rc < 0)
		return rc;
	/* the deepest directory of canon that exists */
	struct stat st;
	memcpy(dir, canon, strlen(canon) + 1);
	for (;;) {
		rc = hf_sys_fstatat(AT_FDCWD, dir, &st, 0);
		if (rc == 0 && S_ISDIR(st.st_mode))
			break;
		if (rc < 0 && rc != -ENOENT && rc != -ENOTDIR)
			return rc;
		if (!strcmp(dir, "/"))
			return rc < 0 ? rc : -ENOTDIR;
		up(dir);
	}
	/* RG12: the git work tree's common directory; as git, the walk up
	 * stops at a file system's boundary */
	dev_t dev = st.st_dev;
	for (;;) {
		rc = git_common(dir, common, sizeof common, why, whyn);
		if (rc < 0)
			return rc;
		if (rc > 0)
			return join(buf, n, common, "holdfast/scope.lock");
		if (!strcmp(dir, "/"))
			break;
		up(dir);
		if (hf_sys_fstatat(AT_FDCWD, dir, &st, 0) < 0 || st.st_dev != dev)
			break;
	}
	return mount_place(canon, buf, n, why, whyn);
}

int hf_scopereg_path(char *buf, size_t n)
{
	return hf_scopereg_path_for(".", buf, n, NULL, 0);
}

/* The public names of the two (holdfast.h). */
int hf_registry_path(char *buf, size_t n)
{
	return buf ? hf_scopereg_path(buf, n) : -EINVAL;
}

int hf_registry_path_for(const char *path, char *buf, size_t n)
{
	return path && buf ? hf_scopereg_path_for(path, buf, n, NULL, 0) : -EINVAL;
}
