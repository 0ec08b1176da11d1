"""The ``selfplay`` and ``model`` sections: the recipe (:mod:`...core.selfplay`) and where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config.selfplay import SelfPlayConfig
from ..executors.settings import NodeSettings
from .schedule import Scheduled


@dataclass(frozen=True)
class SelfPlayParams(Scheduled, SelfPlayConfig):
    """Section ``selfplay``: :class:`~...core.selfplay.SelfPlayConfig` (with its ``mcts``
    search) and ``node``, where the games are played (never what they are)."""

    node: NodeSettings = field(default_factory=NodeSettings)
    """Device, threads, backend and executor (:class:`~...executors.settings.NodeSettings`)."""

    SECTION = "selfplay"
