"""The ``evaluate`` section: the recipe (:class:`...core.evaluation.EvaluateConfig`) and where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config.evaluation import EvaluateConfig
from ..executors.settings import NodeSettings


@dataclass(frozen=True)
class EvaluateParams(EvaluateConfig):
    """Section ``evaluate``: :class:`~...core.evaluation.EvaluateConfig` and ``node``."""

    node: NodeSettings = field(default_factory=lambda: NodeSettings(num_threads=None))
    """Device, the searches' backend, and onnxruntime threads of the MCTS agents (null: one
    per core; the node runs alone). The figures do not depend on it."""
