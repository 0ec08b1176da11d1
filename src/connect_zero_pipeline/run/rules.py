"""What a resume may change, and what an extension writes where.

**Resume.** ``kedro run --only-missing-outputs --params resume=<id>`` (or ``make resume
RUN=<id>``) continues run ``<id>``: the same id, so its finished nodes are skipped and the
rest is written under the same version folders, and the same MLflow parent run, which ends
FINISHED. Before anything runs, :func:`check_resume` and :func:`check_attempt` check that
the id is known and not running, that the pipelines, env and parameters are the run's own
(a resumed run with other parameters would mix two recipes), and that
``--only-missing-outputs`` is given (without it, finished nodes would run again).

**Training further (an extension).** The one parameter a resume may change is
:data:`GROWABLE`, and only upwards: ``make resume RUN=<id>
PARAMS=alphazero.num_generations=40`` continues a 24-generation run to 40 in the same run.
What comes after the generations, the run's *final outputs* (:func:`final_outputs`: the
learning curves, ``latest_model``, the export), already exists at the run's id and is never
overwritten: an extension writes them at a version of its own, its session's id, recorded
in the manifest (``extended``) and read back by :func:`final_version`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..common.errors import RunRefused
from ..common.naming import GENERATION, RESUME_KEY, parse_step, pipeline_names
from ..core.config import merged
from .liveness import run_status
from .manifest import RUN_ID, manifest_path, read_manifest

GROWABLE = "alphazero.num_generations"
"""The parameter a resume may raise: the run is extended by the new generations."""


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    """Nested parameters as flat keys: ``{"train": {"lr": 1}}`` -> ``{"train.lr": 1}``."""
    if not isinstance(d, dict):
        return {prefix.rstrip("."): d}
    out: dict[str, Any] = {}
    for key, value in d.items():
        out.update(flatten(value, f"{prefix}{key}."))
    return out


def final_version(manifest: dict[str, Any]) -> str:
    """The version of a run's final outputs (:func:`final_outputs`): its id, or the version of
    its latest extension."""
    extended = manifest.get("extended") or []
    return extended[-1]["version"] if extended else manifest["run_id"]


def extension(recorded: dict[str, Any], current: dict[str, Any]) -> tuple[int, int] | None:
    """``(from, to)`` generations when ``current`` raises the run's :data:`GROWABLE` (the
    other parameters are compared by :func:`parameter_changes`), else None.

    Raises:
        ValueError: naming the values, when ``current`` lowers it.
    """
    before, now = flatten(recorded).get(GROWABLE), flatten(current).get(GROWABLE)
    if before is None or now is None or before == now:
        return None
    if now < before:
        raise ValueError(f"{GROWABLE}={now}: the run has {before} generations; a run can be "
                         f"extended (a larger value), not shortened")  # fmt: skip
    return before, now


def final_outputs(pipeline) -> set[str]:
    """The outputs made after a run's steps: those of the nodes outside every step namespace
    that depend on a step's output (learning curves, ``latest_model``, the export). An
    extended run makes them again, at its own version (:func:`final_version`)."""
    after_steps: set[str] = set()
    final: set[str] = set()
    for node in pipeline.nodes:  # topologically sorted
        if parse_step(node.namespace):
            after_steps.update(node.outputs)
        elif after_steps & set(node.inputs):
            after_steps.update(node.outputs)
            final.update(node.outputs)
    return final


def is_placement(key: str) -> bool:
    """Whether flat parameter ``key`` says where a stage runs (a ``<section>.node.<key>``:
    workers, device, compile), not what it computes: a resume may change it."""
    return "node" in key.split(".")[:-1]


def parameter_changes(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``key: recorded -> current`` for every parameter that differs (``resume`` and the
    placement keys, :func:`is_placement`, excluded)."""
    a = flatten({k: v for k, v in recorded.items() if k != RESUME_KEY})
    b = flatten({k: v for k, v in current.items() if k != RESUME_KEY})
    return [
        f"{k}: {a.get(k)!r} -> {b.get(k)!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k) and not is_placement(k)
    ]


def resume_arguments(root: Path, params: dict[str, Any], env: str | None):
    """A resume's ``--params`` and ``--env`` as ``kedro run`` should take them: the run's
    recorded parameters with the user's over them, and its recorded env when none is given.
    So ``make resume RUN=<id>`` alone continues a run started with any ``--params``, and
    ``PARAMS`` only extends it (:data:`GROWABLE`) or moves it (:func:`is_placement`); any
    other change is refused by :func:`check_resume`. Not a resume, or an id that names no
    run (refused there too): the arguments as they are."""
    resume = (params or {}).get(RESUME_KEY)
    if not isinstance(resume, str) or not RUN_ID.match(resume):
        return params, env
    path = manifest_path(root, resume)
    if not path.is_file():
        return params, env
    manifest = json.loads(path.read_text())
    recorded = {k: v for k, v in (manifest.get("params") or {}).items() if k != RESUME_KEY}
    return merged(recorded, params), env or manifest.get("env")


def check_resume(root: Path, params: dict[str, Any], env: str | None):
    """``(the resumed run's manifest, its extension)`` for parameters with ``resume=<id>``;
    ``(None, None)`` without one.

    Raises:
        ValueError: naming the id, for an unknown or running run, other parameters (but
            :data:`GROWABLE` raised or a placement key) or another env.
    """
    resume = params.get(RESUME_KEY)
    if resume is None:
        return None, None
    manifest = read_manifest(root, resume)
    if run_status(manifest) == "running":
        raise ValueError(
            f"resume={resume!r}: that run is still running (pid {manifest.get('pid')} on "
            f"{manifest.get('host')}); wait for it or stop it first"
        )
    recorded = manifest.get("params") or {}
    extended = extension(recorded, params)
    changes = [c for c in parameter_changes(recorded, params)
               if extended is None or not c.startswith(f"{GROWABLE}:")]  # fmt: skip
    if changes:
        raise ValueError(
            f"resume={resume!r}: a resume keeps the run's parameters (make resume "
            f"RUN={resume} uses them); it may only raise {GROWABLE} or change where a "
            f"stage runs (*.node.*). Changed: {'; '.join(changes[:10])}"
        )
    if (manifest.get("env") or None) != (env or None):

        def words(name: str | None) -> str:
            return f"--env {name}" if name else "no --env (conf/base and local)"

        raise ValueError(f"resume={resume!r}: that run used {words(manifest.get('env'))}, this "
                         f"one {words(env)}: resume it as it ran (make resume RUN={resume} "
                         "takes its env from its record)")  # fmt: skip
    return manifest, extended


def check_attempt(resumed: dict[str, Any] | None, extended, run_params: dict, pipeline) -> None:
    """What only the run's own arguments tell: a resume needs ``--only-missing-outputs`` and
    its own pipelines, and an extension a pipeline with generations.

    Raises:
        RunRefused: saying what to run instead.
    """
    names = pipeline_names(run_params.get("pipeline_names"))
    if resumed is None:
        return
    run_id = resumed["run_id"]
    if not run_params.get("only_missing_outputs"):
        raise RunRefused(
            f"resume={run_id!r} needs --only-missing-outputs (finished nodes would run "
            f"again): kedro run --only-missing-outputs --params resume={run_id}, "
            f"or make resume RUN={run_id}"
        )
    if pipeline_names(resumed.get("pipelines")) != names:
        raise RunRefused(
            f"resume={run_id!r}: that run ran pipelines {pipeline_names(resumed.get('pipelines'))}, this one "
            f"{names}"
        )
    steps = {(parse_step(n.namespace) or ("",))[0] for n in pipeline.nodes}
    if extended is not None and GENERATION not in steps:
        raise RunRefused(f"{GROWABLE}: run {run_id} ran pipelines {names}, which have no "
                         "generations to extend")  # fmt: skip
