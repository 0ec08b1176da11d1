"""Self-play nodes: parameters -> core calls."""

from __future__ import annotations

import logging
import os
import time

import pandas as pd
import torch
from torch import nn

from ...core.config import from_params, resolve_device
from ...core.models import build_model, count_parameters
from ...core.scaleout import RAY_SETTINGS, RayOptions, ray_self_play
from ...core.selfplay import SelfPlayConfig, local_self_play, self_play
from ..params import split_params

log = logging.getLogger(__name__)


def init_model(params: dict) -> nn.Module:
    """Generation 0: a freshly initialised network.

    ``params``: ``preset`` (``tiny``, ``small``, ``connectzero``, ``mlp``) or an
    architecture dict under ``arch``; ``seed`` for the initial weights.
    """
    params = dict(params or {})
    seed = int(params.pop("seed", 0))
    arch = params.pop("arch", None)
    preset = params.pop("preset", None)
    if params:
        raise ValueError(
            f"unknown parameter(s) {sorted(params)} in 'model'; valid: preset, arch, seed"
        )
    if (arch is None) == (preset is None):
        raise ValueError("parameters 'model' need exactly one of 'preset' and 'arch'")
    torch.manual_seed(seed)  # initial weights only; self-play and training take their own seeds
    model = build_model(arch if arch is not None else preset)
    model.meta = {"generation": 0}
    log.info("Initialised %s with %d parameters", model.config, count_parameters(model))
    return model


def generate_games(model: nn.Module, params: dict, generation: int) -> tuple[pd.DataFrame, dict]:
    """One generation of batched MCTS self-play, in this process or sharded on Ray.

    ``executor: ray`` and its settings (``core.scaleout.RAY_SETTINGS``) are
    node-level keys like ``device``: the table is the same on either executor.

    Returns:
        The games table (design §4) and ``selfplay`` metrics.
    """
    node_keys = {"device": "auto", "num_threads": 1, "workers": 0, **RAY_SETTINGS}
    extra, rest = split_params(params, node_keys, "selfplay")
    cfg = from_params(SelfPlayConfig, rest, "selfplay")
    ray_options = RayOptions.from_settings(extra, "selfplay")
    start = time.perf_counter()
    if ray_options is not None:  # shards on Ray actors (each picks its own device)
        games = ray_self_play(
            cfg,
            model,
            generation=generation,
            options=ray_options,
            num_threads=extra["num_threads"],
            progress=True,
        )
    else:
        device = resolve_device(extra["device"])
        workers = _local_workers(extra["workers"], device)
        if workers > 1:  # shards on CPU worker processes: the same table, every core busy
            games = local_self_play(
                cfg,
                model,
                workers=workers,
                generation=generation,
                num_threads=extra["num_threads"],
                progress=True,
            )
        else:
            games = self_play(
                cfg,
                model=model,
                device=device,
                generation=generation,
                progress=True,
                num_threads=extra["num_threads"],
            )
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


def _local_workers(workers, device) -> int:
    """``workers`` for the local executor: 0 means one per CPU core (CPU only; 1 on CUDA)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"selfplay.workers must be an integer >= 0, got {workers!r}")
    if device.type != "cpu":
        return 1
    return workers or os.cpu_count() or 1


def _first_player_score(games: pd.DataFrame) -> float:
    """Mean outcome for the first player (+1 win, 0 draw, -1 loss) over finished games."""
    if games.empty:
        return 0.0
    first = games[games["ply"] == 0]
    return float(first["z"].mean())
