"""Solver labelling at scale: a persistent cache, worker pools and per-position budgets.

Building the solver-labelled evaluation set means analysing (solving every
move of) tens of thousands of positions. Near the opening, one position can
take minutes without an opening book, so:

- every analysis has a node budget (``max_nodes``); a position over budget is
  skipped and counted, never waited for;
- every result ever computed goes into a :class:`SolvedCache` on disk
  (append-only Parquet parts), so a rerun or an interrupted run only solves
  what is new;
- misses are solved in chunks (:class:`Labeller`), in this process or on
  every core through a runner from :mod:`connect_zero_pipeline.executors`
  (a process pool, or Ray tasks).

It also plays the dataset's games: random openings, then epsilon-greedy perfect
play (:func:`generate_games`), labelling through the same cache.

Shapes: N positions, A = 7 columns. Bitboards are ``uint64`` here (Parquet's
type); the solver takes them as int64 bit patterns.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .bitboard import (
    BOARD_MASK,
    BOTTOM_MASK,
    H1,
    four_in_a_row,
    is_terminal,
    mirror_bitboard,
    moves_to_bitboards,
    play_move,
    top_mask_col,
)
from .board import WIDTH
from .files import atomic_path
from .progress import progress_bar
from .solver import Solver, SolverSpec

log = logging.getLogger(__name__)

FULL_COLUMN = -128  # score of a full column in int8 score arrays (as core.solver)
SCORE_COLUMNS = [f"score_{c}" for c in range(1, WIDTH + 1)]


def position_keys(position: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``[N] uint64`` unique keys: ``position + mask + bottom row`` (see core.solver)."""
    return position.astype(np.uint64) + mask.astype(np.uint64) + np.uint64(BOTTOM_MASK)


def canonical_keys(position: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``[N] uint64``: the smaller key of a position and its mirror image (for dedupe)."""
    p, m = position.astype(np.uint64), mask.astype(np.uint64)
    return np.minimum(position_keys(p, m), position_keys(mirror_bitboard(p), mirror_bitboard(m)))


# ---------------------------------------------------------------------------
# Persistent cache
# ---------------------------------------------------------------------------


SHIPPED_PART = "part-public-sets.parquet"
"""The part of the solver cache the repository ships: every move of every position of the
public sets, solved (``scripts/public_sets_cache.py``), so a fresh clone solves none of them."""


def cache_part(position: np.ndarray, mask: np.ndarray, scores: np.ndarray) -> pd.DataFrame:
    """Solved positions as one part of a :class:`SolvedCache`: ``key``, ``position``, ``mask``
    and ``score_1..score_7`` (``scores [N, 7] int8``, -128 for a full column)."""
    df = pd.DataFrame(
        {
            "key": position_keys(position, mask),
            "position": np.asarray(position).astype(np.uint64),
            "mask": np.asarray(mask).astype(np.uint64),
        }
    )
    for c, name in enumerate(SCORE_COLUMNS):
        df[name] = scores[:, c].astype(np.int8)
    return df


class SolvedCache:
    """Every analysed position, on disk as append-only Parquet parts.

    Each part holds ``key, position, mask`` (uint64) and ``score_1..score_7``
    (int8, -128 for a full column). Parts are written atomically (temporary
    file, then rename), so an interrupted run loses at most the chunk in
    flight and never corrupts the cache. ``directory=None`` keeps it in memory.
    """

    def __init__(self, directory: str | Path | None):
        self.directory = Path(directory) if directory is not None else None
        self._keys = np.empty(0, dtype=np.uint64)  # sorted
        self._scores = np.empty((0, WIDTH), dtype=np.int8)
        self._pending: list[pd.DataFrame] = []
        if self.directory is not None and self.directory.exists():
            parts = sorted(self.directory.glob("part-*.parquet"))
            if parts:
                self._merge(pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True))

    def __len__(self) -> int:
        return int(self._keys.shape[0])

    def _merge(self, df: pd.DataFrame) -> None:
        keys = np.concatenate([self._keys, df["key"].to_numpy(np.uint64)])
        scores = np.concatenate([self._scores, df[SCORE_COLUMNS].to_numpy(np.int8)])
        keys, first = np.unique(keys, return_index=True)  # sorted, duplicates dropped
        self._keys, self._scores = keys, scores[first]

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(found [N] bool, scores [N, 7] int8)`` for ``keys [N] uint64``."""
        keys = np.asarray(keys, dtype=np.uint64)
        scores = np.zeros((len(keys), WIDTH), dtype=np.int8)
        if not len(self):
            return np.zeros(len(keys), dtype=bool), scores
        idx = np.minimum(np.searchsorted(self._keys, keys), len(self) - 1)
        found = self._keys[idx] == keys
        scores[found] = self._scores[idx[found]]
        return found, scores

    def add(self, position: np.ndarray, mask: np.ndarray, scores: np.ndarray) -> None:
        """Add solved positions (kept in memory until :meth:`flush`)."""
        if len(position) == 0:
            return
        df = cache_part(position, mask, scores)
        self._merge(df)
        self._pending.append(df)

    def flush(self) -> None:
        """Write what was added since the last flush as one new part."""
        if self.directory is None or not self._pending:
            self._pending.clear()
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        df = pd.concat(self._pending, ignore_index=True)
        name = f"part-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{time.monotonic_ns()}.parquet"
        with atomic_path(self.directory / name) as tmp:
            df.to_parquet(tmp, index=False)
        self._pending.clear()


# ---------------------------------------------------------------------------
# Workers
# ---------------------------------------------------------------------------

LABELLING_SOLVER = SolverSpec(tt_log2=22)
"""A labelling worker's solver by default: a 32 MiB table, no opening book."""
_WORKER_SOLVER: tuple[SolverSpec, Solver] | None = None  # this process's (a pool process, a
# Ray worker, or the caller), kept between chunks with its table and its mapped book


def init_worker_solver(spec: SolverSpec) -> None:
    """Give this process its solver (a pool's initializer; :func:`solve_chunk` calls it lazily)."""
    global _WORKER_SOLVER

    _WORKER_SOLVER = (spec, spec.make())


def solve_chunk(
    position: np.ndarray, mask: np.ndarray, max_nodes: int, spec: SolverSpec = LABELLING_SOLVER
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Analyse one chunk (in a worker process, a Ray task or in-process) with this process's
    solver of ``spec``.

    Returns:
        ``scores [n, 7] int8``, ``ok [n] bool``, ``nodes [n] int64`` and the seconds spent.
    """
    if _WORKER_SOLVER is None or _WORKER_SOLVER[0] != spec:
        init_worker_solver(spec)
    start = time.perf_counter()
    scores, ok, nodes = _WORKER_SOLVER[1].analyze_batch(
        position.view(np.int64), mask.view(np.int64), max_nodes=max_nodes
    )
    return scores, ok, nodes, time.perf_counter() - start


@dataclass
class LabelStats:
    """Counts and timings of one :meth:`Labeller.label` call (and running totals)."""

    requested: int = 0
    cached: int = 0
    solved: int = 0
    skipped: int = 0  # over the node budget
    nodes: int = 0
    solve_seconds: float = 0.0

    def add(self, other: LabelStats) -> None:
        for k in ("requested", "cached", "solved", "skipped", "nodes", "solve_seconds"):
            setattr(self, k, getattr(self, k) + getattr(other, k))


ChunkRunner = Callable[
    [list[tuple[np.ndarray, np.ndarray]], int, SolverSpec], Iterator[tuple[int, tuple]]
]
"""``run_chunks(chunks, max_nodes, spec)``: solves ``[(position, mask)]`` chunks and yields
``(chunk index, solve_chunk result)`` in any order. Runners with workers (a process pool, Ray
tasks) live in :mod:`connect_zero_pipeline.executors`; one with ``close()`` is closed with the
labeller."""


def serial_chunks(
    chunks: Sequence[tuple[np.ndarray, np.ndarray]], max_nodes: int, spec: SolverSpec
) -> Iterator[tuple[int, tuple]]:
    """The in-process :data:`ChunkRunner`: chunks one after another, in this process."""
    for i, (p, m) in enumerate(chunks):
        yield i, solve_chunk(p, m, max_nodes, spec)


@dataclass
class Labeller:
    """Analyse positions with a cache, a node budget and a chunk runner.

    Args:
        max_nodes: node budget per position (0: none), or a function that says it, called
            when :attr:`solver`'s is (a budget that depends on the opening book). Over-budget
            positions are skipped (``ok`` False) and counted.
        cache: the :class:`SolvedCache` to read and extend.
        chunk_size: positions per task; a chunk is also the unit saved to the cache.
        solver: what each worker's solver is (:class:`~.solver.SolverSpec`: its table size,
            its opening book), or a function that says it, called once, when there is
            something to solve (a labeller whose every position is cached never asks: the
            opening book is looked for then).
        run_chunks: who solves the chunks (:data:`ChunkRunner`): in this process
            by default (:func:`serial_chunks`); a process pool or Ray tasks come
            from :mod:`connect_zero_pipeline.executors`.
        flush_seconds: new analyses are written to the cache at least this often, and at
            :meth:`close`; 0 (the default) also at the end of every :meth:`label` call. A
            caller with many small calls (the solver players of a ladder: one per move)
            sets it, so the cache gets a part file per interval instead of one per call.
    """

    max_nodes: int | Callable[[], int] = 2_000_000
    cache: SolvedCache = field(default_factory=lambda: SolvedCache(None))
    chunk_size: int = 64
    solver: SolverSpec | Callable[[], SolverSpec] = LABELLING_SOLVER
    run_chunks: ChunkRunner = serial_chunks
    flush_seconds: float = 0.0
    totals: LabelStats = field(default_factory=LabelStats)

    def __post_init__(self):
        if not callable(self.max_nodes) and self.max_nodes < 0:
            raise ValueError(f"max_nodes must be >= 0, got {self.max_nodes}")
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size}")
        self._last_flush = time.monotonic()

    def _spec(self) -> SolverSpec:
        if not isinstance(self.solver, SolverSpec):
            self.solver = self.solver()
        return self.solver

    def _budget(self) -> int:
        if callable(self.max_nodes):
            self.max_nodes = int(self.max_nodes())
        return self.max_nodes

    def __enter__(self) -> Labeller:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _flush(self) -> None:
        self.cache.flush()
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush the cache and close the runner (a worker pool), if it can be closed."""
        self._flush()
        close = getattr(self.run_chunks, "close", None)
        if close is not None:
            close()

    def label(
        self, position: np.ndarray, mask: np.ndarray, progress: bool | str = False
    ) -> tuple[np.ndarray, np.ndarray, LabelStats]:
        """Analyse ``position, mask [N] uint64`` (unfinished positions).

        Returns:
            ``scores [N, 7] int8`` (-128 for full columns; meaningless where
            ``ok`` is False), ``ok [N] bool`` and this call's :class:`LabelStats`.
        """
        position = np.asarray(position, dtype=np.uint64)
        mask = np.asarray(mask, dtype=np.uint64)
        n = position.shape[0]
        stats = LabelStats(requested=n)
        keys = position_keys(position, mask)
        found, scores = self.cache.lookup(keys)
        ok = found.copy()
        stats.cached = int(found.sum())
        _, first = np.unique(keys[~found], return_index=True)
        miss_idx = np.flatnonzero(~found)[first]  # one representative per distinct miss
        chunks = [
            (position[miss_idx[i : i + self.chunk_size]], mask[miss_idx[i : i + self.chunk_size]])
            for i in range(0, len(miss_idx), self.chunk_size)
        ]
        solved_keys, solved_scores = [], []
        bar = None
        if progress and chunks:
            label = progress if isinstance(progress, str) else "solving"
            bar = progress_bar(total=len(miss_idx), desc=label, unit="pos", leave=False)
        try:
            for i, (c_scores, c_ok, c_nodes, seconds) in self.run_chunks(
                chunks,
                self._budget() if chunks else 0,
                self._spec() if chunks else LABELLING_SOLVER,
            ):
                p, m = chunks[i]
                stats.nodes += int(c_nodes.sum())
                stats.solve_seconds += seconds
                stats.solved += int(c_ok.sum())
                stats.skipped += int((~c_ok).sum())
                self.cache.add(p[c_ok], m[c_ok], c_scores[c_ok])
                solved_keys.append(position_keys(p[c_ok], m[c_ok]))
                solved_scores.append(c_scores[c_ok])
                if time.monotonic() - self._last_flush > (self.flush_seconds or 30):
                    self._flush()  # keep progress if interrupted
                if bar is not None:
                    bar.update(len(p))
                    bar.set_postfix(skipped=stats.skipped)
        finally:
            if bar is not None:
                bar.close()
            if not self.flush_seconds:
                self._flush()
        if solved_keys:
            # Every copy of a solved key gets its scores (duplicates were solved once).
            found2, scores2 = self.cache.lookup(keys)
            newly = found2 & ~ok
            scores[newly] = scores2[newly]
            ok |= newly
        self.totals.add(stats)
        return scores, ok, stats


# ---------------------------------------------------------------------------
# Dataset games: random openings, then epsilon-greedy perfect play
# ---------------------------------------------------------------------------


def _legal_np(mask: np.ndarray) -> np.ndarray:
    """``[N, 7] bool`` playable columns of ``uint64 [N]`` masks."""
    tops = np.array([top_mask_col(c) for c in range(WIDTH)], dtype=np.uint64)
    return (mask[:, None] & tops[None, :]) == 0


def generate_games(
    num_games: int,
    labeller: Labeller,
    epsilon: float = 0.2,
    opening_plies: Sequence[int] = (4, 10),
    seed: int = 0,
    progress: bool = False,
) -> list[str]:
    """Play ``num_games`` games: a random opening, then epsilon-greedy perfect players.

    Game ``g`` starts with ``L_g ~ U[opening_plies]`` uniformly random moves.
    After that each move is, with probability ``epsilon``, a random legal move;
    otherwise a uniformly random optimal move from the labeller's analysis (a
    random legal move when the position is over the node budget).

    Returns:
        The games as Pons move strings (finished games: a win or a full board).
    """
    lo, hi = opening_plies
    if not 0 <= lo <= hi <= 42:
        raise ValueError(
            f"opening_plies must be [lo, hi] with 0 <= lo <= hi <= 42, got {opening_plies!r}"
        )
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    rng = np.random.default_rng(seed)
    opening = rng.integers(lo, hi + 1, size=num_games)
    position = np.zeros(num_games, dtype=np.uint64)
    mask = np.zeros(num_games, dtype=np.uint64)
    moves = [[] for _ in range(num_games)]
    active = np.ones(num_games, dtype=bool)
    for ply in range(42):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        legal = _legal_np(mask[idx])  # (n, 7)
        # Random choice among legal columns: argmax of uniform noise on legal ones.
        noise = rng.random(legal.shape)
        cols = np.where(legal, noise, -1.0).argmax(1)
        explore = rng.random(idx.size) < epsilon
        perfect = (ply >= opening[idx]) & ~explore
        if perfect.any():
            sel = idx[perfect]
            scores, ok, _ = labeller.label(
                position[sel], mask[sel], progress=progress and f"ply {ply}"
            )
            best = scores.max(1, keepdims=True)
            optimal = (scores == best) & (scores != FULL_COLUMN)
            choice = np.where(optimal, rng.random(optimal.shape), -1.0).argmax(1)
            pick = cols[perfect]
            pick[ok] = choice[ok]
            cols[perfect] = pick
        bottom = np.left_shift(np.uint64(1), cols.astype(np.uint64) * np.uint64(H1))  # (n,)
        position[idx], mask[idx] = play_move(position[idx], mask[idx], bottom)
        won = four_in_a_row(position[idx] ^ mask[idx])  # the stones of who just moved
        for g, c in zip(idx, cols, strict=True):
            moves[g].append(str(c + 1))
        full = mask[idx] == np.uint64(BOARD_MASK)
        active[idx[won | full]] = False
    return ["".join(m) for m in moves]


def collect_positions(games: Sequence[str], min_ply: int) -> pd.DataFrame:
    """Every unfinished position of ``games`` with ``ply >= min_ply``, exact duplicates removed.

    Returns:
        ``moves`` (str), ``ply`` (int8), ``position``, ``mask`` (uint64).
    """
    rows: dict[int, tuple[str, int, int, int]] = {}
    for game in games:
        for ply in range(min_ply, len(game)):  # prefixes only: the final position is finished
            prefix = game[:ply]
            p, m = moves_to_bitboards(prefix)
            if is_terminal(p, m):  # a game listed past its end: nothing more to collect
                break
            key = p + m + BOTTOM_MASK
            if key not in rows:
                rows[key] = (prefix, ply, p, m)
    values = list(rows.values())
    return pd.DataFrame(
        {
            "moves": [v[0] for v in values],
            "ply": np.array([v[1] for v in values], dtype=np.int8),
            "position": np.array([v[2] for v in values], dtype=np.uint64),
            "mask": np.array([v[3] for v in values], dtype=np.uint64),
        }
    )


def labelled_table(positions: pd.DataFrame, scores: np.ndarray, ok: np.ndarray) -> pd.DataFrame:
    """Add ``score_1..7`` (nullable Int8), ``best_score`` and ``decisive``; drop unsolved rows."""
    df = positions.loc[ok].reset_index(drop=True).copy()
    s = scores[ok]
    for c, name in enumerate(SCORE_COLUMNS):
        col = pd.array(s[:, c], dtype="Int8")
        col[s[:, c] == FULL_COLUMN] = pd.NA
        df[name] = col
    valid = np.where(s == FULL_COLUMN, np.int16(-1000), s.astype(np.int16))
    best = valid.max(1)
    legal_scores = np.where(s == FULL_COLUMN, best[:, None], s)  # full columns don't count
    df["best_score"] = best.astype(np.int8)
    df["decisive"] = (legal_scores != best[:, None]).any(1)
    return df


def dedupe_decisive(labelled: pd.DataFrame) -> pd.DataFrame:
    """Keep decisive positions, one per mirror pair (the first seen), sorted by ply then moves."""
    df = labelled.loc[labelled["decisive"]].copy()
    canon = canonical_keys(df["position"].to_numpy(np.uint64), df["mask"].to_numpy(np.uint64))
    df = df.loc[~pd.Series(canon, index=df.index).duplicated()]
    return df.sort_values(["ply", "moves"], kind="stable").reset_index(drop=True)
