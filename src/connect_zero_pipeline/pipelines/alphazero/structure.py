"""The shape of the unrolled AlphaZero DAG: ``alphazero.num_generations``, the replay window
and the gate.

The loop is unrolled when the registry builds the pipelines (see
:mod:`..structure`): ``num_generations`` generations, each training on the
last ``train.buffer_gens`` generations of games (a field of
:class:`~connect_zero_pipeline.core.training.TrainConfig`), with a ``gate`` node on the
loop's path when ``evaluate.gating`` is on.
"""

from __future__ import annotations

from ..structure import section


def structure() -> tuple[int, int, bool]:
    """``(num_generations, buffer_gens, gating)`` of the run being built, validated."""
    return (section("alphazero").num_generations, section("train").buffer_gens,
            section("evaluate").gating)  # fmt: skip
