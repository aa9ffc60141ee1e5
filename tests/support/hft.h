/*
 * hft.h - test support: scripted schedules of real processes, the holdfast
 * binary run as a child (hft_cli, hft_cli_env, hft_sh, hft_spawn_cli,
 * hft_spawn_cmd) with its output collected, private mount namespaces and
 * bind mounts (hft_private_mounts, hft_bind, hft_bind_ro, hft_unmount),
 * scratch directories and small files (hft_tmpdir, hft_rmtree, hft_write,
 * hft_slurp), and /proc reads.
 *
 * A child process arms sys.c rules ("pause:POINT[:N]", "crash:...",
 * "fail:...") and runs a function or the holdfast binary. When it reaches a
 * pause point it writes the point's name on a pipe and blocks until the test
 * lets it go. Tests drive interleavings with hft_expect() and hft_go(): no
 * sleeps, every schedule deterministic.
 */
#ifndef HFT_H
#define HFT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "faults.h"
#include "internal.h"

struct hft_child {
	pid_t pid;
	int notify_rd;   /* points reached, one line each   */
	int go_wr;       /* one byte lets the child go on    */
	int out_rd;      /* the child's stdout (CLI children) */
	int err_rd;      /* the child's stderr (CLI children) */
};

/* Fork a child that arms rules, then exits with fn(arg)'s value. */
void hft_spawn_fn(struct hft_child *c, const char *rules, int (*fn)(void *), void *arg);
/* Fork a child that only lives until *ret_end (the write end of a pipe,
 * close-on-exec) is closed: a process whose end the test decides - close
 * it, then waitpid. Killed with the others at exit if the test fails half
 * way. Its pid. */
pid_t hft_fork_until_closed(int *ret_end);
/* Fork a child that runs the holdfast binary with argv (NULL-terminated,
 * argv[0] ignored) and HOLDFAST_FAULTS=rules; extra_env "K=V" or NULL. */
void hft_spawn_cli(struct hft_child *c, const char *rules, const char *const *argv,
		   const char *extra_env);
/* When set, hft_spawn_cli's child calls it before the exec (to enter a
 * namespace, say). */
extern void (*hft_spawn_cli_pre)(void);
/* Fork a child that runs argv (argv[0] looked up in PATH) with stdout and
 * stderr on pipes, no fault rules and no pause fds; env "K=V;..." or NULL. */
void hft_spawn_cmd(struct hft_child *c, const char *const *argv, const char *env);
/* Block until the child reports a point; it must be `point` (Criterion
 * assertion). */
void hft_expect(struct hft_child *c, const char *point);
/* The next point the child reports, into line (n bytes); expected names
 * what was awaited in the failure message when the child ends first. */
void hft_next_point(struct hft_child *c, char *line, size_t n, const char *expected);
/* Let the child go on from its pause. */
void hft_go(struct hft_child *c);
/* SIGKILL whatever is left in a CLI child's process group (hft_spawn_cli
 * makes each child a group leader): call after hft_wait when CMD may have
 * left a background process (a shell's trap that races its own job). */
void hft_reap_group(const struct hft_child *c);
/* Kill (with its process group) and collect every child this test process
 * spawned that still runs: a fixture's end, before it removes the
 * directory a failed test's children may still write in. (At exit too.) */
void hft_kill_spawned(void);
/* Wait for the child: its exit code, or 128+N when killed by signal N. */
int hft_wait(struct hft_child *c);
/* Read a child's stdout and stderr to their ends (into *out / *err,
 * malloc'd, when not NULL; the descriptors are closed), then wait for it:
 * its exit code (128+N: signal N). */
int hft_collect(pid_t pid, int out_rd, int err_rd, char **out, char **err);
/* Whether process pid, once blocked (state S, polled from /proc without a
 * sleep; a Criterion failure after 10 s of never blocking), is blocked in
 * epoll_wait(2): a waiter asleep in a queue (wait.c WT8). */
bool hft_in_epoll_wait(pid_t pid);
/* A waiter of the queue asleep for good: it has opened its holder's pidfd
 * (a queued waiter does so once its sleep lasted 10 ms, WT5, and sleeps
 * without a break from then on) and is blocked in epoll_wait. Polled from
 * /proc, bounded (10 s: a Criterion failure). */
bool hft_asleep_in_queue(pid_t pid);
/* The children of process pid's main thread, from /proc (at most n into
 * kids): how many it has. */
int hft_children(pid_t pid, pid_t *kids, int n);
/* Its child, asserting it has exactly one. */
pid_t hft_only_child(pid_t pid);
/* Wait at most ms for process pid (our child) to end: its exit code
 * (reaped), or -1 when it still runs. A bound against a hang. */
int hft_exit_within(pid_t pid, int ms);
/* Collected stdout/stderr of a CLI child (valid after hft_wait, malloc'd). */
char *hft_read_all(int fd);

/* Run the holdfast binary to completion: exit status; out/err malloc'd if
 * non-NULL. */
int hft_cli(char **out, char **err, const char *const *argv);
/* Same with environment additions ("K=V;K2=V2", NULL for none) and stdin. */
int hft_cli_env(char **out, char **err, const char *env, const char *input,
		const char *const *argv);

/* Run a script with a real shell ("sh", "bash", "dash": looked up in PATH)
 * to completion, as a user would (from a script file: `SHELL FILE`, never
 * `SHELL -c`, a one-line shell whose caller would own its locks); the script finds the binary under test
 * as "$HOLDFAST_BIN". env: "K=V;K2=V2" or NULL. Exit status (128+N for a
 * signal); out/err malloc'd if non-NULL. */
int hft_sh(char **out, char **err, const char *shell, const char *env, const char *script);

/* Give this test process (and the children it starts) a private mount
 * namespace: a bind mount made here is seen by them only, and goes with
 * them. false (the test should skip) when not root or not allowed. */
bool hft_private_mounts(void);
/* mount --bind src dst / umount dst, in that namespace (asserting). */
void hft_bind(const char *src, const char *dst);
/* The same, read-only: writes under dst fail with EROFS. */
void hft_bind_ro(const char *src, const char *dst);
void hft_unmount(const char *dst);

/* The path of the holdfast binary under test ($HOLDFAST_BIN). */
const char *hft_bin(void);
/* A fresh empty directory for one test, under $HFT_TMPDIR or /dev/shm. */
char *hft_tmpdir(void);
/* A Criterion suite whose every test gets a scratch directory `dir`
 * (hft_tmpdir), removed after it: HFT_SCRATCH_SUITE(edit, 60); */
#define HFT_SCRATCH_SUITE(name, timeout_s)                                     \
	static char *dir;                                                      \
	static void hft_scratch_setup(void)                                    \
	{                                                                      \
		dir = hft_tmpdir();                                            \
	}                                                                      \
	static void hft_scratch_teardown(void)                                 \
	{                                                                      \
		hft_rmtree(dir);                                               \
		free(dir);                                                     \
	}                                                                      \
	TestSuite(name, .init = hft_scratch_setup, .fini = hft_scratch_teardown, \
		  .timeout = (timeout_s))
/* Remove a directory tree (best effort, for test clean-up). */
void hft_rmtree(const char *path);
/* Write a whole file (test set-up). */
void hft_write(const char *path, const char *content);
/* Read a whole file, malloc'd; NULL when absent. */
char *hft_slurp(const char *path);
/* Read /proc/PID/FILE whole, malloc'd; NULL when pid (or the file) is gone. */
char *hft_proc_slurp(pid_t pid, const char *file);
/* pid's parent (/proc/PID/stat), asserting pid is there. */
pid_t hft_ppid(pid_t pid);
/* Does path exist (lstat)? */
bool hft_exists(const char *path);
/* Count entries in dir whose names start with prefix. */
int hft_count_prefix(const char *dir, const char *prefix);

#endif
