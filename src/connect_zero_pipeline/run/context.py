"""``RunContext``: one run, as its session starts it, handed to whatever needs it.

:func:`plan` builds it once, before anything is written, from the session's merged
parameters: it validates them (:mod:`..params.schema`), checks a
resume (:func:`.rules.check_resume`) and resolves the start point (:mod:`.start`). Any
problem is a :class:`..errors.RunRefused` naming the bad value. The run-life hook
(:class:`.hook.RunLife`) then claims the run's id and writes its manifest, and replaces
the context with one that holds them (and, once kedro-mlflow opened it, the MLflow
parent); the context itself never changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RunRefused
from .rules import check_resume, final_version
from .start import recorded, start_point


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
    params: dict[str, Any]
    """The merged parameters (base, env, ``--params``)."""
    resumed: dict[str, Any] | None = None
    """The manifest of the run this one resumes, as it was before."""
    extension: tuple[int, int] | None = None
    """``(from, to)`` generations when this resume extends the run."""
    start: dict[str, Any] = field(default_factory=dict)
    """The catalog entry ``start_point`` (:mod:`.start`); ``{}`` without one."""
    manifest: dict[str, Any] | None = None
    """The manifest as this attempt wrote it at its start (None before)."""
    mlflow_parent: str | None = None
    """The MLflow parent run (a resume's from its manifest; a new run's once opened)."""

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


def plan(root: Path, params: dict[str, Any], env: str | None, attempt: str) -> RunContext:
    """The context of a run of ``params`` in the project at ``root``, checked before any work.

    Raises:
        RunRefused: naming the bad value: a parameter, a resume that cannot work, a start
            point that is not there.
    """
    from ..params.schema import parse_section, validate_params

    try:
        validate_params(params)  # an unknown key or a bad value stops the run here
        resumed, extension = check_resume(root, params, env)
        spec = parse_section("model", params.get("model"))
        window = parse_section("train", params.get("train")).buffer_gens - 1
        start = start_point(root, spec.start_from, window if spec.start_window else 0,
                            (resumed or {}).get("start_from"))  # fmt: skip
    except RunRefused:
        raise
    except ValueError as exc:
        raise RunRefused(str(exc)) from exc
    return RunContext(
        root=Path(root),
        run_id=resumed["run_id"] if resumed else attempt,
        attempt=attempt,
        env=env,
        params=dict(params),
        resumed=resumed,
        extension=extension,
        start=start,
        mlflow_parent=(resumed or {}).get("mlflow_run_id"),
    )
