"""The ``scorecard`` section: which checkpoints, the recipe (:mod:`...core.scorecard`), where."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..common.naming import ALGORITHMS
from ..core.config import check
from ..core.config.scorecard import ScorecardConfig
from ..executors.settings import NodeSettings


@dataclass(frozen=True)
class ScorecardParams(ScorecardConfig):
    """Section ``scorecard``: the checkpoints it measures, :class:`~...core.scorecard.ScorecardConfig`
    and ``node``."""

    reinforce: str | None = None
    """A chunk like ``rf_004``; null: the highest ``rf_XXX`` on disk, latest version."""
    alphazero: str | None = None
    """A generation like ``gen_008``; null: the highest ``gen_XXX`` (XXX >= 1)."""
    node: NodeSettings = field(default_factory=NodeSettings)
    """Device and torch threads."""

    def __post_init__(self):
        super().__post_init__()
        for kind, label in ALGORITHMS.items():
            value = getattr(self, label)
            check(value is None or (isinstance(value, str) and value.startswith(f"{kind}_")),
                  label, value, f"null or a name like {kind}_004")  # fmt: skip
