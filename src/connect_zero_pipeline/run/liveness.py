"""Whether a run's process is alive: a ``running`` manifest whose process is gone is a run
that was killed (``kill -9``) or could not record its end (a full disk)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from ``/proc``); None where there is
    no ``/proc`` or no such process. A pid with another start time is another process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, after the command's ")"


def this_process() -> dict[str, Any]:
    """The manifest's record of the process that runs: ``host``, ``pid``, ``pid_started``."""
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "pid_started": process_start(os.getpid())}  # fmt: skip


def _alive(manifest: dict[str, Any]) -> bool:
    pid = manifest.get("pid")
    if not isinstance(pid, int):
        return False
    if manifest.get("host") != socket.gethostname():
        return True  # another machine's run: no way to tell, so it may be live
    started = manifest.get("pid_started")
    if started is not None:
        return process_start(pid) == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_status(manifest: dict[str, Any]) -> str:
    """A run's status: its manifest's, except that a ``running`` run whose process is gone is
    ``interrupted`` (killed, or it could not record how it ended)."""
    status = manifest.get("status", "running")
    if status == "running" and not _alive(manifest):
        return "interrupted"
    return status
