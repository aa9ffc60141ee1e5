#!/bin/bash
# Invariant and step labels are unique in the tree (issue 19).
#
# A label is defined by a line of a file's header comment in src/ that
# opens with it: an invariant " *   (DL3) text" or a step " *   DA3 text" /
# " *   ST1. text". Its prefix is what precedes the number ("DL", "ES-").
#  1. No prefix is defined in two files: each file owns its prefixes, so a
#     citation names one file. A failure names both files.
#  2. Every citation "(XX9)" (or "(XX9b)", a part of XX9; or a list
#     "(XX9, YY2)") in src/ names a label some file defines. A failure names the citing file and line.
# Words that look like labels but are none (NOT_LABELS) are skipped.
#
# Usage: labels.sh [SRC_ROOT] (default: $HOLDFAST_SRC, else this tree)
set -euo pipefail
root=${1:-${HOLDFAST_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}}
cd "$root"
[ -d src ] || { echo "labels.sh: no src/ in $root" >&2; exit 2; }
NOT_LABELS=" FNV-1 ISO-8601 UTF-8 SHA-256 "

files=$(find src -name '*.[ch]' | LC_ALL=C sort)
# "LABEL FILE" for every definition
defs=$(grep -HoE '^ \*[[:space:]]+(\([A-Z]+-?[0-9]+\)[[:space:]]+[^[:space:]]|[A-Z]+[0-9]+\.?[[:space:]])' $files |
	sed -E 's/^([^:]*):[[:space:]]*\*[[:space:]]+\(?([A-Z]+-?[0-9]+).*/\2 \1/' | LC_ALL=C sort -u)
failures=0
if [ -z "$defs" ]; then
	echo "labels.sh: no label definitions found under src/" >&2
	exit 1
fi

# 1. a prefix in one file only
while read -r prefix list; do
	echo "FAIL: prefix '$prefix' is defined in more than one file:$list"
	failures=$((failures + 1))
done < <(echo "$defs" | awk '{ p = $1; sub(/[0-9]+$/, "", p); print p, $2 }' | LC_ALL=C sort -u |
	awk '{ n[$1]++; f[$1] = f[$1] " " $2 } END { for (p in n) if (n[p] > 1) print p, f[p] }' |
	LC_ALL=C sort)

# 2. every citation defined
while IFS=: read -r file line label; do
	case "$NOT_LABELS" in *" $label "*) continue ;; esac
	echo "FAIL: $file:$line cites ($label), which no file in src/ defines"
	failures=$((failures + 1))
done < <(grep -HnoE '\([A-Z]+-?[0-9]+[a-z]?(, [A-Z]+-?[0-9]+[a-z]?)*\)' $files |
	awk -F: '{ n = split(substr($3, 2, length($3) - 2), l, ", ");
		   for (i = 1; i <= n; i++) { sub(/[a-z]$/, "", l[i]); print $1 ":" $2 ":" l[i] } }' |
	awk -F: 'NR == FNR { d[$1] = 1; next } !($3 in d)' <(echo "$defs" | awk '{ print $1 }') -)

ndefs=$(echo "$defs" | wc -l)
if [ "$failures" -gt 0 ]; then
	echo "labels.sh: $failures failure(s) ($ndefs labels defined)"
	exit 1
fi
echo "labels.sh: $ndefs labels, every prefix in one file, every citation defined"
