"""The shape of the unrolled REINFORCE DAG: ``reinforce.num_chunks``."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.config import check
from ..structure import section


@dataclass(frozen=True)
class ReinforceLoopConfig:
    """The REINFORCE loop (section ``reinforce``; its subsections have their own configs)."""

    num_chunks: int = 8
    """Chunks of training, each a checkpoint and an evaluation (structural: unrolled)."""

    def __post_init__(self):
        n = self.num_chunks
        check(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 999,
            "num_chunks",
            n,
            "an integer in [1, 999]",
        )


def num_chunks() -> int:
    """``reinforce.num_chunks`` of the run being built, validated."""
    (loop,) = section("reinforce")
    return loop.num_chunks
