"""The public position sets: a catalog entry, labelled once, scored every generation."""

from __future__ import annotations

import pytest
from kedro.io import DatasetError

from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.datasets.pons_files import PonsFilesDataset
from connect_zero_pipeline.pipelines.alphazero.nodes import (
    evaluate_generation,
    label_public_sets,
)
from tests.helpers import PONS_DIR


def test_public_sets_become_metrics_of_every_generation(pons_set, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the solver cache path is relative to the project root
    head = tmp_path / "L3_head"
    head.write_text("".join((PONS_DIR / "Test_L3_R1").read_text().splitlines(True)[:30]))
    files = PonsFilesDataset({"L3_head": str(head)}).load()
    cache = tmp_path / "data" / "02_intermediate" / "solver_cache"  # what the plan resolves
    labelled = label_public_sets(files, {"node": {"workers": 1}}, str(cache))
    assert len(labelled) == 30 and set(labelled["set"]) == {"L3_head"}
    assert any((tmp_path / "data" / "02_intermediate" / "solver_cache").glob("part-*.parquet"))
    model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    params = {
        "node": {"device": "cpu"},
        "mcts": {"sims": 2},
        "previous": {"num_games": 2, "mcts": {"sims": 2}},
        "benchmark": {"sims": [4]},
    }
    metrics = evaluate_generation(
        model, model, pons_set, labelled, params, generation=1, num_generations=1
    )
    keys = {k for k in metrics if k.startswith("bench.")}
    assert keys == {
        f"bench.L3_head.{agent}.{m}"
        for agent in ("network", "mcts4")
        for m in ("strict_acc", "weak_mistake_rate")
    }
    for key in keys:
        assert 0.0 <= metrics[key] <= 1.0, key
    none = label_public_sets({}, {})  # no public set: no bench metric
    metrics = evaluate_generation(
        model, model, pons_set, none, params, generation=1, num_generations=1
    )
    assert not any(k.startswith("bench.") for k in metrics)


def test_with_gating_the_gate_plays_the_match_and_the_scorecard_is_the_same(pons_set):
    """gate -> score_gated_generation gives the figures evaluate_generation gives (the match
    is seeded by the generation alone), and the gate picks the model by its score."""
    import torch

    from connect_zero_pipeline.pipelines.alphazero.nodes import (
        gate_generation,
        score_gated_generation,
    )

    torch.manual_seed(0)
    new = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    old = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    old.meta, new.meta = {"generation": 2}, {"generation": 3}
    none = label_public_sets({}, {})
    params = {"node": {"device": "cpu"}, "num_games": 2, "mcts": {"sims": 2},
              "previous": {"num_games": 4, "mcts": {"sims": 2}}}  # fmt: skip
    plain = evaluate_generation(new, old, pons_set, none, params, generation=3, num_generations=3)
    for threshold in (0.0, 1.0):  # always accepted; only by winning every game
        gated = {**params, "gating": True, "gate_threshold": threshold}
        model, match = gate_generation(new, old, gated, generation=3)
        card = score_gated_generation(
            new, match, pons_set, none, gated, generation=3, num_generations=3
        )
        same = {k: v for k, v in plain.items() if k not in ("gate.accepted", "evaluate.seconds")}
        assert {k: card[k] for k in same} == same
        accepted = match["gate.score"] >= gated["gate_threshold"]
        assert card["gate.accepted"] == float(accepted)
        assert model.meta["generation"] == (3 if accepted else 2)
        assert model.meta["generation_accepted_at"] == 3


def test_between_full_scorecards_a_generation_scores_the_solver_set_alone(pons_set):
    """Every full_every-th generation and the last in full; the others the network alone on
    the solver set (the learning curve), the same figures the full scorecard has, and the
    gate's match where gating played it."""
    from connect_zero_pipeline.core.config.evaluation import EvaluateConfig, full_scorecard
    from connect_zero_pipeline.pipelines.alphazero.nodes import (
        gate_generation,
        score_gated_generation,
    )

    every3 = EvaluateConfig(full_every=3)
    assert [k for k in range(1, 11) if full_scorecard(every3, k, 10)] == [3, 6, 9, 10]
    assert all(full_scorecard(EvaluateConfig(full_every=1), k, 5) for k in range(1, 6))
    with pytest.raises(ValueError, match="full_every must be an integer >= 1"):
        EvaluateConfig(full_every=0)
    model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    none = label_public_sets({}, {})
    params = {"node": {"device": "cpu"}, "num_games": 2, "mcts": {"sims": 2}, "full_every": 2,
              "previous": {"num_games": 2, "mcts": {"sims": 2}}}  # fmt: skip
    full = evaluate_generation(model, model, pons_set, none, params, generation=2,
                               num_generations=5)  # fmt: skip
    alone = evaluate_generation(model, model, pons_set, none, params, generation=3,
                                num_generations=5)  # fmt: skip
    assert full["evaluate.full"] == 1.0 and alone["evaluate.full"] == 0.0
    assert {k for k in alone if not k.startswith("solver.")} == {"evaluate.full",
                                                                 "evaluate.seconds"}  # fmt: skip
    assert {k: v for k, v in full.items() if k.startswith("solver.")} == {
        k: v for k, v in alone.items() if k.startswith("solver.")}  # fmt: skip
    assert "punisher.mcts.win_rate" in full and "gate.score" in full
    last = evaluate_generation(model, model, pons_set, none, params, generation=5,
                               num_generations=5)  # fmt: skip
    assert last["evaluate.full"] == 1.0  # the last, whatever its number
    gated = {**params, "gating": True}
    _, match = gate_generation(model, model, gated, generation=3)
    card = score_gated_generation(model, match, pons_set, none, gated, generation=3,
                                  num_generations=5)  # fmt: skip
    assert card["evaluate.full"] == 0.0 and card["gate.score"] == match["gate.score"]
    assert "punisher.mcts.win_rate" not in card


def test_a_bad_public_set_file_is_named(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("4453\n44x\n")
    with pytest.raises(DatasetError, match=r"bad: line 2: .*x.*\(1 bad line\(s\) in "):
        PonsFilesDataset({"bad": str(bad)}).load()
    with pytest.raises(DatasetError, match="cannot read position file"):
        PonsFilesDataset({"gone": str(tmp_path / "gone")}).load()
