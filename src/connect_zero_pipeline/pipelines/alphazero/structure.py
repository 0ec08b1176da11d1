"""The shape of the unrolled AlphaZero DAG: ``alphazero.num_generations`` and the replay window.

The loop is unrolled when the registry builds the pipelines (see
:mod:`..structure`): ``num_generations`` generations, each training on the
last ``train.buffer_gens`` generations of games (a field of
:class:`~connect_zero_pipeline.core.training.TrainConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.config import check_loop_length
from ..structure import section


@dataclass(frozen=True)
class AlphaZeroConfig:
    """The AlphaZero loop (section ``alphazero``)."""

    num_generations: int = 24
    """Generations of self-play -> train -> evaluate (structural: unrolled into the DAG)."""

    def __post_init__(self):
        check_loop_length("num_generations", self.num_generations)


def structure() -> tuple[int, int]:
    """``(num_generations, buffer_gens)`` of the run being built, validated."""
    (loop,) = section("alphazero")
    (train,) = section("train")
    return loop.num_generations, train.buffer_gens
