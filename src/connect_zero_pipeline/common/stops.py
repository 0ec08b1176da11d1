"""Stops: how a Ctrl-C (SIGINT) or a SIGTERM becomes a stop, for the run's process, the code
it must not cut, and its worker processes. The one module that sets a signal handler for a
run (the command-line tools' own, which also wake a blocked read, are
``commands.interrupts``'s, with these words and exit statuses).

- :func:`stops_handled`: the run's process (``kedro run``, :mod:`..commands.run`): :class:`Stop` says
  :data:`STOPPING` at once and raises ``KeyboardInterrupt`` (SIGINT) or
  :class:`.errors.Terminated` (SIGTERM) where the main thread is, so both stop the run the
  same way; a second SIGTERM ends the process at once.
- :func:`deferred`: a block the run must not cut (``executors.local``'s hand-over of shards
  to its pool) holds a stop until it ends, the run's :class:`Stop` acknowledging it at once.
- :func:`sigint_blocked`: a thread that starts a worker process blocks SIGINT meanwhile (the
  process inherits the mask), and :func:`quiet_worker` sets the worker's own handler.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from .errors import Terminated

STOPS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a run (``kedro run`` handles both as a stop)."""
STOPPING = "Stopping..."
"""What a run says at once when a Ctrl-C or a SIGTERM arrives (it ends with ``Interrupted.`` or
``Terminated.`` once its workers are stopped and its record written)."""
INTERRUPTED = "Interrupted."
TERMINATED = "Terminated."
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Stop:
    """The run's handler of SIGINT and SIGTERM (module docstring). Code that must not be cut
    holds the signal (:func:`deferred`) and calls :meth:`acknowledge` meanwhile."""

    def __init__(self) -> None:
        self.said = False
        self.terminating = False

    def acknowledge(self) -> None:
        """Say :data:`STOPPING`, once."""
        if not self.said:
            self.said = True
            with contextlib.suppress(OSError):
                os.write(sys.stderr.fileno(), f"{STOPPING}\n".encode())

    def __call__(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGTERM:
            if self.terminating:
                os._exit(EXIT_TERMINATED)
            self.terminating = True
            self.acknowledge()
            raise Terminated()
        self.acknowledge()
        raise KeyboardInterrupt()


@contextlib.contextmanager
def handled(handler, signals=(signal.SIGINT,)) -> Iterator[None]:
    """``signals`` go to ``handler`` in the block, then to the handlers that were there before.
    Off the main thread, where Python cannot change a handler, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def stops_handled() -> Iterator[None]:
    """SIGINT and SIGTERM handled by a :class:`Stop` in the block (main thread only), then the
    handlers that were there before."""
    with handled(Stop(), STOPS):
        yield


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A Ctrl-C or a SIGTERM in the block is raised as it ends, not inside it: the signal is
    handed to the handler that was there before once the block is done, and meanwhile, if
    that handler is the run's :class:`Stop`, it says ``Stopping...`` at once."""
    caught: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in STOPS}

    def hold(signum, frame) -> None:
        caught.append(signum)
        if isinstance(previous[signum], Stop):
            previous[signum].acknowledge()

    try:
        with handled(hold, STOPS):
            yield
    finally:
        if caught:
            signal.raise_signal(caught[0])


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread for the block (a signal that comes meanwhile waits)."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _exit_quietly(signum, frame) -> None:
    os._exit(128 + signum)  # no KeyboardInterrupt traceback: the run's process says it


def quiet_worker() -> None:
    """A worker process's Ctrl-C ends it at once, quietly (the run's process reports the
    stop); SIGINT, blocked while it started (:func:`sigint_blocked`), is let through now, so
    one that came meanwhile ends it here."""
    signal.signal(signal.SIGINT, _exit_quietly)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
