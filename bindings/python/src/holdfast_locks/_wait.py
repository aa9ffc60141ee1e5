"""Waits: seconds to the library's milliseconds, and the asyncio wait that a
thread runs and a pipe cancels (HF_OPT_CANCEL_FD)."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import threading
import time
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


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def sync_wait(call: Callable[[int, Optional[int]], int], wait_ms: int,
              cancel_fd: Optional[int] = None) -> int:
    """Run call(wait_ms, cancel_fd), a blocking library wait, so that a signal
    with a Python handler (Ctrl-C: KeyboardInterrupt) is not held off until
    the wait ends. In the main thread, for a wait (not a try) without a
    cancel descriptor of the caller's, and when nobody (asyncio) has set one,
    a pipe becomes Python's signal wakeup descriptor (signal.set_wakeup_fd)
    and the wait's cancel descriptor: a signal ends the wait with
    HF_ECANCELED, its handler runs here (an exception it raises propagates),
    and the wait resumes with the time left."""
    if (wait_ms == 0 or cancel_fd is not None
            or threading.current_thread() is not threading.main_thread()):
        return call(wait_ms, cancel_fd)
    r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        try:
            old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):
            return call(wait_ms, None)
        try:
            if old != -1:  # someone else's wakeup descriptor: leave it alone
                signal.set_wakeup_fd(old)
                old = None
                return call(wait_ms, None)
            deadline = None if wait_ms < 0 else time.monotonic() + wait_ms / 1000.0
            ms = wait_ms
            while True:
                rc = call(ms, r)
                if rc != L.HF_ECANCELED:
                    return rc
                _drain(r)
                _run_signal_handlers()
                if deadline is not None:
                    ms = max(1, int(math.ceil((deadline - time.monotonic()) * 1000.0)))
        finally:
            if old is not None:
                signal.set_wakeup_fd(old)
    finally:
        os.close(r)
        os.close(w)


def _run_signal_handlers() -> None:
    # The C-level handler has flagged the signal: the interpreter runs the
    # Python handler at the next bytecode boundary; a few are enough, and a
    # sleep(0) is one more chance.
    time.sleep(0)
