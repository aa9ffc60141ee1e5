/*
 * flockrec.c - the kernel's locks on a file (/proc/locks) and the record
 * of `holdfast flock` beside it (the exclusive holder's, and each shared
 * holder's in FILE.holdfast-flock.d), judged by src/cli/cmd_flock.c's FK3:
 * a record counts only while the flock(2) lock it describes (exclusive, or
 * shared for a "mode":"shared" record) is held by its locker.
 */
#include "flockrec.h"

#include "file.h"
#include "proc.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

int hf_kernel_locks_on(dev_t dev, ino_t ino, struct hf_kernel_lock *out, int n)
{
	int fd = hf_sys_openat(AT_FDCWD, "/proc/locks", O_RDONLY, 0);
	if (fd < 0)
		return fd;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap + 1);
	if (!buf) {
		hf_sys_close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len == cap) {
			char *b = realloc(buf, cap * 2 + 1);
			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		ssize_t r = hf_sys_read(fd, buf + len, cap - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	hf_sys_close(fd);
	buf[len] = '\0';
	int count = 0;
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strstr(line, "->"))
			continue; /* a waiter */
		struct hf_kernel_lock k = { 0 };
		char adv[16], mode[16];
		unsigned maj, mnr;
		unsigned long long in;
		if (sscanf(line, "%*d: %11s %15s %15s %ld %x:%x:%llu %llu %23s", k.kind, adv, mode,
			   &k.pid, &maj, &mnr, &in, &k.start, k.end) != 9)
			continue;
		if (makedev(maj, mnr) != dev || in != (unsigned long long)ino)
			continue;
		k.write = !strcmp(mode, "WRITE");
		if (count < n)
			out[count] = k;
		count++;
	}
	free(buf);
	return count;
}

const char *hf_kernel_lock_api(const struct hf_kernel_lock *k)
{
	return !strcmp(k->kind, "FLOCK") ? "flock(2)" : !strcmp(k->kind, "OFDLCK") ? "fcntl OFD"
										    : "fcntl POSIX";
}

json_t *hf_flockrec_read(const char *path)
{
	int fd = hf_sys_openat(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	char buf[16384];
	ssize_t r = hf_sys_read(fd, buf, sizeof buf - 1);
	hf_sys_close(fd);
	if (r <= 0)
		return NULL;
	buf[r] = '\0';
	json_t *o = json_loads(buf, 0, NULL);
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

int64_t hf_flockrec_int(const json_t *r, const char *k)
{
	const json_t *v = json_object_get(r, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* Does r say it is a shared holder's record? */
static bool rec_shared(const json_t *r)
{
	const json_t *m = json_object_get(r, "mode");
	return json_is_string(m) && !strcmp(json_string_value(m), "shared");
}

bool hf_flockrec_counts(const json_t *r, const struct hf_kernel_lock *k, const struct stat *st)
{
	return r && !strcmp(k->kind, "FLOCK") && k->write == !rec_shared(r) &&
	       k->pid == hf_flockrec_int(r, "locker") &&
	       hf_flockrec_int(r, "dev") == (int64_t)st->st_dev &&
	       hf_flockrec_int(r, "ino") == (int64_t)st->st_ino; /* FK3 */
}

struct shared_scan {
	int dirfd;
	json_t *recs;
	bool nomem;
};

static bool ends_json(const char *name)
{
	size_t n = strlen(name);
	return n > 5 && !strcmp(name + n - 5, ".json");
}

static int shared_cb(int dirfd, const char *name, void *ctx)
{
	struct shared_scan *sc = ctx;
	if (!ends_json(name))
		return 0;
	if (json_array_size(sc->recs) >= HF_FLOCKREC_SHARED_MAX)
		return 1;
	int fd = hf_sys_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return 0; /* gone meanwhile (its holder ended), a link: no record */
	struct stat st;
	char buf[16384];
	ssize_t r = hf_sys_fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
			    ? hf_sys_read(fd, buf, sizeof buf - 1)
			    : -1;
	hf_sys_close(fd);
	if (r <= 0)
		return 0;
	buf[r] = '\0';
	json_t *o = json_loads(buf, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return 0;
	}
	if (json_object_set_new(o, "file", json_string(name)) < 0 ||
	    json_array_append_new(sc->recs, o) < 0) {
		sc->nomem = true;
		return -ENOMEM;
	}
	return 0;
}

json_t *hf_flockrec_shared_read(const char *dirpath)
{
	json_t *recs = json_array();
	if (!recs)
		return NULL;
	int dfd = hf_sys_openat(AT_FDCWD, dirpath,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (dfd < 0)
		return recs;
	struct shared_scan sc = { .dirfd = dfd, .recs = recs };
	hf_dir_each(dfd, "", shared_cb, &sc);
	hf_sys_close(dfd);
	if (sc.nomem) {
		json_decref(recs);
		return NULL;
	}
	return recs;
}

/* A holder named by record r (FK3 holds for it). */
static json_t *holder_from_record(const json_t *r, const struct hf_kernel_lock *k)
{
	json_t *h = json_object();
	if (!h)
		return NULL;
	json_object_set_new(h, "mode", json_string(k->write ? "exclusive" : "shared"));
	json_object_set_new(h, "api", json_string(hf_kernel_lock_api(k)));
	json_object_set_new(h, "record", json_true());
	static const char *const keys[] = { "pid", "command", "host", "taken_ms", "fence" };
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		json_t *v = json_object_get(r, keys[i]);
		if (v && !json_is_null(v))
			json_object_set(h, keys[i], v);
	}
	return h;
}

/* A holder named by /proc/locks alone. */
static json_t *holder_from_kernel(const struct hf_kernel_lock *k)
{
	json_t *h = json_object();
	if (!h)
		return NULL;
	json_object_set_new(h, "mode", json_string(k->write ? "exclusive" : "shared"));
	json_object_set_new(h, "api", json_string(hf_kernel_lock_api(k)));
	json_object_set_new(h, "record", json_false());
	if (k->pid > 0) {
		char comm[HF_COMM_MAX + 1];
		json_object_set_new(h, "pid", json_integer(k->pid));
		if (hf_pid_comm((pid_t)k->pid, comm, sizeof comm) == 0)
			json_object_set_new(h, "command", json_string(comm));
	}
	if (strcmp(k->kind, "FLOCK")) {
		char range[64];
		snprintf(range, sizeof range, "%llu-%s", k->start, k->end);
		json_object_set_new(h, "range", json_string(range));
	}
	return h;
}

#define HOLDERS_MAX 256

json_t *hf_flock_holders(const char *recpath, const struct stat *st)
{
	json_t *ex = NULL, *sh = NULL, *out = NULL;
	struct hf_kernel_lock *k = NULL;
	/* FK9: the records first, then the kernel's locks: a record read is
	 * judged by locks listed after it was written */
	if (recpath) {
		char d[4096 + 32];
		ex = hf_flockrec_read(recpath);
		if ((size_t)snprintf(d, sizeof d, "%s.d", recpath) < sizeof d) {
			sh = hf_flockrec_shared_read(d);
			if (!sh)
				goto done;
		}
	}
	k = calloc(HOLDERS_MAX, sizeof *k);
	out = json_array();
	if (!k || !out)
		goto fail;
	int nk = hf_kernel_locks_on(st->st_dev, st->st_ino, k, HOLDERS_MAX);
	if (nk > HOLDERS_MAX)
		nk = HOLDERS_MAX;
	size_t nsh = json_array_size(sh);
	bool used_ex = false;
	bool *used = nsh ? calloc(nsh, sizeof *used) : NULL;
	if (nsh && !used)
		goto fail;
	for (int i = 0; i < nk; i++) {
		const json_t *r = NULL;
		if (!used_ex && hf_flockrec_counts(ex, &k[i], st)) { /* FK3 */
			r = ex;
			used_ex = true;
		}
		for (size_t j = 0; !r && j < nsh; j++) {
			if (!used[j] && hf_flockrec_counts(json_array_get(sh, j), &k[i], st)) {
				r = json_array_get(sh, j); /* FK3, FK8 */
				used[j] = true;
			}
		}
		json_t *h = r ? holder_from_record(r, &k[i]) : holder_from_kernel(&k[i]);
		if (!h || json_array_append_new(out, h) < 0) {
			free(used);
			goto fail;
		}
	}
	free(used);
	goto done;
fail:
	json_decref(out);
	out = NULL;
done:
	free(k);
	json_decref(ex);
	json_decref(sh);
	return out;
}
