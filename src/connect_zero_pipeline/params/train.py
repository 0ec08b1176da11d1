"""The ``train`` section: the recipe (:class:`...core.training.TrainConfig`) and where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.config.training import TrainConfig
from ..executors.settings import NodeSettings
from .schedule import at_generation, check_phases, normalise


@dataclass(frozen=True)
class TrainParams(TrainConfig):
    """Section ``train``: :class:`~...core.training.TrainConfig` and ``node``."""

    node: NodeSettings = field(default_factory=lambda: NodeSettings(num_threads=None))
    """Device and torch threads (null: torch's default, every core: the node runs alone)."""
    schedule: dict[int, dict[str, Any]] = field(default_factory=dict)
    """From generation ``k`` on, the keys a phase names take its values (``{13: {...}}``;
    :mod:`.schedule`): the recipe along the run. Empty: every generation runs the section."""

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "schedule", normalise(self.schedule, "train"))
        check_phases(self, "train")

    def at(self, generation: int) -> TrainParams:
        """The section as generation ``generation`` runs it (its schedule applied)."""
        return at_generation(self, generation, "train")
