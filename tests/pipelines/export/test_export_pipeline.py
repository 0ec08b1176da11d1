"""The ``export`` pipeline end to end: versioned ONNX, MLflow ONNX model, play page folder."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch
from kedro.io import Version

from connect_zero_pipeline import web
from connect_zero_pipeline.core import export as core_export
from connect_zero_pipeline.core.export import ParityError, random_positions
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.datasets import OnnxModelDataset, PlayPageDataset, TorchModelDataset
from connect_zero_pipeline.pipelines.export import create_pipeline
from connect_zero_pipeline.pipelines.export.nodes import export_onnx_model
from tests.helpers import run_kedro

PAGE_FILES = {"index.html", "app.js", "style.css", "model.onnx", "model.json", *web.ORT_FILES}


NO_POSITIONS = pd.DataFrame()  # the node fails before it reads the solver set


@pytest.fixture
def project(pons_project):
    """``pons_project``, whose MLflow store ``make_project`` pinned by absolute path."""
    return pons_project


def _save_latest_model(project, preset: str = "mlp", seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = build_model(preset).eval()
    model.meta = {"generation": 3}
    path = str(project / "data/06_models/latest_model.pt")
    TorchModelDataset(path, version=Version(None, None)).save(model)
    return model


def _mlflow_client(project) -> tuple[mlflow.MlflowClient, str]:
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{project / 'mlflow.db'}")
    return client, client.get_experiment_by_name("connect_zero_pipeline").experiment_id


def test_export_writes_versioned_onnx_mlflow_model_and_play_page(project, tmp_path):
    model = _save_latest_model(project)
    run_kedro(project, "export")

    # The versioned ONNX file: protocol signature, and it computes what torch computes.
    versions = list((project / "data/06_models/onnx_model.onnx").iterdir())
    assert len(versions) == 1
    onnx_path = versions[0] / "onnx_model.onnx"
    proto = OnnxModelDataset(
        str(project / "data/06_models/onnx_model.onnx"), version=Version(None, None)
    ).load()
    assert [i.name for i in proto.graph.input] == ["board"]
    assert [o.name for o in proto.graph.output] == ["logits", "value"]
    info = core_export.onnx_info(onnx_path.read_bytes())
    assert info["config"] == model.config and info["meta"]["generation"] == 3
    assert 0 <= info["meta"]["solver.acc"] <= info["meta"]["solver.weak_acc"] <= 1
    assert info["opset"] >= 17
    boards = random_positions(1000, seed=9)
    session = core_export.ort_session(onnx_path.read_bytes())
    logits, value = core_export.ort_evaluate(session, boards.numpy())
    with torch.inference_mode():
        t_logits, t_value = model(boards)
    np.testing.assert_allclose(logits, t_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(value, t_value.numpy(), atol=1e-4)

    # The page folder: self-contained, with the very same model file.
    page = PlayPageDataset(
        str(project / "data/08_reporting/play"), version=Version(None, None)
    ).load()
    assert page.parent.parent == project / "data/08_reporting/play"
    assert {p.name for p in page.iterdir()} == PAGE_FILES
    assert (page / "model.onnx").read_bytes() == onnx_path.read_bytes()
    page_info = json.loads((page / "model.json").read_text())
    assert page_info["config"] == model.config
    assert page_info["onnxruntime_web"] == web.pinned_ort_web_version()
    html = (page / "index.html").read_text()
    assert '<script src="ort.wasm.min.js"></script>' in html and "http" not in html

    # MLflow: the run holds the ONNX-flavour model and the parity metrics.
    client, exp_id = _mlflow_client(project)
    (run,) = client.search_runs([exp_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["export.parity_positions"] == 1000
    assert run.data.metrics["export.parity_max_abs_diff_logits"] <= 1e-4
    assert run.data.metrics["export.parity_max_abs_diff_value"] <= 1e-4
    (logged,) = client.search_logged_models(experiment_ids=[exp_id])
    assert logged.source_run_id == run.info.run_id
    local = Path(mlflow.artifacts.download_artifacts(artifact_uri=logged.artifact_location,
                                                     dst_path=str(tmp_path)))  # fmt: skip
    assert "onnx" in (local / "MLmodel").read_text()
    assert (local / "model.onnx").read_bytes() == proto.SerializeToString()


def test_a_failing_parity_gate_writes_nothing(project, monkeypatch):
    _save_latest_model(project)
    real_export = core_export.export_onnx

    def broken_export(model, opset, meta=None, graphs=None):
        # A deliberately wrong export: the policy head's bias is off by 1e-3.
        broken = build_model(model.config)
        broken.load_state_dict(model.state_dict())
        with torch.no_grad():
            broken.policy.bias += 1e-3
        return real_export(broken, opset, graphs=graphs)

    monkeypatch.setattr("connect_zero_pipeline.pipelines.export.nodes.export_onnx", broken_export)
    with pytest.raises(
        ParityError, match=r"max abs difference logits 0\.001, value .* > atol 0\.0001"
    ):
        run_kedro(project, "export")
    assert not (project / "data/06_models/onnx_model.onnx").exists()
    assert not (project / "data/08_reporting/play").exists()
    client, exp_id = _mlflow_client(project)
    assert client.search_logged_models(experiment_ids=[exp_id]) == []
    assert [r.info.status for r in client.search_runs([exp_id])] == ["FAILED"]


def test_missing_onnxruntime_web_fails_before_anything_is_written(tmp_path):
    model = build_model("mlp")
    with pytest.raises(
        FileNotFoundError,
        match=r"ort\.wasm\.min\.js.*fetch the pinned version with: npm ci --prefix",
    ):
        export_onnx_model(model, NO_POSITIONS, {"ort_web_dir": str(tmp_path)})


def test_bad_parameters_name_the_key():
    model = build_model("mlp")
    with pytest.raises(
        ValueError, match=r"unknown parameter 'export\.opsett'. Did you mean 'export\.opset'"
    ):
        export_onnx_model(model, NO_POSITIONS, {"opsett": 18})
    with pytest.raises(ValueError, match="opset must be an integer >= 18, got 11"):
        export_onnx_model(model, NO_POSITIONS, {"opset": 11})
    with pytest.raises(ValueError, match="parity_positions must be an integer >= 1000, got 10"):
        export_onnx_model(model, NO_POSITIONS, {"parity_positions": 10})


@pytest.mark.filterwarnings("ignore:One or more dataset names contain '.':UserWarning")
def test_the_model_input_is_one_parameter():
    assert "latest_model" in create_pipeline().inputs()
    pipe = create_pipeline(model_input="gen_012.model")
    assert pipe.inputs() == {"gen_012.model", "pons_positions", "params:export"}
    assert pipe.outputs() == {"onnx_model_mlflow", "export_metrics"}


def test_registered_versions_describe_themselves_and_the_champion_is_the_best(project):
    from connect_zero_pipeline.commands.model_source import resolve_model
    from connect_zero_pipeline.tracking.registry import CHAMPION, load_registered

    store = f"sqlite:///{project / 'mlflow.db'}"  # both: the registry URI is not the tracking's
    client = mlflow.MlflowClient(tracking_uri=store, registry_uri=store)
    accs = []
    for seed in (0, 1, 2):
        _save_latest_model(project, seed=seed)
        run_kedro(project, "export")
        (version,) = [
            v for v in client.search_model_versions("name='connect-zero'")
            if int(v.version) == seed + 1
        ]  # fmt: skip
        tags = version.tags
        assert tags["generation"] == "3" and tags["pipeline"] == "export"
        assert tags["run_id"] == sorted(p.stem for p in (project / "data/runs").glob("*.json"))[-1]
        accs.append(float(tags["solver.acc"]))
        assert 0 <= accs[-1] <= float(tags["solver.weak_acc"]) <= 1
        assert "Generation 3 of run" in version.description
        assert f"{accs[-1]:.1%}" in version.description
        # The signature: board int8 [-1, 6, 7] -> logits [-1, 7], value [-1].
        info = mlflow.models.get_model_info(f"models:/connect-zero/{version.version}")
        inputs = info.signature.inputs.to_dict()
        outputs = info.signature.outputs.to_dict()
        assert [(i["name"], i["tensor-spec"]["dtype"], tuple(i["tensor-spec"]["shape"]))
                for i in inputs] == [("board", "int8", (-1, 6, 7))]  # fmt: skip
        assert [(o["name"], o["tensor-spec"]["dtype"], tuple(o["tensor-spec"]["shape"]))
                for o in outputs] == [("logits", "float32", (-1, 7)), ("value", "float32", (-1,))]  # fmt: skip
        # The champion is the best version so far on solver.acc (ties keep the older).
        champion = client.get_model_version_by_alias("connect-zero", CHAMPION)
        best = max(range(len(accs)), key=lambda i: (accs[i], -i))
        assert str(champion.version) == str(best + 1)
    # Weights registered once: two more exports of the last model (seed 2) add no version.
    from connect_zero_pipeline.tracking.registry import WEIGHTS_TAG, run_model_version

    last = client.get_model_version("connect-zero", "3")
    for _ in range(2):
        run_kedro(project, "export")
    assert sorted(int(v.version) for v in client.search_model_versions("name='connect-zero'")) == [
        1, 2, 3]  # fmt: skip
    assert len(last.tags[WEIGHTS_TAG]) == 64
    parents = [r for r in client.search_runs([client.get_experiment_by_name(
        "connect_zero_pipeline").experiment_id]) if "mlflow.parentRunId" not in r.data.tags]  # fmt: skip
    newest = max(parents, key=lambda r: r.info.start_time)
    assert str(run_model_version(client, "connect-zero", newest.info.run_id).version) == "3"
    # A registered version plays like the model it was exported from.
    network = load_registered("models:/connect-zero/2", project)
    boards = random_positions(64, seed=3)
    torch.manual_seed(1)
    twin = build_model("mlp").eval()
    with torch.inference_mode():
        expected, _ = twin(boards)
    logits, _ = network(boards)
    np.testing.assert_allclose(logits.numpy(), expected.numpy(), atol=1e-4)
    _, description = resolve_model(f"models:/connect-zero@{CHAMPION}")
    # The run and generation that made it, from the version's tags.
    assert description == (f"models:/connect-zero@{CHAMPION} (connect-zero version "
                           f"{champion.version}: run {champion.tags['run_id']}, "
                           f"generation {champion.tags['generation']})")  # fmt: skip
    with pytest.raises(
        Exception,
        match=r"models:/connect-zero@best: no such registered model "
        r"version \(connect-zero has versions \[1, 2, 3\], aliases \['champion'\]\)",
    ):
        resolve_model("models:/connect-zero@best")
