/*
 * et.h - the etcd suite's own etcd: one member per test, Debian's
 * etcd-server started on free loopback ports with a throwaway data
 * directory under /tmp (its WAL preallocates 64 MB), stopped by pid and
 * removed after. Nothing depends on a running service; a missing etcd
 * fails the test.
 */
#ifndef ET_H
#define ET_H

#include "hft.h"
#include "holdfast.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct et {
	pid_t pid;
	char *dir;          /* the data dir's parent: removed by et_stop     */
	char uri[64];       /* "etcd://127.0.0.1:PORT"                        */
	char endpoint[64];  /* "127.0.0.1:PORT" (etcdctl)                     */
	char env[256];      /* "HOLDFAST_BACKEND=<uri>" for hft_sh             */
	char ca[600];       /* with TLS: the CA that signed its certificate   */
	bool tls;
	int client_port, peer_port;
};

extern struct et E;        /* the test's member (et_setup / et_teardown) */
/* Start E and wait (bounded) until it answers; assert on failure. With
 * tls: https on its client port, a certificate for 127.0.0.1 signed by a
 * CA of its own (E.ca; made with openssl). */
void et_start(bool tls);
void et_setup(void);
void et_setup_tls(void);
/* Rebuild E's cluster from nothing: stop its member (SIGTERM, reaped),
 * delete its data dir, start a new member on the same ports with an empty
 * data dir and wait (bounded) until it answers. */
/* The second half of et_rebuild: E's member already stopped. */
void et_rebuild_after_stop(void);
void et_rebuild(void);
/* Stop E (SIGTERM, then SIGKILL; reaped) and remove its directory. */
void et_teardown(void);
/* Wait until the library's status through uri (https: with CA file ca,
 * else NULL) answers, bounded by until (et_mono_ms); fail the test naming
 * who when our child *pid ends first (*pid set to 0; its log file shown). */
void et_await(const char *who, const char *uri, const char *ca, pid_t *pid, const char *log,
	      int64_t until);
/* Stop E's member now (SIGKILL, reaped), as a crash. */
void et_kill(void);
/* Run etcdctl against E with args (a shell word list): its exit status. */
int et_ctl(const char *args, char **out);
/* The lock key of path (absolute) on E: its lease, create_revision and
 * mod_revision (etcdctl get -w json), each NULL when not wanted; asserts
 * that the key exists. */
void et_lock_kv(const char *path, int64_t *lease, int64_t *create_rev, int64_t *mod_rev);
/* The fence epoch of E (the value of /holdfast/epoch) and, when wanted,
 * the epoch key's create_revision; asserts that it exists. */
int64_t et_epoch(int64_t *create_rev);
/* Date the owner record at the lock key of path (absolute) ms earlier
 * ("acquired" and "boottime_ms"), put back with the key's own lease: a
 * record over-age without a real wait. */
void et_lock_backdate(const char *path, int64_t ms);
/* CLOCK_MONOTONIC now, in ms. */
int64_t et_mono_ms(void);
/* The pid of the process whose argv holds all of words (NUL-separated in
 * /proc/PID/cmdline, in order, as separate arguments), or -1. */
pid_t et_find_proc(const char *const *words);
/* Leftovers of a test killed before its teardown (a timeout): an etcd
 * child dies with its parent (et_child_dies_with_parent, in the child),
 * its pid is noted in its directory (et_note_pid), and et_sweep removes
 * /tmp/PREFIX* directories whose noted processes are all gone. */
void et_child_dies_with_parent(void);
void et_note_pid(const char *dir, pid_t pid);
/* Note this test process in dir first: a dir is never swept while the
 * test that made it lives (between one etcd stopped and the next started). */
void et_own_dir(const char *dir);
void et_sweep(const char *prefix);
/* SIGKILL every holdfast-etcd (a keeper) with needle (the test's etcd
 * URI) in an argument or its environment: a keeper of a lock for a pid
 * that outlives the test (--pid 1) would end only at its next renewal or
 * when its TTL ran out. */
void et_kill_keepers(const char *needle);
/* A scratch directory (hft_tmpdir) for the test, freed by et_teardown. */
extern char *et_dir;

/* Which of the n members at endpoints ("HOST:PORT") leads now, asked by
 * etcdctl through every one of them, waiting for an election at most
 * 30 s: its index, or -1. */
int et_leader(const char *const *endpoints, int n);

/* A free loopback TCP port (the kernel's choice). */
int et_free_port(void);
/* Stop process *pid (our child) with sig, then SIGKILL when it outlives
 * 20 s; reaped, *pid set to 0. Nothing when *pid <= 0. */
void et_stop_pid(pid_t *pid, int sig);
/* printf into a malloc'd string (asserting). */
char *et_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A shell script's outcome (et_run): exit status, stdout, stderr. */
struct et_out {
	int st;
	char *out, *err;
};
/* Run the script fmt... with shell sh ("sh", "bash", "dash") in et_dir,
 * HOLDFAST_BIN and env (hft_sh's "K=V;..."; E.env for E's backend) in its
 * environment: its outcome, asserting it exited 0. */
struct et_out et_run_env(const char *env, const char *sh, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define et_run(sh, ...) et_run_env(E.env, (sh), __VA_ARGS__)
void et_out_free(struct et_out *o);
/* Assert that text holds each of the strings after it (strstr), naming
 * the first one missing and text: ET_HAS(out, "a=0\n", "b=1\n"). */
void et_has(const char *text, ...) __attribute__((sentinel));
#define ET_HAS(text, ...) et_has((text), __VA_ARGS__, (const char *)NULL)

/* A child running `sleep 1000` (an owner that outlives what it owns):
 * its pid; et_reap kills (SIGKILL) and reaps it. */
pid_t et_sleeper(void);
void et_reap(pid_t pid);
/* Wait at most ms for child pid: its exit code (hft_exit_within); one still
 * running then is killed and reaped, and -1 returned. */
int et_exit_within(pid_t pid, int ms);

/* The scope chain A -> B -> D of the fault suites, pods named a, b, d in
 * directory dir (c/src, c/src/core, c/src/core/x), owned by three
 * `sleep 1000`s: et_chain_start runs `registers` (a script's lines that
 * register them, with $a $b $d the owners' pids) and fails the test when
 * one fails; after the caller made B's lease end (its member killed, its
 * host cut), et_chain_judge waits (bounded) until b is gone and asserts D is
 * A's child, A's effective scope its own minus D's, B's owner alive; the
 * owners are killed then. env: "HOLDFAST_BACKEND=..." of the judge. */
struct et_chain {
	const char *a, *b, *d;
	int pa, pb, pd;
};
void et_chain_start(struct et_chain *c, const char *env, const char *dir, const char *registers);
void et_chain_judge(struct et_chain *c, const char *env, const char *dir);

/* A suite whose every test gets its own member E and et_dir. */
#define ET_SUITE(name, timeout_s) \
	TestSuite(name, .init = et_setup, .fini = et_teardown, .timeout = (timeout_s))
/* Three tests of suite, NAME_sh, NAME_bash and NAME_dash, each calling
 * fn with its shell's name. */
#define ET_EACH_SHELL(suite, name, fn)        \
	Test(suite, name##_sh)                \
	{                                     \
		fn("sh");                     \
	}                                     \
	Test(suite, name##_bash)              \
	{                                     \
		fn("bash");                   \
	}                                     \
	Test(suite, name##_dash)              \
	{                                     \
		fn("dash");                   \
	}
/* Field f of record r, which must be there (a Criterion assertion). */
const char *et_str(const hf_rec *r, const char *f);
int64_t et_num(const hf_rec *r, const char *f);
/* The same with E on https (et_setup_tls). */
#define ET_SUITE_TLS(name, timeout_s) \
	TestSuite(name, .init = et_setup_tls, .fini = et_teardown, .timeout = (timeout_s))

#endif
