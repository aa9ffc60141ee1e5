#!/usr/bin/env bash
# bench/node/bundled.sh BUILD_DIR - does `npm install`'s addon (libholdfast's
# sources compiled in, bindings/node/build.sh's default) cycle as fast as the
# developer's addon linked to BUILD_DIR/libholdfast.so (HOLDFAST_BUILD)?
# Both are built from one copy of the sources in a temp dir, then
# bench/bindings/cycle.js (acquire+release from Node, sync) runs each in turn,
# ROUNDS rounds (default 5) of CYCLES cycles (2000) on BENCH_FS (/dev/shm);
# prints each one's median of round medians and bundled/linked.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fs=${BENCH_FS:-/dev/shm}
cycles=${CYCLES:-2000}
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
d=$(mktemp -d "$fs/hf-bench-bundled.XXXXXX")
trap 'rm -rf "$tmp" "$d"' EXIT
tar -C "$root" --exclude=node_modules --exclude=build --exclude=libholdfast -cf - \
	meson.build include src/base src/lib bindings/node | tar -C "$tmp" -xf -
sh "$tmp/bindings/node/build.sh"
mv "$tmp/bindings/node/build/holdfast.node" "$tmp/bundled.node"
HOLDFAST_BUILD=$build sh "$tmp/bindings/node/build.sh"
mv "$tmp/bindings/node/build/holdfast.node" "$tmp/linked.node"
declare -A all
for ((r = 0; r < rounds; r++)); do
	for k in linked bundled; do
		out=$(HOLDFAST_ADDON=$tmp/$k.node node "$root/bench/bindings/cycle.js" "$d" "$cycles")
		all[$k]="${all[$k]:-} $(sed -n 's/.*"median_ns":\([0-9]*\).*/\1/p' <<<"$out")"
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
l=$(median <<<"${all[linked]}") b=$(median <<<"${all[bundled]}")
printf 'node acquire+release, median ns (%s, %d rounds x %d cycles)\n' "$fs" "$rounds" "$cycles"
printf 'linked  %8d\nbundled %8d\nbundled/linked %.2f\n' "$l" "$b" "$(awk -v a="$b" -v b="$l" 'BEGIN { print a / b }')"
