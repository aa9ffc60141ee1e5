"""holdfast_locks: Python binding of libholdfast - cooperating processes
excluding each other through the file system.

    from holdfast_locks import Lock, Session, Scope, Held

    with Lock("build.lock", wait=30) as lk:
        print("fence", lk.fence)

Everything goes through the library's public API (include/holdfast.h) with
ctypes: nothing to compile. The library is found through $HOLDFAST_LIB,
ctypes.util.find_library("holdfast") or pkg-config; its version is checked
when first used (library_version()).
"""

from __future__ import annotations

from ._lib import API_VERSION, LibraryNotFound
from ._lib import version as library_version
from ._wait import FOREVER
from .errors import (
    Barrier,
    Canceled,
    Conflict,
    Held,
    HoldfastBlockingIOError,
    HoldfastBrokenPipeError,
    HoldfastChildProcessError,
    HoldfastConnectionAbortedError,
    HoldfastConnectionRefusedError,
    HoldfastConnectionResetError,
    HoldfastError,
    HoldfastFileExistsError,
    HoldfastFileNotFoundError,
    HoldfastInterruptedError,
    HoldfastIsADirectoryError,
    HoldfastNotADirectoryError,
    HoldfastOSError,
    HoldfastPermissionError,
    HoldfastProcessLookupError,
    HoldfastTimeoutError,
    Lost,
    NotHeld,
    NotYours,
    TimedOut,
    Unreadable,
    Unsafe,
    error_name,
    strerror,
)
from .lock import Edit, Lock
from .scope import Registry, Scope, canonical_path, canonical_spec, registry_path
from .session import Session
from .session import default_path as session_default_path

__version__ = "0.2.0"

__all__ = [
    "API_VERSION", "Barrier", "Canceled", "Conflict", "Edit", "FOREVER", "Held",
    "HoldfastBlockingIOError", "HoldfastBrokenPipeError", "HoldfastChildProcessError",
    "HoldfastConnectionAbortedError", "HoldfastConnectionRefusedError",
    "HoldfastConnectionResetError", "HoldfastError", "HoldfastFileExistsError",
    "HoldfastFileNotFoundError", "HoldfastInterruptedError", "HoldfastIsADirectoryError",
    "HoldfastNotADirectoryError", "HoldfastOSError", "HoldfastPermissionError",
    "HoldfastProcessLookupError", "HoldfastTimeoutError", "LibraryNotFound", "Lock", "Lost", "NotHeld",
    "NotYours", "Registry", "Scope", "Session", "TimedOut", "Unreadable", "Unsafe",
    "canonical_path", "canonical_spec", "error_name", "library_version", "registry_path",
    "session_default_path", "strerror",
]
