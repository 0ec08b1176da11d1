"""A tiny end-to-end REINFORCE run: versioned chunks, resumed trainer state, MLflow, the plot."""

from __future__ import annotations

import json

import mlflow
import pytest
from kedro.io.core import Version

from connect_zero_pipeline.datasets.state_dataset import TorchStateDataset
from tests import helpers
from tests.helpers import latest, mlflow_client, run_kedro, versions

TINY = {k: v for k, v in helpers.TINY.items() if k.startswith("reinforce.")}  # conf/tiny's


@pytest.fixture
def project(pons_project):
    return pons_project


def test_two_chunks_end_to_end_with_mlflow(project):
    run_kedro(project, "reinforce", TINY)
    for rel in [
        "data/06_models/reinforce/rf_000/model.pt",
        "data/06_models/reinforce/rf_001/model.pt",
        "data/06_models/reinforce/rf_002/model.pt",
        "data/06_models/reinforce/rf_002/trainer_state.pt",
        "data/08_reporting/reinforce/rf_002/train_metrics.json",
        "data/08_reporting/reinforce/rf_002/eval_metrics.json",
        "data/08_reporting/reinforce/learning_curves.png",
    ]:
        assert len(versions(project, rel)) == 1, rel
    assert not (project / "data/06_models/rf_001").exists()  # not the gen_XXX factory's folder

    # Chunk 2 resumed chunk 1's trainer state: Adam has taken 2 + 2 steps.
    state = TorchStateDataset(
        str(project / "data/06_models/reinforce/rf_002/trainer_state.pt"),
        version=Version(None, None),
    ).load()
    assert state["step"] == 4
    adam_steps = {int(s["step"]) for s in state["optimizer"]["state"].values()}
    assert adam_steps == {4}
    assert state["opponent"] is not None  # opponent "self": the frozen copy travels too

    ev = json.loads(
        latest(project, "data/08_reporting/reinforce/rf_002/eval_metrics.json").read_text()
    )
    assert 1 <= ev["distinct_games"] <= 20
    assert 0.0 <= ev["solver.acc"] <= 1.0 and 0.0 <= ev["punisher.policy.win_rate"] <= 1.0
    assert ev["policy_entropy"] > 0

    client = mlflow_client(project)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = {r.info.run_name: r for r in runs if "mlflow.parentRunId" in r.data.tags}
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    parent = parents[0]
    assert set(children) == {"rf_000", "rf_001", "rf_002"}
    assert all(c.info.status == "FINISHED" for c in children.values())
    # The AlphaZero metric names, by step = chunk, on the parent.
    for key in ["solver.acc", "punisher.policy.win_rate", "distinct_games", "train.policy_entropy"]:
        history = client.get_metric_history(parent.info.run_id, key)
        assert sorted(m.step for m in history) == [1, 2], key
    rf2 = children["rf_002"]
    assert rf2.data.params["reinforce.train.opponent"] == "self"
    assert "model/model.pt" in [a.path for a in client.list_artifacts(rf2.info.run_id, "model")]
    plots = [a.path for a in client.list_artifacts(parent.info.run_id, "plots")]
    assert plots == ["plots/reinforce_learning_curves.png"]
    assert mlflow.active_run() is None


def test_the_number_of_chunks_shapes_the_dag_and_is_validated(kedro_project):
    from kedro.framework.project import pipelines
    from kedro.framework.startup import bootstrap_project

    from connect_zero_pipeline.params.schema import parse_run_params
    from connect_zero_pipeline.pipelines.structure import reading
    from connect_zero_pipeline.session.project_session import ProjectSession

    def chunks(params):
        bootstrap_project(kedro_project)
        with ProjectSession.create(project_path=kedro_project, runtime_params=params) as session:
            session.load_context()
            with reading(parse_run_params(session.parameters())):
                return sorted({n.namespace for n in pipelines["reinforce"].nodes if n.namespace})

    assert chunks({"reinforce": {"num_chunks": 3}}) == ["rf_000", "rf_001", "rf_002", "rf_003"]
    assert chunks(None)[-1] == "rf_008"
    with pytest.raises(
        Exception, match=r"reinforce.num_chunks must be an integer in \[1, 999\], got 0"
    ):
        chunks({"reinforce": {"num_chunks": 0}})
