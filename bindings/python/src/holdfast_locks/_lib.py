"""Loading libholdfast with ctypes and declaring its public API.

Only functions of include/holdfast.h are declared, each with its argument
and result types; every handle and record is an opaque pointer (c_void_p),
so no struct layout of the library is copied here.

Lookup order: $HOLDFAST_LIB (a path to the shared object; when set, the
only one tried), then the library the wheel carries (CARRIED: compiled into
the package by build_backend/holdfast_pep517.py), then
ctypes.util.find_library("holdfast"), then pkg-config's libdir for
"holdfast", then the loader's own path. The library's hf_version() must have
the major version this binding was written for and at least its minor
version.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import threading
from ctypes import (
    POINTER,
    c_char_p,
    c_int,
    c_int64,
    c_long,
    c_size_t,
    c_uint64,
    c_void_p,
)
from typing import Optional

#: The library version this binding was written against (holdfast.h 0.2).
API_VERSION = (0, 2)

HF_EHELD = -4097
HF_EUNREADABLE = -4098
HF_ENOTHELD = -4099
HF_ENOTYOURS = -4100
HF_ETIMEDOUT = -4101
HF_ECONFLICT = -4102
HF_EUNSAFE = -4103
HF_EBARRIER = -4104
HF_ELOST = -4105
HF_ECANCELED = -4106

HF_OPT_WAIT_MS = 1
HF_OPT_STALE_MS = 2
HF_OPT_MAX_HOLD_MS = 3
HF_OPT_PID = 4
HF_OPT_CANCEL_FD = 5
HF_OPT_LOCK_WAIT_MS = 6
HF_OPT_GENERATION = 7
HF_OPT_TTL_MS = 8
HF_OPT_TIMEOUT_MS = 9
HF_OPT_CHAIN_PID = 10
HF_OPT_THREAD = 11
HF_OPT_LEASE_MS = 12
HF_OPT_DEPTH = 13
HF_OPT_MODE = 14
HF_OPT_SLOTS = 15
HF_OPT_OWNER = 100
HF_OPT_REGISTRY = 101
HF_OPT_SOCKET = 102
HF_OPT_FROM = 103
HF_OPT_BACKEND = 104
HF_OPT_ETCD_USER = 105
HF_OPT_ETCD_PASSWORD_FILE = 106
HF_OPT_ETCD_CA_FILE = 107
HF_OPT_REASON = 108

#: HF_OPT_MODE's values (enum hf_lock_mode) and HF_OPT_SLOTS's bound.
HF_MODE_EXCLUSIVE = 0
HF_MODE_SHARED = 1
HF_MODE_SLOTS = 2
HF_SLOTS_MAX = 1024
#: HF_OPT_MAX_HOLD_MS: never leaked while its owner lives.
HF_MAX_HOLD_NONE = (1 << 63) - 1
#: A mode's name in records ("mode") by its value.
HF_MODE_NAMES = ("exclusive", "shared", "slots")

HF_SCOPE_STATES = ("free", "held", "yours", "outside", "lost")

_P = c_void_p
_PP = POINTER(c_void_p)

# name: (restype, argtypes)
_SIGNATURES = {
    "hf_version": (c_char_p, []),
    "hf_strerror": (c_char_p, [c_int]),
    "hf_error_name": (c_char_p, [c_int]),
    "hf_rec_json": (c_char_p, [_P]),
    "hf_rec_free": (None, [_P]),
    "hf_lock_new": (c_int, [c_char_p, _PP]),
    "hf_lock_set": (c_int, [_P, c_int, c_int64]),
    "hf_lock_set_str": (c_int, [_P, c_int, c_char_p]),
    "hf_lock_query": (c_int, [_P, _PP]),
    "hf_lock_acquire": (c_int, [_P]),
    "hf_lock_release": (c_int, [_P]),
    "hf_lock_adopt": (c_int, [_P, c_char_p]),
    "hf_lock_check": (c_int, [_P]),
    "hf_lock_renew": (c_int, [_P]),
    "hf_lock_detach": (c_int, [_P]),
    "hf_lock_token": (c_char_p, [_P]),
    "hf_lock_fence": (c_uint64, [_P]),
    "hf_lock_fd": (c_int, [_P]),
    "hf_lock_holder": (_P, [_P]),
    "hf_lock_hold": (c_int, [_P]),
    "hf_lock_unhold": (None, [_P]),
    "hf_lock_free": (None, [_P]),
    "hf_lock_status": (c_int, [c_char_p, _PP]),
    "hf_edit_open": (c_int, [_P, c_char_p, _PP, _PP]),
    "hf_edit_fd": (c_int, [_P]),
    "hf_edit_commit": (c_int, [_P, c_char_p, c_size_t]),
    "hf_edit_notes": (_P, [_P]),
    "hf_edit_free": (None, [_P]),
    "hf_session_new": (c_int, [c_char_p, c_char_p, _PP]),
    "hf_session_set": (c_int, [_P, c_int, c_int64]),
    "hf_session_set_str": (c_int, [_P, c_int, c_char_p]),
    "hf_session_take": (c_int, [_P]),
    "hf_session_release": (c_int, [_P]),
    "hf_session_owner": (c_char_p, [_P]),
    "hf_session_holder": (_P, [_P]),
    "hf_session_free": (None, [_P]),
    "hf_session_status": (c_int, [c_char_p, c_int64, _PP]),
    "hf_session_default_path": (c_int, [c_char_p, c_size_t]),
    "hf_scope_new": (c_int, [c_char_p, _PP]),
    "hf_scope_add": (c_int, [_P, c_char_p]),
    "hf_scope_set": (c_int, [_P, c_int, c_int64]),
    "hf_scope_set_str": (c_int, [_P, c_int, c_char_p]),
    "hf_scope_register": (c_int, [_P]),
    "hf_scope_release": (c_int, [_P]),
    "hf_scope_detach": (c_int, [_P]),
    "hf_scope_renew": (c_int, [_P]),
    "hf_scope_generation": (c_uint64, [_P]),
    "hf_scope_fd": (c_int, [_P]),
    "hf_scope_holder": (_P, [_P]),
    "hf_scope_free": (None, [_P]),
    "hf_scope_canonical": (c_int, [c_char_p, c_char_p, c_size_t]),
    "hf_path_canonical": (c_int, [c_char_p, c_char_p, c_size_t]),
    "hf_registry_path": (c_int, [c_char_p, c_size_t]),
    "hf_registry_read": (c_int, [c_char_p, _PP, _PP]),
    "hf_registry_reap": (c_int, [c_char_p, _PP, _PP]),
    "hf_registry_count": (c_size_t, [_P]),
    "hf_registry_generation": (c_uint64, [_P]),
    "hf_registry_get": (_P, [_P, c_size_t]),
    "hf_registry_find": (c_long, [_P, c_char_p]),
    "hf_registry_effective": (c_int, [_P, c_char_p, _PP]),
    "hf_registry_check": (c_int, [_P, c_char_p, c_char_p, c_uint64, _PP]),
    "hf_registry_free": (None, [_P]),
}


#: The library an installed wheel carries, next to this file (absent in the
#: source tree: PYTHONPATH=src uses HOLDFAST_LIB or an installed library).
CARRIED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libholdfast.so.%d" % API_VERSION[0])


class LibraryNotFound(ImportError):
    """libholdfast could not be found or is not a compatible version."""


def _candidates() -> list:
    env = os.environ.get("HOLDFAST_LIB")
    if env:
        return [env]  # an explicit choice is the only one tried
    out = []
    if os.path.isfile(CARRIED):
        out.append(CARRIED)
    found = ctypes.util.find_library("holdfast")
    if found:
        out.append(found)
    try:
        libdir = subprocess.run(
            ["pkg-config", "--variable=libdir", "holdfast"],
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        libdir = ""
    if libdir:
        out.append(os.path.join(libdir, "libholdfast.so.%d" % API_VERSION[0]))
        out.append(os.path.join(libdir, "libholdfast.so"))
    out.append("libholdfast.so.%d" % API_VERSION[0])  # the loader's own path
    return out


def parse_version(text: str) -> tuple:
    parts = text.split(".")
    try:
        return tuple(int(p) for p in parts[:3])
    except ValueError:
        raise LibraryNotFound("libholdfast reports an unparsable version %r" % text) from None


def compatible(version: tuple) -> bool:
    """Same major version, and at least the minor one this binding needs."""
    return len(version) >= 2 and version[0] == API_VERSION[0] and version[1] >= API_VERSION[1]


def _declare(lib: ctypes.CDLL) -> None:
    for name, (res, args) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


_lib: Optional[ctypes.CDLL] = None
_lib_lock = threading.Lock()
path: Optional[str] = None


def lib() -> ctypes.CDLL:
    """The loaded library (loaded and checked on first use)."""
    global _lib, path
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        errors = []
        for cand in _candidates():
            try:
                handle = ctypes.CDLL(cand, use_errno=False)
            except OSError as e:
                errors.append("%s: %s" % (cand, e))
                continue
            try:
                _declare(handle)
            except AttributeError as e:
                errors.append("%s: not libholdfast %d.%d (%s)" % (cand, API_VERSION[0], API_VERSION[1], e))
                continue
            ver = handle.hf_version().decode()
            if not compatible(parse_version(ver)):
                errors.append("%s: version %s, this binding needs %d.%d or a later %d.x"
                              % (cand, ver, API_VERSION[0], API_VERSION[1], API_VERSION[0]))
                continue
            _lib = handle
            path = cand
            return handle
        raise LibraryNotFound(
            "libholdfast not found or not compatible (set HOLDFAST_LIB to its path): "
            + ("; ".join(errors) or "no candidate"))


def version() -> str:
    """The loaded library's version (hf_version())."""
    return lib().hf_version().decode()


def enc(s) -> Optional[bytes]:
    if s is None:
        return None
    return os.fsencode(s)


def dec(b: Optional[bytes]) -> Optional[str]:
    if b is None:
        return None
    return os.fsdecode(b)
