#!/usr/bin/env bash
# bench/run/run.sh BUILD_DIR - holdfast run (and its lock) against its peers,
# every comparison measured side by side in one run of this script:
#   1. contention through the library: 4 processes on tmpfs, cross-process
#      handoff and fairness, holdfast's directory lock beside flock(2) and
#      1 ms-polling mkdir (contend.c, driven by contend.sh: zero and 100 us
#      think time, idle and under load, ratios to flock(2) per round);
#   2. the whole command `holdfast run --lock L -- /bin/true` beside
#      util-linux `flock L /bin/true`, dotlockfile and lockfile-progs
#      (hyperfine, one invocation per round, ratios per round);
#   3. npm proper-lockfile doing the same (plf_run.js), installed into
#      /tmp/hfbench when missing, skipped with a note when it cannot be;
#   4. the wrapper SIGKILLed while its command runs: who lets a second
#      holder in (holdfast run vs dotlockfile);
#   5. a command waiting for a held lock: how often the waiting process
#      wakes per second (voluntary context switches), holdfast run beside
#      flock(1) - and beside an older holdfast binary given as HF_BEFORE;
#   6. `holdfast flock -s/-x L /bin/true` beside util-linux `flock -s/-x`
#      (flock.sh: hyperfine, ratios per round).
# Environment: ROUNDS (3), SECS (2, contention window), RUNS (300, hyperfine
# runs per command), NODE_RUNS (30), HFBENCH (/tmp/hfbench), WAKE_SECS (3),
# HF_BEFORE (an older holdfast binary for section 5; none by default).
set -u
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
HF=$build/holdfast
CONTEND=$build/bench/run/contend-run
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-2}
RUNS=${RUNS:-300}
NODE_RUNS=${NODE_RUNS:-30}
HFBENCH=${HFBENCH:-/tmp/hfbench}
for f in "$HF" "$CONTEND"; do
	[ -x "$f" ] || { echo "bench/run: $f missing (build first)"; exit 1; }
done
work=$(mktemp -d /dev/shm/hf-bench-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
have() { command -v "$1" >/dev/null 2>&1; }
py=python3
have $py || py=

echo "# holdfast run: $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# --- 1. contention ------------------------------------------------------------
echo
echo "## 1. contention: $(basename "$here")/contend.sh (rows: zero / 100 us think, idle / loaded)"
ROUNDS=$ROUNDS SECS=$SECS "$here/contend.sh" "$build" | sed 's/^/   /'

# --- 2. whole command -----------------------------------------------------------
echo
echo "## 2. lock + run /bin/true + release, whole command (hyperfine -N, ${RUNS} runs, ${ROUNDS} rounds)"
if ! have hyperfine; then
	echo "   skipped: hyperfine is not installed (make bench-deps)"
else
	cmds=(-n true "/bin/true"
		-n "holdfast run" "$HF run --lock $work/hf.L -- /bin/true"
		-n "flock" "flock $work/fl.L /bin/true")
	if have dotlockfile; then
		cmds+=(-n "dotlockfile" "dotlockfile -l -p -r 0 $work/dl.L /bin/true")
	else
		echo "   dotlockfile: skipped (liblockfile-bin not installed)"
	fi
	# lockfile-progs has no run-a-command mode: lock; run; unlock under sh,
	# beside holdfast run under the same sh.
	cmds+=(-n "sh: holdfast run" "sh -c '$HF run --lock $work/hf2.L -- /bin/true'")
	if have lockfile-create; then
		cmds+=(-n "sh: lockfile-progs" "sh -c 'lockfile-create --use-pid -r 0 $work/lp && /bin/true; lockfile-remove $work/lp'")
	else
		echo "   lockfile-progs: skipped (not installed)"
	fi
	for r in $(seq 1 "$ROUNDS"); do
		hyperfine -N --style none --warmup 20 --runs "$RUNS" --export-json "$work/cmd.$r.json" \
			"${cmds[@]}" >/dev/null 2>&1 || echo "   round $r: hyperfine failed"
	done
	if [ -n "$py" ]; then
		$py - "$work" "$ROUNDS" <<'EOF'
import json, statistics as st, sys
work, rounds = sys.argv[1], int(sys.argv[2])
per = {}
for r in range(1, rounds + 1):
    try:
        res = json.load(open(f"{work}/cmd.{r}.json"))["results"]
    except OSError:
        continue
    m = {x["command"]: st.median(x["times"]) for x in res}
    for name, t in m.items():
        per.setdefault(name, []).append((t, t / m["flock"], t / m["true"],
                                         t / m["holdfast run"] if not name.startswith("sh:") else t / m["sh: holdfast run"]))
print(f"   {'command':<22}{'median ms':>10}{'x flock':>9}{'x true':>8}{'x holdfast':>11}   (per-round ratios, median of rounds)")
for name, v in per.items():
    med = lambda i: st.median(x[i] for x in v)
    print(f"   {name:<22}{med(0)*1e3:>10.2f}{med(1):>9.2f}{med(2):>8.2f}{med(3):>11.2f}")
ratio = st.median(x[1] for x in per["holdfast run"])
print(f"   holdfast run / flock = {ratio:.3f} per round: " + ", ".join(f"{x[1]:.3f}" for x in per["holdfast run"]) +
      f" ({'meets' if ratio <= 1.1 else 'misses'} <= 1.1)")
EOF
	fi
fi

# --- 3. proper-lockfile -----------------------------------------------------------
echo
echo "## 3. npm proper-lockfile: lock + spawn /bin/true + release in node (${NODE_RUNS} runs)"
plf_ok=
if have node; then
	if [ ! -d "$HFBENCH/node_modules/proper-lockfile" ] && have npm; then
		mkdir -p "$HFBENCH"
		npm install --prefix "$HFBENCH" --no-audit --no-fund --loglevel=error proper-lockfile >/dev/null 2>&1
	fi
	[ -d "$HFBENCH/node_modules/proper-lockfile" ] && plf_ok=1
fi
if [ -z "$plf_ok" ]; then
	echo "   skipped: node/npm missing or proper-lockfile could not be installed into $HFBENCH"
elif have hyperfine; then
	NODE_PATH=$HFBENCH/node_modules hyperfine -N --style none --warmup 3 --runs "$NODE_RUNS" \
		--export-json "$work/plf.json" \
		-n "node -e 0" "node -e 0" \
		-n "proper-lockfile" "node $here/plf_run.js $work/plf.target /bin/true" \
		-n "holdfast run" "$HF run --lock $work/hf3.L -- /bin/true" >/dev/null 2>&1
	if [ -n "$py" ]; then
		$py - "$work/plf.json" <<'EOF'
import json, statistics as st, sys
m = {x["command"]: st.median(x["times"]) for x in json.load(open(sys.argv[1]))["results"]}
for k, v in m.items():
    print(f"   {k:<22}{v*1e3:>10.2f} ms")
print(f"   proper-lockfile / holdfast run = {m['proper-lockfile'] / m['holdfast run']:.0f}x; "
      f"proper-lockfile / node -e 0 = {m['proper-lockfile'] / m['node -e 0']:.2f}")
EOF
	fi
fi

# --- 4. the wrapper killed while its command runs -------------------------------------
echo
echo "## 4. wrapper SIGKILLed while CMD runs: does a second holder get in while CMD still runs?"
"$here/killed_wrapper.sh" "$HF" "$work"

# --- 5. a waiting command's wake-ups --------------------------------------------------
WAKE_SECS=${WAKE_SECS:-3}
echo
echo "## 5. waiting for a held lock: wake-ups per second of the waiting process (${WAKE_SECS} s window)"
switches() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# wake_rate NAME CMD...: CMD waits for a lock this script holds; its wake-ups
# per second over the window (a measurement: reported, never judged).
wake_rate() {
	local name=$1 pid a b
	shift
	"$@" >/dev/null 2>&1 &
	pid=$!
	sleep 0.5 # past the first backoff steps: the steady state is measured
	a=$(switches "$pid")
	sleep "$WAKE_SECS"
	b=$(switches "$pid")
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	awk -v n="$name" -v a="$a" -v b="$b" -v s="$WAKE_SECS" \
		'BEGIN { printf "   %-28s %6.1f wake-ups/s\n", n, (b - a) / s }'
}
tok=$("$HF" lock acquire "$work/wait.L" --pid $$ | cut -d' ' -f1)
wake_rate "holdfast run (this build)" "$HF" run --lock "$work/wait.L" -- /bin/true
if [ -n "${HF_BEFORE:-}" ] && [ -x "$HF_BEFORE" ]; then
	wake_rate "holdfast run (HF_BEFORE)" "$HF_BEFORE" run --lock "$work/wait.L" -- /bin/true
fi
"$HF" lock release "$work/wait.L" --token "$tok"
exec 9>"$work/wait.fl"
flock 9
wake_rate "flock(1)" flock "$work/wait.fl" /bin/true
exec 9>&-

# --- 6. holdfast flock against flock(1) ---------------------------------------------
echo
echo "## 6. holdfast flock -s / -x L /bin/true beside flock(1)'s (hyperfine -N, ${RUNS} runs, ${ROUNDS} rounds)"
ROUNDS=$ROUNDS RUNS=$RUNS "$here/flock.sh" "$build"
exit 0
