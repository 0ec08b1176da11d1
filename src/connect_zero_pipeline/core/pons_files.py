"""Position files in Pascal Pons' benchmark format: ``<moves> [<score>]``, one per line.

Read by the ``benchmark`` command and by the catalog entry of the public sets scored
every generation (``pons_benchmarks``); both label the positions with the solver
through :func:`label_positions`. Input is bounded: at most
:data:`MAX_FILE_BYTES` per file and :data:`MAX_LINE` characters per line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .labelling import labelled_table
from .solver import _to_bitboards

MAX_LINE = 256
"""Longest accepted input line (a whole game is 42 moves, plus a score)."""


def split_line(line: str) -> str:
    """The move string of a line, dropping an optional trailing integer score (an empty line:
    the empty board's, ``""``).

    Raises:
        ValueError: more than two fields, or a second field that is not an integer.
    """
    fields = line.split()
    if not fields:
        return ""
    if len(fields) > 2:
        raise ValueError(f"expected '<moves>' or '<moves> <score>', got {len(fields)} fields")
    if len(fields) == 2:
        try:
            int(fields[1])
        except ValueError:
            raise ValueError(f"the second field {fields[1]!r} is not an integer score") from None
    return fields[0]


MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest position file read (Pons' sets are about 40 KB)."""


def read_pons_file(path: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """The positions of a Pons benchmark file, and one error message per bad line.

    Returns:
        ``moves`` (str), ``ply`` (int8), ``position``, ``mask`` (uint64 bitboards)
        of every valid non-empty line, in file order; and messages
        ``"<path>: line <n>: <what is wrong>"`` naming the bad move.

    Raises:
        OSError: the file cannot be read, is larger than :data:`MAX_FILE_BYTES`
            or is not text (the message names the file).
    """
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise OSError(f"cannot read position file {path}: {exc}") from exc
    if len(data) > MAX_FILE_BYTES:
        raise OSError(f"position file {path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise OSError(f"cannot read position file {path}: {exc}") from exc
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
            moves = split_line(line)
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
        labeller: a :class:`~.labelling.Labeller` (its node budget, workers
            and cache, as the ``pons`` pipeline labels).
        desc: label of the progress bar.

    Returns:
        The table of :func:`~.labelling.labelled_table` (``score_1..7``,
        ``best_score``, ``decisive``) for the positions solved within budget,
        in input order, and the number skipped.
    """
    scores, ok, _ = labeller.label(positions["position"], positions["mask"], progress=desc or False)
    return labelled_table(positions, scores, ok), int((~ok).sum())
