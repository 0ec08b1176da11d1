"""``python -m connect_zero_pipeline solve``: output format, bad lines, exit status."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from connect_zero_pipeline.common.opening_book import machine_book
from tests.helpers import PONS_DIR, command


def _solve(text: str, *argv: str) -> tuple[int, list[str], str]:
    status, out, err = command("solve", *argv, "--tt-log2", "16", stdin=text)
    return status, out.split("\n")[:-1], err


def test_scores_in_benchmark_format_and_expected_column_ignored():
    status, lines, err = _solve("52753311433677442422121\n52753311433677442422121 -99\n")
    assert status == 0 and err == ""
    assert lines == ["52753311433677442422121 8"] * 2


def test_weak_and_analyze():
    status, lines, _ = _solve("52753311433677442422121\n", "--weak")
    assert status == 0 and lines == ["52753311433677442422121 1"]
    status, lines, _ = _solve("1233722555341451114725221333\n", "--analyze")
    assert status == 0 and lines == ["1233722555341451114725221333 x x x -1 -1 -1 -1"]


def test_bad_lines_report_line_number_keep_alignment_and_fail_at_the_end():
    text = "\n".join(
        [
            "52753311433677442422121",  # 1 ok
            "",  # 2 empty: the empty board
            "4483",  # 3 bad character
            "4444444",  # 4 full column
            "12121212",  # 5 move after the game is over
            "1212121",  # 6 finished game
            "44 4 4",  # 7 extra fields
            "44 abc",  # 8 second field not a score
            "121217",  # 9 ok
        ]
    )
    status, lines, err = _solve(text + "\n")
    assert status == 1
    assert lines == ["52753311433677442422121 8", "1", "", "", "", "", "", "", "121217 18"]
    errors = err.strip().split("\n")
    assert [e.split(":")[0] for e in errors] == [f"line {i}" for i in (3, 4, 5, 6, 7, 8)]
    assert "'8' (move 3)" in errors[0]
    assert "full column" in errors[1] and "move 7" in errors[1]
    assert "after the game is over" in errors[2] and "move 8" in errors[2]
    assert "already won" in errors[3]


def test_an_empty_line_is_the_empty_board():
    status, lines, err = _solve("\n", "--analyze")
    assert status == 0 and lines == ["-2 -1 0 1 0 -1 -2"] and err == ""


def test_a_damaged_book_is_one_line_and_the_answers_stay_right(tmp_path):
    """A new user's cache whose scores were altered in place (same size): the command says so
    in one line, makes the book again and answers right."""
    where, book = machine_book()
    assert book is not None and where is not None
    folder = tmp_path / "connect-zero-pipeline" / Path(where).name
    shutil.copytree(where, folder)
    scores = np.load(folder / "scores.npy", mmap_mode="r+")
    scores[:] = -scores
    scores.flush()
    del scores
    res = subprocess.run([sys.executable, "-m", "connect_zero_pipeline", "solve", "--analyze"],
                         input="44\n", capture_output=True, text=True, timeout=300,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout == "44 -3 -3 -2 1 -2 -3 -3\n"
    assert res.stderr.strip().splitlines() == [f"The opening book in {folder} was damaged "
                                               "(scores.npy differs from its checksum): made "
                                               "again"], res.stderr  # fmt: skip


def test_node_budget_reports_and_fails():
    status, lines, err = _solve("4\n121217\n", "--max-nodes", "1000")
    assert status == 1 and lines == ["", "121217 18"]
    assert err.startswith("line 1:") and "--max-nodes 1000" in err


def test_bad_options_exit_with_usage_error():
    for argv in (["--tt-log2", "5"], ["--weak", "--analyze"], ["--max-nodes", "-1"]):
        assert command("solve", *argv)[0] == 2


def test_end_to_end_on_a_public_file():
    path = PONS_DIR / "Test_L3_R1"
    text = "".join(path.read_text().splitlines(keepends=True)[:50])
    res = subprocess.run(
        [sys.executable, "-m", "connect_zero_pipeline", "solve"],
        input=text,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == text.splitlines()  # "<moves> <score>", scores exact
