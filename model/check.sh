#!/usr/bin/env bash
# model/check.sh - check configurations of model/dirlock.pml and
# model/session.pml (configurations named session*) with SPIN.
#
# usage: model/check.sh [-o OUTDIR] [-k] CONFIG...
#   CONFIG   a name below, or "test" (= b1 b1-fence weak-noscan weak-nofence,
#            what `make model` and `make test` run), or "session-test"
#            (= session session-weak, also run by `make test`)
#   -o DIR   work in DIR/<config> (default: $TMPDIR or /tmp, holdfast-model.*)
#   -k       keep the work directories (pan, trails) and print where
#
# Each configuration has an expected verdict: "holds" (no assertion can be
# violated: exhaustive, -DCOLLAPSE is exact) or "fails" (SPIN must find a
# violation: proof that the model can see the bug). The script prints one
# line per configuration - verdict, states stored, seconds - and exits 1 if
# any verdict differs from the expected one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=""
keep=0
while getopts "o:k" opt; do
	case $opt in
	o) out=$OPTARG ;;
	k) keep=1 ;;
	*) exit 64 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }

# name | expected | spin -D flags | what it checks
configs='
b1|holds|-DFENCE=0 -DFENCECHECK=0|B1 mutual exclusion; fence check removed (over-approximates entries), I/O failures on
b1-fence|holds|-DIOFAIL=0|B1 mutual exclusion and strictly increasing fences
b1-full|holds||B1 everything on: fences, fence check, I/O failures at A3 and A4
b1-seedrule|holds|-DHARMLESS=0 -DFENCE=0 -DFENCECHECK=0|B1 with the seed rule: every claim denies
b1-scan1by1|holds|-DSCANATOMIC=0 -DFENCE=0 -DFENCECHECK=0|B1 mutual exclusion, claims looked at one by one
weak-noscan|fails|-DSCAN=0 -DFENCE=0 -DFENCECHECK=0|weakened: no look at the claims after publication
weak-nofence|fails|-DFENCECHECK=0 -DIOFAIL=0|weakened: no counter == f check before entering
b2|holds|-DNRACT=2 -DFENCE=0 -DFENCECHECK=0|B2 (2 actions per reaper) mutual exclusion
b2-fence|holds|-DNRACT=2 -DIOFAIL=0|B2 mutual exclusion and fences
h3|holds|-DNA=3 -DFENCE=0 -DFENCECHECK=0|3 holders x 2 attempts, 2 reapers x 1 action, mutual exclusion
h3-fence|holds|-DNA=3 -DIOFAIL=0|3 holders, mutual exclusion and fences
session|holds||session lock: 2 takers, a stale lock, a live barrier and its lane; one holder, no leftover
session-weak|fails|-DOLDWD=1 -DRESTORE=2 -DINITSTALE=0 -DYOUNG=1|weakened: 0.1.0 withdrawal and barrier restore, plain contention (item 5)
session-weak-any|fails|-DOLDWD=1 -DRESTORE=2|weakened: 0.1.0 withdrawal and barrier restore, with the stale lock
session-restore0|holds|-DRESTORE=0|session: no taker ever puts a barrier back
session-restore2|holds|-DRESTORE=2|session: takers always put a barrier back (0.1.0 rule, pinned drop)
session-sweepall|fails|-DSWEEPALL=1|session: sweeps go on after one lost its record (a sweeper chases a withdrawal past DR rounds)
session-relcheck|fails|-DRELCHECK=1|session: no leftover after a release too (SH8: a record moved twice during its search)
session-natt2|holds|-DNATT=2 -DNAS=32|session: 2 takers x 2 attempts (32 aside names)
session-nt3|holds|-DNT=3 -DINITBAR=0|session: 3 takers, a stale lock, no barrier
'

# pan: -E blocked processes at the end are no error; -m depth; -w hash bits
PAN_FLAGS=${PAN_FLAGS:-"-E -m100000 -w27"}
CC_FLAGS=${CC_FLAGS:-"-O2 -DSAFETY -DCOLLAPSE -DMEMLIM=16000"}

expand=()
for c in "$@"; do
	if [ "$c" = test ]; then
		expand+=(b1 b1-fence weak-noscan weak-nofence)
	elif [ "$c" = session-test ]; then
		expand+=(session session-weak)
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
printf '%-12s %-8s %-6s %14s %9s  %s\n' config expected result states seconds flags
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
	*) pml=dirlock.pml ;;
	esac
	cp "$here/$pml" "$d/"
	echo "$flags" >"$d/flags"
	(
		cd "$d" || exit 1
		# shellcheck disable=SC2086
		spin $flags -a "$pml" >spin.log 2>&1 || { cat spin.log; exit 1; }
		# shellcheck disable=SC2086
		gcc $CC_FLAGS -o pan pan.c 2>gcc.log || { cat gcc.log; exit 1; }
		start=$(date +%s.%N)
		# shellcheck disable=SC2086
		./pan $PAN_FLAGS >pan.log 2>&1
		end=$(date +%s.%N)
		echo "$start $end" >time
	) || { status=1; continue; }
	secs=$(awk '{ printf "%.1f", $2 - $1 }' "$d/time")
	states=$(grep -oE '^ *[0-9.e+]+ states, stored' "$d/pan.log" | awk '{ printf "%.0f", $1 }')
	errors=$(grep -oE 'errors: [0-9]+' "$d/pan.log" | awk '{ print $2 }')
	if grep -q 'errors: [1-9]' "$d/pan.log"; then
		result=fails # a violation found is a verdict even in a partial search
	elif grep -q 'Search not completed\|reached -DMEMLIM\|max search depth too small\|pan: out of memory\|aborting' "$d/pan.log"; then
		result=INCOMPLETE
	elif [ "${errors:-x}" = 0 ]; then
		result=holds
	else
		result=ERROR
	fi
	printf '%-12s %-8s %-6s %14s %9s  %s\n' "$name" "$expect" "$result" "${states:-?}" "$secs" "${flags:--}"
	if [ "$result" = fails ]; then
		grep -m1 'assertion violated' "$d/pan.log" | sed 's/^/             /'
	fi
	[ "$result" = "$expect" ] || status=1
done
[ $keep = 1 ] && echo "work directories in $out (trails: model/trail.sh $out/CONFIG)"
exit $status
