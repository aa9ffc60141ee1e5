/*
 * cli.h - what the command families share: exit codes, messages, parsing,
 * --json output (common.c); the owner of a lock taken from the shell
 * (owner_find.c); flock records (cmd_flock.c); run --scope's registration
 * (run_scope.c); the keeper (keeper.c); the backend options (backend.c);
 * the naive guard (naive.c); the words for a refused lock path
 * (lockpath.c).
 */
#ifndef HF_CLI_H
#define HF_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "holdfast.h"
#include "proc.h"

struct json_t;
struct hf_rec;

/* Exit codes (the contract; flock(1)-style, sysexits for the rest). */
enum {
	HF_EXIT_OK = 0,
	HF_EXIT_CONFLICT = 1,   /* held by another, or the wait timed out       */
	HF_EXIT_USAGE = 64,
	HF_EXIT_DATAERR = 65,   /* a record or the registry is unreadable       */
	HF_EXIT_NOTHELD = 69,   /* nothing to release                           */
	HF_EXIT_SOFTWARE = 70,  /* internal error                               */
	HF_EXIT_OSERR = 71,
	HF_EXIT_CANTCREAT = 73,
	HF_EXIT_IOERR = 74,
	HF_EXIT_NOPERM = 77,    /* refused for permissions or safety            */
};

/* -V / --version: "holdfast VERSION" on stdout; the exit code (0). */
int cli_version(void);

/* The exit code for a library return code. */
int cli_exit_for(int rc);

/* "holdfast: " + message + newline, on stderr. Control characters other
 * than the newline and bytes that are not UTF-8 are shown as \xNN: a
 * message never carries an escape sequence to a terminal, whatever a path,
 * a lane or a record holds. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* s for a message: control characters (the newline included) and bytes
 * that are not UTF-8 shown as \xNN, truncated to fit buf (n bytes). */
const char *cli_shown(const char *s, char *buf, size_t n);
#define CLI_SHOW(s) cli_shown((s), (char[1024]){ 0 }, 1024)
/* s quoted for a POSIX shell ('...', with ' written as '\''), into buf;
 * "" when it does not fit. */
const char *cli_shell_quote(const char *s, char *buf, size_t n);

/* "90m", "1.5h", "30s", "500ms", "2d"; a bare number is seconds. Decimal
 * only (no sign, exponent or hex), at most CLI_DURATION_MAX_MS: -EINVAL for
 * what is not a duration, -ERANGE for one longer than that. */
#define CLI_DURATION_MAX_MS (100LL * 365 * 86400 * 1000) /* 100 years */
int cli_parse_duration(const char *s, int64_t *ret_ms);
/* The same for option what's argument: 0, or HF_EXIT_USAGE with a message
 * saying what is wrong. */
int cli_duration_arg(const char *what, const char *arg, int64_t *ret_ms);
/* --token as `lock acquire` printed it: "TOKEN" or "TOKEN FENCE" (what
 * token=$(holdfast lock acquire L) holds, a newline at most after FENCE):
 * the token alone into buf (n bytes) and buf, the fence into *fence (0:
 * none given); else arg itself, for hf_lock_adopt to refuse. */
const char *cli_token_form(const char *arg, char *buf, size_t n, uint64_t *fence);
/* --shared (slots_arg NULL) or --slots N (slots_arg: N, 1 to HF_SLOTS_MAX)
 * of `cmd [sub]`: into *mode (HF_MODE_SHARED, HF_MODE_SLOTS; the caller
 * starts it at HF_MODE_EXCLUSIVE) and *slots. 0, or HF_EXIT_USAGE with a
 * message naming the option: the two exclude each other, and of lock's
 * subcommands only acquire takes them. */
int cli_mode_arg(const char *cmd, const char *sub, const char *slots_arg, int *mode, int *slots);
/* The backend refused a mode (-EOPNOTSUPP): said naming the path, the
 * mode and the backend's reason (h's "reason", may be NULL); returns
 * cli_exit_for(-EOPNOTSUPP), the failure recorded. */
int cli_mode_refused(const char *what, const char *path, int mode, const struct hf_rec *h);
/* A mode's name as records spell it: "exclusive", "shared", "slots". */
const char *cli_mode_name(int mode);
/* "4.1 min", "12 s", "2.0 h", "3.0 d". */
void cli_format_age(int64_t ms, char *buf, size_t n);

/* --json: exactly one JSON object on stdout per invocation (README,
 * "Machine output"). main() calls cli_json_begin before dispatching and
 * returns cli_json_end(code). A command that parses --json calls
 * cli_json_enable(); on success it prints its object with cli_json_print;
 * on failure it prints its message with cli_err and returns the exit code
 * from cli_fail / cli_fail_rc (after the cli_err: the message recorded is
 * the last one cli_err printed). main then prints the error object
 *   {"error": CODE, "exit": N, "message": "...", "path": "/abs"|null,
 *    "holder": {...}|null}
 * whenever the command ended with a non-zero code and printed no object;
 * a failure the command did not record is named from its exit code, with
 * the last cli_err message and the path given to cli_subject. */
void cli_json_begin(int argc, char **argv);
int cli_json_end(int code);
void cli_json_enable(void);
bool cli_json_on(void);
/* The path a failure is about unless cli_fail names another (made
 * absolute); NULL forgets it. */
void cli_subject(const char *path);
/* Record a failure: code a stable name (NULL: the name for exit), path
 * (NULL: the subject), holder (NULL: none; copied). The first failure
 * recorded wins; returns exit. After it no success object can be printed. */
int cli_fail(int exit, const char *code, const char *path, const struct hf_rec *holder);
/* The same with the holder as JSON (stolen; NULL: none). */
int cli_fail_json(int exit, const char *code, const char *path, struct json_t *holder);
/* A record as JSON (NULL for NULL), its "path" made absolute. */
struct json_t *cli_rec_json(const struct hf_rec *r);
/* cli_fail(cli_exit_for(rc), hf_error_name(rc), path, holder). */
int cli_fail_rc(int rc, const char *path, const struct hf_rec *holder);
/* Whether a failure was recorded (a success object would be refused). */
bool cli_failed(void);
/* The stable name of a failure that ended with exit code exit. */
const char *cli_code_for_exit(int exit);
/* path made absolute (lexically: ".", "//" dropped) into buf. */
const char *cli_abs_path(const char *path, char *buf, size_t n);

/* Print exactly one JSON object on stdout, then a newline; steals obj.
 * 0, or -errno when it could not be written (-EPIPE: no reader);
 * -EALREADY (nothing printed) when an object was printed or a failure
 * recorded already in this invocation. */
int cli_json_print(struct json_t *obj);
/* Write s to stdout now (after anything stdio buffered): 0 or -errno. */
int cli_write_out(const char *s);

/* Without --pid: the process a lock or scope taken from the shell belongs
 * to - holdfast's parent, skipping subshells (fork copies of a shell),
 * wrappers that fork and wait (timeout, sudo, flock, xargs, ...) and
 * one-line `sh -c` shells, each of which holds it too (the chain); see
 * owner_find.c. 0 and *ret, -ESRCH when the walk reaches init or leaves the
 * pid namespace having passed only wrappers. */
struct cli_owner {
	pid_t pid;                         /* the owner (O3)                   */
	char comm[HF_COMM_MAX + 1];        /* its command name                 */
	pid_t chain[HF_CHAIN_MAX];   /* O5: the processes skipped, nearest
					      first: they hold it too         */
	size_t nchain;
	bool one_line;                     /* the owner is a one-line shell whose
					      caller is init (O3): warn       */
};
int cli_owner_find(struct cli_owner *ret);
/* For a lock standing for descriptor fd (holdfast flock FD): the topmost
 * ancestor that has fd's file open (owner_find.c, OD1); -ENOENT when none
 * but holdfast has it. */
int cli_owner_find_holding(int fd, pid_t *ret_pid, char *comm, size_t n);
/* `holdfast lock status FILE` for a regular FILE (cmd_flock.c, FK3): its
 * flock(2)/fcntl locks from /proc/locks, the holdfast flock record if it
 * counts. Prints; the exit code. */
int cli_flock_status(const char *path, bool json);

/* `run --scope` support, implemented with the scope commands (cmd_scope.c):
 * register specs for pid under name (NULL: a generated name), delegating
 * from $HOLDFAST_POD when it is set, waiting until deadline_ns
 * (CLOCK_MONOTONIC; <0 none, 0 try once) while the scope is held by another
 * (woken when the registry changes); a stop signal on c (may be NULL) ends
 * the wait: c's signal descriptor is the wait's HF_OPT_CANCEL_FD. Prints its
 * own message on failure and returns the exit code (HF_EXIT_CONFLICT held or
 * timed out, 128+N stopped by signal N); 0, ret_name (n bytes) and
 * *ret_live_fd on success: the allocation's liveness descriptor
 * (hf_scope_fd, detached), to keep open until CMD has ended and hand to
 * cli_scope_run_release. */
struct cli_child;
int cli_scope_run_register(const char *name, const char *const *specs, size_t nspecs, int pid,
			   int64_t deadline_ns, struct cli_child *c, int *ret_live_fd,
			   char *ret_name, size_t n);
/* Release what cli_scope_run_register registered, then close live_fd (if
 * >= 0); the exit code. */
int cli_scope_run_release(const char *name, int live_fd);

/* Keep fds (n of them, at most 64) open in a detached process, the keeper
 * (keeper.c: its own session, stdio on /dev/null, working directory "/",
 * every other descriptor closed), until process pid and every process of
 * chain (nchain of them, at most HF_CHAIN_MAX; may be NULL) have exited or
 * every one of their files has lost its last link (unlinked). Returns once
 * the keeper watches both: its pid, -ESRCH when they are all gone already,
 * -EINVAL, -errno. The caller may close its own copies at once. */
int cli_keep_for(int pid, const pid_t *chain, size_t nchain, const int *fds, size_t n);
/* The keeper's report on its pipe (n bytes, keeper.c K4): its pid (> 0),
 * -ESRCH (the owner ended first), or -ECHILD (it did not start). */
int cli_keep_report_parse(const void *buf, size_t n);

/* Backends (backend.c): --backend URI and the etcd options, in every
 * command that takes a lock (lock, run, edit): put CLI_BACKEND_LONGOPTS in
 * its options and pass each option to cli_backend_opt first (-1: taken;
 * HF_EXIT_USAGE: refused, said; 0: not one of them). */
enum {
	CLI_OPT_BACKEND = 3000,
	CLI_OPT_ETCD_USER,
	CLI_OPT_ETCD_PWFILE,
	CLI_OPT_ETCD_CA,
	CLI_OPT_TTL,
	CLI_OPT_ETCD_TIMEOUT,
};
#define CLI_BACKEND_LONGOPTS                                                   \
	{ "backend", required_argument, NULL, CLI_OPT_BACKEND },                \
	{ "etcd-user", required_argument, NULL, CLI_OPT_ETCD_USER },            \
	{ "etcd-password-file", required_argument, NULL, CLI_OPT_ETCD_PWFILE }, \
	{ "etcd-ca", required_argument, NULL, CLI_OPT_ETCD_CA },                \
	{ "ttl", required_argument, NULL, CLI_OPT_TTL },                        \
	{ "etcd-timeout", required_argument, NULL, CLI_OPT_ETCD_TIMEOUT }
int cli_backend_opt(int opt, const char *arg);
/* The backend URI in force (--backend, else HOLDFAST_BACKEND), NULL for
 * the file system. */
const char *cli_backend(void);
struct hf_lock;
/* A failed read of a lock on the backend: "WHATPATH: error: reason"
 * said and recorded for --json (the holder, if any); its exit code. */
int cli_backend_failed(const char *what, const char *path, const struct hf_lock *l, int rc);
/* Put the backend and its options (HOLDFAST_ETCD_USER,
 * HOLDFAST_ETCD_PASSWORD_FILE, HOLDFAST_ETCD_CA_FILE when no option says)
 * on l: 0, or an exit code (said, recorded). */
struct hf_lock;
int cli_backend_apply(struct hf_lock *l, const char *path);
/* The same on a session handle (session take/release/renew/status/
 * assert-held --backend): 0, or an exit code (said, recorded). */
struct hf_session;
int cli_backend_session(struct hf_session *s, const char *path);
/* path as the etcd backend names it (its key is /holdfast/lock + this):
 * absolute, ".", ".." and "//" resolved lexically, into buf. */
const char *cli_backend_path(const char *path, char *buf, size_t n);
/* hf_lock_status on the backend in force: 0 and *ret; -errno (nothing
 * said); > 0: an exit code, the failure said and recorded already. */
int cli_lock_status(const char *path, struct hf_rec **ret);
/* main, before anything else: an invocation for etcd in a binary without
 * the etcd client becomes holdfast-etcd's (exec; returns only on failure:
 * the exit code). 0: nothing to hand over. */
int cli_backend_handover(int argc, char **argv);
/* `lock acquire` on etcd: a keeper (keeper.c) keeps the lease of l
 * (detached) alive for pid and its chain, and revokes it when they have all
 * ended. Its pid, -errno. */
int cli_keep_lock(int pid, const pid_t *chain, size_t nchain, struct hf_lock *l);
/* Scopes on etcd (backend.c, keeper.c): put the backend in force and its
 * options on s (0, or an exit code: said, recorded); `scope register`'s
 * keeper for the lease of s (detached after): its pid, -errno; the
 * registry's name for messages (the backend URI, or the file) into buf. */
struct hf_scope;
int cli_backend_apply_scope(struct hf_scope *s, const char *name);
int cli_keep_scope(int pid, struct hf_scope *s);
const char *cli_registry_name(char *buf, size_t n);

/* The read-then-write guard the session lock replaces (naive.c), to be
 * measured against only: 0 "taken", HF_EHELD, -errno. Admits two holders. */
int cli_naive_take(const char *path);

/* Why the directory lock at path was refused (rc: HF_EUNSAFE, -EACCES,
 * -EPERM, -ENOTDIR, -ELOOP), looked up again (lockpath.c): a regular file,
 * FIFO, socket (73) or symlink (77) at path, a state directory or lock owned
 * by another user, named (77), ... Prints "holdfast: VERB PATH: why" and
 * returns the exit code; 0 when rc is not one of those or nothing explains
 * it (the caller's message stands). */
int cli_lock_refused(const char *verb, const char *path, int rc);
/* "user bob (uid 1001)", or "uid 1001" when /etc/passwd has no name for it. */
const char *cli_user_words(unsigned uid, char *buf, size_t n);
/* in with every bare "uid N" as cli_user_words says it, into out. */
void cli_name_uid(const char *in, char *out, size_t n);

/* Each family: argv[0] is the family name. Returns the exit code. */
int cmd_session(int argc, char **argv);
int cmd_selftest(int argc, char **argv);
int cmd_lock(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_edit(int argc, char **argv);
int cmd_scope(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_flock(int argc, char **argv);

#endif
