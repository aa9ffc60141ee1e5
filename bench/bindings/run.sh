#!/usr/bin/env bash
# bench/bindings/run.sh BUILD_DIR - an acquire+release cycle of a directory
# lock from each language's binding (Rust: bindings/rust/examples/cycle.rs in
# a release build; Node: cycle.js, the addon's sync calls; Python: cycle.py)
# beside the C library's own cycle (bench-bindings-cycle, linked with the
# shared library as the bindings are), side by side in one run on one file
# system: ROUNDS
# rounds, each running every program once in turn (CYCLES cycles each, one
# handle kept); per language the median of its rounds' medians, and its ratio
# to C's. Goals (issue 10): Rust and Node within 1.3x, Python within 2x.
# BENCH_FS (default /dev/shm), CYCLES (2000), ROUNDS (5).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
declare -A cmd
cmd[c]="$build/bench/bindings/bench-bindings-cycle"
# Rust: the release build of bindings/rust/examples/cycle.rs
if command -v cargo >/dev/null; then
	if PKG_CONFIG_PATH="$build/meson-uninstalled" CARGO_TARGET_DIR="$build/rust-target" \
		cargo build --offline --release --quiet --features system --example cycle \
		--manifest-path "$root/bindings/rust/Cargo.toml"; then
		cmd[rust]="$build/rust-target/release/examples/cycle"
	fi
fi
# Node: the addon bindings/node/test.sh built; Python: Debian's python3
if [ -f "$root/bindings/node/build/holdfast.node" ] && command -v node >/dev/null; then
	cmd[node]="node $here/cycle.js"
fi
if [ -f "$build/libholdfast.so" ]; then
	export HOLDFAST_LIB="$build/libholdfast.so" PYTHONPATH="$root/bindings/python/src"
	cmd[python]="${PYTHON:-/usr/bin/python3} $here/cycle.py"
fi
langs="c"
for l in rust node python; do [ -n "${cmd[$l]:-}" ] && langs="$langs $l"; done
d=$(mktemp -d "$fs/hf-bench-bindings.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
for ((r = 0; r < rounds; r++)); do
	for l in $langs; do
		# shellcheck disable=SC2086 # a command line: "node .../cycle.js"
		cycle "$l" ${cmd[$l]}
	done
done
c_med=$(median <<<"${all[c]}")
printf '%-8s %12s %8s  (%s, %d rounds x %d cycles)\n' lang median_ns ratio "$fs" "$rounds" "$cycles"
for l in $langs; do
	m=$(median <<<"${all[$l]}")
	printf '%-8s %12d %8.2f\n' "$l" "$m" "$(awk -v a="$m" -v b="$c_med" 'BEGIN { print a / b }')"
done
