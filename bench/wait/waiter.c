/*
 * waiter.c - one library waiter that waits forever, for bench/wait/wake.sh:
 * the library's own waits measured without a CLI around them.
 *
 * usage: waiter lock PATH | slices PATH | session PATH LANE | scope REGISTRY NAME SPEC
 *   lock     hf_lock_acquire with HF_OPT_WAIT_MS -1
 *   slices   hf_lock_acquire with HF_OPT_WAIT_MS 1000, again and again (a CLI
 *            refreshing a waiting line once a second re-enters its wait)
 *   session  hf_session_take with HF_OPT_WAIT_MS -1
 *   scope    hf_scope_register with HF_OPT_WAIT_MS -1
 * Exits 0 once it got what it waited for (and released it), 1 on errors.
 */
#include "holdfast.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rc = -1;
	if (argc == 3 && !strcmp(argv[1], "lock")) {
		hf_lock *l;
		if ((rc = hf_lock_new(argv[2], &l)) == 0 && (rc = hf_lock_set(l, HF_OPT_WAIT_MS, -1)) == 0 &&
		    (rc = hf_lock_acquire(l)) == 0)
			rc = hf_lock_release(l);
	} else if (argc == 3 && !strcmp(argv[1], "slices")) {
		hf_lock *l;
		if ((rc = hf_lock_new(argv[2], &l)) == 0 && (rc = hf_lock_set(l, HF_OPT_WAIT_MS, 1000)) == 0) {
			while ((rc = hf_lock_acquire(l)) == HF_ETIMEDOUT)
				;
			if (rc == 0)
				rc = hf_lock_release(l);
		}
	} else if (argc == 4 && !strcmp(argv[1], "session")) {
		hf_session *s;
		if ((rc = hf_session_new(argv[2], argv[3], &s)) == 0 &&
		    (rc = hf_session_set(s, HF_OPT_WAIT_MS, -1)) == 0 && (rc = hf_session_take(s)) >= 0)
			rc = hf_session_release(s);
	} else if (argc == 5 && !strcmp(argv[1], "scope")) {
		hf_scope *s;
		if ((rc = hf_scope_new(argv[3], &s)) == 0 && (rc = hf_scope_add(s, argv[4])) == 0 &&
		    (rc = hf_scope_set_str(s, HF_OPT_REGISTRY, argv[2])) == 0 &&
		    (rc = hf_scope_set(s, HF_OPT_WAIT_MS, -1)) == 0 && (rc = hf_scope_register(s)) == 0)
			rc = hf_scope_release(s);
	} else {
		fprintf(stderr, "usage: waiter lock PATH | slices PATH | session PATH LANE | scope REGISTRY NAME SPEC\n");
		return 2;
	}
	if (rc < 0)
		fprintf(stderr, "waiter: %s\n", hf_strerror(rc));
	return rc < 0;
}
