"""Scope leases and reasons through the binding: lease=, reason=, renew()."""
import os
import subprocess
import sys
import time

import pytest

import holdfast_locks as hf

from conftest import BOUND, SRC


def spec(path, mode="write"):
    return "%s:%s:recursive" % (path, mode)


def register_in_child(name, specs, lease, reason, parent=None):
    """Register a leased pod from a python3 that detaches and exits."""
    code = ("import sys, holdfast_locks as hf\n"
            "s = hf.Scope(sys.argv[1], sys.argv[5:], lease=float(sys.argv[2]), reason=sys.argv[3],"
            " parent=sys.argv[4] or None)\n"
            "s.register(); print(s.generation); s.detach(); s.close()\n")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", code, name, str(lease), reason, parent or ""]
                       + list(specs), env=env, capture_output=True, timeout=BOUND)
    assert p.returncode == 0, p.stderr.decode()
    return int(p.stdout)


def test_leased_pod_outlives_the_process_that_registered_it(registry, tmp):
    gen = register_in_child("A", [spec(tmp)], 60, "the parser")
    with hf.Registry.read() as reg:
        a = reg.find("A")
        assert a is not None and a["generation"] == gen
        assert a["lease_ms"] == 60000 and "lease_until" in a and a["reason"] == "the parser"
    # it is held: a second pod is refused, naming the holder's reason and lease
    with pytest.raises(hf.Conflict) as ei:
        hf.Scope("B", [spec(os.path.join(tmp, "src"))]).register()
    h = ei.value.holder
    assert h["name"] == "A" and h["holder_reason"] == "the parser" and h["lease_ms"] == 60000
    n, reaped = hf.Registry.reap()
    assert n == 0
    reaped.close()
    # released by name from another handle
    hf.Scope("A", generation=gen).release()
    assert len(hf.Registry.read()) == 0


def test_renew_from_another_process_moves_the_end(registry, tmp):
    gen = register_in_child("A", [spec(tmp)], 60, "r")
    with hf.Registry.read() as reg:
        before = reg.find("A")["lease_left_ms"]
    s = hf.Scope("A", lease=3600)
    s.renew()
    with hf.Registry.read() as reg:
        a = reg.find("A")
        assert a["lease_ms"] == 3600000 and a["generation"] == gen
        assert a["lease_left_ms"] > before
    with pytest.raises(hf.NotYours):
        hf.Scope("A", generation=gen + 1).renew()
    s.close()  # a handle that renews holds nothing: its close releases nothing
    assert hf.Registry.read().find("A") is not None
    hf.Scope("A").release()
    with pytest.raises(hf.NotHeld):
        hf.Scope("A").renew()


def test_renew_refuses_a_pod_held_by_its_process(registry, tmp):
    with hf.Scope("P", [spec(tmp)]):
        with pytest.raises(hf.HoldfastOSError) as ei:
            hf.Scope("P").renew()
        assert ei.value.errno == 22  # EINVAL: not leased


def test_expired_lease_reaped_and_returned_to_its_parent(registry, tmp):
    b = os.path.join(tmp, "b")
    d = os.path.join(b, "d")
    os.makedirs(d)
    with hf.Scope("A", [spec(tmp)]):
        register_in_child("B", [spec(b)], 1, "short", parent="A")
        with hf.Scope("D", [spec(d)], parent="B"):
            x = os.path.join(b, "x")
            with hf.Registry.read() as reg:
                assert reg.check(x, "A")[0] == "held"
            end = time.monotonic() + BOUND
            while True:  # B's 1 s lease ends: A gets b back, minus D's part
                n, reaped = hf.Registry.reap()
                reaped.close()
                with hf.Registry.read() as reg:
                    if reg.check(x, "A")[0] == "yours":
                        assert reg.find("B") is None
                        assert reg.find("D")["delegated_from"] == "A"
                        assert reg.check(os.path.join(d, "y"), "A")[0] == "held"
                        break
                assert time.monotonic() < end, "B's lease never ended"
                time.sleep(0.1)
    with pytest.raises(hf.NotHeld):
        hf.Scope("B").renew()


def test_close_releases_a_leased_pod_not_detached(registry, tmp):
    s = hf.Scope("A", [spec(tmp)], lease=60).register()
    assert s.fd == -1  # held by its lease, no liveness file
    s.close()
    assert hf.Registry.read().find("A") is None


def test_reason_bounded_and_hostile_refused(registry, tmp):
    with pytest.raises(hf.HoldfastOSError):
        hf.Scope("A", [spec(tmp)], reason="x" * 257)
    with pytest.raises(hf.HoldfastOSError):
        hf.Scope("A", [spec(tmp)], reason="a\x1b[2Jb")
    with pytest.raises(hf.HoldfastOSError):
        hf.Scope("A", [spec(tmp)], lease=0.5)
    with hf.Scope("A", [spec(tmp)], reason="é" * 128) as s:
        assert hf.Registry.read().find("A")["reason"] == "é" * 128
        assert s.registered
