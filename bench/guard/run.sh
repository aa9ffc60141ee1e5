#!/usr/bin/env bash
# The commit guard: `holdfast scope check --staged` on a commit of 1,000
# staged paths against a registry of 1,000 live pods, beside `git diff
# --cached --name-status -z --no-renames` alone (the git call the guard
# makes: its floor), both measured in one run, alternating (bench_guard.c).
# Goal (issue 22): the guard under 50 ms.
# usage: bench/guard/run.sh BUILD_DIR [RUNS] [PODS] [PATHS]
set -eu
build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
pods=${3:-1000}
paths=${4:-1000}
bin=$build/bench/guard/bench-guard
[ -x "$bin" ] || { echo "build first: ninja -C $build" >&2; exit 2; }
dir=/dev/shm/hf-bench-guard.$$
trap 'rm -rf "$dir"' EXIT
echo "tmpfs ($dir), median ms per guard run (fork + exec), 15 runs each, $runs rounds"
printf '%-8s %6s %6s %12s %10s %7s\n' case pods paths holdfast_ms floor_ms ratio
for r in $(seq 1 "$runs"); do
	rm -rf "$dir"
	"$bin" "$build/holdfast" "$dir" "$pods" "$paths" 15 | while read -r c n p _ h f x; do
		printf '%-8s %6s %6s %12s %10s %7s\n' "$c" "$n" "$p" "$h" "$f" "$x"
	done
done
