#!/usr/bin/env bash
# The Rust crate installed as a Rust developer installs it, offline, from a
# clean environment (an empty CARGO_HOME, new crates in a temporary dir):
#   1. `cargo package` of bindings/rust: the .crate carries the C sources
#      (as files, not symlinks), unpacked outside the repository;
#   2. `cargo new` + `cargo add --path bindings/rust`, and a second crate
#      with a path dependency on the unpacked .crate; `cargo build --offline`;
#   3. each binary takes and releases a lock in a private mount namespace
#      where the repository (its build dirs and the crate's C sources),
#      /usr/local and the cargo target dirs are hidden by empty tmpfs mounts,
#      so no libholdfast is anywhere (ldconfig knows none, the binary needs
#      none and has no rpath);
#   with the libcurl headers hidden, the build fails naming the package;
#   4. control (with BUILD_DIR): the same program built with
#      `--features system` against BUILD_DIR's library, in the same
#      namespace, must FAIL to start - the hiding hides.
# Prints each step's command, time and size. Needs root (unshare --mount).
# Usage: tests/install/rust.sh [SOURCE_DIR [BUILD_DIR]]
set -euo pipefail
src=$(cd "${1:-.}" && pwd)
build=${2:+$(cd "$2" && pwd)}
crate=$src/bindings/rust
fail() { echo "install/rust.sh: FAIL: $*" >&2; exit 1; }
command -v cargo >/dev/null || fail "cargo is not installed"
[ "$(id -u)" = 0 ] || { echo "install/rust.sh: skipped (needs root for unshare --mount)"; exit 77; }

t=$(mktemp -d /tmp/holdfast-install-rust.XXXXXX)
trap 'rm -rf "$t"' EXIT
case "$t" in "$src"/*) fail "the temporary dir $t is inside the repository";; esac
mkdir -p "$t/work" "$t/run"
export CARGO_HOME=$t/work/cargo-home # no user config, no registry
unset PKG_CONFIG_PATH LD_LIBRARY_PATH HOLDFAST_STATIC
TIMEFORMAT='%R s'
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$crate/Cargo.toml" | head -1)

step() { echo "install/rust.sh: \$ $*"; }

# 1. the packaged crate
step "cargo package --offline --no-verify (in bindings/rust)"
(cd "$crate" && CARGO_TARGET_DIR=$t/work/pkg cargo package --offline --no-verify --allow-dirty --quiet)
dotcrate=$t/work/pkg/package/holdfast-$version.crate
[ -f "$dotcrate" ] || fail "no $dotcrate"
echo "install/rust.sh: packaged crate: $(du -sh "$dotcrate" | cut -f1)"
mkdir -p "$t/work/unpacked"
tar -xzf "$dotcrate" -C "$t/work/unpacked"
pkgdir=$t/work/unpacked/holdfast-$version
for f in csrc/include/holdfast.h csrc/include/holdfast-version.h.in csrc/base/sys.c csrc/lib/backend.c \
	csrc/lib/fs/dirlock.c csrc/lib/etcd/etcdlock.c; do
	[ -f "$pkgdir/$f" ] && [ ! -L "$pkgdir/$f" ] || fail "the .crate does not carry $f as a file"
done

# The program: takes the lock named by its argument, says its fence,
# releases it and checks it is free.
write_main() {
	cat >"$1/src/main.rs" <<'EOF'
fn main() {
    let path = std::env::args().nth(1).expect("usage: app LOCK_PATH");
    let g = holdfast::Lock::new(&path).unwrap().acquire().unwrap();
    println!("held {} fence {}", path, g.fence());
    g.release().unwrap();
    let state = holdfast::Lock::status(&path).unwrap();
    println!("released: {}", state.str("state").unwrap_or("?"));
}
EOF
}

new_app() { # NAME: a new binary crate
	(cd "$t/work" && cargo new --quiet --vcs none --name "$1" "$1")
	write_main "$t/work/$1"
}

build_app() { # NAME [cargo args]: build it, copy its binary to run/
	local name=$1
	shift
	step "cargo build --offline $* (in a new crate $name)"
	local t0=$EPOCHREALTIME
	(cd "$t/work/$name" && CARGO_TARGET_DIR=$t/work/$name/target cargo build --offline --quiet "$@")
	local took
	took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	cp "$t/work/$name/target/debug/$name" "$t/run/$name"
	echo "install/rust.sh: $name: built in $took s; binary $(du -sh "$t/run/$name" | cut -f1)"
}

# 2. `cargo add --path` of the repository's crate, and a path dependency on
#    the unpacked .crate
new_app app_path
step "cargo add --offline --path bindings/rust"
(cd "$t/work/app_path" && cargo add --offline --quiet --path "$crate")
build_app app_path
# a missing header fails the build with the package to install
curldir=$(dirname "$(echo '#include <curl/curl.h>' | ${CC:-cc} -E -H - 2>&1 >/dev/null | sed -n 's/^\. //p' | head -1)")
[ -d "$curldir" ] || fail "cannot find the libcurl headers' directory"
step "cargo build --offline with $curldir hidden (must fail naming libcurl4-openssl-dev)"
if (cd "$t/work/app_path" && unshare --mount --propagation private bash -c \
	"mount -t tmpfs -o size=1m hidden $curldir && CARGO_TARGET_DIR=$t/work/nocurl cargo build --offline --quiet" \
	>"$t/work/nocurl.log" 2>&1); then
	fail "the build succeeded without the libcurl headers"
fi
grep -q "install libcurl4-openssl-dev" "$t/work/nocurl.log" || { cat "$t/work/nocurl.log" >&2; fail "no hint naming libcurl4-openssl-dev"; }
rm -rf "$t/work/nocurl"
new_app app_pkg
echo "holdfast = { path = \"$pkgdir\" }" >>"$t/work/app_pkg/Cargo.toml"
build_app app_pkg

for app in app_path app_pkg; do
	if ldd "$t/run/$app" | grep -q libholdfast; then fail "$app links libholdfast.so"; fi
	if readelf -d "$t/run/$app" | grep -Eq 'RPATH|RUNPATH'; then fail "$app has an rpath"; fi
done

# 4. the control: the same program linking the build's libholdfast.so
if [ -n "$build" ] && [ -d "$build/meson-uninstalled" ]; then
	new_app app_system
	echo "holdfast = { path = \"$crate\", features = [\"system\"] }" >>"$t/work/app_system/Cargo.toml"
	PKG_CONFIG_PATH=$build/meson-uninstalled build_app app_system
	ldd "$t/run/app_system" | grep -q libholdfast || fail "the control does not link libholdfast.so"
fi

# 3. run where no libholdfast can be found
cat >"$t/run/hidden.sh" <<EOF
set -eu
for d in "$src" /usr/local "$t/work"; do mount -t tmpfs -o size=1m hidden "\$d"; done
[ ! -e "$crate/csrc" ] || { echo "the repository is still visible" >&2; exit 3; }
if ldconfig -p | grep -q libholdfast; then echo "ldconfig knows a libholdfast" >&2; exit 3; fi
cd "$t/run"
for app in app_path app_pkg; do
	rm -rf l
	out=\$(./\$app "$t/run/l")
	echo "\$app: \$out"
	case "\$out" in *"released: free"*) ;; *) echo "\$app did not take and release the lock" >&2; exit 4;; esac
done
if [ -x app_system ]; then
	if ./app_system "$t/run/l2" >/dev/null 2>app_system.err; then
		echo "control: the --features system binary ran with its library hidden" >&2; exit 5
	fi
	echo "control: app_system (--features system) fails as it should: \$(head -1 app_system.err)"
fi
EOF
step "run each binary in unshare --mount with the repository, /usr/local and the target dirs hidden"
unshare --mount --propagation private bash "$t/run/hidden.sh" || fail "the run without libholdfast failed (exit $?)"
echo "install/rust.sh: passed"
