"""The ``baselines`` pipeline end to end: Kedro + versioned Parquet + MLflow (sqlite)."""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest

from connect_zero_pipeline.pipelines.baselines.nodes import play_baseline_match
from tests.helpers import run_kedro


def test_baselines_pipeline_writes_versioned_parquet_and_mlflow_metrics(kedro_project):
    params = {"baselines.num_games": 40, "baselines.seed": 5}
    run_kedro(kedro_project, "baselines", params)
    run_kedro(kedro_project, "baselines", params)

    versions = sorted(
        (kedro_project / "data/08_reporting/baselines/match_results.parquet").iterdir()
    )
    assert len(versions) == 2  # a rerun adds a version, never overwrites
    table = pd.read_parquet(versions[-1] / "match_results.parquet")
    assert len(table) == 40
    assert set(table["result"].unique()) <= {-1, 0, 1}
    assert table["a_first"].tolist() == [g % 2 == 0 for g in range(40)]
    assert table["length"].between(7, 42).all()
    # Same seed, same games.
    first = pd.read_parquet(versions[0] / "match_results.parquet")
    pd.testing.assert_frame_equal(first, table)

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{kedro_project / 'mlflow.db'}")
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 2
    metrics = runs[0].data.metrics
    wins = (table["result"] == 1).mean()
    assert metrics["baselines.win_rate"] == pytest.approx(wins)
    assert metrics["baselines.win_rate"] + metrics["baselines.draw_rate"] + metrics[
        "baselines.loss_rate"
    ] == pytest.approx(1.0)
    assert all(r.info.status == "FINISHED" for r in runs)


def test_bad_parameters_name_the_key():
    with pytest.raises(
        ValueError,
        match=r"unknown parameter 'baselines\.num_game'. Did you mean 'baselines\.num_games'",
    ):
        play_baseline_match({"num_game": 10})
    with pytest.raises(
        ValueError,
        match=r"player_b must be 'random', 'random_punisher' or 'solver:<epsilon in \[0, 1\]>', got 'solver9'",
    ):
        play_baseline_match({"player_b": "solver9"})
    with pytest.raises(ValueError, match="num_games must be an integer >= 1, got -3"):
        play_baseline_match({"num_games": -3})
