#!/usr/bin/env bash
# bindings/rust/test.sh BUILD_DIR - build the crate against the libholdfast of
# a meson build (--features system, its meson-uninstalled pkg-config file) and
# run its tests and examples, offline; then link it statically once. Cargo's
# output goes under BUILD_DIR (nothing in the source tree). The default build
# (libholdfast compiled from the bundled C sources) is tests/install/rust.sh's
# (make check-install-rust).
set -eu
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
command -v cargo >/dev/null || { echo "bindings/rust: cargo is not installed" >&2; exit 1; }
export PKG_CONFIG_PATH="$build/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CARGO_TARGET_DIR="$build/rust-target"
export HOLDFAST_BIN="$build/holdfast" # tests/etcd.rs: the other holder
cd "$here"
cargo test --offline --quiet --features system
HOLDFAST_STATIC=1 CARGO_TARGET_DIR="$build/rust-target-static" cargo build --offline --quiet --features system --example cycle
# the static example runs without libholdfast.so on the library path
if ldd "$build/rust-target-static/debug/examples/cycle" | grep -q libholdfast; then
	echo "bindings/rust: HOLDFAST_STATIC=1 still links libholdfast.so" >&2
	exit 1
fi
d=$(mktemp -d /tmp/holdfast-rs-static.XXXXXX)
"$build/rust-target-static/debug/examples/cycle" "$d" 10 >/dev/null
rm -rf "$d"
echo "bindings/rust: all tests passed"
