/*
 * faults.h - the fault engine: rules that make the seam's calls fail, pause
 * a process at a point, or crash it there (faults.c). Linked into the CLI
 * and the tests, never into the installed library.
 *
 * Rules, separated by ';':
 *
 *   fail:CALL:N:ERRNO[:persist]  the Nth next CALL fails with ERRNO (a name
 *                                 like EIO or a number), and with :persist
 *                                 every later one too;
 *   pause:POINT[:N]               at the Nth hit of POINT, write "POINT\n" to
 *                                 the notify fd and block until one byte
 *                                 arrives on the go fd;
 *   crash:POINT[:N]               at the Nth hit of POINT, SIGKILL itself;
 *   skew:wall:MS                  add MS (signed) to every wall-clock read
 *                                 of this process: a clock that disagrees
 *                                 with the machine's (CLOCK_BOOTTIME and
 *                                 CLOCK_MONOTONIC are left alone);
 *   cap:wait:MS                   the waiters' backoff cap is MS (> 0) instead
 *                                 of 1 s: with an hour, a waiter wakes only
 *                                 on an event (a release, its holder's end,
 *                                 a cancel) or its deadline.
 *
 * CALL and POINT are names of points.def ("open", "dirlock.acquire.made"),
 * or "*" for every system call (never a named point, so "crash:*:N" is
 * stable against new named points). N counts from 1 (default 1). A name
 * that is not in points.def, an unknown errno name or any other malformed
 * rule is refused, with nothing armed.
 *
 * Invariants:
 *  (FA1) A rule counts only the hits of its own point, from the moment it
 *        was armed.
 *  (FA2) A refused rule set arms nothing: the rules armed before stay.
 *  (FA3) Numbers (N, ERRNO, MS, the descriptors) are decimal digits only
 *        (MS may start with '-' or '+'): no space, '+', "0x" or trailing text.
 */
#ifndef HF_FAULTS_H
#define HF_FAULTS_H

#include <stddef.h>

/* Arm rules (grammar above); NULL or "" disarms everything. 0, or -EINVAL
 * with what is wrong in why (n bytes; may be NULL) and nothing changed. */
int hf_fault_inject(const char *rules, char *why, size_t n);
/* The fds a "pause" rule reports to and waits on. */
void hf_fault_pause_fds(int notify_fd, int go_fd);
/* HOLDFAST_PAUSE_FDS's "NOTIFY,GO": 0 and both, or -EINVAL. */
int hf_fault_parse_fds(const char *s, int *ret_notify, int *ret_go);
/* Arm from the environment: HOLDFAST_FAULTS=<rules>, HOLDFAST_PAUSE_FDS=
 * <notify>,<go>. 0 (also when unset), or -EINVAL with why filled. */
int hf_fault_arm_from_env(char *why, size_t n);

#endif
