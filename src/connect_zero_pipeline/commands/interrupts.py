"""Ctrl-C and SIGTERM in the project commands: a one-line message and a known exit status at
any moment, never a hang and never a traceback.

Python turns SIGINT into ``KeyboardInterrupt``, raised at the next bytecode of the main
thread. In a command that imports torch and reads a terminal, that fails in two ways:

- raised inside a C++ callback (pybind11, while torch is being imported), the exception
  cannot cross the C++ frames and the process aborts (``terminate called after throwing an
  instance of 'pybind11::error_already_set'``);
- a signal that lands after ``input()`` printed its prompt but before it blocks in
  ``select()`` is only noted: nothing runs the handler until a line arrives, so the process
  waits for ever (CPython's readline loop; `play` hung for a minute this way under load).

So a command process handles the signals itself (:func:`install`, called by ``__main__``
before any heavy import): the handler runs the registered clean-ups (:func:`cleanup`),
writes the message and ends the process with ``os._exit``, raising nothing. Worker
processes die with it (``executors.lifetime.die_with_parent``), and a server that ``make``
started stops when make dies (:func:`stop_with_make`). :class:`LineReader` waits on
stdin and on the signal wake-up descriptor together, so a signal at any moment wakes it.

Code that runs a command in-process (``commands.invoke``: tests, notebooks) does not install the
handler: there ``KeyboardInterrupt`` is raised as usual and ``run_command`` turns it into
the same message and status.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import TextIO

from ..common.stops import EXIT_INTERRUPTED, EXIT_TERMINATED, INTERRUPTED, TERMINATED
from ..executors.lifetime import die_with_parent

_exits: dict[int, tuple[str, int]] = {}  # signal -> (message, exit status)
_cleanups: list[Callable[[], object]] = []
_wake_fd: int | None = None  # read end of the signal wake-up pipe, once installed


def install(message: str = INTERRUPTED, status: int = EXIT_INTERRUPTED) -> None:
    """Handle SIGINT (``message``, exit ``status``) and SIGTERM (exit 143) in this process.

    Call again to change what Ctrl-C prints and returns (a server that Ctrl-C stops normally:
    ``install("Stopped.", 0)``). Main thread only.
    """
    global _wake_fd
    _exits[signal.SIGINT] = (message, status)
    _exits[signal.SIGTERM] = (TERMINATED, EXIT_TERMINATED)
    if _wake_fd is None:
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        _wake_fd = read_end
    for signum in _exits:
        signal.signal(signum, _handle)


def stop_with_make() -> None:
    """Under ``make`` (which sets ``MAKELEVEL``), get SIGTERM when make dies, however it dies.

    ``make mlflow`` and friends exec the server in place of the recipe's shell, so a SIGTERM or
    Ctrl-C that make gets reaches it too; a SIGKILL of make reaches nothing, and the server
    would keep its port, re-parented to pid 1. Started any other way (a shell, ``nohup``),
    a server outlives its parent as usual."""
    if "MAKELEVEL" in os.environ:
        die_with_parent(os.getppid(), signal.SIGTERM)


def installed() -> bool:
    """Whether this process handles the signals itself (a command process)."""
    return _wake_fd is not None


def cleanup(fn: Callable[..., object], *args: object) -> None:
    """Run ``fn(*args)`` when the process ends: normally (atexit) or by a handled signal."""
    call = (lambda: fn(*args)) if args else fn
    _cleanups.append(call)
    atexit.register(call)


def _handle(signum: int, frame: object) -> None:
    message, status = _exits[signum]
    for call in reversed(_cleanups):
        with contextlib.suppress(Exception):
            call()
    with contextlib.suppress(Exception):  # the main thread may be inside a write to stdout
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno(), f"\n{message}\n".encode())
    os._exit(status)


class LineReader:
    """Lines of a file descriptor (stdin by default), read without Python's buffering.

    Each wait includes the signal wake-up descriptor, so a handled signal that arrives
    just before the wait still ends it (see the module docstring).
    """

    def __init__(self, fd: int | None = None):
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._pending = b""
        self._eof = False

    def read_line(self, prompt: str = "", out: TextIO | None = None) -> str | None:
        """The next line without its newline, after writing ``prompt``; None at end of input."""
        out = out or sys.stdout
        out.write(prompt)
        out.flush()
        while b"\n" not in self._pending and not self._eof:
            waits = [self.fd] if _wake_fd is None else [self.fd, _wake_fd]
            ready, _, _ = select.select(waits, [], [])
            if _wake_fd in ready:  # a signal's handler has run; drain, then wait again
                with contextlib.suppress(BlockingIOError):
                    os.read(_wake_fd, 512)
            if self.fd in ready:
                chunk = os.read(self.fd, 4096)
                self._pending += chunk
                self._eof = not chunk
        if not self._pending:
            return None
        line, _, self._pending = self._pending.partition(b"\n")  # the last may lack one
        return line.decode("utf-8", errors="replace").rstrip("\r")
