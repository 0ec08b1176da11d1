"""REINFORCE nodes: parameters -> frozen configs -> ``core.reinforce`` calls."""

from __future__ import annotations

import logging

import pandas as pd
from torch import nn

from ...core.device import resolve_device, torch_threads
from ...core.models import count_parameters
from ...core.reinforce import (
    evaluate_policy,
    init_policy,
    train_chunk,
)
from ...params.schema import parse_section

log = logging.getLogger(__name__)


def init_reinforce_model(params: dict) -> tuple[nn.Module, dict]:
    """Chunk 0: the initial policy and an empty trainer state.

    ``params`` (``reinforce.model``): ``preset`` (``mlp``, ``tiny``, ...) or an
    architecture dict under ``arch``; ``seed`` for the initial weights.
    """
    spec = parse_section("reinforce.model", params)
    model = init_policy(spec.config(), seed=spec.seed)
    log.info("REINFORCE: initialised %s, %d parameters", model.config, count_parameters(model))
    return model, {}


def train_reinforce_chunk(
    model: nn.Module, state: dict, params: dict, chunk: int, num_chunks: int
) -> tuple[nn.Module, dict, dict]:
    """Chunk ``chunk`` of ``num_chunks``: resume from the previous model and trainer state.

    Returns the new model, the trainer state for the next chunk and the chunk's
    ``train`` metrics (see :func:`~connect_zero_pipeline.core.reinforce.train_chunk`).
    """
    cfg = parse_section("reinforce.train", params)
    with torch_threads(cfg.node.num_threads):
        trained, new_state, metrics = train_chunk(
            model,
            cfg,
            state,
            chunk=chunk,
            num_chunks=num_chunks,
            device=resolve_device(cfg.node.device),
            progress_bar=True,
        )
    log.info(
        "REINFORCE chunk %d/%d: %s", chunk, num_chunks, {k: round(v, 4) for k, v in metrics.items()}
    )
    return trained, new_state, metrics


def evaluate_reinforce_chunk(
    model: nn.Module, positions: pd.DataFrame, params: dict, chunk: int
) -> dict:
    """The chunk's ``eval`` metrics: ``solver.*``, ``punisher.policy.*``, ``distinct_games``, ..."""
    cfg = parse_section("reinforce.evaluate", params)
    with torch_threads(cfg.node.num_threads):
        metrics = evaluate_policy(model, positions, cfg, resolve_device(cfg.node.device))
    log.info(
        "REINFORCE chunk %d: solver acc %.3f | vs RandomPunisher (greedy) %.3f | "
        "self-play: %d distinct games of %d, entropy %.3f",
        chunk,
        metrics["solver.acc"],
        metrics["punisher.policy.win_rate"],
        metrics["distinct_games"],
        cfg.diversity_games,
        metrics["policy_entropy"],
    )
    return metrics
