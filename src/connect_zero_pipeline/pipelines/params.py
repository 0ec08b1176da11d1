"""The parameter schema: every section of ``conf/`` and the dataclasses that own its keys.

One validator serves every config. A section (``selfplay``, ``reinforce.train``,
...) is owned by one or more frozen dataclasses: the core config of its stage
and, next to it, node-level settings that do not change results (``device``,
``num_threads``, the executor's keys). :func:`parse_section` splits a section's
keys among its dataclasses and builds them, so an unknown key, a bad type or
a bad value fails with a message that names the key; :func:`validate_params`
does this for every section of a run's merged parameters.

One place for each default: the dataclass field. ``conf/base`` repeats the
recipe for people to read and edit, and ``tests/test_conf.py`` fails when a
value there differs from its field's default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..core.config import NodeSettings, from_params, unknown_key_error

# ---------------------------------------------------------------------------
# The schema
# ---------------------------------------------------------------------------


def _schema() -> dict[str, tuple[type, ...]]:
    """Section path -> the dataclasses that own its keys (imported lazily: no cycles)."""
    from ..core.models import ModelSpec, ReinforceModelSpec
    from ..core.reinforce import ReinforceConfig, ReinforceEvalConfig
    from ..core.scorecard import ScorecardConfig
    from ..core.selfplay import SelfPlayConfig
    from ..core.training import TrainConfig
    from ..executors import ExecutorSettings, SelfPlayNodeSettings
    from .alphazero.structure import AlphaZeroConfig
    from .baselines.nodes import BaselineMatchConfig
    from .evaluate.nodes import EvaluateConfig
    from .export.nodes import ExportConfig
    from .ladder.nodes import LadderConfig
    from .pons.nodes import PonsConfig
    from .reinforce.structure import ReinforceLoopConfig
    from .scorecard.nodes import ScorecardSelection

    return {
        "alphazero": (AlphaZeroConfig,),
        "model": (ModelSpec,),
        "selfplay": (SelfPlayConfig, SelfPlayNodeSettings, ExecutorSettings),
        "train": (TrainConfig,),
        "evaluate": (EvaluateConfig,),
        "export": (ExportConfig,),
        "pons": (PonsConfig,),
        "baselines": (BaselineMatchConfig,),
        "reinforce": (ReinforceLoopConfig,),
        "reinforce.model": (ReinforceModelSpec,),
        "reinforce.train": (ReinforceConfig, NodeSettings),
        "reinforce.evaluate": (ReinforceEvalConfig, NodeSettings),
        "scorecard": (ScorecardConfig, ScorecardSelection, NodeSettings),
        "ladder": (LadderConfig,),
    }


def schema() -> dict[str, tuple[type, ...]]:
    """Every parameter section and its dataclasses, in the order stages run."""
    return _schema()


def _subsections(section: str, all_sections) -> set[str]:
    prefix = section + "."
    return {
        s[len(prefix) :]
        for s in all_sections
        if s.startswith(prefix) and "." not in s[len(prefix) :]
    }


def _fields(classes: tuple[type, ...]) -> list[str]:
    return [f.name for cls in classes for f in dataclasses.fields(cls)]


def parse_section(section: str, params: Mapping[str, Any] | None) -> tuple:
    """Build the dataclasses of ``section`` from its parameter mapping.

    Keys go to the dataclass that has the field; missing keys take the field
    defaults. Subsections (``reinforce.train`` inside ``reinforce``) are left
    to their own call.

    Returns:
        One instance per dataclass of the section, in :func:`schema` order.

    Raises:
        ValueError: naming ``section.key`` for an unknown key (with the nearest
            valid one) or a value a dataclass rejects.
    """
    sections = _schema()
    if section not in sections:
        raise ValueError(f"unknown parameter section {section!r}; known: {sorted(sections)}")
    if params is not None and not isinstance(params, Mapping):
        raise ValueError(f"parameters '{section}' must be a mapping, got {type(params).__name__}")
    classes = sections[section]
    rest = dict(params or {})
    for sub in _subsections(section, sections):
        rest.pop(sub, None)
    valid = _fields(classes) + sorted(_subsections(section, sections))
    for key in rest:
        if key not in valid:
            raise unknown_key_error(section, key, valid)
    out = []
    for cls in classes:
        names = {f.name for f in dataclasses.fields(cls)}
        out.append(from_params(cls, {k: v for k, v in rest.items() if k in names}, section))
    return tuple(out)


def validate_params(params: Mapping[str, Any]) -> dict[str, tuple]:
    """Build every section's dataclasses from a run's merged parameters.

    Besides the sections, one top-level key is known: ``resume`` (a run id,
    see :mod:`connect_zero_pipeline.runs`).

    Returns:
        Section path -> :func:`parse_section` result, for every section in the schema.

    Raises:
        ValueError: an unknown top-level section (with the nearest known one),
            or the first bad key of any section.
    """
    from ..runs import RESUME_KEY

    sections = _schema()
    top = sorted({s.split(".")[0] for s in sections} | {RESUME_KEY})
    for name in params:
        if name not in top:
            raise unknown_key_error("", name, top)
    resume = params.get(RESUME_KEY)
    if resume is not None and not isinstance(resume, str):
        raise ValueError(
            f"{RESUME_KEY} must be a run id like 2026-11-23T10.26.41.512Z, got {resume!r}"
        )
    out = {}
    for section in sections:
        node: Any = params
        for part in section.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        out[section] = parse_section(section, node)
    return out


def section_defaults(section: str) -> dict[str, Any]:
    """The default of every key of ``section`` (the recipe), from its dataclasses."""
    out: dict[str, Any] = {}
    for cls in _schema()[section]:
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
    return out
