"""``bench train`` prints its figure (a smoke run; benchmarks never assert timings)."""

from __future__ import annotations

import argparse

import pytest

from connect_zero_pipeline.bench.train import _games_table, run
from connect_zero_pipeline.core.config.training import TrainConfig


@pytest.mark.slow
def test_bench_train_prints_the_node_against_the_bare_loop(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")  # the bench sets it; restored after the test
    line, precisions = run(argparse.Namespace(quick=True))
    assert (line["bench"], line["figure"], line["rows"]) == (
        "train",
        "train_node_samples_per_s",
        4000,
    )
    assert line["value"] > 0 and line["baseline_value"] > 0
    assert line["ratio"] == pytest.approx(line["value"] / line["baseline_value"])
    # Both loops take the recipe's steps: samples per position of the mirrored rows.
    cfg = TrainConfig()
    assert line["steps"] == round(cfg.samples_per_position * 2 * 4000 / cfg.batch_size)
    # The recipe's network in bfloat16 against float32, and what the step computes.
    assert (precisions["figure"], precisions["model"]) == ("bfloat16_samples_per_s", "cpu")
    assert precisions["value"] > 0 and precisions["baseline_value"] > 0
    assert precisions["steps"] == round(cfg.samples_per_position * 2 * 250 / cfg.batch_size)
    assert 10 < precisions["mflop_per_sample"] < 200  # a 4x48 ResNet's forward and backward
    # --quick's 250 rows are positions of many plies (the first 256 played are the empty
    # board: 250 of them trained on one sample, at 1.2 TFLOP/s "achieved").
    assert _games_table(4000).head(250)["position"].nunique() > 150  # 180
