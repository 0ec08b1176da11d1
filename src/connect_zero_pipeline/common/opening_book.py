"""The solver's opening book on this machine: made once into the user's cache from the
``bitbully-databases`` package (the ``book`` extra), then memory-mapped by every process
that solves (``core/book.py`` says what it holds and how it is read).

Without the package the solver works as it did before the book: every position is searched,
and positions before ply 12 take minutes; :func:`book_folder` says so in one line, once.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from pathlib import Path

from ..core.book import from_bitbully
from ..core.solver import DEFAULT_TT_LOG2, Solver, SolverSpec
from .project import user_cache

log = logging.getLogger(__name__)

SOURCE_PACKAGE = "bitbully_databases"
SOURCE_FILE = "assets/book_12ply_distances.dat"
"""The 12-ply book with exact distances, in its package."""
FORMAT = 1
"""The format of the arrays kept in the cache (part of their folder's name)."""
MISSING = (
    "No opening book (pip install 'connect_zero_pipeline[book]', or make setup): the solver "
    "searches positions before ply 12, which takes minutes each"
)


def source() -> Path | None:
    """The source book's file, where its package is installed."""
    try:
        from importlib.resources import files  # noqa: PLC0415 (only when a solver starts)

        path = files(SOURCE_PACKAGE).joinpath(SOURCE_FILE)
    except ModuleNotFoundError:
        return None
    return Path(str(path)) if path.is_file() else None


@functools.cache
def book_folder() -> Path | None:
    """The folder of this machine's opening book (``keys.npy``, ``scores.npy``), made from
    :func:`source` the first time (about 2 s) in the user's cache, keyed by the source's
    digest; None, with one warning line, without the source or where the cache cannot be
    written. Cached for the process: it does not change while the process runs."""
    src = source()
    if src is None:
        log.warning(MISSING)
        return None
    data = src.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    folder = user_cache() / f"opening-book-12ply-{digest}-f{FORMAT}"
    if (folder / "keys.npy").is_file() and (folder / "scores.npy").is_file():
        return folder
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}")
    try:
        from_bitbully(data).save(tmp)
        tmp.rename(folder)  # whole, or not at all: another process may be making it too
    except OSError as exc:
        if (folder / "scores.npy").is_file():  # another process made it first
            return folder
        log.warning("The opening book could not be kept in %s (%s): %s", folder.parent,
                    exc.strerror or exc, MISSING)  # fmt: skip
        return None
    finally:
        if tmp.exists():
            for part in tmp.iterdir():
                part.unlink()
            tmp.rmdir()
    log.info("Opening book: %s made from %s", folder, src)
    return folder


def solver_spec(tt_log2: int = DEFAULT_TT_LOG2) -> SolverSpec:
    """A solver of ``tt_log2`` with this machine's opening book, as workers make it."""
    folder = book_folder()
    return SolverSpec(tt_log2, None if folder is None else str(folder))


def book_solver(tt_log2: int = DEFAULT_TT_LOG2) -> Solver:
    """A solver of ``tt_log2`` with this machine's opening book, in this process."""
    return solver_spec(tt_log2).make()
