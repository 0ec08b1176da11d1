"""A run's context: planned once, read only, moved on stage by stage by one function."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connect_zero_pipeline.run.context import RunContext, advance, freeze, thaw


def _planned() -> RunContext:
    params = freeze(
        {"model": {"seed": 0, "preset": "cpu"}, "evaluate": {"benchmark": {"sims": [2]}}}
    )
    return RunContext(root=Path("."), run_id="r1", attempt="r1", env=None, params=params)


def test_the_parameters_are_read_only_and_thaw_into_json():
    run = _planned()
    with pytest.raises(TypeError):
        run.params["model"] = {}
    with pytest.raises(TypeError):
        run.params["model"]["seed"] = 3
    plain = thaw(run.params)
    assert json.loads(json.dumps(plain)) == plain and plain["model"]["seed"] == 0
    plain["model"]["seed"] = 5  # a copy: the run's own stay
    assert run.params["model"]["seed"] == 0


def test_a_run_moves_on_stage_by_stage_each_a_new_context():
    planned = _planned()
    claimed = advance(planned, "claimed", run_id="r2", manifest={"status": "running"})
    assert (planned.stage, planned.run_id, planned.manifest) == ("planned", "r1", None)
    assert (claimed.stage, claimed.run_id) == ("claimed", "r2")
    again = advance(claimed, "claimed", manifest={"status": "running", "x": 1})  # same stage
    pinned = advance(again, "pinned")
    opened = advance(pinned, "opened", mlflow_parent="abc")
    ended = advance(opened, "failed", manifest={"status": "failed"})
    assert [c.stage for c in (again, pinned, opened, ended)] == [
        "claimed", "pinned", "opened", "failed"]  # fmt: skip
    with pytest.raises(ValueError, match="r2 is opened: it cannot be claimed now"):
        advance(opened, "claimed")
    with pytest.raises(ValueError, match="is failed: it cannot be finished now"):
        advance(ended, "finished")
    with pytest.raises(ValueError, match="stage must be one of"):
        advance(planned, "running")


def test_a_resume_in_another_env_is_refused_in_words(tmp_path):
    from connect_zero_pipeline.run.manifest import write_manifest
    from connect_zero_pipeline.run.rules import check_resume

    params = {"model": {"seed": 0}}
    run = "2026-11-23T10.26.41.512Z"
    write_manifest(tmp_path, {"run_id": run, "status": "failed", "env": "gpu", "params": params})
    with pytest.raises(ValueError) as refused:
        check_resume(tmp_path, {**params, "resume": run}, None)
    message = str(refused.value)
    assert "that run used --env gpu, this one no --env (conf/base and local)" in message
    assert "None" not in message


def test_a_run_on_cuda_sets_float32_precision_once_for_its_process(monkeypatch):
    """Before its first node, not around each: an overlapped run's nodes share the process
    (core/device.py). The flag alone: no GPU is needed to set it."""
    import torch

    from connect_zero_pipeline.params.schema import node_settings, parse_run_params
    from connect_zero_pipeline.session.run_life import RunLife

    stages = {s: {"node": {"device": "cpu"}} for s in
              ("selfplay", "train", "evaluate", "pons", "baselines", "scorecard", "ladder")}  # fmt: skip
    stages["reinforce"] = {"train": {"node": {"device": "cpu"}},
                           "evaluate": {"node": {"device": "cpu"}}}  # fmt: skip
    assert {n.device for n in node_settings(parse_run_params(stages))} == {"cpu"}  # every stage

    def run(params: dict) -> RunContext:
        return RunContext(root=Path("."), run_id="r1", attempt="r1", env=None,
                          params=freeze(params))  # fmt: skip

    before = torch.get_float32_matmul_precision()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    try:
        torch.set_float32_matmul_precision("highest")
        RunLife._process_settings(run(stages))  # every stage on the CPU: its products untouched
        assert torch.get_float32_matmul_precision() == "highest"
        RunLife._process_settings(run({**stages, "train": {"node": {"device": "cuda"}}}))
        assert torch.get_float32_matmul_precision() == "high"
        torch.set_float32_matmul_precision("highest")
        RunLife._process_settings(run({}))  # device auto: CUDA here
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(before)
