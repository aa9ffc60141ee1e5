"""bench/bindings/cycle.py DIR [CYCLES] - an acquire+release cycle from Python
(holdfast_locks.Lock, one handle kept), each timed with perf_counter_ns;
prints the median as bench/bindings/run.sh reads it."""
import json
import sys
import time

import holdfast_locks as hf

d, cycles = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
lock = hf.Lock(d + "/python.lock")
t = []
for _ in range(cycles):
    t0 = time.perf_counter_ns()
    lock.acquire()
    lock.release()
    t.append(time.perf_counter_ns() - t0)
t.sort()
print(json.dumps({"lang": "python", "cycles": cycles, "median_ns": t[cycles // 2]}, separators=(",", ":")))
