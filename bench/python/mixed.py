"""Mixed-tool stress: py-filelock processes and holdfast front processes
contend for one lock file under SIGKILLs; an overlap detector counts.

    python3 bench/python/mixed.py [--workers 6] [--acquisitions 3000] [--kills 30] [--soft]

Half the workers use the real py-filelock (`import filelock`: Debian's
python3-filelock, or whatever PYTHONPATH puts first), half the front
(holdfast_locks.filelock; bindings/python/src must be importable).  Each
worker loops: take FileLock (SoftFileLock with --soft) on DIR/res.lock, then
inside it create DIR/inside with O_EXCL, holding its pid.  Finding that file
already there, made by a process that is still alive, is an overlap (two
holders); made by a process that is gone, it is what a SIGKILLed holder
left (not an overlap: it is replaced).  The driver SIGKILLs a random worker
--kills times, spread over the run, and starts another with the same tool.
Prints one line of counts; exits 1 on any overlap, or when a tool made no
acquisition (the run proved nothing).  HF_MIXED_SPLIT=1 gives the front
workers another lock file: the detector's self-check (overlaps > 0, exit 1)."""

import argparse
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (killed, not yet reaped by the driver) is gone as a holder
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def worker(tool, soft, d):
    if tool == "f":
        from holdfast_locks.filelock import FileLock, SoftFileLock
    else:
        from filelock import FileLock, SoftFileLock
    name = "res.lock"
    if tool == "f" and os.environ.get("HF_MIXED_SPLIT"):
        name = "other.lock"  # the detector's self-check: two locks, overlaps must show
    lock = (SoftFileLock if soft else FileLock)(os.path.join(d, name))
    inside = os.path.join(d, "inside")
    log = os.open(os.path.join(d, "acq"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    bad = os.open(os.path.join(d, "overlaps"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    me = os.getpid()
    while True:
        with lock:
            while True:
                try:
                    fd = os.open(inside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    break
                except FileExistsError:
                    try:
                        with open(inside) as f:
                            other = int(f.read() or "0")
                    except (OSError, ValueError):
                        other = 0
                    if other and alive(other):
                        os.write(bad, b"%d %d\n" % (me, other))
                    try:
                        os.unlink(inside)
                    except FileNotFoundError:
                        pass
            os.write(fd, b"%d" % me)
            os.close(fd)
            for _ in range(20):  # stay inside a little, so an overlap has room to show
                os.sched_yield()
            os.unlink(inside)
            os.write(log, tool.encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--acquisitions", type=int, default=3000)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--soft", action="store_true")
    ap.add_argument("--bound", type=float, default=120.0, help="give up after this many s")
    ap.add_argument("--worker", nargs=2, metavar=("TOOL", "DIR"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], a.soft, a.worker[1])
        return 0
    import filelock
    peer = "py-filelock %s (%s)" % (getattr(filelock, "__version__", "?"),
                                    os.path.dirname(filelock.__file__))
    d = tempfile.mkdtemp(prefix="hf-mixed.")
    procs = {}

    def spawn(tool):
        args = [sys.executable, os.path.abspath(__file__), "--worker", tool, d]
        if a.soft:
            args.append("--soft")
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        procs[p.pid] = (p, tool)

    kills = 0
    acq_path = os.path.join(d, "acq")
    try:
        for i in range(a.workers):
            spawn("f" if i % 2 else "p")
        start = time.monotonic()
        step = max(1, a.acquisitions // (a.kills + 1))
        next_kill = step
        rnd = random.Random(17)
        while True:
            n = os.path.getsize(acq_path) if os.path.exists(acq_path) else 0
            if n >= a.acquisitions or time.monotonic() - start > a.bound:
                break
            if n >= next_kill and kills < a.kills:
                pid = rnd.choice(sorted(procs))
                p, tool = procs.pop(pid)
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                next_kill += step
                spawn(tool)
            select.select([], [], [], 0.005)  # a bounded poll of the progress file
    finally:
        for p, _ in procs.values():
            p.send_signal(signal.SIGKILL)
        for p, _ in procs.values():
            p.wait()
    with open(acq_path, "rb") as f:
        log = f.read()
    ov = os.path.join(d, "overlaps")
    overlaps = len(open(ov).read().splitlines()) if os.path.exists(ov) else 0
    shutil.rmtree(d, ignore_errors=True)
    kind = "SoftFileLock" if a.soft else "FileLock"
    print("mixed %s: %d acquisitions (front %d, %s %d), %d SIGKILLs, %d overlaps"
          % (kind, len(log), log.count(b"f"), peer, log.count(b"p"), kills, overlaps))
    if overlaps or not log.count(b"f") or not log.count(b"p"):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
