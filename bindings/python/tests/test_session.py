import json
import os

import pytest

import holdfast_locks as hf


def test_take_release(tmp):
    p = os.path.join(tmp, ".session.lock")
    with hf.Session("data", p) as s:
        assert s.taken and s.owner and s.path == p
        st = hf.Session.status(p)
        assert st["state"] == "held" and st["lane"] == "data" and st["pid"] == os.getpid()
    assert hf.Session.status(p)["state"] == "free"


def test_held_names_lane_and_holder(tmp, holder):
    p = os.path.join(tmp, ".session.lock")
    h = holder("session", p, "data")
    with pytest.raises(hf.Held) as ei:
        hf.Session("docs", p).take()
    assert ei.value.holder["lane"] == "data" and ei.value.holder["pid"] == h.pid
    assert "lane data" in str(ei.value)
    with pytest.raises(hf.NotYours):
        hf.Session("docs", p).release()
    h.release()


def test_stale_session_broken(tmp):
    p = os.path.join(tmp, ".session.lock")
    with open(p, "w") as f:
        f.write(json.dumps({"lane": "old", "owner": "0f0f", "pid": 1, "host": "elsewhere",
                            "started": "2001-01-01T00:00:00Z"}) + "\n")
    s = hf.Session("new", p, stale=1)
    assert s.take() is True
    assert s.broke["lane"] == "old"
    s.release()


def test_unreadable_refused(tmp):
    p = os.path.join(tmp, ".session.lock")
    with open(p, "w") as f:
        f.write("garbage\n")
    with pytest.raises(hf.Unreadable) as ei:
        hf.Session("a", p).take()
    assert ei.value.code == "unreadable" and ei.value.holder.get("reason")


def test_owner_token_required(tmp):
    p = os.path.join(tmp, ".session.lock")
    s = hf.Session("a", p, owner="tok-1")
    s.take()
    assert s.owner == "tok-1"
    with pytest.raises(hf.NotYours):
        hf.Session("a", p, owner="tok-2").release()
    hf.Session("a", p, owner="tok-1").release()
    assert hf.Session.status(p)["state"] == "free"


def test_bad_lane():
    with pytest.raises(hf.HoldfastOSError):
        hf.Session("", "/nonexistent/.session.lock")
