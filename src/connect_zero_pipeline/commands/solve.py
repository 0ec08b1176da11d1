"""``python -m connect_zero_pipeline solve``: the perfect solver on move strings from stdin.

Input: one position per line, as a Pons move string (``4453``: 1-based
columns from the empty board). A Pons benchmark line ``<moves> <score>`` is
accepted too: the trailing expected score is ignored.

Output: one line per input line, so that output line ``i`` answers input line ``i``:

- default: ``<moves> <score>`` (the benchmark file format);
- ``--weak``: ``<moves> <sign>`` with the sign -1, 0 or 1;
- ``--analyze``: ``<moves> s1 .. s7``, the score of each column, ``x`` for a full one.

Scores are in Pons' convention, from the side to move's view (see
:mod:`connect_zero_pipeline.core.solver`).

An empty input line gives an empty output line and is not an error. It is
*not* solved as the empty board: without an opening book that takes minutes.
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
    default=None,
    metavar="N",
    help="A transposition table of 2**N entries of 8 bytes (default 23: 64 MiB).",
)
@max_nodes_option("Give up on a position")
def solve(**options) -> None:
    """Solve Connect-4 positions read from standard input, one move string per line."""
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

    solver = book_solver(args.tt_log2 if args.tt_log2 is not None else DEFAULT_TT_LOG2)
    status = 0
    for number, (raw, too_long) in enumerate(bounded_lines(stdin), start=1):
        if too_long:
            print(f"line {number}: longer than {MAX_LINE} characters", file=stderr, flush=True)
            print("", file=stdout, flush=True)
            status = 1
            continue
        line = raw.strip()
        if not line:
            print("", file=stdout, flush=True)
            continue
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
        print(f"{moves} {text}", file=stdout, flush=True)
    return status
