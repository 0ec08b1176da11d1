"""Writes that are complete or absent: a file or folder appears under its name only when whole.

Everything the project keeps on disk (every versioned output, through the catalog, the run
manifests, the solver's and the ladder's Parquet part files) is written to a hidden staging
sibling and renamed into place. A rename within one filesystem is atomic, so a reader, a
resumed run or ``play --web`` sees either the whole file or nothing; a write cut short by a
full disk, an error or ``kill -9`` leaves at most a hidden ``.<name>.partial-<pid>`` that no
reader looks at and the next write of that name removes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING_MARK = ".partial-"
"""What a staging sibling's name holds: ``.<name>.partial-<pid>``."""


def staging_path(final: str | os.PathLike) -> Path:
    """The hidden sibling that ``final`` is written as before it is renamed into place."""
    final = Path(final)
    return final.with_name(f".{final.name}{STAGING_MARK}{os.getpid()}")


def remove(path: Path) -> None:
    """Remove a file or a folder tree, if there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_leftovers(final: str | os.PathLike) -> None:
    """Remove the staging siblings of ``final`` that earlier, interrupted writes left."""
    final = Path(final)
    if final.parent.is_dir():
        for stale in final.parent.glob(f".{final.name}{STAGING_MARK}*"):
            remove(stale)


@contextmanager
def atomic_path(final: str | os.PathLike) -> Iterator[Path]:
    """``with atomic_path(target) as tmp: write tmp`` -- ``target`` appears, whole, at the end.

    ``tmp`` may become a file or a folder. On an error ``tmp`` is removed and ``target`` is
    untouched; an existing file ``target`` is replaced in one step.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(final)
    tmp = staging_path(final)
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException:
        remove(tmp)
        raise
