#!/usr/bin/env bash
# Scope registry: a register+release cycle with n live allocations, beside
# the same two file round trips done with jansson alone (the floor), both
# measured in one run, alternating. usage: bench/scope/run.sh BUILD_DIR [RUNS]
set -eu
build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
bin=$build/bench/scope/bench-scope
[ -x "$bin" ] || { echo "build first: ninja -C $build" >&2; exit 2; }
dir=/dev/shm/hf-bench-scope.$$
trap 'rm -rf "$dir"' EXIT
iters() { case $1 in 10) echo 400;; 100) echo 300;; 1000) echo 60;; *) echo 15;; esac; }
echo "tmpfs ($dir), median ms per register+release cycle, $runs runs each"
printf '%-9s %6s %10s %12s %10s %7s\n' owners n bytes holdfast_ms floor_ms ratio
for mode in shared distinct glob; do
	for n in 10 100 1000 10000; do
		# n distinct live processes: 10000 sleeping children is more than
		# this shared 2-core machine should carry; stop at 1000
		[ "$mode" = distinct ] && [ "$n" -gt 1000 ] && continue
		# glob: the shared owners, every pod a glob under the new pod's
		# literal line (the automaton decides each pair)
		[ "$mode" = glob ] && [ "$n" -gt 1000 ] && continue
		for r in $(seq 1 "$runs"); do
			rm -rf "$dir"
			arg=""; [ "$mode" != shared ] && arg=$mode
			set -- $("$bin" "$dir" "$n" "$(iters "$n")" $arg)
			printf '%-9s %6s %10s %12s %10s %7s\n' "$mode" "$1" "$2" "$4" "$5" "$6"
		done
	done
done
