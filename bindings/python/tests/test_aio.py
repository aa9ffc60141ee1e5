"""The asyncio API: waits in the loop's executor, cancelled through
HF_OPT_CANCEL_FD."""

import asyncio
import errno
import os
import select

import pytest

import holdfast_locks as hf
from holdfast_locks._wait import cancellable
from conftest import BOUND, wait_until, waiting_in_library


def pipes():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd).startswith("pipe:"):
                n += 1
        except OSError:
            pass
    return n


def test_acquire_async_and_async_with(tmp):
    p = os.path.join(tmp, "L")

    async def main():
        lk = hf.Lock(p)
        async with lk:
            assert lk.held and hf.Lock.status(p)["pid"] == os.getpid()
        assert not lk.held
        await lk.acquire_async(wait=5)
        lk.release()

    asyncio.run(main())


def test_async_timeout_names_holder(tmp, holder):
    p = os.path.join(tmp, "L")
    h = holder("lock", p)

    async def main():
        with pytest.raises(hf.TimedOut) as ei:
            await hf.Lock(p).acquire_async(wait=0.1)
        assert ei.value.holder["pid"] == h.pid

    asyncio.run(main())


def test_cancel_ends_wait_and_holds_nothing(tmp, holder):
    p = os.path.join(tmp, "L")
    h = holder("lock", p)
    before = pipes()

    async def main():
        lk = hf.Lock(p)
        task = asyncio.ensure_future(lk.acquire_async(wait=-1))  # forever
        while not waiting_in_library():  # the thread is in the library's wait
            await asyncio.sleep(0.005)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=BOUND)
        assert task in done, "the cancelled wait did not end"
        assert task.cancelled()
        # the executor's call has returned: the handle is free, nothing held,
        # the cancel pipe closed and unset
        assert lk._mu.acquire(blocking=False)
        lk._mu.release()
        assert not lk.held and lk.token is None
        return lk

    lk = asyncio.run(main())
    assert pipes() == before
    assert hf.Lock.status(p)["pid"] == h.pid
    h.release()
    lk.acquire()  # the handle is usable again, with no cancel descriptor left
    lk.release()


def test_cancel_session_take(tmp, holder):
    p = os.path.join(tmp, ".session.lock")
    h = holder("session", p, "a")

    async def main():
        s = hf.Session("b", p)
        task = asyncio.ensure_future(s.take_async(wait=-1))
        while not waiting_in_library():
            await asyncio.sleep(0.005)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=BOUND)
        assert task in done and task.cancelled() and not s.taken

    asyncio.run(main())
    assert hf.Session.status(p)["lane"] == "a"
    h.release()


def test_success_racing_cancel_is_undone():
    """A wait that succeeds although cancelled is undone before the
    CancelledError propagates."""
    state = {"fd": None, "undone": 0}

    def set_fd(fd):
        state["fd"] = fd
        return 0

    def call():  # waits for the cancel byte, then "succeeds anyway"
        r, _, _ = select.select([state["fd"]], [], [], BOUND)
        assert r
        return 0

    def undo():
        state["undone"] += 1

    async def main():
        task = asyncio.ensure_future(cancellable(set_fd, call, undo))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert state["undone"] == 1 and state["fd"] == -1


def test_scope_register_async(registry, tmp):
    async def main():
        async with hf.Scope("pod-a", ["%s:write:recursive" % tmp]) as s:
            assert s.registered and s.generation > 0
        assert not s.registered

    asyncio.run(main())


def test_async_hold_is_the_loops_thread(tmp):
    # acquired in the executor for the loop's thread (HL5): a blocking wait
    # of that thread for it is refused (EDEADLK), never a hung loop
    p = os.path.join(tmp, "L")

    async def main():
        a = hf.Lock(p)
        await a.acquire_async(wait=5)
        with pytest.raises(hf.HoldfastOSError) as ei:
            hf.Lock(p).acquire(wait=None)
        assert ei.value.errno == errno.EDEADLK
        a.release()

    asyncio.run(main())
