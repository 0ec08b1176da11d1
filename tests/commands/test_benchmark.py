"""``python -m connect_zero_pipeline score``: labels, counts, metrics, bad lines, a public file."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from connect_zero_pipeline.commands.benchmark import label_positions, read_positions
from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core.checkpoint import load_model, save_model
from connect_zero_pipeline.core.evaluation import SCORE_COLUMNS, set_scores, solver_set_metrics
from connect_zero_pipeline.core.inference import torch_evaluate_fn
from connect_zero_pipeline.core.labelling import Labeller
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.solver import Solver, SolverSpec
from tests.helpers import PONS_DIR, command

SCORE = [sys.executable, "-m", "connect_zero_pipeline", "benchmark"]

# Late positions, fast to solve; the analyses below were checked with `solve --analyze`.
LINES = [
    # . . . . . . .
    # . . . X . . X
    # . . . X . . X   X to move wins at once in column 2 (the diagonal from column 1):
    # O . X O . O O   10; any other move lets O win at once: -10
    # O . X X O O X
    # X O O O X O X
    "1371773456467446754231",
    "52753311433677442422121 8",  # forced win: only column 5 reaches 8 (2 3 7 7 8 7 2)
    "",  # empty lines are skipped
    "1233722555341451114725221333 -1",  # x x x -1 -1 -1 -1: every legal move equal
    "5554224333234511764415115 4",  # -8 -8 -8 -8 x 4 -8
    "2252576253462244111563365343671351441 -1",  # x x x x x -1 -2
]
NUM_POSITIONS, NUM_DECISIVE = 5, 4


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "model.pt"
    save_model(build_model("tiny").eval(), path)
    return path


@pytest.fixture
def position_file(tmp_path) -> Path:
    path = tmp_path / "positions.txt"
    path.write_text("\n".join(LINES) + "\n")
    return path


def _reference_table(moves: list[str]) -> pd.DataFrame:
    """The labelled table built by hand, one ``Solver.analyze`` per position (unbatched)."""
    solver = Solver(16)
    pairs = [bb.moves_to_bitboards(m) for m in moves]
    analyses = [solver.analyze(m) for m in moves]
    table = pd.DataFrame(
        {
            "moves": moves,
            "ply": np.array([len(m) for m in moves], dtype=np.int8),
            "position": np.array([p for p, _ in pairs], dtype=np.uint64),
            "mask": np.array([k for _, k in pairs], dtype=np.uint64),
        }
    )
    for c, name in enumerate(SCORE_COLUMNS):
        table[name] = pd.array([a[c] for a in analyses], dtype="Int8")
    legal = [[s for s in a if s is not None] for a in analyses]
    table["best_score"] = np.array([max(s) for s in legal], dtype=np.int8)
    table["decisive"] = [len(set(s)) > 1 for s in legal]
    return table


def _perfect_fn(table: pd.DataFrame):
    """A "network" that puts all its policy on the optimal moves and knows the sign of the value."""
    scores = torch.tensor(table[SCORE_COLUMNS].astype("float64").fillna(-100).to_numpy())
    logits = torch.where(scores == scores.max(1, keepdim=True).values, 0.0, -50.0).float()  # (N, 7)
    value = torch.sign(torch.tensor(table["best_score"].to_numpy(np.float32)))  # (N,)
    state = bb.State(
        torch.from_numpy(table["position"].to_numpy(np.uint64).view(np.int64).copy()),
        torch.from_numpy(table["mask"].to_numpy(np.uint64).view(np.int64).copy()),
        torch.from_numpy(table["ply"].to_numpy(np.int64)),
    )
    keys = {b.tobytes(): i for i, b in enumerate(bb.to_boards(state).numpy())}

    def fn(boards):
        idx = [keys[b.tobytes()] for b in boards.numpy()]
        return logits[idx], value[idx]

    return fn


def _score(*argv: str) -> tuple[int, list[dict], str]:
    argv = [*argv, "--cache", "none"] if "--cache" not in argv else list(argv)
    status, out, err = command("benchmark", *argv, "--json")
    return status, [json.loads(line) for line in out.splitlines()], err


def test_labels_match_the_unbatched_solver(position_file):
    positions, errors = read_positions(position_file)
    assert errors == []
    assert positions["moves"].tolist() == [line.split()[0] for line in LINES if line]
    labelled, skipped = label_positions(positions, Labeller(max_nodes=0, solver=SolverSpec(16)))
    reference = _reference_table(positions["moves"].tolist())
    assert skipped == 0
    pd.testing.assert_frame_equal(labelled, reference, check_dtype=False)
    assert labelled["decisive"].tolist() == [True, True, False, True, True]
    assert labelled["best_score"].tolist() == [10, 8, -1, 4, -1]


def test_one_json_line_per_file_with_counts_and_the_evaluation_metrics(
    model_file, position_file, tmp_path
):
    second = tmp_path / "second.txt"
    second.write_text("52753311433677442422121\n")
    status, records, _ = _score(
        "--file", str(position_file), "--file", str(second), "--model", str(model_file)
    )
    assert status == 0
    assert [r["file"] for r in records] == [str(position_file), str(second)]
    record = records[0]
    assert record["model"] == str(model_file)
    assert (record["positions"], record["decisive"], record["skipped"]) == (
        NUM_POSITIONS,
        NUM_DECISIVE,
        0,
    )
    assert (records[1]["positions"], records[1]["decisive"]) == (1, 1)
    # The metrics are core.evaluation's, over all positions and over the decisive ones.
    reference = _reference_table([line.split()[0] for line in LINES if line])
    evaluate_fn = torch_evaluate_fn(load_model(model_file))
    expected = solver_set_metrics(evaluate_fn, reference)
    expected_decisive = solver_set_metrics(evaluate_fn, reference.loc[reference["decisive"]])
    for key, value in expected.items():
        assert record[key] == pytest.approx(value, rel=1e-5), key
    for key, value in expected_decisive.items():
        if key != "count":
            assert record[f"{key}_decisive"] == pytest.approx(value, rel=1e-5), key
    assert "count_decisive" not in record
    assert {"acc", "ce", "val_signacc", "acc_decisive", "acc_end", "acc_middle"} <= set(record)


def test_a_labelled_parquet_table_is_scored_as_it_is(model_file, tmp_path):
    # The shipped set's schema: no labelling (no solver, no cache), the same metrics.
    reference = _reference_table([line.split()[0] for line in LINES if line])
    table = tmp_path / "labelled.parquet"
    reference.to_parquet(table)
    status, records, _ = _score("--file", str(table), "--model", str(model_file), "--sims", "0,4")
    assert status == 0 and [r["agent"] for r in records] == ["network", "mcts-4"]
    expected = solver_set_metrics(torch_evaluate_fn(load_model(model_file)), reference)
    assert records[0]["acc"] == pytest.approx(expected["acc"], rel=1e-5)
    assert records[0]["count_win"] == expected["count_win"] and records[0]["skipped"] == 0
    assert records[1]["count"] == NUM_POSITIONS
    # A versioned folder (the catalog's, as the shipped set's) is its newest version alone.
    folder = tmp_path / "pons_positions.parquet"
    for version, rows in (("2026-01-01T00.00.00.000Z", reference),
                          ("2026-01-02T00.00.00.000Z", reference.iloc[:2])):  # fmt: skip
        (folder / version).mkdir(parents=True)
        rows.to_parquet(folder / version / folder.name)
    status, records, _ = _score("--file", str(folder), "--model", str(model_file))
    assert status == 0 and records[0]["count"] == 2  # not the 7 rows of both versions
    assert records[0]["file"] == str(folder / "2026-01-02T00.00.00.000Z" / folder.name)
    # A table without the labels is an invalid file: nothing is scored.
    reference.drop(columns=["best_score"]).to_parquet(table)
    status, records, err = _score("--file", str(table), "--model", str(model_file))
    assert status == 1 and records == []
    assert "not a solver-labelled table" in err and "best_score" in err


def test_a_perfect_network_scores_one(position_file):
    positions, _ = read_positions(position_file)
    labelled, _ = label_positions(positions, Labeller(max_nodes=0, solver=SolverSpec(16)))
    metrics = set_scores(labelled, _perfect_fn(_reference_table(positions["moves"].tolist())))
    assert metrics["acc"] == metrics["acc_decisive"] == 1.0
    assert metrics["val_signacc"] == metrics["val_signacc_decisive"] == 1.0
    assert metrics["ce"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["count"] == NUM_POSITIONS
    # No decisive position: no *_decisive metric; nothing scored: no metric at all.
    fn = _perfect_fn(_reference_table(positions["moves"].tolist()))
    drawn = set_scores(labelled.loc[~labelled["decisive"]], fn)
    assert drawn["acc"] == 1.0 and not any(k.endswith("_decisive") for k in drawn)
    assert set_scores(labelled.iloc[:0], fn) == {}


def test_over_budget_positions_are_skipped_and_counted(model_file, tmp_path):
    path = tmp_path / "hard.txt"
    path.write_text("4453\n5554224333234511764415115\n")  # 4453: millions of nodes; then 144
    status, [record], _ = _score(
        "--file", str(path), "--model", str(model_file), "--max-nodes", "1000"
    )
    assert status == 0
    assert (record["positions"], record["skipped"], record["count"]) == (2, 1, 1.0)
    assert record["decisive"] == 1


def test_bad_lines_name_file_line_and_move_and_exit_non_zero(model_file, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("52753311433677442422121\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("1371773456467446754231\n\n4483 2\n1212121\n")
    res = subprocess.run(
        [*SCORE, "--file", str(good), "--file", str(bad), "--model", str(model_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1
    assert res.stdout == ""  # nothing scored, not even the good file
    errors = res.stderr.strip().splitlines()
    assert errors[0].startswith(f"{bad}: line 3:") and "'8' (move 3)" in errors[0]
    assert errors[1].startswith(f"{bad}: line 4:") and "already won" in errors[1]
    assert "Traceback" not in res.stderr


def test_usage_errors(tmp_path):
    path = tmp_path / "positions.txt"
    path.write_text("5554224333234511764415115\n")
    status, _, err = command(
        "benchmark", "--file", str(path), "--model", str(tmp_path / "missing.pt")
    )
    assert status == 2 and "missing.pt: no such file or folder. --model takes" in err
    status, _, err = command("benchmark", "--file", str(tmp_path / "absent.txt"))
    assert status == 2 and "cannot read position file" in err
    for argv in (["--file", str(path), "--max-nodes", "-1"], ["--max-nodes", "5"]):
        assert command("benchmark", *argv)[0] == 2
    for plies in ("7-3", "0-43", "opening"):
        status, _, err = command("benchmark", "--file", str(path), "--plies", plies)
        assert (
            status == 2
            and f"must be a ply or a range LO-HI within 0-42 like 0-6, got {plies!r}" in err
        )


def test_plies_score_only_the_positions_of_those_plies(position_file, model_file):
    # The file's positions are at plies 22, 23, 28, 25 and 37: 25-30 holds two of them.
    status, records, _ = _score("--file", str(position_file), "--model", str(model_file),
                                "--plies", "25-30", "--sims", "0")  # fmt: skip
    assert status == 0 and [(r["positions"], r["count"], r["plies"]) for r in records] == [
        (2, 2.0, "25-30")]  # fmt: skip
    assert records[0]["count_ply21_42"] == 2 and "count_ply00_06" not in records[0]
    status, out, _ = command("benchmark", "--file", str(position_file), "--model",
                             str(model_file), "--plies", "37", "--cache", "none")  # fmt: skip
    assert status == 0 and f"| {position_file.name} (plies 37-37) | network | 1 |" in out


def test_end_to_end_on_a_public_file(model_file, tmp_path):
    source = PONS_DIR / "Test_L3_R1"
    path = tmp_path / "Test_L3_R1_head"
    path.write_text("".join(source.read_text().splitlines(keepends=True)[:50]))
    res = subprocess.run(
        [*SCORE, "--file", str(path), "--model", str(model_file), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,  # outside any project: no solver cache
    )
    assert res.returncode == 0, res.stderr
    [record] = [json.loads(line) for line in res.stdout.splitlines()]
    assert record["agent"] == "network" and record["strict_acc"] == record["acc"]
    assert (record["positions"], record["skipped"], record["count"]) == (50, 0, 50.0)
    assert 0 < record["decisive"] <= 50
    assert record["count_end"] == 50.0  # L3: plies 29-42 only
    # Every move is optimal in a position that is not decisive, so acc can only be higher.
    assert 0.0 <= record["acc_decisive"] <= record["acc"] <= 1.0


def test_benchmark_scores_the_network_and_mcts_agents_with_a_persistent_cache(model_file, tmp_path):
    source = PONS_DIR / "Test_L2_R1"
    path = tmp_path / "Test_L2_R1_head"
    path.write_text("".join(source.read_text().splitlines(keepends=True)[:40]))
    cache = tmp_path / "cache"
    argv = ["--file", str(path), "--model", str(model_file), "--sims", "0,8", "--cache", str(cache)]
    start = time.perf_counter()
    status, records, _ = _score(*argv)
    wall = time.perf_counter() - start
    assert status == 0
    assert [(r["agent"], r["sims"]) for r in records] == [("network", 0), ("mcts-8", 8)]
    for r in records:
        assert r["count"] == 40.0 and r["skipped"] == 0
        assert 0.0 <= r["strict_acc"] <= r["weak_acc"] <= 1.0
        assert r["weak_mistake_rate"] == pytest.approx(1.0 - r["weak_acc"])
        assert r["weak_mistakes"] == round(r["weak_mistake_rate"] * 40)
        assert r["seconds"] > 0
    # Each record's seconds are its own agent's (not the command's, not milliseconds): they
    # add up to less than the whole command, which labelled the positions first.
    assert sum(r["seconds"] for r in records) < wall
    assert any(cache.glob("part-*.parquet"))  # every label kept for the next run
    status, again, _ = _score(*argv)
    assert [r["strict_acc"] for r in again] == [r["strict_acc"] for r in records]
    status, gumbel, _ = _score(*argv, "--search", "gumbel")
    assert status == 0 and [(r["agent"], r["search"]) for r in gumbel] == [
        ("network", None),
        ("mcts-8", "gumbel"),
    ]
    assert gumbel[0]["strict_acc"] == records[0]["strict_acc"]  # the network is the same
    assert command("benchmark", "--file", str(path), "--sims", "0,-3")[0] == 2
    assert command("benchmark", "--file", str(path), "--search", "alphabeta")[0] == 2


def test_the_default_output_is_a_table(position_file, model_file):
    argv = ["--file", str(position_file), "--model", str(model_file), "--sims", "0,4"]
    status, out, err = command("benchmark", *argv, "--cache", "none")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"Model: {model_file}" and lines[1] == ""  # which model, first
    assert err.startswith(f"Scoring {model_file}\n")
    assert lines[2] == "| file | agent | positions | strict acc | weak mistakes | seconds |"
    rows = [line.split(" | ") for line in lines[4:6]]
    assert [r[1] for r in rows] == ["network", "mcts-4"]
    assert all(r[0] == f"| {position_file.name}" and r[2] == str(NUM_POSITIONS) for r in rows)
    for r in rows:
        assert 0.0 <= float(r[3]) <= 1.0 and r[4].endswith("%)")
    # Then the same by ply: every position of the file is at ply 22-37, so the last bucket
    # holds the whole file's figures and the others have none.
    assert lines[6:10] == ["", "By ply (strict acc / weak mistakes):", "",
                           "| file | agent | plies 0-6 | plies 7-12 | plies 13-20 | plies 21-42 |"]  # fmt: skip
    by_ply = [line.split(" | ") for line in lines[11:]]
    assert [r[1] for r in by_ply] == ["network", "mcts-4"] and len(lines) == 13
    for row, r in zip(rows, by_ply, strict=True):
        assert r[2:5] == ["-", "-", "-"]
        assert r[5] == f"{row[3]} / {row[4].split('(')[1].rstrip(')')} |"
