"""bench/python/front.py DIR CYCLES ROUNDS - the py-filelock front's cost:
one process's uncontended `with lock: pass`, the front beside the real
py-filelock, side by side in one run, rounds alternating the sides.

Sides: holdfast_locks.filelock.FileLock and SoftFileLock; the py-filelock
that `import filelock` finds (put the current release first on PYTHONPATH,
e.g. an export of 3.32.3's src/ with a generated version.py: its modules
import each other as `filelock.*`); and the one in $PYFL_OLD (default
Debian's python3-filelock, 3.9.0, in /usr/lib/python3/dist-packages), loaded
under another module name when it is another tree.  Per round and side: the median of CYCLES cycles;
reported: the median of the rounds' medians and the ratio front / peer
(goal: FileLock within 2x of the current py-filelock's FileLock).
Without holdfast's library: the front makes no call into it."""

import importlib.util
import os
import statistics
import sys
import time


def median_cycle(lock, n):
    t = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        with lock:
            pass
        t.append(pc() - t0)
    return statistics.median(t)


def load_tree(src):
    pkg = os.path.join(src, "filelock")
    spec = importlib.util.spec_from_file_location(
        "filelock_old", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["filelock_old"] = mod
    spec.loader.exec_module(mod)
    return mod


def main():
    d, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    from holdfast_locks import filelock as front
    peers = []
    try:
        import filelock
        peers.append(filelock)
    except ImportError:
        print("   py-filelock (import filelock): skipped (not importable; Debian: python3-filelock)")
    old = os.environ.get("PYFL_OLD", "/usr/lib/python3/dist-packages")
    if os.path.isfile(os.path.join(old, "filelock", "__init__.py")) and (
            not peers or os.path.dirname(os.path.dirname(peers[0].__file__)) != old):
        peers.append(load_tree(old))
    sides = [("front FileLock", front.FileLock(os.path.join(d, "front.lock"))),
             ("front SoftFileLock", front.SoftFileLock(os.path.join(d, "front.soft")))]
    for i, m in enumerate(peers):
        v = getattr(m, "__version__", "?")
        sides.append(("py-filelock %s FileLock" % v, m.FileLock(os.path.join(d, "p%d.lock" % i))))
        sides.append(("py-filelock %s SoftFileLock" % v,
                      m.SoftFileLock(os.path.join(d, "p%d.soft" % i))))
    res = {name: [] for name, _ in sides}
    for _ in range(rounds):
        for name, lock in sides:
            res[name].append(median_cycle(lock, n))
    med = {k: statistics.median(v) for k, v in res.items()}
    for name, _ in sides:
        print("   %-34s %8.2f us/cycle" % (name + ":", med[name] / 1000.0))
    for name, _ in sides[2:]:
        kind = name.rsplit(" ", 1)[1]
        print("   front %s / %s: %.2fx" % (kind, name, med["front " + kind] / med[name]))


if __name__ == "__main__":
    main()
