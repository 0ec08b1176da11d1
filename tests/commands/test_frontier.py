"""The frontier command: every finished run's strength against its wall minutes, from the
run's own records, and the runs no other beats marked."""

from __future__ import annotations

import datetime
import json
import os

from connect_zero_pipeline.commands.frontier import collect
from connect_zero_pipeline.common.config_loader import load_parameters
from connect_zero_pipeline.run.manifest import write_manifest
from tests.helpers import command, make_project

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _run(project, run_id: str, curve: list[tuple[float, float, float]], *, status="finished",
         params=None, resumed=False) -> None:  # fmt: skip
    """A run whose generation k's scorecard (``solver.acc``, weak accuracy at plies 0-6) was
    written ``seconds`` after its start; each generation's stages took 10 s in all."""
    started = START
    merged = load_parameters(project / "conf")
    for key, value in (params or {}).items():
        section, _, name = key.partition(".")
        merged[section] = {**merged[section], name: value}
    write_manifest(project, {"run_id": run_id, "status": status, "pipelines": ["alphazero"],
                             "started": started.strftime("%Y-%m-%dT%H:%M:%S%z"), "env": None,
                             "params": merged, "resumed": [{"attempt": 2}] if resumed else [],
                             "extended": []})  # fmt: skip
    for gen, (seconds, acc, opening) in enumerate(curve, start=1):
        for stage, metrics in (("eval", {"solver.acc": acc, "solver.weak_acc": acc + 0.1,
                                         "solver.weak_acc_ply00_06": opening,
                                         "evaluate.seconds": 1.0}),
                               ("selfplay", {"seconds": 4.0}), ("train", {"train_seconds": 5.0})):  # fmt: skip
            folder = project / f"data/08_reporting/gen_{gen:03d}/{stage}_metrics.json/{run_id}"
            folder.mkdir(parents=True)
            path = folder / f"{stage}_metrics.json"
            path.write_text(json.dumps(metrics))
            moment = started.timestamp() + seconds
            os.utime(path, (moment, moment))


def test_runs_are_placed_by_their_minutes_and_the_frontier_marked(tmp_path):
    project = make_project(tmp_path / "project", pin_store=False)
    fast, slow, strong, broken, paused = (f"2026-01-01T0{h}.00.00.000Z" for h in range(5))
    _run(project, fast, [(300, 0.70, 0.80), (600, 0.80, 0.90)])
    _run(project, slow, [(900, 0.75, 0.85), (1500, 0.78, 0.88)])  # slower and weaker: off
    _run(project, strong, [(900, 0.79, 0.90), (1500, 0.83, 0.95)],
         params={"model.preset": "small", "train.buffer_gens": 6})  # fmt: skip
    _run(project, broken, [(60, 0.99, 0.99)], status="failed")  # not finished: not read
    # Resumed: the hours between its attempts do not count; its stages' seconds do.
    _run(project, paused, [(5000, 0.60, 0.70), (9000, 0.65, 0.75)], resumed=True)
    curves = {c.run_id: c for c in collect([project])}
    assert sorted(curves) == [fast, slow, strong, paused]
    assert curves[fast].minutes == [5.0, 10.0] and curves[strong].acc == [0.79, 0.83]
    assert [round(m, 3) for m in curves[paused].minutes] == [round(10 / 60, 3), round(20 / 60, 3)]
    assert {r for r, c in curves.items() if c.frontier} == {paused, fast, strong}
    assert [round(w, 3) for w in curves[strong].opening_weak] == [0.1, 0.05]
    # What a run is: its env and what its parameters change over that env's configuration.
    assert curves[fast].label == "env=base"
    assert curves[strong].label == "env=base model.preset=small train.buffer_gens=6"

    status, out, _ = command("frontier", "--project", str(project))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("| run | what | generations | wall min | `solver.acc` |")
    row = next(line for line in lines if line.startswith(f"| {strong} "))
    assert row.endswith("| 25.0 | 0.830 | 0.930 | 5.0% | yes |")
    assert next(line for line in lines if line.startswith(f"| {slow} ")).endswith("| 12.0% |  |")
    assert broken not in out

    status, out, _ = command("frontier", "--project", str(project), "--json")
    rows = {r["run_id"]: r for r in map(json.loads, out.splitlines())}
    assert status == 0 and rows[strong]["minutes"] == 25.0 and rows[slow]["frontier"] is False

    picture = tmp_path / "frontier.png"
    status, out, _ = command("frontier", "--project", str(project), "--out", str(picture))
    assert status == 0 and f"Drew 4 run(s) into {picture}" in out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_requests_are_refused_in_words(tmp_path):
    project = make_project(tmp_path / "project", pin_store=False)
    status, _, err = command("frontier", "--project", str(project))
    assert status == 1 and "no finished alphazero run with scorecards in" in err
    status, _, err = command("frontier", "--project", str(project), "--out", "x.svg")
    assert status == 2 and "must name a .png file, got 'x.svg'" in err
