"""A tiny end-to-end AlphaZero run: versioned outputs, MLflow parent/child runs, the summary,
reruns of parts of it (a failed run resumed: tests/reliability)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import mlflow
import pytest

from connect_zero_pipeline.run.manifest import known_runs
from connect_zero_pipeline.tracking.store import runs_view
from tests.helpers import (
    FINISHED_LOG,
    FINISHED_RUN,
    REPO,
    command,
    copy_project,
    latest,
    mlflow_client,
    run_kedro,
    versions,
)

TINY = FINISHED_RUN  # conf/tiny, 2 generations


@pytest.mark.slow
def test_two_generations_end_to_end_with_mlflow_children(finished_run, tmp_path, monkeypatch):
    """The suite's finished run (a real ``kedro run`` of conf/tiny, 2 generations): its files,
    its MLflow parent and children, its summary; then, in a copy, reruns of parts of it."""
    source, _ = finished_run
    summary = (source.parent / FINISHED_LOG).read_text()  # what the run printed
    project = copy_project(source, tmp_path / "project")
    monkeypatch.chdir(project)
    assert not (project / "data/06_models/gen_002/candidate.pt").exists()  # no gate: the model
    for rel in [
        "data/06_models/gen_000/model.pt",
        "data/05_model_input/selfplay/gen_001/games.parquet",
        "data/05_model_input/selfplay/gen_002/games.parquet",
        "data/06_models/gen_002/model.pt",
        "data/08_reporting/gen_002/eval_metrics.json",
        "data/08_reporting/learning_curves.png",
    ]:
        assert len(versions(project, rel)) == 1, rel

    client = mlflow_client(project)
    exp = client.get_experiment_by_name("connect_zero_pipeline")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = {r.info.run_name: r for r in runs if "mlflow.parentRunId" in r.data.tags}
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    parent = parents[0]
    assert set(children) == {"gen_000", "gen_001", "gen_002"}
    for name, child in children.items():
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id, name
        assert child.info.status == "FINISHED", name
    gen2 = children["gen_002"]
    assert 0.0 <= gen2.data.metrics["solver.acc"] <= 1.0
    # MLflow holds the catalog's figures, and the rates count whole games against the
    # punisher, half of them as the first player.
    evaluated = json.loads(
        latest(project, "data/08_reporting/gen_002/eval_metrics.json").read_text()
    )
    for key in ("solver.acc", "punisher.mcts.win_rate", "punisher.policy.win_rate", "gate.score"):
        assert gen2.data.metrics[key] == pytest.approx(evaluated[key]), key
    for agent in ("punisher.policy", "punisher.mcts"):
        rates = [evaluated[f"{agent}.{outcome}_rate"] for outcome in ("win", "draw", "loss")]
        assert sum(rates) == pytest.approx(1.0), agent
        games = TINY["evaluate.num_games"]
        assert all(rate * games == pytest.approx(round(rate * games)) for rate in rates), agent
        halves = (evaluated[f"{agent}.win_rate_first"] + evaluated[f"{agent}.win_rate_second"]) / 2
        assert evaluated[f"{agent}.win_rate"] == pytest.approx(halves), agent
    assert gen2.data.metrics["train.loss"] > 0
    # evaluate.full_every (conf/tiny: 2): the last generation's scorecard in full, generation
    # 1's the solver set alone; the summary says which.
    gen1 = children["gen_001"].data.metrics
    assert gen2.data.metrics["evaluate.full"] == 1.0 and gen1["evaluate.full"] == 0.0
    assert "solver.acc" in gen1 and not any(k.startswith(("punisher.", "gate.")) for k in gen1)
    assert ("- scorecards: in full at generations 2 (evaluate.full_every 2, and the last); the "
            "others scored the solver set alone") in summary  # fmt: skip
    # Each generation's run records the section as that generation ran it (its schedule).
    assert gen2.data.params["selfplay.mcts.sims"] == str(TINY["selfplay.schedule.2.mcts.sims"])
    sims = str(TINY["selfplay.mcts.sims"])
    assert children["gen_001"].data.params["selfplay.mcts.sims"] == sims
    assert gen2.data.params["train.buffer_gens"] == "1" != children["gen_001"].data.params[
        "train.buffer_gens"]  # fmt: skip
    assert gen2.data.metrics["train.window_generations"] == 1.0  # its own games alone
    history = client.get_metric_history(parent.info.run_id, "solver.acc")
    assert sorted(m.step for m in history) == [1, 2]
    # The headline metrics again under headline/: the first chart section of the parent.
    headline = client.get_metric_history(parent.info.run_id, "headline/solver.acc")
    assert [(m.step, m.value) for m in headline] == [(m.step, m.value) for m in history]
    # A child's page opens on its headline too: the same section, and a one-line description.
    assert gen2.data.metrics["headline/solver.acc"] == gen2.data.metrics["solver.acc"]
    described = f"gen_002: solver.acc {evaluated['solver.acc']:.3f}, weak_acc "
    assert gen2.data.tags["mlflow.note.content"].startswith(described)
    assert ", vs previous " in gen2.data.tags["mlflow.note.content"]
    # The parent's description opens with the last generation's headline: the lines MLflow
    # shows before "more".
    assert parent.data.tags["mlflow.note.content"].startswith(described)
    assert "\n\n## Run summary: alphazero" in parent.data.tags["mlflow.note.content"]
    assert re.search(r"^- by ply \(network alone on the solver set, strict / weak mistakes\): "
                     r"\d+-\d+ [01]\.\d{3} / \d+\.\d%", parent.data.tags["mlflow.note.content"],
                     re.M)  # fmt: skip
    artifacts = [a.path for a in client.list_artifacts(gen2.info.run_id, "model")]
    assert "model/model.pt" in artifacts

    # The parent: named by what it is, flat parameters, the model-training view.
    (run_id,) = known_runs(project)
    clock = run_id.split("T")[1]
    # What differs between runs first (its --params, the seeds first): the runs list shows
    # 17 characters of a name.
    named = sorted(TINY)[:3]  # its --params in order (no seed among them), then how many more
    assert parent.info.run_name == (
        " ".join(f"{key}={TINY[key]}" for key in named)
        + f" +{len(TINY) - 3} alphazero {clock[:8].replace('.', ':')}"
    )
    assert parent.data.params["selfplay.mcts.sims"] == str(TINY["selfplay.mcts.sims"])
    assert "selfplay" not in parent.data.params
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    assert exp.tags["mlflow.sharedViewState.connect-zero"] == runs_view()[1]

    # The end-of-run summary, printed and logged on the parent.
    assert f"run id: `{run_id}`" in summary and "### gen_002, the last generation" in summary
    acc = gen2.data.metrics["solver.acc"]
    assert f"- solver.acc (network alone, strict): {acc:.3f}" in summary
    assert f"model: `data/06_models/latest_model.pt/{run_id}/latest_model.pt`" in summary
    assert f"data/08_reporting/learning_curves.png/{run_id}/learning_curves.png" in summary
    assert f"MLflow run: `{parent.info.run_id}`" in summary and "`make mlflow`" in summary
    logged = client.download_artifacts(parent.info.run_id, "summary.md", str(tmp_path))
    assert Path(logged).read_text().strip() in summary
    # The run's description: the headline line, then the summary as printed.
    assert parent.data.tags["mlflow.note.content"].split("\n\n", 1)[1].strip() in summary
    assert f"/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}" in summary
    assert "- registry: connect-zero version 1, the champion" in summary
    assert "- reference: this run changed the recipe (alphazero.num_generations, " in summary
    assert f"`python -m connect_zero_pipeline curve --run {run_id}`" in summary
    _execute_notebook(project)
    _partial_runs_have_their_curves(project, run_id)
    assert mlflow.active_run() is None  # in-process runs leave the run stack clean


def _partial_runs_have_their_curves(project, whole: str) -> None:
    """``curve`` after reruns of part of the run (``--from-nodes``, ``--namespaces``) and an
    export: each partial run shows the generations it made, and with no ``--run`` the
    newest run that has a curve, saying which; an export, with none, is passed over."""
    here = {**TINY, "selfplay.node.workers": 1}  # in this process: no worker pool to start
    run_kedro(project, "alphazero", here, from_nodes=["gen_002.train"])
    run_kedro(project, "alphazero", here, namespaces=["gen_001"])
    run_kedro(project, "export")
    whole_run, from_nodes, namespaces, export = known_runs(project)
    assert whole_run == whole

    def rows(out: str) -> list[str]:
        return [line.split("|")[1].strip() for line in out.splitlines()
                if line.startswith("| ") and not line.startswith("| gen")]  # fmt: skip

    status, out, _ = command("curve", "--project", str(project))
    assert status == 0 and rows(out) == ["1"], out
    assert out.startswith(f"Run {namespaces}: alphazero, 2 generations") and (
        "this run made gen_001" in out and "the newest run with a learning curve" in out)  # fmt: skip
    status, out, _ = command("curve", "--project", str(project), "--run", from_nodes)
    assert status == 0 and rows(out) == ["2"] and "this run made gen_002" in out, out
    status, out, _ = command("curve", "--project", str(project), "--run", whole)
    assert status == 0 and rows(out) == ["1", "2"] and "this run made" not in out, out
    status, out, err = command("curve", "--project", str(project), "--run", export)
    assert status == 1 and f"no generation metrics of run {export}" in out + err


def _execute_notebook(project):
    """The analysis notebook runs top to bottom on this run's catalog."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / "analysis.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(project)}}).execute()
    outputs = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "gen_002, game" in outputs and "plays column" in outputs
