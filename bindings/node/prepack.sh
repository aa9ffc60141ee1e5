#!/bin/sh
# prepack.sh - `npm pack` / `npm publish` run it (package.json "prepack"):
# copies libholdfast's C sources from the repository (../../) into
# libholdfast/, so that the tarball carries them and its install step
# (build.sh) compiles them into the addon. `prepack.sh clean` (the
# "postpack" script) removes the copy again; it is git-ignored.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
rm -rf libholdfast
[ "${1:-}" = clean ] && exit 0
top=../..
if ! [ -f "$top/src/lib/errors.c" ] || ! [ -f "$top/include/holdfast.h" ] || ! [ -f "$top/meson.build" ]; then
	echo "holdfast (bindings/node/prepack.sh): not inside the holdfast repository ($here/../..)" >&2
	exit 1
fi
mkdir -p libholdfast/src libholdfast/include
cp -R "$top/src/base" "$top/src/lib" libholdfast/src/
cp "$top/include/holdfast.h" "$top/include/holdfast-version.h.in" libholdfast/include/
cp "$top/meson.build" libholdfast/ # the version (build.sh reads it)
for f in LICENSE COPYING; do
	[ -f "$top/$f" ] && cp "$top/$f" libholdfast/
done
exit 0
