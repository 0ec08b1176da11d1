"""The GPU check (scripts/gpu_check.sh) as the offline GPU machine runs it, on the CPU at tiny
sizes, and with it the GPU env end to end: `kedro run --env gpu` on the CPU.

The project's machines have no GPU, so the GPU recipes cannot be timed here; this proves
that the one command a GPU machine runs works step by step, set up as that machine is:

- the project is a copy without git's ignored files (a ``git archive``, as the device tool
  copies it): no ``node_modules``, so the run's play page is written without onnxruntime-web
  and the run still finishes;
- the interpreter has no ``kedro`` script beside it, and the machine's own packages are on
  ``PYTHONPATH`` (here this environment's);
- the packages it lacks come as a bundle of wheels (here Kedro's three, made from this
  environment's installed files: no package index), which the check installs into a target
  folder inside its budget, and which shadow the machine's own.

The env merges over conf/base, validates, builds its DAG and runs every node with its own
runner (the scorecards beside the next generation, one at a time: ``alphazero.overlap``),
with only the device, the sizes and the searches' network (torch, as on a GPU) overridden.
Every env (``gpu_strong`` too) is merged and validated in ``tests/test_conf.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch

from connect_zero_pipeline import web
from tests.helpers import checkout_copy, latest, mlflow_client, wheel_from_installed

LACKING = ("kedro", "kedro-datasets", "kedro-mlflow")


@pytest.mark.slow
@pytest.mark.rehearsal  # make test-rehearsal, which CI runs after make test
def test_the_gpu_check_from_a_bundle_and_an_archive_runs_every_step_inside_its_budget(tmp_path):
    copy = checkout_copy(tmp_path / "checkout")
    assert not (copy / "src/connect_zero_pipeline/web/node_modules").exists()
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for name in LACKING:
        wheel_from_installed(name, bundle)
    bare = tmp_path / "bin"  # an interpreter with no kedro script beside it
    bare.mkdir()
    (bare / "python").symlink_to(Path(sys.executable).resolve())
    machine = sysconfig.get_paths()["purelib"]  # the machine's own packages
    out, budget, keep, site = tmp_path / "check", 420, tmp_path / "kept", tmp_path / "site"
    env = {**os.environ, "PYTHON": str(bare / "python"), "PYTHONPATH": machine}
    res = subprocess.run(["bash", str(copy / "scripts/gpu_check.sh"), str(out), "--tiny",
                          "--bundle", str(bundle), "--site", str(site), "--budget", str(budget),
                          "--keep", str(keep)], capture_output=True, text=True, env=env,
                         timeout=budget + 60)  # fmt: skip
    rows = {r["step"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:] + json.dumps(rows)
    # The order: set-up first, then the most valuable; each step's row written as it ended.
    assert list(rows) == ["plan", "setup", "env", "time_to_target", "bench_eager", "cuda_tests",
                          "bench_compiled_cold", "bench_compiled_warm"]  # fmt: skip
    assert all(r["ok"] for r in rows.values()), rows
    plan = rows["plan"]["caps"]  # the plan's caps fit the budget, with their stop margins
    assert list(plan) == ["setup", "env", "time_to_target", "bench_eager", "cuda_tests",
                          "bench_compiled"]  # fmt: skip
    shared = ("time_to_target", "bench_eager", "cuda_tests", "bench_compiled")
    assert plan["time_to_target"] == max(plan[s] for s in shared)  # the most valuable
    assert sum(r["seconds"] for r in rows.values()) <= budget  # set-up included
    # The bundle was installed and is what runs: Kedro from the target, not the machine's.
    setup = rows["setup"]
    assert setup["wheels"] == len(LACKING) and setup["kedro_from"].startswith(str(site))
    assert setup["packages"] > 50 and isinstance(setup["pip_check"], list)
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
    assert "graph_calls_per_move" in (out / "bench_compiled.log").read_text()
    # The watched run: three generations, each stage timed, each scorecard after its model
    # and its lag behind it reported.
    run = rows["time_to_target"]
    assert run["generations"] == run["scorecards"] == 3 and 0 < run["last_solver_acc"] < 1
    gens = run["per_generation"]
    assert [g["generation"] for g in gens] == [1, 2, 3]
    for gen in gens:
        assert gen["scorecard_at_s"] > gen["model_at_s"] > gen["selfplay_s"] > 0
        assert gen["scorecard_lag_s"] == pytest.approx(gen["scorecard_at_s"] - gen["model_at_s"],
                                                       abs=0.11)  # fmt: skip
        assert gen["train_s"] > 0 and gen["evaluate_s"] > 0 and gen["compile_s"] is None
        assert all(0 <= gen[f"weak_{s}"] <= 1 for s in ("Test_L3_R1", "Test_L2_R1"))
    assert run["scorecard_lag_max_s"] == max(g["scorecard_lag_s"] for g in gens)
    log = (out / "time_to_target.log").read_text()
    assert log.startswith(f"$ {bare / 'python'} -m kedro run --env gpu")  # no kedro script
    # The scorecards ran beside the loop (gen_001's while gen_002 played), one at a time.
    running, most, events = set(), 0, []
    for line in log.splitlines():
        started = re.search(r"Running node: evaluate: .*-> \[(gen_\d+)\.eval_metrics\]", line)
        ended = re.search(r"Completed node: (gen_\d+)\.evaluate", line)
        if started:
            running.add(started[1])
        elif ended:
            running.discard(ended[1])
        if started or ended or "Running node: self_play" in line:
            events.append(line)
        most = max(most, len(running))
    assert most == 1, events
    first_done = next(i for i, e in enumerate(events) if "Completed node: gen_001.evaluate" in e)
    assert any("-> [gen_002.games" in e for e in events[:first_done]), events
    # The env's own keys took effect (its `small` network, its runner) ...
    project = keep / "project"
    model = torch.load(latest(project, "data/06_models/gen_001/model.pt"), weights_only=True)
    assert (model["config"]["blocks"], model["config"]["channels"]) == (5, 64)
    for rel in ("data/06_models/latest_model.pt", "data/06_models/onnx_model.onnx"):
        assert latest(project, rel).stat().st_size > 10_000, rel
    # ... the page without the runtime it could not have, and the summary says so ...
    page = latest(project, "data/08_reporting/play")
    assert (page / "model.onnx").is_file() and not web.has_runtime(page)
    assert json.loads((page / "model.json").read_text())["onnxruntime_web"] is None
    assert (
        f"play page: `data/08_reporting/play/{page.parent.name}/play` (without onnxruntime-web"
        in log
    )
    # ... and the recipe keys it does not name came from conf/base, not code defaults.
    client = mlflow_client(project)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    runs = client.search_runs([exp.experiment_id])
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    assert parent.data.tags["runner"] == "OverlapRunner"
    child = next(r for r in runs if r.info.run_name == "gen_001")
    assert child.data.params["selfplay.random_opening_plies"] == "4"
    assert child.data.params["train.root_value_weight"] == "0.5"
    assert child.data.params["selfplay.num_games"] == "8"
    assert child.data.params["selfplay.mcts.gumbel_num_actions"] == "4"
    assert child.data.params["selfplay.node.compile"] == "auto"
    assert child.data.params["evaluate.node.backend"] == "torch"  # as on a GPU
    assert child.data.params["selfplay.finish_games"] == "False"  # conf/gpu's
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert client.search_registered_models()[0].latest_versions  # registered, offline too
