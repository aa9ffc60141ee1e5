/*
 * run.h - what `holdfast run` and `holdfast edit` share: a command started
 * blocked, released once its locks are held, waited for with signals
 * forwarded (supervise.c); directory locks acquired with a wait that a
 * forwarded signal ends, the -n/-w/-E options, the words for a holder
 * (acquire.c).
 */
#ifndef HF_CLI_RUN_H
#define HF_CLI_RUN_H

#include "holdfast.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The signals holdfast forwards to CMD; while waiting for locks they stop
 * the wait (everything acquired is released, exit 128+N). */
#define CLI_FWD_SIGNALS { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 }

struct cli_child {
	pid_t pid;
	int go_wr;          /* the go socket (holdfast's end); -1 once used */
	int sigfd;          /* forwarded signals and SIGCHLD              */
	sigset_t oldmask;   /* restored in the child before exec          */
	int code;           /* CMD's exit code (128+N: signal N), once exited */
	int term_signal;    /* the signal N it died of (0: it exited)       */
	bool exited;        /* exited: a zombie, not yet collected         */
	bool reaped;        /* collected (waitpid)                         */
	int stop_signal;    /* a forwarded signal received (0: none)      */
};

/* An empty child (nothing started, nothing open). */
void cli_child_reset(struct cli_child *c);
/* Block the forwarded signals (those not ignored at start) and SIGCHLD, to
 * be read from c->sigfd. 0 or -errno. */
int cli_child_init(struct cli_child *c);
/* Fork a child (c initialized) that waits on a pipe for the go message.
 * stdin_fd / stdout_fd: dup'ed onto 0 / 1 in the child (-1: inherited).
 * 0 or -errno (nothing left running). */
int cli_child_spawn(struct cli_child *c, char *const argv[], int stdin_fd, int stdout_fd);
/* Let the child run CMD with env ("K=V" strings) added and the descriptors
 * fds (at most CLI_GO_MAX_FDS) open in it across exec. 0 or -errno. */
#define CLI_GO_MAX_FDS 80
#define CLI_GO_MAX PIPE_BUF /* the go message's bytes */
int cli_child_go(struct cli_child *c, const char *const *env, size_t nenv, const int *fds,
		 size_t nfds);
/* The go message's bytes (supervise.c, SV4): 'G', each "K=V" of env with
 * its NUL, 'E', into buf (cap bytes): the length, -E2BIG, or -EINVAL for an
 * entry that is not K=V. */
int cli_go_format(char *buf, size_t cap, const char *const *env, size_t nenv);
/* Check a go message's len bytes (SV4): 0, or -EINVAL with nothing handed
 * out; when valid, each "K=V" (klen: the length of K) is handed to each
 * (may be NULL), in order; a negative return of each stops and is returned. */
int cli_go_parse(const char *buf, size_t len, int (*each)(const char *kv, size_t klen, void *ctx),
		 void *ctx);
/* The child exits without running CMD; reaped. */
void cli_child_abort(struct cli_child *c);
/* A forwarded signal that arrived so far (0: none), without blocking. */
int cli_child_stop_pending(struct cli_child *c);
/* Wait until CMD has exited, forwarding signals, WITHOUT collecting it: it
 * stays a zombie, alive for liveness checks while we live (owner.c), so its
 * locks are released, not reaped by another, before cli_child_reap. If
 * out_fd >= 0,
 * CMD's stdout is collected from it into *out / *outlen (malloc'd): what is
 * in the pipe when CMD exits, never waiting for its leftover background
 * processes. Returns CMD's exit code (128+N for signal N), or -errno. */
int cli_child_wait(struct cli_child *c, int out_fd, char **out, size_t *outlen);
/* Collect the exited child (waitpid). */
void cli_child_reap(struct cli_child *c);
/* Collect the child if need be; close what is open. */
void cli_child_done(struct cli_child *c);

/* --json: CMD's argv, pid and end, {"argv", "pid", "exit", "signal"}:
 * "exit" its exit status (null when a signal ended it), "signal" the
 * signal's name ("SIGTERM"; null when it exited). A new object. */
struct json_t *cli_child_json(const struct cli_child *c, char *const argv[]);

/* Waiting options shared by run and edit: -n, -w SECS, -E CODE. */
struct cli_wait_opts {
	int64_t wait_ms;        /* <0 forever (default), 0 try once, >0 bound */
	int conflict_exit;      /* 1, or -E CODE                             */
};
/* Parse one of -n / -w / -E (opt is the getopt character, arg optarg).
 * 0, or the usage exit code with a message printed. */
int cli_wait_opt(struct cli_wait_opts *w, int opt, const char *arg);

/* The -n/-w/-E long options (getopt_long), in each command's table. */
#define CLI_WAIT_LONGOPTS                                                   \
	{ "nonblock", no_argument, NULL, 'n' },                             \
	{ "wait", required_argument, NULL, 'w' },                           \
	{ "timeout", required_argument, NULL, 'w' },                        \
	{ "conflict-exit-code", required_argument, NULL, 'E' }

/* The CLOCK_MONOTONIC deadline for a wait: <0 none, 0 try once. */
int64_t cli_deadline(int64_t wait_ms);
/* What is left of a deadline as a wait option: -1 none, 0 try once (also
 * when it has passed), else milliseconds rounded up. */
int64_t cli_wait_left(int64_t deadline_ns);

/* Acquire l (its other options set by the caller) before deadline_ns
 * (cli_deadline), waiting in the library, woken by the release; a stop
 * signal on c (may be NULL) ends the wait. 0: held. Otherwise a message
 * naming path and the holder is printed and an exit code that is never 0
 * returned: HF_EXIT_CONFLICT for a conflict or timeout (the caller turns it
 * into -E CODE only when it exits: a refusal, even with -E 0, must never be
 * taken for success), 128+N when stopped by signal N, another code for
 * other errors. */
int cli_lock_take(hf_lock *l, const char *path, int64_t deadline_ns, struct cli_child *c);
/* A holder's record (hf_lock_holder, hf_lock_status) in the words every
 * command uses: "pid 4242 (make) on box, 12 s old, fence 17". */
void cli_holder_words(const hf_rec *h, char *buf, size_t n);
/* The same for the record at field prefix pre of h: "holders.1." is the
 * second of a status's holders (a shared lock's, FB4). */
void cli_holder_words_at(const hf_rec *h, const char *pre, char *buf, size_t n);
/* The words of h, a holder an acquisition of path met: when it is an
 * acquisition waiting at path for holders to leave (its status says so,
 * FB4), it says "(waiting, MODE)". */
void cli_refusal_words(const char *path, const hf_rec *h, char *buf, size_t n);

/* What a wait says while it waits (waitline.c): on a terminal (stderr) one
 * status line, refreshed every second, after the first second of waiting;
 * with -v (cli_verbose) "waiting for WHAT: held by ..." when the wait starts
 * and "getting lock took 1.234 s" once everything is held (cli_wait_took).
 * Nothing otherwise. */
extern bool cli_verbose;
/* The holder now, in words, into buf (n bytes); "" when nobody holds it at
 * the moment. Called from the ticker thread while the main thread waits. */
typedef void (*cli_holder_fn)(const void *ctx, char *buf, size_t n);
struct cli_waitline {
	const char *what;       /* "build.lock", "session P", "scope NAME"  */
	cli_holder_fn holder;
	const void *ctx;
	int64_t begin_ns;       /* CLOCK_MONOTONIC, when the wait began     */
	char words[512];        /* the holder last seen                     */
	int stop[2];            /* ends the ticker                          */
	pthread_t thread;
	bool begun, ticking, shown;
};
/* Is it worth a first try (wait 0) before the wait: stderr a terminal, or -v? */
bool cli_waitline_wanted(void);
void cli_waitline_init(struct cli_waitline *w, const char *what, cli_holder_fn holder,
		       const void *ctx);
/* The wait starts (a try found it held by words, may be NULL): once. */
void cli_waitline_begin(struct cli_waitline *w, const char *words);
/* The wait is over: the line erased. Call before printing anything else. */
void cli_waitline_end(struct cli_waitline *w);
/* With -v: "getting lock took S s" since start_ns (CLOCK_MONOTONIC). */
void cli_wait_took(int64_t start_ns);
/* A lock's holder now (ctx: its path), for a waitline. */
void cli_lock_holder_now(const void *path, char *buf, size_t n);
/* Is rc of a first try (wait 0) one that a wait may end: held, a claim
 * beside it, an owner record not complete or not readable yet? */
bool cli_lock_waitable(int rc);

#endif
