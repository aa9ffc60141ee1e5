/*
 * etcd.c - a small etcd v3 client: libcurl and jansson over etcd's JSON
 * gateway (/v3/...) - its configuration from a backend URI, requests with
 * authentication and fail-over between members, watches, base64 and the
 * gateway's int64 fields - for every protocol kept in etcd (the lease,
 * etcdlease.c; the lock, etcdlock.c; the session, etcdsession.c; the scope
 * registry, etcdscope.c; the listing, etcdlist.c).
 *
 * Artifacts
 * ---------
 *   endpoint   "http://HOST:PORT" or "https://HOST:PORT" of one member; a
 *              backend lists one or more (hf_etcd_cfg_parse).
 *   request    one POST of a JSON object to /v3/<service>/<call> (kv/txn,
 *              kv/range, lease/grant, lease/keepalive, lease/revoke,
 *              auth/authenticate), answered with one JSON object; watch
 *              (/v3/watch) answers with a stream, one {"result":...} per
 *              line.
 *   gateway    keys and values are base64; int64 fields are JSON strings
 *              ("revision":"7"); proto3 defaults are omitted (a failed txn
 *              has no "succeeded", an empty range no "kvs", a PUT event no
 *              "type"); errors are {"error"|"message", "code": gRPC code}.
 *   auth token what /v3/auth/authenticate gives for a user and password,
 *              sent as the Authorization header; the password is read from
 *              a file (the first line), never from a command line.
 *
 * Steps of a request (hf_etcd_call)
 * ---------------------------------
 *   1. With a user and no token yet: authenticate (steps 2-4 for
 *      auth/authenticate), keep the token.
 *   2. POST to the current endpoint on the one curl handle (its connection
 *      is kept alive between requests), with a connect timeout and a total
 *      timeout.
 *   3. The connection could not be made (refused, unresolvable, connect
 *      timeout): the next endpoint, each at most once per request; the one
 *      that answered stays current. A request sent that got no answer in
 *      time fails (ET1), and the next request starts at the next endpoint.
 *   4. An answer: HTTP 200 with a JSON object is the result; an error
 *      object maps to a code (16 unauthenticated, or an invalid auth token:
 *      authenticate again once and repeat; 7 permission denied: -EACCES;
 *      5 not found: -ENOENT; else -EPROTO).
 *   5. "leader changed", "no leader", "request timed out" (14 unavailable,
 *      HTTP 503: an election, a lost quorum): the same request again after
 *      50, 100, 200 ... 800 ms, within the request's timeout; then -EIO.
 *      "the client connection is closing" (HTTP 408: the member shuts down)
 *      is a request sent without an answer: -EIO, the next request at the
 *      next endpoint.
 *
 * Invariants
 * ----------
 *   (ET1) A request once sent is never sent again to another endpoint: a
 *         timeout or a broken connection after sending is -EIO, because a
 *         txn or a revoke may have been applied (the caller looks again).
 *         Only etcd's own "not now" answers (step 5) are repeated, to the
 *         same endpoint; the lock's txn recognises its own put (EL1).
 *   (ET2) No message this file writes (why) holds a password, an auth
 *         token or a key's value: curl's error text (which names hosts,
 *         never our headers) and etcd's error message only.
 *   (ET3) Every request has a total timeout (request_ms) and every
 *         connection a connect timeout (connect_ms); a watch is bounded by
 *         its deadline and its cancel descriptor instead, and TCP
 *         keep-alive probes (after 2 s idle, every 1 s, 3 unanswered)
 *         end one whose member vanished without a FIN (a cut) in ~5 s.
 *   (ET4) The password lives in memory only while authenticating and is
 *         wiped (explicit_bzero) after; the token lives until close.
 *   (ET5) The password file is read only when it is a regular file that
 *         neither group nor others may read or write, opened with
 *         O_NOFOLLOW | O_NONBLOCK: a FIFO, directory, socket, device,
 *         symlink or a file others can read is refused at once (-EACCES,
 *         why naming it), never read and never waited on.
 *
 * Hazards
 * -------
 *   - After fork the child shares the parent's socket: hf_etcd_forget drops
 *     the curl handle unfreed (a small leak in a keeper) rather than close
 *     or reuse a connection the parent may still use.
 *   - A watch whose member lives but cannot reach the others (it is cut
 *     off with its client) stays open and quiet until the cut heals: the
 *     waiter could not take the lock there anyway.
 *   - etcd without auth answers any local user who can reach the port.
 */
#include "etcd.h"
#include "floor.h"

#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY_MAX (4u << 20)

struct hf_etcd {
	struct hf_etcd_cfg cfg;
	CURL *curl;
	size_t cur;        /* the endpoint that answered last               */
	char *token;       /* auth token (ET4)                              */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- config --------------------------------------------------------------- */

int hf_etcd_cfg_str(char **slot, const char *s)
{
	char *c = NULL;
	if (s && !(c = strdup(s)))
		return -ENOMEM;
	free(*slot);
	*slot = c;
	return 0;
}

void hf_etcd_cfg_clear(struct hf_etcd_cfg *cfg)
{
	for (size_t i = 0; i < cfg->n; i++)
		free(cfg->endpoints[i]);
	free(cfg->user);
	free(cfg->password_file);
	free(cfg->ca_file);
	memset(cfg, 0, sizeof *cfg);
}

/* HOST:PORT: a host of letters, digits, '.', '-', or [v6]; a port 1-65535. */
static bool hostport_ok(const char *s, size_t n)
{
	const char *colon = NULL;
	for (size_t i = 0; i < n; i++)
		if (s[i] == ':')
			colon = s + i;
	if (!colon || colon == s)
		return false;
	size_t hl = (size_t)(colon - s), pl = n - hl - 1;
	if (pl < 1 || pl > 5)
		return false;
	long port = 0;
	for (size_t i = 0; i < pl; i++) {
		if (colon[1 + i] < '0' || colon[1 + i] > '9')
			return false;
		port = port * 10 + (colon[1 + i] - '0');
	}
	if (port < 1 || port > 65535)
		return false;
	if (s[0] == '[')
		return s[hl - 1] == ']' && strspn(s + 1, "0123456789abcdefABCDEF:.") == hl - 2;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == hl;
}

int hf_etcd_cfg_parse(const char *uri, struct hf_etcd_cfg *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	const char *scheme;
	if (!strncmp(uri, "etcd://", 7))
		scheme = "http://", uri += 7;
	else if (!strncmp(uri, "etcds://", 8))
		scheme = "https://", uri += 8;
	else
		return -EINVAL;
	while (*uri) {
		size_t n = strcspn(uri, ",");
		const char *item = uri, *sch = scheme;
		if (n > 7 && !strncmp(item, "http://", 7))
			sch = "http://", item += 7, n -= 7;
		else if (n > 8 && !strncmp(item, "https://", 8))
			sch = "https://", item += 8, n -= 8;
		if (n && item[n - 1] == '/')
			n--;
		if (cfg->n == HF_ETCD_ENDPOINTS_MAX || !hostport_ok(item, n)) {
			hf_etcd_cfg_clear(cfg);
			return -EINVAL;
		}
		char *e = malloc(strlen(sch) + n + 1);
		if (!e) {
			hf_etcd_cfg_clear(cfg);
			return -ENOMEM;
		}
		sprintf(e, "%s%.*s", sch, (int)n, item);
		cfg->endpoints[cfg->n++] = e;
		uri = item + n + strspn(item + n, "/");
		if (*uri == ',')
			uri++;
		else if (*uri) {
			hf_etcd_cfg_clear(cfg);
			return -EINVAL;
		}
	}
	if (!cfg->n)
		return -EINVAL;
	cfg->connect_ms = HF_ETCD_CONNECT_MS_DEFAULT;
	cfg->request_ms = HF_ETCD_REQUEST_MS_DEFAULT;
	return 0;
}

static int cfg_copy(struct hf_etcd_cfg *dst, const struct hf_etcd_cfg *src)
{
	memset(dst, 0, sizeof *dst);
	int rc = 0;
	for (size_t i = 0; i < src->n && rc == 0; i++, dst->n++)
		rc = hf_etcd_cfg_str(&dst->endpoints[i], src->endpoints[i]);
	if (rc == 0)
		rc = hf_etcd_cfg_str(&dst->user, src->user);
	if (rc == 0)
		rc = hf_etcd_cfg_str(&dst->password_file, src->password_file);
	if (rc == 0)
		rc = hf_etcd_cfg_str(&dst->ca_file, src->ca_file);
	dst->connect_ms = src->connect_ms;
	dst->request_ms = src->request_ms;
	if (rc < 0)
		hf_etcd_cfg_clear(dst);
	return rc;
}

/* ---- base64, int64 ---------------------------------------------------------- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *hf_b64_encode(const void *p, size_t n)
{
	const unsigned char *s = p;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? s[i + 2] : 0);
		*o++ = B64[v >> 18 & 63];
		*o++ = B64[v >> 12 & 63];
		*o++ = i + 1 < n ? B64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? B64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

int hf_b64_decode(const char *s, char **ret, size_t *ret_n)
{
	size_t n = strlen(s);
	if (n % 4)
		return -EINVAL;
	char *out = malloc(n / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i += 4) {
		unsigned v = 0;
		int pad = 0;
		for (int j = 0; j < 4; j++) {
			char c = s[i + j];
			const char *at = c ? strchr(B64, c) : NULL;
			if (c == '=' && i + 4 == n && j >= 2 && (j == 3 || s[i + 3] == '=')) {
				pad++;
				v <<= 6;
				continue;
			}
			if (!at || pad) {
				free(out);
				return -EINVAL;
			}
			v = v << 6 | (unsigned)(at - B64);
		}
		out[k++] = (char)(v >> 16);
		if (pad < 2)
			out[k++] = (char)(v >> 8);
		if (pad < 1)
			out[k++] = (char)v;
	}
	out[k] = '\0';
	*ret = out;
	*ret_n = k;
	return 0;
}

int hf_etcd_i64(const json_t *obj, const char *field, int64_t *ret)
{
	json_t *v = json_object_get(obj, field);
	if (!v)
		return -ENOENT;
	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		return 0;
	}
	const char *s = json_string_value(v);
	if (!s || !*s || strlen(s) > 20)
		return -EINVAL;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (*end || errno)
		return -EINVAL;
	*ret = x;
	return 0;
}

/* ---- connection --------------------------------------------------------------- */

int hf_etcd_open(const struct hf_etcd_cfg *cfg, struct hf_etcd **ret)
{
	pthread_once(&curl_once, curl_init);
	struct hf_etcd *e = calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	int rc = cfg_copy(&e->cfg, cfg);
	if (rc < 0) {
		free(e);
		return rc;
	}
	*ret = e;
	return 0;
}

void hf_etcd_close(struct hf_etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	if (e->token) {
		explicit_bzero(e->token, strlen(e->token)); /* ET4 */
		free(e->token);
	}
	hf_etcd_cfg_clear(&e->cfg);
	free(e);
}

void hf_etcd_forget(struct hf_etcd *e)
{
	if (e)
		e->curl = NULL; /* the parent's: neither closed nor reused (hazard) */
}

int hf_etcd_again(int64_t deadline_ns, int cancel_fd, int broken)
{
	if (broken > HF_ETCD_RETRIES)
		return -EIO;
	int64_t ms = 100LL * broken;
	if (deadline_ns >= 0) {
		int64_t left = (deadline_ns - hf_sys_mono_ns()) / 1000000;
		if (left <= 0)
			return -EIO;
		if (ms > left)
			ms = left;
	}
	if (cancel_fd >= 0) {
		struct pollfd p = { .fd = cancel_fd, .events = POLLIN };
		if (hf_sys_poll(&p, 1, (int)ms) > 0)
			return p.revents & POLLNVAL ? -EBADF : HF_ECANCELED;
		return 0;
	}
	hf_sys_sleep_ms((int)ms);
	return 0;
}

size_t hf_etcd_endpoint(const struct hf_etcd *e)
{
	return e->cur;
}

void hf_etcd_prefer(struct hf_etcd *e, size_t i)
{
	e->cur = e->cfg.n ? i % e->cfg.n : 0;
}

void hf_etcd_cap_ms(struct hf_etcd *e, int64_t ms)
{
	if (ms < 100)
		ms = 100;
	if (e->cfg.request_ms > ms)
		e->cfg.request_ms = ms;
	if (e->cfg.connect_ms > ms)
		e->cfg.connect_ms = ms;
}

struct body {
	char *p;
	size_t n, cap;
	bool over;
};

static size_t body_write(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct body *b = ctx;
	size_t n = size * nmemb;
	if (b->n + n + 1 > BODY_MAX) {
		b->over = true;
		return 0;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q)
			return 0;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

/* The options every handle of ours gets (ET3). */
static void handle_setup(CURL *c, const struct hf_etcd_cfg *cfg)
{
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->connect_ms);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_PROXY, ""); /* never an environment's proxy */
	if (cfg->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
}

/* A connection failure, where nothing was sent (ET1: another may be tried). */
static bool unsent(CURL *c, CURLcode cc)
{
	curl_off_t connected = 0;
	if (cc == CURLE_OPERATION_TIMEDOUT &&
	    curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connected) == CURLE_OK)
		return connected == 0; /* timed out connecting */
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
	       cc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* etcd's error object: a code and the message into why. */
static int answer_error(const json_t *a, long http, const char *endpoint, char *why, size_t n,
			bool *reauth)
{
	const char *msg = json_string_value(json_object_get(a, "error"));
	if (!msg)
		msg = json_string_value(json_object_get(a, "message"));
	json_int_t code = json_integer_value(json_object_get(a, "code"));
	snprintf(why, n, "etcd %s: %s (HTTP %ld)", endpoint,
		 msg ? msg : "an error without a message", http);
	*reauth = code == 16 || (msg && strstr(msg, "invalid auth token"));
	if (http == 408 || (msg && strstr(msg, "client connection is closing")))
		return -EIO; /* the member is going away: sent, no answer (ET1) */
	if (code == 14 || http == 503 ||
	    (msg && (strstr(msg, "leader changed") || strstr(msg, "no leader") ||
		     strstr(msg, "request timed out"))))
		return -EAGAIN; /* an election or a lost quorum: step 5 */
	if (msg && (strstr(msg, "user name is empty") || strstr(msg, "invalid auth token"))) {
		snprintf(why, n, "etcd: %s: authentication is on, give a user and a password file",
			 msg);
		return -EACCES;
	}
	if (code == 7 || code == 16 || (msg && strstr(msg, "authentication failed")))
		return -EACCES;
	if (code == 5)
		return -ENOENT;
	return -EPROTO;
}

/* One POST of text to api at the endpoints (steps 2-4, without auth). */
static int post(struct hf_etcd *e, const char *api, const char *text, json_t **ret, char *why,
		size_t n, bool *reauth)
{
	*reauth = false;
	if (!e->curl && !(e->curl = curl_easy_init())) {
		snprintf(why, n, "etcd: no curl handle");
		return -ENOMEM;
	}
	CURL *c = e->curl;
	char err[CURL_ERROR_SIZE];
	int rc = -EIO;
	for (size_t k = 0; k < e->cfg.n; k++) {
		size_t i = (e->cur + k) % e->cfg.n;
		char url[512];
		snprintf(url, sizeof url, "%s%s", e->cfg.endpoints[i], api);
		curl_easy_reset(c);
		handle_setup(c, &e->cfg);
		struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
		char auth[1024];
		if (e->token && strcmp(api, "/v3/auth/authenticate")) {
			snprintf(auth, sizeof auth, "Authorization: %s", e->token);
			hdr = curl_slist_append(hdr, auth);
			explicit_bzero(auth, sizeof auth);
		}
		struct body b = { 0 };
		err[0] = '\0';
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->cfg.request_ms);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
		CURLcode cc = curl_easy_perform(c);
		curl_slist_free_all(hdr);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
		if (cc != CURLE_OK) {
			snprintf(why, n, "etcd %s: %s", e->cfg.endpoints[i],
				 err[0] ? err : curl_easy_strerror(cc)); /* ET2 */
			free(b.p);
			if (unsent(c, cc))
				continue; /* step 3 */
			e->cur = (i + 1) % e->cfg.n; /* the next request starts elsewhere */
			return -EIO;  /* ET1 */
		}
		e->cur = i;
		long http = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
		json_t *a = b.p ? json_loadb(b.p, b.n, 0, NULL) : NULL;
		free(b.p);
		if (!json_is_object(a)) {
			json_decref(a);
			snprintf(why, n, "etcd %s: an answer that is not a JSON object (HTTP %ld)",
				 e->cfg.endpoints[i], http);
			return http == 401 || http == 403 ? -EACCES : -EPROTO;
		}
		if (http != 200 || json_object_get(a, "error") ||
		    (json_object_get(a, "code") && json_object_get(a, "message"))) {
			rc = answer_error(a, http, e->cfg.endpoints[i], why, n, reauth);
			json_decref(a);
			if (rc == -EIO)
				e->cur = (i + 1) % e->cfg.n; /* the next request starts elsewhere */
			return rc;
		}
		if (hf_sys_point_fails(HF_PT_ETCD_ANSWER) < 0) {
			/* a test's: applied by etcd, its answer lost on the way */
			json_decref(a);
			snprintf(why, n, "etcd %s: the answer was lost", e->cfg.endpoints[i]);
			e->cur = (i + 1) % e->cfg.n;
			return -EIO;
		}
		*ret = a;
		return 0;
	}
	return rc;
}

static int authenticate(struct hf_etcd *e, char *why, size_t n)
{
	if (!e->cfg.password_file) {
		snprintf(why, n, "etcd: a user without a password file");
		return -EINVAL;
	}
	char *pw = NULL;
	size_t len = 0;
	/* ET5: a regular file of its owner's only, opened without blocking (a
	 * FIFO never stalls the verb) and never through a symlink */
	const char *pf = e->cfg.password_file;
	int fd = hf_sys_openat(AT_FDCWD, pf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	struct stat st;
	int rc = fd < 0 ? fd : hf_sys_fstat(fd, &st);
	if (rc == 0 && !S_ISREG(st.st_mode)) {
		snprintf(why, n, "etcd: the password file %s is %s, not a regular file: refused", pf,
			 S_ISFIFO(st.st_mode)  ? "a FIFO"
			 : S_ISDIR(st.st_mode) ? "a directory"
			 : S_ISSOCK(st.st_mode) ? "a socket"
						: "a device");
		rc = -EACCES;
	} else if (rc == 0 && (st.st_mode & 077)) {
		snprintf(why, n,
			 "etcd: the password file %s can be read or written by others (mode %04o): "
			 "refused; chmod 600 it",
			 pf, (unsigned)(st.st_mode & 07777));
		rc = -EACCES;
	} else if (rc == 0) {
		rc = hf_read_fd(fd, &st, 4096, &pw, &len);
	}
	if (fd >= 0)
		hf_sys_close(fd);
	if (rc < 0) {
		if (!(rc == -EACCES && why[0]))
			snprintf(why, n, "etcd: the password file %s: %s", pf,
				 rc == -ELOOP ? "a symbolic link (never followed)" : strerror(-rc));
		return rc;
	}
	pw[strcspn(pw, "\r\n")] = '\0';
	json_t *req = json_pack("{s:s, s:s}", "name", e->cfg.user, "password", pw);
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	if (req) { /* ET4: no copy of the password left behind */
		json_t *p = json_object_get(req, "password");
		json_string_set(p, "");
		json_decref(req);
	}
	explicit_bzero(pw, len);
	free(pw);
	if (!text)
		return -ENOMEM;
	json_t *a = NULL;
	bool reauth;
	rc = post(e, "/v3/auth/authenticate", text, &a, why, n, &reauth);
	explicit_bzero(text, strlen(text));
	free(text);
	if (rc < 0) {
		if (rc == -EACCES || rc == -EPROTO)
			snprintf(why, n, "etcd: authentication of user %s refused", e->cfg.user);
		return rc == -EPROTO ? -EACCES : rc;
	}
	const char *tok = json_string_value(json_object_get(a, "token"));
	if (!tok) {
		json_decref(a);
		snprintf(why, n, "etcd: authentication answered without a token");
		return -EPROTO;
	}
	char *t = strdup(tok);
	json_decref(a);
	if (!t)
		return -ENOMEM;
	if (e->token) {
		explicit_bzero(e->token, strlen(e->token));
		free(e->token);
	}
	e->token = t;
	return 0;
}

int hf_etcd_call(struct hf_etcd *e, const char *api, json_t *req, json_t **ret, char *why,
		 size_t n)
{
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!text) {
		snprintf(why, n, "etcd: no memory for a request");
		return -ENOMEM;
	}
	int rc = 0;
	if (e->cfg.user && !e->token)
		rc = authenticate(e, why, n); /* step 1 */
	bool reauth = false;
	if (rc == 0)
		rc = post(e, api, text, ret, why, n, &reauth);
	if (rc < 0 && reauth && e->cfg.user) { /* step 4: the token expired */
		rc = authenticate(e, why, n);
		if (rc == 0)
			rc = post(e, api, text, ret, why, n, &reauth);
	}
	/* step 5: the cluster is electing a leader (or has no quorum): again,
	 * backing off, until the request's own timeout has gone by (ET3) */
	int64_t until = hf_sys_mono_ns() + e->cfg.request_ms * 1000000LL;
	for (int delay = 50; rc == -EAGAIN && hf_sys_mono_ns() + delay * 1000000LL < until;
	     delay = delay < 800 ? delay * 2 : delay) {
		hf_sys_sleep_ms(delay);
		rc = post(e, api, text, ret, why, n, &reauth);
	}
	free(text);
	return rc == -EAGAIN ? -EIO : rc;
}

int hf_etcd_request(struct hf_etcd *e, const char *api, json_t *req, json_t **ret, char *why,
		    size_t n)
{
	json_t *a = NULL;
	int rc = hf_etcd_call(e, api, req, &a, why, n);
	if (rc == 0 && ret)
		*ret = a;
	else
		json_decref(a);
	return rc;
}

/* ---- watch ---------------------------------------------------------------------- */

struct stream {
	struct body b;
	size_t done;     /* bytes of b consumed (whole lines)           */
	bool event;      /* an event arrived                            */
	bool canceled;   /* the server ended the watch                  */
	char err[HF_ETCD_WHY_MAX];
};

static size_t stream_write(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct stream *s = ctx;
	size_t n = size * nmemb;
	if (body_write(data, size, nmemb, &s->b) != n)
		return 0;
	char *nl;
	while ((nl = memchr(s->b.p + s->done, '\n', s->b.n - s->done))) {
		json_t *o = json_loadb(s->b.p + s->done, (size_t)(nl - s->b.p - s->done), 0, NULL);
		json_t *r = json_object_get(o, "result");
		if (!r && o) {
			const char *m = json_string_value(json_object_get(o, "error"));
			snprintf(s->err, sizeof s->err, "etcd watch: %s", m ? m : "an error");
			s->canceled = true;
		}
		json_t *ev = json_object_get(r, "events");
		if (json_array_size(ev) > 0)
			s->event = true;
		if (json_is_true(json_object_get(r, "canceled")) ||
		    json_object_get(r, "compact_revision"))
			s->canceled = true; /* the caller looks again */
		json_decref(o);
		s->done = (size_t)(nl - s->b.p) + 1;
	}
	if (s->done == s->b.n) /* all consumed: start the buffer over */
		s->b.n = s->done = 0;
	return n;
}

#define WATCH_PROBE_IDLE_S 2
#define WATCH_PROBE_INTVL_S 1
#define WATCH_PROBE_COUNT 3

/* A watch's socket gives up after WATCH_PROBE_COUNT unanswered keep-alive
 * probes (curl 7.88 has no option for the count). curl's own socket: not
 * a file or process call of ours, so not through the seam. */
static int watch_sockopt(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
	(void)ctx;
	if (purpose == CURLSOCKTYPE_IPCXN) {
		int n = WATCH_PROBE_COUNT;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &n, sizeof n);
	}
	return CURL_SOCKOPT_OK;
}

int hf_etcd_watch(struct hf_etcd *e, const char *key, size_t klen, int64_t from_rev,
		  int64_t deadline_ns, int cancel_fd, char *why, size_t n)
{
	return hf_etcd_watch_range(e, key, klen, NULL, 0, from_rev, deadline_ns, cancel_fd, why,
				   n);
}

int hf_etcd_watch_range(struct hf_etcd *e, const char *key, size_t klen, const char *end,
			size_t elen, int64_t from_rev, int64_t deadline_ns, int cancel_fd,
			char *why, size_t n)
{
	int rc = 0;
	if (e->cfg.user && !e->token && (rc = authenticate(e, why, n)) < 0)
		return rc;
	char *k = hf_b64_encode(key, klen), *k_end = end ? hf_b64_encode(end, elen) : NULL;
	char rev[24];
	snprintf(rev, sizeof rev, "%lld", (long long)from_rev);
	json_t *cr = k && (!end || k_end) ? json_pack("{s:s, s:s}", "key", k, "start_revision",
						      rev)
					  : NULL;
	if (cr && end)
		json_object_set_new(cr, "range_end", json_string(k_end));
	json_t *req = cr ? json_pack("{s:o}", "create_request", cr) : NULL;
	free(k);
	free(k_end);
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	CURL *c = text ? curl_easy_init() : NULL;
	CURLM *m = c ? curl_multi_init() : NULL;
	if (!m) {
		free(text);
		if (c)
			curl_easy_cleanup(c);
		return -ENOMEM;
	}
	char url[512], auth[1024], err[CURL_ERROR_SIZE] = "";
	snprintf(url, sizeof url, "%s/v3/watch", e->cfg.endpoints[e->cur]);
	handle_setup(c, &e->cfg);
	/* ET3: a stream is silent while nothing changes; probes find a member
	 * that went away without a FIN (cut off) in about 5 s */
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, (long)WATCH_PROBE_IDLE_S);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, (long)WATCH_PROBE_INTVL_S);
	curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, watch_sockopt);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (e->token) {
		snprintf(auth, sizeof auth, "Authorization: %s", e->token);
		hdr = curl_slist_append(hdr, auth);
		explicit_bzero(auth, sizeof auth);
	}
	struct stream s = { 0 };
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	curl_multi_add_handle(m, c);
	int running = 1;
	rc = 0;
	for (;;) {
		CURLMcode mc = curl_multi_perform(m, &running);
		if (s.event || s.canceled)
			break; /* 0: look again */
		if (mc != CURLM_OK || !running) {
			CURLMsg *msg;
			int left;
			CURLcode cc = CURLE_OK;
			while ((msg = curl_multi_info_read(m, &left)))
				if (msg->msg == CURLMSG_DONE)
					cc = msg->data.result;
			snprintf(why, n, "etcd %s: the watch ended: %s", e->cfg.endpoints[e->cur],
				 cc != CURLE_OK ? (err[0] ? err : curl_easy_strerror(cc))
						: "closed by the server");
			e->cur = (e->cur + 1) % e->cfg.n; /* the next request starts elsewhere */
			rc = -EIO;
			break;
		}
		int64_t left_ms = -1;
		if (deadline_ns >= 0) {
			int64_t left = deadline_ns - hf_sys_mono_ns();
			if (left <= 0) {
				rc = HF_ETIMEDOUT;
				break;
			}
			left_ms = (left + 999999) / 1000000;
		}
		long ct = -1;
		curl_multi_timeout(m, &ct);
		int wait = left_ms < 0 || left_ms > 60000 ? 60000 : (int)left_ms;
		if (ct >= 0 && ct < wait)
			wait = (int)ct;
		struct curl_waitfd extra = { .fd = cancel_fd, .events = CURL_WAIT_POLLIN };
		int nfds = 0;
		curl_multi_poll(m, cancel_fd >= 0 ? &extra : NULL, cancel_fd >= 0 ? 1 : 0, wait,
				&nfds);
		if (cancel_fd >= 0) {
			struct pollfd p = { .fd = cancel_fd, .events = POLLIN };
			if (hf_sys_poll(&p, 1, 0) > 0) {
				rc = p.revents & POLLNVAL ? -EBADF : HF_ECANCELED;
				break;
			}
		}
	}
	if (s.canceled && !s.event && s.err[0])
		snprintf(why, n, "%s", s.err);
	curl_multi_remove_handle(m, c);
	curl_easy_cleanup(c);
	curl_multi_cleanup(m);
	curl_slist_free_all(hdr);
	free(s.b.p);
	free(text);
	return rc;
}
