"""bench verdicts: one line per ply of a game, with the play board's solver row."""

from __future__ import annotations

import argparse

from connect_zero_pipeline.bench.verdicts import run


def test_one_line_per_ply_with_the_solver_row_and_its_seconds():
    lines = list(run(argparse.Namespace(moves="4414742", nodes=1000)))
    assert [line["moves"] for line in lines] == ["44", "441", "4414", "44147", "441474", "4414742"]
    assert all(line["value"] >= 0 and len(line["row"].split()) == 7 for line in lines)
    # Column 4 wins at once: proved whatever the budget; the others let the opponent win.
    assert lines[-1]["row"].split() == ["-17", "-17", lines[-1]["row"].split()[2], "+18",
                                        "-17", "-17", "-17"]  # fmt: skip
