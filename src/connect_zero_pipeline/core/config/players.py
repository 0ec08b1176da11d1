"""The players that need no network, by name: what a parameter may name."""

from __future__ import annotations

NAMED_PLAYERS = ("random", "random_punisher")
"""The players :func:`..players.make_player` builds by name alone."""
SOLVER_PREFIX = "solver:"
"""``solver:<epsilon>``: the perfect solver, playing a random move with probability epsilon."""
PLAYER_NAMES = "'random', 'random_punisher' or 'solver:<epsilon in [0, 1]>'"
"""The players that need no network, by name (what :func:`..players.make_player` accepts)."""


def is_player_name(name) -> bool:
    """Whether :func:`..players.make_player` knows ``name``."""
    if name in NAMED_PLAYERS:
        return True
    if isinstance(name, str) and name.startswith(SOLVER_PREFIX):
        try:
            return 0.0 <= float(name[len(SOLVER_PREFIX) :]) <= 1.0
        except ValueError:
            return False
    return False
