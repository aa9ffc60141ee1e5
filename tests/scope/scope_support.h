/*
 * scope_support.h - shared set-up for the scope registry suites: a scratch
 * registry per test, sleeper processes to own allocations, and the registry
 * file read back with jansson.
 */
#ifndef SCOPE_SUPPORT_H
#define SCOPE_SUPPORT_H

#include "hft.h"
#include "registry.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* The test's scratch directory and registry ($HOLDFAST_REGISTRY points at
 * it for the library and for every CLI child). The test process is made a
 * subreaper: the keepers `scope register` leaves (keeper.c) become its
 * children, and sc_teardown, after removing the directory (which ends every
 * keeper whose owner still lives: their files are gone), waits for every
 * child left - a keeper that never ends hangs the test, never leaks. */
extern char *sc_dir;
extern char sc_reg[512];
void sc_setup(void);
void sc_teardown(void);
/* Wait for every child of the test process (keepers included). */
void sc_reap_all(void);

/* Root only (cr_skip otherwise): a private mount namespace for this test
 * process and its children (unshare(CLONE_NEWNS), everything MS_PRIVATE),
 * so no mount made here is seen outside or outlives the test. With tmp, a
 * fresh tmpfs on /tmp (mode 1777) - the shared sticky /tmp of the default
 * registry, private to the test. */
void sc_private_mounts(bool tmp);

/* Wait up to ms for process pid (a child of the test) to exit, without
 * sleeping (pidfd + poll); reap it. true when it exited. */
bool sc_exits_within(pid_t pid, int ms);
/* The same, for a child whose status matters: its exit code (128+N for
 * signal N), or -1 when it did not exit within ms (not collected then). */
int sc_wait_within(pid_t pid, int ms);

/* Skip the test unless we are root (unshare, mounts, setpriv). */
void sc_need_root(void);

/* Start argv (NULL-terminated, found on PATH) with HF=$HOLDFAST_BIN, stdin
 * /dev/null, stdout and stderr on c->out_rd / c->err_rd (notify/go unused:
 * -1). Wait with hft_wait (then close out_rd/err_rd). */
void sc_spawn(struct hft_child *c, const char *const *argv);
/* One line from fd (without the newline), malloc'd; "" at EOF. */
char *sc_line(int fd);

/* Run `sh -c script sh ARGS...` (NULL-terminated) with HF=$HOLDFAST_BIN in
 * its environment: the exit code; stdout/stderr in *out / *err. */
int sc_sh(char **out, char **err, const char *script, ...) __attribute__((sentinel));

/* A process that blocks until killed (or sc_sleeper_end): owns allocations. */
struct sc_sleeper {
	pid_t pid;
	int wr; /* closing it ends the sleeper */
};
void sc_sleeper_start(struct sc_sleeper *s);
/* Fixtures of a suite whose registrations belong to one sleeper, sc_owner:
 * sc_setup and a sleeper started; the sleeper killed and sc_teardown. */
extern struct sc_sleeper sc_owner;
void sc_setup_owned(void);
void sc_teardown_owned(void);
/* End it (sig 0: close its pipe, else kill with sig) and wait for it, so it
 * is no zombie: its pid is dead as far as liveness can tell. */
void sc_sleeper_end(struct sc_sleeper *s, int sig);

/* Run `holdfast ARGS...` (NULL-terminated after the first); the exit code,
 * stdout and stderr in *out / *err (malloc'd; NULL to drop). */
int sc_cli(char **out, char **err, ...) __attribute__((sentinel));
/* The same with environment additions "K=V;K2=V2". */
int sc_cli_env(const char *env, char **out, char **err, ...) __attribute__((sentinel));

/* "%d" of a pid, in a static ring of buffers (for argument lists). */
const char *sc_num(long long v);
/* sc_dir + "/" + rel, in a static ring of buffers. */
const char *sc_path(const char *rel);

/* The registry file parsed (asserts it parses); json_decref it. */
json_t *sc_registry_json(void);
/* The allocation named name in the registry file, or NULL (borrowed from
 * root). */
json_t *sc_alloc(json_t *root, const char *name);

#endif
