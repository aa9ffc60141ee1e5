#!/bin/bash
# The README's "First commands" run as they are printed there: each "$ "
# line in order, in one bash, in a fresh git work tree (a Makefile whose
# target does nothing and a src/ directory are the work); each exits 0, and
# the lines printed under a command are what it prints (its stdout and
# stderr), read as patterns: a number stands for any number, "box" for this
# host, "/src/site" for the work tree. Nothing is left held afterwards.
#
# Usage: readme.sh (HOLDFAST_BIN, HOLDFAST_SRC from the environment)
set -euo pipefail
src=$HOLDFAST_SRC
t=$(mktemp -d "${TMPDIR:-/tmp}/hft-readme.XXXXXX")
trap 'rm -rf "$t"' EXIT
unset HOLDFAST_FAULTS HOLDFAST_PAUSE_FDS HOLDFAST_POD HOLDFAST_BACKEND HOLDFAST_LEASE
export HOLDFAST_REGISTRY=$t/registry/scope.lock
failures=0
fail() {
	echo "readme.sh: FAIL: $*" >&2
	failures=$((failures + 1))
}
mkdir "$t/bin" "$t/tree" "$t/out"
ln -s "$HOLDFAST_BIN" "$t/bin/holdfast"
tree=$t/tree
git -C "$tree" init -q .
printf 'all:\n\t@:\n' >"$tree/Makefile"
mkdir "$tree/src"
echo data >"$tree/src/a"

# the block: from "## First commands" to the end of its first console fence
awk '/^## First commands/ { f = 1 } f && /^```console$/ { g = 1; next } g && /^```$/ { exit } g' \
	"$src/README.md" >"$t/block"
n=0
: >"$t/script"
while IFS= read -r line; do
	if [[ $line == '$ '* ]]; then
		n=$((n + 1))
		cmd=${line#\$ }
		cmd=$(sed -E 's/ {2,}# .*$//' <<<"$cmd") # the comment at the end
		printf '%s\n' "$cmd" >"$t/out/$n.cmd"
		: >"$t/out/$n.want"
		printf '{ %s\n} >%q 2>&1; echo $? >%q\n' "$cmd" "$t/out/$n.got" "$t/out/$n.rc" >>"$t/script"
	elif [ "$n" -gt 0 ]; then
		printf '%s\n' "$line" >>"$t/out/$n.want"
	fi
done <"$t/block"
[ "$n" -ge 5 ] || fail "the README's First commands has $n commands, not at least 5"

(cd "$tree" && PATH=$t/bin:$PATH bash "$t/script") </dev/null

host=$(uname -n)
pattern() { # a shown line as an extended regular expression
	sed -E 's/[][\.*^$+?(){}|\\/]/\\&/g' | sed -E "s/[0-9]+/[0-9]+/g; s/box/$host/g; s#\\\\/src\\\\/site#$tree#g; s/^/^/; s/$/\$/"
}
for i in $(seq 1 "$n"); do
	cmd=$(cat "$t/out/$i.cmd")
	rc=$(cat "$t/out/$i.rc" 2>/dev/null || echo none)
	[ "$rc" = 0 ] || fail "'$cmd' exited $rc: $(cat "$t/out/$i.got" 2>/dev/null)"
	if [ -s "$t/out/$i.want" ]; then
		if [ "$(wc -l <"$t/out/$i.want")" != "$(wc -l <"$t/out/$i.got")" ]; then
			fail "'$cmd' printed '$(cat "$t/out/$i.got")', the README shows '$(cat "$t/out/$i.want")'"
			continue
		fi
		while IFS= read -r -u 3 want && IFS= read -r -u 4 got; do
			re=$(pattern <<<"$want")
			[[ $got =~ $re ]] || fail "'$cmd' printed '$got', the README shows '$want'"
		done 3<"$t/out/$i.want" 4<"$t/out/$i.got"
	fi
done
# what the block took, it gave back (the session lock stays, as it says)
for l in build.lock deploy.lock counter.lock; do
	s=$(cd "$tree" && "$HOLDFAST_BIN" lock status "$l" 2>&1) || true
	[ "$s" = free ] || fail "$l is '$s' after the README's commands"
done
[ "$(cat "$tree/counter" 2>/dev/null)" = 1 ] || fail "the counter is not 1"

if [ "$failures" -gt 0 ]; then
	echo "readme.sh: $failures failures" >&2
	exit 1
fi
echo "readme.sh: the README's $n first commands ran as printed"
