#!/usr/bin/env bash
# demo/session.sh - the session lock at work: two lanes racing for one work
# tree, a stale lock broken, a foreign release refused, the old guard measured
# next to the atomic take. Run by `make run` with $HF = the holdfast binary;
# everything happens in a scratch directory under /tmp, removed at the end.
set -u
HF=${HF:-build/holdfast}
HF=$(cd "$(dirname "$HF")" && pwd)/$(basename "$HF")
dir=$(mktemp -d /tmp/holdfast-demo-session.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Show a command as a user would type it, run it, show its exit code.
run() {
	printf '$ holdfast %s\n' "$*"
	"$HF" "$@" 2>&1 | sed 's/^/  /'
	local rc=${PIPESTATUS[0]}
	printf '  (exit %d)\n' "$rc"
	return 0
}

echo "session lock demo in $dir (the lock: $dir/.session.lock)"

say "Two lanes start at the same instant; exactly one gets the tree"
mkfifo go
exec 3<>go # held open both ways: no reader can block in open(2)
for lane in data distribution; do
	(read -r _ <go; "$HF" session take --lane "$lane" >"$lane.out" 2>&1; echo $? >"$lane.rc") &
done
printf '\n\n' >&3 # one write wakes both
exec 3>&-
wait
rm -f go
for lane in data distribution; do
	printf '$ holdfast session take --lane %s\n' "$lane"
	sed 's/^/  /' "$lane.out"
	printf '  (exit %s)\n' "$(cat "$lane.rc")"
	rm -f "$lane.out" "$lane.rc"
done
run session status
winner=$("$HF" session status --json | sed -n 's/.*"lane":"\([^"]*\)".*/\1/p')
other=data
[ "$winner" = data ] && other=distribution

say "The loser may not release the winner's lock"
run session release --lane "$other"
run session assert-held "$winner"
run session release --lane "$winner"
run session release --lane "$winner"

say "A stale lock (a session that died 2 hours ago) is broken, and named"
started=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%SZ)
printf '{"lane":"distribution","owner":"old-session","pid":4242,"host":"%s","started":"%s"}\n' \
	"$(uname -n)" "$started" >.session.lock
printf '$ cat .session.lock\n  %s\n' "$(cat .session.lock)"
run session status
run session take --lane data --json
printf '$ ls -A   # the broken lock was renamed aside, verified, deleted: no aside left\n'
ls -A | sed 's/^/  /'

say "Unreadable locks are refused, never guessed at"
"$HF" session release --lane data 2>/dev/null
echo 'half a line of someth' >.session.lock
run session take --lane data
rm -f .session.lock

say "The old read-then-write guard, measured (a count, never a verdict)"
run session race --procs 8 --runs 5 --naive
run session race --procs 8 --runs 5

say "The scripted interleavings, on this file system"
run selftest .
