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
src=$(cd "${1:?source root}" && pwd)
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

# 1: headers, transitively: one cc -MM per room (a rule per source)
checked=0
all_c=("$src"/src/lib/*.c "$src"/src/lib/fs/*.c "$src"/src/lib/etcd/*.c)
((${#all_c[@]})) || fail "no source in $src/src/lib"
for dir in "$src/src/lib" "$src/src/lib/fs" "$src/src/lib/etcd"; do
	mine=$(room_of_dir "$(cd "$dir" && pwd -P)")
	files=("$dir"/*.c)
	deps=$("${CC:-cc}" -MM -std=gnu11 -D_GNU_SOURCE "${inc[@]}" "${files[@]}" | tr -d '\\') ||
		{ fail "cc -MM in $dir failed"; continue; }
	obj=
	for w in $deps; do
		case $w in
		*.o:) obj=${w%.o:}; checked=$((checked + 1)); continue ;;
		esac
		case $w in
		"$src"/src/lib/fs/*) theirs=fs ;;
		"$src"/src/lib/etcd/*) theirs=etcd ;;
		*) theirs=other ;;
		esac
		allowed "$mine" "$theirs" ||
			fail "${dir#"$src"/}/$obj.c includes ${w#"$src"/} (a header of src/lib/$theirs)"
	done
done
[ "$checked" -eq "${#all_c[@]}" ] || fail "only $checked of ${#all_c[@]} sources checked"

# 2: symbols
archives=("$build/libholdfast-core.a" "$build/libholdfast-etcdc.a" "$build/libholdfast-fsonly.a")
for a in "${archives[@]}"; do
	[ -f "$a" ] || fail "no $a (build first)"
done
if [ "$failures" -eq 0 ]; then
	# One pass: nm -A of every archive, defined ("D") and undefined ("U")
	# symbols with their member, judged by the rooms' rule in awk.
	findings=$(for a in "${archives[@]}"; do
		nm -A --defined-only "$a" 2>/dev/null | awk '$2 ~ /^[TDBRCVWG]$/ { print "D", $1, $3 }'
		nm -A -u "$a" 2>/dev/null | awk '$2 == "U" { print "U", $1, $3 }'
	done | awk '
		function member(s) { sub(/:[^:]*$/, "", s); sub(/.*[:\/]/, "", s); return s }
		function room(m) {
			if (m ~ /^src_lib_fs_/) return "fs"
			if (m ~ /^src_lib_etcd_/) return "etcd"
			if (m ~ /^src_lib_/) return "lib"
			return "other"
		}
		$1 == "D" { r = room(member($2)); def[$3] = def[$3] " " r; nd[r]++ }
		$1 == "U" { m = member($2); u[m " " $3] = 1; nu++ }
		END {
			if (!nd["fs"]) print "no symbol defined by an src/lib/fs object"
			if (!nd["etcd"]) print "no symbol defined by an src/lib/etcd object"
			if (!nu) print "nm -u lists no undefined symbol"
			for (k in u) {
				split(k, p, " "); m = p[1]; name = p[2]; mine = room(m)
				if (mine == "other" || !(name in def)) continue
				n = split(def[name], rs, " ")
				for (i = 1; i <= n; i++) {
					t = rs[i]
					if (t == "other" || t == "lib" || t == mine) continue
					if (m == "src_lib_backend.c.o" && (name == "hf_fs_backend" || name == "hf_etcd_backend"))
						continue # the list entries
					print m " uses " name ", defined in src/lib/" t
				}
			}
		}' | sort -u)
	while IFS= read -r line; do
		[ -n "$line" ] && fail "$line"
	done <<<"$findings"
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
