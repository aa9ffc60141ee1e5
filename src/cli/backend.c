/*
 * backend.c - where a lock lives, for every command that takes one: the
 * --backend option and its etcd options (one parser for lock, run and
 * edit), HOLDFAST_BACKEND and the other variables the library never reads
 * (it reads HOLDFAST_REGISTRY alone), and the hand-over of an etcd
 * invocation from the static CLI, which has no etcd client, to
 * holdfast-etcd (the same commands, linked with libcurl).
 *
 * Invariants
 * ----------
 *   (BK1) A command line's --backend wins over HOLDFAST_BACKEND; without
 *         either the lock is the file system's.
 *   (BK2) The password is read from a file only (--etcd-password-file or
 *         HOLDFAST_ETCD_PASSWORD_FILE), by the library; no option takes
 *         it, so it never shows in ps.
 *   (BK3) The hand-over execs holdfast-etcd with the argv main saw, before
 *         any command ran: nothing is done twice.
 */
#include "cli.h"
#include "sys.h"

#include "holdfast.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef HF_BINDIR
#define HF_BINDIR "/usr/local/bin"
#endif

static struct {
	const char *backend, *user, *pwfile, *ca;
	int64_t ttl_ms, timeout_ms;
} B;

static const char *env_or(const char *v, const char *name)
{
	const char *e = getenv(name);
	return v ? v : e && *e ? e : NULL;
}

int cli_backend_opt(int opt, const char *arg)
{
	switch (opt) {
	case CLI_OPT_BACKEND:
		B.backend = arg;
		break;
	case CLI_OPT_ETCD_USER:
		B.user = arg;
		break;
	case CLI_OPT_ETCD_PWFILE:
		B.pwfile = arg;
		break;
	case CLI_OPT_ETCD_CA:
		B.ca = arg;
		break;
	case CLI_OPT_TTL:
		if (cli_duration_arg("--ttl", arg, &B.ttl_ms))
			return HF_EXIT_USAGE;
		if (B.ttl_ms < 1000) {
			cli_err("--ttl %s: at least 1s (etcd grants whole seconds)", CLI_SHOW(arg));
			return HF_EXIT_USAGE;
		}
		break;
	case CLI_OPT_ETCD_TIMEOUT:
		if (cli_duration_arg("--etcd-timeout", arg, &B.timeout_ms))
			return HF_EXIT_USAGE;
		if (B.timeout_ms < 1 || B.timeout_ms > 3600LL * 1000) {
			cli_err("--etcd-timeout %s: between 1ms and 1h", CLI_SHOW(arg));
			return HF_EXIT_USAGE;
		}
		break;
	default:
		return 0;
	}
	return -1;
}

const char *cli_backend(void)
{
	const char *b = env_or(B.backend, "HOLDFAST_BACKEND"); /* BK1 */
	return b && strcmp(b, "file") ? b : NULL;
}

/* The options of one kind of handle, for backend_set. */
struct backend_setter {
	int (*set_str)(void *h, int opt, const char *value);
	int (*set)(void *h, int opt, int64_t value);
	bool ttl; /* the kind has a lease (lock, scope; a session has none) */
};

/* Give handle h the backend and the etcd options (BK2): 0, or the usage
 * exit with the message naming who (the lock's path, "scope NAME"). */
static int backend_set(void *h, const struct backend_setter *k, const char *who,
		       const char *path)
{
	const char *b = cli_backend();
	if (!b)
		return 0;
	int rc = k->set_str(h, HF_OPT_BACKEND, b);
	if (rc == 0)
		rc = k->set_str(h, HF_OPT_ETCD_USER, env_or(B.user, "HOLDFAST_ETCD_USER"));
	if (rc == 0)
		rc = k->set_str(h, HF_OPT_ETCD_PASSWORD_FILE,
				env_or(B.pwfile, "HOLDFAST_ETCD_PASSWORD_FILE")); /* BK2 */
	if (rc == 0)
		rc = k->set_str(h, HF_OPT_ETCD_CA_FILE, env_or(B.ca, "HOLDFAST_ETCD_CA_FILE"));
	if (rc == 0 && k->ttl && B.ttl_ms)
		rc = k->set(h, HF_OPT_TTL_MS, B.ttl_ms);
	if (rc == 0 && B.timeout_ms)
		rc = k->set(h, HF_OPT_TIMEOUT_MS, B.timeout_ms);
	if (rc == 0)
		return 0;
	if (rc == -EINVAL)
		cli_err("%s: backend %s: not 'file', etcd://HOST:PORT[,HOST:PORT...] or "
			"etcds://HOST:PORT[,...]",
			who, CLI_SHOW(b));
	else
		cli_err("%s: backend %s: %s", who, CLI_SHOW(b), hf_strerror(rc));
	return cli_fail(HF_EXIT_USAGE, "usage", path, NULL);
}

static int lock_str(void *h, int o, const char *v) { return hf_lock_set_str(h, o, v); }
static int lock_int(void *h, int o, int64_t v) { return hf_lock_set(h, o, v); }
static int session_str(void *h, int o, const char *v) { return hf_session_set_str(h, o, v); }
static int session_int(void *h, int o, int64_t v) { return hf_session_set(h, o, v); }
static int scope_str(void *h, int o, const char *v) { return hf_scope_set_str(h, o, v); }
static int scope_int(void *h, int o, int64_t v) { return hf_scope_set(h, o, v); }

int cli_backend_apply(hf_lock *l, const char *path)
{
	static const struct backend_setter k = { lock_str, lock_int, true };
	return backend_set(l, &k, CLI_SHOW(path), path);
}

int cli_backend_session(hf_session *s, const char *path)
{
	static const struct backend_setter k = { session_str, session_int, false };
	return backend_set(s, &k, CLI_SHOW(path), path);
}

int cli_backend_apply_scope(hf_scope *s, const char *name)
{
	static const struct backend_setter k = { scope_str, scope_int, true };
	char who[HF_POD_NAME_MAX + 16];
	snprintf(who, sizeof who, "scope %s", CLI_SHOW(name));
	return backend_set(s, &k, who, NULL);
}

const char *cli_registry_name(char *buf, size_t n)
{
	const char *b = cli_backend();
	if (b)
		snprintf(buf, n, "%s", b);
	else if (hf_registry_path(buf, n) < 0)
		snprintf(buf, n, "the registry");
	return buf;
}

const char *cli_backend_path(const char *path, char *buf, size_t n)
{
	char abs[PATH_MAX];
	cli_abs_path(path, abs, sizeof abs); /* ".", "//" gone; ".." next */
	size_t o = 0;
	for (const char *s = abs; *s && o + 1 < n;) {
		while (*s == '/')
			s++;
		size_t k = strcspn(s, "/");
		if (!k)
			break;
		if (k == 2 && s[0] == '.' && s[1] == '.') {
			while (o > 0 && buf[--o] != '/')
				;
		} else if (!(k == 1 && s[0] == '.') && o + 1 + k < n) {
			buf[o++] = '/';
			memcpy(buf + o, s, k);
			o += k;
		}
		s += k;
	}
	if (!o)
		buf[o++] = '/';
	buf[o] = '\0';
	return buf;
}

int cli_lock_status(const char *path, hf_rec **ret)
{
	if (!cli_backend())
		return hf_lock_status(path, ret);
	hf_lock *l;
	int rc = hf_lock_new(path, &l);
	if (rc < 0)
		return rc;
	if ((rc = cli_backend_apply(l, path)) != 0) {
		hf_lock_free(l);
		return rc; /* said, and recorded */
	}
	rc = hf_lock_query(l, ret);
	if (rc < 0)
		rc = cli_backend_failed("lock ", path, l, rc);
	hf_lock_free(l);
	return rc;
}

/* Does argv (up to "--") or HOLDFAST_BACKEND ask for etcd? */
static bool wants_etcd(int argc, char **argv)
{
	const char *b = NULL;
	if (argc < 2 || (strcmp(argv[1], "lock") && strcmp(argv[1], "run") && strcmp(argv[1], "edit") &&
			 strcmp(argv[1], "session") && strcmp(argv[1], "list") &&
			 strcmp(argv[1], "scope")))
		return false; /* the commands with a backend */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			b = argv[i + 1];
		else if (!strncmp(argv[i], "--backend=", 10))
			b = argv[i] + 10;
	}
	b = env_or(b, "HOLDFAST_BACKEND");
	return b && (!strncmp(b, "etcd://", 7) || !strncmp(b, "etcds://", 8));
}

int cli_backend_handover(int argc, char **argv)
{
	if (!wants_etcd(argc, argv))
		return 0;
	hf_lock *l;
	if (hf_lock_new("probe", &l) < 0)
		return 0;
	int rc = hf_lock_set_str(l, HF_OPT_BACKEND, "etcd://127.0.0.1:1");
	hf_lock_free(l);
	if (rc != -EPROTONOSUPPORT)
		return 0; /* this binary has the client */
	/* BK3: beside this binary (a build tree, a prefix), else the installed one */
	char self[PATH_MAX], next[PATH_MAX + 16];
	ssize_t n = hf_sys_readlinkat(AT_FDCWD, "/proc/self/exe", self, sizeof self - 1);
	const char *tried = HF_BINDIR "/holdfast-etcd";
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(next, sizeof next, "%s/holdfast-etcd", self);
			argv[0] = next;
			hf_sys_execvp(next, argv); /* returns only when it cannot */
		}
	}
	argv[0] = (char *)tried;
	rc = hf_sys_execvp(tried, argv);
	cli_err("etcd backend: this holdfast has no etcd client, and %s cannot be run (%s)", tried,
		hf_strerror(rc));
	return HF_EXIT_SOFTWARE;
}

int cli_backend_failed(const char *what, const char *path, const hf_lock *l, int rc)
{
	const char *why = hf_rec_str(hf_lock_holder(l), "reason");
	cli_err("%s%s: %s%s%s", what, CLI_SHOW(path), hf_strerror(rc), why ? ": " : "",
		why ? CLI_SHOW(why) : "");
	return cli_fail_rc(rc, path, hf_lock_holder(l));
}

/* A mode the backend refused (cli.h). */
int cli_mode_refused(const char *what, const char *path, int mode, const hf_rec *h)
{
	const char *why = hf_rec_str(h, "reason");
	cli_err("%s %s: the backend%s%s refuses %s holders: %s%s%s", what, path,
		cli_backend() ? " " : "", cli_backend() ? cli_backend() : "",
		cli_mode_name(mode), hf_strerror(-EOPNOTSUPP), why ? ": " : "",
		why ? CLI_SHOW(why) : "");
	return cli_fail_rc(-EOPNOTSUPP, path, NULL);
}
