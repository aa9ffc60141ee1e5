#!/usr/bin/env bash
# bench/peers/run.sh BUILD_DIR - "holdfast never admits two holders where the
# peers do, under stale-lock races and crashes": measured side by side in one
# run, and reported (a measurement, never a verdict: it exits 0 whatever the
# counts are; 1 only when it cannot run at all).
#
# Overlap detector: a process that believes it holds the lock appends
# "enter ID" to a shared log (O_APPEND, one write), and "exit ID" just before
# it releases. Replaying a round's log gives the most processes that believed
# they held the lock at the same time ("holders" below).
#
#   1. stale-lock steal race: a stale lock is in place (backdated beyond each
#      tool's stale window, or naming an owner that exited); K contenders are
#      released together by a FIFO barrier (no sleeps) and each tries once.
#      Every holder keeps the lock until every contender has tried; the time
#      from "go" to the last try is reported, and must stay well under the
#      stale windows (1-2 s) for a count to mean a race rather than a held
#      lock that aged past the window.
#   2. killed wrapper: the wrapper is SIGKILLed while its command runs, then a
#      second wrapper tries once (bench/run/killed_wrapper.sh, run as is for
#      holdfast run and dotlockfile, and behind flock_as_run.sh for flock(1)):
#      2 holders when the second got in while the command still ran.
#   3. flock(1) unlink split: A holds L, B waits on L, A's command removes L
#      as its last act and exits; B gets the lock on the unlinked inode, then
#      a new C tries L once. holdfast run beside it, with the same script.
#
# Environment: RACE_ROUNDS (100: scenario 1's rows, whose races are rare for
# some tools), PLF_ROUNDS (10: proper-lockfile's, each round starts K node
# processes), ROUNDS (30: scenarios 2 and 3), K (16 contenders), HFBENCH
# (/tmp/hfbench: proper-lockfile 4.1.2 is installed there with npm when
# missing), SCENARIOS ("1 2 3"), TOOLS (scenario 1's rows, default all: plf
# lfprogs dotlock dotlockp hfdead hfleaked hfnorecord hfsession flock hfflock).
set -u
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
HF=$build/holdfast
KILLED_WRAPPER=$here/../run/killed_wrapper.sh
RACE_ROUNDS=${RACE_ROUNDS:-100}
PLF_ROUNDS=${PLF_ROUNDS:-10}
ROUNDS=${ROUNDS:-30}
K=${K:-16}
HFBENCH=${HFBENCH:-/tmp/hfbench}
SCENARIOS=${SCENARIOS:-1 2 3}
TOOLS=${TOOLS:-plf lfprogs dotlock dotlockp hfdead hfleaked hfnorecord hfsession flock hfflock}
[ -x "$HF" ] || { echo "bench/peers: $HF missing (build first)"; exit 1; }

work=$(mktemp -d /dev/shm/hf-bench-peers.XXXXXX)
owners=() # long-lived processes started here to own setup locks
cleanup() {
	# A child forked from here and signalled before it exec'd runs the traps
	# it inherited: only this shell cleans up.
	[ "$BASHPID" = "$$" ] || return 0
	local p
	for p in "${owners[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
have() { command -v "$1" >/dev/null 2>&1; }
wanted() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; } # WORD LIST
version() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo '?'; }
results=$work/results # scenario TAB tool TAB max holders TAB aux [TAB spread ms] (per round)
record() { local IFS=$'\t'; echo "$*" >>"$results"; }
ago() { echo "@$(($(date +%s) - $1))"; } # touch -d argument: $1 s ago

# "1 holder in R rounds, 2 holders in R2 rounds, ..." for per-round maxima.
histogram() {
	printf '%s\n' "$@" | sort -n | uniq -c | awk '{ printf "%s%d holder%s in %d round%s", (NR > 1 ? ", " : ""), $2, ($2 == 1 ? "" : "s"), $1, ($1 == 1 ? "" : "s") }'
}

# Max simultaneous believers and number of "enter" lines of a log.
overlap() {
	awk '$1 == "enter" { n++; t++; if (n > m) m = n } $1 == "exit" { n-- }
	     END { print m + 0, t + 0 }' "$1"
}

echo "# peers: $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); K $K; rounds: race $RACE_ROUNDS (proper-lockfile $PLF_ROUNDS), others $ROUNDS"
echo "# util-linux $(version util-linux), liblockfile-bin $(version liblockfile-bin), lockfile-progs $(version lockfile-progs)"

# --- proper-lockfile ----------------------------------------------------------
plf_ok=
if have node; then
	if [ ! -d "$HFBENCH/node_modules/proper-lockfile" ] && have npm; then
		mkdir -p "$HFBENCH"
		npm install --prefix "$HFBENCH" --no-audit --no-fund --loglevel=error \
			proper-lockfile@4.1.2 >/dev/null 2>&1
	fi
	plf_json=$HFBENCH/node_modules/proper-lockfile/package.json
	if [ -f "$plf_json" ]; then
		plf_ok=1
		plf_version=$(node -p "require('$plf_json').version" 2>/dev/null)
		echo "# node $(node --version), proper-lockfile $plf_version ($HFBENCH)"
	fi
fi

# --- 1. stale-lock steal race -----------------------------------------------------
# Per tool: stale_TOOL PATH sets up the stale lock for one round; take_TOOL
# PATH I tries once (0: it holds the lock); release_TOOL PATH I releases.
# They run in the contender's own subshell ($BASHPID is the contender).

stale_plf() { # a lock directory whose mtime is 10 s old; stale: 2000
	: >"$1"
	rm -rf "$1.lock"
	mkdir "$1.lock" && touch -d "$(ago 10)" "$1.lock"
}
stale_lfprogs() { # a lock made by lockfile-create, atime and mtime 10 min back
	rm -f "$1.lock"
	lockfile-create --retry 0 "$1" && touch -d "$(ago 600)" "$1.lock"
}
take_lfprogs() { lockfile-create --retry 0 "$1" 2>/dev/null; }
release_lfprogs() { lockfile-remove "$1"; }
stale_dotlock() { # the same with dotlockfile (no pid: the 5-minute rule)
	rm -f "$1"
	dotlockfile -l -r 0 "$1" && touch -d "$(ago 600)" "$1"
}
take_dotlock() { dotlockfile -l -r 0 "$1" 2>/dev/null; }
release_dotlock() { dotlockfile -u "$1"; }
stale_dotlockp() { # -p: the lock names a shell that has exited
	rm -f "$1"
	sh -c 'dotlockfile -l -p -r 0 "$1"; exit $?' sh "$1"
}
take_dotlockp() { dotlockfile -l -p -r 0 "$1" 2>/dev/null; }
release_dotlockp() { dotlockfile -u "$1"; }
stale_hfdead() { # acquired for a shell that then exits (nothing is killed)
	sh -c '"$1" lock acquire "$2" -n --pid $$ >/dev/null; exit $?' sh "$HF" "$1"
}
take_hf() {
	local me=$BASHPID
	tok=$("$HF" lock acquire "$1" -n --stale 2s --pid "$me" 2>/dev/null)
}
release_hf() { "$HF" lock release "$1" --token "${tok%% *}"; }
# hfleaked / hfnorecord: prepared for every round at the start (they age by
# the clock: a record's "acquired", a record-less directory's ctime).
stale_hfleaked() { :; }
stale_hfnorecord() { :; }
stale_hfsession() { # a record started 10 min ago, its pid long gone
	printf '{"lane":"old","owner":"0f0f0f0f","pid":%d,"host":"%s","started":"%s"}\n' \
		"$dead_pid" "$(uname -n)" "$(date -u -d "$(ago 600)" +%Y-%m-%dT%H:%M:%SZ)" >"$1"
}
take_hfsession() {
	"$HF" session take --lane "c$2" --owner "o$BASHPID" --stale 1s --file "$1" 2>/dev/null
}
release_hfsession() { "$HF" session release --lane "c$2" --owner "o$BASHPID" --file "$1"; }
take_hfdead() { take_hf "$@"; }
take_hfleaked() { take_hf "$@"; }
take_hfnorecord() { take_hf "$@"; }
release_hfdead() { release_hf "$@"; }
release_hfleaked() { release_hf "$@"; }
release_hfnorecord() { release_hf "$@"; }
# flock / hfflock: fd_contend.sh's scripts; the stale state is a script that
# took the lock by its fd form and exited (for flock(1) the kernel dropped it)
stale_flock() { bash -c 'exec 9>"$1"; flock -n 9; exit $?' sh "$1"; } # exit: no exec of the last command
stale_hfflock() { bash -c 'exec 9>"$1"; "$2" flock -n 9; exit $?' sh "$1" "$HF"; }

# One round's FIFOs in DIR (the driver keeps each open read-write, so nobody
# blocks in open() and a byte written before its reader arrives waits in the
# pipe): every contender writes a byte to "ready" and reads one from "go",
# tries once, writes a byte to "tried"; a holder then reads one from "leave".
# The driver writes K bytes to "go" once it has read K from "ready", and K to
# "leave" once it has read K from "tried": every holder holds until every
# contender has tried, so two that both believed they held it overlap in the
# log whatever the scheduling.
contender() { # TOOL PATH I DIR
	local tool=$1 path=$2 i=$3 dir=$4 held=
	printf x >"$dir/ready"
	read -r _ <"$dir/go"
	if "take_$tool" "$path" "$i"; then
		held=1
		echo "enter $BASHPID" >>"$dir/log"
	fi
	printf x >"$dir/tried"
	[ -n "$held" ] || exit 0
	read -r _ <"$dir/leave"
	echo "exit $BASHPID" >>"$dir/log"
	"release_$tool" "$path" "$i" >/dev/null 2>&1
	exit 0
}

race_round() { # TOOL PATH: prints "max takers spread_ms" (spread: go to the last try)
	local tool=$1 path=$2 dir=$work/round i readyfd gofd triedfd leavefd t0 t1
	rm -rf "$dir"
	mkdir "$dir"
	: >"$dir/log"
	mkfifo "$dir/ready" "$dir/go" "$dir/tried" "$dir/leave"
	exec {readyfd}<>"$dir/ready" {gofd}<>"$dir/go" {triedfd}<>"$dir/tried" {leavefd}<>"$dir/leave"
	local pids=()
	for ((i = 1; i <= K; i++)); do
		if [ "$tool" = flock ] || [ "$tool" = hfflock ]; then
			bash "$here/fd_contend.sh" "$tool" "$HF" "$path" "$dir" >/dev/null 2>>"$work/errors" &
		elif [ "$tool" = plf ]; then
			NODE_PATH=$HFBENCH/node_modules node "$here/plf_contend.js" "$path" "$dir" 2000 \
				>/dev/null 2>>"$work/errors" &
		else
			contender "$tool" "$path" "$i" "$dir" >/dev/null 2>>"$work/errors" &
		fi
		pids+=($!)
	done
	read -r -t 60 -N "$K" -u "$readyfd" _ ||
		echo "race $tool: not all $K contenders were ready within 60 s" >>"$work/errors"
	t0=$EPOCHREALTIME
	printf '%*s' "$K" '' | tr ' ' '\n' >&"$gofd"
	read -r -t 60 -N "$K" -u "$triedfd" _ ||
		echo "race $tool: not all $K contenders tried within 60 s" >>"$work/errors"
	t1=$EPOCHREALTIME
	printf '%*s' "$K" '' | tr ' ' '\n' >&"$leavefd"
	wait "${pids[@]}"
	exec {readyfd}>&- {gofd}>&- {triedfd}>&- {leavefd}>&-
	echo "$(overlap "$dir/log") $(((${t1//[.,]/} - ${t0//[.,]/}) / 1000))"
}

declare -A label=(
	[plf]="proper-lockfile lock({stale:2000}), lock dir mtime 10 s back"
	[lfprogs]="lockfile-create --retry 0, lock atime+mtime 10 min back"
	[dotlock]="dotlockfile -l -r 0, lock atime+mtime 10 min back"
	[dotlockp]="dotlockfile -l -p -r 0, lock names an exited pid"
	[hfdead]="holdfast lock acquire -n --stale 2s, owner exited"
	[hfleaked]="holdfast lock acquire -n --stale 2s, live owner past --max-hold 1s"
	[hfnorecord]="holdfast lock acquire -n --stale 2s, no owner record, ctime > 2 s old"
	[hfsession]="holdfast session take --stale 1s, record started 10 min ago"
	[flock]="flock -n 9 (fd form, one script each), the last holder's script exited"
	[hfflock]="holdfast flock -n 9 (fd form, one script each), the last holder's script exited"
)
declare -A short=([plf]=proper-lockfile [lfprogs]=lockfile-progs [dotlock]=dotlockfile
	[dotlockp]="dotlockfile -p" [hfdead]="holdfast lock (dead)"
	[hfleaked]="holdfast lock (leaked)" [hfnorecord]="holdfast lock (no rec)"
	[hfsession]="holdfast session" [flock]="flock(1) -n 9" [hfflock]="holdfast flock -n 9")

scenario1() {
	local t r m n spread path left maxes rounds tools=()
	sh -c 'exit 0' &
	dead_pid=$!
	wait "$dead_pid"
	mkdir "$work/s1"
	# The clock-aged holdfast locks are prepared first; the other rows age them.
	sleep 600 &
	local live_owner=$!
	owners+=("$live_owner")
	for ((r = 1; r <= RACE_ROUNDS; r++)); do
		"$HF" lock acquire "$work/s1/hfleaked.$r" -n --pid "$live_owner" --max-hold 1s >/dev/null ||
			echo "setup: acquire hfleaked.$r failed" >>"$work/errors"
		mkdir "$work/s1/hfnorecord.$r"
	done
	local aged_at=$(($(date +%s%N) / 1000000 + 2500)) # ms: past --stale 2s by then

	echo
	echo "## 1. stale-lock steal race: $K contenders released by one FIFO barrier, one try each"
	if [ -n "$plf_ok" ]; then tools+=(plf); else echo "   proper-lockfile: skipped (node/npm missing or install into $HFBENCH failed)"; fi
	if have lockfile-create; then tools+=(lfprogs); else echo "   lockfile-progs: skipped (not installed)"; fi
	if have dotlockfile; then tools+=(dotlock dotlockp); else echo "   dotlockfile: skipped (liblockfile-bin not installed)"; fi
	tools+=(hfdead hfleaked hfnorecord hfsession)
	if have flock; then tools+=(flock); fi
	tools+=(hfflock)
	for t in "${tools[@]}"; do
		wanted "$t" "$TOOLS" || continue
		if [ "$t" = hfleaked ] || [ "$t" = hfnorecord ]; then
			left=$((aged_at - $(date +%s%N) / 1000000))
			[ "$left" -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
		fi
		maxes=()
		rounds=$RACE_ROUNDS
		[ "$t" = plf ] && rounds=$PLF_ROUNDS
		for ((r = 1; r <= rounds; r++)); do
			case $t in
			hfleaked | hfnorecord) path=$work/s1/$t.$r ;;
			*) path=$work/s1/$t ;;
			esac
			"stale_$t" "$path" 2>>"$work/errors" || echo "setup $t round $r failed" >>"$work/errors"
			read -r m n spread < <(race_round "$t" "$path")
			record 1 "$t" "$m" "$n" "$spread"
			maxes+=("$m")
		done
		printf '   %-72s %s\n' "${label[$t]}:" "$(histogram "${maxes[@]}")"
	done
	echo "   (rounds by the most processes that believed they held the lock at once)"
	kill "$live_owner" 2>/dev/null
	wait "$live_owner" 2>/dev/null
}

# --- 2. killed wrapper ----------------------------------------------------------------
scenario2() {
	local r d name during after
	echo
	echo "## 2. wrapper SIGKILLed while CMD runs, then a second wrapper tries once (bench/run/killed_wrapper.sh)"
	if [ ! -x "$KILLED_WRAPPER" ]; then
		echo "   skipped: $KILLED_WRAPPER missing"
		return
	fi
	for ((r = 1; r <= ROUNDS; r++)); do
		d=$work/s2.$r
		mkdir -p "$d/hf" "$d/fl"
		"$KILLED_WRAPPER" "$HF" "$d/hf" >"$d/out" 2>>"$work/errors"
		# the same scenario for flock(1): its "holdfast" line (the dotlockfile one is dropped)
		"$KILLED_WRAPPER" "$here/flock_as_run.sh" "$d/fl" 2>>"$work/errors" |
			sed -n 's/^\( *\)holdfast /\1flock    /p' >>"$d/out"
		# "   NAME  second acquirer while CMD runs: exit RC (...); after CMD ended: exit RC2"
		sed -n 's/^ *\([a-z]*\) .*while CMD runs: exit \([0-9]*\) .*after CMD ended: exit \([0-9]*\).*/\1 \2 \3/p' \
			"$d/out" | while read -r name during after; do
			record 2 "$name" $((during == 0 ? 2 : 1)) "$after"
		done
		[ "$r" = 1 ] && sed 's/^ */   round 1: /' "$d/out"
		rm -rf "$d"
	done
}

# --- 3. flock unlink split ------------------------------------------------------------
blocked() { # TOOL PID: PID is waiting for the lock
	case $1 in
	flock) grep -q -- "-> FLOCK .* $2 " /proc/locks ;;
	holdfast) grep -qs '^inotify wd' /proc/"$2"/fdinfo/* ;; # its wait's watch
	esac
}
split_round() { # TOOL: prints "max C_rc"
	local tool=$1 d=$work/s3 rfd afd bfd a b i crc
	rm -rf "$d"
	mkdir "$d"
	local L=$d/L log=$d/log
	: >"$log"
	mkfifo "$d/ready" "$d/goA" "$d/goB"
	exec {rfd}<>"$d/ready" {afd}<>"$d/goA" {bfd}<>"$d/goB"
	local wa wb wc
	case $tool in
	flock) wa=(flock "$L") wb=(flock -w 10 "$L") wc=(flock -n "$L") ;;
	holdfast) wa=("$HF" run --lock "$L" --) wb=("$HF" run -w 10 --lock "$L" --)
		wc=("$HF" run -n --lock "$L" --) ;;
	esac
	# A: holds L; at go, leaves its critical section, then removes L (cleanup).
	"${wa[@]}" sh -c 'echo enter A >>"$1"; echo A >"$2"; read x <"$3"; echo exit A >>"$1"; rm -rf "$4"' \
		sh "$log" "$d/ready" "$d/goA" "$L" 2>>"$work/errors" &
	a=$!
	read -r -t 10 -u "$rfd" _ || echo "split $tool: A never entered" >>"$work/errors"
	"${wb[@]}" sh -c 'echo enter B >>"$1"; echo B >"$2"; read x <"$3"; echo exit B >>"$1"' \
		sh "$log" "$d/ready" "$d/goB" 2>>"$work/errors" &
	b=$!
	for ((i = 0; i < 2000; i++)); do # at most 10 s
		blocked "$tool" "$b" && break
		sleep 0.005
	done
	[ "$i" -lt 2000 ] || echo "split $tool: B never seen waiting" >>"$work/errors"
	echo go >&"$afd"
	read -r -t 12 -u "$rfd" _ || echo "split $tool: B never entered" >>"$work/errors"
	"${wc[@]}" sh -c 'echo enter C >>"$1"; echo exit C >>"$1"' sh "$log" 2>>"$work/errors"
	crc=$?
	echo go >&"$bfd"
	wait "$a" "$b"
	exec {rfd}>&- {afd}>&- {bfd}>&-
	read -r m _ < <(overlap "$log")
	echo "$m $crc"
}
scenario3() {
	local tool r m crc maxes
	echo
	echo "## 3. unlink split: A holds L, B waits on L, A's command removes L and exits, then C tries L once"
	for tool in flock holdfast; do
		maxes=()
		for ((r = 1; r <= ROUNDS; r++)); do
			read -r m crc < <(split_round "$tool")
			record 3 "$tool" "$m" "$crc"
			maxes+=("$m")
		done
		printf '   %-10s %s\n' "$tool:" "$(histogram "${maxes[@]}")"
	done
}

# --- summary ---------------------------------------------------------------------------------
summary() {
	local s t
	declare -A sname=([1]="stale steal race" [2]="killed wrapper" [3]="unlink split")
	echo
	echo "## summary (holders: processes that believed they held the lock at the same time)"
	printf '   %-17s %-23s %6s %10s %5s  %s\n' scenario tool rounds ">=2 holders" max notes
	cut -f1,2 "$results" | awk '!seen[$0]++' | while IFS=$'\t' read -r s t; do
		awk -F'\t' -v s="$s" -v t="$t" -v sn="${sname[$s]}" -v name="${short[$t]:-$t}" '
			$1 == s && $2 == t {
				n++; if ($3 >= 2) multi++; if ($3 > max) max = $3
				if (n == 1 || $4 < amin) amin = $4; if ($4 > amax) amax = $4
				if ($4 == 0) zero++; if ($5 > spread) spread = $5
			}
			END {
				if (s == 1) note = sprintf("took it per round: %d-%d%s; tries within %d ms of go",
					amin, amax, zero ? sprintf(", none in %d rounds", zero) : "", spread)
				else if (s == 2) note = sprintf("2nd try after CMD ended got it %d/%d", zero, n)
				else note = sprintf("C got it %d/%d", zero, n)
				printf "   %-17s %-23s %6d %10d %5d  %s\n", sn, name, n, multi, max, note
			}' "$results"
	done
	if [ -s "$work/errors" ]; then
		echo "   the tools' stderr, by kind ($(wc -l <"$work/errors") lines; numbers as N):"
		sed -E "s|$work|WORK|g; s/[0-9]+/N/g" "$work/errors" | sort | uniq -c | sort -rn | head -8 |
			cut -c1-150 | sed 's/^/   /'
	fi
}

: >"$results"
for s in $SCENARIOS; do
	case $s in
	1 | 2 | 3) "scenario$s" ;;
	*) echo "bench/peers: unknown scenario $s (1, 2 or 3)" ;;
	esac
done
summary
exit 0
