#!/bin/bash
# The backends' rooms (issue 19). src/lib holds what sits above both
# backends (the handles, records, owners, path algebra, the registry's
# table, the backend list); src/lib/fs the file system's protocols;
# src/lib/etcd etcd's. A handle reaches a backend only through the table of
# backend.h, so:
#   1. No source of src/lib includes a header of another room than its own
#      or src/lib's: an src/lib file none of src/lib/fs or src/lib/etcd, an
#      fs file none of etcd's, an etcd file none of the file system's -
#      directly or through another header (cc -MM, the build's include
#      path).
#   2. No object calls or reads a symbol another room defines, by the same
#      rule (nm -u of each member of libholdfast-core.a, -etcdc.a and
#      -fsonly.a against what each room's members define), except the
#      backend list (src/lib/backend.c), whose entries are the rooms'
#      tables, hf_fs_backend and hf_etcd_backend, and nothing else of them.
#   3. The static CLI (holdfast) has no etcd object: no hf_etcd* symbol;
#      holdfast-etcd has hf_etcd_backend.
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
lib_root=$(cd "$src/src/lib" && pwd -P)

# The room of a directory (physical path) or of an archive member's name.
room_of_dir() {
	case $1 in
	"$lib_root") echo lib ;;
	"$lib_root/fs") echo fs ;;
	"$lib_root/etcd") echo etcd ;;
	*) echo other ;;
	esac
}
room_of_member() {
	case $1 in
	src_lib_fs_*) echo fs ;;
	src_lib_etcd_*) echo etcd ;;
	src_lib_*) echo lib ;;
	*) echo other ;;
	esac
}
# May room $1 use room $2?
allowed() {
	[ "$2" = other ] || [ "$2" = lib ] || [ "$1" = "$2" ]
}

# 1: headers, transitively
checked=0
all_c=("$src"/src/lib/*.c "$src"/src/lib/fs/*.c "$src"/src/lib/etcd/*.c)
((${#all_c[@]})) || fail "no source in $src/src/lib"
for f in "${all_c[@]}"; do
	mine=$(room_of_dir "$(cd "$(dirname "$f")" && pwd -P)")
	deps=$("${CC:-cc}" -MM -std=gnu11 -D_GNU_SOURCE "${inc[@]}" "$f") ||
		{ fail "cc -MM $f failed"; continue; }
	checked=$((checked + 1))
	for d in $(tr -d '\\' <<<"$deps" | cut -d: -f2-); do
		[ -e "$d" ] || continue
		theirs=$(room_of_dir "$(cd "$(dirname "$d")" && pwd -P)")
		allowed "$mine" "$theirs" ||
			fail "${f#"$src"/} includes ${d#"$src"/} (a header of src/lib/$theirs)"
	done
done
[ "$checked" -eq "${#all_c[@]}" ] || fail "only $checked of ${#all_c[@]} sources checked"

# 2: symbols
archives=("$build/libholdfast-core.a" "$build/libholdfast-etcdc.a" "$build/libholdfast-fsonly.a")
for a in "${archives[@]}"; do
	[ -f "$a" ] || fail "no $a (build first)"
done
if [ "$failures" -eq 0 ]; then
	# "room symbol" for every symbol a member of a room defines
	defs=$(for a in "${archives[@]}"; do nm -A --defined-only "$a" 2>/dev/null; done |
		awk '$2 ~ /^[TDBRCVWG]$/ { m = $1; sub(/:[^:]*$/, "", m); sub(/.*[:\/]/, "", m); print m, $3 }' |
		while read -r member name; do echo "$(room_of_member "$member") $name"; done | sort -u)
	[ -n "$(grep '^fs ' <<<"$defs")" ] || fail "no symbol defined by an src/lib/fs object"
	[ -n "$(grep '^etcd ' <<<"$defs")" ] || fail "no symbol defined by an src/lib/etcd object"
	n_und=0
	while read -r member name; do
		n_und=$((n_und + 1))
		mine=$(room_of_member "$member")
		[ "$mine" = other ] && continue
		while read -r theirs; do
			allowed "$mine" "$theirs" && continue
			if [ "$member" = src_lib_backend.c.o ] &&
				{ [ "$name" = hf_fs_backend ] || [ "$name" = hf_etcd_backend ]; }; then
				continue # the list's entries
			fi
			fail "$member uses $name, defined in src/lib/$theirs"
		done < <(awk -v n="$name" '$2 == n { print $1 }' <<<"$defs")
	done < <(for a in "${archives[@]}"; do nm -A -u "$a" 2>/dev/null; done |
		awk '$2 == "U" { m = $1; sub(/:$/, "", m); sub(/.*[:\/]/, "", m); print m, $3 }' | sort -u)
	[ "$n_und" -gt 0 ] || fail "nm -u lists no undefined symbol"
fi

# 3: the static CLI without etcd, holdfast-etcd with it
if [ -f "$build/holdfast" ] && [ -f "$build/holdfast-etcd" ]; then
	e=$(nm "$build/holdfast" 2>/dev/null | awk '$NF ~ /^hf_etcd/ { print $NF }' | head -3 | tr '\n' ' ')
	[ -z "$e" ] || fail "the static holdfast has etcd symbols: $e"
	[ "$(nm "$build/holdfast-etcd" 2>/dev/null | grep -c ' hf_etcd_backend$' || true)" -gt 0 ] ||
		fail "holdfast-etcd has no hf_etcd_backend"
else
	fail "no $build/holdfast or holdfast-etcd (build first)"
fi

if [ "$failures" -gt 0 ]; then
	echo "layout.sh: $failures failure(s)" >&2
	exit 1
fi
echo "layout.sh: ${#all_c[@]} sources of src/lib include and use no other room's headers or symbols but the backend list's entries; the static holdfast has no etcd object"
