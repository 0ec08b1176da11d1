"""``RunContext``: one run, as its session starts it, handed to whatever needs it.

:func:`plan` builds it once, before anything is written, from the session's merged
parameters: it validates them (:mod:`..params.schema`), checks a
resume (:func:`.rules.check_resume`) and resolves the start point (:mod:`.start`). Any
problem is a :class:`..common.errors.RunRefused` naming the bad value. Its ``params`` are read
only (:func:`freeze`) and its fields cannot be reassigned (a frozen dataclass); the dicts it
holds (``resumed``, ``start``, ``ladder``, ``manifest``) are plain: ``manifest`` is the
run-life hook's own record of the manifest, which the hook updates as it writes it (its
status and its end). :func:`advance`, the one function that moves a run on, makes the next
context, stage by stage (:data:`STAGES`: planned, claimed,
pinned, opened, then finished or failed); the run-life hook (:class:`..session.run_life.RunLife`) calls
it as it claims the run's id, writes its manifest, pins its versions and records the
MLflow parent and the end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..common.errors import RunRefused
from ..common.project import folder_in
from ..params.schema import RunParams, parse_run_params
from .ladder_plan import ladder_plan
from .rules import check_resume, final_version
from .start import recorded, start_point

STAGES = ("planned", "claimed", "pinned", "opened", "finished", "failed")
"""A run's stages, in order (``opened``: its MLflow parent exists; the last two end it)."""


def freeze(value: Any) -> Any:
    """``value`` with every mapping in it read only (a ``MappingProxyType`` of a copy)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    return value


def thaw(value: Any) -> Any:
    """A plain, writable copy of a :func:`freeze`-d value (a manifest writes it as JSON)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class RunContext:
    """One run: who it is, what it runs with, where it started and where it records."""

    root: Path
    """The project's root."""
    run_id: str
    """The run's id: its outputs' version (a resumed run's own id)."""
    attempt: str
    """This session's id: an extension's final outputs are written at this version."""
    env: str | None
    params: Mapping[str, Any]
    """The merged parameters (base, env, ``--params``) as given, read only (:func:`freeze`):
    what the manifest records and a resume compares."""
    sections: RunParams = None  # type: ignore[assignment]  # made from params when not given
    """The same parameters validated once, every section its frozen dataclass: what whoever
    needs a section of the run reads (:func:`plan` passes what it validated; otherwise it is
    made from ``params``)."""
    resumed: dict[str, Any] | None = None
    """The manifest of the run this one resumes, as it was before."""
    extension: tuple[int, int] | None = None
    """``(from, to)`` generations when this resume extends the run."""
    start: dict[str, Any] = field(default_factory=dict)
    """The catalog entry ``start_point`` (:mod:`.start`); ``{}`` without one."""
    ladder: dict[str, Any] = field(default_factory=dict)
    """The catalog entry ``ladder_plan`` (:mod:`.ladder_plan`); ``{}`` for a run with no ladder."""
    solver_cache: str | None = None
    """The catalog entry ``solver_cache``: ``pons.cache_dir`` resolved in the project (an
    absolute path stays), None for no cache."""
    manifest: dict[str, Any] | None = None
    """The manifest as this attempt wrote it at its start (None before)."""
    mlflow_parent: str | None = None
    """The MLflow parent run (a resume's from its manifest; a new run's once opened)."""
    stage: str = "planned"
    """Where the run is (:data:`STAGES`)."""

    def __post_init__(self) -> None:
        if self.sections is None:
            object.__setattr__(self, "sections", parse_run_params(self.params))

    @property
    def is_resume(self) -> bool:
        return self.resumed is not None

    @property
    def final_version(self) -> str:
        """The version of the run's final outputs (:func:`.rules.final_version`)."""
        if self.manifest is not None:
            return final_version(self.manifest)
        if self.extension is not None:
            return self.attempt
        return final_version(self.resumed) if self.resumed is not None else self.run_id

    @property
    def start_from(self) -> dict[str, Any] | None:
        """What the manifest records of the start point (:func:`.start.recorded`)."""
        return recorded(self.start)


def plan(root: Path, params: dict[str, Any], env: str | None, attempt: str,
         pipelines: list[str] | None = None) -> RunContext:  # fmt: skip
    """The context of a run of ``params`` in the project at ``root``, checked before any work
    (``pipelines``: the run's; a ladder's players are planned when it runs the ladder).

    Raises:
        RunRefused: naming the bad value: a parameter, a resume that cannot work, a start
            point that is not there.
    """

    try:
        sections = parse_run_params(params)  # an unknown key or a bad value stops the run here
        resumed, extension = check_resume(root, params, env)
        spec, window = sections.model, sections.train.at(1).buffer_gens - 1  # generation 1's
        start = start_point(root, spec.start_from, window if spec.start_window else 0,
                            (resumed or {}).get("start_from"), env)  # fmt: skip
        solver_cache = folder_in(root, sections.pons.cache_dir)
        ladder = (ladder_plan(root, sections, solver_cache) if "ladder" in (pipelines or [])
                  else {})  # fmt: skip
    except RunRefused:
        raise
    except ValueError as exc:
        raise RunRefused(str(exc)) from exc
    return RunContext(
        root=Path(root),
        run_id=resumed["run_id"] if resumed else attempt,
        attempt=attempt,
        env=env,
        params=freeze(params),
        sections=sections,
        resumed=resumed,
        extension=extension,
        start=start,
        ladder=ladder,
        solver_cache=solver_cache,
        mlflow_parent=(resumed or {}).get("mlflow_run_id"),
    )


def advance(run: RunContext, stage: str, **changes: Any) -> RunContext:
    """The run at ``stage``, with ``changes`` (its id, manifest, MLflow parent): a new
    context; the one way a run moves on. ``stage`` is the run's own or a later one, and an
    ended run (finished, failed) moves no more.

    Raises:
        ValueError: a stage that is not one of :data:`STAGES`, or one the run has passed.
    """
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    if run.stage in STAGES[-2:] or STAGES.index(stage) < STAGES.index(run.stage):
        raise ValueError(f"run {run.run_id} is {run.stage}: it cannot be {stage} now")
    return dataclasses.replace(run, stage=stage, **changes)
