"""scripts/gpu_check.py's own logic, on the CPU: what its rows say when CUDA is there, when the
machine cannot compile, and when scorecards lag (the whole check runs in
tests/pipelines/alphazero/test_gpu_envs.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys

import pytest

from tests.helpers import REPO

RUN = "2026-01-01T00.00.00.000Z"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "scripts/gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("gpu_check", None)


PYTEST_LINES = {
    "tests/core/test_evaluation.py": (  # the eager part's last file
        "tests/core/test_mcts.py::test_sync_free_on_cuda PASSED [ 50%]\n"
        "tests/core/test_evaluation.py::test_on_cuda_scored PASSED [100%]\n"
    ),
    "tests/core/test_compiled.py": (
        "tests/core/test_compiled.py::test_on_cuda_captured PASSED [ 50%]\n"
        "tests/core/test_compiled.py::test_on_cuda_self_play SKIPPED (no) [100%]\n"
    ),
}


def _check(gpu_check, tmp_path, steps=None):
    return gpu_check.Check(tmp_path / "out", 540.0, dict(os.environ), steps or gpu_check.STEPS)


def test_a_cuda_step_with_a_skipped_test_is_a_step_that_ran(gpu_check, tmp_path, monkeypatch):
    """With CUDA, the tests' outcomes are the row's ``tests``: a skipped test does not make the
    row a skipped step, so its result counts in the check's exit status."""
    check = _check(gpu_check, tmp_path)
    ran = []

    def run(step, cmd, timeout, cwd=None, env=None):
        ran.append(cmd[-1])
        return True, 1.0, PYTEST_LINES[cmd[-1]]

    monkeypatch.setattr(check, "run", run)
    gpu_check.step_tests(check, cuda=True)
    row = check.rows[-1]
    assert "skipped" not in row and row["ok"]
    assert row["tests"] == {
        "passed": ["test_sync_free_on_cuda", "test_on_cuda_scored", "test_on_cuda_captured"],
        "skipped": ["test_on_cuda_self_play"],
    }
    assert ran == ["tests/core/test_evaluation.py", "tests/core/test_compiled.py"]
    row["ok"] = False  # a failed CUDA step fails the check, skipped tests or not
    assert gpu_check.exit_status(check.rows) == 1
    assert "| cuda_tests | yes |" in (tmp_path / "out/summary.md").read_text()


def test_without_a_c_compiler_the_compiled_steps_say_so_and_give_their_time(
    gpu_check, tmp_path, monkeypatch
):
    assert gpu_check.toolchain({"PATH": str(tmp_path)})["c_compiler"] is None
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name in ("gcc", "mycc"):
        (bin_ / name).write_text("#!/bin/sh\n")
        (bin_ / name).chmod(stat.S_IRWXU)
    assert gpu_check.toolchain({"PATH": str(bin_)})["c_compiler"] == str(bin_ / "gcc")
    assert gpu_check.toolchain({"PATH": str(bin_), "CC": "mycc"})["c_compiler"] == str(
        bin_ / "mycc"
    )
    assert not gpu_check.compiles({"c_compiler": None, "python_h": "/x/Python.h"})
    # The plan without the compiled steps: none of them, and the others' caps grow.
    lean = gpu_check.without_compiler(gpu_check.STEPS)
    assert "bench_compiled" not in [s.name for s in lean]
    caps, left = gpu_check.plan(540.0, lean)
    full, _ = gpu_check.plan(540.0, gpu_check.STEPS)
    assert left >= 0 and caps["cuda_tests"] == gpu_check.EAGER_TEST_S
    assert caps["time_to_target"] > full["time_to_target"] + 30
    # The CUDA tests run the eager test alone, under the whole cap; the compiled rows say why.
    check = _check(gpu_check, tmp_path, lean)
    ran = []

    def run(step, cmd, timeout, cwd=None, env=None):
        ran.append((cmd[-1], timeout))
        return True, 1.0, PYTEST_LINES[cmd[-1]]

    monkeypatch.setattr(check, "run", run)
    gpu_check.step_tests(check, cuda=True, compiled=False)
    gpu_check.compiled_cells(check, False, ["selfplay"], "inductor")
    ((test, timeout),) = ran
    assert test == "tests/core/test_evaluation.py" and timeout > gpu_check.EAGER_TEST_S - 20
    tests, cold, warm = check.rows
    assert tests["ok"] and tests["compiled"] == gpu_check.NEEDS_COMPILER
    assert cold["skipped"] == warm["skipped"] == gpu_check.NEEDS_COMPILER
    assert gpu_check.exit_status(check.rows) == 0


def _written(path, mtime, text="{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))


def test_the_run_row_counts_models_and_reports_the_scorecards_lag(gpu_check, tmp_path):
    """Generations whose scorecard has not come yet still count: the run made them."""
    from connect_zero_pipeline.run.manifest import write_manifest

    project, start, run = gpu_check.project_copy(tmp_path / "project"), 1_000_000.0, RUN
    assert (project / "data/03_primary/pons_positions.parquet").is_dir()  # the shipped set
    assert gpu_check.generation_rows(project, start, 600) == []  # no run yet
    write_manifest(project, {"run_id": run, "status": "running", "pipelines": ["alphazero"]})
    for gen, model_at, card_at in ((1, 10.0, 30.0), (2, 20.0, None), (3, 25.0, None)):
        name = f"gen_{gen:03d}"
        _written(project / f"data/06_models/{name}/model.pt/{run}/model.pt", start + model_at)
        if card_at is not None:
            _written(project / f"data/08_reporting/{name}/eval_metrics.json/{run}/eval_metrics.json",
                     start + card_at, json.dumps({"solver.acc": 0.4}))  # fmt: skip
    rows = gpu_check.generation_rows(project, start, 600)
    ok, figures = gpu_check.run_figures(rows, None, True, {}, 600)
    assert ok and figures["generations"] == 3 and figures["scorecards"] == 1
    assert [r["scorecard_lag_s"] for r in rows] == [20.0, None, None]
    assert figures["scorecard_lag_max_s"] == 20.0 and figures["last_solver_acc"] == 0.4
    assert figures["first_model_s"] == 10.0 and figures["first_scorecard_s"] == 30.0
    assert len(figures["table"]) == 2 + 3 and "| 2 | 20 | - | - |" in figures["table"][3]
    assert not gpu_check.run_figures([], None, True, {}, 600)[0]  # no model: not ok
