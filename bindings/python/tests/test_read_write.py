"""The front's ReadWriteLock (holdfast_locks.filelock, _read_write.py RW1-RW6):
py-filelock's SQLite lock on py-filelock's lock file, holdfast's shared and
exclusive holders beside it.  Other holders are tests/holder.py processes;
who waits is read from the holdfast lock's holders ("waiting"), never from
time.  The peer tests run against py-filelock's protocol spoken directly
(sqlite3) always, and against py-filelock's own ReadWriteLock when the
importable filelock has one (Debian's 3.9.0 has not; py-filelock >= 3.21
on PYTHONPATH has)."""

import asyncio
import os
import signal
import sqlite3
import threading

import pytest

from holdfast_locks.filelock import AsyncReadWriteLock, ReadWriteLock, Timeout

from conftest import BOUND, wait_until, waiting_in_library


def upstream_rw():
    try:
        import filelock
    except ImportError:
        return None
    return getattr(filelock, "ReadWriteLock", None)


PEERS = ["sqlite", pytest.param("upstream", marks=pytest.mark.skipif(
    upstream_rw() is None, reason="the importable filelock has no ReadWriteLock (< 3.21)"))]


def db(tmp):
    return os.path.join(tmp, "x.db")


def waiting_pids(rw):
    return [h["pid"] for h in rw.holders if h.get("waiting")]


def peer_try(peer, path, mode):
    """One try of a peer's lock in this process: True when it got it (then
    released), False when refused."""
    if peer == "upstream":
        lk = upstream_rw()(path, is_singleton=False)
        import filelock
        try:
            (lk.acquire_read if mode == "read" else lk.acquire_write)(blocking=False)
        except filelock.Timeout:
            lk.close()
            return False
        lk.release()
        lk.close()
        return True
    con = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=MEMORY")
        if mode == "write":
            con.execute("BEGIN EXCLUSIVE TRANSACTION")
        else:
            con.execute("BEGIN TRANSACTION")
            con.execute("SELECT name FROM sqlite_schema LIMIT 1").fetchall()
        con.rollback()
        return True
    except sqlite3.OperationalError as e:
        assert "locked" in str(e)
        return False
    finally:
        con.close()


def test_readers_share_and_a_writer_is_refused_naming_them(tmp, holder):
    p = db(tmp)
    r = holder("rw-read", p)
    rw = ReadWriteLock(p, is_singleton=False)
    with rw.read_lock(blocking=False):
        assert rw.mode == "read" and rw.fence > 0
        assert sorted(h["pid"] for h in rw.holders) == sorted([r.pid, os.getpid()])
        assert all(h["mode"] == "shared" for h in rw.holders)
    with pytest.raises(Timeout) as ei:
        rw.acquire_write(blocking=False)
    assert ei.value.holder["pid"] == r.pid and ei.value.lock_file == p
    assert "pid %d" % r.pid in str(ei.value)
    r.release()
    with rw.write_lock(timeout=BOUND):
        assert [h["mode"] for h in rw.holders] == ["exclusive"]
    rw.close()


def test_a_writer_waits_for_readers_and_later_readers_wait_for_it(tmp, holder):
    p = db(tmp)
    r = holder("rw-read", p)
    w = holder("rw-write", p, env={"HF_TEST_WAIT": "-1"}, report=False)
    rw = ReadWriteLock(p, is_singleton=False)
    wait_until(lambda: w.pid in waiting_pids(rw), "the writer waits at the lock")
    with pytest.raises(Timeout) as ei:
        rw.acquire_read(blocking=False)
    assert ei.value.holder["pid"] == w.pid, "a new reader queues behind the waiting writer"
    r.release()
    w.reported()
    assert [h["pid"] for h in rw.holders] == [w.pid]
    with pytest.raises(Timeout):
        rw.acquire_read(blocking=False)
    w.release()
    with rw.read_lock(blocking=False):
        assert rw.fence > int(w.token)
    rw.close()


def test_a_killed_reader_frees_its_place(tmp, holder):
    p = db(tmp)
    r = holder("rw-read", p)
    rw = ReadWriteLock(p, is_singleton=False)
    with pytest.raises(Timeout):
        rw.acquire_write(blocking=False)
    r.kill()  # SIGKILL: SQLite's record lock and holdfast's entry die with it
    with rw.write_lock(blocking=False):
        assert [h["pid"] for h in rw.holders] == [os.getpid()]
    rw.close()


@pytest.mark.parametrize("peer", PEERS)
def test_a_peer_holding_excludes_the_front(tmp, holder, peer):
    p = db(tmp)
    rw = ReadWriteLock(p, is_singleton=False)
    w = holder(peer + "-write", p)
    for acquire in (rw.acquire_read, rw.acquire_write):
        with pytest.raises(Timeout) as ei:
            acquire(blocking=False)
        assert ei.value.holder and ei.value.holder["pid"] == w.pid, "named from /proc/locks"
    assert rw.holders == [], "a refused front acquisition holds nothing of holdfast's"
    w.release()
    r = holder(peer + "-read", p)
    with rw.read_lock(blocking=False):
        pass  # readers of both share
    with pytest.raises(Timeout):
        rw.acquire_write(blocking=False)
    r.release()
    with rw.write_lock(blocking=False):
        pass
    rw.close()


@pytest.mark.parametrize("peer", PEERS)
def test_the_front_holding_excludes_a_peer(tmp, holder, peer):
    p = db(tmp)
    w = holder("rw-write", p)
    assert not peer_try(peer, p, "read") and not peer_try(peer, p, "write")
    w.release()
    r = holder("rw-read", p)
    assert peer_try(peer, p, "read"), "readers of both share"
    assert not peer_try(peer, p, "write")
    r.release()
    assert peer_try(peer, p, "write")


def test_the_lock_file_is_py_filelocks_database(tmp):
    p = db(tmp)
    rw = ReadWriteLock(p, is_singleton=False)
    assert os.path.isfile(p), "made by the constructor, as py-filelock does"
    with rw.write_lock():
        assert os.path.isdir(rw.holdfast_path) and rw.holdfast_path == p + ".rw"
    con = sqlite3.connect(p)
    assert con.execute("SELECT count(*) FROM sqlite_schema").fetchone() == (0,)
    con.close()
    rw.close()


def test_py_filelocks_rules(tmp):
    p = db(tmp)
    rw = ReadWriteLock(p)
    assert ReadWriteLock(p) is rw and ReadWriteLock.get_lock(p) is rw, "a singleton by default"
    with pytest.raises(ValueError):
        ReadWriteLock(p, timeout=5)
    with pytest.raises(RuntimeError):
        rw.release()  # not held
    with rw.acquire_read():
        with rw.read_lock():
            assert rw.mode == "read"
        with pytest.raises(RuntimeError, match="upgrade not allowed"):
            rw.acquire_write()
    assert rw.mode is None and rw.holders == []
    rw.acquire_write()
    errors = []
    t = threading.Thread(target=lambda: errors.append(pytest.raises(RuntimeError, rw.acquire_write)))
    t.start()
    t.join(BOUND)
    assert errors, "a write lock is pinned to its thread"
    with pytest.raises(RuntimeError, match="downgrade not allowed"):
        rw.acquire_read()
    rw.acquire_write()
    rw.release()
    assert rw.mode == "write"
    rw.release(force=False)
    assert rw.mode is None
    rw.acquire_read()
    rw.acquire_read()
    rw.release(force=True)
    assert rw.holders == []
    with pytest.raises(ValueError):
        rw.acquire_read(timeout=-5)
    rw.close()
    with pytest.raises(sqlite3.ProgrammingError):
        rw.acquire_read()


def test_another_instance_in_this_thread(tmp):
    p = db(tmp)
    a = ReadWriteLock(p, is_singleton=False)
    b = ReadWriteLock(p, is_singleton=False)
    with a.read_lock():
        with b.read_lock(blocking=False):
            assert len(a.holders) == 2
        with pytest.raises(Timeout) as ei:
            b.acquire_write(timeout=BOUND)  # could never end: refused at once
        assert ei.value.holder["pid"] == os.getpid()
        with pytest.raises(RuntimeError, match="Deadlock"):
            b.acquire_write()  # forever: refused
    a.close()
    b.close()


def test_a_timed_wait_ends_in_timeout_and_holds_nothing(tmp, holder):
    p = db(tmp)
    w = holder("rw-write", p)
    rw = ReadWriteLock(p, timeout=0.05, is_singleton=False)
    with pytest.raises(Timeout) as ei:
        with rw.read_lock():
            pass
    assert ei.value.holder["pid"] == w.pid
    assert [h["pid"] for h in rw.holders] == [w.pid]
    w.release()
    rw.close()


def test_async_read_write_lock(tmp, holder):
    p = db(tmp)
    w = holder("rw-write", p)

    async def main():
        a = AsyncReadWriteLock(p, is_singleton=False)
        with pytest.raises(Timeout):
            await a.acquire_read(blocking=False)
        task = asyncio.ensure_future(a.acquire_read())
        await asyncio.get_running_loop().run_in_executor(
            None, wait_until, waiting_in_library, "the task waits in the library")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [h["pid"] for h in a.holders] == [w.pid], "the cancelled wait left nothing"
        await asyncio.get_running_loop().run_in_executor(None, w.release)
        async with a.read_lock():
            async with a.read_lock():
                assert a.holders[0]["mode"] == "shared"
        async with await a.acquire_write():
            assert a.holders[0]["mode"] == "exclusive"
        await a.close()
        assert a.executor._shutdown

    asyncio.run(main())


class _Interrupted(Exception):
    pass


def _holds_holdfasts_lock(rw):
    """This process holds rw's holdfast lock (not waiting at it): by RW1 its
    acquisition has gone on to SQLite's lock."""
    return os.getpid() in [h["pid"] for h in rw.holders if not h.get("waiting")]


@pytest.mark.parametrize("mode", ["read", "write"])
def test_cancelling_an_async_wait_for_a_py_filelock_holder_ends_it_holding_nothing(
        tmp, holder, mode):
    # RW7: the peer holds SQLite's lock only, so the front waits in SQLite's
    # wait, which sqlite3's interrupt() does not end; the cancellation must
    p = db(tmp)
    w = holder("sqlite-write" if mode == "read" else "sqlite-read", p)

    async def main():
        loop = asyncio.get_running_loop()
        a = AsyncReadWriteLock(p, is_singleton=False)
        task = asyncio.ensure_future(a.acquire_read() if mode == "read" else a.acquire_write())
        await loop.run_in_executor(None, wait_until, lambda: _holds_holdfasts_lock(a),
                                   "the acquisition waits for SQLite's lock")
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=BOUND)
        if not done:  # the wait goes on: end it through the peer, then fail
            await loop.run_in_executor(None, w.release)
            await asyncio.wait([task])
        assert done, "the cancelled acquisition still waited for SQLite after %s s" % BOUND
        assert task.cancelled()
        assert a.holders == [], "holdfast's lock was released"
        await loop.run_in_executor(None, w.release)
        assert peer_try("sqlite", p, "write"), "no SQLite lock is left in this process"
        async with a.write_lock(blocking=False):
            pass
        await a.close()

    asyncio.run(main())


def test_a_signal_ends_a_sync_wait_for_a_py_filelock_holder(tmp, holder):
    # RW7: in the main thread, a signal's handler runs while the front waits
    # for SQLite's lock (Ctrl-C raises KeyboardInterrupt at once), and the
    # wait leaves nothing held
    p = db(tmp)
    w = holder("sqlite-read", p)
    rw = ReadWriteLock(p, is_singleton=False)
    finished = threading.Event()
    rescued = []

    def interrupt():
        wait_until(lambda: _holds_holdfasts_lock(rw), "the acquisition waits for SQLite's lock")
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
        if not finished.wait(BOUND):  # the handler never ran: end the wait through the peer
            rescued.append(True)
            w.release()

    def handler(signum, frame):
        raise _Interrupted()

    old = signal.signal(signal.SIGUSR1, handler)
    t = threading.Thread(target=interrupt)
    try:
        t.start()
        with pytest.raises(_Interrupted):
            rw.acquire_write()  # forever
        finished.set()
    finally:
        finished.set()
        t.join(BOUND)
        signal.signal(signal.SIGUSR1, old)
    assert not rescued, "the handler waited for the peer's release"
    assert rw.mode is None and rw.holders == []
    w.release()
    assert peer_try("sqlite", p, "write"), "no SQLite lock is left in this process"
    rw.close()


def test_a_cancelled_async_close_still_closes_and_shuts_its_executor_down(tmp):
    # RW8
    p = db(tmp)

    async def main():
        a = AsyncReadWriteLock(p, is_singleton=False)
        await a.acquire_write()
        task = asyncio.ensure_future(a.close())
        await asyncio.sleep(0)  # the close is under way in the executor
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert a.executor._shutdown, "the executor the lock made is shut down"
        assert a.holders == [] and peer_try("sqlite", p, "write")
        with pytest.raises(sqlite3.ProgrammingError):
            await a.acquire_read()
        await a.close()  # closed: nothing to do

    asyncio.run(main())


def test_cancelling_an_async_acquisition_queued_behind_a_wait_ends_at_once(tmp, holder):
    # RW9: the lock's one worker runs the first acquisition's wait; a second
    # acquisition queued behind it is cancelled without waiting for it
    p = db(tmp)
    w = holder("rw-write", p)

    async def main():
        loop = asyncio.get_running_loop()
        a = AsyncReadWriteLock(p, is_singleton=False)
        first = asyncio.ensure_future(a.acquire_write())  # waits: forever
        queued = asyncio.ensure_future(a.acquire_read())
        await asyncio.sleep(0)  # both submitted to the lock's one worker, in this order
        assert not first.done() and not queued.done()
        queued.cancel()
        done, _ = await asyncio.wait([queued], timeout=BOUND)
        first.cancel()
        await asyncio.wait([first, queued])
        assert done, "the queued acquisition's cancellation waited for the wait ahead of it"
        assert first.cancelled() and queued.cancelled()
        assert [h["pid"] for h in a.holders] == [w.pid], "neither acquisition holds anything"
        await a.close()

    asyncio.run(main())
