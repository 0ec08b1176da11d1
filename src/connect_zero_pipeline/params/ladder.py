"""The ``ladder`` section: which players, how they play, how they are rated."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import check, is_int
from ..core.config.players import PLAYER_NAMES, is_player_name
from ..core.config.search import MCTSConfig
from ..executors.settings import NodeSettings

LATEST = "latest"
"""``ladder.runs``: the newest finished alphazero run."""


@dataclass(frozen=True)
class LadderConfig:
    runs: list = field(default_factory=lambda: [LATEST])
    """AlphaZero runs whose generations play: run ids (``ls data/runs``) or ``latest``."""
    every: int = 4
    """Every this-many-th generation of each run plays, plus its last."""
    registry: list = field(default_factory=list)
    """Registered versions of ``connect-zero``: aliases (``champion``) or version numbers."""
    reinforce: list = field(default_factory=list)
    """REINFORCE chunks (``rf_008``): their latest version plays."""
    anchors: list = field(
        default_factory=lambda: ["random", "random_punisher", "solver:0.5", "solver:0.25"]
    )
    """Fixed players (:func:`~...core.players.make_player`): ``random``, ``random_punisher``,
    ``solver:<epsilon>``."""
    anchor: str = "random_punisher"
    """The player whose rating is fixed at ``anchor_elo`` (an anchor name)."""
    anchor_elo: float = 0.0
    mcts: MCTSConfig | None = field(default_factory=lambda: MCTSConfig(sims=32))
    """The network players' search (null: the policy alone)."""
    num_openings: int = 20
    """Random openings per pair, each played twice (colours swapped)."""
    opening_plies: int = 4
    """Uniformly random plies of an opening."""
    solver_max_nodes: int = 0
    """Node budget of the solver anchors per position, beyond which they win, block or play
    at random. 0: exact (with the opening book, well under a second a position at every
    ply; without it, a minute for some positions at ply 4): exact anchors analyse through
    the project's solver cache (``pons.cache_dir``) in one process per core
    (``node.workers``), so a position is solved once across games and ladders."""
    num_bootstrap: int = 200
    """Bootstrap resamples of the games for the 95% intervals."""
    cache_dir: str | None = "data/02_intermediate/ladder_cache"
    """Every game played, kept across ladders (a new player plays only its new pairs)."""
    move_champion: bool = False
    """Move the registry alias ``champion`` to the best-rated registered version of this
    ladder; exports then leave the alias alone (the champion follows the ladder)."""
    seed: int = 0
    node: NodeSettings = field(default_factory=NodeSettings)
    """The device and the network players' backend."""

    def __post_init__(self):
        for name in ("runs", "registry", "reinforce", "anchors"):
            value = getattr(self, name)
            check(isinstance(value, (list, tuple)), name, value, "a list")
        check(is_int(self.every) and self.every >= 1, "every", self.every, "an integer >= 1")
        check(is_int(self.num_openings) and self.num_openings >= 1, "num_openings",
              self.num_openings, "an integer >= 1")  # fmt: skip
        check(is_int(self.opening_plies) and 0 <= self.opening_plies <= 12, "opening_plies",
              self.opening_plies, "an integer in [0, 12]")  # fmt: skip
        check(is_int(self.solver_max_nodes) and self.solver_max_nodes >= 0, "solver_max_nodes",
              self.solver_max_nodes, "an integer >= 0")  # fmt: skip
        check(is_int(self.num_bootstrap) and self.num_bootstrap >= 1, "num_bootstrap",
              self.num_bootstrap, "an integer >= 1")  # fmt: skip
        for name in self.anchors:
            check(is_player_name(name), "anchors", name, PLAYER_NAMES)
        check(self.anchor in self.anchors, "anchor", self.anchor,
              f"one of the anchors {list(self.anchors)}")  # fmt: skip

    @property
    def agent(self) -> str:
        """How the network players play, in their ids: ``mcts32-puct`` or ``policy``."""
        return f"mcts{self.mcts.sims}-{self.mcts.search}" if self.mcts else "policy"
