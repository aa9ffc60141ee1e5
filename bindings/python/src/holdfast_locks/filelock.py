"""py-filelock's API on py-filelock's own lock file, with holdfast's record.

    from holdfast_locks.filelock import FileLock, Timeout

    lock = FileLock("build.lock", timeout=10)
    with lock:
        ...

THE PEER'S LOCK IS THE LOCK.  FileLock takes exactly the lock py-filelock's
FileLock (UnixFileLock) takes: flock(2) LOCK_EX on `lock_file`, opened
O_RDWR|O_CREAT|O_NOFOLLOW and never unlinked, so a py-filelock process and a
process on this front exclude each other on one path, in both directions.
SoftFileLock is py-filelock's existence marker (O_CREAT|O_EXCL, "pid\\nhost\\n"
content, removed on release), so the two soft locks exclude each other too.

holdfast adds, inside the lock file and only while holding it (py-filelock
truncates the file when it wins and never reads it):

  FL1  the holder's record: one JSON line {"pid","host","comm","acquired",
       "acquired_us","fence","tool"} written over the file's old content (the
       pwrite lands first, the ftruncate to its length second, so the file is
       never empty while a front holder holds it).
  FL2  the fence: max(previous front holder's fence + 1, wall clock in µs),
       the wall clock alone when no record was there (a fresh file, or a
       py-filelock holder truncated it).  A cycle takes more than 1 µs, so the
       fence grows at every front acquisition; it can repeat only when the
       wall clock is stepped back while a py-filelock holder erased the record.
  FL3  a Timeout names the holder: the record when its pid is the flock
       holder in /proc/locks, else the /proc/locks pid (a plain py-filelock
       holder), else nothing.
  FL4  the record is left in place on release (py-filelock leaves the file
       too): it is the next holder's fence source, and a record proves nothing
       by itself - only the flock says who holds.
  FL5  an on_acquired hook owns the file's content: no record is written
       (py-filelock's empty file).
  FL6  SoftFileLock breaks a marker only when it names a dead owner on this
       host (or is older than lifetime=): an unreadable or empty marker (a
       py-filelock < 3.10 holder, or any writer between create and write) is
       never judged dead, and a marker moved aside that is not the one judged
       (a new holder's) is linked back at once.  Both are where py-filelock
       3.32 admits two holders; here the cost is a wait, never an overlap.
  FL7  flock failing ENOSYS (a filesystem without it) with fallback_to_soft:
       the file the try opened is unlinked (that inode only) before the
       SoftFileLock try, which would otherwise wait forever on it.
  FL8  a release is committed once the unlock is done: a close failing
       after it raises that exact error with is_locked False, the count 0
       and the thread's entry dropped; a failing unlock keeps all three.
  FL9  two failures at once (body or on_acquired hook, then release; the
       SoftFileLock close, then the marker's removal) are raised as sibling
       leaves of one (Base)ExceptionGroup "... both failed", raised from
       None; every implicit __context__ under them that would show a leaf
       (or a member of one, itself, or a group alike in shape) again is cut,
       others kept.  The walk is iterative and visits each exception once.
  FL10 a subclass may implement the lock by py-filelock's _acquire/_release
       (see "the mechanism" below); async ones may be coroutine functions.
  FL11 the self-deadlock registry entry (per thread, per task for asyncio)
       is removed from the acquiring thread's registry by any release.

The hot path is pure Python syscalls (os.open, fcntl.flock, os.fstat,
os.pread, os.pwrite, os.ftruncate): no call into libholdfast, so this module
works without the library.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import inspect
import json
import logging
import math
import os
import socket
import stat
import sys
import threading
import time
import warnings
import weakref
from concurrent import futures
from types import TracebackType
from typing import Any, Callable, Dict, Literal, NoReturn, Optional, Type, Union

__all__ = [
    "AcquireReturnProxy", "AsyncAcquireReturnProxy", "AsyncFileLock", "AsyncSoftFileLock",
    "AsyncUnixFileLock", "BaseAsyncFileLock", "BaseFileLock", "CloseErrorPolicy",
    "ContextErrorPolicy", "FileLock", "SoftFileLock", "SoftFileLockLifetimeWarning", "Timeout",
    "UnixFileLock", "has_fcntl", "holder_of", "lock_descriptor", "unlock_descriptor",
    "ReadWriteLock", "AsyncReadWriteLock", "AsyncAcquireReadWriteReturnProxy",
]

#: py-filelock logs on this logger; so does the front, with the same messages.
_LOGGER = logging.getLogger("filelock")

ContextErrorPolicy = Literal["chain", "group"]
CloseErrorPolicy = Literal["default", "raise", "suppress"]
has_fcntl = True

_UNSET_MODE = -1
_BUSY = frozenset((errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES))
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_RECORD_MAX = 4096
_TOOL = "holdfast_locks.filelock"


class Timeout(TimeoutError):
    """The lock could not be acquired within the timeout (or at once, when
    not blocking).  .lock_file is the lock; .holder the holder's record (a
    dict: "pid", and "host", "comm", "acquired", "fence" when the holder is
    a front process) when it could be found (FL3), else None."""

    def __init__(self, lock_file: str, holder: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        self._lock_file = lock_file
        self.holder = holder

    def __reduce__(self):
        if self.holder is None:
            return self.__class__, (self._lock_file,)
        return self.__class__, (self._lock_file, self.holder)

    def __str__(self) -> str:
        who = describe(self.holder)
        if who:
            return "The file lock '%s' could not be acquired: held by %s." % (self._lock_file, who)
        return "The file lock '%s' could not be acquired." % self._lock_file

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self._lock_file)

    @property
    def lock_file(self) -> str:
        return self._lock_file


class SoftFileLockLifetimeWarning(DeprecationWarning):
    """SoftFileLock(lifetime=...) lets a waiter break a live holder's marker."""


def describe(holder: Optional[Dict[str, Any]]) -> str:
    """"pid 42 (make) on box since ...", from a holder dict."""
    if not holder or "pid" not in holder:
        return ""
    text = "pid %s" % holder["pid"]
    if holder.get("comm"):
        text += " (%s)" % holder["comm"]
    if holder.get("host"):
        text += " on %s" % holder["host"]
    if holder.get("acquired"):
        text += " since %s" % holder["acquired"]
    return text


# -- the record (FL1) ---------------------------------------------------------

class _Me:
    """This process's constant part of the record, made once per pid."""
    pid = 0
    head = ""
    host = ""
    marker = b""  # SoftFileLock's content: py-filelock's "pid\nhost\nstart-token\n"


def _me() -> _Me:
    pid = os.getpid()
    if _Me.pid != pid:
        host = socket.gethostname()
        try:
            with open("/proc/self/comm", "rb") as f:
                comm = f.read().decode("utf-8", "replace").strip()
        except OSError:
            comm = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        _Me.head = '{"pid":%d,"host":%s,"comm":%s,"tool":"%s",' % (
            pid, json.dumps(host), json.dumps(comm), _TOOL)
        _Me.host = host
        tok = _start_token(pid)
        _Me.marker = ("%d\n%s\n" % (pid, host) + ("%d\n" % tok if tok is not None else "")).encode()
        _Me.pid = pid
    return _Me


def _previous_fence(old: bytes) -> int:
    i = old.find(b'"fence":')
    if i < 0:
        return 0
    j = i + 8
    k = j
    while k < len(old) and 48 <= old[k] <= 57:
        k += 1
    return int(old[j:k]) if k > j else 0


def _next_fence(old: bytes) -> int:
    """FL2: the previous front holder's fence + 1, at least the wall clock in µs."""
    now_us = int(time.time() * 1e6)
    prev = _previous_fence(old) if old else 0
    return prev + 1 if prev >= now_us else now_us


def _write_record(fd: int) -> int:
    """Over the file's old content, as its holder (FL1); returns the fence (FL2)."""
    old = os.pread(fd, _RECORD_MAX, 0)
    now = time.time()
    now_us = int(now * 1e6)
    prev = _previous_fence(old) if old else 0
    fence = prev + 1 if prev >= now_us else now_us
    rec = ('%s"acquired":"%s.%06dZ","acquired_us":%d,"fence":%d}\n' % (
        _me().head, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)), now_us % 1000000,
        now_us, fence)).encode()
    n = os.pwrite(fd, rec, 0)
    os.ftruncate(fd, n)
    return fence


def _flock_holders(st: os.stat_result) -> list:
    """The pids /proc/locks shows holding a FLOCK on st's inode."""
    key = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids = []
    try:
        with open("/proc/locks", "r") as f:
            for line in f:
                w = line.split()
                if "->" in w:
                    continue  # a waiter, not a holder
                if len(w) >= 6 and w[1] == "FLOCK" and w[5] == key:
                    pids.append(int(w[4]))
    except (OSError, ValueError):
        pass
    return pids


def _comm(pid: int) -> str:
    try:
        with open("/proc/%d/comm" % pid, "rb") as f:
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def holder_of(lock_file: Union[str, "os.PathLike[str]"]) -> Optional[Dict[str, Any]]:
    """Who holds the flock on lock_file (FL3): the front's record when its pid
    holds it, {"pid", "comm"} for another holder (e.g. py-filelock), or None
    when nobody visible does.  For a SoftFileLock marker: its pid and host."""
    path = os.fspath(lock_file)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        data = os.pread(fd, _RECORD_MAX, 0) if stat.S_ISREG(st.st_mode) else b""
    finally:
        os.close(fd)
    rec: Optional[Dict[str, Any]] = None
    if data.startswith(b"{"):
        with contextlib.suppress(ValueError):
            rec = json.loads(data.decode("utf-8", "replace"))
    pids = _flock_holders(st)
    if pids:
        if rec is not None and rec.get("pid") in pids:
            return rec
        return {"pid": pids[0], "comm": _comm(pids[0])}
    marker = _parse_marker(data)
    if marker is not None:
        return {"pid": marker[0], "host": marker[1], "comm": _comm(marker[0])
                if marker[1] == socket.gethostname() else ""}
    return None


# -- contexts, registries -----------------------------------------------------

class _Context:
    def __init__(self, lock_file: str, timeout: float, mode: int, blocking: bool,
                 poll_interval: float, lifetime: Optional[float], run_in_executor: bool = True,
                 executor: Optional[futures.Executor] = None,
                 loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        self.lock_file = lock_file
        self.timeout = timeout
        self.mode = mode
        self.blocking = blocking
        self.poll_interval = poll_interval
        self.lifetime = lifetime
        self.run_in_executor = run_in_executor
        self.executor = executor
        self.loop = loop
        self.lock_file_fd: Optional[int] = None
        self.lock_counter = 0
        self.fence = 0
        self.key: Optional[str] = None
        self.held: Optional[Dict[Any, int]] = None  # the registry the key is in


class _LocalContext(_Context, threading.local):
    """Each thread sees its own copy, made from the constructor's values."""


class _Held(threading.local):
    def __init__(self) -> None:
        self.held: Dict[Any, int] = {}


#: The locks this thread (or task) holds, by canonical path: an indefinite
#: wait for one of them through another object could never end.
_held = _Held()


def _canonical(path: str) -> str:
    parent, name = os.path.split(path)
    return os.path.join(os.path.realpath(parent or os.curdir), name)


def _check_lifetime(value: Optional[float]) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("lifetime must be a finite non-negative number or None, not %s"
                        % type(value).__name__)
    if value < 0 or not math.isfinite(value):
        raise ValueError("lifetime must be finite and non-negative, not %r" % (value,))
    return value


class _Meta(type):
    """is_singleton=True: one object per canonical path and class; the same
    arguments or ValueError."""

    def __call__(cls, lock_file, timeout=-1, mode=_UNSET_MODE, thread_local=None, *,
                 is_singleton=False, **kw):
        if thread_local is None:
            thread_local = cls._thread_local_default
        if "context_error_policy" in kw and kw["context_error_policy"] not in ("chain", "group"):
            raise ValueError("context_error_policy must be 'chain' or 'group', got %r"
                             % (kw["context_error_policy"],))
        if "close_error_policy" in kw and kw["close_error_policy"] not in (
                "default", "raise", "suppress"):
            raise ValueError("close_error_policy must be 'default', 'raise', or 'suppress', got %r"
                             % (kw["close_error_policy"],))
        if kw.get("preserve_lock_file") and not cls._keeps_path:
            raise ValueError("preserve_lock_file=True is not supported by %s: unlinking its marker "
                             "is how it releases" % cls.__name__)
        if kw.get("on_acquired") is not None and not cls._keeps_path:
            raise ValueError("on_acquired is not supported by %s: only native locks expose the "
                             "lock descriptor" % cls.__name__)
        if kw.get("run_in_executor", True) and thread_local and issubclass(cls, BaseAsyncFileLock):
            raise ValueError("run_in_executor is not supported when thread_local is True")
        if not is_singleton:
            return cls._construct(lock_file, timeout, mode, thread_local, False, kw)
        key = _canonical(os.fspath(lock_file))
        with cls._instances_mu:
            inst = cls._instances.get(key)
            if inst is None:
                inst = cls._construct(lock_file, timeout, mode, thread_local, True, kw)
                cls._instances[key] = inst
                return inst
        want = dict(thread_local=thread_local, timeout=timeout, mode=mode, **kw)
        have = inst._arguments()
        diff = {k: (have.get(k), v) for k, v in want.items()
                if k in have and (have[k] is not v if callable(v) else have[k] != v)}
        if diff:
            raise ValueError("Singleton lock instances cannot be initialized with differing "
                             "arguments\nNon-matching arguments: " + "".join(
                                 "\n\t%s (existing lock has %s but %s was passed)" % (k, a, b)
                                 for k, (a, b) in diff.items()))
        return inst


    def _construct(cls, lock_file, timeout, mode, thread_local, is_singleton, kw):
        """A subclass's __init__ may take fewer parameters than ours (as
        virtualenv's does): pass it those it takes; a non-default value for
        one it does not take is a TypeError."""
        args = dict(timeout=timeout, mode=mode, thread_local=thread_local,
                    is_singleton=is_singleton, **kw)
        sig = cls.__dict__.get("_sig_cache")
        if sig is None:
            ps = inspect.signature(cls.__init__).parameters.values()
            sig = (any(p.kind is p.VAR_KEYWORD for p in ps),
                   frozenset(p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)))
            type.__setattr__(cls, "_sig_cache", sig)
        if sig[0]:
            return type.__call__(cls, lock_file, **args)
        defaults = dict(timeout=-1, mode=_UNSET_MODE, thread_local=cls._thread_local_default,
                        is_singleton=False)
        extra = sorted(k for k, v in args.items() if k not in sig[1]
                       and k in defaults and v != defaults[k] and not (k == "is_singleton"))
        extra += sorted(k for k in kw if k not in sig[1])
        if extra:
            raise TypeError("%s does not support non-default lock options: %s"
                            % (cls.__name__, ", ".join(extra)))
        return type.__call__(cls, lock_file, **{k: v for k, v in args.items() if k in sig[1]})


class AcquireReturnProxy:
    """What acquire() returns: a context manager releasing the lock once."""

    def __init__(self, lock: "BaseFileLock") -> None:
        self.lock = lock

    def __enter__(self) -> "BaseFileLock":
        return self.lock

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.lock._release_in_context(v)


def _missed(ident: int, path: str, blocking: bool, cancel_check: Optional[Callable[[], bool]],
            timeout: float, start: float, poll_interval: float) -> None:
    """After a try that did not get the lock, as py-filelock logs it: raise
    Timeout when the caller does not wait, cancelled, or out of time (by
    the monotonic clock since start); else the wait of poll_interval is
    logged and the caller sleeps it."""
    if not blocking:
        _LOGGER.debug("Failed to immediately acquire lock %s on %s", ident, path)
        raise Timeout(path, holder_of(path))
    if cancel_check is not None and cancel_check():
        _LOGGER.debug("Cancellation requested for lock %s on %s", ident, path)
        raise Timeout(path, holder_of(path))
    if 0 <= timeout < time.monotonic() - start:
        _LOGGER.debug("Timeout on acquiring lock %s on %s", ident, path)
        raise Timeout(path, holder_of(path))
    _LOGGER.debug("Lock %s not acquired on %s, waiting %s seconds ...", ident, path,
                  poll_interval)


def _setting(name: str, convert: Callable[[Any], Any] = lambda v: v) -> property:
    """A property reading and writing the context's field name (set through
    convert)."""
    return property(lambda self: getattr(self._context, name),
                    lambda self, v: setattr(self._context, name, convert(v)))


def _option(attr: str) -> property:
    """A read-only property returning self.<attr>."""
    return property(lambda self: getattr(self, attr))


class BaseFileLock(contextlib.ContextDecorator, metaclass=_Meta):
    """A reentrant lock on lock_file with py-filelock 3.32's API.  Subclasses
    say how the file is locked: FileLock (flock) or SoftFileLock (marker)."""

    _thread_local_default = True
    _keeps_path = True          # release leaves the path (flock) or unlinks it (marker)
    _lifetime_ok = False
    _deadlock_holder_desc = "FileLock instance in this thread"
    _instances: "weakref.WeakValueDictionary[str, BaseFileLock]"
    _instances_mu: threading.RLock

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._instances = weakref.WeakValueDictionary()
        cls._instances_mu = threading.RLock()

    def __init__(self, lock_file: Union[str, "os.PathLike[str]"], timeout: float = -1,
                 mode: int = _UNSET_MODE, thread_local: bool = True, *, blocking: bool = True,
                 is_singleton: bool = False, poll_interval: float = 0.05,
                 lifetime: Optional[float] = None, context_error_policy: str = "chain",
                 close_error_policy: str = "default", fallback_to_soft: bool = True,
                 preserve_lock_file: bool = False,
                 on_acquired: Optional[Callable[[int], None]] = None) -> None:
        lifetime = self._resolve_lifetime(lifetime, 4)
        self._pid = os.getpid()
        self._is_thread_local = bool(thread_local)
        self._is_singleton = bool(is_singleton)
        self._context_error_policy = context_error_policy
        self._close_error_policy = close_error_policy
        self._fallback_to_soft = fallback_to_soft
        self._preserve_lock_file = preserve_lock_file
        self._on_acquired = on_acquired
        self._shared_mu = threading.RLock()
        self._context = self._make_context(os.fspath(lock_file), timeout, mode, blocking,
                                           poll_interval, lifetime)

    def _make_context(self, *args: Any) -> _Context:
        return (_LocalContext if self._is_thread_local else _Context)(*args)

    def _resolve_lifetime(self, lifetime: Optional[float], stacklevel: int) -> Optional[float]:
        lifetime = _check_lifetime(lifetime)
        if lifetime is None:
            return None
        if not self._lifetime_ok:
            warnings.warn("lifetime is ignored for %s: a native OS lock cannot be broken safely by "
                          "file age; only SoftFileLock supports lifetime-based expiry"
                          % type(self).__name__, stacklevel=stacklevel)
            return None
        warnings.warn("%s(lifetime=...) uses age-based expiry and can overlap a live holder"
                      % type(self).__name__, SoftFileLockLifetimeWarning, stacklevel=stacklevel)
        return lifetime

    def _arguments(self) -> Dict[str, Any]:
        c = self._context
        return dict(thread_local=self._is_thread_local, timeout=c.timeout, mode=c.mode,
                    blocking=c.blocking, poll_interval=c.poll_interval, lifetime=c.lifetime,
                    context_error_policy=self._context_error_policy,
                    close_error_policy=self._close_error_policy,
                    fallback_to_soft=self._fallback_to_soft,
                    preserve_lock_file=self._preserve_lock_file, on_acquired=self._on_acquired)

    # -- py-filelock's properties ------------------------------------------
    def is_thread_local(self) -> bool:
        return self._is_thread_local

    # the constructor's options, read-only as in py-filelock
    is_singleton = _option("_is_singleton")
    context_error_policy = _option("_context_error_policy")
    close_error_policy = _option("_close_error_policy")
    fallback_to_soft = _option("_fallback_to_soft")
    preserve_lock_file = _option("_preserve_lock_file")
    on_acquired = _option("_on_acquired")

    @property
    def lock_file(self) -> str:
        return self._context.lock_file

    # this thread's (or the instance's) settings, as py-filelock has them
    timeout = _setting("timeout", float)
    blocking = _setting("blocking")
    poll_interval = _setting("poll_interval")

    @property
    def lifetime(self) -> Optional[float]:
        return self._context.lifetime

    @lifetime.setter
    def lifetime(self, value: Optional[float]) -> None:
        self._context.lifetime = self._resolve_lifetime(value, 3)

    @property
    def mode(self) -> int:
        m = self._context.mode
        return 0o644 if m == _UNSET_MODE else m

    @property
    def has_explicit_mode(self) -> bool:
        return self._context.mode != _UNSET_MODE

    def _open_mode(self) -> int:
        m = self._context.mode
        return 0o666 if m == _UNSET_MODE else m

    @property
    def is_locked(self) -> bool:
        return self._context.lock_file_fd is not None

    @property
    def lock_counter(self) -> int:
        return self._context.lock_counter

    # -- holdfast's extras ---------------------------------------------------
    @property
    def fence(self) -> int:
        """This context's acquisition's fence (FL2; 0 when not held, and for
        SoftFileLock)."""
        return self._context.fence if self._context.lock_file_fd is not None else 0

    @property
    def holder(self) -> Optional[Dict[str, Any]]:
        """Who holds lock_file now (holder_of), whoever it is."""
        return holder_of(self.lock_file)

    # -- verbs -------------------------------------------------------------
    def acquire(self, timeout: Optional[float] = None, poll_interval: Optional[float] = None, *,
                poll_intervall: Optional[float] = None, blocking: Optional[bool] = None,
                cancel_check: Optional[Callable[[], bool]] = None) -> AcquireReturnProxy:
        """Acquire (or count one more).  timeout: None the default; < 0 forever;
        0 one try; > 0 seconds.  Raises Timeout (naming the holder, FL3);
        RuntimeError when another object of this thread holds the path and
        the wait would never end; OSError subclasses as os.open raises them."""
        c = self._context
        if timeout is None:
            timeout = c.timeout
        if blocking is None:
            blocking = c.blocking
        if poll_intervall is not None:
            warnings.warn("use poll_interval instead of poll_intervall", DeprecationWarning,
                          stacklevel=2)
            poll_interval = poll_intervall
        if poll_interval is None:
            poll_interval = c.poll_interval
        if self._is_thread_local:
            self._acquire_ctx(c, timeout, blocking, poll_interval, cancel_check)
        else:
            with self._shared_mu:
                self._acquire_ctx(c, timeout, blocking, poll_interval, cancel_check)
        return AcquireReturnProxy(lock=self)

    def _scope_key(self, canonical: str) -> Any:
        return canonical

    def _canonical(self) -> str:
        """lock_file with its directory resolved (the self-deadlock key),
        made once per object: the hot path makes no realpath."""
        k = self.__dict__.get("_canon")
        if k is None:
            k = self.__dict__["_canon"] = _canonical(self._context.lock_file)
        return k

    def _refuse_self_deadlock(self, c: _Context, timeout: float, blocking: bool) -> Any:
        """The lock's key in this thread (or task); RuntimeError when another
        instance of this thread already holds it and this one would wait
        forever for it (py-filelock's self-deadlock)."""
        key = self._scope_key(self._canonical())
        other = _held.held.get(key)
        if other is not None and other != id(self) and timeout < 0 and blocking:
            raise RuntimeError("Deadlock: lock '%s' is already held by a different %s. Use "
                               "is_singleton=True to enable reentrant locking across instances."
                               % (c.lock_file, self._deadlock_holder_desc))
        return key

    def _acquired(self, c: _Context, key: Any) -> None:
        """The lock was just taken for context c: count it once and enter it in
        this thread's self-deadlock registry (sync and async acquires alike)."""
        _LOGGER.debug("Lock %s acquired on %s", id(self), c.lock_file)
        c.lock_counter = 1
        c.key = key
        c.held = _held.held
        c.held[key] = id(self)

    def _acquire_ctx(self, c: _Context, timeout: float, blocking: bool, poll_interval: float,
                     cancel_check: Optional[Callable[[], bool]]) -> None:
        if c.lock_file_fd is not None:
            c.lock_counter += 1
            return
        key = self._refuse_self_deadlock(c, timeout, blocking)
        start = time.monotonic()
        ident, path = id(self), c.lock_file
        while True:
            _LOGGER.debug("Attempting to acquire lock %s on %s", ident, path)
            if self._try(c):
                break
            _missed(ident, path, blocking, cancel_check, timeout, start, poll_interval)
            time.sleep(poll_interval)
        self._acquired(c, key)
        if self._on_acquired is not None:
            try:
                self._on_acquired(c.lock_file_fd)
            except BaseException as hook_err:
                try:
                    self.release(force=True)
                except BaseException as err:
                    _raise_group(_BODY_AND_RELEASE, hook_err, err)
                raise

    def release(self, force: bool = False) -> None:
        """Count one release; the lock is released when the count reaches 0,
        or at once with force.  Nothing held: a no-op."""
        if self._is_thread_local:
            self._release_ctx(self._context, force)
        else:
            with self._shared_mu:
                self._release_ctx(self._context, force)

    def _release_ctx(self, c: _Context, force: bool) -> None:
        if c.lock_file_fd is None or self._pid != os.getpid():
            return
        if c.lock_counter > 1 and not force:
            c.lock_counter -= 1
            return
        ident, path = id(self), c.lock_file
        _LOGGER.debug("Attempting to release lock %s on %s", ident, path)
        try:
            self._unlock(c)  # raises with the lock still held when the unlock failed
        finally:
            self._commit_release(c)
        _LOGGER.debug("Lock %s released on %s", ident, path)

    def _commit_release(self, c: _Context) -> None:
        # FL8: once the unlock is done (lock_file_fd cleared) the release is
        # committed, even when closing the descriptor then fails: the close
        # error surfaces with the lock released and the count 0.
        if c.lock_file_fd is None:
            c.lock_counter = 0
            # FL11: the entry is dropped from the registry of the thread that
            # acquired, whichever thread (an executor's, for an async lock)
            # or task releases.
            if c.key is not None and c.held is not None and c.held.get(c.key) == id(self):
                del c.held[c.key]
            c.key = None
            c.held = None

    def _close(self, fd: int, suppress_by_default: bool) -> None:
        try:
            os.close(fd)
        except OSError:
            p = self._close_error_policy
            if p == "suppress" or (p == "default" and suppress_by_default):
                return
            raise

    def _release_in_context(self, body: Optional[BaseException]) -> None:
        try:
            self.release()
        except BaseException as err:
            if body is None or self._context_error_policy == "chain":
                raise
            _raise_group(_BODY_AND_RELEASE, body, err)

    def __enter__(self) -> "BaseFileLock":
        self.acquire()
        return self

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self._release_in_context(v)

    def __del__(self) -> None:
        if vars(self).get("_pid") != os.getpid():
            return
        with contextlib.suppress(Exception):
            self.release(force=True)

    def __repr__(self) -> str:
        return "<%s %r locked=%s counter=%d>" % (type(self).__name__, self.lock_file,
                                                 self.is_locked, self.lock_counter)

    # -- the mechanism -------------------------------------------------------
    # A subclass of BaseFileLock (or BaseAsyncFileLock) may implement the
    # lock as py-filelock's subclasses do (FL10): _acquire() sets
    # self._context.lock_file_fd when it got the lock (else the wait goes
    # on), _release() clears it; for an async lock either may be a
    # coroutine function, awaited in the loop.  The front's own classes
    # implement _try/_unlock instead.
    def _try(self, c: _Context) -> bool:
        self._acquire()
        return c.lock_file_fd is not None

    def _unlock(self, c: _Context) -> None:
        self._release()

    def _acquire(self) -> None:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError


_BODY_AND_RELEASE = "lock body and release both failed"
_CLOSE_AND_UNLINK = "lock descriptor close and marker cleanup both failed"


def _inside(roots) -> set:
    """The ids of roots and of every exception nested in their groups."""
    ids: set = set()
    todo = list(roots)
    while todo:
        e = todo.pop()
        if id(e) not in ids:
            ids.add(id(e))
            if isinstance(e, BaseExceptionGroup):
                todo.extend(e.exceptions)
    return ids


def _same_shape(a: BaseException, b: BaseException) -> bool:
    """a and b render alike: the same object, or groups of one type and
    message whose members are pairwise alike (each pair compared once, so a
    graph that shares members costs its size, not its paths)."""
    todo = [(a, b)]
    compared: set = set()
    while todo:
        x, y = todo.pop()
        if x is y or (id(x), id(y)) in compared:
            continue
        compared.add((id(x), id(y)))
        if type(x) is not type(y) or not isinstance(x, BaseExceptionGroup) \
                or x.message != y.message or len(x.exceptions) != len(y.exceptions):
            return False
        todo.extend(zip(x.exceptions, y.exceptions))
    return True


def _detach_repeated_contexts(leaves) -> None:
    """FL9: cut every implicit __context__, anywhere under the leaves (through
    __context__, __cause__ and group members), that would render again
    what the group shows already: a leaf or a member of a leaf's group, the
    exception itself, or a group alike in shape (_same_shape).  Any other
    context is kept and walked.  Iterative, each exception visited once:
    a chain thousands deep or a shared graph 2^25 paths wide is linear."""
    shown = _inside(leaves)
    seen: set = set()
    todo = list(leaves)
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        ctx = e.__context__
        if ctx is not None:
            if ctx is e or id(ctx) in shown or _same_shape(e, ctx):
                e.__context__ = None
            else:
                todo.append(ctx)
        if e.__cause__ is not None:
            todo.append(e.__cause__)
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)


def _raise_group(message: str, *errors: BaseException) -> NoReturn:
    """Two failures that both happened (body or hook, then release; close,
    then unlink) as sibling leaves of one group, each rendered once: an
    ExceptionGroup when all are Exceptions, else a BaseExceptionGroup
    (a CancelledError or KeyboardInterrupt stays out of `except Exception`)."""
    _detach_repeated_contexts(errors)
    raise BaseExceptionGroup(message, errors) from None


def _make_parent(path: str) -> bool:
    """Make path's missing parent directories as py-filelock does; False when
    they all existed already."""
    parent = os.path.dirname(path)
    if not parent or os.path.isdir(parent):
        return False
    os.makedirs(parent, exist_ok=True)
    return True


class UnixFileLock(BaseFileLock):
    """flock(2) LOCK_EX on lock_file: py-filelock's FileLock on Linux, the same
    lock (so each excludes the other), with holdfast's record and fence in
    the file while held (FL1, FL2)."""

    def _open(self, path: str) -> Optional[int]:
        try:
            return os.open(path, _OPEN_FLAGS, self._open_mode())
        except FileNotFoundError:
            if path and _make_parent(path):
                return None  # made them: the caller tries again at once
            if path and os.path.isdir(os.path.dirname(path) or os.curdir):
                return None  # unlinked between lookup and create: contention
            raise
        except PermissionError:
            # a sticky directory refuses O_CREAT on another user's file
            if not os.path.lexists(path):
                raise
            try:
                return os.open(path, _OPEN_FLAGS & ~os.O_CREAT)
            except FileNotFoundError:
                return None

    def _try(self, c: _Context) -> bool:
        path = c.lock_file
        fd = self._open(path)
        if fd is None:
            fd = self._open(path)
            if fd is None:
                return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            opened = None
            with contextlib.suppress(OSError):
                st = os.fstat(fd)
                opened = (st.st_dev, st.st_ino)
            os.close(fd)
            if e.errno in _BUSY:
                return False
            if e.errno == errno.ENOSYS and self._fallback_to_soft and not self._preserve_lock_file \
                    and self._on_acquired is None:
                warnings.warn("flock not supported on this filesystem, falling back to SoftFileLock",
                              stacklevel=4)
                # FL7: the file this try opened is no marker: left there, it
                # would be a marker nobody owns and the soft lock would wait
                # on it forever. Only that inode is removed, not a successor.
                with contextlib.suppress(OSError):
                    st = os.lstat(path)
                    if opened == (st.st_dev, st.st_ino):
                        os.unlink(path)
                self.__class__ = AsyncSoftFileLock if isinstance(self, BaseAsyncFileLock) \
                    else SoftFileLock
                return self._try(c)
            raise
        try:
            if os.fstat(fd).st_nlink == 0:  # unlinked after our open: a dead inode
                os.close(fd)
                return False
            if self._on_acquired is None:
                c.fence = _write_record(fd)
            else:  # FL5: the hook owns the content: py-filelock's empty file, no record
                c.fence = _next_fence(os.pread(fd, _RECORD_MAX, 0))
                os.ftruncate(fd, 0)
            if self.has_explicit_mode:
                with contextlib.suppress(PermissionError):
                    os.fchmod(fd, c.mode)
        except BaseException:
            os.close(fd)
            raise
        c.lock_file_fd = fd
        return True

    def _unlock(self, c: _Context) -> None:
        fd = c.lock_file_fd
        fcntl.flock(fd, fcntl.LOCK_UN)
        c.lock_file_fd = None
        self._close(fd, True)


FileLock = UnixFileLock


# -- SoftFileLock: py-filelock's existence marker ---------------------------

def _parse_marker(data: bytes):
    lines = data.decode("utf-8", "replace").strip().splitlines() if data else []
    if len(lines) not in (2, 3):
        return None
    try:
        pid = int(lines[0])
        start = int(lines[2]) if len(lines) == 3 else None
    except ValueError:
        return None
    return (pid, lines[1], start) if 1 <= pid < 2 ** 31 else None


_BOOT_ID = 0
with contextlib.suppress(OSError, ValueError):
    with open("/proc/sys/kernel/random/boot_id") as _f:
        _BOOT_ID = int(_f.read().strip().replace("-", ""), 16)


def _start_token(pid: int) -> Optional[int]:
    """A process's start time (/proc/PID/stat field 22) with the boot id:
    a pid reused by another process gives another token."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            raw = f.read()
        return (_BOOT_ID << 64) | int(raw[raw.rfind(b")") + 1:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _marker_owner_dead(pid: int, host: str, start: Optional[int]) -> bool:
    if host != socket.gethostname():
        return False  # another host's process cannot be probed: it holds
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    if start is None:
        return False
    now = _start_token(pid)
    return now is not None and now != start


class SoftFileLock(BaseFileLock):
    """py-filelock's SoftFileLock: the lock is the existence of lock_file,
    made O_CREAT|O_EXCL, holding "pid\\nhost\\nstart-token\\n" as
    py-filelock's marker does, removed on release.  A marker whose same-host
    owner is gone (or whose pid was reused) is broken by the next try;
    lifetime= also breaks one older than that (and warns: it can overlap a
    live holder)."""

    _keeps_path = False
    _lifetime_ok = True

    def _try(self, c: _Context) -> bool:
        path = c.lock_file
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            if not st.st_mode & stat.S_IWUSR:
                raise PermissionError(errno.EACCES, "Permission denied", path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            try:
                fd = os.open(path, flags, self._open_mode())
            except FileNotFoundError:
                if not _make_parent(path):
                    raise
                fd = os.open(path, flags, self._open_mode())
        except FileExistsError:
            self._break_if_stale(c)
            return False
        try:
            os.write(fd, _me().marker)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        c.fence = 0
        c.lock_file_fd = fd
        return True

    def _break_if_stale(self, c: _Context) -> None:
        path = c.lock_file
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            with open(path, "rb") as f:
                data = f.read(1025)
            owner = _parse_marker(data)
            old = c.lifetime is not None and time.time() - st.st_mtime >= c.lifetime
            # FL6: a marker that cannot be read as "pid\nhost[\nstart]" is
            # never judged dead: py-filelock < 3.10 writes an empty marker
            # and every writer has a create-then-write window. py-filelock
            # 3.32 breaks one older than 2 s by the wall clock, which takes a
            # live old-version holder's lock; only lifetime= breaks it here.
            if old or (owner is not None and _marker_owner_dead(*owner)):
                # rename first: of two breakers only one moves this inode
                aside = "%s.break.%d.%s" % (path, os.getpid(), os.urandom(8).hex())
                os.rename(path, aside)
                st2 = os.lstat(aside)
                if st2.st_ino == st.st_ino and st2.st_mtime <= st.st_mtime:
                    os.unlink(aside)
                else:
                    # FL6: moved a marker it did not judge (a new holder's,
                    # made between the judgement and the rename): put it back
                    # without replacing anything (link fails on EEXIST), so
                    # its holder keeps the lock; py-filelock leaves it aside.
                    try:
                        os.link(aside, path)
                    finally:
                        os.unlink(aside)

    @property
    def pid(self) -> Optional[int]:
        """The marker's pid, None when there is no readable marker."""
        with contextlib.suppress(OSError):
            with open(self.lock_file, "rb") as f:
                owner = _parse_marker(f.read(1025))
            if owner is not None:
                return owner[0]
        return None

    @property
    def is_lock_held_by_us(self) -> bool:
        with contextlib.suppress(OSError):
            with open(self.lock_file, "rb") as f:
                owner = _parse_marker(f.read(1025))
            return owner is not None and owner[0] == os.getpid() and \
                owner[1] == socket.gethostname()
        return False

    def break_lock(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.lock_file)

    def _unlock(self, c: _Context) -> None:
        fd = c.lock_file_fd
        ident = None
        with contextlib.suppress(OSError):
            st = os.fstat(fd)
            ident = (st.st_dev, st.st_ino)
        c.lock_file_fd = None
        try:
            self._close(fd, False)
        except BaseException as close_err:
            try:
                self._unlink_marker(c.lock_file, ident)
            except BaseException as err:
                _raise_group(_CLOSE_AND_UNLINK, close_err, err)
            raise
        self._unlink_marker(c.lock_file, ident)

    @staticmethod
    def _unlink_marker(path: str, ident: Any) -> None:
        """Remove the marker this holder made, not a successor's (after a
        lifetime= break); one already gone is fine, another failure (the
        marker stays: the lock is not free) is raised."""
        try:
            st = os.lstat(path)
            if ident == (st.st_dev, st.st_ino):
                os.unlink(path)
        except FileNotFoundError:
            pass


# -- descriptors -------------------------------------------------------------

def lock_descriptor(fd: int, *, blocking: bool = True, poll_interval: float = 0.05) -> bool:
    """flock LOCK_EX an open descriptor (the lock FileLock takes): True when
    held; blocking=False: one try, False when another holds it."""
    if blocking and not (isinstance(poll_interval, (int, float)) and poll_interval > 0
                         and math.isfinite(poll_interval)):
        raise ValueError("poll_interval must be finite and greater than 0, not %r"
                         % (poll_interval,))
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in _BUSY:
                raise
        if not blocking:
            return False
        time.sleep(poll_interval)


def unlock_descriptor(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


# -- asyncio -----------------------------------------------------------------

class AsyncAcquireReturnProxy:
    """What an async acquire() returns: `async with` releases once."""

    def __init__(self, lock: "BaseAsyncFileLock") -> None:
        self.lock = lock

    async def __aenter__(self) -> "BaseAsyncFileLock":
        return self.lock

    async def __aexit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.lock._release_in_context_async(v)


class BaseAsyncFileLock(BaseFileLock):
    """py-filelock's asyncio lock: acquire()/release() are coroutines, each
    try runs in an executor (run_in_executor=True, the default) or in the
    loop; a wait sleeps with asyncio.sleep.  thread_local defaults to False."""

    _thread_local_default = False
    _deadlock_holder_desc = "task"

    def __init__(self, lock_file: Union[str, "os.PathLike[str]"], timeout: float = -1,
                 mode: int = _UNSET_MODE, thread_local: bool = False, *, blocking: bool = True,
                 is_singleton: bool = False, poll_interval: float = 0.05,
                 lifetime: Optional[float] = None, context_error_policy: str = "chain",
                 close_error_policy: str = "default", fallback_to_soft: bool = True,
                 preserve_lock_file: bool = False,
                 on_acquired: Optional[Callable[[int], None]] = None,
                 loop: Optional[asyncio.AbstractEventLoop] = None, run_in_executor: bool = True,
                 executor: Optional[futures.Executor] = None) -> None:
        self._async_extra = (run_in_executor, executor, loop)
        super().__init__(lock_file, timeout, mode, thread_local, blocking=blocking,
                         is_singleton=is_singleton, poll_interval=poll_interval,
                         lifetime=lifetime, context_error_policy=context_error_policy,
                         close_error_policy=close_error_policy,
                         fallback_to_soft=fallback_to_soft,
                         preserve_lock_file=preserve_lock_file, on_acquired=on_acquired)
        self._async_mu: Optional[asyncio.Lock] = None

    def _make_context(self, *args: Any) -> _Context:
        return (_LocalContext if self._is_thread_local else _Context)(*args, *self._async_extra)

    def _arguments(self) -> Dict[str, Any]:
        d = super()._arguments()
        c = self._context
        d.update(run_in_executor=c.run_in_executor, executor=c.executor, loop=c.loop)
        return d

    @property
    def run_in_executor(self) -> bool:
        return self._context.run_in_executor

    @property
    def executor(self) -> Optional[futures.Executor]:
        return self._context.executor

    @executor.setter
    def executor(self, value: Optional[futures.Executor]) -> None:
        self._context.executor = value

    @property
    def loop(self) -> Optional[asyncio.AbstractEventLoop]:
        return self._context.loop

    def _scope_key(self, canonical: str) -> Any:
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        return canonical if task is None else (id(task), canonical)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if not self._context.run_in_executor:
            return fn(*args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._context.executor, fn, *args)

    async def acquire(self, timeout: Optional[float] = None,  # type: ignore[override]
                      poll_interval: Optional[float] = None, *, blocking: Optional[bool] = None,
                      cancel_check: Optional[Callable[[], bool]] = None
                      ) -> AsyncAcquireReturnProxy:
        c = self._context
        timeout = c.timeout if timeout is None else timeout
        blocking = c.blocking if blocking is None else blocking
        poll_interval = c.poll_interval if poll_interval is None else poll_interval
        if c.lock_file_fd is not None:
            c.lock_counter += 1
            return AsyncAcquireReturnProxy(lock=self)
        key = self._refuse_self_deadlock(c, timeout, blocking)
        start = time.monotonic()
        ident, path = id(self), c.lock_file
        while True:
            _LOGGER.debug("Attempting to acquire lock %s on %s", ident, path)
            try:
                if inspect.iscoroutinefunction(self._acquire):  # FL10
                    await self._acquire()
                    got = c.lock_file_fd is not None
                else:
                    got = await self._run(self._try, c)
            except asyncio.CancelledError:
                if c.lock_file_fd is not None:  # the try won after we were cancelled
                    self._unlock(c)
                raise
            if got:
                break
            _missed(ident, path, blocking, cancel_check, timeout, start, poll_interval)
            await asyncio.sleep(poll_interval)
        self._acquired(c, key)
        if self._on_acquired is not None:
            try:
                await self._run(self._on_acquired, c.lock_file_fd)
            except BaseException as hook_err:
                try:
                    await self.release(force=True)
                except BaseException as err:
                    _raise_group(_BODY_AND_RELEASE, hook_err, err)
                raise
        return AsyncAcquireReturnProxy(lock=self)

    async def release(self, force: bool = False) -> None:  # type: ignore[override]
        c = self._context
        if c.lock_file_fd is None or self._pid != os.getpid():
            return
        if c.lock_counter > 1 and not force:
            c.lock_counter -= 1
            return
        if not inspect.iscoroutinefunction(self._release):
            await self._run(self._release_ctx, c, True)
            return
        ident, path = id(self), c.lock_file  # FL10: a coroutine _release, in the loop
        _LOGGER.debug("Attempting to release lock %s on %s", ident, path)
        try:
            await self._release()
        finally:
            self._commit_release(c)
        _LOGGER.debug("Lock %s released on %s", ident, path)

    async def _release_in_context_async(self, body: Optional[BaseException]) -> None:
        try:
            await self.release()
        except BaseException as err:
            if body is None or self._context_error_policy == "chain":
                raise
            _raise_group(_BODY_AND_RELEASE, body, err)

    def __enter__(self):
        raise NotImplementedError("Use `async with`: acquire/release are coroutines and cannot be "
                                  "awaited in a sync context manager.")

    def __exit__(self, t, v, tb):
        raise NotImplementedError("Use `async with`: acquire/release are coroutines and cannot be "
                                  "awaited in a sync context manager.")

    async def __aenter__(self) -> "BaseAsyncFileLock":
        await self.acquire()
        return self

    async def __aexit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self._release_in_context_async(v)

    def __del__(self) -> None:
        # the descriptor is closed synchronously: no loop is needed to free it
        if vars(self).get("_pid") != os.getpid():
            return
        with contextlib.suppress(Exception):
            BaseFileLock.release(self, force=True)


class AsyncUnixFileLock(UnixFileLock, BaseAsyncFileLock):
    """The flock lock (UnixFileLock) with the asyncio API."""


class AsyncSoftFileLock(SoftFileLock, BaseAsyncFileLock):
    """The marker lock (SoftFileLock) with the asyncio API."""


AsyncFileLock = AsyncUnixFileLock

# py-filelock's ReadWriteLock: its SQLite lock, holdfast's shared and
# exclusive holders beside it (RW1-RW6 in _read_write.py).  This needs
# libholdfast (loaded at the first construction); the locks above do not.
from ._read_write import (  # noqa: E402
    AsyncAcquireReadWriteReturnProxy, AsyncReadWriteLock, ReadWriteLock)
