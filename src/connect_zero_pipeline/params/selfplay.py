"""The ``selfplay`` and ``model`` sections: the recipe (:mod:`...core.selfplay`) and where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.config.selfplay import SelfPlayConfig
from ..executors.settings import NodeSettings
from .schedule import at_generation, check_phases, normalise


@dataclass(frozen=True)
class SelfPlayParams(SelfPlayConfig):
    """Section ``selfplay``: :class:`~...core.selfplay.SelfPlayConfig` (with its ``mcts``
    search) and ``node``, where the games are played (never what they are)."""

    node: NodeSettings = field(default_factory=NodeSettings)
    """Device, threads, backend and executor (:class:`~...executors.settings.NodeSettings`)."""
    schedule: dict[int, dict[str, Any]] = field(default_factory=dict)
    """From generation ``k`` on, the keys a phase names take its values (``{13: {...}}``;
    :mod:`.schedule`): the recipe along the run. Empty: every generation runs the section."""

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "schedule", normalise(self.schedule, "selfplay"))
        check_phases(self, "selfplay")

    def at(self, generation: int) -> SelfPlayParams:
        """The section as generation ``generation`` runs it (its schedule applied)."""
        return at_generation(self, generation, "selfplay")
