#!/bin/bash
# The backends' rooms (issue 19): etcd's protocols (src/lib/etcd) stand on
# what sits above both backends (src/lib) and never on the file system's
# (src/lib/fs).
#   1. No etcd source includes a header of src/lib/fs, directly or through
#      another header: the compiler's own list of what each file includes
#      (cc -MM, the build's include path).
#   2. No etcd object calls a function of the file system's: nm -u of the
#      build's libholdfast-etcdc.a against what the src/lib/fs objects of
#      libholdfast-core.a define (nm --defined-only).
# Each finding names the file and the header or symbol.
#
# Usage: layout.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
src=${1:?source root}
build=${2:?build root}
failures=0
fail() {
	echo "layout.sh: FAIL: $*" >&2
	failures=$((failures + 1))
}

inc=(-I"$src/include" -I"$src" -I"$build" -I"$src/src/base" -I"$src/src/lib"
	-I"$src/src/lib/fs" -I"$src/src/lib/etcd")
shopt -s nullglob
etcd_c=("$src"/src/lib/etcd/*.c)
((${#etcd_c[@]})) || fail "no source in $src/src/lib/etcd"
fs_root=$(cd "$src/src/lib/fs" && pwd -P)

# 1: headers, transitively
checked=0
for f in "${etcd_c[@]}"; do
	deps=$("${CC:-cc}" -MM -std=gnu11 -D_GNU_SOURCE "${inc[@]}" "$f") ||
		{ fail "cc -MM $f failed"; continue; }
	checked=$((checked + 1))
	for d in $(tr -d '\\' <<<"$deps" | cut -d: -f2-); do
		[ -e "$d" ] || continue
		r=$(cd "$(dirname "$d")" && pwd -P)
		if [ "$r" = "$fs_root" ]; then
			fail "${f#"$src"/} includes ${d#"$src"/} (a header of src/lib/fs)"
		fi
	done
done
[ "$checked" -eq "${#etcd_c[@]}" ] || fail "only $checked of ${#etcd_c[@]} etcd sources checked"

# 2: symbols
etcd_a=$build/libholdfast-etcdc.a
core_a=$build/libholdfast-core.a
[ -f "$etcd_a" ] && [ -f "$core_a" ] || fail "no $etcd_a or $core_a (build first)"
if [ -f "$etcd_a" ] && [ -f "$core_a" ]; then
	# "archive:member:address type name": the members compiled from src/lib/fs
	fs_defs=$(nm -A --defined-only "$core_a" 2>/dev/null |
		awk '$1 ~ /src_lib_fs_[^:\/]*\.o:/ && $2 ~ /^[TDBRCVWG]$/ { print $3 }' | sort -u)
	[ -n "$fs_defs" ] || fail "no symbol defined by an src/lib/fs object in $core_a"
	# "archive:member: U name"
	while read -r member name; do
		if grep -qxF "$name" <<<"$fs_defs"; then
			fail "$member calls $name, a function of src/lib/fs"
		fi
	done < <(nm -A -u "$etcd_a" 2>/dev/null | awk '$2 == "U" { sub(/:$/, "", $1); sub(/.*[:\/]/, "", $1); print $1, $3 }')
	n_und=$(nm -u "$etcd_a" 2>/dev/null | grep -c ' U ' || true)
	[ "$n_und" -gt 0 ] || fail "nm -u $etcd_a lists no undefined symbol"
fi

if [ "$failures" -gt 0 ]; then
	echo "layout.sh: $failures failure(s)" >&2
	exit 1
fi
echo "layout.sh: ${#etcd_c[@]} etcd sources include no src/lib/fs header; libholdfast-etcdc.a calls no src/lib/fs function"
