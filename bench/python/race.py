"""bench/python/race.py DIR ROUNDS K - the stale-lock steal race from Python
(bench/peers' method): per round a crashed holder's lock is in place, K
contenders (forked) are released together by a FIFO barrier and each tries
once; a contender that believes it holds the lock appends "enter PID" to a
shared log (O_APPEND, one write) and holds until every contender has tried,
then appends "exit PID" and releases. A round's count is the most
contenders that believed they held the lock at once.

Rows: the front (holdfast_locks.filelock.FileLock(timeout=0)); py-filelock's
FileLock and SoftFileLock (when importable). The crashed holder: a forked
process acquires and _exits without releasing."""

import os
import select
import shutil
import sys
import time


def tool_classes():
    from holdfast_locks.filelock import FileLock as HfFileLock
    tools = [("holdfast_locks.filelock.FileLock", HfFileLock)]
    try:
        import filelock
        v = getattr(filelock, "__version__", "?")
        tools.append(("py-filelock %s FileLock" % v, filelock.FileLock))
        tools.append(("py-filelock %s SoftFileLock" % v, filelock.SoftFileLock))
    except ImportError:
        print("   py-filelock: skipped (not importable; Debian: python3-filelock)")
    return tools


def read_n(fd, n, what):
    got = 0
    end = time.monotonic() + 60
    while got < n:
        r, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not r:
            raise SystemExit("race: not all contenders %s within 60 s (%d/%d)" % (what, got, n))
        got += len(os.read(fd, n - got))


def crash_holder(cls, path):
    pid = os.fork()
    if pid == 0:
        try:
            lock = cls(path, timeout=0)
            lock.acquire()  # kept referenced: a collected lock object releases
            os._exit(0 if lock.is_locked else 1)  # holding: no release, no finalizers
        except BaseException:
            os._exit(1)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st) == 0


def contender(cls, path, log, fds):
    ready, go, tried, leave = fds
    os.write(ready, b"x")
    os.read(go, 1)
    held = False
    lock = cls(path, timeout=0)
    try:
        lock.acquire()
        held = True
    except Exception:
        pass
    if held:
        with open(log, "a") as f:
            f.write("enter %d\n" % os.getpid())
    os.write(tried, b"x")
    if held:
        os.read(leave, 1)
        with open(log, "a") as f:
            f.write("exit %d\n" % os.getpid())
        try:
            lock.release()
        except Exception:
            pass


def overlap(log):
    n = m = t = 0
    with open(log) as f:
        for line in f:
            if line.startswith("enter"):
                n += 1
                t += 1
                m = max(m, n)
            elif line.startswith("exit"):
                n -= 1
    return m, t


def one_round(cls, path, rdir, k):
    shutil.rmtree(rdir, ignore_errors=True)
    os.mkdir(rdir)
    log = os.path.join(rdir, "log")
    open(log, "w").close()
    fds = []
    for name in ("ready", "go", "tried", "leave"):
        p = os.path.join(rdir, name)
        os.mkfifo(p)
        fds.append(os.open(p, os.O_RDWR))
    pids = []
    for _ in range(k):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                contender(cls, path, log, fds)
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    ready, go, tried, leave = fds
    read_n(ready, k, "ready")
    t0 = time.monotonic()
    os.write(go, b"x" * k)
    read_n(tried, k, "tried")
    spread = (time.monotonic() - t0) * 1000
    os.write(leave, b"x" * k)
    for pid in pids:
        os.waitpid(pid, 0)
    for fd in fds:
        os.close(fd)
    m, t = overlap(log)
    return m, t, spread


def main():
    d, rounds, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for i, (label, cls) in enumerate(tool_classes()):
        path = os.path.join(d, "race-%d.lock" % i)
        maxes, takers, spreads, setup_failed = [], [], [], 0
        for _ in range(rounds):
            if not crash_holder(cls, path):
                setup_failed += 1
            m, t, s = one_round(cls, path, os.path.join(d, "round"), k)
            maxes.append(m)
            takers.append(t)
            spreads.append(s)
        hist = ", ".join("%d holder%s in %d round%s" % (h, "" if h == 1 else "s", maxes.count(h),
                                                         "" if maxes.count(h) == 1 else "s")
                         for h in sorted(set(maxes)))
        print("   %-36s %s; took it per round %d-%d; tries within %.0f ms of go%s"
              % (label + ":", hist, min(takers), max(takers), max(spreads),
                 "; a round's crashed holder found the lock still taken in %d of %d rounds"
                 " (never recovered)" % (setup_failed, rounds) if setup_failed else ""))
        for p in (path, path + ".holdfast"):
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.unlink(p)
    shutil.rmtree(os.path.join(d, "round"), ignore_errors=True)


if __name__ == "__main__":
    main()
