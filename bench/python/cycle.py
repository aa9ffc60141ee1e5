"""bench/python/cycle.py CYCLE_BIN DIR CYCLES ROUNDS - one process's
uncontended acquire+release, from Python, beside the C library's own cycle
(CYCLE_BIN, bench/python/cycle.c), in rounds that alternate the sides so the
machine's load hits each alike. Per round and side: the median of CYCLES
single cycles; reported: the median of the rounds' medians, and ratios.

Rows: the C library (one hf_lock handle), holdfast_locks.Lock (one handle,
acquire()+release()), the front (holdfast_locks.filelock.FileLock, `with`),
and py-filelock's FileLock and SoftFileLock (`with`) when importable - all
on DIR's file system."""

import os
import statistics
import subprocess
import sys
import time


def median_cycle(fn, n):
    t = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        fn()
        t.append(pc() - t0)
    return statistics.median(t)


def main():
    cbin, d, n, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    import holdfast_locks as hf
    from holdfast_locks.filelock import FileLock as HfFileLock

    rows = {}
    order = []

    def add(name, fn):
        order.append(name)
        rows[name] = fn

    cpath = os.path.join(d, "c.lock")

    def c_side():
        out = subprocess.run([cbin, cpath, str(n)], capture_output=True, text=True, check=True)
        return float(out.stdout.strip())

    add("C library: hf_lock_acquire + hf_lock_release", c_side)
    lk = hf.Lock(os.path.join(d, "py.lock"))

    def py_cycle():
        lk.acquire()
        lk.release()

    add("holdfast_locks.Lock: acquire() + release()", lambda: median_cycle(py_cycle, n))
    front = HfFileLock(os.path.join(d, "front.lock"))

    def front_cycle():
        with front:
            pass

    add("holdfast_locks.filelock.FileLock: with", lambda: median_cycle(front_cycle, n))
    try:
        import filelock
        version = getattr(filelock, "__version__", "?")
        pf = filelock.FileLock(os.path.join(d, "pyfl.lock"))
        ps = filelock.SoftFileLock(os.path.join(d, "pysoft.lock"))

        def pf_cycle():
            with pf:
                pass

        def ps_cycle():
            with ps:
                pass

        add("py-filelock %s FileLock: with" % version, lambda: median_cycle(pf_cycle, n))
        add("py-filelock %s SoftFileLock: with" % version, lambda: median_cycle(ps_cycle, n))
    except ImportError:
        print("   py-filelock: skipped (not importable; Debian: python3-filelock)")

    res = {k: [] for k in order}
    for _ in range(rounds):
        for k in order:
            res[k].append(rows[k]())
    c = statistics.median(res[order[0]])
    for k in order:
        m = statistics.median(res[k])
        print("   %-52s %8.1f us/cycle  %5.2fx the C library" % (k + ":", m / 1000.0, m / c))
    py = statistics.median(res[order[1]]) / c
    print("   goal: holdfast_locks.Lock within 2x of the C library's cycle: %.2fx (%s)"
          % (py, "met" if py <= 2.0 else "NOT met"))


if __name__ == "__main__":
    main()
