/* What occupies a lock's path, and whose it is, in the refusal's words
 * (src/cli/lockpath.c, LP1-LP3): a regular file left by flock(1) or
 * dotlockfile, a FIFO, a socket, a symlink; a state directory or registry
 * of another user, named. From real bash, through the binary; the
 * cross-user cases run the other side as user nobody (setpriv) and need
 * root. */
#include "hft.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

HFT_SCRATCH_SUITE(pathkinds, 60);

#define HAS(s, sub) cr_assert(strstr((s), (sub)), "expected '%s' in: %s", (sub), (s))

/* Run script in dir with bash: exit code; stderr into *err. */
static int sh_in(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh_in(char **err, const char *fmt, ...)
{
	char body[4096], *script;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	cr_assert_geq(asprintf(&script, "cd '%s' || exit 99\n%s", dir, body), 0);
	int st = hft_sh(NULL, err, "bash", NULL, script);
	free(script);
	return st;
}

Test(pathkinds, regular_file_is_named_in_lock_run_and_edit)
{
	char *err;
	/* an flock(1) lock from before: `touch L` */
	cr_assert_eq(sh_in(&err, "touch L; echo old > L; \"$HOLDFAST_BIN\" lock acquire -n L"), 73,
		     "%s", err);
	HAS(err, "lock acquire L: L is a regular file, not a holdfast lock directory");
	HAS(err, "perhaps an flock(1)/dotlockfile lock from an older script; remove it if no "
		 "process uses it");
	cr_assert_null(strstr(err, "refused for safety"), "%s", err);
	cr_assert_null(strstr(err, "private directory"), "no wrong reason: %s", err);
	free(err);
	cr_assert_eq(sh_in(&err, "\"$HOLDFAST_BIN\" run -n --lock L -- touch ran; r=$?; test ! -e ran "
				 "|| exit 98; exit $r"),
		     73, "%s", err);
	HAS(err, "L is a regular file, not a holdfast lock directory");
	free(err);
	cr_assert_eq(sh_in(&err, "echo 1 > f; touch f.lock; \"$HOLDFAST_BIN\" edit f -- sh -c "
				 "'echo 2'; r=$?; test \"$(cat f)\" = 1 || exit 98; exit $r"),
		     73, "%s", err);
	HAS(err, "f.lock is a regular file, not a holdfast lock directory");
	free(err);
	/* status of a regular file reports its kernel (flock) locks, FK3:
	 * nobody holds this one, and reading it changes nothing */
	cr_assert_eq(sh_in(&err, "test \"$(\"$HOLDFAST_BIN\" lock status L)\" = free"), 0, "%s",
		     err);
	free(err);
	cr_assert_eq(sh_in(&err, "\"$HOLDFAST_BIN\" lock release L --token "
				 "0123456789abcdef0123456789abcdef"),
		     73);
	HAS(err, "L is a regular file");
	free(err);
	char *p;
	cr_assert_geq(asprintf(&p, "%s/L", dir), 0);
	char *c = hft_slurp(p);
	cr_assert_str_eq(c, "old\n", "the file at the path is never touched");
	free(c);
	free(p);
}

Test(pathkinds, fifo_socket_and_symlink)
{
	char *err;
	cr_assert_eq(sh_in(&err, "mkfifo F && \"$HOLDFAST_BIN\" lock acquire -n F"), 73, "%s", err);
	HAS(err, "F is a FIFO, not a holdfast lock directory; remove it if no process uses it");
	free(err);
	cr_assert_eq(sh_in(&err, "python3 -c \"import socket; socket.socket(socket.AF_UNIX)"
				 ".bind('K')\" && \"$HOLDFAST_BIN\" run -n --lock K -- true"),
		     73, "%s", err);
	HAS(err, "K is a socket, not a holdfast lock directory");
	free(err);
	cr_assert_eq(sh_in(&err, "mkdir real; ln -s real S && \"$HOLDFAST_BIN\" lock acquire -n S"),
		     77, "%s", err);
	HAS(err, "S is a symbolic link (to real), not a holdfast lock directory: holdfast never "
		 "follows one");
	free(err);
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (setpriv to user nobody)");
	if (access("/usr/bin/setpriv", X_OK) != 0 && access("/bin/setpriv", X_OK) != 0)
		cr_skip_test("no setpriv");
}

#define AS_NOBODY "setpriv --reuid=65534 --regid=65534 --clear-groups "

Test(pathkinds, foreign_state_directory_names_its_owner)
{
	need_root();
	cr_assert_eq(chmod(dir, 01777), 0);
	char *err;
	/* nobody made L (and L.holdfast) first; root is refused, told whose */
	cr_assert_eq(sh_in(&err, AS_NOBODY "\"$HOLDFAST_BIN\" lock acquire --pid 1 L >/dev/null "
					   "|| exit 90; \"$HOLDFAST_BIN\" lock acquire -n L"),
		     77, "%s", err);
	HAS(err, "L.holdfast is owned by user nobody (uid 65534), not you (user root (uid 0))");
	free(err);
	cr_assert_eq(sh_in(&err, "\"$HOLDFAST_BIN\" run -n --lock L -- true"), 77);
	HAS(err, "L.holdfast is owned by user nobody (uid 65534)");
	free(err);
	/* root's lock, nobody refused: the other way round */
	cr_assert_eq(sh_in(&err, "\"$HOLDFAST_BIN\" lock acquire --pid 1 R >/dev/null || exit 90; "
				 AS_NOBODY "\"$HOLDFAST_BIN\" lock acquire -n --pid 1 R"),
		     77, "%s", err);
	HAS(err, "R.holdfast is owned by user root (uid 0), not you (user nobody (uid 65534))");
	free(err);
	/* a parent nobody cannot write: its owner and mode named */
	cr_assert_eq(sh_in(&err, "mkdir -m 755 ro && " AS_NOBODY
				 "\"$HOLDFAST_BIN\" lock acquire -n --pid 1 ro/X"),
		     77, "%s", err);
	HAS(err, "the directory ro is not writable by you (user nobody (uid 65534); it is owned "
		 "by user root (uid 0), mode 0755)");
	free(err);
}

Test(pathkinds, foreign_registry_names_its_owner)
{
	need_root();
	cr_assert_eq(chmod(dir, 0755), 0);
	char *err;
	cr_assert_eq(sh_in(&err, "mkdir -m 700 reg && HOLDFAST_REGISTRY=$PWD/reg/scope.lock "
				 AS_NOBODY "\"$HOLDFAST_BIN\" scope list"),
		     77, "%s", err);
	HAS(err, "reg is owned by user root (uid 0), not you (user nobody (uid 65534))");
	free(err);
}
