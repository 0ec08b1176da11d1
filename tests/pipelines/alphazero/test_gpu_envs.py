"""The GPU check (scripts/gpu_check.sh) runs on the CPU at tiny sizes, and with it the GPU
env end to end: `kedro run --env gpu` on the CPU.

The project's machines have no GPU, so the GPU recipes cannot be timed here; this proves
that the one command a first GPU machine runs works step by step (the CUDA tests, the
benchmarks with their compiled cells, a watched `kedro run --env gpu`), and that the env
merges over conf/base, validates, builds its DAG and runs every node (self-play with the
search compiled, training, evaluation, export), with only the device and the sizes
overridden. Every env (``gpu_strong`` too) is merged and validated in ``tests/test_conf.py``.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import torch

from tests.helpers import REPO, latest, mlflow_client


@pytest.mark.slow
def test_the_gpu_check_runs_every_step_and_the_gpu_env_end_to_end(tmp_path):
    out = tmp_path / "check"
    res = subprocess.run(["bash", str(REPO / "scripts/gpu_check.sh"), str(out), "--tiny"],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    rows = {r["step"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:] + json.dumps(rows)
    assert list(rows) == ["env", "cuda_tests", "bench_selfplay", "bench_train", "time_to_target"]
    assert all(r["ok"] for r in rows.values())
    if not torch.cuda.is_available():  # the CUDA parts are skipped, and say so
        assert rows["cuda_tests"]["skipped"] == rows["bench_train"]["skipped"] == "no CUDA"
    summary = (out / "summary.md").read_text()
    assert "| time_to_target | yes |" in summary and "host_syncs_per_move" in summary
    bench = [json.loads(x) for x in (out / "bench_selfplay.jsonl").read_text().splitlines()]
    assert {(b["batch"], b["way"]) for b in bench} == {(32, "host_sync"), (32, "device")}
    # The watched run read its generation's evaluation, public sets included.
    run = rows["time_to_target"]
    assert run["generations"] == 1 and 0 < run["last_solver_acc"] < 1
    row = next(
        x for x in summary.split("### time_to_target")[1].splitlines() if x.startswith("| 1 |")
    )
    weak = [float(x) for x in row.strip(" |").split(" | ")[3:]]  # MCTS-2 on both public sets
    assert len(weak) == 2 and all(0 <= w <= 1 for w in weak)
    # The env's own keys took effect (its `small` network) ...
    project = out / "time_to_target"
    model = torch.load(latest(project, "data/06_models/gen_001/model.pt"), weights_only=True)
    assert (model["config"]["blocks"], model["config"]["channels"]) == (5, 64)
    for rel in ("data/06_models/latest_model.pt", "data/06_models/onnx_model.onnx"):
        assert latest(project, rel).stat().st_size > 10_000, rel
    # ... and the recipe keys it does not name came from conf/base, not code defaults.
    client = mlflow_client(project)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    runs = client.search_runs([exp.experiment_id])
    child = next(r for r in runs if r.info.run_name == "gen_001")
    assert child.data.params["selfplay.random_opening_plies"] == "4"
    assert child.data.params["train.root_value_weight"] == "0.5"
    assert child.data.params["selfplay.num_games"] == "8"
    assert child.data.params["selfplay.mcts.gumbel_num_actions"] == "4"
    assert {r.info.status for r in runs} == {"FINISHED"}
