"""``pons`` nodes: generate games, collect positions, label them, keep decisive ones.

All solving goes through one :class:`~...core.labelling.Labeller` mechanism
with the persistent cache, so the labelling step re-solves nothing the game
generation already solved, and a rerun re-solves nothing at all.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...core.config import check
from ...core.evaluation import PLY_BUCKETS
from ...core.labelling import (
    SCORE_COLUMNS,
    Labeller,
    SolvedCache,
    collect_positions,
    dedupe_decisive,
    generate_games,
    labelled_table,
)
from ...executors import chunk_runner
from ..params import parse_section

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PonsConfig:
    num_games: int = 1000
    """Games between epsilon-greedy perfect players."""
    epsilon: float = 0.25
    """Probability of a random move instead of a perfect one."""
    opening_plies: list = field(default_factory=lambda: [4, 12])
    """Each game starts with a uniformly random number of random moves in this range."""
    min_ply: int = 6
    """Collect positions with at least this many stones."""
    max_nodes: int = 1_000_000
    """Per-position solver budget (nodes, all 7 moves together); over-budget positions are skipped."""
    workers: int = 0
    """Solver processes (0: one per CPU)."""
    chunk_size: int = 32
    """Positions per solver task."""
    tt_log2: int = 22
    """Transposition table size of each solver process (2**tt_log2 entries of 8 bytes)."""
    cache_dir: str | None = "data/02_intermediate/solver_cache"
    """Persistent cache of every solved position (null: none)."""
    executor: str = "local"
    """``local`` (process pool) or ``ray``."""
    ray_address: str | None = None
    """Ray cluster address for ``executor: ray`` (``auto``, ``ray://host:port``; null: RAY_ADDRESS or auto)."""
    max_retries: int = 3
    """``executor: ray``: retries of a solver task whose worker died."""
    seed: int = 0
    """Seeds the games."""

    def __post_init__(self):
        check(self.num_games >= 1, "num_games", self.num_games, ">= 1")
        check(0 <= self.epsilon <= 1, "epsilon", self.epsilon, "in [0, 1]")
        check(
            isinstance(self.opening_plies, (list, tuple))
            and len(self.opening_plies) == 2
            and 0 <= self.opening_plies[0] <= self.opening_plies[1] <= 41,
            "opening_plies",
            self.opening_plies,
            "[lo, hi] with 0 <= lo <= hi <= 41",
        )
        check(0 <= self.min_ply <= 41, "min_ply", self.min_ply, "in [0, 41]")
        check(self.max_nodes >= 0, "max_nodes", self.max_nodes, ">= 0 (0: no budget)")
        check(self.workers >= 0, "workers", self.workers, ">= 0")
        check(self.executor in ("local", "ray"), "executor", self.executor, "'local' or 'ray'")
        check(self.max_retries >= 0, "max_retries", self.max_retries, ">= 0")


@contextmanager
def _labeller(cfg: PonsConfig):
    cache = SolvedCache(cfg.cache_dir)
    labeller = Labeller(
        max_nodes=cfg.max_nodes,
        cache=cache,
        chunk_size=cfg.chunk_size,
        tt_log2=cfg.tt_log2,
        run_chunks=chunk_runner(
            cfg.executor, cfg.workers, ray_address=cfg.ray_address, max_retries=cfg.max_retries
        ),
    )
    log.info("Solver cache %s: %d positions", cfg.cache_dir, len(cache))
    with labeller:
        yield labeller


def generate_pons_games(params: dict) -> pd.DataFrame:
    """Games from random openings and epsilon-greedy perfect play, as move strings."""
    (cfg,) = parse_section("pons", params)
    start = time.perf_counter()
    with _labeller(cfg) as labeller:
        games = generate_games(
            cfg.num_games,
            labeller,
            epsilon=cfg.epsilon,
            opening_plies=cfg.opening_plies,
            seed=cfg.seed,
            progress=True,
        )
    log.info(
        "Played %d games in %.0f s (%s)", len(games), time.perf_counter() - start, labeller.totals
    )
    return pd.DataFrame({"game": np.arange(len(games), dtype=np.int32), "moves": games})


def collect_pons_positions(games: pd.DataFrame, params: dict) -> pd.DataFrame:
    """Unique unfinished positions with ``ply >= min_ply``."""
    (cfg,) = parse_section("pons", params)
    positions = collect_positions(games["moves"].tolist(), cfg.min_ply)
    log.info("Collected %d positions with ply >= %d", len(positions), cfg.min_ply)
    return positions


def label_pons_positions(positions: pd.DataFrame, params: dict) -> tuple[pd.DataFrame, dict]:
    """Analyse every position (all 7 moves) within the budget; unsolved ones are dropped and counted."""
    (cfg,) = parse_section("pons", params)
    start = time.perf_counter()
    with _labeller(cfg) as labeller:
        scores, ok, stats = labeller.label(
            positions["position"].to_numpy(np.uint64),
            positions["mask"].to_numpy(np.uint64),
            progress="labelling",
        )
    seconds = time.perf_counter() - start
    labelled = labelled_table(positions, scores, ok)
    ply = positions["ply"].to_numpy()
    metrics = {
        "label.requested": stats.requested,
        "label.cached": stats.cached,
        "label.solved": stats.solved,
        "label.skipped": stats.skipped,
        "label.nodes": stats.nodes,
        "label.solve_seconds": stats.solve_seconds,
        "label.seconds": seconds,
    }
    for name, (lo, hi) in PLY_BUCKETS.items():
        sel = (ply >= lo) & (ply <= hi)
        metrics[f"label.skipped_{name}"] = int((~ok & sel).sum())
    log.info("Labelled %d of %d positions: %s", int(ok.sum()), len(positions), metrics)
    return labelled, _as_mlflow(metrics)


def select_pons_positions(labelled: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Decisive positions, one per mirror pair; the evaluation set (schema in ``docs/architecture.md``)."""
    table = dedupe_decisive(labelled)
    table = table[
        [
            "moves",
            "ply",
            "position",
            "mask",
            *SCORE_COLUMNS,
            "best_score",
            "decisive",
        ]
    ]
    counts = table["ply"].value_counts().sort_index()
    metrics = {"set.size": len(table)}
    for ply, n in counts.items():
        metrics[f"set.ply_{int(ply):02d}"] = int(n)
    for name, (lo, hi) in PLY_BUCKETS.items():
        metrics[f"set.count_{name}"] = int(table["ply"].between(lo, hi).sum())
    log.info("Evaluation set: %d decisive positions; by ply: %s", len(table), counts.to_dict())
    return table, _as_mlflow(metrics)


def _as_mlflow(metrics: dict) -> dict:
    return {k: {"value": float(v), "step": 0} for k, v in metrics.items()}
