#!/bin/bash
# flock_mixed.sh HOLDFAST [WORKERS] [ROUNDS] - a rolling migration under
# kills: half the workers use util-linux flock(1), half `holdfast flock`, on
# one lock file, in the command form and the descriptor form, and a quarter
# of the critical sections are killed (-9) - the section's own shell, or the
# wrapper around it (flock(1) / holdfast), whose child then keeps the lock
# through the inherited descriptor. The overlap detector: each section
# finds the pid the previous one left in IN; if that process is still alive
# a second holder is inside (an overlap). A counter is read, incremented and
# written in the section: with no overlap it equals the number of entries.
# Exit 0 only with 0 overlaps and no lost update. `make check-flock-mixed`.
set -u
H=${1:?usage: flock_mixed.sh HOLDFAST [WORKERS] [ROUNDS]}
W=${2:-8}
R=${3:-40}
FLOCK1=${FLOCK1:-/usr/bin/flock}
[ -x "$FLOCK1" ] || { echo "flock_mixed: no $FLOCK1 (util-linux)"; exit 77; }
D=$(mktemp -d /tmp/hf-flock-mixed.XXXXXX) || exit 1
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
echo 0 > "$D/count"
: > "$D/overlaps"
: > "$D/entries"
: > "$D/kills"

# The critical section, run by sh with $1 = D, $2 = kill mode (0 none,
# 1 itself, 2 its wrapper: the parent running the lock tool).
cat > "$D/crit.sh" <<'EOF'
d=$1
p=$(cat "$d/in" 2>/dev/null)
if [ -n "$p" ] && [ "$p" != $$ ] && kill -0 "$p" 2>/dev/null; then echo "$$ met $p" >> "$d/overlaps"; fi
echo $$ > "$d/in"
n=$(cat "$d/count"); echo $((n + 1)) > "$d/count"; echo $$ >> "$d/entries"
case $2 in
1) echo self >> "$d/kills"; kill -9 $$ ;;
2) echo wrapper >> "$d/kills"; kill -9 $PPID ;;
esac
[ "$(cat "$d/in")" = $$ ] || echo "$$ overwritten" >> "$d/overlaps"
rm -f "$d/in"
EOF

worker() { # $1: worker number
	local i tool mode
	for ((i = 0; i < R; i++)); do
		if (( ($1 + i) % 2 )); then tool="$FLOCK1"; else tool="$H flock"; fi
		mode=0
		(( (i * 7 + $1) % 8 == 0 )) && mode=1
		(( (i * 7 + $1) % 8 == 4 )) && mode=2
		if (( i % 2 )); then
			$tool "$D/L" sh "$D/crit.sh" "$D" "$mode"
		else
			# the descriptor form: the section's shell holds fd 9 (mode 2
			# kills this shell's parent, the worker subshell: nothing held)
			(( mode == 2 )) && mode=0
			sh -c 'exec 9>"$1/L"; '"$tool"' 9 || exit 1; . "$1/crit.sh"' sh "$D" "$mode"
		fi
	done 2>/dev/null
}

t0=$(date +%s.%N)
for ((w = 0; w < W; w++)); do
	worker "$w" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
pids=()
# a section whose wrapper was killed may still run: the lock ends with it
"$FLOCK1" "$D/L" true
t1=$(date +%s.%N)
overlaps=$(wc -l < "$D/overlaps")
entries=$(wc -l < "$D/entries")
count=$(cat "$D/count")
kills=$(wc -l < "$D/kills")
printf 'flock_mixed: %d workers (flock(1) and holdfast flock alternating) x %d rounds: %d entries, %d killed in the section, counter %d, overlaps %d (%.1f s)\n' \
	"$W" "$R" "$entries" "$kills" "$count" "$overlaps" "$(echo "$t1 - $t0" | bc)"
[ "$overlaps" -eq 0 ] && [ "$count" -eq "$entries" ] || { cat "$D/overlaps"; exit 1; }
