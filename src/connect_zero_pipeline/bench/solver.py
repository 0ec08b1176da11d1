"""``bench solver``: mean time and nodes per position on a Pons benchmark file.

``python -m connect_zero_pipeline bench solver [--file PATH] [--quick]``

Without ``--file`` both public sets shipped with the tests
(``tests/data/pons/Test_L3_R1`` and ``Test_L2_R1``) are measured. Figures per file:

- ``us_per_position`` / ``nodes_per_position``: exact scores, the positions
  solved one after the other in compiled code with one transposition table
  kept across positions, as in Pons' own benchmark loop (a fresh, zeroed
  table per repeat). Best of the repeats; the median is in ``median``.
- ``us_per_position_weak`` / ``nodes_per_position_weak``: the same with ``weak=True``.
- ``us_per_position_fresh_table`` / ``nodes_per_position_fresh_table``: the
  table is emptied before every position (the emptying is not timed; the
  time includes one numba dispatch per position, ``us_per_call`` below).
- ``us_per_call``: the numba dispatch of a one-position call with no search.
- ``wrong_scores``: positions whose score differs from the file (must be 0).
- ``startup_s``: a second Python process importing the solver and solving
  one position, numba's on-disk cache warm (measured in a subprocess).

With ``--generated`` the same figures are measured on positions of two of
Pons' harder classes, which are not in the repository (his sets of those
classes are kept out of the project as an independent check): ``L2_R2`` (middle-medium: 15-28 stones,
14-27 moves left under perfect play) and ``L1_R1`` (beginning-easy: at most
14 stones, under 14 moves left). They are drawn by seeded uniformly random
play and kept when their exact score puts them in the class, so they resemble
Pons' sets in definition, not necessarily in difficulty. Beginning positions
whose search exceeds ``GENERATE_MAX_NODES`` while classifying are not kept.

Compilation is excluded: a throw-away solver runs first. Pascal Pons' C++
solver (no opening book) measured on this machine is given as
``reference_us`` where known, with ``ratio = value / reference_us``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click
import numpy as np

from ..core.bitboard import moves_to_bitboards
from ..core.solver import Solver, _solve_batch
from . import figure

# The two public sets shipped with the tests (a source checkout; see tests/data/pons/README.md).
PONS_DIR = Path(__file__).resolve().parents[3] / "tests" / "data" / "pons"
# Pons' C++ solver without opening book, mean microseconds per position, measured here
# (on his sets; the generated classes are only comparable in definition).
REFERENCE_US = {"Test_L3_R1": 60.0, "Test_L2_R1": 120.0, "L2_R2": 5000.0, "L1_R1": 400.0}
# Pons' classes: (stones on board lo..hi, moves left under perfect play lo..hi), inclusive.
CLASSES = {"L2_R2": ((15, 28), (14, 27)), "L1_R1": ((1, 14), (1, 13))}
GENERATE_MAX_NODES = 2_000_000

OPTIONS = [
    click.Option(["--file"], show_default="the shipped sets", help="A Pons benchmark file."),
    click.Option(
        ["--generated"],
        is_flag=True,
        help="Also time generated positions of Pons' classes L2_R2 and L1_R1.",
    ),
]
"""``bench solver``'s options besides ``--quick``."""


def moves_left(stones: int, score: int) -> int:
    """Moves still played under perfect play from a position of ``stones`` stones."""
    if score == 0:
        return 42 - stones
    winner_stones = 22 - abs(score)  # the winner's stones once the four is complete
    if score > 0:  # the side to move wins; it has stones // 2 on the board
        return 2 * (winner_stones - stones // 2) - 1
    return 2 * (winner_stones - (stones + 1) // 2)


def generate_class(name: str, count: int, seed: int) -> list[tuple[str, int]]:
    """``count`` distinct ``(moves, score)`` of Pons class ``name``, by seeded random play."""
    (lo, hi), (left_lo, left_hi) = CLASSES[name]
    rng = np.random.default_rng(seed)
    solver = Solver()
    found: dict[str, int] = {}
    while len(found) < count:
        heights = [0] * 7
        moves = ""
        for _ in range(int(rng.integers(lo, hi + 1))):
            col = int(rng.choice([c for c in range(7) if heights[c] < 6]))
            heights[col] += 1
            moves += str(col + 1)
        try:  # raises when the random game is over (before or with the last move)
            pos, mask = moves_to_bitboards(moves)
            scores, ok, _ = solver.solve_batch(
                np.array([pos], np.int64), np.array([mask], np.int64), max_nodes=GENERATE_MAX_NODES
            )
        except ValueError:
            continue
        score = int(scores[0])
        if ok[0] and left_lo <= moves_left(len(moves), score) <= left_hi:
            found.setdefault(moves, score)
    return list(found.items())


def _load(path: Path, limit: int | None) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()][:limit]
    pairs = [moves_to_bitboards(r[0]) for r in rows]
    pos = np.array([p for p, _ in pairs], dtype=np.int64)  # [N]
    mask = np.array([m for _, m in pairs], dtype=np.int64)  # [N]
    if any(len(r) < 2 for r in rows):
        raise ValueError(f"{path}: every line must be '<moves> <score>' (a Pons benchmark file)")
    expected = np.array([int(r[1]) for r in rows], dtype=np.int64)  # [N]
    return [r[0] for r in rows], pos, mask, expected


def _time_file(pos, mask, weak: bool, repeats: int) -> tuple[list[float], np.ndarray, np.ndarray]:
    """Seconds per repeat (fresh zeroed table each), plus the last scores and nodes."""
    times = []
    scores = nodes = None
    for _ in range(repeats):
        solver = Solver()
        solver.reset()  # commit the table's pages before the clock starts
        start = time.perf_counter()
        scores, ok, nodes = solver.solve_batch(pos, mask, weak=weak)
        times.append(time.perf_counter() - start)
        assert ok.all()
    return times, scores, nodes


def _time_fresh_table(pos, mask) -> tuple[float, float, float]:
    """Mean us per position and nodes with the table emptied before each; us per empty call."""
    solver = Solver()
    n = pos.shape[0]
    scores = np.zeros(1, np.int8)
    ok = np.zeros(1, np.bool_)
    nodes = np.zeros(1, np.int64)
    total, total_nodes = 0.0, 0
    for i in range(n):
        solver.reset()
        start = time.perf_counter()
        _solve_batch(pos[i : i + 1], mask[i : i + 1], False, 0, *solver._search, scores, ok,
                     nodes)  # fmt: skip
        total += time.perf_counter() - start
        total_nodes += int(nodes[0])
    # Dispatch cost: an empty batch (no search at all), best of many.
    empty = np.zeros(0, np.int64)
    best = float("inf")
    for _ in range(200):
        start = time.perf_counter()
        _solve_batch(empty, empty, False, 0, *solver._search, scores, ok, nodes)
        best = min(best, time.perf_counter() - start)
    return total / n * 1e6, total_nodes / n, best * 1e6


def _startup_seconds() -> dict:
    code = (
        "import json, time\n"
        "t0 = time.perf_counter()\n"
        "from connect_zero_pipeline.core.solver import Solver\n"
        "t1 = time.perf_counter()\n"
        "Solver().solve('52753311433677442422121')\n"
        "t2 = time.perf_counter()\n"
        "print(json.dumps({'import_s': t1 - t0, 'first_solve_s': t2 - t1}))\n"
    )
    out = {}
    for _ in range(2):  # the first run may have to fill numba's cache
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if res.returncode != 0:
            return {"error": res.stderr.strip().splitlines()[-1:]}
        out = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def _bench_set(label: str, pos, mask, expected, args, whole: bool) -> Iterator[dict]:
    """The figures of one set of positions (a file, or a generated class)."""
    n = pos.shape[0]
    repeats = 2 if args.quick else 5
    ref = REFERENCE_US.get(Path(label).name)
    common = {"file": label, "positions": n, "unit": "us"}
    wrong = 0
    for weak, suffix in ((False, ""), (True, "_weak")):
        times, scores, nodes = _time_file(pos, mask, weak, repeats)
        truth = np.sign(expected) if weak else expected
        wrong += int((scores != truth).sum())
        us = [t / n * 1e6 for t in times]
        extra = dict(common, median=statistics.median(us), repeats=repeats)
        if ref is not None and not weak and whole:  # the reference is whole-file
            extra.update(reference_us=ref, ratio=min(us) / ref)
        yield figure("solver", f"us_per_position{suffix}", min(us), **extra)
        yield figure("solver", f"nodes_per_position{suffix}", float(nodes.mean()), file=label)
    fresh_n = min(n, 100 if args.quick else 300)
    us, nodes, call = _time_fresh_table(pos[:fresh_n], mask[:fresh_n])
    yield figure("solver", "us_per_position_fresh_table", us, **dict(common, positions=fresh_n))
    yield figure("solver", "nodes_per_position_fresh_table", nodes, file=label)
    yield figure("solver", "us_per_call", call, unit="us")
    yield figure("solver", "wrong_scores", float(wrong), file=label)


def run(args) -> Iterator[dict]:
    """Yield the figures described in the module docstring."""
    default = [PONS_DIR / "Test_L3_R1", PONS_DIR / "Test_L2_R1"]
    paths = [Path(args.file)] if args.file else default
    limit = 200 if args.quick else None

    warm = Solver(tt_log2=12)  # compile (or load from cache) outside the clock
    warm.solve_batch(np.array([0], np.int64), np.array([1], np.int64), max_nodes=10)
    warm.solve_batch(np.array([0], np.int64), np.array([1], np.int64), weak=True, max_nodes=10)

    for path in paths:
        if not path.is_file():
            yield {"bench": "solver", "error": f"file not found: {path}"}
            continue
        _, pos, mask, expected = _load(path, limit)
        yield from _bench_set(str(path), pos, mask, expected, args, whole=limit is None)
    if getattr(args, "generated", False):
        count = 50 if args.quick else 200
        for seed, name in enumerate(CLASSES):
            start = time.perf_counter()
            rows = generate_class(name, count, seed)
            pairs = [moves_to_bitboards(m) for m, _ in rows]
            pos = np.array([p for p, _ in pairs], dtype=np.int64)
            mask = np.array([m for _, m in pairs], dtype=np.int64)
            expected = np.array([sc for _, sc in rows], dtype=np.int64)
            yield figure("solver", "generated_positions", float(count), file=name, seed=seed,
                         generate_s=time.perf_counter() - start)  # fmt: skip
            yield from _bench_set(name, pos, mask, expected, args, whole=True)
    if not args.quick:
        start = _startup_seconds()
        if "first_solve_s" in start:
            yield figure("solver", "startup_s", start["first_solve_s"], import_s=start["import_s"])
        else:
            yield {"bench": "solver", "figure": "startup_s", **start}
