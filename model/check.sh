#!/usr/bin/env bash
# model/check.sh - check configurations of model/dirlock.pml,
# model/session.pml (configurations named session*) and model/share.pml
# (the directory lock's modes: configurations named share*) with SPIN.
#
# usage: model/check.sh [-o OUTDIR] [-k] [-b] CONFIG...
#   CONFIG   a name below, or "test" (= b1 b1-fence anytime weak-noscan
#            weak-nofence weak-noreadback weak-oldwithdraw weak-bypath and
#            share-test, what `make model` and `make check-long` run), or
#            "share-test" (= share share-renew share-leak share-weak-*), or
#            "session-test" (= session session-weak, run by `make test`),
#            "queue-test" (= queue queue-2x3 queue-nopass
#            queue-late queue-early queue-latemark queue-noviaq
#            queue-sleepnow), "queue-mark-test" (= queue-markfail
#            queue-markfail-2x3 queue-noowed, the refused mark; both the
#            waiters' queue, model/queue.pml, run by `make check-long`)
#   -o DIR   work in DIR/<config> (default: $TMPDIR or /tmp, holdfast-model.*)
#   -k       keep the work directories (pan, trails) and print where
#   -b       breadth-first search: a violation found is a shortest one
#            (for trails; needs more memory, no -DCOLLAPSE)
#   list     print the configurations (name, expected verdict, flags, what)
#
# Each configuration has an expected verdict: "holds" (no assertion can be
# violated: exhaustive, -DCOLLAPSE is exact) or "fails" (SPIN must find a
# violation: proof that the model can see the bug). The script prints one
# line per configuration - verdict, states stored, search depth, seconds
# (pan alone), memory pan reports using (MB) - and exits 1 if any verdict
# differs from the expected one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=""
keep=0
bfs=0
while getopts "o:kb" opt; do
	case $opt in
	o) out=$OPTARG ;;
	k) keep=1 ;;
	b) bfs=1 ;;
	*) exit 64 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }

# name | expected | spin -D flags | what it checks
# (every "holds" configuration asserts mutual exclusion, and no leftover
# record after an acquirer's own withdrawal; FENCE=1 also fences)
configs='
b1|holds|-DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|B1 mutual exclusion + no leftover; flock judges; crashes (also in the withdrawal), I/O failures; fence check removed (over-approximates entries)
b1-fence|holds|-DIOFAIL=0 -DCRASH=0 -DRELEASER=0 -DW1ATOMIC=1|B1 strictly increasing fences (+ mutual exclusion, no leftover), no crashes, no I/O failures, W1 one step
anytime|holds|-DANYTIME=1 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0 -DCRASHW=0 -DIOFAIL=0|B1, judges may also reap record-less directories ignoring the flock; no crashes in the withdrawal, no I/O failures
weak-noscan|fails|-DSCAN=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|weakened: no look at the claims after publication (incs<=1)
weak-nofence|fails|-DFENCECHECK=0 -DIOFAIL=0 -DCRASH=0 -DRELEASER=0|weakened: no counter == f check before entering (f>lastfence)
weak-noreadback|fails|-DREADBACK=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|weakened: no read back of L at A6 (incs<=1)
weak-oldwithdraw|fails|-DOLDW=1 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|weakened: 0.1.0 W (look at L, search the claims) as the acquirer own withdrawal (no leftover)
weak-bypath|fails|-DPUBLISH=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|the protocol as first specified: A4 by path, not through the fd (no leftover)
b1-release|holds|-DFENCE=0 -DFENCECHECK=0|B1 + every holder may leave its release to a by-token releaser (0.1.0 W + a last look at L)
b1-full|holds||B1 everything on: fences, fence check, crashes, I/O failures, by-token releasers
anytime-full|holds|-DANYTIME=1 -DFENCE=0 -DFENCECHECK=0|anytime + crashes in the withdrawal + by-token releasers
b1-w2any|holds|-DW2PEEK=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|B1, W2 takes L whenever it is myd (record or not), as first specified
b1-seedrule|holds|-DHARMLESS=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|B1 with the seed rule: every claim denies
b1-scan1by1|holds|-DSCANATOMIC=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|B1, claims looked at one by one
bypath-mutex|holds|-DPUBLISH=0 -DLEFTOVER=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|A4 by path (one step): mutual exclusion holds, only no-leftover fails
lookup-mutex|holds|-DPUBLISH=1 -DLEFTOVER=0 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|A4 by path as linkat does it (lookup, then link): mutual exclusion
lookup-leftover|fails|-DPUBLISH=1 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|A4 by path as linkat does it: no leftover fails
rel-leftover|fails|-DLEFTREL=1 -DFENCE=0 -DFENCECHECK=0|the by-token releaser can leave its record behind (and then reports "not held")
probe1|fails|-DPROBE=1 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|reachable: an attempt lost to a judge LOCK_EX
probe2|fails|-DPROBE=2 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|reachable: LOCK_SH taken on a directory a judge already removed
probe3|fails|-DPROBE=3 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|reachable: two acquirers share one directory
probe4|fails|-DPROBE=4 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|reachable: a record appears in a verified claim (its rmdir fails)
probe5|fails|-DPROBE=5 -DANYTIME=1 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|reachable: an any-time judge removes a directory under LOCK_SH
probe6|fails|-DPROBE=6 -DFENCE=0 -DFENCECHECK=0|reachable: the releaser last look at L finds its record
b2|holds|-DNRACT=2 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|B2 (2 actions per reaper) mutual exclusion + no leftover
b2-fence|holds|-DNRACT=2 -DIOFAIL=0 -DCRASH=0 -DRELEASER=0|B2 fences
h3|holds|-DNA=3 -DFENCE=0 -DFENCECHECK=0 -DRELEASER=0|3 holders x 2 attempts, 2 reapers x 1 action, mutual exclusion + no leftover
h3-fence|holds|-DNA=3 -DIOFAIL=0 -DCRASH=0 -DRELEASER=0|3 holders, fences
share|holds||modes: 2 processes x 2 attempts, each attempt exclusive, shared or slots (N=1); crashes (before entering, in the critical section, in the withdrawal and release)
share-leak|fails|-DLEAK=1 -DCRASH=0|modes as written: a waiter standing at L in DS1 past its max-hold is leaked; entered, its directory is reaped (a holder directory removed)
share-renew|holds|-DLEAK=1 -DRENEW=1 -DCRASH=0|modes with the fix: the drain over, the acquirer renews its record at L (DR3-DR5) before DS2/DA7; waiters may be judged leaked, no crashes
share-renew-full|holds|-DLEAK=1 -DRENEW=1|the fix with crashes everywhere
share-h3|holds|-DNA=3 -DNATT=1|modes: 3 processes x 1 attempt, any mode, N=1, crashes
share-slots2|holds|-DNA=3 -DNATT=1 -DNS=2 -DMODE0=5 -DMODE1=4 -DMODE2=4|slots N=2: 3 processes, two slot acquirers and one exclusive or slot one, crashes
share-scanreap|holds|-DSCANREAP=1|a drainer that reaped decides from that scan: holds (a reap never puts an entry back; a mismatch stays a barrier)
share-rlwait|holds|-DRLWAIT=1|DS1 also waits for record-less entries under a kernel lock (withdrawals in flight)
share-noskip|holds|-DSKIPEMPTY=0|DS1 always reads the state directory (no DL8 skip)
share-weak-noa7|fails|-DNOA7=1 -DFENCE=0|weakened: shared and slot acquirers skip DA7 (an exclusive holder beside a shared one)
share-weak-early|fails|-DEARLYA7=1 -DFENCE=0|weakened: DA7 before the move DS2 instead of after
share-weak-nodrain|fails|-DNODRAIN=1|weakened: exclusive acquirers do not drain
share-weak-skipr|fails|-DSHSKIPR=1|weakened: slot acquirers skip r- entries
share-weak-skips|fails|-DSHSKIPR=2|weakened: shared acquirers skip s- entries
share-weak-nocount|fails|-DSHSKIPR=3|weakened: slot acquirers do not count s- entries (more than N)
share-weak-fence|fails|-DNOA7=1|weakened: shared and slot acquirers skip DA7, fences asserted (SM3)
share-weak-noverify|fails|-DNA=3 -DNATT=1 -DNOVERIFY2=1|weakened: DS2 renames its self-claim to its entry without the inode check (an entry holding another acquirer directory, SM1)
session|holds||session lock: 2 takers, a stale lock, a live barrier and its lane; one holder, no leftover
session-weak|fails|-DOLDWD=1 -DRESTORE=2 -DINITSTALE=0 -DYOUNG=1|weakened: 0.1.0 withdrawal and barrier restore, plain contention (item 5)
session-weak-any|fails|-DOLDWD=1 -DRESTORE=2|weakened: 0.1.0 withdrawal and barrier restore, with the stale lock
session-restore0|holds|-DRESTORE=0|session: no taker ever puts a barrier back
session-restore2|holds|-DRESTORE=2|session: takers always put a barrier back (0.1.0 rule, pinned drop)
session-sweepall|fails|-DSWEEPALL=1|session: sweeps go on after one lost its record (a sweeper chases a withdrawal past DR rounds)
session-relcheck|fails|-DRELCHECK=1|session: no leftover after a release too (SH8: a record moved twice during its search)
session-natt2|holds|-DNATT=2 -DNAS=32|session: 2 takers x 2 attempts (32 aside names)
session-nt3|holds|-DNT=3 -DINITBAR=0|session: 3 takers, a stale lock, no barrier
queue|holds|-DNW=4 -DNATT=1 -DLEAVE=0|waiters queue as built (WT8, WT9, DQ1-DQ6): 4 waiters x 1 acquisition, none gives up (one that may give up at its only acquisition can never be stuck); no ring lost (no waiter asleep forever, the cap left out)
queue-markfail|holds|-DNW=4 -DNATT=1 -DLEAVE=0 -DMARKFAIL=1 -DMAXFAIL=2|the same, and the mark of a waiter may be refused: it leaves the queue for the watch, passing on the ring it spent (DQ5, hf_wait_unqueue)
queue-markfail-2x3|holds|-DNW=2 -DNATT=3 -DMARKFAIL=1|refused marks at 2 waiters x 3 acquisitions, one may give up
queue-noowed|fails|-DNW=4 -DNATT=1 -DLEAVE=0 -DMARKFAIL=1 -DOWED=0|weakened: a waiter whose mark is refused leaves the queue keeping the ring it spent (DQ5)
queue-sleepnow|fails|-DNW=2 -DNATT=1 -DLEAVE=0 -DSLEEPNOW=1|weakened DQ6: the first refusal registers and sleeps, without the attempt after it
queue-2x3|holds|-DNW=2 -DNATT=3|the same, 2 waiters x 3 acquisitions
queue-dq15|holds|-DUNSEEN=0|the waiter without DQ6 (its first refusal marks and looks: DQ1, DQ5), 3 waiters x 2 acquisitions
queue-nopass|fails|-DPASS=0|weakened: a waiter that gives up keeps the ring it was given (WT9)
queue-late|fails|-DLATE=1|weakened: registered after its attempt, not before the next look (WT2, DQ1)
queue-early|fails|-DEARLY=1|weakened: the release rings before the lock is free (DQ2)
queue-latemark|fails|-DMARK=0|weakened: the waiter marks the holder after its look at L, not before (DQ5)
queue-noviaq|fails|-DVIAQ=0|weakened: a holder that came through the queue rings only when its directory is marked (DQ4)
'

# pan: -E blocked processes at the end are no error; -m depth; -w hash bits
# (2^25 slots: the test configurations store 22-26 M states; bigger runs
# want PAN_FLAGS="-E -m100000 -w28" and a larger -DMEMLIM in CC_FLAGS)
PAN_FLAGS=${PAN_FLAGS:-"-E -m100000 -w25"}
CC_FLAGS_SET=${CC_FLAGS:+1}
CC_FLAGS=${CC_FLAGS:-"-O2 -DSAFETY -DCOLLAPSE -DMEMLIM=16000"}
[ $bfs = 1 ] && CC_FLAGS="-O2 -DSAFETY -DBFS -DMEMLIM=16000"

if [ "$1" = list ]; then
	printf '%s\n' "$configs" | grep . | awk -F'|' '{ printf "%-16s %-6s %s\n%16s %-6s %s\n", $1, $2, $4, "", "", ($3 == "" ? "(defaults)" : $3) }'
	exit 0
fi

expand=()
for c in "$@"; do
	if [ "$c" = test ]; then
		expand+=(b1 b1-fence anytime weak-noscan weak-nofence weak-noreadback weak-oldwithdraw weak-bypath
			share share-renew share-leak share-weak-noa7 share-weak-early share-weak-nodrain share-weak-skipr
			share-weak-skips share-weak-nocount share-weak-fence share-weak-noverify)
	elif [ "$c" = share-test ]; then
		expand+=(share share-renew share-leak share-weak-noa7 share-weak-early share-weak-nodrain share-weak-skipr
			share-weak-skips share-weak-nocount share-weak-fence share-weak-noverify)
	elif [ "$c" = session-test ]; then
		expand+=(session session-weak)
	elif [ "$c" = queue-test ]; then
		expand+=(queue queue-2x3 queue-nopass queue-late queue-early
			queue-latemark queue-noviaq queue-sleepnow)
	elif [ "$c" = queue-mark-test ]; then
		expand+=(queue-markfail queue-markfail-2x3 queue-noowed)
	else
		expand+=("$c")
	fi
done

if [ -z "$out" ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-model.XXXXXX")
	[ $keep = 1 ] || trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

status=0
printf '%-16s %-8s %-10s %12s %6s %8s %7s  %s\n' config expected result states depth seconds MB flags
for name in "${expand[@]}"; do
	line=$(printf '%s\n' "$configs" | grep "^$name|" || true)
	if [ -z "$line" ]; then
		echo "check.sh: unknown configuration '$name'" >&2
		exit 64
	fi
	IFS='|' read -r _ expect flags what <<<"$line"
	d=$out/$name
	rm -rf "$d"
	mkdir -p "$d"
	case $name in
	session*) pml=session.pml ;;
	share*) pml=share.pml ;;
	queue*) pml=queue.pml ;;
	*) pml=dirlock.pml ;;
	esac
	pan_flags=$PAN_FLAGS
	# liveness: a waiter asleep forever is an invalid end state there
	case $name in queue*) pan_flags=$(echo "$PAN_FLAGS" | sed 's/-E//') ;; esac
	cp "$here/$pml" "$d/"
	echo "$flags" >"$d/flags"
	(
		cd "$d" || exit 1
		# shellcheck disable=SC2086
		spin $flags -a "$pml" >spin.log 2>&1 || { cat spin.log; exit 1; }
		# shellcheck disable=SC2086
		cc_flags=$CC_FLAGS
		# the weakened variants fail within a second: compile them fast
		case $name in weak-* | share-weak-* | share-leak | queue-nopass | queue-late | queue-early | queue-latemark | queue-noviaq | queue-noowed | queue-sleepnow) [ -z "${CC_FLAGS_SET:-}" ] && cc_flags=$(echo "$CC_FLAGS" | sed 's/-O2/-O0/') ;; esac
		gcc $cc_flags -o pan pan.c 2>gcc.log || { cat gcc.log; exit 1; }
		start=$(date +%s.%N)
		# shellcheck disable=SC2086
		./pan $pan_flags >pan.log 2>&1
		end=$(date +%s.%N)
		echo "$start $end" >time
	) || { status=1; continue; }
	secs=$(awk '{ printf "%.1f", $2 - $1 }' "$d/time")
	states=$(grep -oE '^ *[0-9.e+]+ states, stored' "$d/pan.log" | awk '{ printf "%.0f", $1 }')
	errors=$(grep -oE 'errors: [0-9]+' "$d/pan.log" | awk '{ print $2 }')
	depth=$(grep -oE 'depth reached [0-9]+' "$d/pan.log" | awk '{ print $3 }')
	mb=$(grep -E 'total actual memory usage' "$d/pan.log" | awk '{ printf "%.0f", $1 }')
	if grep -q 'errors: [1-9]' "$d/pan.log"; then
		result=fails # a violation found is a verdict even in a partial search
	elif grep -q 'Search not completed\|reached -DMEMLIM\|max search depth too small\|pan: out of memory\|aborting' "$d/pan.log"; then
		result=INCOMPLETE
	elif [ "${errors:-x}" = 0 ]; then
		result=holds
	else
		result=ERROR
	fi
	printf '%-16s %-8s %-10s %12s %6s %8s %7s  %s\n' "$name" "$expect" "$result" "${states:-?}" "${depth:-?}" "$secs" "${mb:-?}" "${flags:--}"
	if [ "$result" = fails ]; then
		grep -m1 'assertion violated\|invalid end state' "$d/pan.log" | sed 's/^/                 /'
	fi
	[ "$result" = "$expect" ] || status=1
done
[ $keep = 1 ] && echo "work directories in $out (trails: model/trail.sh $out/CONFIG)"
exit $status
