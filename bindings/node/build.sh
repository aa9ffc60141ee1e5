#!/bin/sh
# build.sh - compile the native addon (src/addon.c) into build/holdfast.node,
# directly with the C compiler: nothing is downloaded (no node-gyp headers).
#
# Where libholdfast comes from, first match wins:
#   HOLDFAST_BUILD=DIR      a meson build directory of this repository: its
#                           pkg-config file DIR/meson-uninstalled (the addon
#                           links DIR/libholdfast.so, found again at run time
#                           through an rpath)
#   PKG_CONFIG_PATH         as set by the caller, for an installed holdfast.pc
#   ../../build             the repository's default build directory
# Node's headers: NODE_INCLUDE, else <node's prefix>/include/node, else
# /usr/include/node. CC defaults to cc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if [ -n "${HOLDFAST_BUILD:-}" ]; then
	HOLDFAST_BUILD=$(cd "$HOLDFAST_BUILD" && pwd)
	export PKG_CONFIG_PATH="$HOLDFAST_BUILD/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
	pc=holdfast
elif pkg-config --exists holdfast 2>/dev/null; then
	pc=holdfast
elif [ -d ../../build/meson-uninstalled ]; then
	export PKG_CONFIG_PATH="$(cd ../../build && pwd)/meson-uninstalled"
	pc=holdfast
else
	echo "build.sh: no libholdfast: set HOLDFAST_BUILD to a meson build directory (or install holdfast.pc)" >&2
	exit 1
fi
if [ -n "${NODE_INCLUDE:-}" ]; then
	inc=$NODE_INCLUDE
else
	prefix=$(dirname "$(dirname "$(command -v node)")")
	inc=$prefix/include/node
	[ -f "$inc/node_api.h" ] || inc=/usr/include/node
fi
[ -f "$inc/node_api.h" ] || { echo "build.sh: node_api.h not found (set NODE_INCLUDE)" >&2; exit 1; }
cflags=$(pkg-config --cflags "$pc")
libs=$(pkg-config --libs "$pc")
# -L dirs become rpaths, so the addon finds the library it was built against.
rpath=
for f in $libs; do
	case $f in -L*) rpath="$rpath -Wl,-rpath,${f#-L}" ;; esac
done
mkdir -p build
# shellcheck disable=SC2086
${CC:-cc} -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror -fvisibility=hidden \
	-DNODE_GYP_MODULE_NAME=holdfast -I"$inc" $cflags \
	-o build/holdfast.node.tmp src/addon.c $libs $rpath
mv build/holdfast.node.tmp build/holdfast.node
