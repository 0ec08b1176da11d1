"""``RunContext``: one run, as its session starts it, handed to whatever needs it.

:func:`plan` builds it once, before anything is written, from the session's merged
parameters: it validates them (:mod:`..params.schema`), checks a
resume (:func:`.rules.check_resume`) and resolves the start point (:mod:`.start`). Any
problem is a :class:`..errors.RunRefused` naming the bad value. Its ``params`` are read
only (:func:`freeze`) and its fields cannot be reassigned (a frozen dataclass); the dicts it
holds (``resumed``, ``start``, ``ladder``, ``manifest``) are plain: ``manifest`` is the
run-life hook's own record of the manifest, which the hook updates as it writes it (its
status and its end). :func:`advance`, the one function that moves a run on, makes the next
context, stage by stage (:data:`STAGES`: planned, claimed,
pinned, opened, then finished or failed); the run-life hook (:class:`.hook.RunLife`) calls
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
from ..params.schema import parse_section, validate_params
from .ladder import ladder_plan
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
    """The merged parameters (base, env, ``--params``), read only (:func:`freeze`)."""
    resumed: dict[str, Any] | None = None
    """The manifest of the run this one resumes, as it was before."""
    extension: tuple[int, int] | None = None
    """``(from, to)`` generations when this resume extends the run."""
    start: dict[str, Any] = field(default_factory=dict)
    """The catalog entry ``start_point`` (:mod:`.start`); ``{}`` without one."""
    ladder: dict[str, Any] = field(default_factory=dict)
    """The catalog entry ``ladder_plan`` (:mod:`.ladder`); ``{}`` for a run with no ladder."""
    manifest: dict[str, Any] | None = None
    """The manifest as this attempt wrote it at its start (None before)."""
    mlflow_parent: str | None = None
    """The MLflow parent run (a resume's from its manifest; a new run's once opened)."""
    stage: str = "planned"
    """Where the run is (:data:`STAGES`)."""

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
        validate_params(params)  # an unknown key or a bad value stops the run here
        resumed, extension = check_resume(root, params, env)
        spec = parse_section("model", params.get("model"))
        window = parse_section("train", params.get("train")).buffer_gens - 1
        start = start_point(root, spec.start_from, window if spec.start_window else 0,
                            (resumed or {}).get("start_from"), env)  # fmt: skip
        ladder = ladder_plan(root, params) if "ladder" in (pipelines or []) else {}
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
        resumed=resumed,
        extension=extension,
        start=start,
        ladder=ladder,
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
