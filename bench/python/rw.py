"""bench/python/rw.py DIR CYCLES ROUNDS - the front's ReadWriteLock beside
py-filelock's: one process's uncontended `with rw.read_lock(): pass` and
`with rw.write_lock(): pass`, side by side in one run, rounds alternating
the sides.  py-filelock is the one `import filelock` finds; it must have
ReadWriteLock (3.21 or later: put an export of its src/ first on
PYTHONPATH).  Per round and side: the median of CYCLES cycles; reported:
the median of the rounds' medians and the ratio front / py-filelock.
The front's cycle is py-filelock's SQLite transaction plus holdfast's
shared or exclusive directory lock (RW1)."""

import os
import statistics
import sys
import time


def median_cycle(cm, n):
    t = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        with cm():
            pass
        t.append(pc() - t0)
    return statistics.median(t)


def main():
    d, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    from holdfast_locks.filelock import ReadWriteLock as Front
    import filelock
    peer = getattr(filelock, "ReadWriteLock", None)
    if peer is None:
        print("rw: the importable filelock (%s) has no ReadWriteLock" % filelock.__version__)
        return 2
    f = Front(os.path.join(d, "front.db"), is_singleton=False)
    p = peer(os.path.join(d, "peer.db"), is_singleton=False)
    sides = [("front read", f.read_lock), ("py-filelock %s read" % filelock.__version__, p.read_lock),
             ("front write", f.write_lock),
             ("py-filelock %s write" % filelock.__version__, p.write_lock)]
    res = {name: [] for name, _ in sides}
    for r in range(rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for name, cm in order:
            res[name].append(median_cycle(cm, n))
    med = {name: statistics.median(v) / 1000.0 for name, v in res.items()}
    for name, _ in sides:
        print("%-28s %9.1f us" % (name, med[name]))
    names = [s[0] for s in sides]
    print("front / py-filelock read:  %.2fx" % (med[names[0]] / med[names[1]]))
    print("front / py-filelock write: %.2fx" % (med[names[2]] / med[names[3]]))
    f.close()
    p.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
