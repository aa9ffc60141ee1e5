/*
 * session_record.c - the session lock's record, shared by both backends:
 * its one line of JSON (hf_session_format: lane, owner, pid, host, started,
 * boot_id, timens, boottime_ms, broke), its parse (that form, or a legacy
 * bare ISO-8601 timestamp), its age and the verdict on it (held, stale,
 * skew). The file system's protocol (fs/session_file.c) writes it in the
 * lock file, etcd's (etcd/etcdsession.c) as the key's value, byte for byte
 * the same; both judge it here. Its age follows SL2 (fs/session_file.c:
 * from the record, never a file's mtime or a key's revision; boot-relative
 * on the writer's kernel and time namespace, else by the wall clock, where
 * a record dated in the future is live) - etcd's EN3 (etcd/etcdsession.c) is the same rule.
 * And the default path of a session (hf_session_default_path: the work
 * tree's top). Not a protocol: nothing here writes a file or a key.
 */
#include "session.h"

#include "floor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>


struct sbuf {
	char *p;
	size_t n, len;
	int over;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n >= b->n) {
		b->over = 1;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_put(struct sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

/* s as a JSON string (hf_json_escape), a slice at a time. */
static void sb_str(struct sbuf *b, const char *s)
{
	sb_putn(b, "\"", 1);
	char slice[65], esc[6 * (sizeof slice - 1)];
	for (size_t n = strlen(s); n > 0;) {
		size_t k = n < sizeof slice - 1 ? n : sizeof slice - 1;
		memcpy(slice, s, k);
		slice[k] = '\0';
		sb_putn(b, esc, (size_t)(hf_json_escape(esc, slice) - esc));
		s += k;
		n -= k;
	}
	sb_putn(b, "\"", 1);
}

static void sb_key_str(struct sbuf *b, const char *key, const char *v)
{
	sb_str(b, key);
	sb_putn(b, ":", 1);
	sb_str(b, v);
}

static void sb_key_int(struct sbuf *b, const char *key, int64_t v)
{
	char num[32];
	snprintf(num, sizeof num, ":%lld", (long long)v);
	sb_str(b, key);
	sb_put(b, num);
}

int hf_session_format(const struct hf_sessionlock_record *r, char *buf, size_t n)
{
	struct sbuf b = { buf, n, 0, 0 };
	char when[40];
	if (n == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	hf_time_format(r->started_ms, when, sizeof when);
	sb_put(&b, "{");
	sb_key_str(&b, "lane", r->lane);
	sb_put(&b, ",");
	sb_key_str(&b, "owner", r->owner);
	sb_put(&b, ",");
	sb_key_int(&b, "pid", r->pid);
	sb_put(&b, ",");
	sb_key_str(&b, "host", r->host);
	sb_put(&b, ",");
	sb_key_str(&b, "started", when);
	if (r->boot_id[0]) { /* SL2: what makes a boot-relative age possible */
		sb_put(&b, ",");
		sb_key_str(&b, "boot_id", r->boot_id);
		sb_put(&b, ",");
		sb_key_int(&b, "timens", (int64_t)r->timens);
		sb_put(&b, ",");
		sb_key_int(&b, "boottime_ms", r->boot_ms);
	}
	if (r->has_broke) {
		hf_time_format(r->broke.started_ms, when, sizeof when);
		sb_put(&b, ",\"broke\":{");
		sb_key_str(&b, "lane", r->broke.lane);
		sb_put(&b, ",");
		sb_key_str(&b, "owner", r->broke.owner);
		sb_put(&b, ",");
		sb_key_str(&b, "started", when);
		sb_put(&b, ",");
		sb_key_int(&b, "age_s", r->broke.age_s);
		if (r->broke.legacy)
			sb_put(&b, ",\"legacy\":true");
		sb_put(&b, "}");
	}
	sb_put(&b, "}\n");
	return b.over ? -ENAMETOOLONG : (int)b.len;
}

static int unreadable(char *why, size_t n, const char *msg)
{
	snprintf(why, n, "%s", msg);
	return HF_EUNREADABLE;
}

/* An optional text field: absent is "", present must be a string of at most
 * max bytes of text. -1 when present and wrong. */
static int get_text(const json_t *obj, const char *key, char *dst, size_t max)
{
	const json_t *v = json_object_get(obj, key);
	dst[0] = '\0';
	if (!v || json_is_null(v))
		return 0;
	const char *s = json_string_value(v);
	if (!s || !hf_text_ok(s, max))
		return -1;
	strcpy(dst, s);
	return 0;
}

/* An optional integer in [0, 2^63): absent is 0; -1 when of another type. */
static int get_u63(const json_t *obj, const char *key, int64_t *ret)
{
	const json_t *v = json_object_get(obj, key);
	*ret = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*ret = json_integer_value(v);
	return 0;
}

static int get_time(const json_t *obj, const char *key, int64_t *ret)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? hf_time_parse(s, ret) : -EINVAL;
}

static int parse_json(const char *buf, size_t len, struct hf_sessionlock_record *r, char *why,
		      size_t n)
{
	json_error_t err;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	int rc = 0;
	if (!root) {
		snprintf(why, n, "not JSON (%s)", err.text);
		return HF_EUNREADABLE;
	}
	if (!json_is_object(root)) {
		rc = unreadable(why, n, "JSON but not an object");
		goto out;
	}
	if (get_text(root, "lane", r->lane, HF_LANE_MAX) < 0 || !r->lane[0]) {
		rc = unreadable(why, n, "no \"lane\" (a string of 1 to 64 bytes)");
		goto out;
	}
	if (get_time(root, "started", &r->started_ms) < 0) {
		rc = unreadable(why, n, "no \"started\" ISO-8601 time");
		goto out;
	}
	const json_t *pid = json_object_get(root, "pid");
	int64_t timens;
	if (get_text(root, "owner", r->owner, HF_OWNER_MAX) < 0 ||
	    get_text(root, "host", r->host, HF_HOST_MAX) < 0 ||
	    (pid && !json_is_null(pid) && (!json_is_integer(pid) || json_integer_value(pid) < 0))) {
		rc = unreadable(why, n, "a field of the wrong type or size (owner, host or pid)");
		goto out;
	}
	if (get_text(root, "boot_id", r->boot_id, HF_BOOTID_LEN) < 0 ||
	    get_u63(root, "timens", &timens) < 0 || get_u63(root, "boottime_ms", &r->boot_ms) < 0) {
		rc = unreadable(why, n,
				"a field of the wrong type or size (boot_id, timens or boottime_ms)");
		goto out;
	}
	r->timens = (uint64_t)timens;
	r->pid = pid && json_is_integer(pid) ? json_integer_value(pid) : 0;
	const json_t *b = json_object_get(root, "broke");
	if (json_is_object(b)) {
		const json_t *age = json_object_get(b, "age_s");
		r->has_broke = 1;
		r->broke.legacy = json_is_true(json_object_get(b, "legacy"));
		if (get_text(b, "lane", r->broke.lane, HF_LANE_MAX) < 0 ||
		    get_text(b, "owner", r->broke.owner, HF_OWNER_MAX) < 0)
			r->broke.lane[0] = r->broke.owner[0] = '\0';
		if (get_time(b, "started", &r->broke.started_ms) < 0)
			r->broke.started_ms = 0;
		r->broke.age_s = json_is_integer(age) ? json_integer_value(age) : 0;
	}
out:
	json_decref(root);
	return rc;
}

int hf_session_parse(const char *buf, size_t len, struct hf_sessionlock_record *ret, char *why,
		     size_t n)
{
	struct hf_sessionlock_record r;
	memset(&r, 0, sizeof r);
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i == len)
		return unreadable(why, n, "empty (no record, no timestamp)");
	if (memchr(buf, '\0', len))
		return unreadable(why, n, "binary content (NUL bytes)");
	int rc;
	if (buf[i] == '{') {
		rc = parse_json(buf + i, len - i, &r, why, n);
	} else {
		/* SL2: the legacy form is honoured, never guessed at. Only len
		 * bytes are ours (buf need not end in NUL): a bounded copy. */
		char ts[80];
		rc = -EINVAL;
		if (len - i < sizeof ts) {
			memcpy(ts, buf + i, len - i);
			ts[len - i] = '\0';
			rc = hf_time_parse(ts, &r.started_ms);
		}
		if (rc < 0)
			rc = unreadable(why, n,
					"neither a JSON record nor an ISO-8601 timestamp");
		r.legacy = 1;
	}
	if (rc == 0)
		*ret = r;
	return rc;
}

int64_t hf_session_age_ms(const struct hf_sessionlock_record *r, int64_t now_ms)
{
	/* SL2: hf_owner_age_ms's rule - boot-relative on the writer's kernel
	 * and time namespace, else by the wall clock. */
	struct hf_owner o;
	memset(&o, 0, sizeof o);
	if (!r->legacy) {
		memcpy(o.boot_id, r->boot_id, sizeof o.boot_id);
		o.timens = r->timens;
		o.boot_ms = r->boot_ms;
	}
	o.time_ms = r->started_ms;
	return hf_owner_age_ms(&o, now_ms);
}

int hf_session_judge(const struct hf_sessionlock_record *r, int64_t now_ms, int64_t stale_ms,
		     int64_t *ret_age_ms)
{
	int64_t age = hf_session_age_ms(r, now_ms);
	if (stale_ms <= 0)
		stale_ms = HF_SESSION_STALE_MS_DEFAULT;
	if (ret_age_ms)
		*ret_age_ms = age;
	if (age < 0)
		return HF_SESSION_SKEW; /* SL2: by the wall clock only; live, clock skew */
	return age > stale_ms ? HF_SESSION_STALE : HF_SESSION_HELD;
}

/* The default path (holdfast.h): the top of the working directory's work
 * tree, for every backend (etcd names its key after it). */
int hf_session_default_path(char *buf, size_t n)
{
	char dir[PATH_MAX], probe[PATH_MAX + 8];
	int rc = hf_sys_getcwd(dir, sizeof dir);
	if (rc < 0)
		return rc;
	size_t len = strlen(dir);
	for (;;) {
		struct stat st;
		/* A .git directory (a work tree) or file (a linked work tree or a
		 * submodule) marks the top of the work tree. */
		snprintf(probe, sizeof probe, "%.*s/.git", (int)(len == 1 ? 0 : len), dir);
		if (hf_sys_fstatat(AT_FDCWD, probe, &st, 0) == 0 &&
		    (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			break;
		if (len == 1) { /* reached "/" without a work tree: the cwd */
			len = strlen(dir);
			break;
		}
		while (len > 1 && dir[len - 1] != '/')
			len--;
		if (len > 1)
			len--; /* drop the slash, keep "/" itself */
	}
	if ((size_t)snprintf(buf, n, "%.*s/%s", (int)(len == 1 ? 0 : len), dir,
			     HF_SESSION_FILE) >= n)
		return -ENAMETOOLONG;
	return 0;
}

void hf_session_stamp(struct hf_sessionlock_record *r)
{
	r->pid = hf_sys_getpid();
	snprintf(r->host, sizeof r->host, "%s", hf_host_name());
	snprintf(r->boot_id, sizeof r->boot_id, "%s", hf_boot_id());
	r->timens = hf_self_timens();
	r->boot_ms = hf_sys_boot_ms();
	r->started_ms = hf_sys_now_ms();
}
