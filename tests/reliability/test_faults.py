"""Faults in the middle of a run: every version is complete or absent, every failed run says so,
and a user's mistake is one short message, never a traceback.

The fault sweep (``tests/faults/sweep.py``) makes one write point of a tiny real run fail as
a full disk does and resumes it. CI checks a seeded sample, one point of each kind (a dataset
save, a manifest write, an MLflow write), chained in one project: the run, then each resume,
fails at the next; ``python -m tests.faults.sweep --all`` checks every point, each alone.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess

import pytest

from tests.faults import sweep
from tests.helpers import (
    PONS_FILE,
    TINY_CLI,
    cli_params,
    files_under,
    kedro_cli,
    make_project,
    store_untouched,
    wait_for_line,
    write_versioned_parquet,
)

SAMPLE_SEED = 0


@pytest.fixture(scope="session")  # session: a module fixture is rebuilt when xdist interleaves
def sweep_base(tmp_path_factory, pons_set):
    """``(template project, work folder, write points, the clean run's output digests)``."""
    work = tmp_path_factory.mktemp("faults")
    template = make_project(work / "template", pin_store=False)  # each copy: its own store
    write_versioned_parquet(template, PONS_FILE, pons_set)
    points, clean = sweep.clean_run(template, work)
    return template, work, points, clean


@pytest.mark.slow
def test_the_clean_run_has_write_points_of_every_kind(sweep_base):
    _, _, points, clean = sweep_base
    kinds = {e["kind"] for e in points}
    assert kinds == {"dataset", "manifest", "mlflow"}
    saved = {e["name"] for e in points if e["kind"] == "dataset"}
    assert {"gen_001.games", "gen_001.model", "onnx_model", "play_page",
            "onnx_model_mlflow"} <= saved  # fmt: skip
    assert any(path.endswith("play/index.html") for path in clean)


@pytest.mark.slow
def test_a_full_disk_at_a_write_point_of_each_kind_fails_the_run_cleanly_and_it_resumes_whole(
    sweep_base,
):
    """The sample's three points in one project: the run fails at the first, its resume at
    the second, that resume's resume at the third (a dataset save's fault keeps failing
    after it: data/ read-only mid-run, the run cannot record its own failure, and must say
    so), then the last resume finishes whole (see sweep.check_chain)."""
    template, work, points, clean = sweep_base
    chosen = sweep.sample(points, 3, SAMPLE_SEED)
    reports = sweep.check_chain(template, work, chosen, points, clean)
    assert sorted(r["kind"] for r in reports) == ["dataset", "manifest", "mlflow"]
    assert all("#" in str(r["at"]) for r in reports[1:])  # the resumes' faults, by node
    assert reports[-1]["loads"] > 0


# ---------------------------------------------------------------------------
# A user's mistake: one message that names the file or the valid names
# ---------------------------------------------------------------------------


def _clean_error(res) -> str:
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "Traceback" not in out and "│" not in out, out[-3000:]
    return out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--pipelines=alphazer"], "Error: no pipeline named 'alphazer'. Did you mean "
                                   "'alphazero'? The pipelines are: alphazero,"),
        (["--pipeline=alphazer"], "Error: no pipeline named 'alphazer'. Did you mean"),
        (["--env", "nosuchenv"], "Error: no env named 'nosuchenv' (no folder conf/nosuchenv). "
                                 "The envs are: "),
        (["--env", "gpuu"], "Error: no env named 'gpuu' (no folder conf/gpuu). Did you mean "
                            "'gpu'? The envs are: "),
    ],
)  # fmt: skip
def test_unknown_pipeline_or_env_lists_the_valid_names(kedro_project, args, expected):
    before = files_under(kedro_project)
    res = kedro_cli(kedro_project, "run", *args)
    out = _clean_error(res)
    assert res.returncode == 2 and expected in out
    assert "Usage:" not in out  # the message is the first and only thing said
    assert files_under(kedro_project) == before and store_untouched(kedro_project)


@pytest.mark.slow
def test_an_unknown_node_names_the_closest_ones_and_verbose_shows_the_traceback(kedro_project):
    before = files_under(kedro_project)
    out = _clean_error(kedro_cli(kedro_project, "run", "--nodes=gen_001.trian"))
    assert "no node named 'gen_001.trian'" in out
    assert "closest to 'gen_001.trian': gen_001.train" in out
    assert "kedro run --verbose shows the traceback" in out
    assert files_under(kedro_project) == before and store_untouched(kedro_project)  # no lock
    verbose = kedro_cli(kedro_project, "run", "--nodes=gen_001.trian", "--verbose")
    assert verbose.returncode != 0 and "Traceback" in verbose.stdout + verbose.stderr


def _newer_version(project, relpath: str, content: bytes) -> None:
    target = project / relpath / "2099-01-01T00.00.00.000Z" / relpath.rsplit("/", 1)[-1]
    target.parent.mkdir(parents=True)
    target.write_bytes(content)


@pytest.fixture
def export_project(pons_project):
    """A project with a model to export (an untrained one) and the solver set."""
    from kedro.io.core import Version

    from connect_zero_pipeline.core.models import build_model
    from connect_zero_pipeline.datasets import TorchModelDataset

    path = str(pons_project / "data/06_models/latest_model.pt")
    TorchModelDataset(path, version=Version(None, None)).save(build_model("mlp"))
    return pons_project


@pytest.mark.slow
@pytest.mark.parametrize(
    ("relpath", "content", "expected"),
    [
        (PONS_FILE, b"PAR1 not really", "Parquet magic bytes not found"),
        ("data/06_models/latest_model.pt", b"\x00garbage", "is not a readable model file"),
    ],
)
def test_a_corrupt_input_file_is_named_in_one_message(export_project, relpath, content, expected):
    project = export_project
    _newer_version(project, relpath, content)
    out = _clean_error(kedro_cli(project, "run", "--pipelines=export"))
    assert expected in out and "2099-01-01T00.00.00.000Z" in out  # names the file
    assert "kedro run --verbose shows the traceback" in out
    (manifest,) = [json.loads(p.read_text()) for p in (project / "data/runs").glob("*.json")]
    assert manifest["status"] == "failed" and expected in manifest["error"]


# ---------------------------------------------------------------------------
# The MLflow store: locked, read-only
# ---------------------------------------------------------------------------


@pytest.fixture
def store_project(kedro_project):
    """A project whose MLflow store exists (a sqlite file; the check runs before MLflow reads it)."""
    db = kedro_project / "mlflow.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (x)")
    con.close()
    return kedro_project


def test_a_locked_store_is_waited_for_then_refused_with_the_file_named(store_project):
    project = store_project
    before = files_under(project)
    holder = sqlite3.connect(project / "mlflow.db")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        env = {**os.environ, "CZ_STORE_WAIT_S": "1"}
        res = subprocess.run([sweep.KEDRO, "run", "--pipelines=export"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    finally:
        holder.rollback()
        holder.close()
    out = _clean_error(res)
    assert f"The MLflow store {project / 'mlflow.db'} is locked" in out
    assert "more than 1 s" in out
    assert files_under(project) == before  # refused before the run began


def test_a_store_locked_mid_run_is_one_line_in_the_manifest_and_silent_in_the_log():
    """Locked after the run began (another process in BEGIN EXCLUSIVE), every MLflow call
    fails after MLflow's own wait: each failure is one line, never MLflow's SQL and
    tracebacks (about 60 lines a query). The whole run takes minutes of those waits, so
    this checks the two pieces it is made of; the run's paragraph is the test above."""
    import logging

    from mlflow.exceptions import MlflowException

    from connect_zero_pipeline.common import quiet
    from connect_zero_pipeline.run.messages import error_line

    sql = "(sqlite3.OperationalError) database is locked\n[SQL: SELECT runs.run_uuid AS runs_"
    line = error_line(MlflowException(sql))
    assert line.startswith("MlflowException: the MLflow store ") and "SQL" not in line
    assert line.endswith("mlflow.db is locked by another process")

    quiet.install()
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("mlflow.store.db.utils")
    logger.addHandler(handler)
    try:
        for text in (sql, "(sqlite3.OperationalError) no such table: runs"):
            logger.error("SQLAlchemy database error. The following exception is caught.\n%s", text)
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 1 and "no such table" in seen[0]  # other errors still show


def _make_read_only(path):
    """Read-only for this user: the mode bits, or the immutable flag for root (who ignores them)."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        return lambda: path.chmod(0o644)
    subprocess.run(["chattr", "+i", str(path)], check=True)
    return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_store_is_refused_before_anything_is_written(store_project):
    project = store_project
    db = project / "mlflow.db"
    before = {f: (project / f).stat().st_mtime_ns for f in files_under(project)}
    undo = _make_read_only(db)
    try:
        res = kedro_cli(project, "run", "--pipelines=export")
    finally:
        undo()
    out = _clean_error(res)
    assert f"The MLflow store {db} cannot be written" in out and "Nothing was written." in out
    after = {f: (project / f).stat().st_mtime_ns for f in files_under(project)}
    assert after == before


# ---------------------------------------------------------------------------
# Ctrl-C in a run
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_and_sigterm_stop_a_run_and_mark_it_failed_everywhere(pons_project):
    """A Ctrl-C (SIGINT to the terminal's process group) during the first generation, then a
    SIGTERM (a scheduler's stop: to the process alone) during its resume: each says
    ``Stopping...`` at once, ends with its message, the resume line and its exit status, and
    marks the run failed in its manifest and in MLflow (the parent and the running child)."""
    from tests.helpers import mlflow_client

    project = pons_project
    # Eight generations: the first train node leaves seven and the export to run (15 s idle,
    # more on a busy machine; a stopped run never plays them), so the signal lands mid-run
    # however late this test reads the output: with two, a busy suite once read the line
    # after the run had ended. Two self-play workers, kept between generations: the Ctrl-C
    # reaches them too, as at a terminal.
    params = cli_params({**TINY_CLI, "alphazero.num_generations": 8, "selfplay.node.workers": 2})
    rest, code = _stopped(kedro_cli(project, "run", "--params", params, wait=False,
                                    terminal=True), "Running node: train", group=signal.SIGINT)  # fmt: skip
    assert code == 130
    (manifest,) = [json.loads(p.read_text()) for p in (project / "data/runs").glob("*.json")]
    assert manifest["status"] == "failed" and manifest["error"] == "interrupted (Ctrl-C)"
    run_id = manifest["run_id"]
    _one_stop(rest, "Interrupted.", f"Run {run_id} is recorded as failed (interrupted); resume "
              f"it: make resume RUN={run_id}")  # fmt: skip
    _marked_failed(mlflow_client(project), run_id, "gen_001")
    # The resume, stopped by SIGTERM in its first node to run: the same, with its own words.
    resume = kedro_cli(project, "run", "--only-missing-outputs", "--params", f"resume={run_id}",
                       wait=False, terminal=True)  # fmt: skip
    rest, code = _stopped(resume, "Running node: train", alone=signal.SIGTERM)
    assert code == 143
    manifest = json.loads((project / "data/runs" / f"{run_id}.json").read_text())
    assert manifest["status"] == "failed" and manifest["error"] == "terminated (SIGTERM)"
    _one_stop(rest, "Terminated.", f"Run {run_id} is recorded as failed (terminated); resume "
              f"it: make resume RUN={run_id}")  # fmt: skip
    _marked_failed(mlflow_client(project), run_id, "gen_001")


def _stopped(proc, line: str, group: int | None = None, alone: int | None = None):
    """Send a signal to ``proc`` (its group, or it alone) once it prints ``line``; the rest of
    its output and its exit status."""
    try:
        wait_for_line(proc, line)
        assert proc.poll() is None, "the run ended before the test could stop it"
        if group is not None:
            os.killpg(proc.pid, group)  # the terminal's Ctrl-C: the whole group
        else:
            os.kill(proc.pid, alone)  # a scheduler's: the process
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()
    return rest, proc.returncode


def _one_stop(rest: str, said: str, resume_line: str) -> None:
    """``Stopping...`` first, then the message and the resume line last; only log records
    between (of what was under way), nothing from the workers: no traceback."""
    lines = [line for line in rest.splitlines() if line.strip()]
    assert lines[-2:] == [said, resume_line], rest
    assert "Stopping..." in lines[:-2], rest
    others = [line for line in lines[:-2] if line != "Stopping..."]
    assert all(re.match(r"\d\d:\d\d:\d\d (INFO|WARNING) ", line) for line in others), rest


def _marked_failed(client, run_id: str, child: str) -> None:
    """The run's MLflow parent and its child ``child`` ended FAILED."""
    parent = next(r for r in client.search_runs(["1"], f"tags.run_id = '{run_id}'")
                  if "mlflow.parentRunId" not in r.data.tags)  # fmt: skip
    children = client.search_runs(["1"], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    statuses = {r.info.run_name: r.info.status for r in children}
    assert parent.info.status == "FAILED" and statuses[child] == "FAILED", statuses


def test_no_version_is_left_partial_when_a_save_fails(tmp_path):
    """The catalog's atomic save, alone: a save that raises half-way leaves no version."""
    import pandas as pd
    from kedro.io.core import Version
    from kedro_datasets.pandas import ParquetDataset

    from connect_zero_pipeline.datasets.atomic import AtomicDataCatalog

    class Broken(ParquetDataset):
        def save(self, data):
            path = self._get_save_path()
            self._fs.mkdirs(str(path.parent), exist_ok=True)
            with self._fs.open(str(path), "wb") as f:
                f.write(b"PAR1 half a file")
            raise OSError(28, "No space left on device")

    version = Version(None, "2026-01-01T00.00.00.000Z")
    filepath = str(tmp_path / "t.parquet")
    catalog = AtomicDataCatalog({"t": Broken(filepath=filepath, version=version)})
    with pytest.raises(Exception, match="No space left"):
        catalog.save("t", pd.DataFrame({"a": [1]}))
    assert files_under(tmp_path) == set()  # no version, no staging file
    assert not catalog["t"].exists()
    good = AtomicDataCatalog({"t": ParquetDataset(filepath=filepath, version=version)})
    good.save("t", pd.DataFrame({"a": [1]}))
    assert files_under(tmp_path) == {"t.parquet/2026-01-01T00.00.00.000Z/t.parquet"}
    good.save("t", pd.DataFrame({"a": [2]}))  # a resumed run: the complete version is kept
    assert pd.read_parquet(tmp_path / "t.parquet/2026-01-01T00.00.00.000Z/t.parquet").a[0] == 1
