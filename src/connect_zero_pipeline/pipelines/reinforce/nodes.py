"""REINFORCE nodes: parameters -> frozen configs -> ``core.reinforce`` calls, and the learning
curves from the per-chunk metrics.
"""

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
from ..plots import pyplot

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


EVAL_CURVES = [
    "solver.acc",
    "solver.ce",
    "punisher.policy.win_rate",
    "policy_entropy",
    "distinct_games",
]
TRAIN_CURVES = ["policy_entropy", "win_rate", "loss", "beta_start", "opponent_version", "seconds"]


def reinforce_curve_table(eval_metrics: list[dict], train_metrics: list[dict]) -> pd.DataFrame:
    """One row per chunk: the eval curves, and the train ones prefixed ``train.``."""
    if len(eval_metrics) != len(train_metrics):
        raise ValueError(
            f"{len(eval_metrics)} eval metric dicts but {len(train_metrics)} train metric dicts"
        )
    rows = []
    for k, (ev, tr) in enumerate(zip(eval_metrics, train_metrics, strict=True), start=1):
        row = {"chunk": k, **{m: ev.get(m) for m in EVAL_CURVES}}
        row.update({f"train.{m}": tr.get(m) for m in TRAIN_CURVES})
        rows.append(row)
    return pd.DataFrame(rows)


def plot_reinforce_curves(*metrics: dict, num_chunks: int):
    """A figure of solver accuracy, win rate, entropy and distinct games by chunk.

    Args:
        metrics: the ``eval_metrics`` of chunks 1..N, then their ``train_metrics``.
        num_chunks: N.
    """
    if len(metrics) != 2 * num_chunks:
        raise ValueError(f"expected {2 * num_chunks} metric dicts, got {len(metrics)}")
    table = reinforce_curve_table(list(metrics[:num_chunks]), list(metrics[num_chunks:]))
    x = table["chunk"]
    fig, axes = pyplot().subplots(1, 4, figsize=(17, 3.8))
    axes[0].plot(x, table["solver.acc"], marker="o")
    axes[0].set_title("solver-set accuracy (network alone)")
    axes[1].plot(x, table["punisher.policy.win_rate"], marker="o", label="greedy network")
    axes[1].plot(x, table["train.win_rate"], marker=".", label="training games vs its opponent")
    axes[1].axhline(0.35, color="grey", ls=":", lw=1)
    axes[1].set_title("win rate vs RandomPunisher / training opponent")
    axes[1].legend(fontsize=8)
    axes[2].plot(x, table["policy_entropy"], marker="o", label="self-play (eval)")
    axes[2].plot(x, table["train.policy_entropy"], marker=".", label="training batches")
    axes[2].set_title("policy entropy (nats, legal moves)")
    axes[2].legend(fontsize=8)
    axes[3].plot(x, table["distinct_games"], marker="o", color="tab:red")
    axes[3].set_ylim(bottom=0)
    axes[3].set_title("distinct games in sampled self-play")
    for ax in axes:
        ax.set_xlabel("chunk")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
