"""The solver's opening book on this machine: made once into the user's cache from the
``bitbully-databases`` package (the ``book`` extra), then memory-mapped by every process
that solves (``core/book.py`` says what it holds and how it is read).

The cache is trusted only when checked: every process that opens it checks it against its
manifest (sizes, entries, checksums: a few ms), and a folder that fails (truncated, emptied,
altered, left half-made by a crash) is said to be damaged in one line and made again. Where
the cache cannot be written, the book is read into memory instead (about a second a
process) and the solver goes on with it. ``$XDG_CACHE_HOME`` moves the cache
(:func:`.project.user_cache`).

Without the package the solver works as it did before the book: every position is searched,
and positions before ply 12 take minutes; :func:`machine_book` says so in one line, once.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import logging
import os
import shutil
import zlib
from pathlib import Path

import numpy as np

from ..core.book import FORMAT, DamagedBook, OpeningBook, from_bitbully
from ..core.solver import DEFAULT_TT_LOG2, Solver, SolverSpec
from .project import user_cache

log = logging.getLogger(__name__)

SOURCE_PACKAGE = "bitbully_databases"
SOURCE_FILE = "assets/book_12ply_distances.dat"
"""The 12-ply book with exact distances, in its package."""
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


def cache_folder(src: Path) -> Path:
    """The cache's folder for the source ``src``: named by its package's version and its size,
    so that finding it reads nothing of the 21 MB (the manifest records the source's CRC-32)."""
    try:
        version = importlib.metadata.version(SOURCE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return user_cache() / f"opening-book-12ply-{version}-{src.stat().st_size}-f{FORMAT}"


@functools.cache
def machine_book() -> tuple[str | None, OpeningBook | None]:
    """This machine's opening book, made or checked once per process: ``(where workers read
    it, the book)``. ``where`` is the cache's folder (:func:`cache_folder`), or the source
    file itself where no cache can be kept (each process then reads it into memory); both
    are None, with one warning line, without the source. A damaged cache is made again, in
    one line (module docstring)."""
    src = source()
    if src is None:
        log.warning(MISSING)
        return None, None
    folder = cache_folder(src)
    damage = None
    if folder.exists():
        try:
            return str(folder), OpeningBook.load(folder)
        except DamagedBook as exc:
            damage = str(exc)
    data = np.fromfile(src, dtype=np.uint8)
    book = from_bitbully(data)
    try:
        _keep(book, folder, {"file": str(src), "bytes": int(data.size),
                             "crc32": zlib.crc32(data)})  # fmt: skip
    except OSError as exc:
        what = f"is damaged ({damage}) and cannot be made again" if damage else "cannot be kept"
        log.warning("The opening book %s in %s (%s): it is read into memory in each process "
                    "instead (about 1 s; XDG_CACHE_HOME moves the cache)", what, folder.parent,
                    exc.strerror or exc)  # fmt: skip
        return str(src), book
    if damage:
        log.warning("The opening book in %s was damaged (%s): made again", folder, damage)
    else:
        log.info("Opening book: %s made from %s", folder, src)
    return str(folder), book


def _keep(book: OpeningBook, folder: Path, source: dict) -> None:
    """``book`` in ``folder``, whole or not at all, whatever other processes do at once:
    written in a folder of its own, then renamed into place (a damaged folder is moved aside
    first, unless another process has made it whole meanwhile).

    Raises:
        OSError: the cache cannot be written.
    """
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}")
    aside = folder.with_name(f".{folder.name}.damaged.{os.getpid()}")
    try:
        book.save(tmp, source)
        if folder.exists() and not _whole(folder):
            with contextlib.suppress(FileNotFoundError):  # another process moved it
                folder.rename(aside)
        try:
            tmp.rename(folder)
        except OSError:
            if not _whole(folder):  # not another process's whole book: a real failure
                raise
    finally:
        for leftover in (tmp, aside):
            shutil.rmtree(leftover, ignore_errors=True)


def _whole(folder: Path) -> bool:
    try:
        OpeningBook.load(folder)
    except DamagedBook:
        return False
    return True


def has_book() -> bool:
    """Whether this machine's solver has the opening book (in the cache or in memory)."""
    return machine_book()[1] is not None


def solver_spec(tt_log2: int = DEFAULT_TT_LOG2) -> SolverSpec:
    """A solver of ``tt_log2`` with this machine's opening book, as workers make it."""
    return SolverSpec(tt_log2, machine_book()[0])


def book_solver(tt_log2: int = DEFAULT_TT_LOG2) -> Solver:
    """A solver of ``tt_log2`` with this machine's opening book, in this process (the book
    checked once per process)."""
    return Solver(tt_log2, machine_book()[1])
