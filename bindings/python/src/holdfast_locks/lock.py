"""The directory lock (hf_lock) and the locked atomic edit (hf_edit)."""

from __future__ import annotations

import ctypes
import os
import threading
from types import TracebackType
from typing import Any, Dict, List, Optional, Type, Union

from . import _backend
from . import _lib as L
from ._wait import Seconds, cancellable, dur_ms, sync_wait, to_ms
from .errors import check, make_error, rec_dict

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


class Lock:
    """A directory lock at path: one holder at a time, its owner recorded
    (pid, host, command, times) and every acquisition fenced.

        with Lock("build.lock", wait=30):
            ...

    wait (seconds): the default of acquire(): 0 try once (the library's
    default), > 0 wait at most that, < 0 or None forever. stale: a
    record-less lock's window (s); max_hold: past this a live holder is
    reaped as leaked (s; recorded in the owner record); pid: whose life
    holds the lock (default the caller); lease (seconds, 1 s to 365 days):
    held by no process but a lease - acquire, detach(), hand the token on,
    renew() and release by it; it expires that long after the acquisition or
    the last renewal (state "expired"). backend, etcd_user,
    etcd_password_file, etcd_ca_file, ttl, etcd_timeout: where it lives
    (default the file system; "etcd://HOST:PORT[,...]": an etcd cluster, the
    fence the epoch + the key's create_revision) and how to reach it (_backend.py; the
    library reads no $HOLDFAST_BACKEND). The handle is guarded by a lock of
    its own, so an object may be used from several threads (one call at a
    time); a lock it holds is released when it is closed or collected.

    How this acquisition shares the lock (HF_OPT_MODE; holdfast.h "Modes"):
    by default exclusive (one holder). shared=True: beside any number of
    other shared holders, never beside an exclusive one; slots=N (1 to
    HF_SLOTS_MAX): beside fewer than N other slot holders. Each holder has
    its own record, token and fence; a waiting exclusive acquirer is not
    starved by later shared ones (they queue behind it). Lock.status() and
    query() list every holder ("holders"); Lock.holders(path) is that list.
    """

    def __init__(self, path: PathLike, *, wait: Optional[Seconds] = 0,
                 stale: Optional[Seconds] = None, max_hold: Optional[Seconds] = None,
                 pid: Optional[int] = None, lease: Optional[Seconds] = None,
                 shared: bool = False, slots: Optional[int] = None,
                 backend: Optional[str] = None,
                 etcd_user: Optional[str] = None,
                 etcd_password_file: Optional[_backend.StrPath] = None,
                 etcd_ca_file: Optional[_backend.StrPath] = None,
                 ttl: Optional[Seconds] = None, etcd_timeout: Optional[Seconds] = None) -> None:
        self._path = os.fsdecode(os.fspath(path))
        self._mu = threading.RLock()
        self._h = ctypes.c_void_p()
        self._held = False
        self._wait = wait
        mode = _mode_of(shared, slots)
        lib = L.lib()
        check(lib.hf_lock_new(L.enc(self._path), ctypes.byref(self._h)), self._path)
        if stale is not None:
            self._set(L.HF_OPT_STALE_MS, dur_ms(stale, "stale"))
        if max_hold is not None:
            self._set(L.HF_OPT_MAX_HOLD_MS, dur_ms(max_hold, "max_hold"))
        if pid is not None:
            self._set(L.HF_OPT_PID, int(pid))
        if lease is not None:
            self._set(L.HF_OPT_LEASE_MS, dur_ms(lease, "lease"))
        if mode == L.HF_MODE_SLOTS:
            self._set(L.HF_OPT_SLOTS, int(slots))  # type: ignore[arg-type]
        elif mode != L.HF_MODE_EXCLUSIVE:
            self._set(L.HF_OPT_MODE, mode)
        self._mode = mode
        self._slots = int(slots) if mode == L.HF_MODE_SLOTS else None  # type: ignore[arg-type]
        _backend.apply(self._set_str, self._set, backend=backend, etcd_user=etcd_user,
                       etcd_password_file=etcd_password_file, etcd_ca_file=etcd_ca_file,
                       ttl=ttl, etcd_timeout=etcd_timeout)

    # -- plumbing ---------------------------------------------------------
    def _handle(self) -> ctypes.c_void_p:
        if not self._h:
            raise ValueError("%s: the lock handle is closed" % self._path)
        return self._h

    def _set(self, opt: int, value: int) -> None:
        with self._mu:
            check(L.lib().hf_lock_set(self._handle(), opt, value), self._path)

    def _set_str(self, opt: int, value: str, what: str) -> None:
        with self._mu:
            check(L.lib().hf_lock_set_str(self._handle(), opt, L.enc(value)), self._path,
                  what=what)

    def _fail(self, rc: int, what: Optional[str] = None) -> None:
        raise make_error(rc, self._path, rec_dict(L.lib().hf_lock_holder(self._h)), what)

    # -- state ------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._path

    @property
    def mode(self) -> str:
        """How this handle's acquisitions share the lock: "exclusive",
        "shared" or "slots" (the records' "mode")."""
        return L.HF_MODE_NAMES[self._mode]

    @property
    def slots(self) -> Optional[int]:
        """The slots bound (slots=N), else None."""
        return self._slots

    @property
    def held(self) -> bool:
        """Whether this handle holds the lock (as far as it knows: check()
        asks the file system)."""
        return self._held

    @property
    def token(self) -> Optional[str]:
        with self._mu:
            return L.dec(L.lib().hf_lock_token(self._handle()))

    @property
    def fence(self) -> int:
        """The held acquisition's fence (0 when none): strictly greater than
        every earlier acquisition's of the same lock."""
        with self._mu:
            return int(L.lib().hf_lock_fence(self._handle()))

    @property
    def fd(self) -> int:
        """The descriptor holding the owner's kernel lock (-1 when none);
        owned by the handle."""
        with self._mu:
            return int(L.lib().hf_lock_fd(self._handle()))

    @property
    def holder(self) -> Optional[Dict[str, Any]]:
        """After a failed call: who holds it (None: nobody known); after an
        acquire: our own record."""
        with self._mu:
            return rec_dict(L.lib().hf_lock_holder(self._handle()))

    @property
    def wait(self) -> Optional[Seconds]:
        return self._wait

    @wait.setter
    def wait(self, value: Optional[Seconds]) -> None:
        to_ms(value)
        self._wait = value

    # -- verbs ------------------------------------------------------------
    def _acquire_rc(self, wait_ms: int, cancel_fd: Optional[int]) -> int:
        lib = L.lib()
        with self._mu:
            h = self._handle()
            rc = lib.hf_lock_set(h, L.HF_OPT_WAIT_MS, wait_ms)
            if rc == 0 and cancel_fd is not None:
                rc = lib.hf_lock_set(h, L.HF_OPT_CANCEL_FD, cancel_fd)
            if rc == 0:
                rc = lib.hf_lock_acquire(h)
            if cancel_fd is not None:
                lib.hf_lock_set(h, L.HF_OPT_CANCEL_FD, -1)
            if rc == 0:
                self._held = True
            return rc

    def acquire(self, wait: Optional[Seconds] = ..., *,  # type: ignore[assignment]
                cancel_fd: Optional[int] = None) -> "Lock":
        """Acquire (wait: as in the constructor; default the object's).
        cancel_fd: a descriptor whose readability ends the wait (Canceled).
        In the main thread a signal's Python handler runs during the wait
        (Ctrl-C raises KeyboardInterrupt; the wait resumes after one that
        returns).
        Raises Held (one try), TimedOut (.holder: the last holder seen),
        Canceled, Barrier, Unreadable, Unsafe, HoldfastOSError (EALREADY when
        this handle holds it, EDEADLK, ...)."""
        w = self._wait if wait is ... else wait
        rc = sync_wait(self._acquire_rc, to_ms(w), cancel_fd)
        if rc < 0:
            self._fail(rc)
        return self

    async def acquire_async(self, wait: Optional[Seconds] = ...) -> "Lock":  # type: ignore[assignment]
        """acquire() for asyncio: the wait runs in the loop's executor and a
        cancellation of the awaiting task ends it at once (through
        HF_OPT_CANCEL_FD), holding nothing afterwards."""
        w = to_ms(self._wait if wait is ... else wait)

        def set_fd(fd: int) -> int:
            with self._mu:
                return L.lib().hf_lock_set(self._handle(), L.HF_OPT_CANCEL_FD, fd)

        def call() -> int:
            return self._acquire_rc(w, None)

        def undo() -> None:
            self.release()

        rc = await cancellable(set_fd, call, undo)
        if rc == 0:
            # HL5: held for the loop's thread, not the executor's: a wait of
            # this thread for it would never end (EDEADLK)
            with self._mu:
                L.lib().hf_lock_set(self._handle(), L.HF_OPT_THREAD,
                                    threading.get_native_id())
        if rc < 0:
            self._fail(rc)
        return self

    def release(self) -> None:
        """Release. Raises NotHeld (reaped or released elsewhere) or NotYours
        (another token holds it: .holder); the handle lets go either way."""
        with self._mu:
            rc = L.lib().hf_lock_release(self._handle())
            self._held = False
            if rc < 0:
                self._fail(rc)

    def _call_or_lost(self, fn) -> None:
        """fn(handle); its error raised, and a lost lock no longer held."""
        with self._mu:
            rc = fn(self._handle())
            if rc < 0:
                if rc == L.HF_ELOST:
                    self._held = False
                self._fail(rc)

    def check(self) -> None:
        """Raise Lost (reaped or released; .holder: who holds it now) unless
        this handle still holds the lock; NotHeld when it has no token."""
        self._call_or_lost(L.lib().hf_lock_check)

    def renew(self) -> None:
        """Restart the lock's window - a lease's length (lease=), else its
        max-hold - keeping its fence (hf_lock_renew). Raises Lost when it
        was reaped or released meanwhile, NotYours when another holds it."""
        self._call_or_lost(L.lib().hf_lock_renew)

    def adopt(self, token: str) -> None:
        """Take over a lock acquired elsewhere by its token (to release or
        check it)."""
        with self._mu:
            check(L.lib().hf_lock_adopt(self._handle(), token.encode()), self._path)
            self._held = True

    def detach(self) -> int:
        """Forget the lock without releasing it; returns its descriptor (now
        the caller's) or -1. The token stays readable."""
        with self._mu:
            fd = int(L.lib().hf_lock_detach(self._handle()))
            self._held = False
            return fd

    def hold(self) -> "_Hold":
        """A context manager committing under the lock (hf_lock_hold):
        inside it nobody can enter. Raises Lost when the lock is no longer
        ours. Hold it briefly."""
        return _Hold(self)

    def edit(self, file: PathLike) -> "Edit":
        """A locked, atomic read-modify-write of file under this held lock."""
        return Edit(self, file)

    def close(self) -> None:
        """Free the handle (a lock it still holds is released)."""
        with self._mu:
            if self._h:
                L.lib().hf_lock_free(self._h)
                self._h = ctypes.c_void_p()
                self._held = False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Lock":
        return self.acquire()

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self._held:
            self.release()

    async def __aenter__(self) -> "Lock":
        return await self.acquire_async()

    async def __aexit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if self._held:
            self.release()

    def __repr__(self) -> str:
        return "<holdfast_locks.Lock %r %s>" % (self._path, "held" if self._held else "not held")

    def query(self) -> Dict[str, Any]:
        """The lock's state through this handle, on its backend (etcd too,
        where Lock.status cannot look): status()'s record, plus "backend",
        "key" and "ttl_ms" on etcd."""
        rec = ctypes.c_void_p()
        lib = L.lib()
        with self._mu:
            rc = lib.hf_lock_query(self._handle(), ctypes.byref(rec))
            if rc < 0:
                self._fail(rc)
        try:
            return rec_dict(rec) or {}
        finally:
            lib.hf_rec_free(rec)

    @staticmethod
    def status(path: PathLike) -> Dict[str, Any]:
        """The lock's state, read-only: "state" ("free", "held", "dead",
        "leaked", "partial", "abandoned", "skew", "expired"), the owner's fields,
        "age_ms", "claims", "in_claim", and "mode", "slots" (slots only) and
        "holders": every holder's record (each with its "mode", "state",
        "pid", "token", "fence", ...; "waiting": 1 for an acquirer standing at
        the lock until the holders it cannot share with leave)."""
        p = os.fsdecode(os.fspath(path))
        rec = ctypes.c_void_p()
        lib = L.lib()
        check(lib.hf_lock_status(L.enc(p), ctypes.byref(rec)), p)
        try:
            return rec_dict(rec) or {}
        finally:
            lib.hf_rec_free(rec)


    @staticmethod
    def holders(path: PathLike) -> List[Dict[str, Any]]:
        """Every holder of the lock at path (status()'s "holders"): one
        record for an exclusive holder, one per shared or slot holder, and
        an acquirer waiting at the lock for them ("waiting": 1)."""
        return list(Lock.status(path).get("holders") or [])


def _mode_of(shared: bool, slots: Optional[int]) -> int:
    """HF_OPT_MODE's value for the constructor's shared= and slots=."""
    if not isinstance(shared, bool):
        raise TypeError("shared must be True or False, not %s" % type(shared).__name__)
    if slots is None:
        return L.HF_MODE_SHARED if shared else L.HF_MODE_EXCLUSIVE
    if isinstance(slots, bool) or not isinstance(slots, int):
        raise TypeError("slots must be an int, not %s" % type(slots).__name__)
    if shared:
        raise ValueError("shared=True and slots=%d: a lock is taken in one mode" % slots)
    return L.HF_MODE_SLOTS


class _Hold:
    def __init__(self, lock: Lock) -> None:
        self._lock = lock

    def __enter__(self) -> Lock:
        lk = self._lock
        lk._mu.acquire()
        try:
            rc = L.lib().hf_lock_hold(lk._handle())
            if rc < 0:
                lk._fail(rc)
        except BaseException:
            lk._mu.release()
            raise
        return lk

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        try:
            L.lib().hf_lock_unhold(self._lock._handle())
        finally:
            self._lock._mu.release()


class Edit:
    """hf_edit: FILE replaced only by the rename of a complete, fsynced
    temporary, and only while the lock is ours.

        with Lock("state.json.lock", wait=10) as lk, lk.edit("state.json") as e:
            data = e.read()           # None when the file does not exist
            e.commit(new_bytes)
    """

    def __init__(self, lock: Lock, file: PathLike) -> None:
        self._lock = lock
        self._file = os.fsdecode(os.fspath(file))
        self._e = ctypes.c_void_p()
        err = ctypes.c_void_p()
        lib = L.lib()
        with lock._mu:
            rc = lib.hf_edit_open(lock._handle(), L.enc(self._file), ctypes.byref(self._e),
                                  ctypes.byref(err))
        if rc < 0:
            holder = rec_dict(err) if err else None
            if err:
                lib.hf_rec_free(err)
            raise make_error(rc, self._file, holder)

    @property
    def file(self) -> str:
        return self._file

    @property
    def fd(self) -> int:
        """FILE as opened (-1 when it does not exist); owned by the edit."""
        return int(L.lib().hf_edit_fd(self._live()))

    @property
    def exists(self) -> bool:
        return self.fd >= 0

    def _live(self) -> ctypes.c_void_p:
        if not self._e:
            raise ValueError("%s: the edit is closed" % self._file)
        return self._e

    def read(self) -> Optional[bytes]:
        """FILE's content as opened, or None when it did not exist."""
        fd = self.fd
        if fd < 0:
            return None
        chunks = []
        off = 0
        while True:
            b = os.pread(fd, 1 << 20, off)
            if not b:
                break
            chunks.append(b)
            off += len(b)
        return b"".join(chunks)

    def read_text(self, encoding: str = "utf-8") -> Optional[str]:
        b = self.read()
        return None if b is None else b.decode(encoding)

    def commit(self, data: Union[bytes, str]) -> Optional[Dict[str, Any]]:
        """Replace FILE with data (atomic, directory synced). Returns the
        notes (what the replacement could not keep: "dropped_mode",
        "group_dropped", ...; None when nothing). Raises Lost (the lock is no
        longer ours: FILE untouched), NotHeld, Unsafe (.holder["reason"]:
        "replaced", "created", "owner", ...)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        lib = L.lib()
        with self._lock._mu:
            rc = lib.hf_edit_commit(self._live(), data, len(data))
            notes = rec_dict(lib.hf_edit_notes(self._e))
        if rc < 0:
            raise make_error(rc, self._file, notes)
        return notes

    @property
    def notes(self) -> Optional[Dict[str, Any]]:
        return rec_dict(L.lib().hf_edit_notes(self._live()))

    def close(self) -> None:
        """Close FILE and free the edit; the lock stays held."""
        if self._e:
            L.lib().hf_edit_free(self._e)
            self._e = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Edit":
        return self

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()
