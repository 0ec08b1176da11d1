"""A run reads only its own versions: kill and resume, two runs at once, a copied project.

Real `kedro run` subprocesses at tiny sizes, in projects that already hold other runs
(copies of the session's shared finished run).
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pandas as pd
import pytest

from connect_zero_pipeline.commands.curve import run_heading
from connect_zero_pipeline.commands.runs import runs_table
from connect_zero_pipeline.common.config_loader import project_config
from connect_zero_pipeline.params.alphazero import AlphaZeroConfig
from connect_zero_pipeline.run.liveness import open_inodes, run_status
from connect_zero_pipeline.run.manifest import claim_manifest, known_runs, read_manifest
from tests.helpers import (
    FINISHED_RUN,
    TINY_CLI,
    cli_params,
    copy_project,
    descendants,
    files_under,
    kedro_cli,
    mlflow_client,
    model_digest,
    store_untouched,
    survivors,
    versions,
    wait_for_line,
)

# Most of these copy the suite's shared finished run (conftest's finished_run, made once).
pytestmark = pytest.mark.slow
SHM = Path("/dev/shm")


def _runs(project: Path) -> list:
    client = mlflow_client(project)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    return client.search_runs([exp.experiment_id]) if exp else []


def _run_file(project: Path, relpath: str, run_id: str) -> Path:
    return project / relpath / run_id / Path(relpath).name


def _kill_at(project: Path, args: tuple[str, ...], dataset: str) -> tuple[set[str], set[int]]:
    """Start ``kedro <args>`` in ``project`` and kill it alone (SIGKILL: the OOM killer, a
    ``kill -9``) just before it saves ``dataset`` (the fault shim holds it there:
    ``tests/faults/sitecustomize.py``'s ``CZ_PAUSE_AT``). Every process it started
    (self-play's workers, multiprocessing's resource tracker) must then exit by itself,
    without a "leaked semaphore" warning (``executors.lifetime``). Returns the semaphores in
    /dev/shm it had open and the processes it had started."""
    from tests.faults.sweep import SHIM

    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(SHIM), os.environ.get("PYTHONPATH")])),
           "CZ_FAULT_LOG": str(project.parent / "points.jsonl"), "CZ_PAUSE_AT": dataset}  # fmt: skip
    proc = kedro_cli(project, *args, wait=False, env=env)
    held: set[str] = set()
    started: set[int] = set()
    try:
        wait_for_line(proc, f"Paused at {dataset}")
        inodes = open_inodes(SHM, [proc.pid])
        held = {p.name for p in SHM.glob("sem.mp-*") if p.stat().st_ino in inodes}
        started = descendants(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    left = survivors(started)
    for pid in left:  # do not leave them behind either way
        os.kill(pid, signal.SIGKILL)
    # The output's end, once every process that held it has gone.
    rest = proc.stdout.read()
    proc.stdout.close()
    assert left == set(), f"processes outlived the killed kedro process: {left}"
    assert "resource_tracker" not in rest and "leaked" not in rest, rest[-2000:]
    return held, started


def _snapshot(project: Path) -> dict[str, bytes]:
    """The bytes of every file of a project's record: its data, its MLflow store and
    artifacts."""
    files = {"mlflow.db": (project / "mlflow.db").read_bytes()}
    for folder in ("data", "mlruns"):
        for name in files_under(project / folder):
            files[f"{folder}/{name}"] = (project / folder / name).read_bytes()
    return files


def _assert_own_lineage(project: Path, run_id: str, last_generation: int) -> None:
    """Every generation's model and the published, exported model are this run's."""
    for k in range(last_generation + 1):
        assert run_id in versions(project, f"data/06_models/gen_{k:03d}/model.pt"), k
    last = _run_file(project, f"data/06_models/gen_{last_generation:03d}/model.pt", run_id)
    published = _run_file(project, "data/06_models/latest_model.pt", run_id)
    assert model_digest(published) == model_digest(last)
    assert _run_file(project, "data/06_models/onnx_model.onnx", run_id).is_file()


def test_a_resume_that_cannot_work_says_so_before_doing_anything(pons_project):
    project = pons_project
    before = files_under(project / "data")
    unknown = kedro_cli(
        project, "run", "--only-missing-outputs", "--params", "resume=2020-01-01T00.00.00.000Z"
    )
    assert unknown.returncode != 0
    assert "resume='2020-01-01T00.00.00.000Z': no such run" in unknown.stdout + unknown.stderr
    assert files_under(project / "data") == before
    assert store_untouched(project)
    # A resume takes the run's recorded parameters; asked to change one, it refuses: fewer
    # generations (a run can be extended, not shortened), or any key but where it runs.
    run_id = "2026-01-01T00.00.00.000Z"
    manifest = {"run_id": run_id, "pipelines": ["__default__"], "env": None, "status": "running"}
    now = AlphaZeroConfig().num_generations  # conf/base's value (tests/test_conf.py)
    (project / "data" / "runs").mkdir(parents=True, exist_ok=True)
    recorded = project_config(project, "parameters")  # conf's recipe, but for two keys
    recorded["alphazero"] = {**recorded["alphazero"], "num_generations": now + 6}
    recorded["baselines"] = {**recorded["baselines"], "num_games": 7}
    manifest["params"] = recorded
    (project / "data" / "runs" / f"{run_id}.json").write_text(json.dumps(manifest))
    for asked, message in [
        (f"alphazero.num_generations={now}", f"alphazero.num_generations={now}: the run has "
         f"{now + 6} generations; a run can be extended (a larger value), not shortened"),
        ("baselines.num_games=8", "it may only raise alphazero.num_generations or change where "
         "a stage runs (*.node.*). Changed: baselines.num_games: 7 -> 8"),
    ]:  # fmt: skip
        changed = kedro_cli(
            project, "run", "--only-missing-outputs", "--params", f"resume={run_id},{asked}"
        )
        assert changed.returncode != 0
        assert message in changed.stdout + changed.stderr, changed.stderr[-2000:]
    assert files_under(project / "data") == before | {f"runs/{run_id}.json"}
    assert store_untouched(project)


def test_two_runs_at_once_in_a_copied_project_each_write_their_own_outputs_into_it(
    finished_run, tmp_path
):
    """Two runs at once in a copy of a project that holds a finished run, started from a
    subfolder as a notebook would start them: each exports its own model, and both write
    into the copy's store and artifacts, never into the original's.

    The first trains further as a new run: its generation 0 is the champion's network (the
    finished run's last model), read as the run's input, with the source's last games as its
    replay window; its parent, manifest, summary and registered version say where it
    started."""
    import torch

    original, earlier_id = finished_run  # conf/base's store: <root>/mlflow.db
    before = files_under(original / "mlruns")
    assert before
    copy = copy_project(original, tmp_path / "copy")
    (copy / "notebooks").mkdir(exist_ok=True)
    one = {**TINY_CLI, "alphazero.num_generations": 1}
    start = {
        **one,
        "model.start_window": "true",
        "model.start_from": "models:/connect-zero@champion",
    }
    # The second starts once the first has resolved its start (the alias moves when a run
    # registers its model); then both run at once, in one store.
    first = kedro_cli(
        copy, "run", "--params", cli_params(start), wait=False, cwd=copy / "notebooks"
    )
    said = [wait_for_line(first, "Running node: init_model")]
    second = kedro_cli(copy, "run", "--params", cli_params({**one, "model.seed": 2}), wait=False,
                       cwd=copy / "notebooks")  # fmt: skip
    said += [p.communicate(timeout=600)[0] for p in (first, second)]
    for proc, out in zip((first, second), said[1:], strict=True):
        assert proc.returncode == 0, out[-3000:]
    ids = set(known_runs(copy)) - {earlier_id}
    assert len(ids) == 2
    (run_id,) = [i for i in ids if read_manifest(copy, i).get("start_from")]
    digests = set()
    for run in ids:
        _assert_own_lineage(copy, run, 1)
        digests.add(model_digest(_run_file(copy, "data/06_models/latest_model.pt", run)))
        assert _run_file(copy, "data/08_reporting/learning_curves.png", run).is_file()
    assert len(digests) == 2  # two starts, two models
    runs = _runs(copy)
    assert len([r for r in runs if "mlflow.parentRunId" not in r.data.tags]) == 3
    assert {r.info.status for r in runs} == {"FINISHED"}
    # The copy's store, wherever the run starts: the original is untouched.
    assert files_under(original / "mlruns") == before
    assert files_under(copy / "mlruns") > before
    assert not (copy / "notebooks" / "mlflow.db").exists()
    client = mlflow_client(copy)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    assert exp.artifact_location == (copy / "mlruns").as_uri()
    for run in runs:
        assert run.info.artifact_uri.startswith((copy / "mlruns").as_uri()), run.info.artifact_uri

    # The run started from the champion. With its replay window, generation 0's games are
    # the source's generations 1 and 2 (buffer_gens 4 would take 3; it has 2), numbered -1
    # and 0, and generation 1 trains on them.
    taken = pd.read_parquet(_run_file(copy, "data/05_model_input/selfplay/gen_000/games.parquet",
                                      run_id))  # fmt: skip
    source = [pd.read_parquet(_run_file(copy, f"data/05_model_input/selfplay/gen_00{k}/"
                                        "games.parquet", earlier_id)) for k in (1, 2)]  # fmt: skip
    assert taken.drop(columns="generation").equals(
        pd.concat(source, ignore_index=True).drop(columns="generation")
    )
    assert sorted(taken["generation"].unique()) == [-1, 0]
    metrics = json.loads(_run_file(copy, "data/08_reporting/gen_001/train_metrics.json",
                                   run_id).read_text())  # fmt: skip
    assert metrics["window_generations"] == 3
    gen0 = torch.load(_run_file(copy, "data/06_models/gen_000/model.pt", run_id),
                      weights_only=True)  # fmt: skip
    final = _run_file(copy, "data/06_models/gen_002/model.pt", earlier_id)
    weights = torch.load(final, weights_only=True)
    assert gen0["config"] == weights["config"]
    assert all(torch.equal(gen0["state_dict"][k], v) for k, v in weights["state_dict"].items())
    (parent,) = client.search_runs(["1"], f"tags.run_id = '{run_id}'")
    described = (
        f"models:/connect-zero@champion (connect-zero version 1: run {earlier_id}, generation 2)"
    )
    assert parent.data.tags["start_from"] == described
    assert read_manifest(copy, run_id)["start_from"] == {
        "ref": "models:/connect-zero@champion", "run_id": earlier_id, "generation": 2,
        "described": described, "registered": {"name": "connect-zero", "version": 1}}  # fmt: skip
    # What differs between parents comes first in the runs list's (cut) names.
    clock = run_id.partition("T")[2]
    assert re.fullmatch(rf"from v1 (\S+=\S+ )+(\+\d+ )?alphazero {clock[:8].replace('.', ':')}",
                        parent.info.run_name)  # fmt: skip
    # Its summary compares it with its start; its registered version says where it started.
    assert f"- started from: {described}" in said[1]
    assert re.search(r"- solver\.acc \(network alone, strict\): \d\.\d{3} \(its start: "
                     r"\d\.\d{3}, [+-]\d\.\d{3}\)", said[1])  # fmt: skip
    (version,) = [v for v in client.search_model_versions("name = 'connect-zero'")
                  if v.tags.get("run_id") == run_id]  # fmt: skip
    assert version.tags["start_from"] == described
    assert f", started from {described}," in version.description
    # curve names the start as resolved then (the alias may since have moved).
    assert f", started from {described} (" in run_heading(copy, run_id, "its id")
    # A run id names its last generation; an unknown one is refused before any work.
    before_runs = set(known_runs(copy))
    bad = kedro_cli(copy, "run", "--params", cli_params({**start, "model.start_from": "nope"}))
    assert bad.returncode == 1 and "model.start_from='nope': no such run in this project" in (
        bad.stderr
    )
    assert set(known_runs(copy)) == before_runs


def test_runs_started_in_the_same_millisecond_get_ids_of_their_own(tmp_path):
    first = {"run_id": "2026-01-01T23.59.59.999Z", "status": "running", "params": {"a": 1}}
    second = {**first, "params": {"a": 2}}
    assert claim_manifest(tmp_path, first) == "2026-01-01T23.59.59.999Z"
    assert claim_manifest(tmp_path, second) == "2026-01-02T00.00.00.000Z"  # one ms later
    assert known_runs(tmp_path) == ["2026-01-01T23.59.59.999Z", "2026-01-02T00.00.00.000Z"]
    assert read_manifest(tmp_path, "2026-01-01T23.59.59.999Z")["params"] == {"a": 1}
    assert read_manifest(tmp_path, "2026-01-02T00.00.00.000Z")["params"] == {"a": 2}
    assert files_under(tmp_path) == {"data/runs/2026-01-01T23.59.59.999Z.json",
                                     "data/runs/2026-01-02T00.00.00.000Z.json"}  # fmt: skip


def test_a_game_against_the_champion_starts_without_library_noise(finished_run):
    """The terminal game of a registered version: no library warning or download bar
    before the board."""
    import subprocess
    import sys

    project, run_id = finished_run
    res = subprocess.run(
        [sys.executable, "-m", "connect_zero_pipeline", "play", "--model",
         "models:/connect-zero@champion", "--sims", "2"],
        input="q\n", capture_output=True, text=True, cwd=project, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    # The version, and the run and generation that made it.
    assert re.search(
        rf"Model: models:/connect-zero@champion \(connect-zero version 1: run "
        rf"{re.escape(run_id)}, generation \d+\)",
        res.stdout,
    ), res.stdout
    assert res.stderr.strip() == "", res.stderr  # no warning, no "Downloading artifacts"


def test_the_parent_run_s_tags_hold_no_object_repr(finished_run):
    from tests.helpers import mlflow_client

    project, run_id = finished_run
    (parent,) = mlflow_client(project).search_runs(["1"], f"tags.run_id = '{run_id}'")
    assert parent.data.tags["runner"] == "SequentialRunner"
    assert not [k for k, v in parent.data.tags.items() if " object at 0x" in v]


def test_reinforce_refuses_a_start_from_and_a_window_needs_a_start():
    from connect_zero_pipeline.params.schema import parse_section

    with pytest.raises(ValueError, match=r"reinforce\.model\.start_from must be null"):
        parse_section("reinforce", {"model": {"start_from": "models:/connect-zero@champion"}})
    with pytest.raises(ValueError, match=r"model\.start_window must be false unless start_from"):
        parse_section("model", {"start_window": True})


def test_a_run_id_starts_from_that_run_s_last_generation(finished_run, tmp_path, monkeypatch):
    from connect_zero_pipeline.run.start import partitions, resolve

    project, run_id = finished_run
    models = partitions(project, "model_files")
    start = resolve(project, run_id, models)
    assert (start["model"], start["described"]) == (
        f"gen_002/model.pt/{run_id}/model",
        f"run {run_id}, generation 2",
    )
    with pytest.raises(ValueError, match=r"models:/connect-zero@best.*no version or alias 'best'"):
        resolve(project, "models:/connect-zero@best", models)
    # The commands take a run id as --model too, and say which run's model they score.
    from tests.helpers import PONS_DIR, command

    positions = tmp_path / "positions.txt"
    positions.write_text("".join((PONS_DIR / "Test_L3_R1").read_text().splitlines(True)[:20]))
    monkeypatch.chdir(tmp_path)  # outside the project: --project names it, --file is from here
    for model, said in [([], f"latest_model version {run_id}: run {run_id}, generation 2"),
                        (["--model", run_id], f"run {run_id}, generation 2")]:  # fmt: skip
        status, out, _ = command("benchmark", "--project", str(project), "--file",
                                 "positions.txt", "--sims", "0", "--cache", "none", *model)  # fmt: skip
        assert status == 0  # (that it comes first: tests/commands/test_benchmark)
        assert f"Model: {said}\n\n| file | agent |" in out, out[:300]


def test_a_start_window_is_the_source_s_last_generations_and_must_be_there(finished_run, tmp_path):
    import shutil

    from connect_zero_pipeline.run.start import start_point

    source, run_id = finished_run
    games = [[k, f"gen_00{k}/games.parquet/{run_id}/games"] for k in (1, 2)]
    assert start_point(source, run_id, 3)["games"] == games  # the run has 2 generations
    assert start_point(source, "models:/connect-zero/1", 1)["games"] == games[1:]
    project = copy_project(source, tmp_path / "project")
    shutil.rmtree(project / "data/05_model_input/selfplay/gen_001")
    with pytest.raises(ValueError, match=rf"run {run_id} has no games of generation\(s\) \[1\]"):
        start_point(project, run_id, 3)


def test_a_finished_run_is_extended_to_more_generations_in_the_same_run(finished_run, tmp_path):
    """Train further in the same run: the same id and MLflow parent, one learning curve, the
    new generation a new child; the run's first final outputs are kept, the extension's are
    a version of their own, and the extension registers its own model version.

    The extension is killed mid-way first (SIGKILL, its self-play workers alive): they and
    the resource tracker exit by themselves, the run reads as interrupted, and its resume,
    which names only the run, finishes it with its own versions (the skipped work kept, the
    killed generation's MLflow child reopened, not doubled)."""
    source, run_id = finished_run
    project = copy_project(source, tmp_path / "project")
    client = mlflow_client(project)
    first = read_manifest(project, run_id)
    first_model = _run_file(project, "data/06_models/latest_model.pt", run_id)
    first_digest = model_digest(first_model)
    registered = len(client.search_model_versions("name = 'connect-zero'"))
    longer = cli_params({**FINISHED_RUN, "alphazero.num_generations": 3})
    extend = ("run", "--only-missing-outputs", "--params", f"resume={run_id},{longer}")
    held, started = _kill_at(project, extend, "gen_003.model")  # trained, not saved
    assert held and len(started) >= 3  # the pool's semaphores; 2 workers and the tracker
    killed = read_manifest(project, run_id)
    (step,) = killed["extended"]
    assert killed["status"] == "running"  # killed: it could not record its end
    assert run_status(killed) == "interrupted"  # its process is gone: not a live run
    assert f"| `{run_id}` | interrupted |" in runs_table(project)
    assert _run_file(project, "data/05_model_input/selfplay/gen_003/games.parquet", run_id).exists()
    # The resume names only the run: its --params (3 generations now) come from its manifest.
    res = kedro_cli(project, "run", "--only-missing-outputs", "--params", f"resume={run_id}")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert not [name for name in held if (SHM / name).exists()]  # gone (the tracker, or a start)

    manifest = read_manifest(project, run_id)
    assert known_runs(project) == [run_id] and manifest["status"] == "finished"
    assert manifest["params"]["alphazero"]["num_generations"] == 3
    assert manifest["extended"] == [step]  # the resumed extension kept its version
    assert (step["from"], step["to"]) == (2, 3) and step["version"] > run_id
    assert len(manifest["resumed"]) == 2  # the extension, then its resume
    # Generations at the run's id: the old ones untouched, the new one added.
    for k in range(3):
        assert versions(project, f"data/06_models/gen_{k:03d}/model.pt") == [run_id], k
    new = _run_file(project, "data/06_models/gen_003/model.pt", run_id)
    assert versions(project, "data/06_models/gen_003/model.pt") == [run_id]
    # Final outputs: the first kept as they were, the extension's at its version.
    assert model_digest(first_model) == first_digest
    assert versions(project, "data/06_models/latest_model.pt") == [run_id, step["version"]]
    extended = _run_file(project, "data/06_models/latest_model.pt", step["version"])
    assert model_digest(extended) == model_digest(new)
    assert _run_file(project, "data/06_models/onnx_model.onnx", step["version"]).is_file()
    assert _run_file(project, "data/08_reporting/learning_curves.png", step["version"]).is_file()
    assert "extended from 2 to 3 generations" in res.stdout
    # Quiet: no line that tells a user nothing (Kedro's logging banner, kedro-mlflow's
    # resolver, the --async tip, MLflow's registry chatter, every skipped node's name).
    noise = ("as logging configuration", "custom resolver", "typed parameter requirements",
             "--async", "already exists", "nodes with existing outputs")  # fmt: skip
    assert [n for n in noise if n in res.stdout + res.stderr] == []
    assert re.search(r"Running \d+ out of \d+ nodes", res.stdout)  # what the skipping says
    table = runs_table(project)
    assert f"| `{run_id}` | finished | alphazero | 2 -> 3 |" in table
    assert f"make resume RUN={run_id} PARAMS=alphazero.num_generations=4" in table

    # One MLflow parent, its learning curve now 3 generations long, gen_003 a new child.
    runs = _runs(project)
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert parent.info.run_id == first["mlflow_run_id"] == manifest["mlflow_run_id"]
    assert parent.info.status == "FINISHED" and parent.data.tags["extended"] == "2 -> 3 generations"
    assert re.fullmatch(r"2->3 (\S+=\S+ )+(\+\d+ )?alphazero \d\d:\d\d:\d\d", parent.info.run_name)
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(c.info.run_name for c in children) == [f"gen_{k:03d}" for k in range(4)]
    assert {r.info.status for r in runs} == {"FINISHED"}, [
        (r.info.run_name, r.info.status) for r in runs
    ]
    curve = client.get_metric_history(parent.info.run_id, "solver.acc")
    assert sorted(m.step for m in curve) == [1, 2, 3]
    # The extension's export is a new registered version: the run's generation 3.
    versions_now = client.search_model_versions("name = 'connect-zero'")
    assert len(versions_now) == registered + 1
    newest = max(versions_now, key=lambda v: int(v.version))
    assert (newest.tags["run_id"], newest.tags["generation"]) == (run_id, "3")

    # The extension's summary keeps the whole run's wall time beside its own.
    assert manifest["wall_seconds"] > first["wall_seconds"] > 0
    assert "this attempt, " in res.stdout and " in all" in res.stdout

    # Run again with the same parameters: a finished extension has nothing left to do, and
    # its record (the MLflow store and artifacts, the manifest, every file) stays as it was.
    before = _snapshot(project)
    again = kedro_cli(project, *extend)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"Nothing to do: run {run_id} already has 3 generations" in again.stdout
    assert "Run summary" not in again.stdout
    after = _snapshot(project)
    assert after.keys() == before.keys()
    assert [f for f in before if after[f] != before[f]] == []  # mlflow.db byte for byte too
