/* --json on every command and subcommand, run through a real shell as a
 * script would (sh, bash, dash), success and failure: stdout is checked by
 * ONE schema checker (check_one): exactly one JSON object on one line; an
 * error object has exactly the keys error, exit, message, path, holder with
 * their types, "exit" is the process's exit status and "error" a name of the
 * documented vocabulary (README, "Machine output"); a failure never has a
 * top-level "token"; every path absolute, every *_ms an integer, every time
 * ISO-8601 UTC, no age_s anywhere. */
#include "hft.h"
#include "internal.h"
#include "text.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;
static char env[PATH_MAX + 64];
static pid_t sleepers[4];
static int nsleepers;

static void setup(void)
{
	dir = hft_tmpdir();
	snprintf(env, sizeof env, "HOLDFAST_REGISTRY=%s/reg/scope.lock", dir);
	char reg[PATH_MAX];
	snprintf(reg, sizeof reg, "%s/reg", dir);
	cr_assert_eq(mkdir(reg, 0700), 0);
	nsleepers = 0;
}

static void teardown(void)
{
	for (int i = 0; i < nsleepers; i++) {
		kill(sleepers[i], SIGKILL);
		waitpid(sleepers[i], NULL, 0);
	}
	hft_rmtree(dir);
	free(dir);
}

TestSuite(json, .init = setup, .fini = teardown, .timeout = 120);

/* A live process to hold locks and scopes for (--pid): another owner than
 * the shell that runs the command under test. Killed at teardown. */
static pid_t sleeper(void)
{
	cr_assert_lt(nsleepers, 4);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	sleepers[nsleepers++] = pid;
	return pid;
}

/* Run a script with shell in the scratch directory ($H is the binary);
 * its exit status, stdout and stderr (malloc'd). */
static int sh_in(const char *shell, char **out, char **err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int sh_in(const char *shell, char **out, char **err, const char *fmt, ...)
{
	char line[8192], script[8192 + PATH_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	snprintf(script, sizeof script, "H=\"$HOLDFAST_BIN\"; cd '%s' || exit 99; %s", dir, line);
	return hft_sh(out, err, shell, env, script);
}

/* ------------------------------------------------------------------------
 * The one schema checker
 * ---------------------------------------------------------------------- */

static const char *const vocabulary[] = {
	/* the library's outcomes (hf_error_name) */
	"held", "unreadable", "not_held", "not_yours", "timed_out", "conflict", "unsafe", "barrier",
	"lost", "canceled",
	/* the CLI's own */
	"usage", "no_process", "stopped_by_signal", "cmd_ended", "empty_output", "no_git", "software", "os",
	"cannot_create", "io", "failed", NULL
};

static bool known_code(const char *s)
{
	for (int i = 0; vocabulary[i]; i++)
		if (!strcmp(s, vocabulary[i]))
			return true;
	/* an errno's symbol, as hf_error_name gives it ("ENOENT") */
	if (s[0] != 'E' || !s[1])
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* YYYY-MM-DDTHH:MM:SS[.fff]Z, and a time the parser takes. */
static bool iso_utc(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	size_t n = strlen(shape);
	if (strlen(s) < n + 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return false;
	const char *p = s + n;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	int64_t ms;
	return !strcmp(p, "Z") && hf_time_parse(s, &ms) == 0;
}

static void walk(json_t *v, const char *key, const char *what)
{
	const char *k;
	json_t *c;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach(v, k, c) {
			cr_assert(strcmp(k, "age_s"), "%s: age_s (ages are age_ms)", what);
			walk(c, k, what);
		}
		return;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, c)
			walk(c, key, what);
		return;
	}
	if (!key)
		return;
	if (ends_with(key, "_ms"))
		cr_assert(json_is_integer(v), "%s: %s is not an integer", what, key);
	static const char *const paths[] = { "path", "file", "lock", "registry", "dir", "canonical",
					     NULL };
	for (int p = 0; paths[p]; p++)
		if (!strcmp(key, paths[p]) && json_is_string(v))
			cr_assert_eq(json_string_value(v)[0], '/', "%s: %s '%s' is not absolute", what,
				     key, json_string_value(v));
	static const char *const times[] = { "acquired", "started", "registered", "mtime", NULL };
	for (int t = 0; times[t]; t++)
		if (!strcmp(key, times[t]) && json_is_string(v))
			cr_assert(iso_utc(json_string_value(v)), "%s: %s '%s' is not ISO-8601 UTC",
				  what, key, json_string_value(v));
}

/* stdout of one invocation that ended with status: exactly one object on
 * one line, valid by the schema. The object (to decref). */
static json_t *check_one(const char *out, int status, const char *what)
{
	cr_assert_not_null(out, "%s: no stdout", what);
	size_t n = strlen(out);
	cr_assert(n > 1 && out[n - 1] == '\n', "%s: not one line ending in a newline: '%s'", what,
		  out);
	cr_assert_eq(strchr(out, '\n'), out + n - 1, "%s: more than one line: '%s'", what, out);
	json_error_t e;
	json_t *o = json_loads(out, JSON_REJECT_DUPLICATES, &e);
	cr_assert_not_null(o, "%s: not JSON (%s): '%s'", what, e.text, out);
	cr_assert(json_is_object(o), "%s: not an object: '%s'", what, out);
	walk(o, NULL, what);
	json_t *x = json_object_get(o, "exit");
	if (x)
		cr_assert(json_is_integer(x) && json_integer_value(x) == status,
			  "%s: \"exit\" is not the exit status %d: '%s'", what, status, out);
	json_t *err = json_object_get(o, "error");
	if (err) {
		cr_assert_eq(json_object_size(o), 5, "%s: an error object has exactly error, exit, "
			     "message, path, holder: '%s'", what, out);
		cr_assert(json_is_string(err) && known_code(json_string_value(err)),
			  "%s: error is not a documented code: '%s'", what, out);
		cr_assert_not_null(x, "%s: no exit: '%s'", what, out);
		json_t *m = json_object_get(o, "message"), *p = json_object_get(o, "path"),
		       *h = json_object_get(o, "holder");
		cr_assert(json_is_string(m) && json_string_length(m) > 0, "%s: message: '%s'", what,
			  out);
		cr_assert(p && (json_is_null(p) || (json_is_string(p) &&
						    json_string_value(p)[0] == '/')),
			  "%s: path: '%s'", what, out);
		cr_assert(h && (json_is_null(h) || json_is_object(h)), "%s: holder: '%s'", what, out);
		cr_assert_null(json_object_get(o, "token"), "%s: a token at the top of a failure", what);
	} else if (status != 0) {
		/* an answer with a non-zero exit (check, assert-held, run's CMD)
		 * says so itself */
		cr_assert_not_null(x, "%s: exit %d without \"error\" or \"exit\": '%s'", what, status,
				   out);
		cr_assert_null(json_object_get(o, "token"), "%s: a token at the top of exit %d", what,
			       status);
	}
	return o;
}

/* Run one command line with --json through shell; the checked object. */
static json_t *jrun(const char *shell, int want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static json_t *jrun(const char *shell, int want, const char *fmt, ...)
{
	char line[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	char *out, *err;
	int st = sh_in(shell, &out, &err, "%s", line);
	cr_assert_eq(st, want, "%s: %s: exit %d, not %d; stdout '%s' stderr '%s'", shell, line, st,
		     want, out, err);
	json_t *o = check_one(out, st, line);
	/* stderr keeps the human words: a failure's message is on it too
	 * (a usage error that printed only the usage text says so) */
	json_t *m = json_object_get(o, "message");
	if (m && !(!strncmp(json_string_value(m), "usage: the command line was refused", 35) &&
		   !strncmp(err, "usage: ", 7)))
		cr_assert(strstr(err, json_string_value(m)), "%s: the message is not stderr's: '%s' / '%s'",
			  line, json_string_value(m), err);
	free(out);
	free(err);
	return o;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static long long num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	cr_assert(json_is_integer(v), "%s is not an integer", key);
	return json_integer_value(v);
}

/* An error object named code. */
static void is_error(json_t *o, const char *code)
{
	cr_assert_str_eq(str(o, "error"), code, "error %s, not %s", str(o, "error"), code);
}

static char *at(const char *name)
{
	char *p;
	cr_assert_gt(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

/* ------------------------------------------------------------------------
 * One case: a command line, its exit, and what its object says
 * ---------------------------------------------------------------------- */

/* What a case's object must say; a field left NULL (0) is not checked. */
struct expect {
	const char *error;       /* an error object named so */
	const char *path;        /* its "path" */
	const char *file;        /* its "file" */
	const char *key, *val;   /* a string field: answer, state, result, name... */
	const char *holder, *is; /* a string field of the nested "holder" */
	pid_t holder_pid;        /* the holder's pid */
	const char *yes;         /* a field that is true: released, replaced */
};
#define EXPECT(...) ((struct expect){ __VA_ARGS__ })

static void expect_of(json_t *o, struct expect e, const char *line)
{
	if (e.error)
		is_error(o, e.error);
	if (e.path)
		cr_assert_str_eq(str(o, "path"), e.path, "%s: path %s, not %s", line, str(o, "path"),
				 e.path);
	if (e.file)
		cr_assert_str_eq(str(o, "file"), e.file, "%s: file %s, not %s", line, str(o, "file"),
				 e.file);
	if (e.key)
		cr_assert_str_eq(str(o, e.key), e.val, "%s: %s %s, not %s", line, e.key, str(o, e.key),
				 e.val);
	json_t *h = json_object_get(o, "holder");
	if (e.holder)
		cr_assert_str_eq(str(h, e.holder), e.is, "%s: the holder's %s %s, not %s", line,
				 e.holder, str(h, e.holder), e.is);
	if (e.holder_pid)
		cr_assert_eq(num(h, "pid"), e.holder_pid, "%s: the holder's pid", line);
	if (e.yes)
		cr_assert(json_is_true(json_object_get(o, e.yes)), "%s: %s is not true", line, e.yes);
}

static void vjcase(const char *shell, int want, struct expect e, const char *fmt, va_list ap)
{
	char line[8192];
	vsnprintf(line, sizeof line, fmt, ap);
	json_t *o = jrun(shell, want, "%s", line);
	expect_of(o, e, line);
	json_decref(o);
}

/* Run the line through shell: exit want, the object as e says. */
static void jcase(const char *shell, int want, struct expect e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void jcase(const char *shell, int want, struct expect e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vjcase(shell, want, e, fmt, ap);
	va_end(ap);
}

/* A line refused as usage: exit 64, the error object "usage". */
static void jusage(const char *shell, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jusage(const char *shell, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vjcase(shell, 64, EXPECT(.error = "usage"), fmt, ap);
	va_end(ap);
}

/* Acquire L for pid (a sleeper): its token. */
static char *hold_lock(const char *name, pid_t pid)
{
	json_t *o = jrun("sh", 0, "\"$H\" lock acquire %s --pid %d --json", name, (int)pid);
	char *tok = strdup(str(o, "token"));
	cr_assert_eq(strlen(tok), 32);
	json_decref(o);
	return tok;
}

/* A sleeper holding name: the sleeper's pid, its token in *tok. */
static pid_t held_by_sleeper(const char *name, char **tok)
{
	pid_t s = sleeper();
	*tok = hold_lock(name, s);
	return s;
}

/* ------------------------------------------------------------------------
 * lock
 * ---------------------------------------------------------------------- */

Test(json, lock_acquire_release_objects)
{
	pid_t s = sleeper();
	json_t *o = jrun("sh", 0, "\"$H\" lock acquire L --pid %d --json", (int)s);
	char *L = at("L");
	cr_assert_str_eq(str(o, "path"), L);
	cr_assert_eq(num(o, "pid"), s);
	cr_assert_gt(num(o, "fence"), 0);
	cr_assert_str_eq(str(o, "state"), "held");
	cr_assert(iso_utc(str(o, "acquired")));
	char *tok = strdup(str(o, "token"));
	json_decref(o);
	jcase("bash", 0, EXPECT(.path = L, .yes = "released"),
	      "\"$H\" lock release L --token %s --json", tok);
	jcase("dash", 69, EXPECT(.error = "not_held", .path = L),
	      "\"$H\" lock release L --token %s --json", tok);
	jusage("sh", "\"$H\" lock release L --json");
	free(tok);
	free(L);
}

/* The regression: a refused acquire printed the HOLDER's record in the
 * shape of a success, and a script that skipped $? took its token. */
Test(json, failed_acquire_nests_the_holder_and_has_no_token)
{
	char *tok;
	pid_t s = held_by_sleeper("L", &tok);
	const char *shells[] = { "sh", "bash", "dash" };
	for (int i = 0; i < 3; i++) {
		json_t *o = jrun(shells[i], 1, "\"$H\" lock acquire L -n --json");
		/* the holder's record, nested */
		expect_of(o, EXPECT(.error = "held", .holder = "token", .is = tok, .holder_pid = s),
			  shells[i]);
		cr_assert_null(json_object_get(o, "token"));
		json_decref(o);
	}
	/* -E: the object's exit is the process's */
	jcase("bash", 7, EXPECT(.error = "held"), "\"$H\" lock acquire L -n -E 7 --json");
	/* a bounded wait: timed out, the holder nested */
	jcase("sh", 1, EXPECT(.error = "timed_out", .holder = "token", .is = tok),
	      "\"$H\" lock acquire L -w 50ms --json");
	/* a script that skips $? and takes .token gets nothing to release with */
	char *out;
	int st = sh_in("bash", &out, NULL,
		       "t=$(\"$H\" lock acquire L -n --json | sed -n 's/^{\"token\":\"\\([0-9a-f]*\\)\".*/\\1/p'); "
		       "echo \"[$t]\"");
	cr_assert_eq(st, 0);
	cr_assert_str_eq(out, "[]\n");
	free(out);
	/* still the sleeper's */
	jcase("sh", 0, EXPECT(.key = "answer", .val = "yours"),
	      "\"$H\" lock check L --token %s --json", tok);
	free(tok);
}

Test(json, lock_check_answers_with_its_exit_code)
{
	json_t *o = jrun("sh", 69, "\"$H\" lock check L --json");
	cr_assert_str_eq(str(o, "answer"), "free");
	cr_assert(json_is_null(json_object_get(o, "holder")));
	json_decref(o);
	/* a token's check of a free lock: state free, as without the token */
	jcase("dash", 69, EXPECT(.key = "state", .val = "free"),
	      "\"$H\" lock check L --token 0123456789abcdef0123456789abcdef --json");
	char *tok;
	held_by_sleeper("L", &tok);
	jcase("dash", 0, EXPECT(.key = "answer", .val = "held", .holder = "token", .is = tok),
	      "\"$H\" lock check L --json");
	jcase("bash", 0, EXPECT(.key = "answer", .val = "yours"),
	      "\"$H\" lock check L --token \"%s 1\" --json", tok);
	jcase("sh", 1, EXPECT(.key = "answer", .val = "another"),
	      "\"$H\" lock check L --token 0123456789abcdef0123456789abcdef --json");
	jusage("sh", "\"$H\" lock check L --token nonsense --json");
	free(tok);
}

Test(json, lock_status_release_not_yours)
{
	jcase("sh", 0, EXPECT(.key = "state", .val = "free"), "\"$H\" lock status L --json");
	char *tok;
	held_by_sleeper("L", &tok);
	json_t *o = jrun("sh", 0, "\"$H\" lock status L --json");
	cr_assert_str_eq(str(o, "state"), "held");
	cr_assert_geq(num(o, "age_ms"), 0);
	json_decref(o);
	jcase("bash", 1, EXPECT(.error = "not_yours", .holder = "token", .is = tok),
	      "\"$H\" lock release L --token 0123456789abcdef0123456789abcdef --json");
	jusage("sh", "\"$H\" lock status --json");
	free(tok);
}

Test(json, lock_unreadable_and_unsafe)
{
	char *u = at("U"), *owner = at("U/owner"), *v = at("V.holdfast");
	cr_assert_eq(mkdir(u, 0700), 0);
	hft_write(owner, "garbage\n");
	json_t *o = jrun("sh", 65, "\"$H\" lock acquire U -n --json");
	expect_of(o, EXPECT(.error = "unreadable", .path = u), "lock acquire U");
	cr_assert_not_null(json_object_get(json_object_get(o, "holder"), "reason"));
	json_decref(o);
	cr_assert_eq(mkdir(v, 0700), 0);
	cr_assert_eq(chmod(v, 0777), 0);
	jcase("dash", 77, EXPECT(.error = "unsafe"), "\"$H\" lock acquire V -n --json");
	free(u);
	free(owner);
	free(v);
}

/* ------------------------------------------------------------------------
 * session
 * ---------------------------------------------------------------------- */

Test(json, session_every_subcommand)
{
	char *file = at(".session.lock");
	jcase("sh", 0, EXPECT(.key = "lane", .val = "a", .file = file),
	      "\"$H\" session take --lane a --json");
	jcase("bash", 1, EXPECT(.error = "held", .path = file, .holder = "lane", .is = "a"),
	      "\"$H\" session take --lane b --json");
	json_t *o = jrun("dash", 0, "\"$H\" session status --json");
	cr_assert_str_eq(str(o, "state"), "held");
	cr_assert_geq(num(o, "age_ms"), 0);
	json_decref(o);
	jcase("sh", 0, EXPECT(.key = "answer", .val = "yours"), "\"$H\" session assert-held a --json");
	jcase("sh", 1, EXPECT(.key = "answer", .val = "another"),
	      "\"$H\" session assert-held b --json");
	jcase("sh", 1, EXPECT(.error = "not_yours", .holder = "lane", .is = "a"),
	      "\"$H\" session release --lane b --json");
	jcase("bash", 0, EXPECT(.yes = "released"), "\"$H\" session release --lane a --json");
	jcase("sh", 69, EXPECT(.error = "not_held"), "\"$H\" session release --lane a --json");
	jcase("dash", 69, EXPECT(.key = "answer", .val = "free"),
	      "\"$H\" session assert-held a --json");
	jusage("sh", "\"$H\" session take --json");
	jusage("sh", "\"$H\" session bogus --json");
	free(file);
}

Test(json, session_take_breaking_a_stale_lock_says_age_ms)
{
	char *file = at(".session.lock");
	hft_write(file, "2020-01-01T00:00:00Z\n"); /* a legacy lock, long stale */
	json_t *o = jrun("sh", 0, "\"$H\" session take --lane a --json");
	json_t *broke = json_object_get(o, "broke");
	cr_assert_not_null(broke, "the broken lock is named");
	cr_assert_gt(num(broke, "age_ms"), 86400000LL);
	json_decref(o);
	free(file);
}

Test(json, session_unreadable)
{
	char *file = at(".session.lock");
	hft_write(file, "junk");
	jcase("sh", 65, EXPECT(.error = "unreadable", .holder = "state", .is = "unreadable"),
	      "\"$H\" session take --lane a --json");
	jcase("bash", 65, EXPECT(.key = "state", .val = "unreadable"), "\"$H\" session status --json");
	jcase("dash", 65, EXPECT(.key = "answer", .val = "unreadable"),
	      "\"$H\" session assert-held a --json");
	jcase("sh", 65, EXPECT(.error = "unreadable"), "\"$H\" session release --lane a --json");
	free(file);
}

Test(json, session_race)
{
	char *race = at("race");
	cr_assert_eq(mkdir(race, 0700), 0);
	json_t *o = jrun("sh", 0, "\"$H\" session race --procs 2 --runs 2 --dir race --json");
	cr_assert_eq(json_array_size(json_object_get(o, "holders")), 2);
	json_decref(o);
	jusage("sh", "\"$H\" session race --procs 0 --json");
	free(race);
}

/* ------------------------------------------------------------------------
 * scope
 * ---------------------------------------------------------------------- */

Test(json, scope_every_subcommand)
{
	pid_t a = sleeper(), b = sleeper();
	char *reg = at("reg/scope.lock");
	json_t *o = jrun("sh", 0, "\"$H\" scope register A \"$PWD/p:write\" --pid %d --json", (int)a);
	cr_assert_str_eq(str(o, "name"), "A");
	cr_assert(iso_utc(str(o, "registered")));
	json_decref(o);
	jcase("bash", 1, EXPECT(.error = "conflict", .path = reg, .holder = "name", .is = "A"),
	      "\"$H\" scope register B \"$PWD/p/q:write\" --pid %d --json", (int)b);
	jusage("sh", "\"$H\" scope register B bad-spec --pid %d --json", (int)b);
	o = jrun("dash", 0, "\"$H\" scope list --json");
	cr_assert_str_eq(str(o, "registry"), reg);
	cr_assert_eq(json_array_size(json_object_get(o, "allocations")), 1);
	json_decref(o);
	jcase("sh", 0, EXPECT(.key = "name", .val = "A"), "\"$H\" scope effective A --json");
	jcase("sh", 69, EXPECT(.error = "not_held"), "\"$H\" scope effective nope --json");
	jcase("sh", 1, EXPECT(.key = "state", .val = "held", .holder = "name", .is = "A"),
	      "\"$H\" scope check p/f --json");
	jcase("bash", 0, EXPECT(.key = "state", .val = "free"), "\"$H\" scope check elsewhere --json");
	jusage("sh", "\"$H\" scope check --json");
	jcase("sh", 0, EXPECT(.yes = "released"), "\"$H\" scope release A --json");
	jcase("dash", 69, EXPECT(.error = "not_held"), "\"$H\" scope release A --json");
	o = jrun("sh", 0, "\"$H\" scope reap --json");
	cr_assert(json_is_array(json_object_get(o, "reaped")));
	json_decref(o);
	free(reg);
}

Test(json, scope_unreadable_and_unsafe)
{
	char *reg = at("reg/scope.lock"), *open = at("open");
	hft_write(reg, "junk");
	jcase("sh", 65, EXPECT(.error = "unreadable", .path = reg), "\"$H\" scope list --json");
	cr_assert_eq(mkdir(open, 0700), 0);
	cr_assert_eq(chmod(open, 0777), 0);
	jcase("bash", 77, EXPECT(.error = "unsafe"),
	      "HOLDFAST_REGISTRY=\"$PWD/open/scope.lock\" \"$H\" scope list --json");
	free(reg);
	free(open);
}

/* ------------------------------------------------------------------------
 * run, edit: CMD's output first, then the object
 * ---------------------------------------------------------------------- */

/* stdout = prefix (CMD's) + one object. */
static json_t *jrun_after(const char *shell, int want, const char *prefix, const char *line)
{
	char *out, *err;
	int st = sh_in(shell, &out, &err, "%s", line);
	cr_assert_eq(st, want, "%s: exit %d: %s / %s", line, st, out, err);
	size_t n = strlen(prefix);
	cr_assert(!strncmp(out, prefix, n), "%s: CMD's output '%s' first: '%s'", line, prefix, out);
	json_t *o = check_one(out + n, st, line);
	free(out);
	free(err);
	return o;
}

Test(json, run_reports_what_was_held_after_cmd)
{
	char *L = at("L");
	json_t *o = jrun_after("sh", 3, "cmd-out\n",
			       "\"$H\" run --json --lock L --session s1 --scope \"$PWD/p:write\" -- "
			       "sh -c 'echo cmd-out; exit 3'");
	json_t *locks = json_object_get(o, "locks"), *cmd = json_object_get(o, "cmd");
	cr_assert_eq(json_array_size(locks), 1);
	cr_assert_str_eq(str(json_array_get(locks, 0), "path"), L);
	cr_assert_eq(strlen(str(json_array_get(locks, 0), "token")), 32);
	cr_assert_gt(num(json_array_get(locks, 0), "fence"), 0);
	cr_assert_str_eq(str(json_object_get(o, "session"), "lane"), "s1");
	cr_assert(str(json_object_get(o, "scope"), "name")[0]);
	cr_assert_eq(num(cmd, "exit"), 3);
	cr_assert(json_is_null(json_object_get(cmd, "signal")));
	cr_assert_gt(num(cmd, "pid"), 0);
	json_decref(o);
	/* a signal */
	o = jrun_after("bash", 128 + SIGTERM, "", "\"$H\" run --json -- sh -c 'kill -TERM $$'");
	cmd = json_object_get(o, "cmd");
	cr_assert(json_is_null(json_object_get(cmd, "exit")));
	cr_assert_str_eq(str(cmd, "signal"), "SIGTERM");
	json_decref(o);
	/* --json after "--" is CMD's: no object */
	char *out;
	cr_assert_eq(sh_in("dash", &out, NULL, "\"$H\" run -- echo --json"), 0);
	cr_assert_str_eq(out, "--json\n");
	free(out);
	free(L);
}

Test(json, run_refusals_are_error_objects)
{
	char *tok, *ran = at("ran");
	held_by_sleeper("L", &tok);
	jcase("sh", 1, EXPECT(.error = "held", .holder = "token", .is = tok),
	      "\"$H\" run --json -n --lock L -- touch ran");
	cr_assert(!hft_exists(ran), "a refusal never runs CMD");
	/* -E 0: the error object says exit 0, as the process does */
	jcase("bash", 0, EXPECT(.error = "held"), "\"$H\" run --json -n -E 0 --lock L -- touch ran");
	cr_assert(!hft_exists(ran));
	jusage("dash", "\"$H\" run --json");
	jusage("sh", "\"$H\" run --bogus --json -- true");
	free(tok);
	free(ran);
}

Test(json, edit_every_outcome)
{
	char *f = at("f"), *lock = at("f.lock");
	hft_write(f, "hello\n");
	json_t *o = jrun("sh", 0, "\"$H\" edit f --json -- tr a-z A-Z");
	expect_of(o, EXPECT(.file = f, .yes = "replaced"), "edit f");
	cr_assert_str_eq(str(json_object_get(o, "lock"), "path"), lock);
	cr_assert_eq(strlen(str(json_object_get(o, "lock"), "token")), 32);
	cr_assert_gt(num(json_object_get(o, "lock"), "fence"), 0);
	cr_assert_eq(num(json_object_get(o, "cmd"), "exit"), 0);
	json_decref(o);
	char *now = hft_slurp(f);
	cr_assert_str_eq(now, "HELLO\n");
	free(now);
	o = jrun("bash", 4, "\"$H\" edit f --json -- sh -c 'exit 4'");
	cr_assert(json_is_false(json_object_get(o, "replaced")));
	json_decref(o);
	jcase("dash", 65, EXPECT(.error = "empty_output", .path = f), "\"$H\" edit f --json -- true");
	char *lnk = at("lnk");
	cr_assert_eq(symlink("f", lnk), 0);
	jcase("sh", 77, EXPECT(.error = "unsafe", .path = lnk), "\"$H\" edit lnk --json -- cat");
	char *tok;
	held_by_sleeper("f.lock", &tok);
	jcase("bash", 1, EXPECT(.error = "held", .holder = "token", .is = tok),
	      "\"$H\" edit f -n --json -- cat");
	jusage("sh", "\"$H\" edit --json");
	free(tok);
	free(lnk);
	free(f);
	free(lock);
}

/* ------------------------------------------------------------------------
 * selftest, and usage errors wherever --json is on the line
 * ---------------------------------------------------------------------- */

Test(json, selftest_one_object_with_checks)
{
	json_t *o = jrun("sh", 0, "\"$H\" selftest --json .");
	cr_assert_str_eq(str(o, "dir"), dir);
	cr_assert(json_is_true(json_object_get(o, "ok")));
	json_t *checks = json_object_get(o, "checks");
	cr_assert_gt(json_array_size(checks), 0);
	cr_assert_eq((size_t)num(o, "total"), json_array_size(checks));
	size_t i;
	json_t *c;
	json_array_foreach(checks, i, c) {
		cr_assert_eq(num(c, "n"), (long long)i + 1);
		cr_assert(str(c, "name")[0]);
		cr_assert(json_is_true(json_object_get(c, "ok")));
		cr_assert(json_is_null(json_object_get(c, "why")));
	}
	json_decref(o);
	jusage("bash", "\"$H\" selftest a b --json");
	jcase("sh", 73, EXPECT(.error = "ENOENT"), "\"$H\" selftest --json ./no/such/dir");
}

Test(json, usage_errors_wherever_json_appears)
{
	static const char *const lines[] = {
		"\"$H\" --json",
		"\"$H\" bogus --json",
		"\"$H\" lock --json",
		"\"$H\" lock --js",
		"\"$H\" lock acquire -w bad L --json",
		"\"$H\" lock acquire --json L M",
		"\"$H\" lock bogus --json",
		"\"$H\" session take --json --bogus",
		"\"$H\" session status --json extra",
		"\"$H\" scope list extra --json",
		"\"$H\" scope bogus --json",
		"\"$H\" scope register --json",
		"\"$H\" run --json -w nope -- true",
		"\"$H\" edit f --json --bogus -- cat",
		"\"$H\" selftest --json --bogus",
	};
	const char *shells[] = { "sh", "bash", "dash" };
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		jusage(shells[i % 3], "%s", lines[i]);
}

/* ------------------------------------------------------------------------
 * flock
 * ---------------------------------------------------------------------- */

/* `holdfast lock status FILE --json` for a file locked by holdfast flock
 * (cmd_flock.c, FK3): the kernel's holder, and the record while it counts. */
Test(json, flock_status_of_a_file)
{
	char *F = at("F");
	json_t *o = jrun("bash", 0, "touch F; \"$H\" lock status F --json");
	cr_assert_str_eq(str(o, "path"), F);
	cr_assert_str_eq(str(o, "state"), "free");
	json_decref(o);
	o = jrun("bash", 0, "exec 9>F; \"$H\" flock -n 9 || exit 3; \"$H\" lock status F --json");
	cr_assert_str_eq(str(o, "state"), "held");
	cr_assert(strstr(str(o, "holder"), ", fence "), "%s", str(o, "holder"));
	cr_assert_str_eq(str(o, "mode"), "exclusive");
	cr_assert_eq(json_array_size(json_object_get(o, "holders")), 1);
	json_decref(o);
	/* two shared holders (FK8): mode shared, each in holders */
	o = jrun("bash", 0,
		 "exec 8<F 9<F; \"$H\" flock -s -n 8 && \"$H\" flock -s -n 9 || exit 3; "
		 "\"$H\" lock status F --json");
	cr_assert_str_eq(str(o, "mode"), "shared");
	cr_assert_eq(json_array_size(json_object_get(o, "holders")), 2);
	json_decref(o);
	free(F);
}

/* run -c STRING: the object names CMD as it ran, /bin/sh -c STRING */
Test(json, run_c_names_the_command_it_ran)
{
	json_t *o = jrun("sh", 2, "\"$H\" run --lock L --json -c 'exit 2'");
	json_t *argv = json_object_get(json_object_get(o, "cmd"), "argv");
	cr_assert_eq(json_array_size(argv), 3);
	cr_assert_str_eq(json_string_value(json_array_get(argv, 0)), "/bin/sh");
	cr_assert_str_eq(json_string_value(json_array_get(argv, 2)), "exit 2");
	json_decref(o);
}

/* A refusal by what occupies the lock's path names that path, from run
 * as from lock acquire (it was null there). */
Test(json, refusals_of_the_lock_path_name_it_everywhere)
{
	char *S = at("S.lock");
	jcase("sh", 77, EXPECT(.error = "unsafe", .path = S),
	      "ln -s nowhere S.lock; \"$H\" run -n --lock S.lock --json -- true");
	free(S);
}
