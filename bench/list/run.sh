#!/usr/bin/env bash
# `holdfast list DIR` (one process, the CLI's walk) beside hf_fs_list(DIR)
# (the library's walk) on a tree of DIRS directories with LOCKS held locks,
# alternating in one run: the cost of a second walk if `holdfast list` took
# its locks and sessions from the library and kept its own walk for the
# flock records. usage: bench/list/run.sh BUILD_DIR [DIRS [LOCKS [RUNS]]]
# (defaults 10000 100 15; the tree on tmpfs under /dev/shm, removed after).
set -eu
build=$(cd "${1:-build}" && pwd)
bin=$build/bench/list/bench-list
[ -x "$bin" ] || { echo "build with -Dbench=true first: ninja -C $build" >&2; exit 2; }
dir=/dev/shm/hf-bench-list.$$
trap 'rm -rf "$dir"' EXIT
"$bin" "$build/holdfast" "$dir" "${2:-10000}" "${3:-100}" "${4:-15}"
