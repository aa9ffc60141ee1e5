"""py-filelock's ReadWriteLock on py-filelock's own lock file, with holdfast's
shared and exclusive holders beside it.  Imported through
holdfast_locks.filelock:

    from holdfast_locks.filelock import ReadWriteLock, Timeout

    rw = ReadWriteLock("data.db")            # py-filelock's lock file
    with rw.read_lock():                     # any number of readers
        ...
    with rw.write_lock(timeout=10):          # one writer, no reader
        ...

THE PEER'S LOCK IS THE LOCK.  py-filelock (>= 3.21) keeps its ReadWriteLock
in a SQLite database, `lock_file`: a reader holds an open read transaction
(SQLite's SHARED lock: BEGIN, then a read of sqlite_schema), a writer an
exclusive transaction (BEGIN EXCLUSIVE: SQLite's EXCLUSIVE lock), with
journal_mode=MEMORY and a busy timeout; SQLite takes them as fcntl(2) record
locks on the file's lock bytes.  The front takes exactly these locks, through
Python's sqlite3 on the same file, so a process using py-filelock's
ReadWriteLock and one using this front exclude each other on one path, in
both directions (tests/test_read_write.py, RW4).

holdfast adds a directory lock at `lock_file + ".rw"` (holdfast.h "Modes"),
taken in the shared mode by a reader and in the exclusive mode by a writer:

  RW1  Order: holdfast's lock first, then the SQLite lock; released in the
       reverse order.  So among front processes the SQLite lock is always
       free when asked for (no busy-handler sleeps: a release wakes the next
       holder at once), and no cycle can form with a py-filelock process,
       which holds and waits for the SQLite lock only: a front process never
       waits for holdfast's lock while holding the SQLite one.
  RW2  Writers are not starved: a writer waiting for readers stands at the
       holdfast lock, and every later reader queues behind it (DS1); SQLite's
       PENDING lock does the same for a py-filelock writer.
  RW3  Every holder is named: holders lists holdfast's records (pid, host,
       comm, token, fence, mode); a Timeout's .holder is holdfast's record
       of a front holder, or {"pid", "comm"} of the process /proc/locks shows
       holding the SQLite lock (a py-filelock holder).
  RW4  A holder's death frees its place: the SQLite lock is a record lock
       of the process, holdfast's entry is judged dead and reaped.  The
       holdfast lock is bound to the process's life (HF_MAX_HOLD_NONE): it
       is never reaped by age, as SQLite's lock never is.
  RW5  One timeout covers both waits (the monotonic clock); a SQLite wait
       that fails releases the holdfast lock before the Timeout is raised.
  RW6  py-filelock's rules, per instance: reentrant in the same mode (the
       counter is the instance's), no upgrade or downgrade (RuntimeError), a
       write lock pinned to its thread, is_singleton by resolved path, a
       closed lock refusing (sqlite3.ProgrammingError).  A wait that could
       never end - another instance of this thread holds what it waits for
       - raises Timeout at once when bounded, RuntimeError when not
       (py-filelock would wait out the timeout, or forever).
  RW7  The SQLite wait ends when asked: SQLite's busy handler is off
       (busy_timeout 0) and the front retries the statement itself, after
       SQLite's own sleeps (1 ms growing to 100 ms), each a select() on the
       cancel descriptor (an async acquisition's pipe) or a time.sleep()
       that a signal's handler interrupts (Ctrl-C).  So a cancelled async
       acquisition waiting for a py-filelock holder ends at once with nothing
       held (holdfast's lock released by _take, the connection closed), and
       a sync one in the main thread raises KeyboardInterrupt at once.
       SQLite's own handler would sleep on to the end of the busy timeout
       (about 23 days for "forever"): sqlite3_interrupt() does not reach a
       busy wait, and is a no-op before a statement starts.
  RW8  A cancelled AsyncReadWriteLock.close() still ends closed: the close
       runs to its end in the executor, and an executor the instance made
       is shut down before CancelledError propagates.
  RW9  A cancelled async acquisition still queued in the executor (behind
       another acquisition's wait: one worker by default) is taken out of
       the queue and never runs, so its cancellation does not wait for the
       wait ahead of it.

Hazard: RW7's retries are polls (as SQLite's busy handler's are): a
py-filelock holder's release is seen after up to 100 ms, and a stream of
py-filelock readers can keep a front writer out (SQLite has no queue
either); among front processes RW1 and RW2 keep the SQLite lock free.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import pathlib
import select
import sqlite3
import threading
import time
import weakref
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Dict, Iterator, List, Literal, Optional, Type, Union, AsyncIterator

from . import _lib as L
from .errors import HoldfastError, HoldfastOSError, make_error
from .lock import Lock

Mode = Literal["read", "write"]

#: The holdfast lock's path beside lock_file.
SUFFIX = ".rw"
#: The sleeps between SQLite tries (s): SQLite's default busy handler's
#: (sqliteDefaultBusyCallback), which the front's own wait follows (RW7).
_BUSY_DELAYS_S = (0.001, 0.002, 0.005, 0.010, 0.015, 0.020, 0.025, 0.025, 0.025, 0.050, 0.050,
                  0.100)


def _front():
    from . import filelock  # the Timeout class and describe(); imported late (no cycle)
    return filelock


def _check_timeout(timeout: float) -> None:
    """py-filelock's rule: a timeout is -1 (forever) or not negative."""
    if timeout != -1 and timeout < 0:
        raise ValueError("timeout must be a non-negative number or -1")


class _Busy(Exception):
    """SQLite's lock was still busy at the deadline (RW7)."""


def _is_busy(e: sqlite3.OperationalError) -> bool:
    code = getattr(e, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return (code & 0xFF) == sqlite3.SQLITE_BUSY
    return "database is locked" in str(e)


def _posix_holders(path: str) -> List[int]:
    """The pids /proc/locks shows holding a POSIX record lock on path's inode
    (SQLite's locks)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    key = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids: List[int] = []
    try:
        with open("/proc/locks") as f:
            for line in f:
                w = line.split()
                if "->" in w or len(w) < 6:
                    continue
                if w[1] in ("POSIX", "OFDLCK") and w[5] == key:
                    pid = int(w[4])
                    if pid > 0 and pid not in pids:
                        pids.append(pid)
    except (OSError, ValueError):
        pass
    return pids


class _Meta(type):
    """is_singleton=True (py-filelock's default): one instance per resolved
    path and class, the same timeout and blocking or ValueError."""

    def __call__(cls, lock_file, timeout: float = -1, *, blocking: bool = True,
                 is_singleton: bool = True):
        if not is_singleton:
            return super().__call__(lock_file, timeout, blocking=blocking, is_singleton=False)
        key = pathlib.Path(lock_file).resolve()
        with cls._instances_mu:
            inst = cls._instances.get(key)
            if inst is None:
                inst = super().__call__(lock_file, timeout, blocking=blocking, is_singleton=True)
                cls._instances[key] = inst
            if inst.timeout != timeout or inst.blocking != blocking:
                raise ValueError(
                    "Singleton lock created with timeout=%s, blocking=%s, cannot be changed to "
                    "timeout=%s, blocking=%s" % (inst.timeout, inst.blocking, timeout, blocking))
            return inst


class ReadWriteLock(metaclass=_Meta):
    """Readers share, a writer excludes everyone: py-filelock 3.32's
    ReadWriteLock (API, lock file, rules: RW6) with holdfast's holders
    beside it (RW1-RW5).

    lock_file: the SQLite database py-filelock uses as the lock (made when
    missing); timeout: seconds, -1 forever (the default); blocking: False
    tries once; is_singleton: one instance per resolved path."""

    _instances: "weakref.WeakValueDictionary[pathlib.Path, ReadWriteLock]" = \
        weakref.WeakValueDictionary()
    _instances_mu = threading.RLock()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._instances = weakref.WeakValueDictionary()
        cls._instances_mu = threading.RLock()

    @classmethod
    def get_lock(cls, lock_file: Union[str, "os.PathLike[str]"], timeout: float = -1, *,
                 blocking: bool = True) -> "ReadWriteLock":
        """The singleton instance for lock_file."""
        return cls(lock_file, timeout, blocking=blocking)

    def __init__(self, lock_file: Union[str, "os.PathLike[str]"], timeout: float = -1, *,
                 blocking: bool = True, is_singleton: bool = True) -> None:
        self.lock_file = os.fspath(lock_file)
        self._canonical = pathlib.Path(lock_file).resolve()
        self.timeout = timeout
        self.blocking = blocking
        self._transaction_lock = threading.Lock()  # one acquisition at a time per instance
        self._internal_lock = threading.Lock()     # the fields below
        self._lock_level = 0
        self._current_mode: Optional[Mode] = None
        self._write_thread_id: Optional[int] = None
        self._con: Optional[sqlite3.Connection] = None
        self._hf: Optional[Lock] = None
        self._fence = 0
        self._closed = False
        # as py-filelock: the database is made (and checked) by the constructor
        sqlite3.connect(str(self._canonical), timeout=5.0).close()

    # -- what holdfast adds ---------------------------------------------------
    @property
    def holdfast_path(self) -> str:
        """holdfast's directory lock beside lock_file (RW1)."""
        return str(self._canonical) + SUFFIX

    @property
    def holders(self) -> List[Dict[str, Any]]:
        """Every front holder's record (RW3): holdfast's "holders" of
        holdfast_path, with an acquirer waiting at it ("waiting": 1)."""
        try:
            return Lock.holders(self.holdfast_path)
        except FileNotFoundError:
            return []

    @property
    def fence(self) -> int:
        """This instance's holdfast fence while it holds (0 otherwise):
        greater than every fence of a holder it waited for."""
        return self._fence

    @property
    def mode(self) -> Optional[Mode]:
        """"read" or "write" while held, else None."""
        return self._current_mode

    # -- py-filelock's verbs --------------------------------------------------
    def acquire_read(self, timeout: float = -1, *, blocking: bool = True):
        """A shared read lock (reentrant; RuntimeError while this instance
        holds the write lock). Raises Timeout."""
        return self._acquire("read", timeout, blocking)

    def acquire_write(self, timeout: float = -1, *, blocking: bool = True):
        """An exclusive write lock (reentrant in its thread; RuntimeError
        while this instance holds a read lock or another thread its write
        lock). Raises Timeout."""
        return self._acquire("write", timeout, blocking)

    @contextlib.contextmanager
    def read_lock(self, timeout: Optional[float] = None, *,
                  blocking: Optional[bool] = None) -> Iterator[None]:
        """acquire_read() for a with block (None: the instance's defaults)."""
        self.acquire_read(self.timeout if timeout is None else timeout,
                          blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            self.release()

    @contextlib.contextmanager
    def write_lock(self, timeout: Optional[float] = None, *,
                   blocking: Optional[bool] = None) -> Iterator[None]:
        """acquire_write() for a with block (None: the instance's defaults)."""
        self.acquire_write(self.timeout if timeout is None else timeout,
                           blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            self.release()

    def release(self, *, force: bool = False) -> None:
        """One level off; at zero the SQLite transaction ends and holdfast's
        lock is released (RW1). force: all levels. RuntimeError when nothing
        is held (unless force)."""
        self._release(force=force, close=False)

    def close(self) -> None:
        """Release everything; the instance refuses to acquire afterwards."""
        self._release(force=True, close=True)

    def _release_in_context(self, body: Optional[BaseException]) -> None:
        self.release()

    # -- the mechanism ----------------------------------------------------------
    def _raise_if_closed(self) -> None:
        if self._closed:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")

    def _validate_reentrant(self, mode: Mode):
        if self._current_mode != mode:
            opposite = "write" if mode == "read" else "read"
            direction = "downgrade" if mode == "read" else "upgrade"
            raise RuntimeError(
                "Cannot acquire %s lock on %s (lock id: %d): already holding a %s lock "
                "(%s not allowed)" % (mode, self.lock_file, id(self), opposite, direction))
        if mode == "write" and threading.get_ident() != self._write_thread_id:
            raise RuntimeError(
                "Cannot acquire write lock on %s (lock id: %d) from thread %d while it is held "
                "by thread %s" % (self.lock_file, id(self), threading.get_ident(),
                                  self._write_thread_id))
        self._lock_level += 1
        return _front().AcquireReturnProxy(self)  # type: ignore[arg-type]

    def _acquire(self, mode: Mode, timeout: float, blocking: bool, cancel_fd: Optional[int] = None):
        self._raise_if_closed()
        with self._internal_lock:
            if self._lock_level > 0:
                return self._validate_reentrant(mode)
        start = time.monotonic()
        _check_timeout(timeout)  # a bad timeout: ValueError before any wait
        if not blocking:
            got = self._transaction_lock.acquire(blocking=False)
        elif timeout == -1:
            got = self._transaction_lock.acquire()
        else:
            got = self._transaction_lock.acquire(timeout=timeout)
        if not got:
            raise _front().Timeout(self.lock_file)
        try:
            self._raise_if_closed()
            with self._internal_lock:  # another thread of this instance got it meanwhile
                if self._lock_level > 0:
                    return self._validate_reentrant(mode)
            self._take(mode, timeout, blocking, start, cancel_fd)
            with self._internal_lock:
                self._current_mode = mode
                self._lock_level = 1
                self._write_thread_id = threading.get_ident() if mode == "write" else None
            return _front().AcquireReturnProxy(self)  # type: ignore[arg-type]
        finally:
            self._transaction_lock.release()

    def _handle(self, mode: Mode) -> Lock:
        hf = self._hf
        if hf is None or hf.mode != ("shared" if mode == "read" else "exclusive"):
            if hf is not None:
                hf.close()
            hf = Lock(self.holdfast_path, shared=mode == "read")
            hf._set(L.HF_OPT_MAX_HOLD_MS, L.HF_MAX_HOLD_NONE)  # RW4
            self._hf = hf
        return hf

    def _take(self, mode: Mode, timeout: float, blocking: bool, start: float,
              cancel_fd: Optional[int]) -> None:
        """RW1, RW5: holdfast's lock, then SQLite's, within one timeout."""
        fl = _front()
        hf = self._handle(mode)
        if not blocking:
            wait: Optional[float] = 0
        elif timeout == -1:
            wait = None
        else:
            wait = max(timeout - (time.monotonic() - start), 0.0)
        try:
            hf.acquire(wait=wait, cancel_fd=cancel_fd)
        except HoldfastOSError as e:
            if e.errno != errno.EDEADLK:
                raise
            # RW6: another instance of this thread holds what this one waits for
            if wait is None:
                raise RuntimeError("Deadlock: %s is held by another ReadWriteLock instance in "
                                   "this thread" % self.lock_file) from None
            raise fl.Timeout(self.lock_file, e.holder) from None
        except HoldfastError as e:
            if e.code in ("held", "timed_out"):
                raise fl.Timeout(self.lock_file, e.holder) from None
            raise
        try:
            self._con = self._begin(mode, timeout, blocking, start, cancel_fd)
        except BaseException:
            with contextlib.suppress(HoldfastError, HoldfastOSError):
                hf.release()
            raise
        self._fence = hf.fence

    def _begin(self, mode: Mode, timeout: float, blocking: bool, start: float,
               cancel_fd: Optional[int] = None) -> sqlite3.Connection:
        """py-filelock's SQLite lock on lock_file (RW1): its transaction,
        open until the release.  SQLite's busy handler is off; the front
        waits itself (RW7)."""
        deadline: Optional[float]
        if not blocking:
            deadline = start  # one try
        elif timeout == -1:
            deadline = None
        else:
            deadline = start + timeout
        con = sqlite3.connect(str(self._canonical), timeout=0, isolation_level=None,
                              check_same_thread=False, cached_statements=0)
        try:
            con.execute("PRAGMA busy_timeout=0").close()
            self._execute(con, "PRAGMA journal_mode=MEMORY", deadline, cancel_fd)
            if mode == "write":
                self._execute(con, "BEGIN EXCLUSIVE TRANSACTION", deadline, cancel_fd)
            else:
                con.execute("BEGIN TRANSACTION").close()
                self._execute(con, "SELECT name FROM sqlite_schema LIMIT 1", deadline, cancel_fd)
        except _Busy:
            with contextlib.suppress(sqlite3.Error):
                con.close()
            pids = [p for p in _posix_holders(self.lock_file) if p != os.getpid()]
            holder = {"pid": pids[0], "comm": _front()._comm(pids[0])} if pids else None
            raise _front().Timeout(self.lock_file, holder) from None
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                con.close()
            raise
        return con

    def _execute(self, con: sqlite3.Connection, sql: str, deadline: Optional[float],
                 cancel_fd: Optional[int]) -> None:
        """RW7: run sql until SQLite stops answering SQLITE_BUSY, sleeping
        between the tries as SQLite's own busy handler does, but in a wait
        that ends at once when cancel_fd turns readable (HF_ECANCELED, an
        async cancellation) or a signal's handler raises (Ctrl-C).  _Busy
        once deadline (monotonic) has passed; None: forever."""
        tries = 0
        while True:
            try:
                cur = con.execute(sql)
                cur.fetchall()
                cur.close()
                return
            except sqlite3.OperationalError as e:
                if not _is_busy(e):
                    raise
            delay = _BUSY_DELAYS_S[min(tries, len(_BUSY_DELAYS_S) - 1)]
            tries += 1
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Busy()
                delay = min(delay, left)
            if cancel_fd is None:
                time.sleep(delay)  # a signal's handler runs here (PEP 475)
            elif select.select([cancel_fd], [], [], delay)[0]:
                raise make_error(L.HF_ECANCELED, self.lock_file)

    def _release(self, *, force: bool, close: bool) -> None:
        with self._transaction_lock, self._internal_lock:
            if self._lock_level == 0:
                if force:
                    if close:
                        self._drop_handle()
                    return
                raise RuntimeError("Cannot release a lock on %s (lock id: %d) that is not held"
                                   % (self.lock_file, id(self)))
            if not force and self._lock_level > 1:
                self._lock_level -= 1
                return
            con, self._con = self._con, None
            self._lock_level = 0
            self._current_mode = None
            self._write_thread_id = None
            self._fence = 0
            try:
                if con is not None:
                    try:
                        if con.in_transaction:
                            con.rollback()
                    finally:
                        con.close()
            finally:
                hf = self._hf
                if hf is not None and hf.held:
                    try:
                        hf.release()
                    finally:
                        if close:
                            self._drop_handle()
                elif close:
                    self._drop_handle()

    def _drop_handle(self) -> None:
        self._closed = True
        if self._hf is not None:
            self._hf.close()
            self._hf = None

    def __del__(self) -> None:
        con = getattr(self, "_con", None)
        if con is not None:
            with contextlib.suppress(Exception):
                con.close()
        hf = getattr(self, "_hf", None)
        if hf is not None:
            with contextlib.suppress(Exception):
                hf.close()

    def __repr__(self) -> str:
        return "<%s %r %s>" % (type(self).__name__, self.lock_file,
                               self._current_mode or "not held")


class AsyncAcquireReadWriteReturnProxy:
    """What AsyncReadWriteLock.acquire_*() returns: `async with` releases."""

    def __init__(self, lock: "AsyncReadWriteLock") -> None:
        self.lock = lock

    async def __aenter__(self) -> "AsyncReadWriteLock":
        return self.lock

    async def __aexit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.lock.release()


class AsyncReadWriteLock:
    """ReadWriteLock for asyncio, as py-filelock's: every verb runs on an
    executor (by default one thread of its own, shut down by close()).  A
    cancelled acquisition ends holdfast's wait at once (HF_OPT_CANCEL_FD) or
    SQLite's (interrupt), and nothing stays held."""

    def __init__(self, lock_file: Union[str, "os.PathLike[str]"], timeout: float = -1, *,
                 blocking: bool = True, is_singleton: bool = True,
                 loop: Optional[asyncio.AbstractEventLoop] = None,
                 executor: Optional[futures.Executor] = None) -> None:
        self._lock = ReadWriteLock(lock_file, timeout, blocking=blocking, is_singleton=is_singleton)
        self._loop = loop
        self._owns_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1)
        self._closed = False

    lock_file = property(lambda self: self._lock.lock_file)
    timeout = property(lambda self: self._lock.timeout)
    blocking = property(lambda self: self._lock.blocking)
    loop = property(lambda self: self._loop)
    executor = property(lambda self: self._executor)
    holders = property(lambda self: self._lock.holders)
    fence = property(lambda self: self._lock.fence)

    @contextlib.asynccontextmanager
    async def read_lock(self, timeout: Optional[float] = None, *,
                        blocking: Optional[bool] = None) -> AsyncIterator[None]:
        await self.acquire_read(self.timeout if timeout is None else timeout,
                                blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            await self.release()

    @contextlib.asynccontextmanager
    async def write_lock(self, timeout: Optional[float] = None, *,
                         blocking: Optional[bool] = None) -> AsyncIterator[None]:
        await self.acquire_write(self.timeout if timeout is None else timeout,
                                 blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            await self.release()

    async def acquire_read(self, timeout: float = -1, *,
                           blocking: bool = True) -> AsyncAcquireReadWriteReturnProxy:
        await self._run_acquire("read", timeout, blocking)
        return AsyncAcquireReadWriteReturnProxy(self)

    async def acquire_write(self, timeout: float = -1, *,
                            blocking: bool = True) -> AsyncAcquireReadWriteReturnProxy:
        await self._run_acquire("write", timeout, blocking)
        return AsyncAcquireReadWriteReturnProxy(self)

    async def release(self, *, force: bool = False) -> None:
        await self._run(functools.partial(self._lock.release, force=force))

    async def close(self) -> None:
        if self._closed:
            return
        try:
            await self._run(self._lock.close)
        except asyncio.CancelledError:
            # RW8: the close ran to its end (_run waited for it); the executor
            # this instance made goes too, without waiting for its thread
            self._closed = True
            if self._owns_executor:
                self._executor.shutdown(wait=False)
            raise
        self._closed = True
        if self._owns_executor:
            await asyncio.get_running_loop().run_in_executor(
                None, functools.partial(self._executor.shutdown, wait=True))

    def _submit(self, fn):
        return (self._loop or asyncio.get_running_loop()).run_in_executor(self._executor, fn)

    async def _run(self, fn):
        fut = self._submit(fn)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            await _settle(fut)
            raise

    async def _run_acquire(self, mode: Mode, timeout: float, blocking: bool) -> None:
        if self._closed:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            job = self._executor.submit(self._lock._acquire, mode, timeout, blocking, r)
            fut = asyncio.wrap_future(job, loop=self._loop or asyncio.get_running_loop())
            try:
                await asyncio.shield(fut)
            except asyncio.CancelledError:
                if job.cancel():  # RW9: still queued, never to run: nothing to undo
                    raise
                os.write(w, b"x")  # ends holdfast's wait, or SQLite's (RW7)
                ok = await _settle(fut)
                if ok:
                    await _settle(self._submit(self._lock.release))
                raise
        finally:
            os.close(r)
            os.close(w)

    def __del__(self) -> None:
        if getattr(self, "_owns_executor", False):
            self._executor.shutdown(wait=False)


async def _settle(fut) -> bool:
    """Wait for fut whatever further cancellations; True when it succeeded."""
    while not fut.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait([fut])
    return not fut.cancelled() and fut.exception() is None


__all__ = ["AsyncAcquireReadWriteReturnProxy", "AsyncReadWriteLock", "ReadWriteLock"]
