"""``pons`` nodes: generate games, collect positions, label them, keep decisive ones.

All solving goes through one :class:`~...core.labelling.Labeller` mechanism
with the persistent cache, so the labelling step re-solves nothing the game
generation already solved, and a rerun re-solves nothing at all.
"""

from __future__ import annotations

import functools
import logging
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from ...common.opening_book import has_book, solver_spec
from ...core.config.evaluation import BUCKETS
from ...core.labelling import (
    SCORE_COLUMNS,
    Labeller,
    SolvedCache,
    collect_positions,
    dedupe_decisive,
    generate_games,
    labelled_table,
)
from ...executors.dispatch import chunk_runner
from ...params.pons import PonsConfig
from ...params.schema import parse_section

log = logging.getLogger(__name__)


@contextmanager
def pons_labeller(cfg: PonsConfig, cache_dir: str | None, max_nodes: int | None = None):
    """The solver of the ``pons`` section: its cache (``cache_dir``: the run's ``pons.cache_dir``
    as its plan resolved it, the catalog entry ``solver_cache``; None: none), executor and
    budget (``max_nodes`` instead of ``cfg.max_nodes`` when given; 0: exact), with this
    machine's opening book (:mod:`...common.opening_book`)."""
    cache = SolvedCache(Path(cache_dir) if cache_dir else None)
    if max_nodes is not None or cfg.max_nodes is not None:
        budget = cfg.max_nodes if max_nodes is None else max_nodes
        said = f"a budget of {budget:,} nodes a position" if budget else "no node limit"
    else:  # the book's budget, or the search's: the book is looked for when a position is
        budget = lambda: cfg.budget(has_book())  # noqa: E731 (solved, never for a cached set)
        said = (f"a budget of {cfg.budget(True):,} nodes a position with the opening book, "
                f"{cfg.budget(False):,} without")  # fmt: skip
    labeller = Labeller(
        max_nodes=budget,
        cache=cache,
        chunk_size=cfg.chunk_size,
        solver=functools.partial(solver_spec, cfg.tt_log2),  # its opening book, if it solves
        run_chunks=chunk_runner(cfg.node),
    )
    log.info("Solver cache %s: %d positions; %s", cache_dir, len(cache), said)
    with labeller:
        yield labeller


def generate_pons_games(params: dict, solver_cache: str | None = None) -> pd.DataFrame:
    """Games from random openings and epsilon-greedy perfect play, as move strings
    (``solver_cache``: :func:`pons_labeller`'s ``cache_dir``)."""
    cfg = parse_section("pons", params)
    start = time.perf_counter()
    with pons_labeller(cfg, solver_cache) as labeller:
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
    cfg = parse_section("pons", params)
    positions = collect_positions(games["moves"].tolist(), cfg.min_ply)
    log.info("Collected %d positions with ply >= %d", len(positions), cfg.min_ply)
    return positions


def label_pons_positions(positions: pd.DataFrame, params: dict,
                         solver_cache: str | None = None) -> tuple[pd.DataFrame, dict]:  # fmt: skip
    """Analyse every position (all 7 moves) within the budget; unsolved ones are dropped and
    counted (``solver_cache``: :func:`pons_labeller`'s ``cache_dir``)."""
    cfg = parse_section("pons", params)
    start = time.perf_counter()
    with pons_labeller(cfg, solver_cache) as labeller:
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
    for name, (lo, hi) in BUCKETS.items():
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
    for name, (lo, hi) in BUCKETS.items():
        metrics[f"set.count_{name}"] = int(table["ply"].between(lo, hi).sum())
    log.info("Evaluation set: %d decisive positions; by ply: %s", len(table), counts.to_dict())
    return table, _as_mlflow(metrics)


def _as_mlflow(metrics: dict) -> dict:
    return {k: {"value": float(v), "step": 0} for k, v in metrics.items()}
