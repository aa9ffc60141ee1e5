#!/usr/bin/env bash
# tests/term/ul_flock.sh HOLDFAST [UTIL_LINUX_GIT_DIR] - util-linux's own
# flock tests, run unmodified from their repository (a bare git directory,
# by default the mirror /work/.mirror/util-linux+util-linux/repo) against
# `holdfast flock`: their tests/ is extracted into a temporary directory and
# run with --builddir (after another option: their parser wants a space
# before it) pointing at a directory whose `flock` execs `HOLDFAST flock
# "$@"` (their TS_CMD_FLOCK) and whose lslocks is the system's. TESTS (default "flock range-lock": the cases with --shared; the
# first runs every subtest beside a --shared holder, flock(2) and fcntl)
# picks tests of tests/ts/flock. Prints each subtest's result and the
# counts; exit 0 when none failed, 77 when the repository is missing.
# range-lock asks lslocks for the pid of an OFD lock, which lslocks before
# util-linux 2.40 cannot name (it prints -1): with the system's 2.38 it
# fails whatever flock took the lock. KEEP=1 keeps the temporary directory.
# Nothing is copied into this repository.
set -u
hf=$(readlink -f "${1:?usage: ul_flock.sh HOLDFAST [GIT_DIR]}")
git_dir=${2:-/work/.mirror/util-linux+util-linux/repo}
TESTS=${TESTS:-flock range-lock}
[ -d "$git_dir" ] || { echo "ul_flock: no util-linux repository at $git_dir"; exit 77; }
work=$(mktemp -d /tmp/hf-ul-flock.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
git --git-dir="$git_dir" archive HEAD tests | tar -x -C "$work" || exit 1
mkdir -p "$work/build"
printf '#!/bin/sh\nexec "%s" flock "$@"\n' "$hf" >"$work/build/flock"
chmod +x "$work/build/flock"
ln -s "$(command -v lslocks)" "$work/build/lslocks"
echo "# util-linux $(git --git-dir="$git_dir" describe --tags --always HEAD 2>/dev/null) tests/ts/flock against $hf"
rc=0
for t in $TESTS; do
	(cd "$work/tests" && bash "ts/flock/$t" --verbose --builddir="$work/build" --srcdir="$work" \
		--noskip-commands) >"$work/$t.log" 2>&1
	r=$?
	[ $r -ne 0 ] && rc=1
	# the harness writes one line per test and subtest: "...NAME: DESC ... OK|FAILED"
	sed -n 's/\x1b\[[0-9;]*m//g; /\.\.\./p' "$work/$t.log"
	[ $r -ne 0 ] && { echo "--- $t log:"; tail -40 "$work/$t.log"; }
done
exit $rc
