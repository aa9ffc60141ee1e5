"""A process holding a lock for a test: python holder.py KIND PATH [ARG].

KIND lock: acquires the directory lock PATH (shared: in the shared mode;
slots: in the slots mode, ARG slots; writer: exclusive, waiting as long as
it takes, reporting once it holds; $HF_TEST_WAIT: the shared or slots
acquisition's wait in seconds, -1 forever); rw-read, rw-write: the
front's ReadWriteLock on PATH ($HF_TEST_WAIT: its timeout, default 0: one
try; token: its fence); sqlite-read, sqlite-write: py-filelock's
ReadWriteLock protocol spoken directly (a read transaction, BEGIN
EXCLUSIVE) through sqlite3; upstream-read, upstream-write: py-filelock's
own ReadWriteLock (when the importable filelock has it); filelock: the front's FileLock
(prints its fence as the token); flock: flock(2) LOCK_EX on PATH opened
O_RDWR|O_CREAT, as py-filelock's FileLock takes it (token 0);
session: takes lane ARG's session at PATH; scope: registers pod ARG with
spec PATH in the registry named by $HOLDFAST_REGISTRY.
Prints "PID TOKEN" once it holds, then waits for a line on stdin: it
releases and exits 0 on "release", and exits WITHOUT releasing on "exit"
(or is SIGKILLed by the test: a crashed holder).
$HF_TEST_BACKEND (the tests' variable, not the library's): the backend
("etcd://...") of the lock, session or scope; a lock then prints
"PID TOKEN:FENCE"."""

import os
import sys

import holdfast_locks as hf
from holdfast_locks.filelock import FileLock


def main() -> int:
    kind, path = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    be = {"backend": os.environ["HF_TEST_BACKEND"]} if os.environ.get("HF_TEST_BACKEND") else {}
    if kind == "lock":
        obj = hf.Lock(path, **be)
        obj.acquire()
        tok = obj.token if not be else "%s:%d" % (obj.token, obj.fence)
    elif kind in ("shared", "slots", "writer"):
        obj = hf.Lock(path, shared=kind == "shared",
                      slots=int(arg) if kind == "slots" else None,
                      wait=None if kind == "writer" else float(os.environ.get("HF_TEST_WAIT", 0)))
        obj.acquire()
        tok = obj.token
    elif kind in ("rw-read", "rw-write"):
        from holdfast_locks.filelock import ReadWriteLock
        obj = ReadWriteLock(path, is_singleton=False)
        t = float(os.environ.get("HF_TEST_WAIT", 0))
        (obj.acquire_read if kind == "rw-read" else obj.acquire_write)(t)
        tok = str(obj.fence)
    elif kind in ("sqlite-read", "sqlite-write"):
        import sqlite3
        con = sqlite3.connect(path, timeout=0, isolation_level=None)
        con.execute("PRAGMA journal_mode=MEMORY")
        if kind == "sqlite-write":
            con.execute("BEGIN EXCLUSIVE TRANSACTION")
        else:
            con.execute("BEGIN TRANSACTION")
            con.execute("SELECT name FROM sqlite_schema LIMIT 1").fetchall()

        class Tx:
            def release(self):
                con.rollback()
                con.close()
        obj = Tx()
        tok = "0"
    elif kind in ("upstream-read", "upstream-write"):
        from filelock import ReadWriteLock as Upstream
        obj = Upstream(path, is_singleton=False)
        (obj.acquire_read if kind == "upstream-read" else obj.acquire_write)(blocking=False)
        tok = "0"
    elif kind == "filelock":
        obj = FileLock(path, timeout=0)
        obj.acquire()
        tok = str(obj.fence)
    elif kind == "flock":
        import fcntl
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

        class Raw:
            def release(self):
                fcntl.flock(fd, fcntl.LOCK_UN)
        obj = Raw()
        tok = "0"
    elif kind == "session":
        obj = hf.Session(arg, path, **be)
        obj.take()
        tok = obj.owner
    elif kind == "scope":
        obj = hf.Scope(arg, [path], **be)
        obj.register()
        tok = str(obj.generation)
    else:
        return 64
    sys.stdout.write("%d %s\n" % (os.getpid(), tok))
    sys.stdout.flush()
    line = sys.stdin.readline().strip()
    if line == "release":
        obj.release()
        return 0
    os._exit(3)  # no release, no finalizers: what a crash leaves


if __name__ == "__main__":
    sys.exit(main())
