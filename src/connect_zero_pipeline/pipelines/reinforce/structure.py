"""The shape of the unrolled REINFORCE DAG: ``reinforce.num_chunks``."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.config import check_loop_length
from ..structure import section


@dataclass(frozen=True)
class ReinforceLoopConfig:
    """The REINFORCE loop (section ``reinforce``; its subsections have their own configs)."""

    num_chunks: int = 8
    """Chunks of training, each a checkpoint and an evaluation (structural: unrolled)."""

    def __post_init__(self):
        check_loop_length("num_chunks", self.num_chunks)


def num_chunks() -> int:
    """``reinforce.num_chunks`` of the run being built, validated."""
    (loop,) = section("reinforce")
    return loop.num_chunks
