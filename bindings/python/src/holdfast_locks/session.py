"""The session lock (hf_session): one holder per work tree, by lane."""

from __future__ import annotations

import ctypes
import os
import threading
from types import TracebackType
from typing import Any, Dict, Optional, Type

from . import _backend
from . import _lib as L
from ._wait import Seconds, cancellable, dur_ms, sync_wait, to_ms
from .errors import check, make_error, rec_dict
from .lock import PathLike


class Session:
    """The session of lane at path (None: .session.lock at the top of the
    enclosing git work tree).

        with Session("data", wait=60) as s:
            ...            # s.owner is the token recorded

    wait (s): take()'s default (0 try once); stale (s): a session's age
    before the next taker breaks it (default 90 min); owner: the owner token
    to record (take) or require (release). backend, etcd_user,
    etcd_password_file, etcd_ca_file, etcd_timeout: where the session lives
    (default the file; "etcd://...": a key of an etcd cluster and its lease)
    and how to reach it (_backend.py)."""

    def __init__(self, lane: str, path: Optional[PathLike] = None, *,
                 wait: Optional[Seconds] = 0, stale: Optional[Seconds] = None,
                 owner: Optional[str] = None, backend: Optional[str] = None,
                 etcd_user: Optional[str] = None,
                 etcd_password_file: Optional[_backend.StrPath] = None,
                 etcd_ca_file: Optional[_backend.StrPath] = None,
                 etcd_timeout: Optional[Seconds] = None) -> None:
        self._path = None if path is None else os.fsdecode(os.fspath(path))
        self._lane = lane
        self._wait = wait
        self._mu = threading.RLock()
        self._h = ctypes.c_void_p()
        self._taken = False
        self.broke: Optional[Dict[str, Any]] = None
        check(L.lib().hf_session_new(L.enc(self._path), lane.encode(), ctypes.byref(self._h)),
              self._path, what="lane %s" % lane)
        if stale is not None:
            self._set(L.HF_OPT_STALE_MS, dur_ms(stale, "stale"))
        if owner is not None:
            with self._mu:
                check(L.lib().hf_session_set_str(self._handle(), L.HF_OPT_OWNER, owner.encode()),
                      self._path)
        _backend.apply(self._set_str, self._set, backend=backend, etcd_user=etcd_user,
                       etcd_password_file=etcd_password_file, etcd_ca_file=etcd_ca_file,
                       ttl=None, etcd_timeout=etcd_timeout)

    def _handle(self) -> ctypes.c_void_p:
        if not self._h:
            raise ValueError("the session handle is closed")
        return self._h

    def _set(self, opt: int, value: int) -> None:
        with self._mu:
            check(L.lib().hf_session_set(self._handle(), opt, value), self._path)

    def _set_str(self, opt: int, value: str, what: str) -> None:
        with self._mu:
            check(L.lib().hf_session_set_str(self._handle(), opt, value.encode()), self._path,
                  what=what)

    def _where(self) -> str:
        return self._path or default_path()

    def _fail(self, rc: int) -> None:
        raise make_error(rc, self._where(), rec_dict(L.lib().hf_session_holder(self._h)),
                         "lane %s" % self._lane)

    @property
    def lane(self) -> str:
        return self._lane

    @property
    def path(self) -> str:
        return self._where()

    @property
    def owner(self) -> Optional[str]:
        with self._mu:
            return L.dec(L.lib().hf_session_owner(self._handle()))

    @property
    def holder(self) -> Optional[Dict[str, Any]]:
        with self._mu:
            return rec_dict(L.lib().hf_session_holder(self._handle()))

    @property
    def taken(self) -> bool:
        return self._taken

    def _take_rc(self, wait_ms: int, cancel_fd: Optional[int] = None) -> int:
        with self._mu:
            h = self._handle()
            rc = L.lib().hf_session_set(h, L.HF_OPT_WAIT_MS, wait_ms)
            if rc == 0 and cancel_fd is not None:
                rc = L.lib().hf_session_set(h, L.HF_OPT_CANCEL_FD, cancel_fd)
            if rc == 0:
                rc = L.lib().hf_session_take(h)
            if cancel_fd is not None:
                L.lib().hf_session_set(h, L.HF_OPT_CANCEL_FD, -1)
            if rc >= 0:
                self._taken = True
            return rc

    def _took(self, rc: int) -> bool:
        if rc < 0:
            self._fail(rc)
        self.broke = (self.holder or {}).get("broke") if rc == 1 else None
        return rc == 1

    def take(self, wait: Optional[Seconds] = ...) -> bool:  # type: ignore[assignment]
        """Take the session; True when the take broke a stale one (then
        .broke names it). Raises Held (a live session, whoever holds it;
        .holder), TimedOut, Canceled, Unreadable."""
        return self._took(sync_wait(self._take_rc, to_ms(self._wait if wait is ... else wait)))

    async def take_async(self, wait: Optional[Seconds] = ...) -> bool:  # type: ignore[assignment]
        """take() for asyncio; cancelling the task ends the wait and leaves
        nothing taken."""
        w = to_ms(self._wait if wait is ... else wait)

        def set_fd(fd: int) -> int:
            with self._mu:
                return L.lib().hf_session_set(self._handle(), L.HF_OPT_CANCEL_FD, fd)

        rc = await cancellable(set_fd, lambda: self._take_rc(w), self.release)
        return self._took(rc)

    def release(self) -> None:
        """Release the lane's session. Raises NotHeld, NotYours (another
        lane or owner: .holder), Unreadable."""
        with self._mu:
            rc = L.lib().hf_session_release(self._handle())
            self._taken = False
            if rc < 0:
                self._fail(rc)

    def close(self) -> None:
        with self._mu:
            if self._h:
                L.lib().hf_session_free(self._h)
                self._h = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Session":
        self.take()
        return self

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self._taken:
            self.release()

    async def __aenter__(self) -> "Session":
        await self.take_async()
        return self

    async def __aexit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if self._taken:
            self.release()

    @staticmethod
    def status(path: Optional[PathLike] = None, stale: Optional[Seconds] = None) -> Dict[str, Any]:
        """The session at path, read-only: "state" ("free", "held", "stale",
        "skew", "unreadable"), the file's fields, "age_ms", "mtime_ms"."""
        p = None if path is None else os.fsdecode(os.fspath(path))
        rec = ctypes.c_void_p()
        lib = L.lib()
        ms = 0 if stale is None else dur_ms(stale, "stale")
        check(lib.hf_session_status(L.enc(p), ms, ctypes.byref(rec)), p)
        try:
            return rec_dict(rec) or {}
        finally:
            lib.hf_rec_free(rec)


def default_path() -> str:
    """.session.lock at the top of the enclosing git work tree, else here."""
    buf = ctypes.create_string_buffer(4096)
    check(L.lib().hf_session_default_path(buf, len(buf)))
    return os.fsdecode(buf.value)
