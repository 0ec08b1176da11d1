"""The perfect solver's verdict on every column of a position, for the play page's
``/analyze`` and the terminal game (:mod:`.board` words them)."""

from __future__ import annotations

import functools

from ..common.opening_book import book_solver
from ..common.project import project_root
from ..core.labelling import SolvedCache, position_keys
from ..core.solver import FULL_COLUMN
from ..params.pons import PonsConfig
from .board import SOLVER_LEGEND, verdict

SOLVER_NODES = 3_000_000
"""The solver's default node budget a column: about 1.5 s a position at most on a 2-core
machine (docs/play.md); with the opening book every column is exact well within it, at
every ply (without it, from about ply 4)."""


def solver_bounds(position: int, mask: int, max_nodes: int) -> list[tuple[int, int] | None]:
    """What the perfect solver proves of each column's score within ``max_nodes`` nodes a
    column (:func:`..core.solver.column_bounds`); exact at once for a position of the
    project's solver cache (the labelled sets' positions)."""
    import numpy as np  # noqa: PLC0415 (numpy: not for the light commands)

    cache = _solver_cache()
    if cache is not None:
        found, scores = cache.lookup(
            position_keys(np.array([position], np.uint64), np.array([mask], np.uint64))
        )
        if found[0]:
            return [None if s == FULL_COLUMN else (int(s), int(s)) for s in scores[0]]
    return _solver().column_bounds(position, mask, max_nodes)


@functools.lru_cache(maxsize=1)
def _solver():
    """This process's solver (its table kept between positions) with the opening book."""
    return book_solver()


@functools.lru_cache(maxsize=1)
def _solver_cache():
    """The project's solver cache (``pons.cache_dir``), read once; None outside a project."""
    project, folder = project_root(), PonsConfig().cache_dir
    if project is None or not folder or not (project / folder).is_dir():
        return None
    return SolvedCache(project / folder)


def solver_answer(position: int, mask: int, max_nodes: int) -> dict:
    """``/analyze``'s answer: per column the exact ``scores`` (null where not proved, or
    full), the proved ``bounds`` ([low, high] or null), the ``verdicts`` as the page shows
    them, and ``solved`` (every score exact)."""
    bounds = solver_bounds(position, mask, max_nodes)
    return {
        "scores": [b[0] if b is not None and b[0] == b[1] else None for b in bounds],
        "bounds": [list(b) if b is not None else None for b in bounds],
        "verdicts": [verdict(b) for b in bounds],
        "solved": all(b is None or b[0] == b[1] for b in bounds),
        "legend": SOLVER_LEGEND,
    }
