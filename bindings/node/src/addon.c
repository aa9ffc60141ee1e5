/*
 * addon.c - the native half of the Node binding: thin N-API wrappers over
 * the public API of libholdfast (include/holdfast.h only). index.js builds
 * the classes, the options and the errors on top of it.
 *
 * Conventions
 *   - A handle (hf_lock, hf_session, hf_scope, hf_edit, hf_registry) lives in
 *     a struct box wrapped in a napi_external; the external's finalizer frees
 *     it (hf_*_free releases what it still holds, as the header says).
 *   - Functions return the library's int (0 or a count, or a negative code);
 *     index.js turns codes into Error objects, reading the holder record
 *     (hf_rec_json, as one JSON string) right after the failed call.
 *   - Records are handed over as JSON strings (hf_rec_json); index.js parses.
 *   - Waits (acquire, take, register) and edit commits also run on libuv's
 *     pool (napi_async_work) so that the event loop keeps running. Such a
 *     job gets its own pipe whose read end is the handle's HF_OPT_CANCEL_FD
 *     for the job's duration; cancel() writes a byte to the other end, and
 *     the library ends the wait with HF_ECANCELED.
 *
 * Invariants
 *   (NB1) A box is used by one thread at a time: while a job runs on the
 *         pool, box->busy is set and every call on the box from JS answers
 *         -EBUSY without touching the handle (the header: a handle is not
 *         shared between threads without a lock of the caller's).
 *   (NB2) A busy box is never freed: its finalizer (GC or environment
 *         teardown) only marks it, and the job's completion frees it. At
 *         teardown a running job's handle is leaked instead (the process
 *         is ending; its kernel locks go with it).
 *   (NB4) A lock with open edits is not freed (an edit uses its lock):
 *         free() answers -EBUSY, a finalizer orphans it, and the last
 *         edit's free frees an orphaned lock. A commit job marks the lock
 *         busy too (NB1).
 *   (NB3) A job's cancel descriptor is open from before the job is queued
 *         until after HF_OPT_CANCEL_FD is reset to -1 in its completion.
 */
#define NAPI_VERSION 8
#define _GNU_SOURCE
#include <node_api.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "holdfast.h"

enum kind { K_LOCK = 1, K_SESSION, K_SCOPE, K_EDIT, K_REGISTRY };

struct box {
	enum kind kind;
	void *h;
	bool busy;       /* NB1 */
	bool orphaned;   /* NB2: finalized while busy */
	napi_ref parent; /* an edit keeps its lock's external alive */
	struct box *parent_box; /* an edit's lock */
	int children;           /* a lock's open edits (NB4) */
};

/* Frees a library handle of kind (hf_*_free releases what it holds). */
static void handle_free(enum kind kind, void *h)
{
	switch (kind) {
	case K_LOCK: hf_lock_free(h); break;
	case K_SESSION: hf_session_free(h); break;
	case K_SCOPE: hf_scope_free(h); break;
	case K_EDIT: hf_edit_free(h); break;
	case K_REGISTRY: hf_registry_free(h); break;
	}
}

static void box_free_handle(struct box *b)
{
	if (b->kind == K_EDIT && b->h && b->parent_box) {
		struct box *p = b->parent_box;
		hf_edit_free(b->h);
		b->h = NULL;
		b->parent_box = NULL;
		if (--p->children == 0 && p->orphaned && !p->busy) { /* NB4 */
			box_free_handle(p);
			free(p);
		}
		return;
	}
	handle_free(b->kind, b->h);
	b->h = NULL;
}

static void box_finalize(napi_env env, void *data, void *hint)
{
	(void)hint;
	struct box *b = data;
	if (b->busy || b->children > 0) { /* NB2, NB4 */
		b->orphaned = true;
		return;
	}
	if (b->parent) {
		napi_delete_reference(env, b->parent);
		b->parent = NULL;
	}
	box_free_handle(b);
	free(b);
}

/* ---- small helpers ------------------------------------------------------ */

#define CHECK(call)                                                                  \
	do {                                                                         \
		if ((call) != napi_ok) {                                             \
			napi_throw_error(env, "EINTERNAL", "holdfast addon: " #call); \
			return NULL;                                                 \
		}                                                                    \
	} while (0)

#define ARGS(n)                                                \
	size_t argc = (n);                                     \
	napi_value argv[(n) > 0 ? (n) : 1];                    \
	CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL))

static napi_value num(napi_env env, double v)
{
	napi_value r;
	napi_create_double(env, v, &r);
	return r;
}

static napi_value str_or_null(napi_env env, const char *s)
{
	napi_value r;
	if (s)
		napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &r);
	else
		napi_get_null(env, &r);
	return r;
}

static napi_value u64(napi_env env, uint64_t v)
{
	napi_value r;
	napi_create_bigint_uint64(env, v, &r);
	return r;
}

/* A record as its JSON string; null for none. */
static napi_value rec_json(napi_env env, const hf_rec *rec)
{
	return str_or_null(env, rec ? hf_rec_json(rec) : NULL);
}

/* o.name = v, in a function returning napi_value (NULL: thrown). */
#define PROP(o, name, v) CHECK(napi_set_named_property(env, (o), (name), (v)))

/* A path the library wrote into buf (rc 0), or its negative code. */
static napi_value buf_result(napi_env env, int rc, const char *buf)
{
	return rc < 0 ? num(env, rc) : str_or_null(env, buf);
}

/* A JS string argument into a malloc'd C string; NULL for null/undefined
 * when nullable (then *ok stays true). Throws a TypeError otherwise. */
static char *arg_str(napi_env env, napi_value v, bool nullable, bool *ok)
{
	napi_valuetype t;
	*ok = false;
	if (napi_typeof(env, v, &t) != napi_ok)
		return NULL;
	if (nullable && (t == napi_null || t == napi_undefined)) {
		*ok = true;
		return NULL;
	}
	if (t != napi_string) {
		napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "expected a string");
		return NULL;
	}
	size_t len;
	if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok)
		return NULL;
	char *s = malloc(len + 1);
	if (!s) {
		napi_throw_error(env, "ENOMEM", "out of memory");
		return NULL;
	}
	napi_get_value_string_utf8(env, v, s, len + 1, &len);
	if (strlen(s) != len) { /* an embedded NUL would cut the path short */
		free(s);
		napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", "string contains a NUL byte");
		return NULL;
	}
	*ok = true;
	return s;
}

static bool arg_i64(napi_env env, napi_value v, int64_t *ret)
{
	napi_valuetype t;
	if (napi_typeof(env, v, &t) != napi_ok)
		return false;
	if (t == napi_bigint) {
		bool lossless;
		return napi_get_value_bigint_int64(env, v, ret, &lossless) == napi_ok && lossless;
	}
	if (t != napi_number)
		return false;
	double d;
	napi_get_value_double(env, v, &d);
	if (d != d)
		return false;
	if (d >= 9.2e18)
		*ret = INT64_MAX;
	else if (d <= -9.2e18)
		*ret = INT64_MIN;
	else
		*ret = (int64_t)d;
	return true;
}

/* The box of an external argument, of the kind wanted; throws otherwise. */
static struct box *arg_box(napi_env env, napi_value v, enum kind kind)
{
	void *data = NULL;
	napi_valuetype t;
	if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
	    napi_get_value_external(env, v, &data) != napi_ok || !data ||
	    ((struct box *)data)->kind != kind) {
		napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "not a holdfast handle of this kind");
		return NULL;
	}
	return data;
}

/* b: the box of argument argv0, of kind; a busy one (NB1) answers -EBUSY. */
#define BOX_OR_BUSY(b, argv0, kind)                      \
	struct box *b = arg_box(env, argv0, kind);       \
	if (!b)                                          \
		return NULL;                             \
	if (b->busy)                                     \
		return num(env, -EBUSY);

/* char *var: the string argument v (arg_str), to free; returns when it is
 * none (thrown), after running the statement cleanup. */
#define STR_ARG_OR(var, v, nullable, cleanup)                         \
	bool var##_ok;                                                 \
	char *var = arg_str(env, (v), (nullable), &var##_ok);          \
	if (!var##_ok) {                                               \
		cleanup;                                               \
		return NULL;                                           \
	}
#define STR_ARG(var, v, nullable) STR_ARG_OR(var, v, nullable, (void)0)

/* The box of an external argument of any kind; throws otherwise. */
static struct box *arg_handle(napi_env env, napi_value v)
{
	void *data = NULL;
	if (napi_get_value_external(env, v, &data) != napi_ok || !data) {
		napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "not a holdfast handle");
		return NULL;
	}
	return data;
}

/* A Buffer argument's bytes (not copied: valid while v is); throws otherwise. */
static bool arg_buffer(napi_env env, napi_value v, void **data, size_t *len)
{
	bool isbuf = false;
	if (napi_is_buffer(env, v, &isbuf) != napi_ok || !isbuf) {
		napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "expected a Buffer");
		return false;
	}
	return napi_get_buffer_info(env, v, data, len) == napi_ok;
}

static napi_value new_box(napi_env env, enum kind kind, void *h)
{
	struct box *b = calloc(1, sizeof *b);
	if (!b) {
		/* the handle is freed by the caller's error path */
		napi_throw_error(env, "ENOMEM", "out of memory");
		return NULL;
	}
	b->kind = kind;
	b->h = h;
	napi_value ext;
	if (napi_create_external(env, b, box_finalize, NULL, &ext) != napi_ok) {
		free(b);
		napi_throw_error(env, "EINTERNAL", "napi_create_external");
		return NULL;
	}
	return ext;
}

/* A new handle's box, or the constructor's negative rc; the handle is
 * freed when it cannot be wrapped. */
static napi_value wrap_new(napi_env env, int rc, enum kind kind, void *h)
{
	if (rc < 0)
		return num(env, rc);
	napi_value ext = new_box(env, kind, h);
	if (!ext)
		handle_free(kind, h);
	return ext;
}

/* { rc, json } for the functions that return a record or a code. */
static napi_value result(napi_env env, int rc, const hf_rec *rec)
{
	napi_value o;
	CHECK(napi_create_object(env, &o));
	PROP(o, "rc", num(env, rc));
	PROP(o, "json", rec_json(env, rec));
	return o;
}

/* result() for a call that filled rec (shown when show), which it frees. */
static napi_value rec_result(napi_env env, int rc, hf_rec *rec, bool show)
{
	napi_value v = result(env, rc, show ? rec : NULL);
	hf_rec_free(rec);
	return v;
}

/* name(box) -> expr's int, for a box b of kind (BOX_OR_BUSY). */
#define BOX_FN(name, kind, expr)                                      \
	static napi_value name(napi_env env, napi_callback_info info) \
	{                                                             \
		ARGS(1);                                              \
		BOX_OR_BUSY(b, argv[0], kind);                        \
		return num(env, (expr));                              \
	}

/* name(box, string) -> fn(handle, string), for a box of kind. */
#define BOX_STR_FN(name, kind, fn)                                    \
	static napi_value name(napi_env env, napi_callback_info info) \
	{                                                             \
		ARGS(2);                                              \
		BOX_OR_BUSY(b, argv[0], kind);                        \
		STR_ARG(arg, argv[1], false);                         \
		int rc = fn(b->h, arg);                               \
		free(arg);                                            \
		return num(env, rc);                                  \
	}

/* ---- library-wide -------------------------------------------------------- */

static napi_value js_version(napi_env env, napi_callback_info info)
{
	(void)info;
	return str_or_null(env, hf_version());
}

static napi_value js_strerror(napi_env env, napi_callback_info info)
{
	ARGS(1);
	int64_t rc;
	if (!arg_i64(env, argv[0], &rc))
		rc = 0;
	return str_or_null(env, hf_strerror((int)rc));
}

static napi_value js_error_name(napi_env env, napi_callback_info info)
{
	ARGS(1);
	int64_t rc;
	if (!arg_i64(env, argv[0], &rc))
		rc = 0;
	return str_or_null(env, hf_error_name((int)rc));
}

/* A path function filling a buffer: hf_path_canonical & co. */
typedef int (*buf_fn)(const char *, char *, size_t);
static napi_value buf_call(napi_env env, napi_callback_info info, buf_fn fn)
{
	ARGS(1);
	STR_ARG(in, argv[0], false);
	char buf[8192];
	int rc = fn(in, buf, sizeof buf);
	free(in);
	return buf_result(env, rc, buf);
}
static napi_value js_path_canonical(napi_env env, napi_callback_info info)
{
	return buf_call(env, info, hf_path_canonical);
}
static napi_value js_scope_canonical(napi_env env, napi_callback_info info)
{
	return buf_call(env, info, hf_scope_canonical);
}
static napi_value js_path_identity(napi_env env, napi_callback_info info)
{
	return buf_call(env, info, hf_path_identity);
}
static napi_value js_registry_path(napi_env env, napi_callback_info info)
{
	(void)info;
	char buf[8192];
	return buf_result(env, hf_registry_path(buf, sizeof buf), buf);
}
static napi_value js_session_default_path(napi_env env, napi_callback_info info)
{
	(void)info;
	char buf[8192];
	return buf_result(env, hf_session_default_path(buf, sizeof buf), buf);
}

/* ---- jobs on the pool (waits, commits) ------------------------------------ */

enum job_op { OP_ACQUIRE, OP_TAKE, OP_REGISTER, OP_COMMIT };

struct job {
	napi_async_work work;
	napi_deferred deferred;
	napi_ref keep; /* the box's external, alive while the job runs */
	struct box *box;
	enum job_op op;
	int rc;
	int cancel_r, cancel_w; /* NB3 */
	bool done;
	void *data; /* OP_COMMIT: the bytes */
	size_t len;
	napi_ref data_ref;
};

static int set_cancel(struct box *b, int fd)
{
	switch (b->kind) {
	case K_LOCK: return hf_lock_set(b->h, HF_OPT_CANCEL_FD, fd);
	case K_SESSION: return hf_session_set(b->h, HF_OPT_CANCEL_FD, fd);
	case K_SCOPE: return hf_scope_set(b->h, HF_OPT_CANCEL_FD, fd);
	default: return 0;
	}
}

static void job_execute(napi_env env, void *data)
{
	(void)env;
	struct job *j = data;
	switch (j->op) {
	case OP_ACQUIRE: j->rc = hf_lock_acquire(j->box->h); break;
	case OP_TAKE: j->rc = hf_session_take(j->box->h); break;
	case OP_REGISTER: j->rc = hf_scope_register(j->box->h); break;
	case OP_COMMIT: j->rc = hf_edit_commit(j->box->h, j->data, j->len); break;
	}
}

static void job_close_fds(struct job *j)
{
	if (j->cancel_r >= 0)
		close(j->cancel_r);
	if (j->cancel_w >= 0)
		close(j->cancel_w);
	j->cancel_r = j->cancel_w = -1;
}

static void job_complete(napi_env env, napi_status status, void *data)
{
	struct job *j = data;
	struct box *b = j->box;
	if (j->cancel_r >= 0)
		set_cancel(b, -1); /* NB3: reset before the descriptor closes */
	job_close_fds(j);
	b->busy = false;
	if (j->op == OP_COMMIT && b->parent_box)
		b->parent_box->busy = false;
	j->done = true;
	if (status == napi_cancelled)
		j->rc = HF_ECANCELED;
	else if (j->op == OP_ACQUIRE && j->rc == 0)
		hf_lock_set(b->h, HF_OPT_THREAD, gettid()); /* HL5: the hold is the JS thread's */
	napi_resolve_deferred(env, j->deferred, num(env, j->rc));
	if (j->data_ref)
		napi_delete_reference(env, j->data_ref);
	napi_delete_async_work(env, j->work);
	j->work = NULL;
	if (b->orphaned) { /* NB2: its external was finalized meanwhile */
		if (b->parent)
			napi_delete_reference(env, b->parent);
		box_free_handle(b);
		free(b);
	} else {
		napi_delete_reference(env, j->keep);
	}
	j->keep = NULL;
	/* the job's memory stays with its own external (cancel() may still
	 * be called): freed by job_finalize */
}

static void job_finalize(napi_env env, void *data, void *hint)
{
	(void)env;
	(void)hint;
	struct job *j = data;
	if (!j->done) /* teardown while running: the pool still uses it */
		return;
	free(j);
}

/* start(box, cancellable[, buffer]) -> [promise, job] */
static napi_value job_start(napi_env env, napi_callback_info info, enum kind kind, enum job_op op)
{
	ARGS(3);
	struct box *b = arg_box(env, argv[0], kind);
	if (!b)
		return NULL;
	bool cancellable = false;
	if (argc > 1)
		napi_get_value_bool(env, argv[1], &cancellable);
	if (b->busy) { /* NB1 */
		napi_throw_error(env, "EBUSY", "the handle is busy with another call");
		return NULL;
	}
	struct job *j = calloc(1, sizeof *j);
	if (!j) {
		napi_throw_error(env, "ENOMEM", "out of memory");
		return NULL;
	}
	j->box = b;
	j->op = op;
	j->cancel_r = j->cancel_w = -1;
	if (op == OP_COMMIT) {
		if (!arg_buffer(env, argv[2], &j->data, &j->len)) {
			free(j);
			return NULL;
		}
		napi_create_reference(env, argv[2], 1, &j->data_ref);
	}
	if (cancellable && op != OP_COMMIT) {
		int p[2];
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
			int e = errno;
			free(j);
			return num(env, -e); /* index.js: an Error from the code */
		}
		j->cancel_r = p[0];
		j->cancel_w = p[1];
		int rc = set_cancel(b, j->cancel_r);
		if (rc < 0) {
			job_close_fds(j);
			free(j);
			return num(env, rc);
		}
	}
	napi_value promise, name, jext, pair;
	CHECK(napi_create_promise(env, &j->deferred, &promise));
	CHECK(napi_create_string_utf8(env, "holdfast", NAPI_AUTO_LENGTH, &name));
	CHECK(napi_create_reference(env, argv[0], 1, &j->keep));
	CHECK(napi_create_async_work(env, NULL, name, job_execute, job_complete, j, &j->work));
	CHECK(napi_create_external(env, j, job_finalize, NULL, &jext));
	if (op == OP_COMMIT && b->parent_box && b->parent_box->busy) {
		napi_throw_error(env, "EBUSY", "the edit's lock is busy with another call");
		return NULL;
	}
	b->busy = true;
	if (op == OP_COMMIT && b->parent_box)
		b->parent_box->busy = true; /* NB4 */
	if (napi_queue_async_work(env, j->work) != napi_ok) {
		b->busy = false;
		if (op == OP_COMMIT && b->parent_box)
			b->parent_box->busy = false;
		napi_throw_error(env, "EINTERNAL", "napi_queue_async_work");
		return NULL;
	}
	CHECK(napi_create_array_with_length(env, 2, &pair));
	CHECK(napi_set_element(env, pair, 0, promise));
	CHECK(napi_set_element(env, pair, 1, jext));
	return pair;
}

/* name(box, cancellable[, buffer]): job_start for a box of kind. */
#define JOB_FN(name, kind, op)                                        \
	static napi_value name(napi_env env, napi_callback_info info) \
	{                                                             \
		return job_start(env, info, kind, op);                \
	}

/* cancel(job): ends the job's wait (a no-op once it is done). */
static napi_value js_cancel(napi_env env, napi_callback_info info)
{
	ARGS(1);
	void *data = NULL;
	if (napi_get_value_external(env, argv[0], &data) != napi_ok || !data)
		return NULL;
	struct job *j = data;
	if (!j->done && j->cancel_w >= 0) {
		ssize_t n = write(j->cancel_w, "x", 1);
		(void)n; /* a full pipe is readable already */
	}
	return NULL;
}

/* ---- directory lock ------------------------------------------------------- */

static napi_value js_lock_new(napi_env env, napi_callback_info info)
{
	ARGS(1);
	STR_ARG(path, argv[0], false);
	hf_lock *l;
	int rc = hf_lock_new(path, &l);
	free(path);
	return wrap_new(env, rc, K_LOCK, l);
}

/* set(box, opt, value) for the int options of every kind */
static napi_value js_set(napi_env env, napi_callback_info info)
{
	ARGS(3);
	struct box *b = arg_handle(env, argv[0]);
	if (!b)
		return NULL;
	if (b->busy)
		return num(env, -EBUSY);
	int64_t opt, v;
	if (!arg_i64(env, argv[1], &opt) || !arg_i64(env, argv[2], &v)) {
		napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "expected numbers");
		return NULL;
	}
	switch (b->kind) {
	case K_LOCK: return num(env, hf_lock_set(b->h, (int)opt, v));
	case K_SESSION: return num(env, hf_session_set(b->h, (int)opt, v));
	case K_SCOPE: return num(env, hf_scope_set(b->h, (int)opt, v));
	default: return num(env, -EINVAL);
	}
}

static napi_value js_set_str(napi_env env, napi_callback_info info)
{
	ARGS(3);
	struct box *b = arg_handle(env, argv[0]);
	if (!b)
		return NULL;
	if (b->busy)
		return num(env, -EBUSY);
	int64_t opt;
	if (!arg_i64(env, argv[1], &opt)) {
		napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "expected an option number");
		return NULL;
	}
	STR_ARG(v, argv[2], true);
	int rc = -EINVAL;
	if (b->kind == K_LOCK)
		rc = hf_lock_set_str(b->h, (int)opt, v);
	else if (b->kind == K_SESSION)
		rc = hf_session_set_str(b->h, (int)opt, v);
	else if (b->kind == K_SCOPE)
		rc = hf_scope_set_str(b->h, (int)opt, v);
	free(v);
	return num(env, rc);
}

JOB_FN(js_lock_acquire, K_LOCK, OP_ACQUIRE)

BOX_FN(js_lock_acquire_sync, K_LOCK, hf_lock_acquire(b->h))

BOX_FN(js_lock_release, K_LOCK, hf_lock_release(b->h))

BOX_FN(js_lock_check, K_LOCK, hf_lock_check(b->h))
BOX_FN(js_lock_renew, K_LOCK, hf_lock_renew(b->h))

BOX_FN(js_lock_hold, K_LOCK, hf_lock_hold(b->h))

BOX_FN(js_lock_unhold, K_LOCK, (hf_lock_unhold(b->h), 0))

BOX_FN(js_lock_detach, K_LOCK, hf_lock_detach(b->h))

BOX_STR_FN(js_lock_adopt, K_LOCK, hf_lock_adopt)

/* info(box) -> { token, fence, fd, holder } */
static napi_value js_lock_info(napi_env env, napi_callback_info info)
{
	ARGS(1);
	BOX_OR_BUSY(b, argv[0], K_LOCK);
	napi_value o;
	const hf_rec *h = hf_lock_holder(b->h);
	CHECK(napi_create_object(env, &o));
	PROP(o, "token", str_or_null(env, hf_lock_token(b->h)));
	PROP(o, "fence", u64(env, hf_lock_fence(b->h)));
	PROP(o, "fd", num(env, hf_lock_fd(b->h)));
	PROP(o, "holder", rec_json(env, h));
	return o;
}

static napi_value js_lock_holder(napi_env env, napi_callback_info info)
{
	ARGS(1);
	BOX_OR_BUSY(b, argv[0], K_LOCK);
	const hf_rec *h = hf_lock_holder(b->h);
	return rec_json(env, h);
}

static napi_value js_lock_status(napi_env env, napi_callback_info info)
{
	ARGS(1);
	STR_ARG(path, argv[0], false);
	hf_rec *r = NULL;
	int rc = hf_lock_status(path, &r);
	free(path);
	return rec_result(env, rc, r, rc == 0);
}

/* lockQuery(box) -> { rc, json }: the lock's state on the handle's backend */
static napi_value js_lock_query(napi_env env, napi_callback_info info)
{
	ARGS(1);
	BOX_OR_BUSY(b, argv[0], K_LOCK);
	hf_rec *r = NULL;
	int rc = hf_lock_query(b->h, &r);
	return rec_result(env, rc, r, rc == 0);
}

/* free(box): frees the handle now (releasing what it holds) instead of at GC. */
static napi_value js_free(napi_env env, napi_callback_info info)
{
	ARGS(1);
	void *data = NULL;
	if (napi_get_value_external(env, argv[0], &data) != napi_ok || !data)
		return NULL;
	struct box *b = data;
	if (b->busy || b->children > 0) /* NB1, NB4 */
		return num(env, -EBUSY);
	box_free_handle(b); /* b->h NULL: every later call is -EINVAL */
	if (b->parent) {
		napi_delete_reference(env, b->parent);
		b->parent = NULL;
	}
	return num(env, 0);
}

/* ---- edit ------------------------------------------------------------------ */

/* editOpen(lockbox, file) -> { rc, json, edit, fd } */
static napi_value js_edit_open(napi_env env, napi_callback_info info)
{
	ARGS(2);
	BOX_OR_BUSY(b, argv[0], K_LOCK);
	STR_ARG(file, argv[1], false);
	hf_edit *e = NULL;
	hf_rec *err = NULL;
	int rc = hf_edit_open(b->h, file, &e, &err);
	free(file);
	napi_value o = rec_result(env, rc, err, rc < 0);
	if (!o || rc < 0)
		return o;
	napi_value ext = new_box(env, K_EDIT, e);
	if (!ext) {
		hf_edit_free(e);
		return NULL;
	}
	struct box *eb;
	napi_get_value_external(env, ext, (void **)&eb);
	napi_create_reference(env, argv[0], 1, &eb->parent);
	eb->parent_box = b;
	b->children++;
	PROP(o, "edit", ext);
	PROP(o, "fd", num(env, hf_edit_fd(e)));
	return o;
}

JOB_FN(js_edit_commit, K_EDIT, OP_COMMIT)

static napi_value js_edit_commit_sync(napi_env env, napi_callback_info info)
{
	ARGS(2);
	BOX_OR_BUSY(b, argv[0], K_EDIT);
	void *data;
	size_t len;
	if (!arg_buffer(env, argv[1], &data, &len))
		return NULL;
	return num(env, hf_edit_commit(b->h, data, len));
}

static napi_value js_edit_notes(napi_env env, napi_callback_info info)
{
	ARGS(1);
	BOX_OR_BUSY(b, argv[0], K_EDIT);
	const hf_rec *n = b->h ? hf_edit_notes(b->h) : NULL;
	return rec_json(env, n);
}

/* ---- session --------------------------------------------------------------- */

static napi_value js_session_new(napi_env env, napi_callback_info info)
{
	ARGS(2);
	STR_ARG(path, argv[0], true);
	STR_ARG_OR(lane, argv[1], false, free(path));
	hf_session *s;
	int rc = hf_session_new(path, lane, &s);
	free(path);
	free(lane);
	return wrap_new(env, rc, K_SESSION, s);
}

JOB_FN(js_session_take, K_SESSION, OP_TAKE)

BOX_FN(js_session_take_sync, K_SESSION, hf_session_take(b->h))

BOX_FN(js_session_release, K_SESSION, hf_session_release(b->h))

static napi_value js_session_info(napi_env env, napi_callback_info info)
{
	ARGS(1);
	BOX_OR_BUSY(b, argv[0], K_SESSION);
	napi_value o;
	const hf_rec *h = hf_session_holder(b->h);
	CHECK(napi_create_object(env, &o));
	PROP(o, "owner", str_or_null(env, hf_session_owner(b->h)));
	PROP(o, "holder", rec_json(env, h));
	return o;
}

static napi_value js_session_status(napi_env env, napi_callback_info info)
{
	ARGS(2);
	STR_ARG(path, argv[0], true);
	int64_t stale = 0;
	if (argc > 1)
		arg_i64(env, argv[1], &stale);
	hf_rec *r = NULL;
	int rc = hf_session_status(path, stale, &r);
	free(path);
	return rec_result(env, rc, r, rc == 0);
}

/* ---- scope ------------------------------------------------------------------- */

static napi_value js_scope_new(napi_env env, napi_callback_info info)
{
	ARGS(1);
	STR_ARG(name, argv[0], false);
	hf_scope *s;
	int rc = hf_scope_new(name, &s);
	free(name);
	return wrap_new(env, rc, K_SCOPE, s);
}

BOX_STR_FN(js_scope_add, K_SCOPE, hf_scope_add)

JOB_FN(js_scope_register, K_SCOPE, OP_REGISTER)

BOX_FN(js_scope_register_sync, K_SCOPE, hf_scope_register(b->h))

BOX_FN(js_scope_release, K_SCOPE, hf_scope_release(b->h))

BOX_FN(js_scope_detach, K_SCOPE, hf_scope_detach(b->h))

BOX_FN(js_scope_renew, K_SCOPE, hf_scope_renew(b->h))

static napi_value js_scope_info(napi_env env, napi_callback_info info)
{
	ARGS(1);
	BOX_OR_BUSY(b, argv[0], K_SCOPE);
	napi_value o;
	const hf_rec *h = hf_scope_holder(b->h);
	CHECK(napi_create_object(env, &o));
	PROP(o, "generation", u64(env, hf_scope_generation(b->h)));
	PROP(o, "fd", num(env, hf_scope_fd(b->h)));
	PROP(o, "holder", rec_json(env, h));
	return o;
}

/* ---- registry ----------------------------------------------------------------- */

typedef int (*reg_fn)(const char *, hf_registry **, hf_rec **);

/* read/reap(path|null) -> { rc, json (the error record), registry, generation, entries: [json] } */
static napi_value registry_call(napi_env env, napi_callback_info info, reg_fn fn)
{
	ARGS(1);
	STR_ARG(path, argv[0], true);
	hf_registry *r = NULL;
	hf_rec *err = NULL;
	int rc = fn(path, &r, &err);
	free(path);
	napi_value o = rec_result(env, rc, err, rc < 0);
	if (!o || rc < 0 || !r)
		return o;
	napi_value entries;
	size_t n = hf_registry_count(r);
	CHECK(napi_create_array_with_length(env, n, &entries));
	for (size_t i = 0; i < n; i++)
		CHECK(napi_set_element(env, entries, (uint32_t)i,
				       str_or_null(env, hf_rec_json(hf_registry_get(r, i)))));
	PROP(o, "entries", entries);
	PROP(o, "generation", u64(env, hf_registry_generation(r)));
	napi_value ext = new_box(env, K_REGISTRY, r);
	if (!ext) {
		hf_registry_free(r);
		return NULL;
	}
	PROP(o, "registry", ext);
	return o;
}
static napi_value js_registry_read(napi_env env, napi_callback_info info)
{
	return registry_call(env, info, hf_registry_read);
}
static napi_value js_registry_reap(napi_env env, napi_callback_info info)
{
	return registry_call(env, info, hf_registry_reap);
}

static napi_value js_registry_effective(napi_env env, napi_callback_info info)
{
	ARGS(2);
	BOX_OR_BUSY(b, argv[0], K_REGISTRY);
	STR_ARG(name, argv[1], false);
	hf_rec *r = NULL;
	int rc = hf_registry_effective(b->h, name, &r);
	free(name);
	return rec_result(env, rc, r, rc == 0);
}

/* check(registry, canonicalPath, pod|null, generation) -> { rc (the verdict), json } */
static napi_value js_registry_check(napi_env env, napi_callback_info info)
{
	ARGS(4);
	BOX_OR_BUSY(b, argv[0], K_REGISTRY);
	STR_ARG(path, argv[1], false);
	STR_ARG_OR(pod, argv[2], true, free(path));
	uint64_t gen = 0;
	napi_valuetype t;
	if (argc > 3 && napi_typeof(env, argv[3], &t) == napi_ok) {
		if (t == napi_bigint) {
			bool lossless;
			napi_get_value_bigint_uint64(env, argv[3], &gen, &lossless);
		} else if (t == napi_number) {
			int64_t g;
			if (arg_i64(env, argv[3], &g) && g > 0)
				gen = (uint64_t)g;
		}
	}
	hf_rec *r = NULL;
	int rc = hf_registry_check(b->h, path, pod, gen, &r);
	free(path);
	free(pod);
	return rec_result(env, rc, r, rc >= 0);
}

/* ---- module ------------------------------------------------------------------- */

static napi_value init(napi_env env, napi_value exports)
{
	static const struct {
		const char *name;
		napi_callback fn;
	} fns[] = {
		{ "version", js_version },
		{ "strerror", js_strerror },
		{ "errorName", js_error_name },
		{ "pathCanonical", js_path_canonical },
		{ "scopeCanonical", js_scope_canonical },
		{ "pathIdentity", js_path_identity },
		{ "registryPath", js_registry_path },
		{ "sessionDefaultPath", js_session_default_path },
		{ "cancel", js_cancel },
		{ "set", js_set },
		{ "setStr", js_set_str },
		{ "free", js_free },
		{ "lockNew", js_lock_new },
		{ "lockAcquire", js_lock_acquire },
		{ "lockAcquireSync", js_lock_acquire_sync },
		{ "lockRelease", js_lock_release },
		{ "lockCheck", js_lock_check },
		{ "lockRenew", js_lock_renew },
		{ "lockHold", js_lock_hold },
		{ "lockUnhold", js_lock_unhold },
		{ "lockDetach", js_lock_detach },
		{ "lockAdopt", js_lock_adopt },
		{ "lockInfo", js_lock_info },
		{ "lockHolder", js_lock_holder },
		{ "lockStatus", js_lock_status },
		{ "lockQuery", js_lock_query },
		{ "editOpen", js_edit_open },
		{ "editCommit", js_edit_commit },
		{ "editCommitSync", js_edit_commit_sync },
		{ "editNotes", js_edit_notes },
		{ "sessionNew", js_session_new },
		{ "sessionTake", js_session_take },
		{ "sessionTakeSync", js_session_take_sync },
		{ "sessionRelease", js_session_release },
		{ "sessionInfo", js_session_info },
		{ "sessionStatus", js_session_status },
		{ "scopeNew", js_scope_new },
		{ "scopeAdd", js_scope_add },
		{ "scopeRegister", js_scope_register },
		{ "scopeRegisterSync", js_scope_register_sync },
		{ "scopeRelease", js_scope_release },
		{ "scopeDetach", js_scope_detach },
		{ "scopeRenew", js_scope_renew },
		{ "scopeInfo", js_scope_info },
		{ "registryRead", js_registry_read },
		{ "registryReap", js_registry_reap },
		{ "registryEffective", js_registry_effective },
		{ "registryCheck", js_registry_check },
	};
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
		napi_value f;
		CHECK(napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f));
		CHECK(napi_set_named_property(env, exports, fns[i].name, f));
	}
	static const struct {
		const char *name;
		int v;
	} consts[] = {
		{ "HF_EHELD", HF_EHELD }, { "HF_EUNREADABLE", HF_EUNREADABLE },
		{ "HF_ENOTHELD", HF_ENOTHELD }, { "HF_ENOTYOURS", HF_ENOTYOURS },
		{ "HF_ETIMEDOUT", HF_ETIMEDOUT }, { "HF_ECONFLICT", HF_ECONFLICT },
		{ "HF_EUNSAFE", HF_EUNSAFE }, { "HF_EBARRIER", HF_EBARRIER },
		{ "HF_ELOST", HF_ELOST }, { "HF_ECANCELED", HF_ECANCELED },
		{ "OPT_WAIT_MS", HF_OPT_WAIT_MS }, { "OPT_STALE_MS", HF_OPT_STALE_MS },
		{ "OPT_MAX_HOLD_MS", HF_OPT_MAX_HOLD_MS }, { "OPT_PID", HF_OPT_PID },
		{ "OPT_CANCEL_FD", HF_OPT_CANCEL_FD }, { "OPT_LOCK_WAIT_MS", HF_OPT_LOCK_WAIT_MS },
		{ "OPT_GENERATION", HF_OPT_GENERATION }, { "OPT_OWNER", HF_OPT_OWNER },
		{ "OPT_REGISTRY", HF_OPT_REGISTRY }, { "OPT_SOCKET", HF_OPT_SOCKET },
		{ "OPT_FROM", HF_OPT_FROM }, { "OPT_TTL_MS", HF_OPT_TTL_MS },
		{ "OPT_TIMEOUT_MS", HF_OPT_TIMEOUT_MS }, { "OPT_CHAIN_PID", HF_OPT_CHAIN_PID },
		{ "OPT_LEASE_MS", HF_OPT_LEASE_MS },
		{ "OPT_DEPTH", HF_OPT_DEPTH },
		{ "OPT_MODE", HF_OPT_MODE }, { "OPT_SLOTS", HF_OPT_SLOTS },
		{ "MODE_EXCLUSIVE", HF_MODE_EXCLUSIVE }, { "MODE_SHARED", HF_MODE_SHARED },
		{ "MODE_SLOTS", HF_MODE_SLOTS }, { "SLOTS_MAX", HF_SLOTS_MAX },
		{ "OPT_THREAD", HF_OPT_THREAD },
		{ "OPT_BACKEND", HF_OPT_BACKEND },
		{ "OPT_ETCD_USER", HF_OPT_ETCD_USER },
		{ "OPT_ETCD_PASSWORD_FILE", HF_OPT_ETCD_PASSWORD_FILE },
		{ "OPT_ETCD_CA_FILE", HF_OPT_ETCD_CA_FILE },
		{ "OPT_REASON", HF_OPT_REASON },
		{ "SCOPE_FREE", HF_SCOPE_FREE }, { "SCOPE_HELD", HF_SCOPE_HELD },
		{ "SCOPE_YOURS", HF_SCOPE_YOURS }, { "SCOPE_OUTSIDE", HF_SCOPE_OUTSIDE },
		{ "SCOPE_LOST", HF_SCOPE_LOST },
		{ "EBUSY", -EBUSY }, { "EINVAL", -EINVAL },
	};
	napi_value c;
	CHECK(napi_create_object(env, &c));
	for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++)
		CHECK(napi_set_named_property(env, c, consts[i].name, num(env, consts[i].v)));
	PROP(exports, "constants", c);
	return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
