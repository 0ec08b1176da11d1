"""The curve command prints one run's generations, never another run's."""

from __future__ import annotations

import json

from connect_zero_pipeline.commands.curve import curve_table
from connect_zero_pipeline.run.manifest import write_manifest
from tests.helpers import command, make_project


def _write(project, gen: int, stage: str, run_id: str, metrics: dict) -> None:
    folder = project / "data" / "08_reporting" / f"gen_{gen:03d}" / f"{stage}_metrics.json"
    (folder / run_id).mkdir(parents=True)
    (folder / run_id / folder.name).write_text(json.dumps(metrics))


def test_the_table_has_one_row_per_generation_of_the_run(tmp_path):
    tmp_path = make_project(tmp_path / "project", pin_store=False)  # the catalog says where
    ours, other = "2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z"
    for gen, acc in ((1, 0.5), (2, 0.6)):
        _write(tmp_path, gen, "eval", ours, {"solver.acc": acc, "solver.weak_acc": acc + 0.1})
        _write(tmp_path, gen, "selfplay", ours, {"positions": 1234.0, "seconds": 9.6})
    _write(tmp_path, 1, "eval", other, {"solver.acc": 0.9})  # a newer run's generation 1
    table = curve_table(tmp_path, ours).splitlines()
    assert len(table) == 4 and table[0].startswith("| gen | acc | weak acc |")
    assert table[2].startswith("| 1 | 0.500 | 0.600 |") and "| 1,234 | 10 |" in table[2]
    assert table[3].startswith("| 2 | 0.600 | 0.700 |")
    assert curve_table(tmp_path, other).count("\n") == 2  # the other run: one generation
    # Columns no generation has (compile, train, eval, and so no running sum): left out.
    assert table[0].endswith("| self-play positions | self-play s |")
    assert table[2].endswith("| 1,234 | 10 |") and table[3].endswith("| 1,234 | 10 |")
    write_manifest(tmp_path, {"run_id": ours, "status": "finished", "pipelines": ["alphazero"],
                              "started": "2026-01-01T00:00:00+0000",
                              "params": {"alphazero": {"num_generations": 2}}})  # fmt: skip
    # A later ladder run trains no generation: the default stays the newest run with a curve.
    ladder = "2026-01-03T00.00.00.000Z"
    write_manifest(tmp_path, {"run_id": ladder, "status": "finished", "pipelines": ["ladder"]})
    status, out, _ = command("curve", "--project", str(tmp_path))
    assert status == 0
    assert "| 2 | 0.600 |" in out
    # The run it shows comes first, and why that one.
    assert out.startswith(f"Run {ours}: alphazero, 2 generations, started 2026-01-01T00:00:00"
                          "+0000 (the newest run with a learning curve; --run <id> shows another)")  # fmt: skip
    status, out, _ = command("curve", "--project", str(tmp_path), "--run", other)
    assert status == 0 and out.startswith(f"Run {other} (--run; it has no manifest in data/runs)")
    status, out, err = command("curve", "--project", str(tmp_path), "--run", ladder)
    assert status == 1 and f"Run {ladder}: ladder, started ? (--run)" in out
    assert "it made no generation" in err


def test_each_generation_s_stages_are_timed_and_summed(tmp_path):
    tmp_path = make_project(tmp_path / "project", pin_store=False)
    run = "2026-01-01T00.00.00.000Z"
    for gen in (1, 2):
        _write(tmp_path, gen, "eval", run, {"solver.acc": 0.5, "evaluate.seconds": 4.0})
        _write(tmp_path, gen, "selfplay", run, {"positions": 10.0, "seconds": 30.0,
                                                "compile_s": 25.0 if gen == 1 else 0.0})  # fmt: skip
        _write(tmp_path, gen, "train", run, {"train_seconds": 6.0})
    _write(tmp_path, 3, "eval", run, {"solver.acc": 0.5})  # a stage not timed: no sum from here
    header, _, first, second, third = curve_table(tmp_path, run).splitlines()
    assert header.endswith("| self-play s | compile s | train s | eval s | s so far |")
    assert first.endswith("| 30 | 25 | 6 | 4 | 40 |")
    assert second.endswith("| 30 | 0 | 6 | 4 | 80 |")
    assert third.endswith("| - | - | - | - | - |")


def test_times_say_when_each_model_and_scorecard_was_written(tmp_path):
    """--times: seconds since the run started; overlapped, a scorecard comes after the next
    generation's model."""
    import datetime
    import os

    tmp_path = make_project(tmp_path / "project", pin_store=False)
    run = "2026-01-01T00.00.00.000Z"
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    write_manifest(tmp_path, {"run_id": run, "status": "finished", "pipelines": ["alphazero"],
                              "started": "2026-01-01T00:00:00+0000", "params": {}})  # fmt: skip
    for gen, model_at, card_at in ((1, 20.0, 65.0), (2, 41.0, 100.0)):
        _write(tmp_path, gen, "eval", run, {"solver.acc": 0.5})
        card = (
            tmp_path / f"data/08_reporting/gen_{gen:03d}/eval_metrics.json/{run}/eval_metrics.json"
        )
        model = tmp_path / f"data/06_models/gen_{gen:03d}/model.pt/{run}/model.pt"
        model.parent.mkdir(parents=True)
        model.write_bytes(b"")
        os.utime(card, (start + card_at, start + card_at))
        os.utime(model, (start + model_at, start + model_at))
    header, _, first, second = curve_table(tmp_path, run, times=True).splitlines()
    assert header.endswith("| model at s | scorecard at s |")
    assert first.endswith("| 20 | 65 |") and second.endswith("| 41 | 100 |")
    assert "model at s" not in curve_table(tmp_path, run)  # only when asked
    status, out, _ = command("curve", "--project", str(tmp_path), "--times")
    assert status == 0 and out.rstrip().endswith("| 41 | 100 |")
    # --json, for scripts: one object a generation, a model whose scorecard has not come yet
    # included (the table leaves it out), every metric under its own name.
    model = tmp_path / f"data/06_models/gen_003/model.pt/{run}/model.pt"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"")
    os.utime(model, (start + 120.0, start + 120.0))
    status, out, _ = command("curve", "--project", str(tmp_path), "--times", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and [r["generation"] for r in rows] == [1, 2, 3]
    assert rows[0] == {"run_id": run, "generation": 1, "solver.acc": 0.5, "model_at_s": 20.0,
                       "scorecard_at_s": 65.0, "scorecard_lag_s": 45.0}  # fmt: skip
    assert rows[2]["model_at_s"] == 120.0 and rows[2]["scorecard_at_s"] is None
    assert curve_table(tmp_path, run, times=True).count("\n") == 3  # still two rows
    status, out, _ = command("curve", "--project", str(tmp_path), "--json")
    assert [json.loads(line)["generation"] for line in out.splitlines()] == [1, 2]
