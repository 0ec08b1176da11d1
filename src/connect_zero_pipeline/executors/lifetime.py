"""A process that ends when the process that started it dies, whatever kills that one.

Light (no torch): the self-play and solver workers use it (SIGKILL: nothing of theirs is
worth saving), and so do the servers ``make`` starts (SIGTERM: they stop what they
started first, :func:`connect_zero_pipeline.commands.interrupts.stop_with_make`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """Get signal ``sig`` when process ``parent`` (the one that started this) dies.

    On Linux the kernel sends it (``prctl(PR_SET_PDEATHSIG)``); elsewhere a daemon thread
    checks every second whether the parent is gone and sends it. If the parent died before
    this ran (this process is then someone else's child), it is sent now. ``parent`` comes
    from the parent itself where it can: a pid read here with ``getppid()`` may already be
    the new parent's.
    """
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if not armed:

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os.kill(os.getpid(), sig)

        threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
    if os.getppid() != parent:  # checked after arming: no moment is left uncovered
        os.kill(os.getpid(), sig)
