"""The ``alphazero`` section: the loop's length (structural: it shapes the unrolled DAG) and
whether its independent nodes run at once."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.config import check, check_loop_length


@dataclass(frozen=True)
class AlphaZeroConfig:
    """The AlphaZero loop (section ``alphazero``)."""

    num_generations: int = 24
    """Generations of self-play -> train -> evaluate (structural: unrolled into the DAG)."""
    overlap: bool = False
    """Run the nodes that do not depend on each other at once (:class:`...runner.OverlapRunner`,
    threads): a generation's scorecard beside the next generation's self-play. Where the run's
    runner comes from when ``kedro run`` names no ``--runner``; the results are the same."""

    def __post_init__(self):
        check_loop_length("num_generations", self.num_generations)
        check(isinstance(self.overlap, bool), "overlap", self.overlap, "true or false")
