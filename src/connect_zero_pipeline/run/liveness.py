"""Whether a run's process is alive: a ``running`` manifest whose process is gone is a run
that was killed (``kill -9``) or could not record its end (a full disk); and what such a run
left in ``/dev/shm`` (:func:`remove_dead_semaphores`)."""

from __future__ import annotations

import os
import socket
import time
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


SHARED_MEMORY = Path("/dev/shm")
SEMAPHORES = "sem.mp-*"
"""``multiprocessing``'s named semaphores (its queues, locks and events under the spawn start
method, which a run's worker pools use)."""


def remove_dead_semaphores(folder: Path = SHARED_MEMORY, min_age_s: float = 1.0) -> list[str]:
    """Remove the semaphores of this user in ``folder`` (:data:`SEMAPHORES`) that no live
    process has open, older than ``min_age_s``; returns their names.

    ``multiprocessing``'s resource tracker removes a process's semaphores when it is gone,
    but a ``kill -9`` of the run's whole process group kills the tracker too, and they stay:
    13 a run. A semaphore in use is mapped by every process that has it open: its file's
    inode is in their ``/proc/<pid>/maps`` (under the name it was created with, which the
    C library renames: the inode, not the name, tells). One that no process maps belongs to
    dead processes only; only those are removed, never a live process's.
    """
    if not folder.is_dir():
        return []
    now, uid = time.time(), os.getuid()
    candidates: dict[int, str] = {}  # inode -> name
    for path in folder.glob(SEMAPHORES):
        try:
            info = path.stat()
        except OSError:
            continue
        if info.st_uid == uid and now - info.st_mtime >= min_age_s:
            candidates[info.st_ino] = path.name
    if not candidates:
        return []
    mapped = open_inodes(folder)
    removed = []
    for inode, name in sorted(candidates.items(), key=lambda item: item[1]):
        if inode in mapped:
            continue
        try:
            (folder / name).unlink()
        except OSError:
            continue
        removed.append(name)
    return removed


def open_inodes(folder: Path = SHARED_MEMORY, pids: list[int] | None = None) -> set[int]:
    """The inodes of files under ``folder`` that processes ``pids`` (None: every process this
    user may read) have mapped, from ``/proc/<pid>/maps``."""
    prefix = f" {folder}/"
    found: set[int] = set()
    paths = [Path(f"/proc/{pid}/maps") for pid in pids] if pids is not None else Path(
        "/proc").glob("[0-9]*/maps")  # fmt: skip
    for maps in paths:
        try:
            text = maps.read_text()
        except OSError:  # gone, or another user's (which cannot open ours)
            continue
        for line in text.splitlines():
            if prefix in line:
                fields = line.split(maxsplit=5)
                if len(fields) > 4 and fields[4].isdigit():
                    found.add(int(fields[4]))
    return found
