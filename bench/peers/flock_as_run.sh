#!/usr/bin/env bash
# flock_as_run.sh run [-n] --lock L -- CMD [ARG...]: util-linux flock(1)
# behind the command line of `holdfast run`, so that bench/run/killed_wrapper.sh
# (which drives "$HF run ...") measures flock with the very same scenario.
# Exec's flock, so the wrapper's pid is flock's own.
set -u
[ "${1:-}" = run ] || { echo "flock_as_run.sh: usage: run [-n] --lock L -- CMD..." >&2; exit 64; }
shift
opts=()
if [ "${1:-}" = -n ]; then
	opts+=(-n)
	shift
fi
if [ "${1:-}" != --lock ] || [ $# -lt 3 ]; then
	echo "flock_as_run.sh: --lock L expected" >&2
	exit 64
fi
lock=$2
shift 2
[ "${1:-}" = -- ] && shift
exec flock "${opts[@]}" "$lock" "$@"
