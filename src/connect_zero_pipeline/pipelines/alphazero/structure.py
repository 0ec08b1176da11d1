"""The shape of the unrolled AlphaZero DAG: ``alphazero.num_generations`` and the replay window.

The loop is unrolled when the registry builds the pipelines (see
:mod:`..structure`): ``num_generations`` generations, each training on the
last ``train.buffer_gens`` generations of games (a field of
:class:`~connect_zero_pipeline.core.training.TrainConfig`).
"""

from __future__ import annotations

from ..structure import section


def structure() -> tuple[int, int]:
    """``(num_generations, buffer_gens)`` of the run being built, validated."""
    return section("alphazero").num_generations, section("train").buffer_gens
