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
first player wins ``d`` plies from the position, ``-(100 - d)`` when it loses so.
:func:`from_bitbully` turns it into :class:`OpeningBook` arrays (about a second in compiled
code); ``common.opening_book`` keeps them in the user's cache, made once per machine, and
each process memory-maps them.
"""

from __future__ import annotations

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

    def save(self, folder: Path) -> None:
        """``keys.npy`` and ``scores.npy`` in ``folder`` (created), each written whole."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in (("keys", self.keys), ("scores", self.scores)):
            tmp = folder / f".{name}.tmp.npy"  # np.save adds .npy to any other name
            np.save(tmp, np.ascontiguousarray(array))
            tmp.replace(folder / f"{name}.npy")

    @classmethod
    def load(cls, folder: Path) -> OpeningBook:
        """The book :meth:`save` wrote in ``folder``, memory-mapped read-only (processes that
        load it share its pages)."""
        keys = np.load(folder / "keys.npy", mmap_mode="r")
        scores = np.load(folder / "scores.npy", mmap_mode="r")
        if keys.dtype != np.int64 or scores.dtype != np.int8 or keys.shape != scores.shape:
            raise ValueError(f"{folder}: not an opening book (keys {keys.dtype} {keys.shape}, "
                             f"scores {scores.dtype} {scores.shape})")  # fmt: skip
        return cls(np.asarray(keys), np.asarray(scores))


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
def pons_score(value, ply):
    """The source's value of a position of ``ply`` stones (even: the first player to move)
    in Pons' convention for the side to move."""
    if value == 0:
        return 0
    if value > 0:  # the first player completes four with stone ply + d, its (ply + d + 1) / 2-th
        last = ply + DISTANCE_BASE - value
        return (NUM_CELLS // 2 + 1) - (last + 1) // 2
    last = ply + DISTANCE_BASE + value  # the second player's, its (ply + d) / 2-th
    return -((NUM_CELLS // 2 + 1) - last // 2)


@njit(cache=True)
def _decode(raw, ply, keys, scores):
    """Fill ``keys`` and ``scores`` from the source's entries ``raw [N, 5] uint8``; returns the
    index of the first bad entry, or -1."""
    for i in range(raw.shape[0]):
        code = (np.int64(raw[i, 0]) << 24) | (np.int64(raw[i, 1]) << 16) | (
            np.int64(raw[i, 2]) << 8) | np.int64(raw[i, 3])  # fmt: skip
        bit = 31  # the next bit to read, most significant first
        first = 0  # the first player's stones
        mask = 0
        stones = 0
        for c in range(WIDTH):
            h = 0
            while True:
                if bit < 0 or h > HEIGHT:
                    return i
                if (code >> bit) & 1 == 0:  # the end of the column
                    bit -= 1
                    break
                if bit < 1:
                    return i
                cell = np.int64(1) << (_H1 * c + h)
                mask |= cell
                if (code >> (bit - 1)) & 1 == 0:
                    first |= cell
                bit -= 2
                h += 1
                stones += 1
        if stones != ply:
            return i
        side = first if ply % 2 == 0 else first ^ mask  # the side to move's stones
        keys[i] = book_key(side, mask)
        value = np.int64(raw[i, 4])
        if value >= 128:
            value -= 256
        scores[i] = pons_score(value, ply)
    return -1


def from_bitbully(data: bytes | np.ndarray, ply: int = BOOK_PLY) -> OpeningBook:
    """An :class:`OpeningBook` from the bytes of a BitBully book with distances
    (module docstring).

    Raises:
        ValueError: a size that is not whole entries, an entry that is not a position of
            ``ply`` stones, or two entries of one position.
    """
    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else np.asarray(data)
    if raw.size % ENTRY_BYTES:
        raise ValueError(f"a book of {raw.size} bytes is not whole entries of {ENTRY_BYTES}")
    raw = raw.reshape(-1, ENTRY_BYTES)
    keys = np.empty(raw.shape[0], dtype=np.int64)
    scores = np.empty(raw.shape[0], dtype=np.int8)
    bad = _decode(raw, ply, keys, scores)
    if bad >= 0:
        raise ValueError(f"entry {bad} ({raw[bad].tobytes().hex()}) is not a position of "
                         f"{ply} stones")  # fmt: skip
    order = np.argsort(keys, kind="stable")
    keys, scores = _read_only(keys[order]), _read_only(scores[order])
    same = np.flatnonzero(keys[1:] == keys[:-1])
    if same.size:
        raise ValueError(f"the book holds one position twice (key {int(keys[same[0]])})")
    return OpeningBook(keys, scores, ply)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # as a loaded book's: one compiled kernel serves both
    return array


EMPTY = OpeningBook(_read_only(np.zeros(1, dtype=np.int64)), _read_only(np.zeros(1, dtype=np.int8)),
                    ply=-1)  # fmt: skip
"""No book: the solver searches every position (its ply matches no node)."""
