#!/bin/sh
# build.sh - compile the native addon (src/addon.c) into build/holdfast.node,
# directly with the C compiler: nothing is downloaded (no node-gyp headers).
# `npm install` runs it (package.json's "install" script).
#
# Where libholdfast comes from, first match wins:
#   HOLDFAST_BUILD=DIR      a meson build directory of this repository: its
#                           pkg-config file DIR/meson-uninstalled (the addon
#                           links DIR/libholdfast.so, found again at run time
#                           through an rpath) - the developer's flow (test.sh)
#   HOLDFAST_SYSTEM=1       an installed holdfast.pc (PKG_CONFIG_PATH as set)
#   otherwise (bundled)     libholdfast's C sources compiled INTO the addon:
#                           the package's copy in libholdfast/ (made by
#                           `npm pack`: prepack.sh), else the repository's
#                           ../../src and ../../include. The addon then needs
#                           only libc, libjansson and libcurl at run time.
# Node's headers: NODE_INCLUDE, else <node's prefix>/include/node, else
# /usr/include/node. CC defaults to cc.
#
# A missing compiler, node_api.h, jansson.h or curl/curl.h ends the build
# with one message naming the Debian packages to install, and exit 1.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
cc=${CC:-cc}
me="holdfast (bindings/node/build.sh)"

if [ -n "${NODE_INCLUDE:-}" ]; then
	inc=$NODE_INCLUDE
else
	inc=
	node=$(command -v node 2>/dev/null || :)
	[ -n "$node" ] && inc=$(dirname "$(dirname "$node")")/include/node
	[ -n "$inc" ] && [ -f "$inc/node_api.h" ] || inc=/usr/include/node
fi

mode=bundled
if [ -n "${HOLDFAST_BUILD:-}" ]; then
	mode=meson
elif [ -n "${HOLDFAST_SYSTEM:-}" ]; then
	mode=system
fi

# What is missing, gathered into one message (Debian's package names).
missing=
need() { missing="$missing${missing:+, }$1"; }
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
if ! command -v "${cc%% *}" >/dev/null 2>&1; then
	need "a C compiler '$cc' (apt-get install gcc)"
else
	[ -f "$inc/node_api.h" ] ||
		need "Node's headers node_api.h in $inc (apt-get install libnode-dev, or nodejs from nodesource; or set NODE_INCLUDE)"
	if [ "$mode" = bundled ]; then
		printf '#include <jansson.h>\nint main(void){return 0;}\n' >"$tmpd/j.c"
		$cc -c -o "$tmpd/j.o" "$tmpd/j.c" 2>/dev/null ||
			need "jansson.h (apt-get install libjansson-dev)"
		printf '#include <curl/curl.h>\nint main(void){return 0;}\n' >"$tmpd/c.c"
		$cc -c -o "$tmpd/c.o" "$tmpd/c.c" 2>/dev/null ||
			need "curl/curl.h (apt-get install libcurl4-openssl-dev)"
	fi
fi
if [ -n "$missing" ]; then
	echo "$me: cannot compile the native addon: missing $missing" >&2
	exit 1
fi

mkdir -p build
if [ "$mode" = bundled ]; then
	if [ -d libholdfast/src/lib ]; then
		top=libholdfast # the package's copy (npm pack, prepack.sh)
	elif [ -f ../../src/lib/errors.c ] && [ -f ../../include/holdfast.h ]; then
		top=../.. # inside the repository
	else
		echo "$me: libholdfast's C sources are in neither $here/libholdfast nor $here/../.. (pack with npm pack, which copies them)" >&2
		exit 1
	fi
	# The one version: meson.build's project(version : ...).
	version=$(sed -n "s/^ *version *: *'\([0-9.]*\)'.*/\1/p" "$top/meson.build" | head -n 1)
	case $version in
	*.*.*) ;;
	*) echo "$me: no version in $top/meson.build" >&2; exit 1 ;;
	esac
	major=${version%%.*} patch=${version##*.}
	minor=${version#*.} minor=${minor%.*}
	mkdir -p build/gen
	sed -e "s/@major@/$major/" -e "s/@minor@/$minor/" -e "s/@patch@/$patch/" \
		-e "s/@version@/$version/" "$top/include/holdfast-version.h.in" >build/gen/holdfast-version.h
	# The installed library's objects (meson.build: base_sources +
	# lib_sources + the etcd client): every .c of src/base and src/lib but
	# the fault engine (faults.c: no HOLDFAST_FAULTS in a program using the
	# library).
	srcs=
	for f in "$top"/src/base/*.c "$top"/src/lib/*.c "$top"/src/lib/*/*.c; do
		case $f in */faults.c) continue ;; esac
		srcs="$srcs $f"
	done
	# Only the addon's module entry is exported: the library's hf_* stay
	# inside the addon (no interposition with another libholdfast loaded in
	# the process).
	printf '{ global: napi_register_module_v*; node_api_module_get_api_version_v*; local: *; };\n' \
		>build/gen/exports.map
	# Each source compiled on its own (2 at a time), then one link. No
	# -Werror here: a user's newer compiler may warn where ours does not,
	# and that must not fail their install (the repository's builds and
	# tests/install/node.sh keep the sources warning-free).
	rm -rf build/obj
	mkdir -p build/obj
	jobs=0
	pids=
	for f in src/addon.c $srcs; do
		o=build/obj/$(basename "$f" .c).o
		gnu=-D_GNU_SOURCE # as meson.build's project arguments; addon.c defines its own
		[ "$f" = src/addon.c ] && gnu=
		# shellcheck disable=SC2086
		$cc -std=gnu11 -O2 -g -fPIC -Wall -Wextra -Wno-unused-parameter \
			-fvisibility=hidden $gnu -DNODE_GYP_MODULE_NAME=holdfast \
			-I"$inc" -Ibuild/gen -I"$top/include" -I"$top/src/base" -I"$top/src/lib" -I"$top/src/lib/fs" -I"$top/src/lib/etcd" \
			${CFLAGS:-} -c -o "$o" "$f" &
		pids="$pids $!"
		jobs=$((jobs + 1))
		if [ "$jobs" -ge "${HOLDFAST_JOBS:-2}" ]; then
			for p in $pids; do wait "$p"; done
			pids='' jobs=0
		fi
	done
	for p in $pids; do wait "$p"; done
	# shellcheck disable=SC2086 # LDFLAGS: words
	$cc -shared -g -Wl,--version-script=build/gen/exports.map -Wl,--as-needed ${LDFLAGS:-} \
		-o build/holdfast.node.tmp build/obj/*.o -ljansson -lcurl -pthread
	mv build/holdfast.node.tmp build/holdfast.node
	rm -rf build/obj # not part of what is installed
	exit 0
fi

if [ "$mode" = meson ]; then
	HOLDFAST_BUILD=$(cd "$HOLDFAST_BUILD" && pwd)
	export PKG_CONFIG_PATH="$HOLDFAST_BUILD/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
pkg-config --exists holdfast 2>/dev/null || {
	echo "$me: no holdfast.pc (HOLDFAST_BUILD=${HOLDFAST_BUILD:-}; PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-})" >&2
	exit 1
}
cflags=$(pkg-config --cflags holdfast)
libs=$(pkg-config --libs holdfast)
# -L dirs become rpaths, so the addon finds the library it was built against.
rpath=
for f in $libs; do
	case $f in -L*) rpath="$rpath -Wl,-rpath,${f#-L}" ;; esac
done
# shellcheck disable=SC2086
$cc -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror -fvisibility=hidden \
	-DNODE_GYP_MODULE_NAME=holdfast -I"$inc" $cflags \
	-o build/holdfast.node.tmp src/addon.c $libs $rpath
mv build/holdfast.node.tmp build/holdfast.node
