import glob
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

BOUND = 30.0  # every wait of a test is bounded by this (s); never a timing assertion


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="hf-py-test.")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def registry(tmp, monkeypatch):
    path = os.path.join(tmp, "reg", "scope.lock")
    monkeypatch.setenv("HOLDFAST_REGISTRY", path)
    return path


class Holder:
    """Another process holding a lock (tests/holder.py)."""

    def __init__(self, kind, path, arg=None):
        env = dict(os.environ)
        env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
        args = [sys.executable, os.path.join(HERE, "holder.py"), kind, path]
        if arg is not None:
            args.append(arg)
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        r, _, _ = select.select([self.proc.stdout], [], [], BOUND)
        if not r:
            self.kill()
            raise AssertionError("holder did not report within %s s" % BOUND)
        line = self.proc.stdout.readline().decode().split()
        if len(line) != 2:
            err = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
            self.kill()
            raise AssertionError("holder failed: %r %s" % (line, err))
        self.pid = int(line[0])
        self.token = line[1]

    def release(self):
        self.proc.stdin.write(b"release\n")
        self.proc.stdin.flush()
        assert self.proc.wait(BOUND) == 0

    def exit_holding(self):
        self.proc.stdin.write(b"exit\n")
        self.proc.stdin.flush()
        assert self.proc.wait(BOUND) == 3

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(BOUND)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


@pytest.fixture
def holder():
    started = []

    def start(kind, path, arg=None):
        h = Holder(kind, path, arg)
        started.append(h)
        return h

    yield start
    for h in started:
        h.kill()


def wait_until(pred, what):
    """Poll pred() until true, at most BOUND seconds (a bound, not a timing)."""
    end = time.monotonic() + BOUND
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("never happened within %s s: %s" % (BOUND, what))
        time.sleep(0.005)


def waiting_on_inotify(pid="self"):
    """Process pid (default: this one) is in the library's wait: one of its
    threads has an inotify watch set."""
    for f in glob.glob("/proc/%s/fdinfo/*" % pid):
        try:
            with open(f) as fh:
                if any(line.startswith("inotify wd") for line in fh):
                    return True
        except OSError:
            pass
    return False
