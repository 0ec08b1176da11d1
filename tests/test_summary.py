"""The end-of-run summary: the registry's answer, whether the figure is normal, a readable
table of the public sets."""

from __future__ import annotations

import re

from connect_zero_pipeline.params.schema import parse_run_params
from connect_zero_pipeline.session.generation_runs import plain_repr
from connect_zero_pipeline.session.summary import (
    REFERENCE,
    public_sets_table,
    recipe_changes,
    reference_line,
    render,
)
from tests.helpers import REPO


def test_the_reference_is_the_report_s_default_run():
    """One fact in two places, checked: docs/results.md's default run and its spread."""
    report = (REPO / "docs" / "results.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| `solver.acc` (network"))
    assert f"**{REFERENCE['value']:.3f}**" in row
    low, high = REFERENCE["normal"]
    assert f"between {low:.3f} and {high:.3f} is normal" in report


def test_reference_line_says_normal_above_below_or_other_recipe():
    low, high = REFERENCE["normal"]
    inside = (low + high) / 2
    assert f"{inside:.3f} is normal" in reference_line(inside, [])
    below = f"0.700 is below normal for the default recipe ({low:.3f}-{high:.3f};"
    assert below in reference_line(0.70, [])
    assert "0.900 is above normal" in reference_line(0.90, [])
    other = reference_line(0.70, ["selfplay.mcts.sims", "model.preset"])
    assert "changed the recipe (selfplay.mcts.sims, model.preset)" in other


def test_recipe_changes_name_recipe_keys_not_node_keys():
    assert recipe_changes(parse_run_params({})) == []
    params = {"selfplay": {"mcts": {"sims": 32}, "node": {"workers": 1}}, "train": {"lr": 0.01}}
    assert recipe_changes(parse_run_params(params)) == ["selfplay.mcts.sims", "train.lr"]


def test_public_sets_become_a_table():
    metrics = {
        "bench.Test_L3_R1.network.strict_acc": 0.926,
        "bench.Test_L3_R1.network.weak_mistake_rate": 0.042,
        "bench.Test_L3_R1.mcts32.strict_acc": 0.956,
        "bench.Test_L3_R1.mcts32.weak_mistake_rate": 0.016,
        "solver.acc": 0.8,
    }
    assert public_sets_table(metrics) == [
        "| set | network | mcts32 |",
        "|---|---|---|",
        "| Test_L3_R1 | 0.926 / 4.2% | 0.956 / 1.6% |",
    ]
    assert public_sets_table({"solver.acc": 0.8}) == []


def test_the_summary_names_the_registry_version_and_the_url():
    text = render(
        pipeline="alphazero", run_id="2026-01-01T00.00.00.000Z", wall_seconds=61,
        generation=("gen_024", {"solver.acc": 0.803, "bench.S.network.strict_acc": 0.9,
                                "bench.S.network.weak_mistake_rate": 0.05,
                                "solver.acc_ply00_06": 0.7124, "solver.weak_acc_ply00_06": 0.902,
                                "solver.acc_ply21_42": 0.95, "solver.weak_acc_ply21_42": 0.99}),
        paths={}, mlflow_run_id="abc", mlflow_url="http://127.0.0.1:5000/#/experiments/1/runs/abc",
        registered={"name": "connect-zero", "version": "3", "champion": False,
                    "champion_version": "2"},
        recipe_changes=[],
    )  # fmt: skip
    assert ("- MLflow run: `abc` (http://127.0.0.1:5000/#/experiments/1/runs/abc once "
            "`make mlflow` serves it)") in text  # fmt: skip
    assert "- registry: connect-zero version 3, not the champion (version 2 is)" in text
    assert "- reference: solver.acc 0.803 is normal" in text
    assert "| S | 0.900 / 5.0% |" in text
    assert not re.search(r"^- bench\.", text, re.M)  # no raw metric names
    # Where it is weak, in one line, the opening first (a bucket it lacks is left out):
    assert ("- by ply (network alone on the solver set, strict / weak mistakes): 0-6 0.712 / "
            "9.8%, 21-42 0.950 / 1.0%\n") in text  # fmt: skip


def test_a_run_trained_further_shows_its_start_its_versions_and_its_whole_wall_time():
    run_id, later = "2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z"
    text = render(
        pipeline="alphazero", run_id=run_id, wall_seconds=125, earlier_seconds=1800,
        generation=("gen_026", {"solver.acc": 0.818, "solver.weak_acc": 0.9}),
        paths={}, mlflow_run_id=None,
        extended=[{"from": 24, "to": 26, "version": later}],
        start=("models:/connect-zero@champion (connect-zero version 3: run X, generation 24)",
               {"solver.acc": 0.820}),
    )  # fmt: skip
    assert f"- run id: `{run_id}` (the version of its generations' outputs;" in text
    assert "every output of this run has this version" not in text  # not true once extended
    assert f"(its final files have version `{later}`)" in text
    assert "- wall time: 2 min 5 s this attempt, 32 min 5 s in all" in text
    assert "- started from: models:/connect-zero@champion (connect-zero version 3" in text
    assert "- solver.acc (network alone, strict): 0.818 (its start: 0.820, -0.002)" in text
    assert "- solver.weak_acc (keeps the best outcome class): 0.900\n" in text  # no start figure


def test_parent_names_lead_with_what_differs_and_differ_for_runs_in_the_same_second(tmp_path):
    import shutil

    from mlflow import MlflowClient

    from connect_zero_pipeline.session.generation_runs import name_taken, parent_run_name
    from connect_zero_pipeline.tracking.store import empty_store

    run_id = "2026-11-23T10.26.07.123Z"
    args = ({"pipeline_names": ["alphazero"]}, ["gen_001", "gen_000"], run_id)
    name = parent_run_name(*args)
    assert name == "alphazero 10:26:07"  # the configuration as it is: nothing differs
    assert parent_run_name(*args, precise=True) == "alphazero 10:26:07.123"
    extended = {"extended": [{"from": 24, "to": 40}]}
    assert parent_run_name(*args, extended) == "24->40 alphazero 10:26:07"
    # The seed that was changed, first (MLflow's list shows 17 characters of a name), then
    # the other --params by key, three of them, then how many more; not the resume marker.
    given = {"train": {"lr": 0.01}, "selfplay": {"seed": 1, "mcts": {"sims": 64}},
             "alphazero.num_generations": 3, "evaluate.benchmark.sims": [600, 1200],
             "ladder": {"anchors": [{"solver": "0.5"}]}, "pons": {"file": "it's"},
             "resume": run_id}  # fmt: skip
    seeded = {"pipeline_names": ["alphazero"], "runtime_params": given}
    assert parent_run_name(seeded, ["gen_001"], run_id) == (
        "selfplay.seed=1 alphazero.num_generations=3 evaluate.benchmark.sims=[600,1200] +4 "
        "alphazero 10:26:07"
    )
    from connect_zero_pipeline.session.generation_runs import overrides

    assert overrides(given)[3:5] == ["ladder.anchors=[...]", "pons.file=its"]  # no quotes
    other = {**seeded, "runtime_params": {"selfplay": {"seed": 2}}, "env": "quick"}
    assert parent_run_name(other, ["gen_001"], run_id) == (
        "selfplay.seed=2 env=quick alphazero 10:26:07"  # a configuration environment too
    )
    assert parent_run_name({**other, "env": "local"}, ["gen_001"], run_id)[:17] == (
        "selfplay.seed=2 a"  # the default environment is not named
    )
    # A run filtered to some generations names them first; one from a registered version.
    partial = {"pipeline_names": ["alphazero"], "from_nodes": ["gen_003.train"]}
    start = {"start_from": {"registered": {"version": 3}}}
    assert parent_run_name(partial, ["gen_004", "gen_003"], run_id, start) == (
        "gen_003..gen_004 from v3 alphazero 10:26:07"
    )
    # A name another parent holds is taken; the parent's own name is not.
    shutil.copy(empty_store(), tmp_path / "mlflow.db")
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("e", artifact_location=str(tmp_path / "mlruns"))
    first = client.create_run(experiment, run_name=name).info.run_id
    second = client.create_run(experiment, run_name="pending").info.run_id
    assert name_taken(client, experiment, name, second)
    assert not name_taken(client, experiment, name, first)
    assert not name_taken(client, experiment, parent_run_name(*args, precise=True), second)


def test_object_reprs_become_class_names():
    assert plain_repr("<kedro.runner.sequential_runner.SequentialRunner object at 0x7f3a>") == (
        "SequentialRunner"
    )
    assert plain_repr("alphazero") == "alphazero"


def test_the_ui_address_is_the_experiment_s_runs_list_without_a_shared_view(tmp_path):
    import sqlite3

    from connect_zero_pipeline.tracking.store import runs_view, ui_url

    db = tmp_path / "mlflow.db"
    assert ui_url(db, 5000) == "http://127.0.0.1:5000/"  # before the first run
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE experiments (experiment_id INTEGER, name TEXT)")
        conn.execute("INSERT INTO experiments VALUES (0, 'Default'), (3, 'connect_zero_pipeline')")
    runs = "http://127.0.0.1:5001/#/experiments/3/runs?workflowType=machine_learning"
    assert ui_url(db, 5001) == runs
    assert ui_url(db, 5001, headline_view=True) is None  # no shared view in the store yet
    # With the runs list's shared view (every run sets it): the printed address still opens
    # the plain list (no "You're viewing a shared view" banner); the view has its own.
    key, _ = runs_view()
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE experiment_tags (key TEXT, value TEXT, experiment_id INTEGER)")
        conn.execute("INSERT INTO experiment_tags VALUES (?, '{}', 3)", (key,))
    assert ui_url(db, 5001) == runs
    assert ui_url(db, 5001, headline_view=True) == f"{runs}&viewStateShareKey=connect-zero"


def test_the_port_of_a_server_of_this_store_is_found_from_its_command_line(tmp_path):
    """An ``mlflow ui`` (a stand-in that only sleeps) serving the store by a relative path
    from its own folder: its --port is found for that store, nothing for another, and
    nothing once it is gone."""
    import subprocess
    import sys

    from connect_zero_pipeline.tracking.store import serving_port

    fake = tmp_path / "bin" / "mlflow"
    fake.parent.mkdir()
    # It says when it runs: a process's command line is empty in /proc until its exec ends,
    # which can be after Popen returns.
    fake.write_text("import time\nprint('running', flush=True)\ntime.sleep(60)\n")
    project = tmp_path / "project"
    project.mkdir()
    argv = [sys.executable, str(fake), "ui", "--backend-store-uri", "sqlite:///mlflow.db",
            "--host", "127.0.0.1", "--port", "5123"]  # fmt: skip
    server = subprocess.Popen(argv, cwd=project, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline() == "running\n"
        assert serving_port(project / "mlflow.db") == 5123
        assert serving_port(tmp_path / "mlflow.db") is None  # another store
    finally:
        server.kill()
        server.wait()
        server.stdout.close()
    assert serving_port(project / "mlflow.db") is None


def test_the_runs_view_shows_the_headline_metrics_first():
    import json

    from connect_zero_pipeline.common.naming import HEADLINE
    from connect_zero_pipeline.tracking.store import runs_view

    key, value = runs_view()
    assert key == "mlflow.sharedViewState.connect-zero"
    state = json.loads(value)
    assert state["selectedColumns"] == state["columnOrder"]
    assert state["columnOrder"][:2] == ["metrics.`solver.acc`", "metrics.`solver.weak_acc`"]
    assert len(state["columnOrder"]) == len(HEADLINE)


def test_logs_off_a_terminal_are_one_whole_line_each():
    import io
    import logging

    from rich.logging import RichHandler

    from connect_zero_pipeline.commands.run import tidy_logs

    root = logging.getLogger()
    saved = list(root.handlers)
    catalog = logging.getLogger("kedro.io.data_catalog")
    filters = list(catalog.filters)
    out = io.StringIO()
    try:
        root.handlers = [RichHandler()]
        tidy_logs(verbose=False, stream=out)
        assert not any(isinstance(h, RichHandler) for h in root.handlers)
        long = "x" * 300
        logging.getLogger("connect_zero_pipeline.t").warning("Running node: %s", long)
        catalog.warning("Loading data from gen_001.games (ParquetDataset)...")
        catalog.warning("Saving data to gen_001.model (TorchModelDataset)...")
        lines = out.getvalue().splitlines()
        assert len(lines) == 2 and lines[0].endswith(f"Running node: {long}")
        assert "Saving data to gen_001.model" in lines[1]
    finally:
        root.handlers = saved
        catalog.filters = filters


def test_anchor_labels_are_spread_apart():
    from connect_zero_pipeline.pipelines.ladder.nodes import spread

    assert spread([-516.0, -156.0, -19.0, 0.0], 40.0) == [-516.0, -156.0, -19.0, 21.0]
    assert spread([0.0, 0.0, 0.0], 10.0) == [0.0, 10.0, 20.0]


def test_the_ladder_plot_has_whole_generation_ticks():
    import pandas as pd

    from connect_zero_pipeline.pipelines.ladder.nodes import plot_ladder

    rows = [("gen_004", "generation", "r", 4, 400.0), ("gen_008", "generation", "r", 8, 500.0),
            ("gen_012", "generation", "r", 12, 560.0),
            ("random_punisher", "anchor", None, None, 0.0),
            ("solver:0.25", "anchor", None, None, -19.0)]  # fmt: skip
    ratings = pd.DataFrame(rows, columns=["label", "kind", "run_id", "generation", "elo"])
    ratings = ratings.assign(elo_low=ratings["elo"] - 50, elo_high=ratings["elo"] + 50)
    ax = plot_ladder(ratings).axes[0]
    ticks = [t for t in ax.get_xticks() if 4 <= t <= 12]
    assert ticks and all(float(t).is_integer() for t in ticks)
    labels = sorted((t.get_position()[1], t.get_text()) for t in ax.texts)
    assert labels[1][0] - labels[0][0] > 19.0  # the two close anchors' labels apart


def test_one_parser_of_registry_uris_and_one_builder_of_ui_addresses():
    from connect_zero_pipeline.tracking.registry import parse_model_uri
    from connect_zero_pipeline.tracking.store import run_url

    assert parse_model_uri("models:/connect-zero@champion") == ("connect-zero", "champion")
    assert parse_model_uri("models:/connect-zero/3") == ("connect-zero", "3")
    assert run_url("1", "abc") == (
        "http://127.0.0.1:5000/#/experiments/1/runs/abc?workflowType=machine_learning"
    )
    assert run_url("2", "x", port=5001).startswith("http://127.0.0.1:5001/#/experiments/2/")


def test_kedro_mlflow_s_repeated_closing_line_is_said_once():
    """kedro-mlflow logs "The run <id> was closed because of an error" once per entry of
    MLflow's run stack (one per node that ran); after the project's filters, once."""
    import logging

    from connect_zero_pipeline.common import quiet

    quiet.install()
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger(quiet.REPEATING_LOGGERS[0])
    logger.addHandler(handler)
    try:
        for text in ["closed r1"] * 3 + ["closed parent", "closed r1"]:
            logger.warning(text)
    finally:
        logger.removeHandler(handler)
    assert seen == ["closed r1", "closed parent", "closed r1"]


def test_the_last_generation_s_stages_are_timed():
    from connect_zero_pipeline.session.summary import time_line

    assert time_line({"solver.acc": 0.5}) is None
    metrics = {"selfplay.seconds": 31.6, "selfplay.compile_s": 25.2, "train.train_seconds": 6.0,
               "evaluate.seconds": 4.4}  # fmt: skip
    assert time_line(metrics) == (
        "time: self-play 32 s (compiling the search 25 s), training 6 s, evaluation 4 s"
    )
    del metrics["selfplay.compile_s"]
    assert time_line(metrics) == "time: self-play 32 s, training 6 s, evaluation 4 s"
    for flag, said in ((1.0, "bfloat16"), (0.0, "float32")):  # the training's arithmetic
        metrics["train.bfloat16"] = flag
        assert time_line(metrics) == f"time: self-play 32 s, training 6 s in {said}, evaluation 4 s"
    metrics.update({"selfplay.bfloat16": 0.0, "selfplay.compile_s": 25.2})  # self-play's
    assert time_line(metrics) == ("time: self-play 32 s in float32 (compiling the search 25 s), "
                                  "training 6 s in float32, evaluation 4 s")  # fmt: skip


def test_the_scorecards_line_names_the_generations_scored_in_full():
    from connect_zero_pipeline.core.config.evaluation import EvaluateConfig
    from connect_zero_pipeline.session.summary import scorecards_line

    def scorecards_line_of(full_every: int, num_generations: int) -> str:
        return scorecards_line(EvaluateConfig(full_every=full_every), num_generations)

    assert scorecards_line_of(4, 10) == (
        "scorecards: in full at generations 4, 8, 10 (evaluate.full_every 4, and the last); "
        "the others scored the solver set alone"
    )
    assert (
        scorecards_line_of(1, 24)
        == scorecards_line_of(4, 1)
        == "scorecards: every generation's in full"
    )
