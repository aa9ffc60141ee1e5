#!/bin/bash
# The modes' overlap detector under kills (make check-modes-long, in
# check-long): WORKERS processes each loop ROUNDS times
#   holdfast run --lock L --shared | --slots 2 | (exclusive) -- sh -c '...'
# (the mode drawn per round); CMD appends "enter MODE PID" and "leave MODE
# PID" to one O_APPEND log; every KILL_EVERY-th round of a worker is killed
# with SIGKILL (holdfast run and CMD, its process group) inside its section.
# The log is then replayed: an exclusive holder beside anyone, more than 2
# slot holders, or shared beside slots are violations: must be 0. A killed
# section has no "leave": its CMD blocks on a fifo nobody writes until the
# worker appends "kill MODE PID" and then sends SIGKILL, so it holds at
# least until that line; an entry after it is not judged against it (the
# instant of its death is not in the log).
# Prints the entries per mode and the violations; exit 1 on any violation.
#
# Usage: stress.sh HOLDFAST_BIN [WORKERS] [ROUNDS] [KILL_EVERY]
set -uo pipefail
bin=$1 workers=${2:-4} rounds=${3:-60} kill_every=${4:-7}
t=$(mktemp -d "${TMPDIR:-/tmp}/hf-modes.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 -- "-$p" 2>/dev/null; done; rm -rf "$t"; }
trap cleanup EXIT
log=$t/log L=$t/L
: > "$log"
# CMD: enter, a little work (a few forks), leave; each line one write (O_APPEND)
section='echo "enter $0 $$" >> "$1"; for i in 1 2 3; do :; done; /bin/true; echo "leave $0 $$" >> "$1"'
killsec='echo "enter $0 $$" >> "$1"; echo $$ > "$2"; read y < "$3"'
worker() {
	local w=$1 r mode opt
	for ((r = 0; r < rounds; r++)); do
		case $(( (RANDOM + w) % 3 )) in
		0) mode=shared opt=(--shared) ;;
		1) mode=slots opt=(--slots 2) ;;
		*) mode=exclusive opt=() ;;
		esac
		if (( r % kill_every == kill_every - 1 )); then
			# a section that is killed inside: it says it entered on a
			# fifo, then the worker SIGKILLs run and CMD together
			local f=$t/k-$w
			rm -f "$f" "$f.in"; mkfifo "$f" "$f.in"
			setsid "$bin" run --lock "$L" "${opt[@]}" -- sh -c "$killsec" "$mode" "$log" "$f" "$f.in" &
			local p=$!
			local k
			read -r k < "$f"
			echo "kill $mode $k" >> "$log"
			kill -9 -- "-$p" 2>/dev/null
			wait "$p" 2>/dev/null
		else
			"$bin" run --lock "$L" "${opt[@]}" -- sh -c "$section" "$mode" "$log"
		fi
	done
}
start=$(date +%s%N)
for ((w = 0; w < workers; w++)); do worker "$w" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
pids=()
end=$(date +%s%N)
# Replay. Holders: pid -> mode. "killed" lines are written after the kill,
# so a killed holder is removed only when the next "enter" comes (its place
# was freed by the reap that let that one in): at an enter, first drop the
# killed ones.
awk '
	$1 == "enter" {
		n = 0; sh = 0; sl = 0; ex = 0
		for (p in held) { n++; if (held[p] == "shared") sh++; else if (held[p] == "slots") sl++; else ex++ }
		if ($2 == "exclusive" && n > 0) excl_v++
		if ($2 != "exclusive" && ex > 0) excl_v++
		if ($2 == "slots" && (sl >= 2 || sh > 0)) slot_v++
		if ($2 == "shared" && sl > 0) slot_v++
		held[$3] = $2; entries[$2]++
		if (n + 1 > maxh) maxh = n + 1
	}
	$1 == "leave" { delete held[$3] }
	$1 == "kill" { delete held[$3]; kills[$2]++ }
	END {
		printf "entries: shared %d, slots %d, exclusive %d; killed: shared %d, slots %d, exclusive %d; most holders at once %d\n",
			entries["shared"], entries["slots"], entries["exclusive"], kills["shared"], kills["slots"], kills["exclusive"], maxh
		printf "violations: exclusive with anyone %d, more than 2 slot holders or slots beside shared %d\n", excl_v + 0, slot_v + 0
		exit (excl_v + slot_v) ? 1 : 0
	}' "$log"
rc=$?
echo "workers $workers, rounds $rounds each, a kill every $kill_every: $(( (end - start) / 1000000 )) ms"
exit $rc
