"""The ``pons`` section: the solver-labelled evaluation set's recipe and where it is solved."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import check, is_int
from ..executors.settings import NodeSettings

BOOK_BUDGET = 100_000_000
"""The labelling budget a position with the opening book: none of the shipped set's is over."""
SEARCH_BUDGET = 1_000_000
"""The labelling budget a position without the book (as before it): about a second."""


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
    max_nodes: int | None = None
    """Per-position solver budget (nodes, all 7 moves together); over-budget positions are
    skipped and counted; 0: none. null: :data:`BOOK_BUDGET` where the machine has the
    opening book (every position of the shipped set's games is within it: the hardest lie
    just past the book's 12 stones, 25 M nodes, 2 s), :data:`SEARCH_BUDGET` where it has
    not (positions before ply 12 are then mostly over any budget: skipped sooner)."""
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
        check(self.max_nodes is None or (is_int(self.max_nodes) and self.max_nodes >= 0),
              "max_nodes", self.max_nodes, "null or an integer >= 0 (0: no budget)")  # fmt: skip

    def budget(self, has_book: bool) -> int:
        """``max_nodes``, or its default for a machine with (or without) the opening book."""
        if self.max_nodes is not None:
            return self.max_nodes
        return BOOK_BUDGET if has_book else SEARCH_BUDGET
