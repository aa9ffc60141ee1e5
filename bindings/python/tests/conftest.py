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

    def __init__(self, kind, path, arg=None, env=None, report=True):
        env = dict(os.environ, **(env or {}))
        env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
        args = [sys.executable, os.path.join(HERE, "holder.py"), kind, path]
        if arg is not None:
            args.append(arg)
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.pid = self.proc.pid
        self.token = None
        if report:
            self.reported()

    def reported(self):
        """Wait (bounded) for its "PID TOKEN" line: it holds."""
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

    def start(kind, path, arg=None, env=None, report=True):
        h = Holder(kind, path, arg, env, report)
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


def waiting_in_library(pid="self"):
    """Process pid (default: this one) is in the library's wait: one of its
    threads has an inotify watch set, or an epoll instance of its holds a
    lock's waiters' queue (L.holdfast/queue, wait.c WT8) - not merely
    asyncio's own epoll."""
    for f in glob.glob("/proc/%s/fdinfo/*" % pid):
        try:
            with open(f) as fh:
                lines = fh.readlines()
        except OSError:
            continue
        if any(line.startswith("inotify wd") for line in lines):
            return True
        for line in lines:
            if line.startswith("tfd:"):
                try:
                    target = os.readlink("/proc/%s/fd/%s" % (pid, line.split()[1]))
                except OSError:
                    continue
                if target.endswith(".holdfast/queue"):
                    return True
    return False


def free_port():
    """A loopback TCP port nobody listens on now (the kernel's choice)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(port):
    import urllib.request
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as r:
            return b'"health":"true"' in r.read()
    except OSError:
        return False


class Etcd:
    uri = ""
    port = 0
    pid = 0


@pytest.fixture
def etcd():
    """An etcd of the test's own (Debian's etcd): free loopback ports, its
    data in a temporary directory, ready when /health says so (bounded);
    afterwards - a failed test too - killed by pid and the directory removed.
    setpriv --pdeathsig kills it should pytest die first."""
    d = tempfile.mkdtemp(prefix="hf-py-etcd.")
    port, peer = free_port(), free_port()
    client, peer_url = "http://127.0.0.1:%d" % port, "http://127.0.0.1:%d" % peer
    log = open(os.path.join(d, "log"), "wb")
    proc = None
    try:
        proc = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "etcd", "--name", "t",
             "--data-dir", os.path.join(d, "data"),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
             "--initial-cluster", "t=" + peer_url],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        end = time.monotonic() + 60
        while not _healthy(port):
            if proc.poll() is not None:
                with open(os.path.join(d, "log")) as f:
                    raise AssertionError("etcd exited (%s) before it was ready:\n%s"
                                         % (proc.returncode, f.read()))
            if time.monotonic() > end:
                raise AssertionError("etcd on %d not ready within 60 s" % port)
            time.sleep(0.05)
        e = Etcd()
        e.uri, e.port, e.pid = "etcd://127.0.0.1:%d" % port, port, proc.pid
        yield e
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        if proc is not None:
            proc.wait(BOUND)
        log.close()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def sleeper():
    """A process whose life can hold a lock (the CLI's --pid); killed after."""
    p = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
    yield p
    p.kill()
    p.wait(BOUND)
