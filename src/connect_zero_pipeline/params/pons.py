"""The ``pons`` section: the solver-labelled evaluation set's recipe and where it is solved."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import check, is_int
from ..executors.settings import NodeSettings


@dataclass(frozen=True)
class PonsConfig:
    num_games: int = 1000
    """Games between epsilon-greedy perfect players."""
    epsilon: float = 0.25
    """Probability of a random move instead of a perfect one."""
    opening_plies: list = field(default_factory=lambda: [4, 12])
    """Each game starts with a uniformly random number of random moves in this range."""
    min_ply: int = 2
    """Collect positions with at least this many stones."""
    max_nodes: int = 100_000_000
    """Per-position solver budget (nodes, all 7 moves together); over-budget positions are
    skipped and counted. With the opening book every position of the shipped set's games
    is within it (the hardest lie just past the book's 12 stones: 25 M nodes, 2 s);
    without it, most positions before ply 12 are over it (``pons.max_nodes=1000000`` then
    skips them sooner)."""
    chunk_size: int = 32
    """Positions per solver task."""
    tt_log2: int = 22
    """Transposition table size of each solver process (2**tt_log2 entries of 8 bytes)."""
    cache_dir: str | None = "data/02_intermediate/solver_cache"
    """Persistent cache of every solved position (null: none); the public sets of
    ``evaluate`` are labelled through it too."""
    seed: int = 0
    """Seeds the games."""
    node: NodeSettings = field(default_factory=NodeSettings)
    """Where the solver runs: ``executor``, ``workers`` (0: one process per core) and ``ray``
    (``address``, ``max_retries`` of a task whose worker died)."""

    def __post_init__(self):
        check(is_int(self.num_games) and self.num_games >= 1, "num_games", self.num_games,
              "an integer >= 1")  # fmt: skip
        check(0 <= self.epsilon <= 1, "epsilon", self.epsilon, "in [0, 1]")
        check(
            isinstance(self.opening_plies, (list, tuple))
            and len(self.opening_plies) == 2
            and 0 <= self.opening_plies[0] <= self.opening_plies[1] <= 41,
            "opening_plies",
            self.opening_plies,
            "[lo, hi] with 0 <= lo <= hi <= 41",
        )
        check(0 <= self.min_ply <= 41, "min_ply", self.min_ply, "in [0, 41]")
        check(self.max_nodes >= 0, "max_nodes", self.max_nodes, ">= 0 (0: no budget)")
