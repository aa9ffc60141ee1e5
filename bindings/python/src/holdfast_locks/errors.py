"""Exceptions: one class per outcome of holdfast.h.

Every exception carries
  rc      the library's return code (a negative int: HF_E* or -errno),
  code    its stable name from hf_error_name() ("held", "timed_out",
          "ENOENT", ...) - the vocabulary of the CLI's JSON and the C API,
  holder  the record the library returned with the failure (a dict: the
          holder's "pid", "host", "comm", "acquired", ... or the "reason"),
          or None,
  path    the lock, session file, pod or file concerned (or None).
The message is hf_strerror(rc), the path, and who holds it.

The classes (docs/outcomes.md is the table of every outcome in every
language; tests/test_outcomes.py checks this module against it):
  an HF_E* outcome   its own class: Held, TimedOut (also a TimeoutError),
                     Unsafe (also a PermissionError), NotHeld, ...
  a negated errno    the subclass of HoldfastOSError that is also the
                     built-in class Python itself raises for that errno
                     (PEP 3151; OSError(errno.ENOENT, ...) is a
                     FileNotFoundError): ENOENT raises
                     HoldfastFileNotFoundError, so `except
                     FileNotFoundError` catches it; an errno Python has no
                     class for (EIO, EINVAL, EDEADLK, ...) raises
                     HoldfastOSError itself. .errno, .strerror, .filename
                     are set as OSError's are.
Held is deliberately not a BlockingIOError: BlockingIOError is the errno
EAGAIN of a non-blocking I/O call (it carries characters_written, and code
that catches it retries the I/O), while Held is a decision of the lock's
protocol about another holder; nor is it an OSError at all (no errno, and
`except OSError` handlers treat their catch as an I/O failure).
"""

from __future__ import annotations

import errno as _errno
import json
from typing import Any, Dict, Optional, Type

from . import _lib as L


def rec_dict(rec) -> Optional[Dict[str, Any]]:
    """An hf_rec (a pointer, may be NULL) as a dict, by hf_rec_json."""
    if not rec:
        return None
    text = L.lib().hf_rec_json(rec)
    if text is None:
        return None
    return json.loads(text.decode("utf-8", "surrogateescape"))


def describe_holder(holder: Optional[Dict[str, Any]]) -> str:
    """"pid 42 (make) on box, since 2026-...", from a holder record."""
    if not holder:
        return ""
    who = []
    if "pid" in holder:
        who.append("pid %s" % holder["pid"])
    if holder.get("comm"):
        who.append("(%s)" % holder["comm"])
    if holder.get("name") and "pid" in holder and "scope" in holder:
        who.insert(0, "pod %s" % holder["name"])
    if holder.get("lane"):
        who.insert(0, "lane %s" % holder["lane"])
    if holder.get("host"):
        who.append("on %s" % holder["host"])
    since = holder.get("acquired") or holder.get("started") or holder.get("registered")
    if since:
        who.append("since %s" % since)
    if not who and holder.get("reason"):
        return "reason: %s" % holder["reason"]
    text = " ".join(who)
    if holder.get("reason"):
        text += " (reason: %s)" % holder["reason"]
    return text


class HoldfastError(Exception):
    """Base of every holdfast failure."""

    rc: int
    code: str
    holder: Optional[Dict[str, Any]]
    path: Optional[str]

    def __init__(self, rc: int, path: Optional[str] = None,
                 holder: Optional[Dict[str, Any]] = None, what: Optional[str] = None) -> None:
        self.rc = rc
        self.code = L.lib().hf_error_name(rc).decode()
        self.holder = holder
        self.path = path
        self.strerror_text = L.lib().hf_strerror(rc).decode()
        msg = self.strerror_text
        if what:
            msg = "%s: %s" % (what, msg)
        if path is not None:
            msg = "%s: %s" % (path, msg)
        desc = describe_holder(holder)
        if desc and rc == L.HF_EHELD:
            msg = msg.replace("held by another", "held by %s" % desc)
        elif desc:
            msg += "; held by %s" % desc if rc in _HELD_LIKE else "; %s" % desc
        Exception.__init__(self, msg)
        self.message = msg

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return (_rebuild, (type(self), self.rc, self.path, self.holder))


def _rebuild(cls, rc, path, holder):
    return cls(rc, path, holder)


class Held(HoldfastError):
    """HF_EHELD: held by another (one try); .holder says who."""


class Unreadable(HoldfastError):
    """HF_EUNREADABLE: a record or the registry is unreadable; .holder["reason"]."""


class NotHeld(HoldfastError):
    """HF_ENOTHELD: nothing to release / not held."""


class NotYours(HoldfastError):
    """HF_ENOTYOURS: held, but by another lane, token or pod."""


class TimedOut(HoldfastError, TimeoutError):
    """HF_ETIMEDOUT: the wait reached its deadline; .holder is the last seen."""


class Conflict(HoldfastError):
    """HF_ECONFLICT: a scope overlaps another pod's write scope."""


class Unsafe(HoldfastError, PermissionError):
    """HF_EUNSAFE: refused for permissions or safety."""


class Barrier(HoldfastError):
    """HF_EBARRIER: a claim beside the lock denies entry."""


class Lost(HoldfastError):
    """HF_ELOST: the caller's lock or scope is gone."""


class Canceled(HoldfastError):
    """HF_ECANCELED: the wait was cancelled through HF_OPT_CANCEL_FD."""


class HoldfastOSError(HoldfastError, OSError):
    """A negated errno from the library; .errno is the errno value."""

    def __init__(self, rc: int, path: Optional[str] = None,
                 holder: Optional[Dict[str, Any]] = None, what: Optional[str] = None) -> None:
        HoldfastError.__init__(self, rc, path, holder, what)
        self.errno = -rc
        self.strerror = self.strerror_text
        self.filename = path

    def __str__(self) -> str:
        return self.message



# One class per built-in OSError subclass that Python maps an errno to
# (PEP 3151): HoldfastOSError first, so .code/.rc/.holder/.path and the
# message are holdfast's; the built-in second, for `except ItsBuiltin`.
class HoldfastBlockingIOError(HoldfastOSError, BlockingIOError):
    """EAGAIN (EWOULDBLOCK), EALREADY, EINPROGRESS."""


class HoldfastChildProcessError(HoldfastOSError, ChildProcessError):
    """ECHILD."""


class HoldfastBrokenPipeError(HoldfastOSError, BrokenPipeError):
    """EPIPE, ESHUTDOWN."""


class HoldfastConnectionAbortedError(HoldfastOSError, ConnectionAbortedError):
    """ECONNABORTED."""


class HoldfastConnectionRefusedError(HoldfastOSError, ConnectionRefusedError):
    """ECONNREFUSED."""


class HoldfastConnectionResetError(HoldfastOSError, ConnectionResetError):
    """ECONNRESET."""


class HoldfastFileExistsError(HoldfastOSError, FileExistsError):
    """EEXIST."""


class HoldfastFileNotFoundError(HoldfastOSError, FileNotFoundError):
    """ENOENT."""


class HoldfastInterruptedError(HoldfastOSError, InterruptedError):
    """EINTR."""


class HoldfastIsADirectoryError(HoldfastOSError, IsADirectoryError):
    """EISDIR."""


class HoldfastNotADirectoryError(HoldfastOSError, NotADirectoryError):
    """ENOTDIR."""


class HoldfastPermissionError(HoldfastOSError, PermissionError):
    """EACCES, EPERM."""


class HoldfastProcessLookupError(HoldfastOSError, ProcessLookupError):
    """ESRCH."""


class HoldfastTimeoutError(HoldfastOSError, TimeoutError):
    """ETIMEDOUT (an errno of the system, e.g. etcd's connection; a wait
    reaching its deadline is TimedOut)."""


_OS_CLASSES = (HoldfastBlockingIOError, HoldfastChildProcessError, HoldfastBrokenPipeError,
               HoldfastConnectionAbortedError, HoldfastConnectionRefusedError,
               HoldfastConnectionResetError, HoldfastFileExistsError, HoldfastFileNotFoundError,
               HoldfastInterruptedError, HoldfastIsADirectoryError, HoldfastNotADirectoryError,
               HoldfastPermissionError, HoldfastProcessLookupError, HoldfastTimeoutError)
_BY_BUILTIN: Dict[type, Type[HoldfastError]] = {c.__bases__[1]: c for c in _OS_CLASSES}


def _os_class(err: int) -> Type[HoldfastError]:
    """The class for errno err: the one whose built-in base is what Python's
    own OSError(err, ...) becomes (its errno table, PEP 3151)."""
    return _BY_BUILTIN.get(type(OSError(err, "")), HoldfastOSError)


_HELD_LIKE = {L.HF_EHELD, L.HF_ETIMEDOUT, L.HF_ENOTYOURS, L.HF_ECONFLICT, L.HF_ELOST,
              L.HF_ECANCELED, -_errno.EDEADLK}

_BY_RC: Dict[int, Type[HoldfastError]] = {
    L.HF_EHELD: Held,
    L.HF_EUNREADABLE: Unreadable,
    L.HF_ENOTHELD: NotHeld,
    L.HF_ENOTYOURS: NotYours,
    L.HF_ETIMEDOUT: TimedOut,
    L.HF_ECONFLICT: Conflict,
    L.HF_EUNSAFE: Unsafe,
    L.HF_EBARRIER: Barrier,
    L.HF_ELOST: Lost,
    L.HF_ECANCELED: Canceled,
}


def error_class(rc: int) -> Type[HoldfastError]:
    if rc in _BY_RC:
        return _BY_RC[rc]
    if -4096 <= rc < 0:
        return _os_class(-rc)
    return HoldfastError


def make_error(rc: int, path: Optional[str] = None, holder: Optional[Dict[str, Any]] = None,
               what: Optional[str] = None) -> HoldfastError:
    return error_class(rc)(rc, path, holder, what)


def check(rc: int, path: Optional[str] = None, holder_rec=None, what: Optional[str] = None) -> int:
    """rc when >= 0, else raise its exception (with the holder record)."""
    if rc >= 0:
        return rc
    raise make_error(rc, path, rec_dict(holder_rec) if holder_rec else None, what)


def strerror(rc: int) -> str:
    return L.lib().hf_strerror(rc).decode()


def error_name(rc: int) -> str:
    return L.lib().hf_error_name(rc).decode()
