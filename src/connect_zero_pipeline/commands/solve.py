"""``python -m connect_zero_pipeline solve``: the perfect solver on move strings from stdin.

Input: one position per line, as a Pons move string (``4453``: 1-based
columns from the empty board). A Pons benchmark line ``<moves> <score>`` is
accepted too: the trailing expected score is ignored.

Output: one line per input line, so that output line ``i`` answers input line ``i``:

- default: ``<moves> <score>`` (the benchmark file format);
- ``--weak``: ``<moves> <sign>`` with the sign -1, 0 or 1;
- ``--analyze``: ``<moves> s1 .. s7``, the score of each column, ``x`` for a full one.

Scores are in Pons' convention, from the side to move's view (see
:mod:`connect_zero_pipeline.core.solver`). Positions before ply 12 are answered
through the opening book (the ``book`` extra, which ``make setup`` installs),
kept in ``$XDG_CACHE_HOME/connect-zero-pipeline`` (docs/solver.md).

An empty input line is the empty board (its scores are ``-2 -1 0 1 0 -1 -2``,
at once with the opening book; without it, the search takes hours). The output
line of a position is its answer alone when its move string is empty.
An invalid line (a character outside 1-7, a move into a full column, a move
after the game is over, a finished game, extra text) prints an error naming
the line number and the bad move on stderr and an empty output line; the
remaining lines are still processed and the exit status is 1. With
``--max-nodes N``, a position whose search exceeds ``N`` nodes is reported
the same way.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import TextIO

import click

from ..common.opening_book import book_solver
from ..core.bitboard import moves_to_bitboards
from ..core.pons_files import MAX_LINE, split_line
from ..core.solver import DEFAULT_TT_LOG2, FULL_COLUMN, _to_bitboards
from . import finish, max_nodes_option


@click.command()
@click.option("--weak", is_flag=True, help="Print only the sign of the score.")
@click.option("--analyze", is_flag=True, help="Print the score of every column.")
@click.option(
    "--tt-log2",
    type=click.IntRange(10, 30),
    default=DEFAULT_TT_LOG2,
    show_default=True,
    metavar="N",
    help="A transposition table of 2**N entries of 8 bytes (23: 64 MiB).",
)
@max_nodes_option("Give up on a position")
def solve(**options) -> None:
    """Solve positions from standard input, one move string a line.

    \b
    A line is a move string (4453: 1-based columns from the empty board) or a
    line of Pons' benchmark files (<moves> <score>); an empty line is the empty
    board. Each output line answers its input line: <moves> <score>, the sign
    with --weak, each column's score with --analyze (x: a full column). Scores
    are the side to move's: 0 a draw, 22 - k a win with the winner's k-th stone.

    \b
    The opening (before ply 12) is answered from the opening book, made once
    per machine from the book extra (make setup installs it) into
    $XDG_CACHE_HOME/connect-zero-pipeline (~/.cache/connect-zero-pipeline
    without it), checked by every process, made again when damaged. Without
    the book a position of the opening takes minutes.
    """
    if options["weak"] and options["analyze"]:
        raise click.UsageError("--weak and --analyze cannot be combined")
    finish(run(SimpleNamespace(**options), sys.stdin, sys.stdout, sys.stderr))


def bounded_lines(stream: TextIO, limit: int = MAX_LINE):
    """Yield ``(text, too_long)`` per line of ``stream``, never holding more than ``limit + 1``
    characters of one line (the rest of an over-long line is read and dropped)."""
    while True:
        chunk = stream.readline(limit + 1)
        if not chunk:
            return
        if len(chunk) <= limit or chunk.endswith("\n"):
            yield chunk, False
            continue
        while chunk and not chunk.endswith("\n"):  # drain the rest of the line
            chunk = stream.readline(limit + 1)
        yield "", True


def run(args: SimpleNamespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """Process every line of ``stdin``; returns the exit status (0 ok, 1 some line failed)."""
    import numpy as np  # noqa: PLC0415 (numpy: not for the light commands)

    solver = book_solver(args.tt_log2)
    status = 0
    for number, (raw, too_long) in enumerate(bounded_lines(stdin), start=1):
        if too_long:
            print(f"line {number}: longer than {MAX_LINE} characters", file=stderr, flush=True)
            print("", file=stdout, flush=True)
            status = 1
            continue
        line = raw.strip()
        try:
            moves = split_line(line)
            moves_to_bitboards(moves)  # names the bad move and its index
            pos, mask, _ = _to_bitboards(moves)  # rejects a finished game
        except ValueError as exc:
            print(f"line {number}: {exc}", file=stderr, flush=True)
            print("", file=stdout, flush=True)
            status = 1
            continue
        b_pos = np.array([pos], dtype=np.int64)  # [1]
        b_mask = np.array([mask], dtype=np.int64)  # [1]
        if args.analyze:
            scores, ok, _ = solver.analyze_batch(b_pos, b_mask, max_nodes=args.max_nodes)
            text = " ".join("x" if s == FULL_COLUMN else str(int(s)) for s in scores[0])
        else:
            scores, ok, _ = solver.solve_batch(
                b_pos, b_mask, weak=args.weak, max_nodes=args.max_nodes
            )
            text = str(int(scores[0]))
        if not ok[0]:
            print(
                f"line {number}: {moves!r} not solved within --max-nodes {args.max_nodes}",
                file=stderr,
                flush=True,
            )
            print("", file=stdout, flush=True)
            status = 1
            continue
        print(f"{moves} {text}" if moves else text, file=stdout, flush=True)
    return status
