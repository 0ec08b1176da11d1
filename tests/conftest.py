"""Shared fixtures: a throw-away copy of the Kedro project for end-to-end runs (the helpers
they use, and test modules import: tests/helpers.py)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

import pytest

from tests.helpers import (
    FINISHED_LOG,
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


def _shared_folder(tmp_path_factory) -> Path:
    """The session's folder every pytest-xdist worker sees (the workers' base folders'
    parent), or this process's own base folder without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _made_once(folder: Path):
    """Hold ``folder``'s lock: the first process to take it makes what it holds, the others
    wait for it and find it made (``folder / "made"``)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield (folder / "made").exists()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory, pons_set):
    """``(project, run id)``: one real ``kedro run`` of :data:`FINISHED_RUN` in a project of
    its own with conf/base's store, made once for the whole suite (every pytest-xdist worker
    waits for the first one's), shared by the tests that read a finished run or copy its
    project; its output is ``FINISHED_LOG`` beside the project. Nothing may write into it:
    its files are compared at the end of each process's session."""
    folder = _shared_folder(tmp_path_factory) / "finished"
    project = folder / "project"
    with _made_once(folder) as made:
        if not made:
            make_project(project, pin_store=False)
            write_versioned_parquet(project, PONS_FILE, pons_set)
            # The design card's spelling, --pipeline (singular): Kedro deprecates it; the
            # project's run command takes it as --pipelines, with no warning.
            res = kedro_cli(project, "run", "--pipeline=alphazero", "--params",
                            cli_params(FINISHED_RUN))  # fmt: skip
            assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
            assert "eprecat" not in res.stdout + res.stderr, res.stderr[-3000:]
            (folder / FINISHED_LOG).write_text(res.stdout)
            (folder / "made").touch()
    from connect_zero_pipeline.run.manifest import known_runs

    (run_id,) = known_runs(project)
    before = {f: (project / f).stat().st_mtime_ns for f in files_under(project)}
    yield project, run_id
    after = {f: (project / f).stat().st_mtime_ns for f in files_under(project)}
    assert after == before, "a test wrote into the shared finished run"
