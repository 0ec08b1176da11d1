"""The evaluate node scores the network and MCTS agents on configured Pons files."""

from __future__ import annotations

import pytest

from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.pipelines.evaluate.nodes import evaluate_generation
from tests.conftest import PONS_DIR


def test_benchmark_files_become_metrics_of_every_generation(pons_set, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the solver cache path is relative to the project root
    head = tmp_path / "L3_head"
    head.write_text("".join((PONS_DIR / "Test_L3_R1").read_text().splitlines(True)[:30]))
    model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    params = {
        "device": "cpu",
        "mcts_sims": 2,
        "previous_games": 2,
        "previous_sims": 2,
        "benchmark_files": [str(head)],
        "benchmark_sims": [4],
    }
    _, metrics = evaluate_generation(model, model, pons_set, params, generation=1)
    keys = {k for k in metrics if k.startswith("bench.")}
    assert keys == {
        f"bench.L3_head.{agent}.{m}"
        for agent in ("network", "mcts4")
        for m in ("strict_acc", "weak_mistake_rate")
    }
    for key in keys:
        assert 0.0 <= metrics[key] <= 1.0, key
    assert any((tmp_path / "data" / "02_intermediate" / "solver_cache").glob("part-*.parquet"))
    with pytest.raises(ValueError, match="evaluate.benchmark_files must be a list of existing"):
        evaluate_generation(model, model, pons_set, {**params, "benchmark_files": ["x"]}, 1)
