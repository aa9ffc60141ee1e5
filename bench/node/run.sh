#!/usr/bin/env bash
# bench/node/run.sh BUILD_DIR - the Node binding beside the C library and npm
# proper-lockfile, side by side in one run (a measurement: it exits 0
# whatever the figures are; 1 only when it cannot run). Run it with
# `make bench-node` or `bash bench/node/run.sh build`.
#
#   1. acquire+release cycle on /dev/shm and /tmp: the C library's own
#      cycle (bench/dirlock's bench-dirlock-uncontended, run before and after
#      the Node side; the median of its two medians) against Node's sync and
#      async cycles (goal: within 1.3x of C), the proper-lockfile front, and
#      npm proper-lockfile 4.1.2's lock/unlock.
#   2. stale-lock steal race through the front: K contenders (16) are
#      released together by a FIFO barrier and each tries once to take a
#      stale lock; per round, the most that believed they held it at once
#      ("holders": never more than one for holdfast). The method and the
#      contender are bench/peers' (plf_contend.js, run as is: for the front
#      it finds holdfast/proper-lockfile under the name proper-lockfile).
#      Rows: npm proper-lockfile (a lock directory 10 s old, stale 2 s), the
#      front on the same leftover, the front on a lock left by a SIGKILLed
#      front (its record beside), and mixed: every other contender npm
#      proper-lockfile, the others the front, on the same leftover.
#
# Environment: CYCLES (2000 per side and file system), ROUNDS (100 race
# rounds per row), K (16), BENCH_FS ("/dev/shm /tmp"), SCENARIOS ("1 2"),
# ROWS (scenario 2's rows: "plf front frontkilled mixed").
# npm packages come from bindings/node/node_modules (test.sh installs them).
set -u
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
node_dir=$(cd "$here/../../bindings/node" && pwd)
CYCLES=${CYCLES:-2000}
ROUNDS=${ROUNDS:-100}
K=${K:-16}
SCENARIOS=${SCENARIOS:-1 2}
HF=$build/holdfast
CBENCH=$build/bench/dirlock/bench-dirlock-uncontended
for f in "$HF" "$CBENCH"; do
	[ -x "$f" ] || { echo "bench/node: $f missing (build first)"; exit 1; }
done
command -v node >/dev/null || { echo "bench/node: node missing"; exit 1; }
if [ ! -f "$node_dir/node_modules/proper-lockfile/package.json" ] ||
	[ ! -f "$node_dir/build/holdfast.node" ]; then
	(cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null) || exit 1
fi
HOLDFAST_BUILD=$build sh "$node_dir/build.sh" || exit 1
export HOLDFAST_NODE=$node_dir PLF=$node_dir/node_modules/proper-lockfile
plf_version=$(node -p "require('$PLF/package.json').version")

work=$(mktemp -d /dev/shm/hf-bench-node.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
echo "# node: $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); node $(node --version), proper-lockfile $plf_version"
echo "# shared machine: figures are indicative"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median2() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (a + b) / 2 }'; }

if [[ " $SCENARIOS " == *" 1 "* ]]; then
	echo
	echo "## 1. acquire+release cycle (medians of $CYCLES alternating cycles, us)"
	printf '%-10s %9s %9s %9s %9s %9s   %s\n' fs C sync async front plf "ratios to C: sync async front plf"
	for fs in ${BENCH_FS:-/dev/shm /tmp}; do
		d=$(mktemp -d "$fs/hf-bench-node.XXXXXX") || continue
		c1=$("$CBENCH" "$d" "$CYCLES" 1 | sed -n 's/.* library *\([0-9.]*\) us.*/\1/p')
		out=$(node "$here/cycle.js" "$d" "$CYCLES") || { echo "cycle.js failed"; rm -rf "$d"; continue; }
		c2=$("$CBENCH" "$d" "$CYCLES" 1 | sed -n 's/.* library *\([0-9.]*\) us.*/\1/p')
		c=$(median2 "$c1" "$c2")
		get() { awk -v n="$1" '$1 == n { print $2 }' <<<"$out"; }
		s=$(get sync) a=$(get async) f=$(get front) p=$(get plf)
		printf '%-10s %9s %9s %9s %9s %9s   %sx %sx %sx %sx\n' "$fs" "$c" "$s" "$a" "$f" "$p" \
			"$(ratio "$s" "$c")" "$(ratio "$a" "$c")" "$(ratio "$f" "$c")" "$(ratio "$p" "$c")"
		echo "#   C: $c1 before, $c2 after; plf/front: $(ratio "$p" "$f")x"
		rm -rf "$d"
	done
fi

# --- 2. stale-lock steal race -----------------------------------------------------
# A round's FIFOs as bench/peers/run.sh's race_round: every contender writes
# a byte to "ready" and reads one from "go", tries once, writes a byte to
# "tried"; a holder then reads one from "leave". The driver lets them all go
# at once, and lets the holders leave only once every contender has tried.
shim=$work/shim/proper-lockfile # NODE_PATH=$work/shim: the front under that name
mkdir -p "$shim"
echo "module.exports = require('$node_dir/proper-lockfile.js');" >"$shim/index.js"
ago() { date -d "@$(($(date +%s) - $1))" +%Y%m%d%H%M.%S; }
stale_plf() { rm -rf "$1.lock"; mkdir "$1.lock" && touch -t "$(ago 10)" "$1.lock"; }
stale_front() { stale_plf "$1"; }
stale_frontkilled() { # left by a front SIGKILLed while holding it (record beside), 10 s old
	rm -rf "$1.lock" "$1.lock.hf-record"
	node -e 'require(process.argv[1]).lockSync(process.argv[2], { realpath: false });
		process.kill(process.pid, "SIGKILL")' "$node_dir/proper-lockfile.js" "$1" 2>/dev/null
	touch -t "$(ago 10)" "$1.lock"
}
stale_mixed() { stale_plf "$1"; }
race_round() { # TOOL NODE_PATH: prints "max enters"
	local tool=$1 np=$2 dir=$work/round path=$work/file i readyfd gofd triedfd leavefd pids=()
	rm -rf "$dir"
	mkdir "$dir"
	: >"$dir/log"
	: >"$path"
	"stale_$tool" "$path" || echo "stale_$tool failed" >>"$work/errors"
	mkfifo "$dir/ready" "$dir/go" "$dir/tried" "$dir/leave"
	exec {readyfd}<>"$dir/ready" {gofd}<>"$dir/go" {triedfd}<>"$dir/tried" {leavefd}<>"$dir/leave"
	for ((i = 1; i <= K; i++)); do
		[ "$tool" = mixed ] && np=$([ $((i % 2)) = 0 ] && echo "$work/shim" || echo "$node_dir/node_modules")
		NODE_PATH=$np node "$here/../peers/plf_contend.js" "$path" "$dir" 2000 \
			>/dev/null 2>>"$work/errors" &
		pids+=($!)
	done
	read -r -t 120 -N "$K" -u "$readyfd" _ || echo "race $tool: not all ready" >>"$work/errors"
	printf '%*s' "$K" '' | tr ' ' '\n' >&"$gofd"
	read -r -t 120 -N "$K" -u "$triedfd" _ || echo "race $tool: not all tried" >>"$work/errors"
	printf '%*s' "$K" '' | tr ' ' '\n' >&"$leavefd"
	wait "${pids[@]}" 2>/dev/null
	exec {readyfd}>&- {gofd}>&- {triedfd}>&- {leavefd}>&-
	awk '$1 == "enter" { n++; t++; if (n > m) m = n } $1 == "exit" { n-- }
	     END { print m + 0, t + 0 }' "$dir/log"
}
if [[ " $SCENARIOS " == *" 2 "* ]]; then
	echo
	echo "## 2. stale-lock steal race: $K contenders, $ROUNDS rounds per row (holders: most at once, per round)"
	for row in "plf:npm proper-lockfile $plf_version, a 10 s old lock directory" \
		"front:holdfast/proper-lockfile, the same leftover" \
		"frontkilled:holdfast/proper-lockfile, a 10 s old lock left by a SIGKILLed front" \
		"mixed:half npm proper-lockfile, half the front, a 10 s old lock directory"; do
		tool=${row%%:*} label=${row#*:}
		[[ " ${ROWS:-plf front frontkilled mixed} " == *" $tool "* ]] || continue
		np=$node_dir/node_modules
		[ "$tool" = plf ] || np=$work/shim
		hist=() zero=0
		for ((r = 1; r <= ROUNDS; r++)); do
			read -r m _ < <(race_round "$tool" "$np")
			hist+=("$m")
		done
		max=$(printf '%s\n' "${hist[@]}" | sort -n | tail -1)
		summary=$(printf '%s\n' "${hist[@]}" | sort -n | uniq -c |
			awk '{ printf "%s%d holder%s in %d round%s", (NR > 1 ? ", " : ""), $2, ($2 == 1 ? "" : "s"), $1, ($1 == 1 ? "" : "s") }')
		printf '%-10s max %s: %s  (%s)\n' "$tool" "$max" "$summary" "$label"
		eval "max_$tool=$max"
	done
	echo "# holders at most: proper-lockfile ${max_plf:-?}, front ${max_front:-?} / ${max_frontkilled:-?}, mixed ${max_mixed:-?} (goal: 1)"
fi
if [ -s "$work/errors" ]; then
	echo "# errors (first 10):"
	sort "$work/errors" | uniq -c | sort -rn | head -10
fi
exit 0
