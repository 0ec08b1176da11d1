"""The ``train`` section: the recipe (:class:`...core.training.TrainConfig`) and where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config.training import TrainConfig
from ..executors.settings import NodeSettings
from .schedule import Scheduled


@dataclass(frozen=True)
class TrainParams(Scheduled, TrainConfig):
    """Section ``train``: :class:`~...core.training.TrainConfig` and ``node``."""

    node: NodeSettings = field(default_factory=lambda: NodeSettings(num_threads=None))
    """Device and torch threads (null: torch's default, every core: the node runs alone)."""

    SECTION = "train"
