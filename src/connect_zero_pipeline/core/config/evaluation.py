"""A generation's evaluation settings (:class:`EvaluateConfig`): its matches and sets."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import check, is_int
from .search import MCTSConfig

PLY_BUCKETS = {"begin": (0, 14), "middle": (15, 28), "end": (29, 42)}
"""Stone-count classes of Pons' benchmark sets (beginning, middle, end), inclusive ranges."""
STRENGTH_BUCKETS = {"ply00_06": (0, 6), "ply07_12": (7, 12), "ply13_20": (13, 20),
                    "ply21_42": (21, 42)}  # fmt: skip
"""Where an agent is weak, by ply, inclusive ranges: the opening (plies 0-6, beyond any
search's horizon from the result) first. The shipped solver set has 2,227 / 5,236 / 4,745 /
3,599 positions in them."""
BUCKETS = {**PLY_BUCKETS, **STRENGTH_BUCKETS}
"""Every ply bucket a solver-set metric is split by."""


@dataclass(frozen=True)
class PreviousMatch:
    """The match of the new model against the previous generation's (both MCTS agents)."""

    num_games: int = 100
    """Games, colours alternating."""
    opening_plies: int = 2
    """Random moves that open every game (the agents are deterministic: without them the
    match would repeat the same two games)."""
    mcts: MCTSConfig = field(default_factory=lambda: MCTSConfig(sims=16))
    """Both agents' search."""

    def __post_init__(self):
        check(is_int(self.num_games) and self.num_games >= 2, "num_games", self.num_games,
              "an integer >= 2")  # fmt: skip
        check(is_int(self.opening_plies) and 0 <= self.opening_plies <= 8, "opening_plies",
              self.opening_plies, "an integer in [0, 8]")  # fmt: skip


@dataclass(frozen=True)
class PublicSets:
    """The public position sets (catalog entry ``pons_benchmarks``) scored every generation."""

    sims: list = field(default_factory=lambda: [32])
    """Simulations of the MCTS agents scored (with the network alone, always), each with
    the search of ``evaluate.mcts``."""

    def __post_init__(self):
        check(isinstance(self.sims, (list, tuple)) and all(is_int(n) and n >= 1
              for n in self.sims), "sims", self.sims, "a list of integers >= 1")  # fmt: skip


@dataclass(frozen=True)
class EvaluateConfig:
    """A generation's evaluation (section ``evaluate``): the recipe of its metrics."""

    num_games: int = 200
    """Games against RandomPunisher, of the network alone and of the MCTS agent (the
    default's 200 give its win rates about +-3 points; ``conf/quick`` plays 20)."""
    mcts: MCTSConfig = field(default_factory=lambda: MCTSConfig(sims=32))
    """The MCTS agent's search (no noise: PUCT plays the most visited move, Gumbel its
    Sequential Halving survivor)."""
    previous: PreviousMatch = field(default_factory=PreviousMatch)
    """The match against the previous generation."""
    benchmark: PublicSets = field(default_factory=PublicSets)
    """The public position sets' agents."""
    gating: bool = False
    """Keep the previous model unless the new one scores ``gate_threshold`` against it."""
    gate_threshold: float = 0.55
    """Score (wins + draws/2) the new model needs against the previous one to replace it."""
    seed: int = 0
    """Seeds the matches (mixed with the generation number)."""
    full_every: int = 12
    """The games and searches of the scorecard (against RandomPunisher and the previous
    generation, the MCTS agents on the public sets) run every ``full_every`` generations and
    at the run's last (:func:`full_scorecard`); every generation scores the network alone on
    the solver set (``solver.*``, the learning curve: about 2 s against a full scorecard's
    18-20 s on a 2-core CPU). 12, the default: generations 12 and 24 of the default run, the
    scorecard 4.7% of its wall time (docs/results.md); 1: every generation in full."""

    def __post_init__(self):
        check(is_int(self.num_games) and self.num_games >= 2, "num_games", self.num_games,
              "an integer >= 2 (both colours, seeded)")  # fmt: skip
        check(is_int(self.full_every) and self.full_every >= 1, "full_every", self.full_every,
              "an integer >= 1 (1: every generation's scorecard in full)")  # fmt: skip
        check(isinstance(self.gating, bool), "gating", self.gating, "true or false")
        check(0 <= self.gate_threshold <= 1, "gate_threshold", self.gate_threshold, "in [0, 1]")


def full_scorecard(config: EvaluateConfig, generation: int, last: int) -> bool:
    """Whether generation ``generation`` of a run of ``last`` generations gets the full
    scorecard: every ``config.full_every``-th and the last (the one a run's summary, export
    and registry describe)."""
    return generation % config.full_every == 0 or generation >= last
