"""Scopes (hf_scope, with delegation) and the registry (hf_registry)."""

from __future__ import annotations

import ctypes
import os
import threading
from types import TracebackType
from typing import Any, Dict, Iterable, List, Optional, Tuple, Type, Union

from . import _backend
from . import _lib as L
from ._wait import Seconds, cancellable, dur_ms, sync_wait, to_ms
from .errors import check, make_error, rec_dict
from .lock import PathLike


class Scope:
    """A pod's write/read scopes in the registry of their tree.

        with Scope("agent-1", ["/p/src:write:recursive"]) as pod:
            with pod.delegate("agent-1.a", ["/p/src/a:write:recursive"]):
                ...

    specs: "PATH:MODE[:recursive]". parent: the delegating pod (a name or a
    Scope): its effective scope must cover ours. wait (s): register()'s
    default for waiting out Held/Conflict; lock_wait (s): the bound on the
    registry's own lock; registry: the registry file (default
    $HOLDFAST_REGISTRY or the specs' tree's, hf_registry_path_for); socket: an absolute socket path
    to record; pid: whose life holds the registration; generation: release
    only this registration (one made elsewhere). lease (seconds, 1 s to
    365 days): held by no process but a lease - register, detach(), and
    renew() or release it by name from any later process (Scope(name,
    lease=...)); it ends that long after the registration or the last
    renewal, then is reaped, its scope back to its parent. close() (and the
    collector) releases a leased pod this process registered unless it was
    detached first. reason: why the pod registers (at most 256 bytes of
    text, no control characters), kept with the registration, shown in
    list and named by every refusal it causes ("holder_reason"). backend, etcd_user,
    etcd_password_file, etcd_ca_file, ttl, etcd_timeout: where the
    registration lives (default the registry file; "etcd://...": one key per
    pod in that etcd, on a lease; wait 0 only) and how to reach it
    (_backend.py)."""

    def __init__(self, name: str, specs: Iterable[str] = (), *,
                 parent: Union[None, str, "Scope"] = None, wait: Optional[Seconds] = 0,
                 lock_wait: Optional[Seconds] = None, registry: Optional[PathLike] = None,
                 socket: Optional[str] = None, pid: Optional[int] = None,
                 generation: Optional[int] = None, backend: Optional[str] = None,
                 etcd_user: Optional[str] = None,
                 etcd_password_file: Optional[_backend.StrPath] = None,
                 etcd_ca_file: Optional[_backend.StrPath] = None,
                 ttl: Optional[Seconds] = None, etcd_timeout: Optional[Seconds] = None,
                 lease: Optional[Seconds] = None, reason: Optional[str] = None) -> None:
        self._name = name
        self._wait = wait
        self._mu = threading.RLock()
        self._h = ctypes.c_void_p()
        self._registered = False
        self._registry = None if registry is None else os.fsdecode(os.fspath(registry))
        check(L.lib().hf_scope_new(name.encode(), ctypes.byref(self._h)), name)
        for spec in specs:
            self.add(spec)
        if isinstance(parent, Scope):
            parent = parent.name
        if parent is not None:
            self._set_str(L.HF_OPT_FROM, parent)
        if self._registry is not None:
            self._set_str(L.HF_OPT_REGISTRY, self._registry)
        if socket is not None:
            self._set_str(L.HF_OPT_SOCKET, socket)
        if lock_wait is not None:
            self._set(L.HF_OPT_LOCK_WAIT_MS, dur_ms(lock_wait, "lock_wait"))
        if pid is not None:
            self._set(L.HF_OPT_PID, int(pid))
        if generation is not None:
            self._set(L.HF_OPT_GENERATION, int(generation))
        if lease is not None:
            self._set(L.HF_OPT_LEASE_MS, dur_ms(lease, "lease"))
        if reason is not None:
            self._set_str(L.HF_OPT_REASON, reason, "reason")
        _backend.apply(self._set_str, self._set,
                       backend=backend, etcd_user=etcd_user,
                       etcd_password_file=etcd_password_file, etcd_ca_file=etcd_ca_file,
                       ttl=ttl, etcd_timeout=etcd_timeout)

    def _handle(self) -> ctypes.c_void_p:
        if not self._h:
            raise ValueError("%s: the scope handle is closed" % self._name)
        return self._h

    def _set(self, opt: int, value: int) -> None:
        with self._mu:
            self._check(L.lib().hf_scope_set(self._handle(), opt, value))

    def _set_str(self, opt: int, value: Optional[str], what: Optional[str] = None) -> None:
        with self._mu:
            self._check(L.lib().hf_scope_set_str(self._handle(), opt, L.enc(value)), what)

    def _check(self, rc: int, what: Optional[str] = None) -> int:
        if rc < 0:
            raise make_error(rc, self._name, rec_dict(L.lib().hf_scope_holder(self._h)),
                             "pod" if what is None else "pod: %s" % what)
        return rc

    @property
    def name(self) -> str:
        return self._name

    @property
    def registered(self) -> bool:
        return self._registered

    @property
    def generation(self) -> int:
        with self._mu:
            return int(L.lib().hf_scope_generation(self._handle()))

    @property
    def fd(self) -> int:
        """The registration's liveness descriptor (-1 when none)."""
        with self._mu:
            return int(L.lib().hf_scope_fd(self._handle()))

    @property
    def holder(self) -> Optional[Dict[str, Any]]:
        """After a failure: what went wrong (the conflicting pod's "name",
        "pid", "scope", our "request", "refused", ...)."""
        with self._mu:
            return rec_dict(L.lib().hf_scope_holder(self._handle()))

    def add(self, spec: str) -> None:
        """Add a spec "PATH:MODE[:recursive]" (checked for form only)."""
        with self._mu:
            self._check(L.lib().hf_scope_add(self._handle(), spec.encode()))

    def delegate(self, name: str, specs: Iterable[str] = (), **kw: Any) -> "Scope":
        """A child pod delegated from this one (same registry), not yet
        registered."""
        kw.setdefault("registry", self._registry)
        return Scope(name, specs, parent=self._name, **kw)

    def _register_rc(self, wait_ms: int, cancel_fd: Optional[int] = None) -> int:
        with self._mu:
            h = self._handle()
            rc = L.lib().hf_scope_set(h, L.HF_OPT_WAIT_MS, wait_ms)
            if rc == 0 and cancel_fd is not None:
                rc = L.lib().hf_scope_set(h, L.HF_OPT_CANCEL_FD, cancel_fd)
            if rc == 0:
                rc = L.lib().hf_scope_register(h)
            if cancel_fd is not None:
                L.lib().hf_scope_set(h, L.HF_OPT_CANCEL_FD, -1)
            if rc >= 0:
                self._registered = True
            return rc

    def register(self, wait: Optional[Seconds] = ...) -> "Scope":  # type: ignore[assignment]
        """Register every spec or none. Raises Held (the name is taken),
        Conflict (.holder: the overlapping pod), NotYours (outside the
        parent's effective scope), Lost (no such parent), TimedOut,
        Canceled, Unreadable, Unsafe, HoldfastOSError."""
        self._check(sync_wait(self._register_rc, to_ms(self._wait if wait is ... else wait)))
        return self

    async def register_async(self, wait: Optional[Seconds] = ...) -> "Scope":  # type: ignore[assignment]
        w = to_ms(self._wait if wait is ... else wait)

        def set_fd(fd: int) -> int:
            with self._mu:
                return L.lib().hf_scope_set(self._handle(), L.HF_OPT_CANCEL_FD, fd)

        self._check(await cancellable(set_fd, lambda: self._register_rc(w), self.release))
        return self

    def release(self) -> None:
        """Release the registration (its scope returns to its parent).
        Raises NotHeld, NotYours."""
        with self._mu:
            rc = L.lib().hf_scope_release(self._handle())
            self._registered = False
            self._check(rc)

    def renew(self, lease: Optional[Seconds] = None) -> None:
        """Renew the leased pod of this name (registered here or by any
        process; with generation=, only that registration): its lease now
        ends lease (default: the handle's lease=, else the pod's own length)
        from now; nothing else changes (hf_scope_renew). Raises NotHeld (no
        such pod), Lost (its lease had ended: it is reaped now), NotYours
        (the name is another registration's), HoldfastOSError EINVAL (the
        pod is not leased)."""
        with self._mu:
            h = self._handle()
            if lease is not None:
                self._set(L.HF_OPT_LEASE_MS, dur_ms(lease, "lease"))
            rc = L.lib().hf_scope_renew(h)
            if rc < 0 and self._registered and rc in (L.HF_ELOST, L.HF_ENOTHELD):
                self._registered = False
            self._check(rc)

    def detach(self) -> int:
        """Forget the registration without releasing it; its descriptor
        (the caller's now) or -1."""
        with self._mu:
            self._registered = False
            return int(L.lib().hf_scope_detach(self._handle()))

    def close(self) -> None:
        with self._mu:
            if self._h:
                L.lib().hf_scope_free(self._h)
                self._h = ctypes.c_void_p()
                self._registered = False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Scope":
        return self.register()

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self._registered:
            self.release()

    async def __aenter__(self) -> "Scope":
        return await self.register_async()

    async def __aexit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if self._registered:
            self.release()


def _take_reg(rc: int, reg: ctypes.c_void_p, err: ctypes.c_void_p, path: Optional[str]) -> None:
    lib = L.lib()
    if rc < 0:
        holder = rec_dict(err) if err else None
        if err:
            lib.hf_rec_free(err)
        raise make_error(rc, path or registry_path(), holder)


class Registry:
    """A read-only snapshot of the scope registry."""

    def __init__(self, handle: ctypes.c_void_p, path: Optional[str]) -> None:
        self._r = handle
        self.path = path or registry_path()

    @classmethod
    def read(cls, path: Optional[PathLike] = None) -> "Registry":
        p = None if path is None else os.fsdecode(os.fspath(path))
        reg, err = ctypes.c_void_p(), ctypes.c_void_p()
        rc = L.lib().hf_registry_read(L.enc(p), ctypes.byref(reg), ctypes.byref(err))
        _take_reg(rc, reg, err, p)
        return cls(reg, p)

    @classmethod
    def reap(cls, path: Optional[PathLike] = None) -> Tuple[int, "Registry"]:
        """Reap every pod proven dead: (how many, the reaped ones)."""
        p = None if path is None else os.fsdecode(os.fspath(path))
        reg, err = ctypes.c_void_p(), ctypes.c_void_p()
        rc = L.lib().hf_registry_reap(L.enc(p), ctypes.byref(reg), ctypes.byref(err))
        _take_reg(rc, reg, err, p)
        return rc, cls(reg, p)

    def _live(self) -> ctypes.c_void_p:
        if not self._r:
            raise ValueError("the registry snapshot is closed")
        return self._r

    @property
    def generation(self) -> int:
        return int(L.lib().hf_registry_generation(self._live()))

    def __len__(self) -> int:
        return int(L.lib().hf_registry_count(self._live()))

    @property
    def pods(self) -> List[Dict[str, Any]]:
        lib = L.lib()
        r = self._live()
        return [rec_dict(lib.hf_registry_get(r, i)) or {} for i in range(len(self))]

    def find(self, name: str) -> Optional[Dict[str, Any]]:
        lib = L.lib()
        i = lib.hf_registry_find(self._live(), name.encode())
        return None if i < 0 else rec_dict(lib.hf_registry_get(self._r, i))

    def effective(self, name: str) -> Dict[str, Any]:
        """The pod's effective scope: "scope" and "denied" (the write specs
        of its live descendants). Raises NotHeld (no such pod), Lost."""
        rec = ctypes.c_void_p()
        lib = L.lib()
        check(lib.hf_registry_effective(self._live(), name.encode(), ctypes.byref(rec)), name)
        try:
            return rec_dict(rec) or {}
        finally:
            lib.hf_rec_free(rec)

    def check(self, path: PathLike, pod: Optional[str] = None,
              generation: int = 0) -> Tuple[str, Dict[str, Any]]:
        """May pod (None: anyone) write at path? ("free" | "held" | "yours"
        | "outside" | "lost", the verdict's record). path is made
        canonical first."""
        canon = canonical_path(path)
        rec = ctypes.c_void_p()
        lib = L.lib()
        rc = lib.hf_registry_check(self._live(), L.enc(canon), L.enc(pod), generation,
                                   ctypes.byref(rec))
        try:
            check(rc, canon)
            state = L.HF_SCOPE_STATES[rc] if rc < len(L.HF_SCOPE_STATES) else str(rc)
            return state, rec_dict(rec) or {}
        finally:
            lib.hf_rec_free(rec)

    def close(self) -> None:
        if self._r:
            L.lib().hf_registry_free(self._r)
            self._r = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Registry":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _buf_call(fn_name: str, arg: Optional[str]) -> str:
    buf = ctypes.create_string_buffer(8192)
    fn = getattr(L.lib(), fn_name)
    if arg is None:
        check(fn(buf, len(buf)))
    else:
        check(fn(L.enc(arg), buf, len(buf)), arg)
    return os.fsdecode(buf.value)


def canonical_path(path: PathLike) -> str:
    """An absolute canonical path (hf_path_canonical)."""
    return _buf_call("hf_path_canonical", os.fsdecode(os.fspath(path)))


def canonical_spec(spec: str) -> str:
    """"PATH:MODE[:recursive]" with PATH canonical (hf_scope_canonical)."""
    return _buf_call("hf_scope_canonical", spec)


def registry_path() -> str:
    """The working directory's registry: $HOLDFAST_REGISTRY, else its tree's
    (the git common directory's holdfast/scope.lock, else the mount root's
    .holdfast/scope.lock; none: a HoldfastError of HF_EUNSAFE)."""
    return _buf_call("hf_registry_path", None)
