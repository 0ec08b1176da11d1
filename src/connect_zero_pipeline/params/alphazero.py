"""The ``alphazero`` section: the loop's length (structural: it shapes the unrolled DAG)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.config import check_loop_length


@dataclass(frozen=True)
class AlphaZeroConfig:
    """The AlphaZero loop (section ``alphazero``)."""

    num_generations: int = 24
    """Generations of self-play -> train -> evaluate (structural: unrolled into the DAG)."""

    def __post_init__(self):
        check_loop_length("num_generations", self.num_generations)
