"""Learning curves from the per-generation evaluation metrics."""

from __future__ import annotations

import pandas as pd

from ..plots import pyplot

CURVES = [
    ("solver.acc", "solver-set accuracy (network alone)"),
    ("solver.ce", "solver-set cross-entropy"),
    ("punisher.policy.win_rate", "win rate vs RandomPunisher: network"),
    ("punisher.mcts.win_rate", "win rate vs RandomPunisher: MCTS agent"),
]


def learning_curve_table(*eval_metrics: dict) -> pd.DataFrame:
    """One row per generation with the curve metrics."""
    rows = [
        {"generation": k, **{m: d.get(m) for m, _ in CURVES}}
        for k, d in enumerate(eval_metrics, start=1)
    ]
    return pd.DataFrame(rows)


def plot_learning_curves(*eval_metrics: dict):
    """A figure with acc, ce and win rates by generation."""
    table = learning_curve_table(*eval_metrics)
    fig, axes = pyplot().subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(table["generation"], table["solver.acc"], marker="o")
    axes[0].set_title(CURVES[0][1])
    axes[1].plot(table["generation"], table["solver.ce"], marker="o", color="tab:orange")
    axes[1].set_title(CURVES[1][1])
    for key, label in CURVES[2:]:
        axes[2].plot(table["generation"], table[key], marker="o", label=label.split(": ")[1])
    axes[2].set_title("win rate vs RandomPunisher")
    axes[2].legend()
    for ax in axes:
        ax.set_xlabel("generation")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
