"""``bench verdicts``: what the play board's solver row proves at each ply of one game.

One line per position along ``--moves`` (default ``44533212``) from ply 2: the solver row
(:func:`..commands.board.verdict` of :func:`..core.solver.column_bounds`) within the play
command's default node budget a column (``--nodes`` another), and the seconds it took. One
solver plays the whole game, as the play server does (its table carries over, the opening
book with it). The table in docs/play.md is this output.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import click

from ..commands.board import verdict
from ..commands.verdicts import SOLVER_NODES
from ..common.opening_book import book_solver
from ..core.bitboard import moves_to_bitboards
from . import figure

GAME = "44533212"

OPTIONS = [
    click.Option(["--moves"], default=GAME, show_default=True, help="The game to analyse."),
    click.Option(
        ["--nodes"],
        type=click.IntRange(min=1),
        default=None,
        show_default="the play command's",
        help="The node budget a column.",
    ),
]
"""``bench verdicts``' options besides ``--quick``."""


def run(args) -> Iterator[dict]:
    game = getattr(args, "moves", None) or GAME
    nodes = int(getattr(args, "nodes", None) or SOLVER_NODES)
    solver = book_solver()
    solver.column_bounds(*moves_to_bitboards("4444"), 10)  # compiled outside the clock
    solver.reset()
    for ply in range(2, len(game) + 1):
        moves = game[:ply]
        start = time.perf_counter()
        bounds = solver.column_bounds(*moves_to_bitboards(moves), nodes)
        seconds = time.perf_counter() - start
        yield figure("verdicts", "seconds", seconds, moves=moves, nodes_per_column=nodes,
                     row=" ".join(verdict(b) for b in bounds))  # fmt: skip
