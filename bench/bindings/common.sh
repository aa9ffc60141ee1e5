# Sourced by bench/bindings/run.sh and bench/node/bundled.sh: the knobs of a
# cycle benchmark and how its rounds add up. BUILD_DIR is the sourcing
# script's $1 (default build); BENCH_FS (/dev/shm), CYCLES (2000), ROUNDS (5).
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fs=${BENCH_FS:-/dev/shm}
cycles=${CYCLES:-2000}
rounds=${ROUNDS:-5}
declare -A all
# cycle KEY CMD...: one run of a cycle program (CMD DIR CYCLES prints
# {"median_ns":N,...}) in the directory $d; its median joins all[KEY].
cycle() {
	local k=$1 out
	shift
	out=$("$@" "$d" "$cycles") || { echo "bench: $k failed" >&2; exit 1; }
	all[$k]="${all[$k]:-} $(sed -n 's/.*"median_ns":\([0-9]*\).*/\1/p' <<<"$out")"
}
# The median of the numbers on stdin (one line, blank-separated).
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
