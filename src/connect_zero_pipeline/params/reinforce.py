"""The ``reinforce`` section: the loop's length, the initial policy, training and evaluation."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import check_loop_length
from ..core.config.models import ReinforceModelSpec
from ..core.config.reinforce import ReinforceConfig, ReinforceEvalConfig
from ..executors.settings import NodeSettings


@dataclass(frozen=True)
class ReinforceTrainParams(ReinforceConfig):
    """Section ``reinforce.train``: :class:`~...core.reinforce.ReinforceConfig` and ``node``."""

    node: NodeSettings = field(default_factory=NodeSettings)
    """Device and torch threads (1 is fastest for small batches on a shared CPU)."""


@dataclass(frozen=True)
class ReinforceEvalParams(ReinforceEvalConfig):
    """Section ``reinforce.evaluate``: :class:`~...core.reinforce.ReinforceEvalConfig` and ``node``."""

    node: NodeSettings = field(default_factory=NodeSettings)
    """Device and torch threads."""


@dataclass(frozen=True)
class ReinforceLoopConfig:
    """Section ``reinforce``: the chunk loop and its three stages."""

    num_chunks: int = 8
    """Chunks of training, each a checkpoint and an evaluation (structural: unrolled)."""
    model: ReinforceModelSpec = field(default_factory=ReinforceModelSpec)
    """Chunk 0: the policy to start from."""
    train: ReinforceTrainParams = field(default_factory=ReinforceTrainParams)
    """The policy-gradient training of each chunk."""
    evaluate: ReinforceEvalParams = field(default_factory=ReinforceEvalParams)
    """Each chunk's evaluation."""

    def __post_init__(self):
        check_loop_length("num_chunks", self.num_chunks)
