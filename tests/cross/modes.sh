#!/usr/bin/env bash
# tests/cross/modes.sh BUILD_DIR - readers of one lock from five callers at
# once, on the file system and then on etcd (an etcd of this script's own,
# tests/cross/etcd.sh; or cross.sh's, given as HOLDFAST_CROSS_ETCD): Node
# (Lock(path, {shared: true, backend})), Rust (Lock::read, through
# examples/holder --backend), Python (holdfast_locks' Lock(shared=True,
# backend=...)), sh (`holdfast lock acquire --shared`, released by its token)
# and bash (`holdfast run --lock --shared -- bash ...`) all hold it together;
# a CLI writer (`holdfast lock acquire -w`) waits at the lock while any of
# them reads, and enters once the last one has released, its fence above
# every reader's. Each reader holds until its stdin (a FIFO this script
# keeps open) closes; each says "held FENCE" on a FIFO; the writer's wait is
# seen in `lock status --json` ("waiting": true), never by sleeping.
# On etcd also: a reader SIGKILLed while its command lives (`holdfast run
# --shared --ttl 2s`, its lease kept by the killed process) frees its place
# at its lease's expiry - the writer waiting for it enters after the kill,
# while the reader's command still lives (so no death proved it); the gap
# is measured on the monotonic clock and printed, never asserted.
# Run by cross.sh.
set -u
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
hf="$build/holdfast"
rust_holder="$build/rust-target/debug/examples/holder"
py=${PYTHON:-/usr/bin/python3}
fails=0
fail() { echo "cross modes: FAIL: $*" >&2; fails=$((fails + 1)); }
. "$root/tests/cross/etcd.sh"

d=$(mktemp -d /tmp/holdfast-cross-modes.XXXXXX) || exit 1
pids=()
fds=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	cross_etcd_stop
	rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 1' TERM INT
[ -x "$rust_holder" ] || { echo "cross modes: $rust_holder missing (bindings/rust/test.sh builds it)"; exit 1; }

# start NAME CMD...: CMD reads from the FIFO in.NAME (held open here: fd
# in_NAME) and writes to out.NAME (read here: fd out_NAME); its pid in pid_NAME.
start() {
	local name=$1
	shift
	mkfifo "$d/r.$round/in.$name" "$d/r.$round/out.$name"
	exec {fd}<>"$d/r.$round/in.$name"
	printf -v "in_$name" %s "$fd"
	# the child keeps none of this script's FIFO descriptors: another
	# reader's stdin left open in it would never see its end
	(for f in "${fds[@]}" "$fd"; do eval "exec $f>&-"; done; exec "$@") <"$d/r.$round/in.$name" >"$d/r.$round/out.$name" &
	printf -v "pid_$name" %s "$!"
	pids+=("$!")
	fds+=("$fd")
	exec {fd}<"$d/r.$round/out.$name"
	printf -v "out_$name" %s "$fd"
	fds+=("$fd")
}
# held NAME: its "held FENCE ..." line (bounded: 30 s); the fence in
# fence_NAME, the rest of the line in rest_NAME
held() {
	local fd=out_$1 word f rest
	read -r -t 30 -u "${!fd}" word f rest || { fail "$round: $1 said nothing"; return 1; }
	# the Rust holder tries once first: a reader passing through L to its
	# entry at that moment refuses it (a known defect: a try-once reader
	# is refused by another reader's entry in flight), and it then waits
	if [ "$word" = waiting ] && [ "$f" = 0 ]; then
		read -r -t 30 -u "${!fd}" word f rest || { fail "$round: $1 said nothing after waiting"; return 1; }
	fi
	[ "$word" = held ] || { fail "$round: $1: '$word $f $rest'"; return 1; }
	printf -v "fence_$1" %s "$f"
	printf -v "rest_$1" %s "$rest"
}
# release NAME: close its stdin; it releases and exits 0
release() {
	local fd=in_$1 pid=pid_$1
	eval "exec ${!fd}>&-"
	wait "${!pid}" || fail "$round: $1 exited $? on release"
}
status() { "$hf" lock status "$L" --backend "$be" --json; }
waiting() { status | "$py" -c 'import json, sys; sys.exit(0 if any(h.get("waiting") for h in json.load(sys.stdin)["holders"]) else 1)'; }
# writer [OPTIONS]: a CLI writer waits at the lock (for this shell's life),
# its pid in wpid, its "TOKEN FENCE" in $d/r.$round/writer.out; returns once
# `lock status` shows it waiting (bounded: 3000 looks, or its end)
writer() {
	(for f in "${fds[@]}"; do eval "exec $f>&-"; done
	 exec "$hf" lock acquire -w 30 --pid $$ --backend "$be" "$@" "$L") >"$d/r.$round/writer.out" &
	wpid=$!
	pids+=("$wpid")
	for _ in $(seq 3000); do waiting && break; kill -0 "$wpid" 2>/dev/null || break; done
	waiting || fail "$round: the writer is not seen waiting: $(status)"
}
mono() { "$py" -c 'import time; print("%.3f" % time.monotonic())'; }

readers="node rust python sh bash"
# round NAME BACKEND: the five readers, then the writer, on BACKEND
round() {
	round=$1 be=$2
	L="$d/$round.lock"
	mkdir "$d/r.$round"
	start node node -e '
const { Lock } = require(process.argv[1]);
const l = new Lock(process.argv[2], { shared: true, backend: process.argv[3] });
l.acquireSync({ wait: Infinity });
console.log("held " + l.fence);
process.stdin.resume();
process.stdin.on("end", () => { l.release(); process.exit(0); });
' "$root/bindings/node" "$L" "$be"
	start rust "$rust_holder" read "$L" --backend "$be"
	start python env HOLDFAST_LIB="$build/libholdfast.so" PYTHONPATH="$root/bindings/python/src" "$py" -c '
import sys, holdfast_locks as hf
lk = hf.Lock(sys.argv[1], shared=True, backend=sys.argv[2], wait=None)
lk.acquire()
print("held", lk.fence, flush=True)
sys.stdin.read()
lk.release()
' "$L" "$be"
	# sh: the CLI's own acquisition for this sh (its keeper), released by
	# the token once stdin ends
	start sh sh -c '
t=$("$0" lock acquire "$1" --shared -w 30 --backend "$2") || exit 1
echo "held ${t#* }"
cat >/dev/null
exec "$0" lock release "$1" --token "$t" --backend "$2"
' "$hf" "$L" "$be"
	# bash: holdfast run holds it while its bash reads stdin
	start bash bash -c '
exec "$0" run --lock "$1" --shared -w 30 --backend "$2" -- bash -c '\''
echo "held $HOLDFAST_FENCE"
while read -r _; do :; done
'\''' "$hf" "$L" "$be"
	for r in $readers; do held $r || return 1; done

	# all five hold it at once, each its own holder in the status (each
	# reader's own fence)
	local st n want
	st=$(status)
	n=$(printf '%s' "$st" | "$py" -c '
import json, sys
s = json.load(sys.stdin)
fences = sorted(h["fence"] for h in s["holders"] if h["mode"] == "shared" and h["state"] == "held")
print(s["mode"], " ".join(map(str, fences)))')
	want="shared $(for r in $readers; do f=fence_$r; echo "${!f}"; done | sort -n | tr '\n' ' ' | sed 's/ $//')"
	[ "$n" = "$want" ] || fail "$round: status: '$n', expected '$want' ($st)"

	writer
	# the text status: the writer (acquiring for this shell) first
	local first
	first=$("$hf" lock status "$L" --backend "$be" | head -n 1)
	case $first in "waiting: pid $$ "*"(waiting, exclusive)") ;; *) fail "$round: status's first line '$first'" ;; esac
	local last=${readers##* } r token wfence
	for r in $readers; do
		[ $r = "$last" ] && break
		release $r
	done
	kill -0 "$wpid" 2>/dev/null || fail "$round: the writer ended while $last still reads"
	waiting || fail "$round: the writer does not wait for $last's reader: $(status)"
	release "$last"
	wait "$wpid" || fail "$round: the writer: exit $?"
	read -r token wfence <"$d/r.$round/writer.out"
	for r in $readers; do
		f=fence_$r
		[ "${wfence:-0}" -gt "${!f}" ] 2>/dev/null || fail "$round: the writer's fence '$wfence' is not above $r's ${!f}"
	done
	"$hf" lock release "$L" --token "$token" --backend "$be" || fail "$round: cli: release"
}

round file file
[ $fails = 0 ] || exit 1

if [ -n "${HOLDFAST_CROSS_ETCD:-}" ]; then
	B=$HOLDFAST_CROSS_ETCD
else
	cross_etcd_start "$d" || { echo "cross modes: no etcd"; exit 1; }
fi
round etcd "$B"

# etcd: a reader SIGKILLed while its command lives: its place comes back at
# its lease's expiry (TTL 2 s)
round=etcd-ttl
mkdir "$d/r.$round"
L="$d/$round.lock"
start killed "$hf" run --lock "$L" --shared --ttl 2s --backend "$be" -- sh -c 'echo "held $HOLDFAST_FENCE $$"; exec cat'
held killed || exit 1
cmd_pid=${rest_killed%% *}
pids+=("$cmd_pid")
writer
t0=$(mono)
kill -KILL "$pid_killed"
wait "$pid_killed" 2>/dev/null
wait "$wpid" || fail "$round: the writer: exit $? after the reader was killed"
t1=$(mono)
kill -0 "$cmd_pid" 2>/dev/null || fail "$round: the killed reader's command $cmd_pid is gone: its death, not its TTL, freed the lock"
read -r token wfence <"$d/r.$round/writer.out"
[ "${wfence:-0}" -gt "$fence_killed" ] 2>/dev/null || fail "$round: the writer's fence '$wfence' is not above the killed reader's $fence_killed"
"$hf" lock release "$L" --token "$token" --backend "$be" || fail "$round: cli: release"
kill -KILL "$cmd_pid" 2>/dev/null
gap=$("$py" -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$t1")

[ $fails = 0 ] && echo "cross modes: readers from Node, Rust, Python, sh and bash held one lock at once; a CLI writer waited and entered after the last, above their fences - on the file system and on etcd; on etcd a SIGKILLed reader's place came back ${gap} s after the kill (its TTL 2 s, monotonic clock)"
exit $((fails > 0))
