"""Shared fixtures: a throw-away copy of the Kedro project for end-to-end runs (the helpers
they use, and test modules import: tests/helpers.py)."""

from __future__ import annotations

import pytest

from tests.helpers import (
    FINISHED_RUN,
    PONS_FILE,
    cli_params,
    files_under,
    kedro_cli,
    make_project,
    tiny_pons_set,
    write_versioned_parquet,
)


def pytest_collection_modifyitems(items):
    """Modules with the most slow tests first. make test hands whole modules to its pytest -n
    workers in this order (--dist loadfile --no-loadscope-reorder), so the long ones start at
    once instead of finishing the run alone."""
    slow: dict[str, int] = {}
    for item in items:
        if item.get_closest_marker("slow"):
            slow[item.path.name] = slow.get(item.path.name, 0) + 1
    items.sort(key=lambda item: -slow.get(item.path.name, 0))  # stable: modules stay whole


@pytest.fixture
def kedro_project(tmp_path, monkeypatch):
    """A fresh project (:func:`make_project`) in ``tmp_path``, as the working directory.

    Runs write their data, ``mlflow.db`` and ``mlruns/`` there, never into the repo.
    """
    project = make_project(tmp_path / "project")
    monkeypatch.chdir(project)
    return project


@pytest.fixture(scope="session")
def pons_set():
    """One tiny real solver-labelled set for the whole session."""
    return tiny_pons_set()


@pytest.fixture
def pons_project(kedro_project, pons_set):
    """A test project whose evaluation set is the tiny labelled set."""
    write_versioned_parquet(kedro_project, PONS_FILE, pons_set)
    return kedro_project


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory, pons_set):
    """``(project, run id)``: one real ``kedro run`` of :data:`FINISHED_RUN` in a project of
    its own with conf/base's store, shared by the tests that read a finished run or copy its
    project. Nothing may write into it: its files are compared at the end of the session."""
    project = make_project(tmp_path_factory.mktemp("finished") / "project", pin_store=False)
    write_versioned_parquet(project, PONS_FILE, pons_set)
    # The design card's spelling, --pipeline (singular): Kedro deprecates it; the project's
    # run command takes it as --pipelines, with no warning.
    res = kedro_cli(project, "run", "--pipeline=alphazero", "--params", cli_params(FINISHED_RUN))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "eprecat" not in res.stdout + res.stderr, res.stderr[-3000:]
    from connect_zero_pipeline.run.manifest import known_runs

    (run_id,) = known_runs(project)
    before = {f: (project / f).stat().st_mtime_ns for f in files_under(project)}
    yield project, run_id
    after = {f: (project / f).stat().st_mtime_ns for f in files_under(project)}
    assert after == before, "a test wrote into the shared finished run"
