"""The scorecard: the latest REINFORCE and AlphaZero checkpoints on disk, side by side."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from kedro.io.core import Version

from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.datasets import TorchModelDataset
from tests.helpers import latest, mlflow_client, run_kedro

SCORECARD = {
    "scorecard.num_games": 200,
    "scorecard.match_games": 20,
    "scorecard.mcts.sims": 2,
    "scorecard.node.device": "cpu",
}
V1, V2 = "2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z"


@pytest.fixture
def project(pons_project):
    return pons_project


def _save_model(project, relpath, model, version=V1):
    TorchModelDataset(str(project / relpath), version=Version(None, version)).save(model)


def _save_json(project, relpath, data, version=V1):
    target = project / relpath / version / relpath.rsplit("/", 1)[1]
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(data))


def test_scorecard_takes_the_highest_generation_and_its_latest_version(project):
    torch.manual_seed(0)
    tiny_az = {"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8}
    _save_model(project, "data/06_models/gen_000/model.pt", build_model(tiny_az))  # never scored
    _save_model(project, "data/06_models/gen_001/model.pt", build_model(tiny_az))
    _save_model(project, "data/06_models/gen_002/model.pt", build_model("mlp"), V1)  # older
    _save_model(project, "data/06_models/gen_002/model.pt", build_model(tiny_az), V2)
    _save_model(project, "data/06_models/reinforce/rf_001/model.pt", build_model("mlp"))
    for k, (sp, tr) in enumerate([(10.0, 5.0), (20.0, 7.0)], start=1):
        _save_json(project, f"data/08_reporting/gen_{k:03d}/selfplay_metrics.json", {"seconds": sp})
        _save_json(
            project, f"data/08_reporting/gen_{k:03d}/train_metrics.json", {"train_seconds": tr}
        )
    # The model's run (V1) took 1 s; a later run's metrics (V2) are not its wall time.
    _save_json(project, "data/08_reporting/reinforce/rf_001/train_metrics.json", {"seconds": 1.0})
    _save_json(
        project, "data/08_reporting/reinforce/rf_001/train_metrics.json", {"seconds": 3.0}, V2
    )

    run_kedro(project, "scorecard", SCORECARD)
    table = pd.read_csv(latest(project, "data/08_reporting/scorecard.csv")).set_index("algorithm")
    assert table.loc["alphazero", "checkpoint"] == "gen_002"
    assert table.loc["alphazero", "version"] == V2
    assert table.loc["alphazero", "architecture"] == "resnet"
    assert table.loc["reinforce", "checkpoint"] == "rf_001"
    assert table.loc["alphazero", "train_wall_seconds"] == pytest.approx(42.0)
    assert table.loc["reinforce", "train_wall_seconds"] == pytest.approx(1.0)
    rf, az = table.loc["reinforce"], table.loc["alphazero"]
    # The direct matches, seen from both sides.
    assert rf["h2h.policy.win_rate"] == pytest.approx(az["h2h.policy.loss_rate"])
    assert rf["h2h.mcts.draw_rate"] == pytest.approx(az["h2h.mcts.draw_rate"])
    for col in ["solver.acc", "punisher.policy.win_rate", "h2h.mcts.win_rate"]:
        assert 0.0 <= rf[col] <= 1.0 and 0.0 <= az[col] <= 1.0, col

    client = mlflow_client(project)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.data.metrics["scorecard.alphazero.train_wall_seconds"] == pytest.approx(42.0)
    assert "scorecard.reinforce.solver.acc" in run.data.metrics


def test_scorecard_without_an_alphazero_model_says_how_to_make_one(project):
    _save_model(project, "data/06_models/reinforce/rf_001/model.pt", build_model("mlp"))
    _save_model(project, "data/06_models/gen_000/model.pt", build_model("mlp"))  # untrained only
    with pytest.raises(ValueError, match=r"no alphazero model to score.*pipelines=alphazero"):
        run_kedro(project, "scorecard", SCORECARD)
    assert not (project / "data/08_reporting/scorecard.csv").exists()
    with pytest.raises(ValueError, match=r"scorecard.reinforce = 'rf_009'.*\['rf_001'\]"):
        run_kedro(project, "scorecard", {**SCORECARD, "scorecard.reinforce": "rf_009"})
