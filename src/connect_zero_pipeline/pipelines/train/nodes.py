"""Training node: a model and a replay window of games -> a new model and metrics."""

from __future__ import annotations

import logging

import pandas as pd
from torch import nn

from ...core.config import from_params, resolve_device
from ...core.training import TrainConfig, games_to_tensors, train_model

log = logging.getLogger(__name__)


def train_generation(
    model: nn.Module, params: dict, *games: pd.DataFrame, generation: int, num_generations: int
) -> tuple[nn.Module, dict]:
    """Train generation ``generation`` of ``num_generations`` on the replay window ``games``.

    The window (the last ``buffer_gens`` generations) is wired into the DAG;
    the cosine learning-rate schedule spans the whole run.
    """
    cfg = from_params(TrainConfig, params, "train")
    boards, pi, z = games_to_tensors(games, mirror=cfg.mirror)
    progress = ((generation - 1) / num_generations, generation / num_generations)
    log.info(
        "Generation %d training on %d samples from %d generation(s)",
        generation,
        boards.shape[0],
        len(games),
    )
    trained, metrics = train_model(
        model,
        boards,
        pi,
        z,
        cfg,
        progress=progress,
        device=resolve_device(cfg.device),
        seed=cfg.seed * 1_000_003 + generation,
        progress_bar=True,
    )
    trained.meta = {"generation": generation}
    metrics["window_generations"] = float(len(games))
    log.info("Generation %d training: %s", generation, {k: round(v, 4) for k, v in metrics.items()})
    return trained.cpu(), metrics
