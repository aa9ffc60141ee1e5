#!/usr/bin/env bash
# bench/keeper/memory.sh BUILD_DIR - what a keeper costs in memory.
#
# A keeper is the process a detached `holdfast lock acquire L` (no --pid)
# leaves behind to hold L's kernel lock for the caller's chain (keeper.c).
# For each N in COUNTS, one owner - a bash reading its script from a file,
# blocked on `read` from a pipe this script holds (no sleep anywhere) -
# runs N lines `sh -c 'holdfast lock acquire LOCK_i > tok_i'`, each leaving
# one keeper. Each keeper is found by its descriptor on its lock (/proc/PID/fd),
# and read from /proc/PID/smaps_rollup (Rss, Pss, Private_Dirty) and
# /proc/PID/status (VmPTE: its page tables). Printed per keeper (mean, max)
# and in total, in KiB:
#   Private_Dirty  what the keeper alone costs (its own written pages:
#                  stack, heap, .data/.bss) - the figure that grows with N;
#   Pss            its share of everything it maps (the binary's pages are
#                  shared by every keeper: Pss total is the real sum);
#   Rss            everything it maps, shared pages counted once per keeper
#                  (summing Rss over keepers counts the binary N times);
#   VmPTE          its page tables (kernel memory, not in smaps).
# Then every lock is released with its token, the owner's pipe is closed
# (it exits), each keeper's end is awaited on a pidfd (python3, at most 10 s)
# and the script checks that no keeper and no lock is left.
# HF_BEFORE (an older holdfast binary): its rows beside this build's, in
# the same run. A measurement: exits 1 only when something is left behind
# or an acquisition fails.
# Environment: COUNTS ("50 300"), HF_BEFORE, TMPDIR_FS (/dev/shm).
set -u
build=$(cd "${1:-build}" && pwd)
HF=$build/holdfast
COUNTS=${COUNTS:-50 300}
[ -x "$HF" ] || { echo "bench/keeper: $HF missing (build first)"; exit 1; }
command -v python3 >/dev/null || { echo "bench/keeper: python3 missing (the pidfd wait)"; exit 1; }
work=$(mktemp -d "${TMPDIR_FS:-/dev/shm}/hf-bench-keeper.XXXXXX")
owner=
cleanup() {
	exec 3>&- 2>/dev/null
	[ -n "$owner" ] && kill "$owner" 2>/dev/null && wait "$owner" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
status=0

# The owner: N acquisitions, each from a one-line `sh -c` (skipped: O4),
# then "ready", then it holds everything until its standard input ends.
cat >"$work/owner.sh" <<'OWNER'
hf=$1 dir=$2 n=$3
i=1
while [ "$i" -le "$n" ]; do
	sh -c '"$1" lock acquire -n "$2/L$3" > "$2/tok$3"' sh "$hf" "$dir" "$i" || { echo "fail $i"; exit 1; }
	i=$((i + 1))
done
echo ready
read -r _
OWNER

# keepers DIR: the pids of the processes holding a descriptor on a lock in DIR
# (its locks L1, L2, …): the keepers
keepers() {
	find /proc/[0-9]*/fd -maxdepth 1 -lname "$1/L*" 2>/dev/null | cut -d/ -f3 | sort -un
}

# await_end PID...: each one's end, on a pidfd (not our children); at most 10 s
await_end() {
	python3 - "$@" <<'PY'
import os, select, sys, time
end = time.monotonic() + 10
left = 0
for p in sys.argv[1:]:
    try:
        fd = os.pidfd_open(int(p))
    except ProcessLookupError:
        continue
    if not select.select([fd], [], [], max(0.0, end - time.monotonic()))[0]:
        left += 1
    os.close(fd)
sys.exit(1 if left else 0)
PY
}

# one BIN LABEL N: N keepers of BIN, measured, then all released
one() {
	local bin=$1 label=$2 n=$3 dir ready k
	dir=$work/$label.$n
	mkdir -p "$dir"
	mkfifo "$dir/in" "$dir/out"
	bash "$work/owner.sh" "$bin" "$dir" "$n" <"$dir/in" >"$dir/out" &
	owner=$!
	exec 3>"$dir/in"
	read -r ready <"$dir/out"
	if [ "$ready" != ready ]; then
		echo "   $label N=$n: the owner did not get every lock ($ready)"
		status=1
	fi
	mapfile -t ks < <(keepers "$dir")
	[ "${#ks[@]}" -eq "$n" ] || { echo "   $label N=$n: ${#ks[@]} keepers found, $n expected"; status=1; }
	for k in "${ks[@]}"; do
		echo "/proc/$k/smaps_rollup /proc/$k/status"
	done | xargs awk '/^(Rss|Pss|Private_Dirty|VmPTE):/ { v[$1] = $2 }
		/^VmPTE:/ { print v["Rss:"], v["Pss:"], v["Private_Dirty:"], v["VmPTE:"] }' |
	awk -v label="$label" -v n="$n" -v means="$work/means" '
		{ for (i = 1; i <= 4; i++) { s[i] += $i; if ($i > m[i]) m[i] = $i } c++ }
		END {
			if (!c) exit
			printf "%s %d %f %f\n", label, n, s[3] / c, s[2] / c >> means
			split("Rss Pss Private_Dirty VmPTE", name)
			for (i = 1; i <= 4; i++)
				printf "   %-10s N=%-4d %-14s mean %7.1f  max %6d  total %9d KiB (%.1f MiB)\n",
					label, n, name[i], s[i] / c, m[i], s[i], s[i] / 1024
		}'
	for ((i = 1; i <= n; i++)); do
		"$bin" lock release "$dir/L$i" --token "$(cut -d' ' -f1 "$dir/tok$i")" >/dev/null 2>&1 ||
			{ echo "   $label: release of L$i failed"; status=1; }
	done
	exec 3>&- # the owner's `read` ends: it exits
	wait "$owner"
	owner=
	await_end "${ks[@]}" || { echo "   $label N=$n: keepers still running after 10 s"; status=1; }
	left=$(keepers "$dir" | wc -l)
	locks=$(find "$dir" -mindepth 1 -maxdepth 1 -regex ".*/L[0-9]+" | wc -l)
	echo "   $label N=$n: left behind: $left keepers, $locks locks"
	[ "$left" -eq 0 ] && [ "$locks" -eq 0 ] || status=1
}

echo "# keeper memory: $(uname -r), $(nproc) cores, $(file -b "$HF" | cut -d, -f1-4)"
for n in $COUNTS; do
	echo
	echo "## N=$n keepers, each from \`sh -c 'holdfast lock acquire L > tok'\` (KiB)"
	one "$HF" this "$n"
	if [ -n "${HF_BEFORE:-}" ] && [ -x "$HF_BEFORE" ]; then
		one "$HF_BEFORE" before "$n"
		awk -v n="$n" '$2 == n { pd[$1] = $3; pss[$1] = $4 }
			END { if (pd["before"] > 0 && pss["before"] > 0)
				printf "   N=%d this/before: Private_Dirty %.2f, Pss %.2f (per keeper, means)\n",
					n, pd["this"] / pd["before"], pss["this"] / pss["before"] }' "$work/means"
	fi
done
exit $status
