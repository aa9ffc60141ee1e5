import os

import pytest

import holdfast_locks as hf


def test_edit_creates_then_replaces(tmp):
    f = os.path.join(tmp, "state.json")
    with hf.Lock(f + ".lock") as lk:
        with lk.edit(f) as e:
            assert not e.exists and e.read() is None
            assert e.commit("one\n") is None
        with lk.edit(f) as e:
            assert e.read_text() == "one\n"
            e.commit(b"two\n")
            with pytest.raises(hf.HoldfastOSError):
                e.commit(b"again")  # spent
    with open(f) as fh:
        assert fh.read() == "two\n"
    assert not [n for n in os.listdir(tmp) if ".tmp-" in n]


def test_edit_needs_held_lock(tmp):
    f = os.path.join(tmp, "state.json")
    lk = hf.Lock(f + ".lock")
    with pytest.raises(hf.NotHeld):
        lk.edit(f)


def test_edit_refuses_symlink(tmp):
    f = os.path.join(tmp, "state.json")
    os.symlink("/etc/passwd", f)
    with hf.Lock(f + ".lock") as lk:
        with pytest.raises(hf.Unsafe) as ei:
            lk.edit(f)
    assert ei.value.code == "unsafe" and ei.value.holder["reason"] == "symlink"


def test_commit_refused_when_lost(tmp):
    f = os.path.join(tmp, "state.json")
    lk = hf.Lock(f + ".lock", max_hold=0.001, stale=0.001)
    lk.acquire()
    e = lk.edit(f)
    hf.Lock(f + ".lock", wait=30, stale=0.001).acquire().release()  # reaps ours
    with pytest.raises(hf.Lost):
        e.commit(b"late")
    assert not os.path.exists(f)
    e.close()
