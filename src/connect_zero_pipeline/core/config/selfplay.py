"""One generation of self-play's settings (:class:`SelfPlayConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..board import MIN_GAME_PLIES
from . import check, is_int
from .search import MCTSConfig
from .training import PRECISIONS

SEARCH = MCTSConfig(sims=16, dirichlet_eps=0.25, search="gumbel")
"""Self-play's search: 16 simulations of Gumbel search, root noise 0.25 (used by PUCT only);
the other keys are :class:`~.search.MCTSConfig`'s."""


@dataclass(frozen=True)
class SelfPlayConfig:
    """One generation of self-play. Validated on construction (``ValueError`` naming the field).

    The defaults are the project's CPU recipe (``conf/base/parameters_selfplay.yml``
    repeats them): 512 slots with 4 random opening plies play 32 steps, then the
    games in progress finish. The search is an :class:`~.search.MCTSConfig`
    (:data:`SEARCH` by default), the same type every agent of the project searches with.
    """

    num_games: int = 512
    """Game slots played in parallel (the search batch size)."""
    moves_per_gen: int = 32
    """Env steps of the whole batch per generation; each step is one ply in every slot."""
    finish_games: bool = True
    """After ``moves_per_gen`` steps, play the games in progress to their end (only they
    search, no new game starts) instead of dropping their plies: every game started is
    kept, long and drawn games as often as short ones."""
    temp_cutoff: int = 10
    """Plies of each game (counted from its first move) whose move is sampled from the
    visit distribution with temperature 1; later plies play the most visited column
    (Gumbel search: the Sequential Halving survivor throughout)."""
    random_opening_plies: int = 4
    """The first plies of each game play a uniformly random legal move (still searched
    and recorded with their visit targets): exploration of openings self-play would
    not choose, like the random openings of the evaluation set."""
    seed: int = 0
    """Seed of the per-slot random streams (with the generation number and slot index)."""
    mcts: MCTSConfig = SEARCH
    """The search of every move: ``search`` (``puct``: play sampled from the visit counts
    for ``temp_cutoff`` plies, train on the visit distribution; ``gumbel``: play the
    Gumbel-Top-k survivor, train on the improved policy), ``sims`` and the rest. Its
    ``win_decay`` also shapes the ``z`` targets."""
    precision: str = "float32"
    """The network's arithmetic in the searches (:data:`~.training.PRECISIONS`): float32
    (onnxruntime on the CPU), bfloat16 (torch under autocast) or auto (bfloat16 on a CPU
    with native bfloat16 products, float32 elsewhere). Part of the recipe: bfloat16 picks
    another move now and then, so the games differ."""

    def __post_init__(self):
        for key in ("num_games", "moves_per_gen"):
            check(is_int(getattr(self, key)) and getattr(self, key) >= 1, key,
                  getattr(self, key), "an integer >= 1")  # fmt: skip
        for key in ("temp_cutoff", "random_opening_plies"):
            check(is_int(getattr(self, key)) and getattr(self, key) >= 0, key,
                  getattr(self, key), "an integer >= 0")  # fmt: skip
        check(isinstance(self.finish_games, bool), "finish_games", self.finish_games,
              "true or false")  # fmt: skip
        check(is_int(self.seed), "seed", self.seed, "an integer")
        check(isinstance(self.mcts, MCTSConfig), "mcts", self.mcts, "an MCTSConfig")
        check(self.precision in PRECISIONS, "precision", self.precision,
              f"one of {', '.join(PRECISIONS)}")  # fmt: skip
        check(self.num_games * games_per_slot(self.moves_per_gen) < 2**31, "num_games",
              self.num_games, f"small enough for int32 game ids with moves_per_gen="
              f"{self.moves_per_gen}")  # fmt: skip


def games_per_slot(moves_per_gen: int) -> int:
    """Upper bound on the games one slot can start in a generation (id stride)."""
    return moves_per_gen // MIN_GAME_PLIES + 1
