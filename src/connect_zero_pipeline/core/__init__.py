"""The pure library: Connect-4 rules, players, search, training and evaluation.

Nothing in ``core`` imports Kedro; the pipelines are thin adapters around it.
Heavy modules (the numba solver, models, MCTS) are imported from their own
modules, e.g. ``from connect_zero_pipeline.core.solver import solve``.
"""

from .bitboard import (
    State,
    StepResult,
    from_boards,
    initial_state,
    legal_mask,
    moves_to_bitboards,
    play,
    reset_done,
    state_from_moves,
    to_boards,
)
from .match import MatchResult, play_match
from .players import PolicyPlayer, RandomPlayer, RandomPunisher, make_player, sample_move

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
