"""Self-play nodes: parameters -> core calls."""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
import torch
from torch import nn

from ...core.models import build_model, count_parameters
from ...executors import play_generation
from ...params.schema import parse_section

log = logging.getLogger(__name__)


def init_model(params: dict) -> nn.Module:
    """Generation 0: a freshly initialised network (section ``model``, :class:`ModelSpec`)."""
    spec = parse_section("model", params)
    torch.manual_seed(
        spec.seed
    )  # initial weights only; self-play and training take their own seeds
    model = build_model(spec.config())
    model.meta = {"generation": 0}
    log.info("Initialised %s with %d parameters", model.config, count_parameters(model))
    return model


def generate_games(model: nn.Module, params: dict, generation: int) -> tuple[pd.DataFrame, dict]:
    """One generation of batched MCTS self-play, on the configured executor.

    The section's ``node`` keys (device, workers, executor, ...:
    :class:`~...executors.settings.NodeSettings`) never change the table.

    Returns:
        The games table (``docs/architecture.md``) and ``selfplay`` metrics.
    """
    cfg = parse_section("selfplay", params)
    start = time.perf_counter()
    games = play_generation(cfg, model, generation, cfg.node)
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
