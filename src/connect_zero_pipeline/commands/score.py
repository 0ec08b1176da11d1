"""``python -m connect_zero_pipeline score``: a trained network, alone, on any file of positions.

Usage::

    python -m connect_zero_pipeline score --file PATH [--file PATH ...]
                                          [--model PATH | --dataset NAME]
                                          [--max-nodes N] [--batch-size N]

Each file holds one position per line in Pascal Pons' benchmark format,
``<moves> [<score>]`` (``tests/data/pons/Test_L2_R1``); only the
moves are read, the expected score is ignored. Empty lines are skipped. The
model is chosen as by ``play`` (:mod:`.model_source`): ``--model`` a model
file or a versioned folder (its latest version), else the latest version of
the catalog entry ``--dataset`` (default ``latest_model``).

For each file, every position is analysed by the perfect solver (the exact
score of all 7 moves, with the ``pons`` pipeline's :class:`~..core.labelling.Labeller`
on every core, within ``--max-nodes`` nodes per position, 0 for no limit), giving the labelled
table that :mod:`..core.evaluation` reads, and the network is scored on it
with :func:`~..core.evaluation.solver_set_metrics`. One JSON line per file::

    {"file": "tests/data/pons/Test_L2_R1", "model": "<path>", "positions": 1000,
     "decisive": 998, "skipped": 0, "acc": ..., "ce": ..., "count": 1000.0,
     "val_signacc": ..., "acc_middle": ..., ..., "acc_decisive": ..., ...}

- ``positions``: positions read from the file; ``skipped``: those over the
  node budget, left out of every metric (``count = positions - skipped``);
- ``decisive``: scored positions where not every legal move has the same
  score. On the others every move is optimal, so ``acc`` is trivially 1
  there: the ``*_decisive`` metrics (``acc_decisive``, ``ce_decisive``,
  ``val_signacc_decisive`` and per ply bucket, e.g. ``acc_middle_decisive``)
  are over decisive positions only, and absent when there are none.

Exit status: 0; 1 when a line is invalid (each bad line is reported on stderr
with its file, line number and bad move, and nothing is scored); 2 for a
usage error (unreadable file, no model).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from .model_source import CommandError, add_model_options, resolve_model

EXIT_BAD_INPUT = 1
EXIT_USAGE = 2


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m connect_zero_pipeline score",
        description="Score a trained network alone on files of positions in Pons' benchmark "
        "format, labelled by the perfect solver; one JSON line per file.",
    )
    parser.add_argument(
        "--file",
        dest="files",
        action="append",
        required=True,
        metavar="PATH",
        help="position file, one '<moves> [<score>]' per line (repeat for several files)",
    )
    add_model_options(parser)
    parser.add_argument(
        "--max-nodes",
        type=int,
        default=0,
        metavar="N",
        help="skip a position after N search nodes (default 0: no limit)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=4096,
        metavar="N",
        help="positions per network forward pass (default 4096)",
    )
    args = parser.parse_args(argv)
    if args.max_nodes < 0:
        parser.error(f"--max-nodes must be >= 0, got {args.max_nodes}")
    if args.batch_size < 1:
        parser.error(f"--batch-size must be >= 1, got {args.batch_size}")
    return args


MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest position file ``score`` reads (Pons' sets are about 40 KB)."""


def read_positions(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """The positions of a Pons benchmark file, and one error message per bad line.

    Returns:
        ``moves`` (str), ``ply`` (int8), ``position``, ``mask`` (uint64 bitboards)
        of every valid non-empty line, in file order; and messages
        ``"<path>: line <n>: <what is wrong>"`` naming the bad move.

    Raises:
        CommandError: the file cannot be read.
    """
    from ..core.solver import _to_bitboards
    from .solve import MAX_LINE, _split_line

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise CommandError(
                f"position file {path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
            )
        text = data.decode()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read position file {path}: {exc}") from exc
    rows: list[tuple[str, int, int, int]] = []
    errors: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if len(line) > MAX_LINE:
            errors.append(f"{path}: line {number}: longer than {MAX_LINE} characters")
            continue
        try:
            moves = _split_line(line)
            pos, mask, _ = _to_bitboards(moves)  # names the bad move; rejects a finished game
        except ValueError as exc:
            errors.append(f"{path}: line {number}: {exc}")
            continue
        rows.append((moves, len(moves), pos, mask))
    table = pd.DataFrame(
        {
            "moves": [r[0] for r in rows],
            "ply": np.array([r[1] for r in rows], dtype=np.int8),
            "position": np.array([r[2] for r in rows], dtype=np.uint64),
            "mask": np.array([r[3] for r in rows], dtype=np.uint64),
        }
    )
    return table, errors


def label_positions(
    positions: pd.DataFrame, labeller, desc: str | None = None
) -> tuple[pd.DataFrame, int]:
    """Analyse every position (all 7 moves) and build the solver-labelled table.

    Args:
        positions: ``position``, ``mask`` (uint64) and ``ply`` columns, N rows.
        labeller: a :class:`~..core.labelling.Labeller` (its node budget, workers
            and cache, as the ``pons`` pipeline labels).
        desc: label of the progress bar.

    Returns:
        The table of :func:`~..core.labelling.labelled_table` (``score_1..7``,
        ``best_score``, ``decisive``) for the positions solved within budget,
        in input order, and the number skipped.
    """
    from ..core.labelling import labelled_table

    scores, ok, _ = labeller.label(positions["position"], positions["mask"], progress=desc or False)
    return labelled_table(positions, scores, ok), int((~ok).sum())


def score_table(evaluate_fn, labelled: pd.DataFrame, batch_size: int = 4096) -> dict[str, float]:
    """:func:`~..core.evaluation.solver_set_metrics` over all positions, then decisive ones.

    Returns:
        The metrics over all rows, plus the same over rows with ``decisive``
        True, suffixed ``_decisive`` (without ``count_decisive``); ``{}`` for
        an empty table.
    """
    from ..core.evaluation import solver_set_metrics

    if labelled.empty:
        return {}
    metrics = solver_set_metrics(evaluate_fn, labelled, batch_size)
    decisive = labelled.loc[labelled["decisive"].to_numpy(bool)]
    if not decisive.empty:
        sub = solver_set_metrics(evaluate_fn, decisive, batch_size)
        metrics.update({f"{k}_decisive": v for k, v in sub.items() if k != "count"})
    return metrics


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Score every file; returns the exit status."""
    paths = [Path(f) for f in args.files]
    tables, errors = [], []
    for path in paths:  # every file is checked before minutes of solving start
        table, bad = read_positions(path)
        tables.append(table)
        errors.extend(bad)
    if errors:
        for message in errors:
            print(message, file=stderr, flush=True)
        print(f"{len(errors)} invalid line(s): nothing scored", file=stderr, flush=True)
        return EXIT_BAD_INPUT

    from ..core.inference import torch_evaluate_fn
    from ..core.labelling import Labeller
    from ..executors import chunk_runner

    model, description = resolve_model(args.model, args.dataset)
    evaluate_fn = torch_evaluate_fn(model, "cpu")
    runner = chunk_runner("local", workers=0)  # every core; one in-memory cache
    with Labeller(max_nodes=args.max_nodes, run_chunks=runner) as labeller:
        for path, table in zip(paths, tables, strict=True):
            labelled, skipped = label_positions(table, labeller, desc=path.name)
            record = {
                "file": str(path),
                "model": description,
                "positions": len(table),
                "decisive": int(labelled["decisive"].sum()),
                "skipped": skipped,
                **score_table(evaluate_fn, labelled, args.batch_size),
            }
            print(json.dumps(record), file=stdout, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m connect_zero_pipeline score``; returns the exit status."""
    args = _parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return run(args, sys.stdout, sys.stderr)
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nInterrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
