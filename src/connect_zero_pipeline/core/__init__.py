"""The pure library: Connect-4 rules, players, search, training and evaluation.

Nothing in ``core`` imports Kedro; the pipelines are thin adapters around it.
Heavy modules (the numba solver, models, MCTS) are imported from their own
modules, e.g. ``from connect_zero_pipeline.core.solver import solve``.
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULES = {
    **dict.fromkeys(
        ("State", "StepResult", "from_boards", "initial_state", "legal_mask",
         "moves_to_bitboards", "play", "reset_done", "state_from_moves", "to_boards"),
        ".bitboard",
    ),
    **dict.fromkeys(("MatchResult", "play_match"), ".match"),
    **dict.fromkeys(
        ("PolicyPlayer", "RandomPlayer", "RandomPunisher", "make_player", "sample_move"),
        ".players",
    ),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """The names below, imported when first used (a module such as ``core.files`` imports
    no torch)."""
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MatchResult",
    "PolicyPlayer",
    "RandomPlayer",
    "RandomPunisher",
    "State",
    "StepResult",
    "from_boards",
    "initial_state",
    "legal_mask",
    "make_player",
    "moves_to_bitboards",
    "play",
    "play_match",
    "reset_done",
    "sample_move",
    "state_from_moves",
    "to_boards",
]
