"""The backend options every handle kind takes (holdfast.h HF_OPT_BACKEND,
HF_OPT_ETCD_*, HF_OPT_TTL_MS, HF_OPT_TIMEOUT_MS), as keyword arguments:

  backend            "file" (the default: the file system),
                     "etcd://HOST:PORT[,HOST:PORT...]" (http) or
                     "etcds://..." (https): an etcd v3 cluster
  etcd_user          authenticate as this user (with etcd_password_file)
  etcd_password_file the file whose first line is the password
  etcd_ca_file       the CA bundle for https endpoints
  ttl                the lease's TTL in seconds (lock, scope; default 10)
  etcd_timeout       the bound of one request in seconds (default 5); past
                     it HoldfastOSError EIO, the message naming the endpoint

The library does not read $HOLDFAST_BACKEND (only the holdfast CLI does):
pass backend=os.environ.get("HOLDFAST_BACKEND") to honour it.
"""

from __future__ import annotations

import os
from typing import Callable, Optional, Union

from . import _lib as L
from ._wait import Seconds, dur_ms

StrPath = Union[str, "os.PathLike[str]"]


def apply(set_str: Callable[[int, str, str], None], set_int: Callable[[int, int], None], *,
          backend: Optional[str], etcd_user: Optional[str],
          etcd_password_file: Optional[StrPath], etcd_ca_file: Optional[StrPath],
          ttl: Optional[Seconds], etcd_timeout: Optional[Seconds]) -> None:
    """Set the options given (None: the library's default) through
    set_str(opt, value, name) and set_int(opt, value)."""
    for opt, name, value in ((L.HF_OPT_BACKEND, "backend", backend),
                             (L.HF_OPT_ETCD_USER, "etcd_user", etcd_user),
                             (L.HF_OPT_ETCD_PASSWORD_FILE, "etcd_password_file",
                              etcd_password_file),
                             (L.HF_OPT_ETCD_CA_FILE, "etcd_ca_file", etcd_ca_file)):
        if value is None:
            continue
        if not isinstance(value, str):
            if name.endswith("_file") and isinstance(value, os.PathLike):
                value = os.fsdecode(os.fspath(value))
            else:
                raise TypeError("%s must be a string" % name)
        set_str(opt, value, "%s %s" % (name.replace("_", " "), value))
    if ttl is not None:
        set_int(L.HF_OPT_TTL_MS, dur_ms(ttl, "ttl"))
    if etcd_timeout is not None:
        set_int(L.HF_OPT_TIMEOUT_MS, dur_ms(etcd_timeout, "etcd_timeout"))
