"""Waits: seconds to the library's milliseconds, and the asyncio wait that a
thread runs and a pipe cancels (HF_OPT_CANCEL_FD)."""

from __future__ import annotations

import asyncio
import math
import os
from typing import Callable, Optional, Union

from . import _lib as L

Seconds = Union[int, float]

#: A wait without deadline.
FOREVER: float = -1.0


def to_ms(seconds: Optional[Seconds]) -> int:
    """HF_OPT_WAIT_MS from seconds: 0 try once, < 0 (or None, inf) forever,
    > 0 at most that (rounded up to a whole millisecond)."""
    if seconds is None:
        return -1
    s = float(seconds)
    if math.isnan(s):
        raise ValueError("wait: not a number")
    if s < 0 or math.isinf(s):
        return -1
    if s == 0:
        return 0
    return max(1, int(math.ceil(s * 1000.0)))


def dur_ms(seconds: Seconds, what: str) -> int:
    """A positive duration (stale window, max hold) in ms."""
    s = float(seconds)
    if not s > 0 or math.isinf(s):
        raise ValueError("%s: a positive number of seconds" % what)
    return max(1, int(math.ceil(s * 1000.0)))


async def cancellable(set_cancel_fd: Callable[[int], int], call: Callable[[], int],
                      undo: Callable[[], None]) -> int:
    """Run call() (a blocking library wait returning its rc) in the loop's
    default executor with a fresh pipe as its cancel descriptor. When the
    awaiting task is cancelled, a byte is written to the pipe, which ends the
    wait with HF_ECANCELED at the library's next poll; the task then waits for
    the thread to return (whatever further cancellations), calls undo() if
    the wait had succeeded anyway (so nothing stays held), closes the pipe and
    re-raises CancelledError. Returns call()'s rc otherwise."""
    loop = asyncio.get_running_loop()
    r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        rc = set_cancel_fd(r)
        if rc < 0:
            return rc
        fut = loop.run_in_executor(None, call)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            try:
                os.write(w, b"x")
            except OSError:
                pass
            while not fut.done():
                try:
                    await asyncio.wait([fut])
                except asyncio.CancelledError:
                    continue
            if not fut.cancelled() and fut.exception() is None and fut.result() >= 0:
                undo()
            raise
    finally:
        set_cancel_fd(-1)
        os.close(r)
        os.close(w)
