#!/usr/bin/env bash
# bench/session/run.sh BUILD_DIR - the session lock's figures, as ratios
# measured side by side in one run:
#   1. in-process take+release against the bare system-call sequence of the
#      same steps (bench-session: alternating cycles, medians; on tmpfs and
#      on /tmp);
#   2. `holdfast session take` and `holdfast session release` as whole
#      processes against /bin/true, with dotlockfile for reference:
#      a. interleaved (bench-session --spawn: every command in turn, each
#         after its untimed prepare step), robust to a machine whose load
#         moves;
#      b. hyperfine -N with --prepare setting the lock state before every
#         run, in ROUNDS rounds; the median of the per-round ratios.
# Environment: RUNS (whole-process runs per command, default 1000), ROUNDS
# (hyperfine rounds, default 3), CYCLES (in-process cycles, default 20000),
# BENCH_DIR (default /dev/shm).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
hf=$build/holdfast
bench=$build/bench/session/bench-session
runs=${RUNS:-1000}
rounds=${ROUNDS:-3}
cycles=${CYCLES:-20000}
base=${BENCH_DIR:-/dev/shm}
for tool in hyperfine jq; do
	command -v "$tool" >/dev/null || { echo "bench/session: $tool is not installed" >&2; exit 1; }
done
dir=$(mktemp -d "$base/holdfast-bench.XXXXXX")
ext=$(mktemp -d /tmp/holdfast-bench.XXXXXX)
trap 'rm -rf "$dir" "$ext"' EXIT

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$bench" "$dir" "$cycles"
"$bench" "$ext" $((cycles / 4))
echo
"$bench" --spawn "$hf" "$dir" "$runs"
echo

L=$dir/.session.lock
D=$dir/dot.lock
cmds=(
	-n true --prepare "rm -f $dir/none" /bin/true
	-n "holdfast session take" --prepare "rm -f $L" "$hf session take --lane data --file $L"
	-n "holdfast session release"
	--prepare "sh -c 'rm -f $L; $hf session take --lane data --file $L 2>/dev/null'"
	"$hf session release --lane data --file $L"
)
if command -v dotlockfile >/dev/null; then
	cmds+=(
		-n "dotlockfile -l" --prepare "rm -f $D" "dotlockfile -l -r 0 $D"
		-n "dotlockfile -u" --prepare "sh -c 'rm -f $D; dotlockfile -l -r 0 $D'"
		"dotlockfile -u $D"
	)
fi
for r in $(seq "$rounds"); do
	hyperfine -N --style none --warmup 50 --runs $((runs / rounds)) \
		--export-json "$dir/round-$r.json" "${cmds[@]}" >/dev/null 2>&1
done
echo "whole processes on $base, hyperfine -N, $rounds rounds x $((runs / rounds)) runs" \
	"(--prepare sets the lock state; median of the per-round ratios):"
jq -rs '
	def median: sort | .[length / 2 | floor];
	def ratio(f): map(. as $r | ($r.results[] | select(.command == "true") | f) as $t
		| $r.results | map({key: .command, value: (f / $t)}) | from_entries);
	(ratio(.median)) as $m | (ratio(.times | sort | .[length / 10 | floor])) as $p
	| (map(.results[] | {key: .command, value: .median}) | group_by(.key)
	   | map({key: .[0].key, value: (map(.value) | median)}) | from_entries) as $ms
	| .[0].results[].command
	| "  \(. + " " * (26 - length)) median \($ms[.] * 1e6 | round / 1e3) ms"
	  + "  \([$m[][.]] | median | . * 100 | round / 100)x /bin/true"
	  + "   (p10 \([$p[][.]] | median | . * 100 | round / 100)x)"' "$dir"/round-*.json
echo
echo "goals: in-process <= 1.5x the bare sequence; take and release each <= 1.2x /bin/true"
