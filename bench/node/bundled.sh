#!/usr/bin/env bash
# bench/node/bundled.sh BUILD_DIR - does `npm install`'s addon (libholdfast's
# sources compiled in, bindings/node/build.sh's default) cycle as fast as the
# developer's addon linked to BUILD_DIR/libholdfast.so (HOLDFAST_BUILD)?
# Both are built from one copy of the sources in a temp dir, then
# bench/bindings/cycle.js (acquire+release from Node, sync) runs each in turn,
# ROUNDS rounds (default 5) of CYCLES cycles (2000) on BENCH_FS (/dev/shm);
# prints each one's median of round medians and bundled/linked.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../bindings/common.sh"
tmp=$(mktemp -d)
d=$(mktemp -d "$fs/hf-bench-bundled.XXXXXX")
trap 'rm -rf "$tmp" "$d"' EXIT
tar -C "$root" --exclude=node_modules --exclude=build --exclude=libholdfast -cf - \
	meson.build include src/base src/lib bindings/node | tar -C "$tmp" -xf -
sh "$tmp/bindings/node/build.sh"
mv "$tmp/bindings/node/build/holdfast.node" "$tmp/bundled.node"
HOLDFAST_BUILD=$build sh "$tmp/bindings/node/build.sh"
mv "$tmp/bindings/node/build/holdfast.node" "$tmp/linked.node"
for ((r = 0; r < rounds; r++)); do
	for k in linked bundled; do
		cycle "$k" env HOLDFAST_ADDON="$tmp/$k.node" node "$root/bench/bindings/cycle.js"
	done
done
l=$(median <<<"${all[linked]}") b=$(median <<<"${all[bundled]}")
printf 'node acquire+release, median ns (%s, %d rounds x %d cycles)\n' "$fs" "$rounds" "$cycles"
printf 'linked  %8d\nbundled %8d\nbundled/linked %.2f\n' "$l" "$b" "$(awk -v a="$b" -v b="$l" 'BEGIN { print a / b }')"
