"""Every use of another library's non-public state (``connect_zero_pipeline.common.internals``),
exercised on the installed Kedro: a release that renames or reshapes one fails here, by
name, instead of silently in a run."""

from __future__ import annotations

from pathlib import Path

import pytest
from kedro.framework.session import KedroSession
from kedro.io.core import Version
from kedro_datasets.json import JSONDataset
from kedro_datasets.pandas import ParquetDataset

from connect_zero_pipeline.common import internals


def _versioned(tmp_path: Path, version: Version | None = None) -> JSONDataset:
    return JSONDataset(
        filepath=str(tmp_path / "metrics.json"), version=version or Version(None, None)
    )


def test_a_pinned_version_is_where_a_dataset_reads_and_writes(tmp_path):
    dataset = _versioned(tmp_path)
    assert internals.is_versioned(dataset)
    assert not internals.is_versioned(JSONDataset(filepath=str(tmp_path / "plain.json")))
    internals.pin_version(dataset, "2026-11-26T01.00.00.000Z")
    path = internals.save_path(dataset)
    assert path == tmp_path / "metrics.json" / "2026-11-26T01.00.00.000Z" / "metrics.json"
    dataset.save({"a": 1})
    assert path.is_file() and internals.load_path(dataset) == str(path)
    assert _versioned(tmp_path, Version("2026-11-26T01.00.00.000Z", None)).load() == {"a": 1}


def test_a_staged_save_writes_elsewhere_and_the_dataset_is_restored(tmp_path):
    dataset = _versioned(tmp_path)
    internals.pin_version(dataset, "v1")
    final = internals.save_path(dataset)
    tmp = tmp_path / "staging.json"
    with internals.staged_save(dataset, tmp, final):
        dataset.save({"b": 2})  # Kedro's own check after a save reads the staged file
    assert tmp.is_file() and not final.exists()
    assert internals.save_path(dataset) == final  # the save path and version are back
    final.parent.mkdir(parents=True)
    tmp.rename(final)
    internals.forget_versions(dataset)
    assert dataset.load() == {"b": 2}


def test_a_dataset_without_a_version_on_disk_names_no_file(tmp_path):
    assert internals.load_path(_versioned(tmp_path)) is None
    assert internals.save_path(ParquetDataset(filepath=str(tmp_path / "t.parquet"))) is None
    assert internals.load_path(ParquetDataset(filepath=str(tmp_path / "t.parquet"))) == str(
        tmp_path / "t.parquet"
    )


def test_a_session_has_the_hook_manager_and_config_loader_the_project_uses(kedro_project):
    from kedro.framework.startup import bootstrap_project

    bootstrap_project(kedro_project)
    with KedroSession.create(project_path=kedro_project) as session:
        hooks = internals.session_hooks(session)
        assert hasattr(hooks, "register") and hooks.get_plugins()
        assert "alphazero" in internals.session_config(session)["parameters"]


def test_kedro_s_catalog_still_takes_one_save_version_for_all_its_datasets(tmp_path):
    """Why :func:`common.internals.pin_version` exists: were Kedro to accept a save version per
    dataset, the pinning could use it instead."""
    from kedro.io import DataCatalog
    from kedro.io.core import VersionAlreadyExistsError

    catalog = DataCatalog(datasets={"a": _versioned(tmp_path, Version(None, "v1"))})
    with pytest.raises(VersionAlreadyExistsError):
        catalog["b"] = JSONDataset(filepath=str(tmp_path / "b.json"), version=Version(None, "v2"))


def test_kedro_s_ephemeral_datasets_are_told_apart(tmp_path):
    from kedro.io import MemoryDataset

    assert internals.is_ephemeral(MemoryDataset())
    assert not internals.is_ephemeral(ParquetDataset(filepath=str(tmp_path / "t.parquet")))


def test_one_save_takes_other_save_arguments_and_the_dataset_gets_its_own_back():
    from kedro_mlflow.io.models import MlflowModelTrackingDataset

    dataset = MlflowModelTrackingDataset(flavor="mlflow.onnx", save_args={"a": 1})
    assert dataset._save_args == {"a": 1}  # the attribute kedro-mlflow's save reads
    with internals.save_args(dataset, {"b": 2}):
        assert dataset._save_args == {"b": 2}
    assert dataset._save_args == {"a": 1}


def test_kedro_s_errors_are_read_by_type_and_first_line(tmp_path):
    from kedro.io import DataCatalog
    from kedro.pipeline import Node, Pipeline

    pipe = Pipeline([Node(lambda x: x, "a", "b", name="first")])
    with pytest.raises(ValueError) as caught:
        pipe.only_nodes("frist", "second")
    assert sorted(internals.unknown_nodes(caught.value)) == ["frist", "second"]
    assert internals.unknown_nodes(ValueError("something else")) is None
    # A load that fails, through Kedro's catalog: its name, the verb and the cause.
    (tmp_path / "bad.json").write_text("{not json")
    catalog = DataCatalog({"metrics": JSONDataset(filepath=str(tmp_path / "bad.json"))})
    with pytest.raises(Exception) as caught:
        catalog.load("metrics")
    name, verb, reason = internals.dataset_failure(caught.value)
    assert (name, verb) == ("metrics", "load") and "Expecting property name" in reason
    with pytest.raises(Exception) as caught:  # saving: the dataset alone, no catalog name
        JSONDataset(filepath=str(tmp_path / "x.json")).save({1j: 1})
    assert internals.dataset_failure(caught.value)[:2] == (None, "save")
    assert internals.dataset_failure(ValueError("plain")) is None


def test_mlflow_s_store_is_the_schema_the_adapter_is_written_for(tmp_path):
    # The relocation rewrites MLflow's tables and the UI's address reads them: a MLflow whose
    # stores have another schema revision fails here first.
    import sqlite3

    import mlflow

    db = tmp_path / "mlflow.db"
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
    old = tmp_path / "elsewhere" / "mlruns"
    experiment = client.create_experiment("exp", artifact_location=old.as_uri())
    run = client.create_run(experiment)
    with sqlite3.connect(db) as conn:
        (revision,) = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision == internals.MLFLOW_SCHEMA, f"MLflow's schema is now {revision}"
    client.set_experiment_tag(experiment, "shared", "1")
    assert internals.experiment_in_store(db, "exp", "shared") == (experiment, True)
    assert internals.experiment_in_store(db, "exp", "other") == (experiment, False)
    assert internals.experiment_in_store(db, "nope", "shared") is None
    here = tmp_path / "mlruns"
    assert internals.relocate_artifacts(db, "exp", here) >= 2  # the experiment and its run
    assert client.get_experiment(experiment).artifact_location == here.as_uri()
    assert client.get_run(run.info.run_id).info.artifact_uri.startswith(here.as_uri())
    assert internals.relocate_artifacts(db, "exp", here) == 0  # again: nothing to move
