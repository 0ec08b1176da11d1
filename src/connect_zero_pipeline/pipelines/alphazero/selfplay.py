"""Self-play nodes: parameters -> core calls."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ...core.compiled import compile_backend
from ...core.models import build_model, count_parameters
from ...core.selfplay import COLUMNS, empty_games_table
from ...executors.dispatch import play_generation
from ...params.schema import parse_section

log = logging.getLogger(__name__)


def init_model(
    params: dict, start_point: dict, model_files: Mapping[str, Callable[[], Any]]
) -> nn.Module:
    """Generation 0 (section ``model``, :class:`ModelSpec`): a freshly initialised network,
    or the trained one the run starts from: ``start_point["model"]``, a partition of
    ``model_files`` (the models folder). The session resolves ``model.start_from`` into
    ``start_point`` once, at the run's start (:mod:`...run.start`)."""
    if start_point:
        model = model_files[start_point["model"]]()
        model.meta = {"generation": 0, "started_from": start_point["described"]}
        log.info("Generation 0: %s, %d parameters", start_point["described"],
                 count_parameters(model))  # fmt: skip
        return model
    spec = parse_section("model", params)
    torch.manual_seed(spec.seed)  # initial weights only; self-play and training take their own
    model = build_model(spec.config())
    model.meta = {"generation": 0}
    log.info("Initialised %s with %d parameters", model.config, count_parameters(model))
    return model


def start_games(start_point: dict, games_files: Mapping[str, Callable[[], Any]]) -> pd.DataFrame:
    """Generation 0's games: with ``model.start_window``, the replay window of the run the
    model starts from (``start_point["games"]``: the ``[generation, partition]`` of its last
    ``train.buffer_gens - 1`` generations up to the start, in ``games_files``, the self-play
    folder), their ``generation`` renumbered so that the start's is 0 (then -1, -2, ...);
    else an empty table."""
    chosen = (start_point or {}).get("games") or []
    if not chosen:
        return empty_games_table()
    last = chosen[-1][0]
    tables = [games_files[pid]().assign(generation=k - last) for k, pid in chosen]
    games = pd.concat(tables, ignore_index=True).astype({"generation": COLUMNS["generation"]})
    log.info("Generation 0's games: generations %d-%d of %s, %d positions",
             chosen[0][0], last, start_point["described"], len(games))  # fmt: skip
    return games


def generate_games(model: nn.Module, params: dict, generation: int) -> tuple[pd.DataFrame, dict]:
    """One generation of batched MCTS self-play, on the configured executor.

    The section's ``node`` keys (device, workers, executor, ...:
    :class:`~...executors.settings.NodeSettings`) never change the table.

    Returns:
        The games table (``docs/architecture.md``) and ``selfplay`` metrics.
    """
    cfg = parse_section("selfplay", params)
    start, stats = time.perf_counter(), {}
    games = play_generation(cfg, model, generation, cfg.node, stats)
    seconds = time.perf_counter() - start
    num_games = int(games["game"].nunique())
    metrics = {
        "positions": float(len(games)),
        "games": float(num_games),
        "mean_game_length": float(len(games) / max(num_games, 1)),
        "first_player_score": float(_first_player_score(games)),
        "seconds": seconds,
        "positions_per_s": len(games) / seconds if seconds else 0.0,
    }
    if compile_backend(cfg.node.compile) is not None:  # compiled: its share of the seconds
        metrics["compile_s"] = float(stats.get("compile_s", 0.0))
    log.info(
        "Generation %d self-play: %s", generation, {k: round(v, 3) for k, v in metrics.items()}
    )
    return games, metrics


def _first_player_score(games: pd.DataFrame) -> float:
    """Mean outcome for the first player (+1 win, 0 draw, -1 loss) over finished games
    (the sign of ``z``: a win's ``z`` is below 1 when ``win_decay`` > 0)."""
    if games.empty:
        return 0.0
    first = games[games["ply"] == 0]
    return float(np.sign(first["z"]).mean())
