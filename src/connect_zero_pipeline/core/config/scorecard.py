"""The scorecard's settings (:class:`ScorecardConfig`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import check
from .search import MCTSConfig


@dataclass(frozen=True)
class ScorecardConfig:
    """Settings of :func:`scorecard`. Validated on construction."""

    num_games: int = 400
    """Games of each greedy network against RandomPunisher (colours alternate)."""
    match_games: int = 400
    """Games of each direct match (colours alternate)."""
    opening_plies: int = 2
    """Uniformly random opening moves in every direct-match game (greedy play is deterministic)."""
    mcts: MCTSConfig | None = field(default_factory=lambda: MCTSConfig(sims=32))
    """The second agent's search in the second direct match (null skips that match)."""
    seed: int = 0
    """Seeds every match; both agents face the same draws against RandomPunisher."""

    def __post_init__(self):
        check(self.num_games >= 200, "num_games", self.num_games, ">= 200 (both colours, seeded)")
        check(self.match_games >= 2, "match_games", self.match_games, ">= 2")
        check(0 <= self.opening_plies <= 8, "opening_plies", self.opening_plies, "in [0, 8]")
