"""py-filelock 3's API over holdfast's directory lock.

    from holdfast_locks.filelock import FileLock, Timeout

    lock = FileLock("build.lock", timeout=10)
    with lock:
        ...

The lock at lock_file is a holdfast directory lock (not a file flock(2)ed
or created with O_EXCL): its holder is recorded (pid, host, command, times),
a holder that died is recovered at once, and a Timeout names the holder.
FileLock and SoftFileLock are the same lock here (see the README's table for
what maps and what cannot mean the same).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import warnings
from types import TracebackType
from typing import Any, Dict, Optional, Type, Union

from . import _lib as L
from .errors import HoldfastError, Held, TimedOut
from .lock import Lock

__all__ = ["AcquireReturnProxy", "BaseFileLock", "FileLock", "SoftFileLock", "Timeout",
           "UnixFileLock"]


#: The front's default max_hold: py-filelock never takes a live holder's lock,
#: so neither does the front unless max_hold is given (100 years, in s).
NO_MAX_HOLD = 100 * 365 * 86400.0


class Timeout(HoldfastError, TimeoutError):
    """The lock could not be acquired within the timeout (or at once, when
    not blocking). .lock_file is the lock; .holder the holder's record
    ("pid", "host", "comm", "acquired", ...) when known; .code "timed_out"
    (a wait ran out) or "held" (one try)."""

    def __init__(self, lock_file: str, error: Optional[HoldfastError] = None) -> None:
        self._lock_file = lock_file
        rc = error.rc if error is not None else L.HF_ETIMEDOUT
        holder = error.holder if error is not None else None
        HoldfastError.__init__(self, rc, None, holder)
        msg = "The file lock '%s' could not be acquired" % lock_file
        from .errors import describe_holder
        who = describe_holder(holder)
        self.message = msg + (": held by %s" % who if who else ".")

    @property
    def lock_file(self) -> str:
        return self._lock_file

    def __reduce__(self):
        return (Timeout, (self._lock_file,))


class AcquireReturnProxy:
    """What acquire() returns: a context manager releasing the lock once."""

    def __init__(self, lock: "BaseFileLock") -> None:
        self.lock = lock

    def __enter__(self) -> "BaseFileLock":
        return self.lock

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.lock.release()


class _Context:
    __slots__ = ("handle", "counter")

    def __init__(self) -> None:
        self.handle: Optional[Lock] = None
        self.counter = 0


class _LocalContext(threading.local):
    def __init__(self) -> None:
        self.ctx = _Context()


class BaseFileLock(contextlib.ContextDecorator):
    """A reentrant lock on lock_file.

    timeout: acquire()'s default, in seconds: < 0 wait forever (default),
    0 one try, > 0 at most that. mode: accepted for compatibility, unused (a
    holdfast lock is a directory the library makes). thread_local (default
    True): each thread has its own counter and its own hold, so threads of
    one process exclude each other; False: one context shared by the
    threads (reentrant across them). blocking: acquire()'s default.
    stale, max_hold (holdfast's, seconds): a record-less lock's window, and
    the age past which a live holder is reaped as leaked (default: never,
    as with py-filelock; holdfast_locks.Lock's default is the library's
    10 min)."""

    def __init__(self, lock_file: Union[str, "os.PathLike[Any]"], timeout: float = -1,
                 mode: int = 0o644, thread_local: bool = True, *, blocking: bool = True,
                 stale: Optional[float] = None, max_hold: Optional[float] = None) -> None:
        self._lock_file: str = os.fspath(lock_file)  # type: ignore[assignment]
        self._timeout = float(timeout)
        self._mode = mode
        self._thread_local = bool(thread_local)
        self._blocking = bool(blocking)
        self._stale = stale
        self._max_hold = NO_MAX_HOLD if max_hold is None else max_hold
        self._shared_mu = threading.Lock()  # thread_local=False: one caller at a time
        self._local: Union[_LocalContext, None] = _LocalContext() if thread_local else None
        self._shared = _Context()

    # -- properties of py-filelock ---------------------------------------
    @property
    def lock_file(self) -> str:
        return self._lock_file

    @property
    def timeout(self) -> float:
        return self._timeout

    @timeout.setter
    def timeout(self, value: Union[float, str]) -> None:
        self._timeout = float(value)

    @property
    def blocking(self) -> bool:
        return self._blocking

    @blocking.setter
    def blocking(self, value: bool) -> None:
        self._blocking = bool(value)

    @property
    def mode(self) -> int:
        return self._mode

    def is_thread_local(self) -> bool:
        return self._thread_local

    def _ctx(self) -> _Context:
        return self._local.ctx if self._local is not None else self._shared

    @property
    def is_locked(self) -> bool:
        h = self._ctx().handle
        return h is not None and h.held

    @property
    def lock_counter(self) -> int:
        return self._ctx().counter

    # -- holdfast's extras -------------------------------------------------
    @property
    def fence(self) -> int:
        """This context's acquisition's fence (0 when not held)."""
        h = self._ctx().handle
        return h.fence if h is not None and h.held else 0

    @property
    def holdfast_lock(self) -> Optional[Lock]:
        """The holdfast_locks.Lock of this context (None before a first
        acquire)."""
        return self._ctx().handle

    # -- verbs -------------------------------------------------------------
    def acquire(self, timeout: Optional[float] = None, poll_interval: float = 0.05, *,
                poll_intervall: Optional[float] = None,
                blocking: Optional[bool] = None) -> AcquireReturnProxy:
        """Acquire (or, when this context holds it, count one more).
        timeout: None the default; < 0 forever; 0 one try; > 0 seconds.
        poll_interval is accepted and unused: a wait wakes on the release.
        Raises Timeout."""
        if poll_intervall is not None:
            warnings.warn("use poll_interval instead of poll_intervall", DeprecationWarning,
                          stacklevel=2)
        if timeout is None:
            timeout = self._timeout
        if blocking is None:
            blocking = self._blocking
        wait = -1.0 if timeout < 0 else float(timeout)
        if not blocking:
            wait = 0.0
        if self._local is not None:
            self._acquire_ctx(self._local.ctx, wait)
        else:
            if wait < 0:
                got = self._shared_mu.acquire()
            else:
                got = self._shared_mu.acquire(timeout=wait) if wait > 0 else \
                    self._shared_mu.acquire(blocking=False)
            if not got:
                raise Timeout(self._lock_file)
            try:
                self._acquire_ctx(self._shared, wait)
            finally:
                self._shared_mu.release()
        return AcquireReturnProxy(lock=self)

    def _acquire_ctx(self, ctx: _Context, wait: float) -> None:
        if ctx.handle is not None and ctx.handle.held:
            ctx.counter += 1
            return
        if ctx.handle is None:
            ctx.handle = Lock(self._lock_file, stale=self._stale, max_hold=self._max_hold)
        try:
            ctx.handle.acquire(wait)
        except (Held, TimedOut) as e:
            raise Timeout(self._lock_file, e) from None
        except OSError as e:
            if e.errno != errno.EDEADLK:
                raise
            # this thread holds it through another FileLock object: the wait
            # could never end (py-filelock would wait out the timeout, or
            # forever); Timeout at once, naming the holder
            raise Timeout(self._lock_file, e) from None
        ctx.counter = 1

    def release(self, force: bool = False) -> None:
        """Count one release; the lock is released when the count reaches
        0, or at once with force. Raises holdfast_locks.NotHeld when the lock
        had been reaped or released elsewhere meanwhile (the count is 0
        then)."""
        if self._local is not None:
            self._release_ctx(self._local.ctx, force)
        else:
            with self._shared_mu:
                self._release_ctx(self._shared, force)

    @staticmethod
    def _release_ctx(ctx: _Context, force: bool) -> None:
        h = ctx.handle
        if h is None or not h.held:
            ctx.counter = 0
            return
        ctx.counter -= 1
        if ctx.counter <= 0 or force:
            ctx.counter = 0
            h.release()

    def __enter__(self) -> "BaseFileLock":
        self.acquire()
        return self

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()

    def __del__(self) -> None:
        try:
            self.release(force=True)
        except Exception:
            pass

    def __repr__(self) -> str:
        return "<%s %r locked=%s counter=%d>" % (type(self).__name__, self._lock_file,
                                                 self.is_locked, self.lock_counter)


class FileLock(BaseFileLock):
    """The holdfast directory lock under py-filelock's FileLock API."""


class SoftFileLock(BaseFileLock):
    """The same lock as FileLock: holdfast has one directory lock, whose
    holder is recorded and recovered when dead (py-filelock's SoftFileLock
    never recovers a crashed holder's file)."""


UnixFileLock = FileLock
