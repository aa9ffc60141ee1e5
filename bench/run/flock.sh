#!/usr/bin/env bash
# bench/run/flock.sh BUILD_DIR - `holdfast flock` beside util-linux flock(1),
# the whole command (open, lock, record, fork + exec /bin/true, wait, record
# removed, exit), side by side in one hyperfine run per round: -s (each
# holdfast holder writes and removes its own record in L.holdfast-flock.d,
# cmd_flock.c FK8) and -x (the exclusive record and its fence, FK2-FK4).
# Ratios per round, then their median. Environment: ROUNDS (3), RUNS (300).
set -u
build=$(cd "${1:-build}" && pwd)
HF=$build/holdfast
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-300}
[ -x "$HF" ] || { echo "bench/run/flock: $HF missing (build first)"; exit 1; }
command -v hyperfine >/dev/null 2>&1 || { echo "   skipped: hyperfine is not installed (make bench-deps)"; exit 0; }
[ -x /usr/bin/flock ] || { echo "   skipped: no /usr/bin/flock (util-linux)"; exit 0; }
work=$(mktemp -d /dev/shm/hf-bench-flock.XXXXXX)
trap 'rm -rf "$work"' EXIT
for r in $(seq 1 "$ROUNDS"); do
	hyperfine -N --style none --warmup 20 --runs "$RUNS" --export-json "$work/r.$r.json" \
		-n "flock -s" "/usr/bin/flock -s $work/s.fl /bin/true" \
		-n "holdfast flock -s" "$HF flock -s $work/s.hf /bin/true" \
		-n "flock -x" "/usr/bin/flock -x $work/x.fl /bin/true" \
		-n "holdfast flock -x" "$HF flock -x $work/x.hf /bin/true" \
		>/dev/null 2>&1 || echo "   round $r: hyperfine failed"
done
python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics as st, sys
work, rounds = sys.argv[1], int(sys.argv[2])
per = {}
for r in range(1, rounds + 1):
    try:
        res = json.load(open(f"{work}/r.{r}.json"))["results"]
    except OSError:
        continue
    m = {x["command"]: st.median(x["times"]) for x in res}
    for mode in ("-s", "-x"):
        per.setdefault(mode, []).append((m[f"holdfast flock {mode}"], m[f"flock {mode}"]))
for mode, v in per.items():
    ratios = [h / f for h, f in v]
    print(f"   holdfast flock {mode} / flock {mode}: {st.median(ratios):.2f}x "
          f"(median of rounds; per round {', '.join(f'{x:.2f}' for x in ratios)}; "
          f"medians {st.median(h for h, _ in v)*1e3:.2f} ms / {st.median(f for _, f in v)*1e3:.2f} ms)")
PY
