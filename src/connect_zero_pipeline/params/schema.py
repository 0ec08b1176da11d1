"""The parameter schema: every section of ``conf/`` and the dataclass that owns its keys.

Each top-level section (``selfplay``, ``reinforce``, ...) is one frozen dataclass, defined
in a leaf module (``params/<section>.py`` or ``core``) that imports nothing of the
pipelines. Settings are composed, never copied: a search is an
:class:`~..core.config.search.MCTSConfig` wherever it runs (``selfplay.mcts``, ``evaluate.mcts``,
``ladder.mcts``, ...), and where a stage runs is a
:class:`~..executors.settings.NodeSettings` (its ``node`` key). One parser,
:func:`~..core.config.from_params`, builds any of them and names the bad key;
:func:`parse_section` finds a section's class by its dotted path, and
:func:`parse_run_params` builds every section of a run's merged parameters into one
:class:`RunParams`.

One place for each default: the dataclass field. ``conf/base`` repeats the recipe for
people to read and edit, and ``tests/test_conf.py`` fails when a value there differs from
its field's default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

from ..common.naming import RESUME_KEY
from ..core.config import field_default, from_params, unknown_key_error
from ..core.config.models import ModelSpec
from ..executors.settings import NodeSettings
from .alphazero import AlphaZeroConfig
from .baselines import BaselineMatchConfig
from .evaluate import EvaluateParams
from .export import ExportConfig
from .ladder import LadderConfig
from .pons import PonsConfig
from .reinforce import ReinforceLoopConfig
from .scorecard import ScorecardParams
from .selfplay import SelfPlayParams
from .train import TrainParams


@dataclass(frozen=True)
class RunParams:
    """A run's merged parameters, every section validated once into its dataclass (typed,
    frozen): what :func:`.run.context.plan` keeps in the run's context, so that whoever
    needs a section of the run reads it there. The fields, in the order stages run, are the
    sections (:data:`SCHEMA`), and ``resume`` the one other top-level key."""

    alphazero: AlphaZeroConfig
    model: ModelSpec
    selfplay: SelfPlayParams
    train: TrainParams
    evaluate: EvaluateParams
    export: ExportConfig
    pons: PonsConfig
    baselines: BaselineMatchConfig
    reinforce: ReinforceLoopConfig
    scorecard: ScorecardParams
    ladder: LadderConfig
    resume: str | None = None
    """The run this one resumes (:mod:`connect_zero_pipeline.run.rules`), or None."""


SCHEMA: dict[str, type] = {
    name: hint for name, hint in get_type_hints(RunParams).items() if dataclasses.is_dataclass(hint)
}
"""Every top-level parameter section and its dataclass, in the order stages run."""


def section_class(section: str) -> tuple[type, Any]:
    """The dataclass of a dotted section path (``reinforce.train``) and its default instance
    (None for a top-level section: the class defaults)."""
    top, *rest = section.split(".")
    if top not in SCHEMA:
        raise ValueError(f"unknown parameter section {section!r}; known: {sorted(SCHEMA)}")
    cls, default = SCHEMA[top], None
    for part in rest:
        default = field_default(cls, part) if default is None else getattr(default, part)
        if not dataclasses.is_dataclass(default):
            raise ValueError(f"{section!r} is not a parameter section")
        cls = type(default)
    return cls, default


def parse_section(section: str, params: Mapping[str, Any] | None) -> Any:
    """The dataclass of ``section`` (a dotted path) built from its parameter mapping.

    Raises:
        ValueError: naming ``section.key`` for an unknown key (with the nearest valid
            one) or a value a dataclass rejects.
    """
    cls, default = section_class(section)
    return from_params(cls, params, section, default)


def parse_run_params(params: Mapping[str, Any]) -> RunParams:
    """Every section of a run's merged parameters, built once into a :class:`RunParams`.

    Raises:
        ValueError: an unknown top-level section (with the nearest known one), a ``resume``
            that is not a run id, or the first bad key of any section.
    """
    top = sorted([*SCHEMA, RESUME_KEY])
    for name in params:
        if name not in top:
            raise unknown_key_error("", name, top)
    resume = params.get(RESUME_KEY)
    if resume is not None and not isinstance(resume, str):
        raise ValueError(
            f"{RESUME_KEY} must be a run id like 2026-11-23T10.26.41.512Z, got {resume!r}"
        )
    sections = {section: parse_section(section, params.get(section)) for section in SCHEMA}
    return RunParams(**sections, resume=resume)


def node_settings(value: Any) -> list[NodeSettings]:
    """Every :class:`~..executors.settings.NodeSettings` in ``value`` (a :class:`RunParams`,
    or any section): each stage's ``node`` key, nested sections' too (``reinforce.train``)."""
    if isinstance(value, NodeSettings):
        return [value]
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return []
    return [s for f in dataclasses.fields(value) for s in node_settings(getattr(value, f.name))]
