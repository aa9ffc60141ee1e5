#!/bin/bash
# The README's "First commands" run as they are printed there: each "$ "
# line in order, in one bash, in a fresh git work tree (a Makefile whose
# target does nothing and a src/ directory are the work); each exits 0, and
# the lines printed under a command are what it prints (its stdout and
# stderr), read as patterns: a number stands for any number, "box" for this
# host, "/src/site" for the work tree. Nothing is left held afterwards.
#
# Then the block of "## Shared and slot modes" the same way, in a fresh
# directory, with two rules for its background jobs: a line ending in "&"
# goes on only once its holdfast has entered, or stands at the lock waiting
# for holders it cannot share with (the named points dirlock.acquire.entered
# and dirlock.share.draining, notified on a fifo, never paused: the go
# descriptor is /dev/zero), so the status printed next is the one shown; and
# what the background jobs print is read under the "wait" line. Every job it
# started is gone by its end (killed by pid if the block did not end it).
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

# ---- the modes block ---------------------------------------------------------
m=$t/modes
mkdir "$m" "$m/out" "$m/fifo"
awk '/^## Shared and slot modes/ { f = 1 } f && /^```console$/ { g = 1; next } g && /^```$/ { exit } g' \
	"$src/README.md" >"$m/block"
n=0
printf 'exec 8</dev/zero\n: >%q\n' "$m/jobs" >"$m/script"
while IFS= read -r line; do
	if [[ $line == '$ '* ]]; then
		n=$((n + 1))
		cmd=${line#\$ }
		cmd=$(sed -E 's/ {2,}# .*$//' <<<"$cmd")
		printf '%s\n' "$cmd" >"$m/out/$n.cmd"
		: >"$m/out/$n.want"
		if [[ $cmd == *' &' ]]; then
			# a job: its output with the jobs', its pid kept; on once it
			# has entered or waits at the lock (the first notification)
			f=$m/fifo/$n
			mkfifo "$f"
			printf 'exec 7<>%q\n' "$f" >>"$m/script"
			printf 'export HOLDFAST_FAULTS="pause:dirlock.acquire.entered:1;pause:dirlock.share.draining:1" HOLDFAST_PAUSE_FDS=7,8\n' >>"$m/script"
			printf '{ %s\n} >>%q 2>&1\necho $! >>%q\n' "$cmd" "$m/jobs" "$m/pids" >>"$m/script"
			printf 'unset HOLDFAST_FAULTS HOLDFAST_PAUSE_FDS\n' >>"$m/script"
			printf 'if read -r -t 60 -u 7 point; then echo 0; else echo "no notification in 60 s"; fi >%q\n' \
				"$m/out/$n.rc" >>"$m/script"
			printf 'exec 7>&-\n: >%q\n' "$m/out/$n.got" >>"$m/script"
		else
			printf '{ %s\n} >%q 2>&1; echo $? >%q\n' "$cmd" "$m/out/$n.got" "$m/out/$n.rc" >>"$m/script"
			# what the jobs printed shows under the line that waits for them
			[[ $cmd == wait || $cmd == 'wait '* ]] &&
				printf 'cat %q >>%q; : >%q\n' "$m/jobs" "$m/out/$n.got" "$m/jobs" >>"$m/script"
		fi
	elif [ "$n" -gt 0 ]; then
		printf '%s\n' "$line" >>"$m/out/$n.want"
	fi
done <"$m/block"
[ "$n" -ge 5 ] || fail "the README's modes block has $n commands, not at least 5"
[ "$(cat "$m"/out/*.cmd 2>/dev/null | grep -c ' &$')" -ge 3 ] || fail "the README's modes block starts fewer than 3 jobs"

rc=0
(cd "$m" && PATH=$t/bin:$PATH timeout 60 bash "$m/script") </dev/null || rc=$?
[ "$rc" = 0 ] || fail "the modes block's script ended $rc"
# its jobs, if it did not end them: holdfast run forwards SIGTERM to CMD
if [ -f "$m/pids" ]; then
	while read -r p; do
		kill "$p" 2>/dev/null && fail "job $p was still running after the modes block"
	done <"$m/pids"
	while read -r p; do
		timeout 10 tail --pid="$p" -f /dev/null || kill -KILL "$p" 2>/dev/null || true
	done <"$m/pids"
fi
for i in $(seq 1 "$n"); do
	cmd=$(cat "$m/out/$i.cmd")
	rc=$(cat "$m/out/$i.rc" 2>/dev/null || echo none)
	[ "$rc" = 0 ] || fail "modes: '$cmd' exited $rc: $(cat "$m/out/$i.got" 2>/dev/null)"
	if [ "$(wc -l <"$m/out/$i.want")" != "$(wc -l <"$m/out/$i.got" 2>/dev/null || echo none)" ]; then
		fail "modes: '$cmd' printed '$(cat "$m/out/$i.got" 2>/dev/null)', the README shows '$(cat "$m/out/$i.want")'"
		continue
	fi
	while IFS= read -r -u 3 want && IFS= read -r -u 4 got; do
		re=$(pattern <<<"$want")
		[[ $got =~ $re ]] || fail "modes: '$cmd' printed '$got', the README shows '$want'"
	done 3<"$m/out/$i.want" 4<"$m/out/$i.got"
done
for l in $(cd "$m" && ls -d *.lock 2>/dev/null); do
	s=$(cd "$m" && "$HOLDFAST_BIN" lock status "$l" 2>&1) || true
	[ "$s" = free ] || fail "$l is '$s' after the README's modes block"
done

if [ "$failures" -gt 0 ]; then
	echo "readme.sh: $failures failures" >&2
	exit 1
fi
echo "readme.sh: the README's first commands and its modes block ran as printed"
