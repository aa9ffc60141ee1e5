"""The py-filelock front (holdfast_locks.filelock): py-filelock's lock on
py-filelock's file, with holdfast's record, fence and holder's name.

The peer here is a raw flock(2) on the same path (tests/holder.py "flock"),
which is exactly the lock py-filelock's FileLock takes; the real
py-filelock meets the front in `make check-long` (bench/python/mixed.py)."""

import asyncio
import errno
import fcntl
import json
import logging
import os
import socket
import threading
import traceback

import pytest

import holdfast_locks.filelock as front
from holdfast_locks.filelock import (AsyncFileLock, AsyncSoftFileLock, BaseAsyncFileLock,
                                     BaseFileLock, FileLock, SoftFileLock, Timeout,
                                     UnixFileLock)


def flock_free(path):
    """Whether a flock(2) LOCK_EX|LOCK_NB on path (another open, as
    py-filelock makes it) succeeds now; it is let go at once."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def write_dead_owners_marker(p, tmp, holder):
    """A SoftFileLock marker at p naming a process of this host that ended."""
    h = holder("flock", os.path.join(tmp, "other"))
    dead = h.pid
    h.kill()
    with open(p, "w") as f:
        f.write("%d\n%s\n" % (dead, socket.gethostname()))


def record(path):
    with open(path, "rb") as f:
        return json.loads(f.read())


def in_thread(fn):
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


def test_front_holds_the_flock_a_py_filelock_process_takes(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)
    assert FileLock is UnixFileLock and isinstance(lock, BaseFileLock)
    with lock:
        assert lock.is_locked and not flock_free(p)
    assert not lock.is_locked and flock_free(p)
    assert os.path.isfile(p)  # left in place, as py-filelock leaves it


def test_raw_flock_holder_excludes_the_front_and_is_named(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    h = holder("flock", p)
    with pytest.raises(Timeout) as ei:
        FileLock(p, timeout=0).acquire()
    e = ei.value
    assert isinstance(e, TimeoutError) and e.lock_file == p
    assert e.holder["pid"] == h.pid and e.holder["comm"].startswith("python")
    assert str(e).startswith("The file lock '%s' could not be acquired: held by pid %d (" % (p, h.pid))
    h.release()
    with FileLock(p, timeout=0) as lock:
        assert lock.is_locked


def test_leftover_lock_file_is_normal(tmp):
    p = os.path.join(tmp, "a.lock")
    with open(p, "wb") as f:
        f.write(b"whatever an old py-filelock holder wrote\n" * 3)
    with FileLock(p, timeout=0) as lock:
        assert lock.is_locked and record(p)["pid"] == os.getpid()


def test_record_and_fence_in_the_file_while_held(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)
    fences = []
    for _ in range(3):
        with lock:
            r = record(p)
            assert r["pid"] == os.getpid() and r["host"] == socket.gethostname()
            assert r["comm"] and r["acquired"].endswith("Z") and r["fence"] == lock.fence
            fences.append(lock.fence)
    assert fences[0] < fences[1] < fences[2]
    assert lock.fence == 0  # not held
    # a py-filelock holder truncates the file when it wins (it never reads it)
    fd = os.open(p, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.close(fd)
    with lock:
        assert record(p)["fence"] == lock.fence > 0


def test_front_holder_in_another_process_named_with_its_record(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    h = holder("filelock", p)
    with pytest.raises(Timeout) as ei:
        FileLock(p, timeout=0.05, poll_interval=0.01).acquire()
    assert ei.value.holder["pid"] == h.pid and ei.value.holder["fence"] == int(h.token)
    assert "held by pid %d (" % h.pid in str(ei.value)
    assert front.holder_of(p)["pid"] == h.pid
    h.kill()  # the kernel drops a dead holder's flock: taken at once
    with FileLock(p, timeout=0) as lock:
        assert lock.fence > int(h.token)


def test_nul_in_the_path_is_value_error_not_another_lock(tmp):
    one = os.path.join(tmp, "x\0one")
    with pytest.raises(ValueError):
        FileLock(one).acquire()
    with pytest.raises(ValueError):
        SoftFileLock(one).acquire()
    assert os.listdir(tmp) == []


def test_python_exception_classes(tmp):
    with pytest.raises(IsADirectoryError):
        FileLock(tmp, timeout=0).acquire()
    with pytest.raises(IsADirectoryError):
        SoftFileLock(tmp, timeout=0).acquire()
    with pytest.raises(FileNotFoundError):
        FileLock("", timeout=0).acquire()
    with pytest.raises(PermissionError):  # sysfs refuses a new file, even to root
        FileLock("/sys/hf-front-test.lock", timeout=0).acquire()


def test_parent_directories_made(tmp):
    p = os.path.join(tmp, "new", "deeper", "c.lock")
    with FileLock(p):
        assert os.path.isfile(p)
    q = os.path.join(tmp, "soft", "d.lock")
    with SoftFileLock(q):
        assert os.path.isfile(q)


def test_poll_interval_from_the_constructor(tmp, holder, monkeypatch):
    p = os.path.join(tmp, "a.lock")
    holder("flock", p)
    lock = FileLock(p, timeout=0.05, poll_interval=0.004)
    assert lock.poll_interval == 0.004
    sleeps = []
    real = front.time

    class Clock:
        monotonic = staticmethod(front.time.monotonic)
        time = staticmethod(front.time.time)
        strftime = staticmethod(front.time.strftime)
        gmtime = staticmethod(front.time.gmtime)

        @staticmethod
        def sleep(s):
            sleeps.append(s)
            real.sleep(s)

    monkeypatch.setattr(front, "time", Clock)
    try:
        with pytest.raises(Timeout):
            lock.acquire()
        with pytest.raises(Timeout):
            lock.acquire(poll_interval=0.002)
    finally:
        monkeypatch.setattr(front, "time", real)
    assert 0.004 in sleeps and 0.002 in sleeps and set(sleeps) == {0.004, 0.002}


def test_log_records_on_the_filelock_logger(tmp, caplog):
    p = os.path.join(tmp, "a.lock")
    caplog.set_level(logging.DEBUG, logger="filelock")
    lock = FileLock(p)
    with lock:
        pass
    assert [r.name for r in caplog.records] == ["filelock"] * 4
    assert caplog.messages == [
        "Attempting to acquire lock %d on %s" % (id(lock), p),
        "Lock %d acquired on %s" % (id(lock), p),
        "Attempting to release lock %d on %s" % (id(lock), p),
        "Lock %d released on %s" % (id(lock), p),
    ]


def test_timeout_repr_str_and_pickle():
    import pickle
    t = Timeout("/x/y.lock")
    assert repr(t) == "Timeout('/x/y.lock')"
    assert str(t) == "The file lock '/x/y.lock' could not be acquired."
    named = Timeout("/x/y.lock", {"pid": 7, "comm": "make"})
    back = pickle.loads(pickle.dumps(named))
    assert str(back) == str(named) == "The file lock '/x/y.lock' could not be acquired: held by pid 7 (make)."


def test_is_singleton(tmp):
    p = os.path.join(tmp, "a.lock")
    a = FileLock(p, is_singleton=True)
    assert a.is_singleton and FileLock(os.path.join(tmp, ".", "a.lock"), is_singleton=True) is a
    assert FileLock(p) is not a and not FileLock(p).is_singleton
    with pytest.raises(ValueError, match="timeout"):
        FileLock(p, timeout=3, is_singleton=True)
    with a:
        with FileLock(p, is_singleton=True):  # the same object: reentrant
            assert a.lock_counter == 2


def test_second_object_in_one_thread_is_runtime_error_not_a_hang(tmp):
    p = os.path.join(tmp, "a.lock")
    a, b = FileLock(p), FileLock(p)
    with a:
        with pytest.raises(RuntimeError, match="Deadlock"):
            b.acquire()
        with pytest.raises(Timeout):
            b.acquire(timeout=0)  # a bounded wait stays a Timeout
        assert b.lock_counter == 0
    with b.acquire():
        assert b.is_locked


def test_threads_exclude_each_other_thread_local(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = FileLock(p)
    with lock:
        assert in_thread(lambda: (lock.is_locked, lock.lock_counter)) == (False, 0)
        with pytest.raises(Timeout):
            in_thread(lambda: lock.acquire(timeout=0))
    shared = FileLock(p, thread_local=False)
    with shared:
        in_thread(lambda: shared.acquire(timeout=0))
        assert shared.lock_counter == 2
        shared.release()


def test_async_file_lock(tmp):
    p = os.path.join(tmp, "a.lock")

    async def main():
        lock = AsyncFileLock(p, timeout=0)
        assert isinstance(lock, BaseAsyncFileLock) and not lock.is_thread_local()
        async with lock:
            assert lock.is_locked and not flock_free(p) and record(p)["fence"] == lock.fence
            with pytest.raises(Timeout):
                await AsyncFileLock(p, timeout=0.02, poll_interval=0.005).acquire()
            async with await lock.acquire() as same:
                assert same is lock and lock.lock_counter == 2
        assert not lock.is_locked and flock_free(p)
        with pytest.raises(NotImplementedError):
            with lock:
                pass
        soft = AsyncSoftFileLock(p + ".soft", run_in_executor=False)
        async with soft:
            assert os.path.exists(p + ".soft")
        assert not os.path.exists(p + ".soft")

    asyncio.run(main())


def test_soft_file_lock_marker(tmp):
    p = os.path.join(tmp, "a.lock")
    lock = SoftFileLock(p, timeout=0)
    with lock:
        with open(p) as f:
            lines = f.read().splitlines()
        assert lines[0] == str(os.getpid()) and lines[1] == socket.gethostname()
        assert len(lines) == 3 and int(lines[2]) > 0  # the process's start token
        assert lock.pid == os.getpid() and lock.is_lock_held_by_us
        with pytest.raises(Timeout) as ei:
            SoftFileLock(p, timeout=0).acquire()
        assert ei.value.holder["pid"] == os.getpid()
    assert not os.path.exists(p)


def test_soft_marker_of_a_dead_owner_is_broken(tmp, holder):
    p = os.path.join(tmp, "a.lock")
    write_dead_owners_marker(p, tmp, holder)
    lock = SoftFileLock(p, timeout=1, poll_interval=0.001)
    with lock:
        assert lock.pid == os.getpid()


def test_soft_marker_that_names_nobody_is_never_broken_by_age(tmp):
    # py-filelock < 3.10 leaves an empty marker while it holds; its age says
    # nothing about its holder (FL6). Dated an hour back, it still holds.
    p = os.path.join(tmp, "a.lock")
    with open(p, "w"):
        pass
    os.utime(p, (1, 1))
    with pytest.raises(Timeout):
        SoftFileLock(p, timeout=0).acquire()
    assert os.path.exists(p) and os.path.getsize(p) == 0
    with pytest.warns(front.SoftFileLockLifetimeWarning), \
            SoftFileLock(p, timeout=1, poll_interval=0.001, lifetime=60):  # lifetime= alone breaks it
        assert os.path.getsize(p) > 0


def test_soft_break_puts_back_a_marker_it_did_not_judge(tmp, holder, monkeypatch):
    # Between the judgement (a dead owner's marker) and the rename, the dead
    # marker is replaced by a live holder's. The breaker must leave that
    # holder its lock (FL6): the new marker is back at the path afterwards.
    p = os.path.join(tmp, "a.lock")
    write_dead_owners_marker(p, tmp, holder)
    live = "%d\n%s\n" % (os.getppid(), socket.gethostname())
    real_rename = os.rename

    def replaced_first(src, dst):
        if src == p:
            os.unlink(p)
            with open(p, "w") as f:
                f.write(live)
        return real_rename(src, dst)

    monkeypatch.setattr(front.os, "rename", replaced_first)
    with pytest.raises(Timeout):
        SoftFileLock(p, timeout=0).acquire()
    monkeypatch.setattr(front.os, "rename", real_rename)
    with open(p) as f:
        assert f.read() == live
    assert [n for n in os.listdir(tmp) if ".break." in n] == []


# -- two failures at once (FL7-FL9) -----------------------------------------

class CloseFails:
    """os.close raising `error` for one descriptor (set by arm(fd)) and
    closing every other; undo() closes that descriptor for real."""

    def __init__(self, monkeypatch, error):
        self.fd = None
        self.error = error
        self.tries = 0
        self.real = os.close
        monkeypatch.setattr(os, "close", self._close)

    def _close(self, fd):
        if fd == self.fd:
            self.tries += 1
            raise self.error
        self.real(fd)

    def arm(self, fd):
        self.fd = fd

    def undo(self):
        if self.fd is not None:
            fd, self.fd = self.fd, None
            self.real(fd)


def test_flock_enosys_soft_fallback_removes_the_file_its_try_made(tmp, monkeypatch):
    # FL7: a filesystem without flock: the soft lock is taken on the path the
    # flock try created (and left empty), not waited on forever.
    def no_flock(fd, op):
        raise OSError(errno.ENOSYS, "flock not implemented here")
    monkeypatch.setattr(fcntl, "flock", no_flock)
    p = os.path.join(tmp, "nofl.lock")
    lock = FileLock(p, timeout=0.5)
    with pytest.warns(UserWarning, match="falling back to SoftFileLock"):
        lock.acquire()
    try:
        assert isinstance(lock, SoftFileLock) and lock.is_locked
        with open(p, "rb") as f:
            assert f.read().split(b"\n")[0] == str(os.getpid()).encode()
    finally:
        lock.release()
    assert not os.path.exists(p)


def test_close_failing_after_the_unlock_still_commits_the_release(tmp, monkeypatch):
    # FL8: the exact close error, raised once; the lock is free and the count
    # is 0, so another object of this thread may wait for the path.
    p = os.path.join(tmp, "close.lock")
    lock = FileLock(p, close_error_policy="raise")
    lock.acquire()
    err = OSError(errno.EIO, "close says EIO")
    cf = CloseFails(monkeypatch, err)
    cf.arm(lock._context.lock_file_fd)
    try:
        with pytest.raises(OSError) as info:
            lock.release()
        assert info.value is err and cf.tries == 1
        assert (lock.is_locked, lock.lock_counter) == (False, 0)
        assert flock_free(p)
        other = FileLock(p)
        with other.acquire(timeout=-1):
            assert other.is_locked
    finally:
        cf.undo()


def _body_and_close_failure(tmp, monkeypatch, body):
    """Raise body inside a group-policy lock whose release fails closing;
    returns (the group raised, the close error)."""
    err = OSError(errno.EIO, "close failed on release")
    cf = CloseFails(monkeypatch, err)
    lock = FileLock(os.path.join(tmp, "g.lock"), context_error_policy="group",
                    close_error_policy="raise", on_acquired=cf.arm)
    try:
        with pytest.raises(BaseExceptionGroup) as info:
            with lock:
                raise body
    finally:
        cf.undo()
    return info.value, err


def test_group_policy_shows_the_body_failure_once(tmp, monkeypatch):
    # FL9: body failure and release failure are siblings; neither carries
    # the other as context, and the group carries neither.
    body = ValueError("the body broke")
    group, err = _body_and_close_failure(tmp, monkeypatch, body)
    assert group.exceptions == (body, err)
    assert err.__context__ is None
    text = "".join(traceback.format_exception(group))
    assert text.count("ValueError: the body broke") == 1
    assert text.count("OSError: [Errno 5] close failed on release") == 1


def _shared_tree(leaf, depth):
    """A group depth levels deep whose two members are the same object at
    every level (2**depth paths, depth + 1 objects)."""
    g = leaf
    for i in range(depth):
        g = ExceptionGroup("level %d" % i, (g, g))
    return g


@pytest.mark.parametrize("same_leaf", [True, False])
def test_group_policy_cuts_a_context_alike_in_shape_keeps_a_distinct_one(tmp, monkeypatch,
                                                                      same_leaf):
    # FL9: the body's context is cut when it would render the same tree again
    # (same types, messages, leaves), kept when it differs; a 2**22-path
    # shared graph and a 1500-deep chain are walked without recursion.
    leaf = KeyError("shared leaf")
    body = _shared_tree(leaf, 22)
    context = _shared_tree(leaf if same_leaf else KeyError("another leaf"), 22)
    deep = RuntimeError("chain end")
    for i in range(1500):
        link = RuntimeError("link %d" % i)
        link.__context__ = deep
        deep = link
    context.__context__ = deep
    try:
        raise context
    except ExceptionGroup:
        group, err = _body_and_close_failure(tmp, monkeypatch, body)
    assert group.exceptions == (body, err)
    assert body.__context__ is (None if same_leaf else context)
    assert err.__context__ is None


def test_hook_failure_and_release_failure_both_surface(tmp, monkeypatch):
    # FL9: on_acquired raised and the rollback's release failed too: one
    # group of the two, each keeping its own explicit cause.
    err = OSError(errno.EIO, "close failed in the rollback")
    cf = CloseFails(monkeypatch, err)
    cause = LookupError("why the hook failed")
    hook_err = RuntimeError("the hook failed")

    def hook(fd):
        cf.arm(fd)
        raise hook_err from cause
    lock = FileLock(os.path.join(tmp, "h.lock"), close_error_policy="raise", on_acquired=hook)
    try:
        with pytest.raises(ExceptionGroup) as info:
            lock.acquire()
    finally:
        cf.undo()
    assert info.value.exceptions == (hook_err, err)
    assert (hook_err.__cause__, err.__context__, hook_err.__context__) == (cause, None, None)
    assert (lock.is_locked, lock.lock_counter) == (False, 0)


def test_async_hook_failure_and_release_failure_both_surface(tmp, monkeypatch):
    err = OSError(errno.EIO, "close failed in the rollback")
    cf = CloseFails(monkeypatch, err)
    hook_err = RuntimeError("the hook failed")

    def hook(fd):
        cf.arm(fd)
        raise hook_err
    lock = AsyncFileLock(os.path.join(tmp, "ah.lock"), close_error_policy="raise",
                         on_acquired=hook)

    async def go():
        with pytest.raises(ExceptionGroup) as info:
            await lock.acquire()
        return info.value
    try:
        group = asyncio.run(go())
    finally:
        cf.undo()
    assert group.exceptions == (hook_err, err) and err.__context__ is None


def test_soft_close_and_marker_removal_failing_both_surface(tmp, monkeypatch):
    # The marker that could not be removed is reported beside the close
    # error, not dropped: the lock stays taken until it is gone.
    p = os.path.join(tmp, "soft.lock")
    lock = SoftFileLock(p)
    lock.acquire()
    err = OSError(errno.EIO, "close failed")
    cf = CloseFails(monkeypatch, err)
    cf.arm(lock._context.lock_file_fd)
    real_unlink = os.unlink

    def unlink(path, *a, **k):
        if os.fspath(path) == p:
            raise PermissionError(errno.EACCES, "unlink refused", p)
        return real_unlink(path, *a, **k)
    monkeypatch.setattr(os, "unlink", unlink)
    try:
        with pytest.raises(BaseExceptionGroup, match="both failed") as info:
            lock.release()
    finally:
        cf.undo()
        monkeypatch.setattr(os, "unlink", real_unlink)
    assert info.value.exceptions[0] is err
    assert isinstance(info.value.exceptions[1], PermissionError)
    assert os.path.exists(p) and not lock.is_locked
    os.unlink(p)


# -- asyncio: the registry, subclasses (FL10, FL11) ---------------------------

@pytest.mark.parametrize("cls", [AsyncFileLock, AsyncSoftFileLock])
def test_async_release_in_the_executor_frees_the_path_for_this_task(tmp, cls):
    # FL11: the release runs in an executor thread; the task that acquired
    # may then wait for the path through another object (no "Deadlock").
    p = os.path.join(tmp, "reg.lock")

    async def go():
        first = cls(p)
        await first.acquire()
        await asyncio.create_task(first.release())
        second = cls(p, timeout=-1)
        async with second:
            return second.is_locked
    assert asyncio.run(go()) is True


def test_async_subclass_by_coroutine_acquire_and_release(tmp):
    # FL10: py-filelock's subclass protocol, with coroutine functions: the
    # lock is held when _acquire set the descriptor; until it does, the
    # wait goes on (and times out), and no hook or release runs.
    calls = []

    class Flag(BaseAsyncFileLock):
        grant = True

        async def _acquire(self):
            calls.append("acquire")
            if self.grant:
                self._context.lock_file_fd = 99

        async def _release(self):
            calls.append("release")
            self._context.lock_file_fd = None

    async def go():
        lock = Flag(os.path.join(tmp, "sub.lock"))
        async with lock:
            assert lock.is_locked
        assert not lock.is_locked
        never = Flag(os.path.join(tmp, "never.lock"), timeout=0.05, poll_interval=0.01)
        never.grant = False
        with pytest.raises(Timeout):
            await never.acquire()
        return never
    never = asyncio.run(go())
    assert calls[:2] == ["acquire", "release"]
    assert calls[2:].count("acquire") >= 2 and "release" not in calls[2:]
    assert not never.is_locked


def test_sync_subclass_release_failure_group_keeps_a_release_group_whole(tmp):
    # FL10 + FL9: a subclass's _release raising a group of its own: that
    # group is one leaf beside the body's failure, not flattened.
    inner = BaseExceptionGroup("release parts", (KeyboardInterrupt(), OSError("part")))

    class Failing(BaseFileLock):
        fail = True

        def _acquire(self):
            self._context.lock_file_fd = 98

        def _release(self):
            if self.fail:
                self.fail = False
                raise inner
            self._context.lock_file_fd = None

    lock = Failing(os.path.join(tmp, "sg.lock"), context_error_policy="group")
    body = ValueError("body")
    with pytest.raises(BaseExceptionGroup) as info:
        with lock:
            raise body
    assert info.value.exceptions == (body, inner) and info.value.exceptions[1] is inner
    assert lock.is_locked
    lock.release()
    assert not lock.is_locked
