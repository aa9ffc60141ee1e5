#!/usr/bin/env bash
# demo/lock.sh - directory locks through `holdfast run` and `holdfast edit`:
# contending jobs take turns, a killed holder is recovered, concurrent edits
# add up exactly. Run by `make run` with HF = the holdfast binary; works in a
# scratch directory that it removes.
set -u
HF=${HF:?HF must name the holdfast binary}
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
D=$(mktemp -d "$base/holdfast-demo-lock.XXXXXX")
bg=()
cleanup() {
	for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$D"
}
trap cleanup EXIT
say() { printf '%s\n' "$*"; }
gone() { # no such process, or one that exited (a zombie nobody reaps)
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
	[ -z "$st" ] || [ "$st" = Z ]
}
fail=0
check() { # CONDITION-TEXT, then the test as arguments
	local what=$1
	shift
	if "$@"; then say "   ok: $what"; else say "   NOT OK: $what"; fail=1; fi
}

say
say "== holdfast run / edit: directory locks (in $D)"

# --- 1. contending jobs --------------------------------------------------------
say
say "1. Four jobs, each 'holdfast run --lock $D/build.lock -- job N'. A job writes"
say "   'N in' and 'N out' to a shared log, with work in between: under the lock no"
say "   two jobs are ever inside at once, and each gets a larger fence."
cat >"$D/job.sh" <<'EOF'
#!/bin/sh
echo "$1 in  (fence $HOLDFAST_FENCE)" >>"$2"
i=0; while [ $i -lt 300 ]; do i=$((i+1)); done   # some work
echo "$1 out" >>"$2"
EOF
chmod +x "$D/job.sh"
for n in 1 2 3 4; do
	"$HF" run --lock "$D/build.lock" -- "$D/job.sh" "$n" "$D/log" &
	bg+=($!)
done
wait "${bg[@]}"
bg=()
sed 's/^/   | /' "$D/log"
paired() { awk 'NR%2==1 {split($0,a," "); who=a[1]} NR%2==0 {split($0,b," "); if (b[1]!=who || b[2]!="out") exit 1} END {exit NR!=8}' "$D/log"; }
increasing() { awk '{if ($2=="in") {f=$4+0; sub(/\)/,"",f); if (f<=last) exit 1; last=f}}' "$D/log"; }
check "every 'in' is followed by the same job's 'out'" paired
check "fences strictly increase" increasing

# --- 2. a killed holder -----------------------------------------------------------
say
say "2. A holder is killed. The lock names the command's pid, not holdfast's:"
say "   killing only the 'holdfast run' wrapper leaves the lock held while the"
say "   command still runs (dotlockfile would let a second holder in here)."
mkfifo "$D/go" "$D/ready"
"$HF" run --lock "$D/job.lock" -- sh -c "echo \$\$ > '$D/ready'; read x < '$D/go'" &
wrapper=$!
read -r cmd <"$D/ready"
say "   \$ holdfast lock status job.lock   ->  $("$HF" lock status "$D/job.lock")"
{ kill -9 "$wrapper"; wait "$wrapper"; } 2>/dev/null
say "   (kill -9 of the wrapper, pid $wrapper; its command, pid $cmd, still runs)"
say "   \$ holdfast run -n --lock job.lock -- echo second"
"$HF" run -n --lock "$D/job.lock" -- echo second 2>&1 | sed 's/^/   | /'
held_now() { ! "$HF" run -n --lock "$D/job.lock" -- true 2>/dev/null; }
check "refused while the command runs" held_now
say "   (the command is now killed too)"
kill -9 "$cmd"
while ! gone "$cmd"; do sleep 0.01; done
say "   \$ holdfast lock status job.lock   ->  $("$HF" lock status "$D/job.lock")"
say "   \$ holdfast run -n --lock job.lock -- echo recovered"
out=$("$HF" run -n --lock "$D/job.lock" -- echo recovered 2>&1)
say "   | $out"
check "a dead owner's lock is reaped at once by the next acquirer" test "$out" = recovered

# --- 3. concurrent edits -------------------------------------------------------------
say
say "3. 100 concurrent 'holdfast edit counter -- sh -c \"read n; echo \$((n+1))\"':"
say "   each reads the counter on stdin and writes the next value; edit replaces"
say "   the file atomically, under the lock counter.lock."
echo 0 >"$D/counter"
for i in $(seq 1 100); do
	"$HF" edit "$D/counter" -- sh -c 'read n; echo $((n+1))' &
	bg+=($!)
done
wait "${bg[@]}"
bg=()
say "   counter = $(cat "$D/counter")"
check "no update lost: the counter is exactly 100" test "$(cat "$D/counter")" = 100
say "   \$ holdfast edit counter -- sh -c 'cat; exit 3'   (a failing edit)"
"$HF" edit "$D/counter" -- sh -c 'cat >/dev/null; echo garbage; exit 3'
rc=$?
say "   exit $rc, counter = $(cat "$D/counter")"
check "a failing command leaves the file untouched, its status passed through" \
	test "$rc" = 3 -a "$(cat "$D/counter")" = 100
leftovers=$(find "$D" -maxdepth 1 -name 'counter.tmp-*' | wc -l)
check "no temporaries left" test "$leftovers" = 0

exit $fail
