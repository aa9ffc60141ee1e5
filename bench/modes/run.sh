#!/usr/bin/env bash
# bench/modes/run.sh BUILD_DIR - shared and slot holders of the directory
# lock beside exclusive ones, through the C API (bench_modes.c), on tmpfs
# (/dev/shm) and on /tmp (ext4 here), every ratio measured side by side in
# one run of this script:
#   1. uncontended acquire+release, one process: shared, slots 4, exclusive
#      and the bare system-call floor of bench/dirlock in rotation; median,
#      p99, ratios (goal: shared <= 1.1x exclusive);
#   2. NPROC (4) processes each acquire, hold H, release, again, for SECS:
#      acquisitions per second all exclusive / all shared / all slots 2,
#      alternating run by run, ROUNDS times (goal: shared >= 3x exclusive,
#      per round), for each hold time H of HOLD_US ("200 1000" us: every
#      acquisition passes L one at a time, so shared holders' throughput
#      grows towards NPROC x exclusive as H grows past the cost of the
#      turnstile - both shown); each hold kind of HOLDS ("sleep busy"):
#      sleep = clock_nanosleep to a monotonic deadline, busy = spinning (the
#      machine's cores bound the busy holders that run at once);
#   3. a writer (exclusive, every GAP_US = 2000 us) behind the NPROC shared
#      holders of row 2: its acquire's median, p99 and max against H,
#      the shared holders' throughput meanwhile against row 2's shared run
#      of the same round, and the shared acquisitions that got in during a
#      writer's wait: with a fence below the writer's (ahead of it at L) and
#      above it (after the writer stood at L: SM4 says none) - measured,
#      reported, never judged;
#   4. system calls and CPU time (task-clock) per uncontended cycle of each
#      mode (perf stat; CPU time is less sensitive to other jobs than the
#      wall time of 1; skipped without perf or with SYSCALLS=0).
# The load average (/proc/loadavg) is printed with every section and kept
# with every run. Environment: BENCH_FS ("/dev/shm /tmp"), CYCLES (2000),
# UROUNDS (5), ROUNDS (3), SECS (2), NPROC (4), HOLD_US ("200 1000"), GAP_US (2000),
# HOLDS ("sleep busy"), RT (0), PERF_ROUNDS (3). Exits 1 only when a run failed or holders that
# cannot share were seen together.
set -u
build=$(cd "${1:-build}" && pwd)
B=$build/bench/modes/bench-modes
[ -x "$B" ] || { echo "bench/modes: $B missing (build first)"; exit 1; }
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-2}
NPROC=${NPROC:-4}
HOLD_US=${HOLD_US:-"200 1000"}
GAP_US=${GAP_US:-2000}
HOLDS=${HOLDS:-"sleep busy"}
# RT=1: the runs of 2 and 3 under SCHED_FIFO 1 (chrt): other jobs' load then
# delays the holders' wake-ups far less - an idle machine's figures on a
# busy one (the kernel's RT throttling leaves others 5 % at worst).
prio=()
[ "${RT:-0}" = 1 ] && prio=(chrt -f 1)
load() { cut -d' ' -f1-3 /proc/loadavg; }
status=0
echo "# modes: $(uname -r), $(nproc) cores, load $(load) at start"
for fs in ${BENCH_FS:-/dev/shm /tmp}; do
	d=$(mktemp -d "$fs/hf-bench-modes.XXXXXX") || exit 1
	echo
	echo "## $fs ($(df -T "$fs" | awk 'NR == 2 { print $2 }'))"
	echo "### 1. uncontended, load $(load)"
	"$B" uncontended "$d" "${CYCLES:-2000}" "${UROUNDS:-5}" | sed 's/^/   /' || status=1

	for HOLD in $HOLD_US; do
	echo "### 2, 3. $NPROC processes${prio:+ under ${prio[*]}}, hold $HOLD us, $SECS s per run, $ROUNDS rounds; load $(load)"
	: >"$d/all.jsonl"
	for r in $(seq 1 "$ROUNDS"); do
		for h in $HOLDS; do
			runs="exclusive shared slots2"
			[ "$h" = sleep ] && runs="$runs writer"
			for m in $runs; do
				l=$(cut -d' ' -f1 /proc/loadavg)
				if [ "$m" = writer ]; then
					"${prio[@]}" "$B" crowd "$d" shared "$NPROC" "$SECS" "$HOLD" "$h" "$GAP_US" >"$d/one.json" || status=1
				else
					"${prio[@]}" "$B" crowd "$d" "$m" "$NPROC" "$SECS" "$HOLD" "$h" >"$d/one.json" || status=1
				fi
				sed "s/^{/{\"round\":$r,\"as\":\"$m\",\"load1\":$l,/" "$d/one.json" >>"$d/all.jsonl"
			done
		done
	done
	python3 - "$d/all.jsonl" "$HOLD" <<'PY' | sed 's/^/   /'
import json, os, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
H = float(sys.argv[2])
def of(h, m):
    return [r for r in rows if r["hold"] == h and r["as"] == m]
def med(h, m, k):
    v = [r[k] for r in of(h, m)]
    return st.median(v) if v else float("nan")
def per_round(h, a, b, k="acq_per_s"):
    out = []
    for r in sorted({x["round"] for x in rows}):
        x = [y for y in of(h, a) if y["round"] == r]
        z = [y for y in of(h, b) if y["round"] == r]
        if x and z and z[0][k] > 0:
            out.append(x[0][k] / z[0][k])
    return out
loads = [r["load1"] for r in rows]
print(f"load average (1 min) at each run: {min(loads):.2f}-{max(loads):.2f}")
print(f"{'hold':<7}{'mode':<11}{'acq/s':>8}{'conc':>6}{'max':>5}{'hold us':>9}{'wait p50':>10}{'wait p99':>10}{'wait max':>10}{'overlaps':>9}   (medians of rounds)")
for h in dict.fromkeys(r["hold"] for r in rows):
    for m in ("exclusive", "shared", "slots2", "writer"):
        if not of(h, m):
            continue
        ov = sum(r["overlaps"] for r in of(h, m))
        print(f"{h:<7}{m + (' +w' if m == 'writer' else ''):<11}{med(h,m,'acq_per_s'):>8.0f}{med(h,m,'conc_mean'):>6.2f}"
              f"{max(r['conc_max'] for r in of(h,m)):>5}{med(h,m,'hold_mean_us'):>9.1f}"
              f"{med(h,m,'wait_p50_us'):>10.1f}{med(h,m,'wait_p99_us'):>10.1f}{max(r['wait_max_us'] for r in of(h,m)):>10.1f}{ov:>9}")
print()
print("throughput ratios per round (median of rounds; rounds):")
for h in dict.fromkeys(r["hold"] for r in rows):
    for m, goal in (("shared", 3.0), ("slots2", None)):
        rr = per_round(h, m, "exclusive")
        if not rr:
            continue
        x = st.median(rr)
        g = f" (goal >= {goal:g}x: {'meets' if x >= goal else 'misses'})" if goal else ""
        if goal and h == "busy":
            # spinning holders run only as many at once as there are cores
            g = f" (bound: {min(int(of(h, m)[0]['n']), os.cpu_count())} cores spin at once; the goal is for sleeping holders)"
        print(f"  {h:<6} {m:<7}/ exclusive = {x:5.2f}x{g}   " + " ".join(f"{v:.2f}" for v in rr))
w = of("sleep", "writer")
if w:
    print()
    print(f"writer (exclusive, every {w[0]['gap_us']} us) behind {w[0]['n']} shared holders holding {H:g} us:")
    n = sum(r["w_n"] for r in w)
    p50, p99 = st.median(r["w_p50_us"] for r in w), st.median(r["w_p99_us"] for r in w)
    mx = max(r["w_max_us"] for r in w)
    print(f"  its acquire: {n} in all; median {p50:.1f} us ({p50/H:.2f} H), p99 {p99:.1f} us ({p99/H:.2f} H),"
          f" max {mx:.1f} us ({mx/H:.2f} H)   (H = {H:g} us; medians of rounds, max of all)")
    rr = per_round("sleep", "writer", "shared")
    print(f"  shared holders' acquisitions/s meanwhile: {med('sleep','writer','acq_per_s'):.0f}"
          f" = {st.median(rr):.2f}x of the same round's run without the writer   " + " ".join(f"{v:.2f}" for v in rr))
    b, a = sum(r["w_in_before"] for r in w), sum(r["w_in_after"] for r in w)
    print(f"  shared acquisitions that got in during a writer's wait: {b} ahead of it at L (fence below"
          f" the writer's, {b/max(n,1):.2f} per wait), {a} after it stood at L (fence above; SM4: none)")
PY
	done
	if [ "${SYSCALLS:-1}" = 1 ] && command -v perf >/dev/null 2>&1 &&
		perf stat -e raw_syscalls:sys_enter -x, -o /dev/null true 2>/dev/null; then
		echo "### 4. per uncontended acquire+release: system calls and CPU time (perf stat;"
		echo "    2000 cycles less 0, modes alternating, ${PERF_ROUNDS:-3} rounds, CPU time the median)"
		: >"$d/perf.all"
		for r in $(seq 1 "${PERF_ROUNDS:-3}"); do
			for m in exclusive shared slots4; do
				for k in 0 2000; do
					perf stat -e raw_syscalls:sys_enter,task-clock -x, -o "$d/perf.txt" \
						"$B" cycles "$d" "$m" "$k" || status=1
					awk -F, -v m="$m" -v k="$k" '/raw_syscalls/ { s = $1 } /task-clock/ { t = $1 }
						END { print m, k, s, t }' "$d/perf.txt" >>"$d/perf.all"
				done
			done
		done
		python3 - "$d/perf.all" <<'PY' | sed 's/^/   /'
import statistics as st, sys
v = {}
for l in open(sys.argv[1]):
    m, k, s, t = l.split()
    v.setdefault(m, {}).setdefault(int(k), []).append((float(s), float(t)))
base = None
for m, d in v.items():
    sc = st.median(a[0] for a in d[2000]) - st.median(a[0] for a in d[0])
    us = st.median([(b[1] - a[1]) * 1e3 / 2000 for a, b in zip(d[0], d[2000])])
    base = base or us
    print(f"{m:<10} {sc / 2000:6.1f} system calls {us:7.2f} us CPU a cycle ({us / base:.3f}x exclusive)")
PY
	fi
	rm -rf "$d"
done
exit $status
