"""The ``baselines`` section: a match between two players that need no network."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import check, is_int
from ..core.config.players import PLAYER_NAMES, is_player_name
from ..executors.settings import NodeSettings


@dataclass(frozen=True)
class BaselineMatchConfig:
    player_a: str = "random_punisher"
    """First player (:func:`~...core.players.make_player`); moves first in even games."""
    player_b: str = "random"
    """Second player."""
    num_games: int = 2000
    """Games in the match; colours alternate."""
    seed: int = 0
    """Seeds the match's random generator."""
    solver_max_nodes: int = 200_000
    """A ``solver:<epsilon>`` player's node budget per position (0: exact, slow near the
    empty board)."""
    node: NodeSettings = field(default_factory=NodeSettings)
    """The device the games are played on."""

    def __post_init__(self):
        for key in ("player_a", "player_b"):
            check(is_player_name(getattr(self, key)), key, getattr(self, key), PLAYER_NAMES)
        check(is_int(self.num_games) and self.num_games >= 1, "num_games", self.num_games,
              "an integer >= 1")  # fmt: skip
        check(is_int(self.solver_max_nodes) and self.solver_max_nodes >= 0, "solver_max_nodes",
              self.solver_max_nodes, "an integer >= 0")  # fmt: skip
