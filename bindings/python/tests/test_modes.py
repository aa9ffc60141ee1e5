"""Shared and slot holders through the binding: Lock(path, shared=True),
Lock(path, slots=N), every holder in the status (holdfast.h "Modes").
Other holders are tests/holder.py processes; who waits is read from the
lock's status ("waiting"), never from time."""

import asyncio
import errno
import os
import re
import threading

import pytest

import holdfast_locks as hf
from holdfast_locks import _lib

from conftest import BOUND, wait_until

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                      "include", "holdfast.h")


def waiting_pids(p):
    return [h["pid"] for h in hf.Lock.holders(p) if h.get("waiting")]


def test_the_constants_are_the_headers():
    with open(HEADER) as f:
        text = f.read()
    opts = text[text.index("enum hf_opt {"):]
    opts = opts[:opts.index("};")]
    names = re.findall(r"^\s*(HF_OPT_[A-Z_]+)(?:\s*=\s*(\d+))?,", opts, re.M)
    value = 0
    seen = {}
    for name, explicit in names:
        value = int(explicit) if explicit else value + 1
        seen[name] = value
    assert seen["HF_OPT_MODE"] == _lib.HF_OPT_MODE
    assert seen["HF_OPT_SLOTS"] == _lib.HF_OPT_SLOTS
    for name in ("EXCLUSIVE", "SHARED", "SLOTS"):
        m = re.search(r"HF_MODE_%s = (\d+)," % name, text)
        assert int(m.group(1)) == getattr(_lib, "HF_MODE_" + name)
    assert "#define HF_SLOTS_MAX %d" % _lib.HF_SLOTS_MAX in text


def test_mode_arguments_are_checked(tmp):
    p = os.path.join(tmp, "L")
    with pytest.raises(ValueError):
        hf.Lock(p, shared=True, slots=2)
    with pytest.raises(TypeError):
        hf.Lock(p, slots=True)
    with pytest.raises(TypeError):
        hf.Lock(p, shared=1)
    for bad in (0, _lib.HF_SLOTS_MAX + 1):
        with pytest.raises(hf.HoldfastOSError) as ei:
            hf.Lock(p, slots=bad)
        assert ei.value.errno == errno.EINVAL and ei.value.path == p
    assert hf.Lock(p).mode == "exclusive" and hf.Lock(p).slots is None
    assert hf.Lock(p, shared=True).mode == "shared"
    lk = hf.Lock(p, slots=3)
    assert lk.mode == "slots" and lk.slots == 3


def test_shared_holders_share_and_are_all_listed(tmp, holder):
    p = os.path.join(tmp, "L")
    other = holder("shared", p)
    with hf.Lock(p, shared=True) as mine:
        assert mine.holder["mode"] == "shared"
        st = hf.Lock.status(p)
        assert st["state"] == "held" and st["mode"] == "shared"
        hs = hf.Lock.holders(p)
        assert sorted(h["pid"] for h in hs) == sorted([other.pid, os.getpid()])
        assert {h["token"] for h in hs} == {other.token, mine.token}
        assert all(h["mode"] == "shared" and h["state"] == "held" for h in hs)
        assert mine.query()["holders"] == hs or len(mine.query()["holders"]) == 2
        with pytest.raises(hf.Held) as ei:
            hf.Lock(p).acquire()
        assert ei.value.holder["mode"] == "shared"
        assert ei.value.holder["pid"] in (other.pid, os.getpid())
    other.release()
    assert hf.Lock.holders(p) == [] and hf.Lock.status(p)["state"] == "free"


def test_readers_share_while_a_writer_waits_and_enters_after_them(tmp, holder):
    p = os.path.join(tmp, "L")
    r1 = holder("shared", p)
    r2 = holder("shared", p)
    fences = [h["fence"] for h in hf.Lock.holders(p)]
    w = holder("writer", p, report=False)
    wait_until(lambda: w.pid in waiting_pids(p), "the writer waits at the lock")
    assert w.proc.poll() is None
    r1.release()
    assert w.pid in waiting_pids(p), "one reader left: the writer still waits"
    r2.release()
    w.reported()  # it holds, now both readers are gone
    st = hf.Lock.status(p)
    assert st["mode"] == "exclusive" and st["pid"] == w.pid
    assert st["fence"] > max(fences)
    w.release()


def test_a_reader_after_a_waiting_writer_waits(tmp, holder):
    p = os.path.join(tmp, "L")
    r1 = holder("shared", p)
    w = holder("writer", p, report=False)
    wait_until(lambda: w.pid in waiting_pids(p), "the writer waits at the lock")
    with pytest.raises(hf.Held) as ei:
        hf.Lock(p, shared=True).acquire()
    assert ei.value.holder["pid"] == w.pid, "a new reader queues behind the writer"
    late = hf.Lock(p, shared=True, wait=BOUND)
    got = []
    t = threading.Thread(target=lambda: got.append(late.acquire()))
    t.start()
    try:
        r1.release()
        w.reported()
        assert t.is_alive() or not got, "not beside the writer"
        assert hf.Lock.status(p)["pid"] == w.pid
        w.release()
    finally:
        t.join(BOUND)
    assert got and late.held and late.fence > int(hf.Lock.status(p)["fence"]) - 1
    late.release()


def test_two_slots_admit_two_and_the_third_waits(tmp, holder):
    p = os.path.join(tmp, "L")
    a = holder("slots", p, "2")
    b = holder("slots", p, "2")
    st = hf.Lock.status(p)
    assert st["mode"] == "slots" and st["slots"] == 2 and len(st["holders"]) == 2
    with pytest.raises(hf.Held) as ei:
        hf.Lock(p, slots=2).acquire()
    assert ei.value.holder["mode"] == "slots"
    with pytest.raises(hf.Held):
        hf.Lock(p, shared=True).acquire()  # shared and slots do not mix
    c = holder("slots", p, "2", env={"HF_TEST_WAIT": "-1"}, report=False)
    wait_until(lambda: c.pid in waiting_pids(p), "the third waits at the lock")
    a.release()
    c.reported()
    assert sorted(h["pid"] for h in hf.Lock.holders(p)) == sorted([b.pid, c.pid])
    b.release()
    c.release()


def test_a_killed_reader_frees_its_place(tmp, holder):
    p = os.path.join(tmp, "L")
    r = holder("shared", p)
    with pytest.raises(hf.Held) as ei:
        hf.Lock(p).acquire()
    assert ei.value.holder["pid"] == r.pid
    r.kill()  # SIGKILL: no release
    with hf.Lock(p) as lk:  # one try: the dead reader's entry is reaped
        assert lk.mode == "exclusive"
        assert [h["pid"] for h in hf.Lock.holders(p)] == [os.getpid()]


def test_a_killed_slot_holder_frees_its_slot(tmp, holder):
    p = os.path.join(tmp, "L")
    a = holder("slots", p, "1")
    a.kill()
    with hf.Lock(p, slots=1) as lk:
        assert lk.held


def test_async_shared_holders(tmp):
    p = os.path.join(tmp, "L")

    async def main():
        a, b = hf.Lock(p, shared=True), hf.Lock(p, shared=True)
        async with a, b:
            assert len(hf.Lock.holders(p)) == 2
            with pytest.raises(hf.TimedOut):
                await hf.Lock(p).acquire_async(wait=0.05)
        assert hf.Lock.holders(p) == []

    asyncio.run(main())
