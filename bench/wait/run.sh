#!/usr/bin/env bash
# bench/wait/run.sh BUILD_DIR - how often an idle waiter wakes: every kind of
# holdfast waiter beside flock(1)'s own, side by side in one run, one row per
# waiter (goal: <= 1 wake-up/s each; flock(1) sleeps in the kernel: 0).
#
# Each waiter waits for something this script holds (a directory lock held
# for a sleeping process, a session lane, a scope of a sleeping pod, a flock)
# and is left alone for WAKE_SECS. Its wake-ups are the voluntary context
# switches of every thread of the waiting process and of its descendants
# (run/edit fork CMD's process before they wait), read from
# /proc/PID/task/TID/status at the start and end of the window, timed on
# CLOCK_MONOTONIC; a waiter still growing its backoff is given SETTLE_SECS
# first. A measurement, never a verdict: it always exits 0.
#
# Environment: WAKE_SECS (5), SETTLE_SECS (2), HF_BEFORE (an older holdfast
# binary: its rows beside this build's), TMPDIR_FS (/dev/shm).
set -u
build=$(cd "${1:-build}" && pwd)
HF=$build/holdfast
WAITER=$build/bench/wait/waiter
WAKE_SECS=${WAKE_SECS:-5}
SETTLE_SECS=${SETTLE_SECS:-2}
for f in "$HF" "$WAITER"; do
	[ -x "$f" ] || { echo "bench/wait: $f missing (build first)"; exit 1; }
done
work=$(mktemp -d "${TMPDIR_FS:-/dev/shm}/hf-bench-wait.XXXXXX")
holders=()
cleanup() {
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
export HOLDFAST_REGISTRY=$work/registry/scope.lock
mkdir -p "$work/registry" "$work/tree" "$work/scoped"

mono() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))' 2>/dev/null ||
	date +%s%N; }
# descendants PID: PID and every process below it
descendants() {
	local p=$1 c
	echo "$p"
	for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do descendants "$c"; done
}
# switches PID: voluntary context switches of every thread of PID's tree
switches() {
	local total=0 p n t
	for p in $(descendants "$1"); do
		for t in /proc/"$p"/task/*/status; do
			n=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t" 2>/dev/null)
			total=$((total + ${n:-0}))
		done
	done
	echo "$total"
}
# row NAME CMD...: start CMD (it waits), let it settle, count its wake-ups
row() {
	local name=$1 pid a b t0 t1
	shift
	(cd "$work/tree" && exec "$@") >/dev/null 2>"$work/row.err" &
	pid=$!
	sleep "$SETTLE_SECS"
	if ! kill -0 "$pid" 2>/dev/null; then
		printf '   %-40s  did not wait: %s\n' "$name" "$(head -c 200 "$work/row.err")"
		return
	fi
	t0=$(mono)
	a=$(switches "$pid")
	sleep "$WAKE_SECS"
	b=$(switches "$pid")
	t1=$(mono)
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	awk -v n="$name" -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" 'BEGIN {
		r = (b - a) / ((t1 - t0) / 1e9)
		printf "   %-40s %7.2f wake-ups/s  %s\n", n, r, r <= 1.0 ? "meets <= 1" : "MISSES <= 1" }'
}

echo "# bench/wait: $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## an idle waiter's wake-ups per second (${WAKE_SECS} s window after ${SETTLE_SECS} s)"

# the things held: directory locks and a scope for a sleeping process, a
# session lane, a flock
sleep 1000 &
holders+=($!)
tok=$("$HF" lock acquire "$work/L" --pid "${holders[0]}" | cut -d' ' -f1)
tok2=$("$HF" lock acquire "$work/F.lock" --pid "${holders[0]}" | cut -d' ' -f1)
echo x >"$work/F"
(cd "$work/tree" && "$HF" session take --lane holder >/dev/null 2>&1)
"$HF" scope register pod-holder "$work/scoped:write:recursive" --pid "${holders[0]}" >/dev/null
exec 9>"$work/flock.f"
flock 9

bins=("this build:$HF")
[ -n "${HF_BEFORE:-}" ] && [ -x "$HF_BEFORE" ] && bins+=("HF_BEFORE:$HF_BEFORE")
row "flock(1)" flock "$work/flock.f" /bin/true
for b in "${bins[@]}"; do
	tag=${b%%:*} bin=${b#*:}
	row "lock acquire (forever), $tag" "$bin" lock acquire "$work/L"
	row "lock acquire -w 3600, $tag" "$bin" lock acquire "$work/L" -w 3600
	row "run --lock, $tag" "$bin" run --lock "$work/L" -- /bin/true
	row "run --session, $tag" "$bin" run --session other -- /bin/true
	row "run --scope, $tag" "$bin" run --scope "$work/scoped:write" -- /bin/true
	row "edit, $tag" "$bin" edit "$work/F" -- cat
done
row "library: hf_lock_acquire" "$WAITER" lock "$work/L"
row "library: hf_lock_acquire in 1 s slices" "$WAITER" slices "$work/L"
row "library: hf_session_take" "$WAITER" session "$work/tree/.session.lock" other
row "library: hf_scope_register" "$WAITER" scope "$HOLDFAST_REGISTRY" pod-w "$work/scoped:write"

exec 9>&-
"$HF" lock release "$work/L" --token "$tok" >/dev/null
"$HF" lock release "$work/F.lock" --token "$tok2" >/dev/null
(cd "$work/tree" && "$HF" session release --lane holder >/dev/null 2>&1)
"$HF" scope release pod-holder >/dev/null
exit 0
