"""The GPU check (scripts/gpu_check.sh) runs on the CPU at tiny sizes, and with it the GPU
env end to end: `kedro run --env gpu` on the CPU.

The project's machines have no GPU, so the GPU recipes cannot be timed here; this proves
that the one command a first GPU machine runs works step by step (the CUDA tests, the
benchmarks with their compiled cells, a watched `kedro run --env gpu`), and that the env
merges over conf/base, validates, builds its DAG and runs every node (self-play with its
default path, nothing compiled; training, evaluation, export), with only the device and the
sizes overridden. Every env (``gpu_strong`` too) is merged and validated in ``tests/test_conf.py``.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import torch

from tests.helpers import REPO, latest, mlflow_client


@pytest.mark.slow
def test_the_gpu_check_runs_every_step_inside_its_budget_and_the_gpu_env_end_to_end(tmp_path):
    out, budget, keep = tmp_path / "check", 420, tmp_path / "kept"
    res = subprocess.run(["bash", str(REPO / "scripts/gpu_check.sh"), str(out), "--tiny",
                          "--budget", str(budget), "--keep", str(keep)], capture_output=True,
                         text=True, timeout=budget + 60)  # fmt: skip
    rows = {r["step"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:] + json.dumps(rows)
    # The order: most valuable first; each step's figures written as it ended.
    assert list(rows) == ["plan", "env", "time_to_target", "bench_eager", "cuda_tests",
                          "bench_compiled_cold", "bench_compiled_warm"]  # fmt: skip
    assert all(r["ok"] for r in rows.values())
    plan = rows["plan"]["caps"]  # the plan's caps fit the budget, with their stop margins
    assert list(plan) == ["env", "time_to_target", "bench_eager", "cuda_tests", "bench_compiled"]
    assert plan["time_to_target"] == max(plan.values())
    assert sum(r["seconds"] for r in rows.values()) <= budget
    # OUT: at most 8 files, none deeper than OUT itself.
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= 8 and all(p.parent == out for p in files), files
    if not torch.cuda.is_available():  # the CUDA parts are skipped, and say so
        assert rows["cuda_tests"]["skipped"] == "no CUDA"
    summary = (out / "summary.md").read_text()
    assert "| time_to_target | yes |" in summary and "host_syncs_per_move" in summary
    bench = [json.loads(x) for x in (out / "bench_eager.log").read_text().splitlines()
             if x.startswith("{")]  # fmt: skip
    assert {(b["batch"], b["way"]) for b in bench} == {(32, "host_sync"), (32, "device")}
    assert "graph_calls_per_move" in (out / "bench_compiled_warm.log").read_text()
    # The watched run: one generation, each stage timed, its evaluation read, public sets too.
    run = rows["time_to_target"]
    assert run["generations"] == 1 and 0 < run["last_solver_acc"] < 1
    (gen,) = run["per_generation"]
    assert gen["since_start_s"] > gen["selfplay_s"] > 0 and gen["train_s"] > 0
    assert gen["evaluate_s"] > 0 and gen["compile_s"] is None  # nothing compiled
    assert all(0 <= gen[f"weak_{s}"] <= 1 for s in ("Test_L3_R1", "Test_L2_R1"))
    # The env's own keys took effect (its `small` network) ...
    project = keep / "project"
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
    assert child.data.params["selfplay.node.compile"] == "auto"
    assert {r.info.status for r in runs} == {"FINISHED"}
