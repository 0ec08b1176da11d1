"""REINFORCE learning curves from the per-chunk metrics."""

from __future__ import annotations

import pandas as pd

from ..plots import pyplot

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
