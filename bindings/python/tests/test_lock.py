import errno
import os
import subprocess
import sys

import pytest

import holdfast_locks as hf
from holdfast_locks import _lib


def test_acquire_release_fence_grows(tmp):
    p = os.path.join(tmp, "L")
    lk = hf.Lock(p)
    with lk:
        # a new counter starts at the wall clock in microseconds (README, Fencing)
        first = lk.fence
        assert lk.held and first > 0 and len(lk.token) == 32 and lk.fd >= 0
        assert lk.holder["pid"] == os.getpid()
        assert hf.Lock.status(p)["state"] == "held"
    assert not lk.held and lk.fd == -1
    assert hf.Lock.status(p)["state"] == "free"
    lk.acquire()
    assert lk.fence == first + 1
    lk.release()
    lk.close()


def test_held_names_other_process(tmp, holder):
    p = os.path.join(tmp, "L")
    h = holder("lock", p)
    with pytest.raises(hf.Held) as ei:
        hf.Lock(p).acquire()
    e = ei.value
    assert e.code == "held" and e.rc == _lib.HF_EHELD and e.path == p
    assert e.holder["pid"] == h.pid and e.holder["comm"]
    assert "pid %d" % h.pid in str(e)
    h.release()
    with hf.Lock(p) as lk:
        assert lk.held


def test_timeout_names_holder(tmp, holder):
    p = os.path.join(tmp, "L")
    h = holder("lock", p)
    with pytest.raises(hf.TimedOut) as ei:
        hf.Lock(p, wait=0.2).acquire()
    assert isinstance(ei.value, TimeoutError)
    assert ei.value.code == "timed_out" and ei.value.holder["pid"] == h.pid
    assert "pid %d" % h.pid in str(ei.value)


def test_wait_wakes_on_release(tmp, holder):
    p = os.path.join(tmp, "L")
    h = holder("lock", p)
    import threading
    t = threading.Thread(target=h.release)
    lk = hf.Lock(p, wait=30)
    t.start()
    lk.acquire()
    t.join(30)
    assert lk.held and lk.holder["pid"] == os.getpid()
    lk.release()


def test_crashed_holder_recovered(tmp, holder):
    p = os.path.join(tmp, "L")
    h = holder("lock", p)
    first = hf.Lock.status(p)["fence"]
    h.kill()  # SIGKILL: the record stays, its owner is dead
    assert hf.Lock.status(p)["state"] == "dead"
    with hf.Lock(p) as lk:  # one try, no wait: reaped at once
        assert lk.fence == first + 1


def test_exited_holder_recovered(tmp, holder):
    p = os.path.join(tmp, "L")
    holder("lock", p).exit_holding()
    with hf.Lock(p) as lk:
        assert lk.held


def test_release_not_held_and_double_acquire(tmp):
    p = os.path.join(tmp, "L")
    lk = hf.Lock(p)
    with pytest.raises(hf.NotHeld) as ei:
        lk.release()
    assert ei.value.code == "not_held"
    lk.acquire()
    with pytest.raises(hf.HoldfastOSError) as ei:
        lk.acquire()
    assert ei.value.errno == errno.EALREADY and ei.value.code == "EALREADY"
    lk.release()


def test_os_error_names_path(tmp):
    p = os.path.join(tmp, "missing", "L")
    # the built-in class Python raises for ENOENT, still holdfast's error
    with pytest.raises(FileNotFoundError) as ei:
        hf.Lock(p).acquire()
    assert type(ei.value) is hf.HoldfastFileNotFoundError
    assert isinstance(ei.value, hf.HoldfastOSError) and ei.value.errno == errno.ENOENT
    assert ei.value.code == "ENOENT" and ei.value.rc == -errno.ENOENT and p in str(ei.value)
    assert ei.value.filename == p and ei.value.path == p
    with pytest.raises(hf.HoldfastOSError) as ei:
        hf.Lock(os.path.join(tmp, "x.holdfast"))
    assert ei.value.errno == errno.EINVAL


def test_adopt_and_release_by_token(tmp, holder):
    p = os.path.join(tmp, "L")
    h = holder("lock", p)
    other = hf.Lock(p)
    other.adopt(h.token)
    other.check()
    other.release()
    assert hf.Lock.status(p)["state"] == "free"


def test_check_lost_after_leak_reaped(tmp):
    p = os.path.join(tmp, "L")
    mine = hf.Lock(p, max_hold=0.001, stale=0.001)
    mine.acquire()
    taker = hf.Lock(p, wait=30, stale=0.001)
    taker.acquire()  # reaps the leaked holder once it is older than 1 ms
    with pytest.raises(hf.Lost) as ei:
        mine.check()
    assert ei.value.holder["token"] == taker.token
    assert not mine.held
    taker.release()


def test_detach_keeps_lock(tmp):
    p = os.path.join(tmp, "L")
    lk = hf.Lock(p)
    lk.acquire()
    tok = lk.token
    fd = lk.detach()
    assert fd >= 0 and not lk.held
    lk.close()  # does not release a detached lock
    assert hf.Lock.status(p)["token"] == tok
    other = hf.Lock(p)
    other.adopt(tok)
    other.release()
    os.close(fd)


def test_hold(tmp):
    p = os.path.join(tmp, "L")
    with hf.Lock(p) as lk:
        with lk.hold() as same:
            assert same is lk
    with pytest.raises(hf.NotHeld):
        with lk.hold():
            pass


def test_free_releases(tmp):
    p = os.path.join(tmp, "L")
    lk = hf.Lock(p)
    lk.acquire()
    del lk
    assert hf.Lock.status(p)["state"] == "free"


def test_error_vocabulary():
    assert hf.error_name(_lib.HF_ETIMEDOUT) == "timed_out"
    assert hf.strerror(-errno.ENOENT) == os.strerror(errno.ENOENT)
    for rc, cls in [(_lib.HF_EHELD, hf.Held), (_lib.HF_EUNREADABLE, hf.Unreadable),
                    (_lib.HF_ENOTHELD, hf.NotHeld), (_lib.HF_ENOTYOURS, hf.NotYours),
                    (_lib.HF_ETIMEDOUT, hf.TimedOut), (_lib.HF_ECONFLICT, hf.Conflict),
                    (_lib.HF_EUNSAFE, hf.Unsafe), (_lib.HF_EBARRIER, hf.Barrier),
                    (_lib.HF_ELOST, hf.Lost), (_lib.HF_ECANCELED, hf.Canceled),
                    (-errno.EACCES, hf.HoldfastPermissionError), (-errno.EIO, hf.HoldfastOSError)]:
        e = hf.errors.make_error(rc, "p")
        assert type(e) is cls and e.rc == rc and e.code == hf.error_name(rc)
        assert isinstance(e, hf.HoldfastError)
    import pickle
    e = pickle.loads(pickle.dumps(hf.errors.make_error(_lib.HF_EHELD, "p", {"pid": 1})))
    assert type(e) is hf.Held and e.holder == {"pid": 1}


def test_version_compatibility():
    assert _lib.compatible(_lib.parse_version(hf.library_version()))
    assert _lib.compatible((0, 2, 0)) and _lib.compatible((0, 3, 1))
    assert not _lib.compatible((1, 0, 0)) and not _lib.compatible((0, 1, 9))


def test_library_lookup_refuses_a_wrong_library(tmp):
    env = dict(os.environ, HOLDFAST_LIB="libc.so.6",
               PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(__file__)), "src"))
    code = "import holdfast_locks as h\ntry:\n h.Lock('x')\nexcept h.LibraryNotFound as e:\n print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=30)
    assert "libc.so.6: not libholdfast" in out.stdout, out.stderr


SIGNAL_SCRIPT = r"""
import signal, sys
import holdfast_locks as hf
seen = []
# started in the background by a shell, SIGINT may be ignored: Python then
# installs no KeyboardInterrupt handler; this script wants Python's own
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGUSR1, lambda *a: (seen.append(1), print("usr1", flush=True)))
lk = hf.Lock(sys.argv[1])
try:
    lk.acquire(wait=-1)
    print("acquired", len(seen), lk.held, flush=True)
    lk.release()
except KeyboardInterrupt:
    print("interrupted", lk.held, flush=True)
"""


def start_waiter(path):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "src"))
    return subprocess.Popen([sys.executable, "-c", SIGNAL_SCRIPT, path], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigint_ends_a_sync_wait(tmp, holder):
    import signal
    from conftest import wait_until, waiting_in_library
    p = os.path.join(tmp, "L")
    holder("lock", p)
    w = start_waiter(p)
    try:
        wait_until(lambda: waiting_in_library(w.pid) or w.poll() is not None,
                   "the waiter waits")
        w.send_signal(signal.SIGINT)
        out, err = w.communicate(timeout=30)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait(30)
    assert out.split() == ["interrupted", "False"], err


def test_signal_handler_runs_and_wait_resumes(tmp, holder):
    import signal
    from conftest import wait_until, waiting_in_library
    p = os.path.join(tmp, "L")
    h = holder("lock", p)
    w = start_waiter(p)
    try:
        wait_until(lambda: waiting_in_library(w.pid) or w.poll() is not None,
                   "the waiter waits")
        w.send_signal(signal.SIGUSR1)
        import select
        r, _, _ = select.select([w.stdout], [], [], 30)  # bounded: never a hang
        assert r and w.stdout.readline().strip() == "usr1"  # its handler ran during the wait
        h.release()
        out, err = w.communicate(timeout=30)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait(30)
    assert out.split() == ["acquired", "1", "True"], err


def test_a_thread_never_waits_for_its_own_hold(tmp):
    # HL5: a wait of this thread for a lock another Lock of its own holds
    # for it could never end: EDEADLK at once, naming the holder
    p = os.path.join(tmp, "L")
    a, b = hf.Lock(p), hf.Lock(p)
    a.acquire()
    for wait in (None, 60):  # the hold leaks only after 10 min
        with pytest.raises(hf.HoldfastOSError) as ei:
            b.acquire(wait=wait)
        assert ei.value.errno == errno.EDEADLK
        assert ei.value.holder["pid"] == os.getpid()
        assert ei.value.holder["token"] == a.token
    with pytest.raises(hf.Held):
        b.acquire(wait=0)
    a.release()
    b.acquire(wait=None)
    b.release()


def test_another_threads_hold_is_waited_for(tmp):
    import threading
    p = os.path.join(tmp, "L")
    a = hf.Lock(p)
    a.acquire()
    started, got = threading.Event(), []

    def waiter():
        b = hf.Lock(p)
        started.set()
        b.acquire(wait=None)
        got.append(b.held)
        b.release()

    t = threading.Thread(target=waiter)
    t.start()
    started.wait()
    a.release()
    t.join()
    assert got == [True]


def test_lease_is_held_by_no_process(tmp):
    """lease=: the process that took it exits (its pid proves it dead) and the
    lock stays held until renewed or released by its token elsewhere."""
    p = os.path.join(tmp, "L")
    code = ("import sys, holdfast_locks as hf\n"
            "l = hf.Lock(sys.argv[1], lease=60)\n"
            "l.acquire()\n"
            "print(l.token)\n"
            "l.detach()\n")
    out = subprocess.run([sys.executable, "-c", code, p], check=True, capture_output=True,
                         text=True).stdout
    tok = out.strip()
    st = hf.Lock.status(p)
    assert st["state"] == "held" and st["lease_ms"] == 60000 and st["token"] == tok, st
    with pytest.raises(hf.Held) as ei:
        hf.Lock(p).acquire()
    assert ei.value.holder["lease_ms"] == 60000
    mine = hf.Lock(p)
    mine.adopt(tok)
    mine.renew()
    mine.release()
    assert hf.Lock.status(p)["state"] == "free"
    with pytest.raises(hf.HoldfastError):
        hf.Lock(p, lease=0.5)
