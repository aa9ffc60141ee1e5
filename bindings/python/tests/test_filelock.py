"""The py-filelock 3 front (holdfast_locks.filelock)."""

import os
import threading

import pytest

import holdfast_locks as hf
from holdfast_locks.filelock import BaseFileLock, FileLock, SoftFileLock, Timeout


def in_thread(fn):
    """Run fn in another thread, return its result or raise its exception."""
    out = {}

    def run():
        try:
            out["v"] = fn()
        except BaseException as e:  # noqa: B902
            out["e"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert not t.is_alive()
    if "e" in out:
        raise out["e"]
    return out.get("v")


def test_context_manager_and_properties(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)
    assert isinstance(lock, BaseFileLock)
    assert lock.lock_file == p and lock.timeout == -1 and lock.is_thread_local()
    assert not lock.is_locked and lock.lock_counter == 0
    with lock as same:
        assert same is lock and lock.is_locked and lock.lock_counter == 1
        assert hf.Lock.status(p)["pid"] == os.getpid()
    assert not lock.is_locked and hf.Lock.status(p)["state"] == "free"


def test_timeout_property_settable(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    holder("lock", p)
    lock = FileLock(p, timeout=5)
    lock.timeout = "0.1"
    assert lock.timeout == 0.1
    with pytest.raises(Timeout):
        lock.acquire()


def test_timeout_raised_names_holder(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    h = holder("lock", p)
    lock = FileLock(p, timeout=0.2)
    with pytest.raises(Timeout) as ei:
        lock.acquire()
    e = ei.value
    assert isinstance(e, TimeoutError) and isinstance(e, hf.HoldfastError)
    assert e.lock_file == p and e.code == "timed_out" and e.holder["pid"] == h.pid
    assert str(e).startswith("The file lock '%s' could not be acquired: held by pid %d" % (p, h.pid))
    assert not lock.is_locked and lock.lock_counter == 0


def test_nonblocking_tries(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    h = holder("lock", p)
    lock = FileLock(p)  # timeout -1: would wait forever
    with pytest.raises(Timeout) as ei:
        lock.acquire(blocking=False)
    assert ei.value.code == "held" and ei.value.holder["pid"] == h.pid
    with pytest.raises(Timeout):
        lock.acquire(timeout=0)
    with pytest.raises(Timeout):
        FileLock(p, blocking=False).acquire()
    assert lock.lock_counter == 0
    h.release()
    with lock.acquire(blocking=False):
        assert lock.is_locked


def test_reentrant_lock_counter(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)
    with lock:
        with lock.acquire() as same:
            assert same is lock and lock.lock_counter == 2
            lock.acquire()
            assert lock.lock_counter == 3
            lock.release()
        assert lock.lock_counter == 1 and lock.is_locked
        assert hf.Lock.status(p)["state"] == "held"
    assert lock.lock_counter == 0 and hf.Lock.status(p)["state"] == "free"


def test_force_release(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)
    for _ in range(3):
        lock.acquire()
    assert lock.lock_counter == 3
    lock.release(force=True)
    assert lock.lock_counter == 0 and not lock.is_locked
    assert hf.Lock.status(p)["state"] == "free"
    lock.release()  # nothing held: a no-op, as in py-filelock
    assert lock.lock_counter == 0


def test_decorator(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)

    @lock
    def work():
        return lock.lock_counter, hf.Lock.status(p)["state"]

    assert work() == (1, "held")
    assert hf.Lock.status(p)["state"] == "free"


def test_thread_local_each_thread_own_counter(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)  # thread_local=True
    lock.acquire()
    lock.acquire()
    # another thread sees its own context: not locked, counter 0, and the
    # lock excludes it (the hold is this thread's)
    assert in_thread(lambda: (lock.is_locked, lock.lock_counter)) == (False, 0)
    with pytest.raises(Timeout):
        in_thread(lambda: lock.acquire(timeout=0))
    assert lock.lock_counter == 2
    lock.release(force=True)

    def other():
        with lock:
            return lock.lock_counter, hf.Lock.status(p)["state"]

    assert in_thread(other) == (1, "held")
    assert lock.lock_counter == 0


def test_thread_local_waiter_gets_it_on_release(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)
    lock.acquire()
    got = threading.Event()
    done = {}

    def waiter():
        with lock.acquire(timeout=30):
            done["pid"] = hf.Lock.status(p)["pid"]
            got.set()

    t = threading.Thread(target=waiter)
    t.start()
    assert not got.is_set()  # the waiter cannot hold while we do
    lock.release()
    t.join(30)
    assert got.is_set() and done["pid"] == os.getpid()


def test_not_thread_local_shared_counter(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p, thread_local=False)
    assert not lock.is_thread_local()
    lock.acquire()
    assert in_thread(lambda: (lock.is_locked, lock.lock_counter)) == (True, 1)
    in_thread(lambda: lock.acquire(timeout=0))  # reentrant across threads
    assert lock.lock_counter == 2
    in_thread(lock.release)
    lock.release()
    assert lock.lock_counter == 0 and hf.Lock.status(p)["state"] == "free"


def test_other_process_refused_naming_it(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    h = holder("filelock", p)
    for cls in (FileLock, SoftFileLock):
        with pytest.raises(Timeout) as ei:
            cls(p, timeout=0).acquire()
        assert "held by pid %d" % h.pid in str(ei.value)
        assert ei.value.holder["comm"]


def test_crashed_holder_recovered(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    h = holder("filelock", p)
    first = hf.Lock.status(p)["fence"]  # a counter starts at the wall clock (µs)
    h.kill()
    lock = SoftFileLock(p, timeout=0)
    with lock:  # one try: the dead holder's lock is reaped, not waited out
        assert lock.is_locked and lock.fence == first + 1


def test_release_after_reap_raises_not_held(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p, max_hold=0.001, stale=0.001)
    lock.acquire()
    hf.Lock(p, wait=30, stale=0.001).acquire().release()  # reaps ours as leaked
    with pytest.raises(hf.NotHeld):
        lock.release()
    assert lock.lock_counter == 0 and not lock.is_locked


def test_pathlike_and_mode(tmp):
    import pathlib
    p = pathlib.Path(tmp) / "b.lock"
    lock = FileLock(p, mode=0o600)
    assert lock.lock_file == str(p) and lock.mode == 0o600
    with lock:
        assert os.path.isdir(p)


def test_live_holder_never_reaped_by_default(tmp):
    """py-filelock never takes a live holder's lock: the front records no
    practical max hold (the library's default would reap after 10 min)."""
    p = os.path.join(tmp, "a.lock")
    with FileLock(p):
        assert hf.Lock.status(p)["max_hold_ms"] >= 100 * 365 * 86400 * 1000
    with FileLock(p, max_hold=60):
        assert hf.Lock.status(p)["max_hold_ms"] == 60000


def test_second_object_in_the_same_thread_times_out_at_once_never_hangs(tmp):
    # two FileLock objects for one file in one thread: the second one's wait
    # could never end (HL5); Timeout at once, naming this process
    p = os.path.join(tmp, "f.lock")
    a, b = FileLock(p), FileLock(p)
    a.acquire()
    for timeout in (-1, 60):
        with pytest.raises(Timeout) as ei:
            b.acquire(timeout=timeout)
        assert ei.value.holder["pid"] == os.getpid()
    a.release()
    with b.acquire(timeout=-1):
        assert b.is_locked
