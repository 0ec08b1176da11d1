"""An opening book: the exact score of every position of :data:`BOOK_PLY` stones, so that the
solver's search stops there and answers the opening in about the time of a ply-12 position.

Connect-4's opening is beyond a plain search (the empty board takes hours): the value of a
position of a few stones lies 20-35 plies away. The field's answer, since Allis and in
Pons' solver, is a book of every position at a fixed depth, looked up where the search
reaches it. This module holds such a book in the solver's own terms:

- ``keys``: ``int64 [N]``, sorted, each position's key as the solver's transposition table
  keys it (``position + mask + bottom``: unique, below 2**49), of the position or its
  mirror image, whichever is smaller (:func:`book_key`): a position and its mirror share
  one entry;
- ``scores``: ``int8 [N]``, the exact score in Pons' convention for the side to move (a
  draw 0, a win ``22 - k`` for the winner's ``k`` stones once the four is complete).

Every position of :data:`BOOK_PLY` stones that the solver can reach is in it: the game not
over, and the side to move unable to win at once (the search settles those before it looks
anything up). A position missing from a book is searched as it would be without one.

**Its source** is the 12-ply book with distances of the ``bitbully-databases`` package (MIT,
data only; the reader below is written from its documented format, none of BitBully's
code): ``4,200,899`` entries of 5 bytes, sorted by their first 4, a big-endian signed
32-bit code of the position, then a signed byte, its value for the first player (the side
to move at 12 stones). The code reads the columns left to right, each bottom to top: ``10``
a stone of the first player, ``11`` of the second, ``0`` the end of the column (after a
full column too), then one ``0`` more. The value is 0 for a draw, ``100 - d`` when the
first player wins ``d`` plies from the position, ``-(100 - d)`` when it loses so (``d`` odd
for a win, even for a loss, at most the 30 plies left). :func:`from_bitbully` turns it into
:class:`OpeningBook` arrays (about a second in compiled code) and refuses any entry outside
this format; ``common.opening_book`` keeps them in the user's cache, made once per machine,
and each process memory-maps them.

**A kept book** is a folder of ``keys.npy``, ``scores.npy`` and ``manifest.json``, written
last: the format, the number of entries, each array file's size and CRC-32 (what a check
costs: a few ms a process), and where the arrays came from. :meth:`OpeningBook.load`
trusts a folder only when all of it matches (:class:`DamagedBook` says what does not).
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from .board import HEIGHT, NUM_CELLS, WIDTH

BOOK_PLY = 12
"""Stones on the board in every position of the book."""
NO_SCORE = -128
"""What :func:`book_score` returns for a position the book does not hold."""
ENTRY_BYTES = 5
"""Bytes of one entry of the source file (a 4-byte position code and a 1-byte value)."""
DISTANCE_BASE = 100
"""The source's value of a win ``d`` plies away is ``DISTANCE_BASE - d``."""
FORMAT = 2
"""The format of a kept book's folder (:meth:`OpeningBook.save`): 2 adds its manifest."""
MANIFEST = "manifest.json"
"""The file that makes a kept book's folder whole, written last (:meth:`OpeningBook.save`)."""
ARRAYS = {"keys.npy": np.int64, "scores.npy": np.int8}
"""A kept book's array files and their dtypes."""


class DamagedBook(ValueError):
    """A kept book's folder that does not match its manifest (or has none): its message says
    what is wrong, in a few words."""


_H1 = HEIGHT + 1
_COL = (1 << HEIGHT) - 1
_BOTTOM = sum(1 << (_H1 * c) for c in range(WIDTH))


@dataclass(frozen=True)
class OpeningBook:
    """Exact scores of positions of :attr:`ply` stones (module docstring), sorted by key."""

    keys: np.ndarray
    """``int64 [N]``, sorted: :func:`book_key` of each position."""
    scores: np.ndarray
    """``int8 [N]``: each position's exact score for the side to move (Pons' convention)."""
    ply: int = BOOK_PLY

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def score(self, position: int, mask: int) -> int | None:
        """The exact score of one position for the side to move, or None if it is not here."""
        if bin(int(mask)).count("1") != self.ply:
            return None
        found = book_score(np.int64(position), np.int64(mask), self.keys, self.scores)
        return None if found == NO_SCORE else int(found)

    def save(self, folder: Path, source: dict | None = None) -> None:
        """The book in ``folder`` (created): its arrays, then its manifest (module docstring;
        ``source``: where the arrays came from, recorded in it), each file on disk before the
        next is written, so that a folder with a manifest is a whole book."""
        folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for name, array in (("keys.npy", self.keys), ("scores.npy", self.scores)):
            array = np.ascontiguousarray(array)
            with open(folder / name, "wb") as f:
                np.save(f, array)
                f.flush()
                os.fsync(f.fileno())
            files[name] = {"bytes": (folder / name).stat().st_size, "crc32": _crc32(array)}
        manifest = {"format": FORMAT, "ply": self.ply, "entries": len(self), "files": files,
                    "source": source or {}}  # fmt: skip
        tmp = folder / f".{MANIFEST}.tmp"
        with open(tmp, "w") as f:
            json.dump(manifest, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(folder / MANIFEST)
        _fsync_folder(folder)

    @classmethod
    def load(cls, folder: Path) -> OpeningBook:
        """The book :meth:`save` wrote in ``folder``, memory-mapped read-only (processes that
        load it share its pages), once every file matches the manifest: sizes, dtypes,
        entries and checksums.

        Raises:
            DamagedBook: what does not match (no manifest: a book left unfinished).
        """
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
            entries, files, ply = int(manifest["entries"]), manifest["files"], manifest["ply"]
            if manifest["format"] != FORMAT:
                raise DamagedBook(f"format {manifest['format']!r}, not {FORMAT}")
        except FileNotFoundError:
            raise DamagedBook("no manifest: a book left unfinished") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if isinstance(exc, DamagedBook):
                raise
            raise DamagedBook(f"an unreadable manifest ({type(exc).__name__})") from None
        arrays = {}
        for name, dtype in ARRAYS.items():
            path = folder / name
            try:
                size, want = path.stat().st_size, files[name]
                if size != want["bytes"]:
                    raise DamagedBook(f"{name} has {size} bytes, its manifest {want['bytes']}")
                array = np.load(path, mmap_mode="r")
            except FileNotFoundError:
                raise DamagedBook(f"{name} is missing") from None
            except (OSError, ValueError, KeyError, TypeError) as exc:
                if isinstance(exc, DamagedBook):
                    raise
                raise DamagedBook(f"{name} is unreadable ({type(exc).__name__})") from None
            if array.dtype != dtype or array.shape != (entries,):
                raise DamagedBook(f"{name} holds {array.dtype} {array.shape}, not {entries} "
                                  f"{np.dtype(dtype)}")  # fmt: skip
            if _crc32(array) != want["crc32"]:
                raise DamagedBook(f"{name} differs from its checksum")
            arrays[name] = np.asarray(array)
        return cls(arrays["keys.npy"], arrays["scores.npy"], int(ply))


def _crc32(array: np.ndarray) -> int:
    return zlib.crc32(memoryview(np.ascontiguousarray(array)).cast("B"))


def _fsync_folder(folder: Path) -> None:
    """The folder's entries on disk (where the system allows a folder to be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@njit(cache=True, inline="always")
def _mirror(x):
    """The bitboard ``x`` mirrored left to right (column c to column 6 - c)."""
    out = 0
    for c in range(WIDTH):
        out |= ((x >> (_H1 * c)) & _COL) << (_H1 * (WIDTH - 1 - c))
    return out


@njit(cache=True, inline="always")
def book_key(position, mask):
    """The book's key of a position: the transposition table's key of it or of its mirror
    image, whichever is smaller."""
    key = position + mask + _BOTTOM
    mirrored = _mirror(position) + _mirror(mask) + _BOTTOM
    return min(key, mirrored)


@njit(cache=True, nogil=True)
def book_score(position, mask, keys, scores):
    """The exact score of a position of the book's ply for the side to move, or
    :data:`NO_SCORE` (binary search of the sorted ``keys``)."""
    key = book_key(position, mask)
    i = np.searchsorted(keys, key)
    if i < keys.shape[0] and keys[i] == key:
        return scores[i]
    return NO_SCORE


@njit(cache=True, inline="always")
def pons_score(value):
    """The source's value of a position of :data:`BOOK_PLY` stones (even: the first player
    to move) in Pons' convention for the side to move."""
    if value == 0:
        return 0
    if value > 0:  # the first player completes four with stone ply + d, its (ply + d + 1) / 2-th
        last = BOOK_PLY + DISTANCE_BASE - value
        return (NUM_CELLS // 2 + 1) - (last + 1) // 2
    last = BOOK_PLY + DISTANCE_BASE + value  # the second player's, its (ply + d) / 2-th
    return -((NUM_CELLS // 2 + 1) - last // 2)


BAD_CODE, BAD_VALUE = 1, 2
"""What :func:`_decode` found wrong with an entry."""


@njit(cache=True)
def _decode(raw, keys, scores, bad):
    """Fill ``keys`` and ``scores`` from the source's entries ``raw [N, 5] uint8``. At the
    first entry outside the format, ``bad`` gets its index and :data:`BAD_CODE` (not a
    position of :data:`BOOK_PLY` stones, or bits after the seventh column) or
    :data:`BAD_VALUE` (neither 0 nor a distance the position can have: ``d`` from 1 to the
    plies left, odd for a win of the side to move, even for a loss), and it stops."""
    for i in range(raw.shape[0]):
        code = (np.int64(raw[i, 0]) << 24) | (np.int64(raw[i, 1]) << 16) | (
            np.int64(raw[i, 2]) << 8) | np.int64(raw[i, 3])  # fmt: skip
        bit = 31  # the next bit to read, most significant first
        first = 0  # the first player's stones: the side to move's at an even ply
        mask = 0
        stones = 0
        for c in range(WIDTH):
            h = 0
            while True:
                if bit < 0 or h > HEIGHT:
                    bad[0], bad[1] = i, BAD_CODE
                    return
                if (code >> bit) & 1 == 0:  # the end of the column
                    bit -= 1
                    break
                if bit < 1:
                    bad[0], bad[1] = i, BAD_CODE
                    return
                cell = np.int64(1) << (_H1 * c + h)
                mask |= cell
                if (code >> (bit - 1)) & 1 == 0:
                    first |= cell
                bit -= 2
                h += 1
                stones += 1
        if stones != BOOK_PLY or code & ((np.int64(1) << (bit + 1)) - 1) != 0:
            bad[0], bad[1] = i, BAD_CODE
            return
        value = np.int64(raw[i, 4])
        if value >= 128:
            value -= 256
        if value != 0:
            d = DISTANCE_BASE - abs(value)
            if d < 1 or d > NUM_CELLS - BOOK_PLY or (d % 2 == 1) != (value > 0):
                bad[0], bad[1] = i, BAD_VALUE
                return
        keys[i] = book_key(first, mask)
        scores[i] = pons_score(value)


def from_bitbully(data: bytes | np.ndarray) -> OpeningBook:
    """An :class:`OpeningBook` from the bytes of BitBully's 12-ply book with distances
    (module docstring).

    Raises:
        ValueError: a size that is not whole entries, an entry outside the format (a code
            that is not a position of :data:`BOOK_PLY` stones, a value no position has), or
            two entries of one position; each names the entry.
    """
    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else np.asarray(data)
    if raw.size % ENTRY_BYTES:
        raise ValueError(f"a book of {raw.size} bytes is not whole entries of {ENTRY_BYTES}")
    raw = raw.reshape(-1, ENTRY_BYTES)
    keys = np.empty(raw.shape[0], dtype=np.int64)
    scores = np.empty(raw.shape[0], dtype=np.int8)
    bad = np.array([-1, 0], dtype=np.int64)
    _decode(raw, keys, scores, bad)
    if bad[0] >= 0:
        entry = f"entry {bad[0]} ({raw[bad[0]].tobytes().hex()})"
        if bad[1] == BAD_VALUE:
            raise ValueError(f"{entry}: the value {raw[bad[0], 4].astype(np.int8)} is neither "
                             f"0 nor +-({DISTANCE_BASE} - d) for a distance d the position "
                             "can have")  # fmt: skip
        raise ValueError(f"{entry} is not a position of {BOOK_PLY} stones")
    order = np.argsort(keys, kind="stable")
    keys, scores = _read_only(keys[order]), _read_only(scores[order])
    same = np.flatnonzero(keys[1:] == keys[:-1])
    if same.size:
        raise ValueError(f"the book holds one position twice (key {int(keys[same[0]])})")
    return OpeningBook(keys, scores)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # as a loaded book's: one compiled kernel serves both
    return array


EMPTY = OpeningBook(_read_only(np.zeros(1, dtype=np.int64)), _read_only(np.zeros(1, dtype=np.int8)),
                    ply=-1)  # fmt: skip
"""No book: the solver searches every position (its ply matches no node)."""
