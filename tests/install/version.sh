#!/bin/sh
# One version number (make test, suite version): meson.build's project
# version is the one; every other place that states it must agree - the
# bindings' manifests (Node, Python, Rust), debian/changelog's newest entry
# (its upstream part), `holdfast --version` and the library's hf_version().
# Fails naming each that differs. Usage: version.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
want=$(sed -n "s/^  version : '\(.*\)',/\1/p" "$src/meson.build")
[ -n "$want" ] || { echo "version.sh: no version in $src/meson.build" >&2; exit 1; }
bad=0
check() { # WHERE GOT
	if [ "$2" != "$want" ]; then
		echo "version.sh: $1 says '$2', meson.build says '$want'" >&2
		bad=$((bad + 1))
	fi
}
py() { /usr/bin/python3 -c "$@"; }
check bindings/node/package.json \
	"$(py 'import json,sys; print(json.load(open(sys.argv[1])).get("version", ""))' "$src/bindings/node/package.json")"
check bindings/python/pyproject.toml \
	"$(py 'import tomllib,sys; print(tomllib.load(open(sys.argv[1], "rb")).get("project", {}).get("version", ""))' \
		"$src/bindings/python/pyproject.toml")"
check bindings/rust/Cargo.toml \
	"$(py 'import tomllib,sys; print(tomllib.load(open(sys.argv[1], "rb")).get("package", {}).get("version", ""))' \
		"$src/bindings/rust/Cargo.toml")"
# debian/changelog's first line: "holdfast (EPOCH:UPSTREAM-REVISION) ..."
deb=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$src/debian/changelog")
deb=${deb#*:}
check "debian/changelog (${deb:-no version})" "${deb%-*}"
cli=$("$build/holdfast" --version)
check "holdfast --version ('$cli')" "${cli#holdfast }"
check "hf_version() of $build/libholdfast.so.0" \
	"$(py 'import ctypes,sys; f=ctypes.CDLL(sys.argv[1]).hf_version; f.restype=ctypes.c_char_p; print(f().decode())' \
		"$build/libholdfast.so.0")"
[ "$bad" = 0 ] || exit 1
echo "version: $want in meson.build, the three manifests, debian/changelog, holdfast --version and hf_version()"
