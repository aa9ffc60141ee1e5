import os

import pytest

import holdfast_locks as hf


def spec(path, mode="write"):
    return "%s:%s:recursive" % (path, mode)


def test_register_conflict_names_pod(registry, tmp, holder):
    src = os.path.join(tmp, "src")
    os.mkdir(src)
    h = holder("scope", spec(src), "pod-a")
    with pytest.raises(hf.Conflict) as ei:
        hf.Scope("pod-b", [spec(os.path.join(src, "sub"))]).register()
    e = ei.value
    assert e.code == "conflict" and e.holder["name"] == "pod-a" and e.holder["pid"] == h.pid
    assert "pod pod-a" in str(e)
    with pytest.raises(hf.Held):
        hf.Scope("pod-a", [spec(tmp, "read")]).register()
    h.release()
    with hf.Scope("pod-b", [spec(src)]) as s:
        assert s.registered and s.fd >= 0


def test_delegation(registry, tmp):
    src = os.path.join(tmp, "src")
    os.makedirs(os.path.join(src, "a"))
    with hf.Scope("parent", [spec(src)]) as parent:
        with parent.delegate("child", [spec(os.path.join(src, "a"))]) as child:
            reg = hf.Registry.read()
            assert {p["name"] for p in reg.pods} == {"parent", "child"}
            assert reg.find("child")["delegated_from"] == "parent"
            eff = reg.effective("parent")
            assert eff["denied"][0]["name"] == "child"
            state, rec = reg.check(os.path.join(src, "a", "f"), "parent")
            assert state == "held" and rec["holder"] == "child"
            assert reg.check(os.path.join(src, "b"), "parent")[0] == "yours"
            assert reg.check(os.path.join(src, "a", "f"), "child", child.generation)[0] == "yours"
            reg.close()
        with pytest.raises(hf.NotYours):  # outside the parent's scope
            parent.delegate("stray", [spec(tmp)]).register()
    with pytest.raises(hf.Lost):  # the parent is gone
        hf.Scope("orphan", [spec(src)], parent="parent").register()
    assert len(hf.Registry.read()) == 0


def test_dead_pod_reaped(registry, tmp, holder):
    h = holder("scope", spec(tmp), "pod-a")
    h.kill()
    n, reaped = hf.Registry.reap()
    assert n == 1 and reaped.pods[0]["name"] == "pod-a"


def test_bad_spec_and_paths(registry, tmp):
    s = hf.Scope("x")
    with pytest.raises(hf.HoldfastOSError):
        s.add("no-mode")
    assert hf.canonical_path(os.path.join(tmp, ".", "q")) == os.path.realpath(tmp) + "/q"
    assert hf.canonical_spec(tmp + "/./:read") == os.path.realpath(tmp) + ":read"
    assert hf.registry_path() == registry
