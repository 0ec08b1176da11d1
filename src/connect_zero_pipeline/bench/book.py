"""``bench book``: the solver with the opening book through the opening, each position timed.

What ``solve --analyze`` answers (every move's exact score) with one solver for all the
positions, as the command keeps one for all its lines:

- ``plies_0_4``: every move string of 0 to 4 plies (2,801: each of the 1,415 positions, and
  its transpositions; ``--quick``: 0 to 2 plies);
- ``plies_5_12``: 1,000 positions of plies 5 to 12 from uniformly random play (the ply
  uniform too; ``--quick``: 50), each unfinished;
- ``empty_board``: the empty board with a new solver (the known scores in the line);
- ``make_s``: converting the source book into the solver's arrays (what the first solving
  process of a machine pays once, :mod:`..common.opening_book`);
- ``check_s``: what every later process spends on the kept book before its first answer:
  finding its folder and checking it against its manifest (sizes, count, checksums), the
  best of 5 (the files in the page cache, as on a machine that solves).

Each of the first two lines is the largest seconds of one position, with the median and
the count. The solver is compiled and the book mapped before the clock starts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from ..common.opening_book import book_solver, machine_book, source
from ..core.bitboard import alignment, moves_to_bitboards
from ..core.book import from_bitbully
from . import figure


def _every_position(max_ply: int) -> list[str]:
    """Move strings of every unfinished position of at most ``max_ply`` stones (no game ends
    before ply 7, so every move string is one)."""
    out, level = [""], [""]
    for _ in range(max_ply):
        level = [m + str(c) for m in level for c in range(1, 8)]
        out += level
    return out


def _random_positions(count: int, lo: int, hi: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    found: list[str] = []
    while len(found) < count:
        moves = "".join(map(str, rng.integers(1, 8, size=int(rng.integers(lo, hi + 1)))))
        try:
            pos, mask = moves_to_bitboards(moves)
        except ValueError:  # a full column, a move after a win
            continue
        if not alignment(pos ^ mask):
            found.append(moves)
    return found


def _timed(solver, positions: list[str]) -> np.ndarray:
    seconds = []
    for moves in positions:
        start = time.perf_counter()
        solver.analyze(moves)
        seconds.append(time.perf_counter() - start)
    return np.array(seconds)


def run(args) -> Iterator[dict]:
    quick = getattr(args, "quick", False)
    solver = book_solver()
    if solver.book is None:
        raise RuntimeError("bench book needs the opening book: pip install "
                           "'connect_zero_pipeline[book]' (make setup installs it)")  # fmt: skip
    solver.analyze("4444")  # compiled, the book mapped, outside the clock
    solver.reset()
    sets = {"plies_0_4": _every_position(2 if quick else 4),
            "plies_5_12": _random_positions(50 if quick else 1000, 5, 12)}  # fmt: skip
    for name, positions in sets.items():
        seconds = _timed(solver, positions)
        yield figure("book", f"{name}.max_s", float(seconds.max()),
                     median_s=float(np.median(seconds)), positions=len(positions),
                     slowest=positions[int(seconds.argmax())], target="<= 1")  # fmt: skip
    fresh = book_solver()
    start = time.perf_counter()
    scores = fresh.analyze("")
    yield figure("book", "empty_board_s", time.perf_counter() - start, scores=scores,
                 nodes=fresh.node_count, target="<= 1, [-2, -1, 0, 1, 0, -1, -2]")  # fmt: skip
    data = source().read_bytes()
    start = time.perf_counter()
    made = from_bitbully(data)
    yield figure("book", "make_s", time.perf_counter() - start, entries=len(made),
                 mib=round((made.keys.nbytes + made.scores.nbytes) / 2**20, 1))  # fmt: skip
    seconds = []
    for _ in range(5):
        machine_book.cache_clear()  # as a new process finds it
        start = time.perf_counter()
        where, book = machine_book()
        seconds.append(time.perf_counter() - start)
    yield figure("book", "check_s", min(seconds), folder=where, entries=len(book),
                 target="<= 0.05")  # fmt: skip
