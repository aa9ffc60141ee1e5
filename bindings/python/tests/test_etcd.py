"""The etcd backend through the binding, against an etcd of each test's own
(conftest.py etcd), the other holder the CLI ($HOLDFAST_BIN) or a child
(holder.py with HF_TEST_BACKEND)."""

import errno
import os
import subprocess
import time

import pytest

import holdfast_locks as hf
from conftest import BOUND, free_port


def cli(*args):
    exe = os.environ.get("HOLDFAST_BIN")
    assert exe, "HOLDFAST_BIN (bindings/python/test.sh sets it)"
    r = subprocess.run([exe, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def test_lock_held_by_the_cli_is_refused_naming_it_then_taken_with_a_greater_fence(
        etcd, sleeper, tmp):
    path = os.path.join(tmp, "deploy.lock")
    rc, out, err = cli("lock", "acquire", "-n", path, "--pid", str(sleeper.pid),
                       "--backend", etcd.uri)
    assert rc == 0, err
    token, fence = out.split()
    lk = hf.Lock(path, backend=etcd.uri, ttl=3, etcd_timeout=5)
    with pytest.raises(hf.Held) as ei:
        lk.acquire()
    e = ei.value
    assert e.code == "held"
    assert e.holder["pid"] == sleeper.pid
    assert e.holder["comm"] == "sleep"
    assert e.holder["backend"] == "etcd"
    assert "pid %d (sleep)" % sleeper.pid in str(e)
    assert not os.path.exists(path), "nothing on the file system"
    st = lk.query()
    assert st["state"] == "held" and st["key"].endswith("/deploy.lock"), st

    rc, _, err = cli("lock", "release", path, "--token", token, "--backend", etcd.uri)
    assert rc == 0, err
    with lk:
        assert lk.fence > int(fence)
        assert lk.holder["ttl_ms"] == 3000
        assert lk.holder["pid"] == os.getpid()
        rc, _, err = cli("lock", "acquire", "-n", path, "--pid", str(sleeper.pid),
                         "--backend", etcd.uri)
        assert rc == 1 and "pid %d" % os.getpid() in err, err
    assert lk.query()["state"] == "free"
    lk.close()


def test_lock_held_by_a_child_is_refused_until_it_releases(etcd, tmp, holder):
    path = os.path.join(tmp, "child.lock")
    h = holder("lock", path, env={"HF_TEST_BACKEND": etcd.uri})
    their_fence = int(h.token.split(":")[1])
    lk = hf.Lock(path, backend=etcd.uri)
    with pytest.raises(hf.Held) as ei:
        lk.acquire()
    assert ei.value.holder["pid"] == h.pid
    h.release()
    lk.acquire(wait=BOUND)
    assert lk.fence > their_fence
    lk.release()
    lk.close()


def test_session_by_lane(etcd, tmp, holder):
    f = os.path.join(tmp, ".session.lock")
    h = holder("session", f, "alpha", env={"HF_TEST_BACKEND": etcd.uri})
    s = hf.Session("beta", f, backend=etcd.uri)
    with pytest.raises(hf.Held) as ei:
        s.take()
    assert ei.value.holder["lane"] == "alpha"
    assert ei.value.holder["pid"] == h.pid
    assert "lane alpha" in str(ei.value)
    assert not os.path.exists(f), "the session lives in etcd"
    h.release()
    s.take()
    assert s.holder["lane"] == "beta"
    s.release()
    s.close()


def test_scope_conflict_names_the_pod(etcd, tmp, holder):
    src = os.path.join(tmp, "src")
    os.makedirs(os.path.join(src, "lib"))
    h = holder("scope", src + ":write:recursive", "one", env={"HF_TEST_BACKEND": etcd.uri})
    sc = hf.Scope("two", [os.path.join(src, "lib") + ":write"], backend=etcd.uri, ttl=5)
    with pytest.raises(hf.Conflict) as ei:
        sc.register()
    assert ei.value.holder["name"] == "one"
    assert ei.value.holder["pid"] == h.pid
    assert "pod one" in str(ei.value)
    h.release()
    sc.register()
    assert sc.generation > 0
    sc.release()
    sc.close()


def test_unreachable_is_eio_naming_the_endpoint_within_the_timeout(tmp):
    port = free_port()  # closed: nobody listens
    uri = "etcd://127.0.0.1:%d" % port
    t0 = time.monotonic()
    lk = hf.Lock(os.path.join(tmp, "x.lock"), backend=uri, etcd_timeout=2)
    with pytest.raises(hf.HoldfastOSError) as ei:
        lk.acquire()
    assert time.monotonic() - t0 < BOUND  # bounded (2 s timeout), not a timing
    assert ei.value.errno == errno.EIO and ei.value.code == "EIO"
    assert "127.0.0.1:%d" % port in str(ei.value), str(ei.value)
    s = hf.Session("l", os.path.join(tmp, "s.lock"), backend=uri, etcd_timeout=2)
    with pytest.raises(hf.HoldfastOSError) as ei:
        s.take()
    assert ei.value.errno == errno.EIO and "127.0.0.1:%d" % port in str(ei.value)
    sc = hf.Scope("p", [tmp + ":write"], backend=uri, etcd_timeout=2)
    with pytest.raises(hf.HoldfastOSError) as ei:
        sc.register()
    assert ei.value.errno == errno.EIO and "127.0.0.1:%d" % port in str(ei.value)
    for h in (lk, s, sc):
        h.close()


def test_bad_backend_is_refused_naming_it(tmp):
    with pytest.raises(hf.HoldfastOSError) as ei:
        hf.Lock(os.path.join(tmp, "a"), backend="zookeeper://h:1")
    assert ei.value.errno == errno.EINVAL
    assert "backend zookeeper://h:1" in str(ei.value)
    with pytest.raises(TypeError):
        hf.Lock(os.path.join(tmp, "a"), backend=5)
    with pytest.raises(ValueError):
        hf.Lock(os.path.join(tmp, "a"), ttl=0)
    with hf.Lock(os.path.join(tmp, "b"), backend="file"):
        assert os.path.isdir(os.path.join(tmp, "b"))


def test_the_library_does_not_read_holdfast_backend(tmp, holder):
    path = os.path.join(tmp, "env.lock")
    h = holder("lock", path, env={"HOLDFAST_BACKEND": "etcd://127.0.0.1:%d" % free_port()})
    assert os.path.isdir(path), "a lock without backend= is on the file system"
    assert hf.Lock.status(path)["pid"] == h.pid
