"""Where a run's per-generation outputs are, and what they say: the one reader of them.

The catalog (``conf/<env>/catalog.yml``) says where each generation's files live, through
its dataset factories (``"{gen}.model"``, ``"{gen}.{stage}_metrics"``); a versioned
entry's file of run ``<id>`` is ``<filepath>/<id>/<file name>`` (the run id is its save
version, :mod:`.manifest`). Everything that reads a run's generations after the fact reads
them here: ``curve`` (its table and ``--json``), the run's summary and
``scripts/gpu_check.py``, which watches a run's scorecards as they are written.
"""

from __future__ import annotations

import datetime
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..common.config_loader import project_config
from ..common.naming import GENERATION, generation_name, parse_step
from .manifest import known_runs, read_manifest

MODEL = "{gen}.model"
"""The catalog's entry of a generation's model (the gate's choice, or the trained one)."""
METRICS = "{gen}.{stage}_metrics"
"""The catalog's entry of a generation's metrics: ``stage`` is ``selfplay``, ``train`` or
``eval`` (the scorecard)."""


@lru_cache(maxsize=16)
def _patterns(project: Path) -> dict[str, str]:
    """The project's dataset factories' file paths, ``{entry: filepath}`` (read once)."""
    catalog = project_config(project, "catalog")
    return {name: entry["filepath"] for name, entry in catalog.items()
            if isinstance(entry, dict) and "filepath" in entry}  # fmt: skip


def entry_folder(project: Path, entry: str, generation: int, stage: str = "") -> Path:
    """The versioned folder of catalog ``entry`` (:data:`MODEL`, :data:`METRICS`) of
    ``generation`` in ``project``: its versions are ``<folder>/<run id>/<folder name>``."""
    project = Path(project).resolve()
    pattern = _patterns(project).get(entry)
    if pattern is None:
        raise KeyError(f"{project}/conf: the catalog has no entry {entry!r}")
    return project / pattern.format(gen=generation_name(generation), stage=stage)


def entry_file(project: Path, entry: str, generation: int, run_id: str, stage: str = "") -> Path:
    """Run ``run_id``'s file of ``entry`` for ``generation`` (it may not exist)."""
    folder = entry_folder(project, entry, generation, stage)
    return folder / run_id / folder.name


def generation_metrics(project: Path, generation: int, stage: str, run_id: str | None
                       ) -> dict | None:  # fmt: skip
    """Generation ``generation``'s ``<stage>`` metrics of run ``run_id`` (None: the newest
    version), or None when there is none (or it is being written)."""
    folder = entry_folder(project, METRICS, generation, stage)
    if not folder.is_dir():
        return None
    versions = sorted(p.name for p in folder.iterdir() if (p / folder.name).is_file())
    version = run_id if run_id is not None else (versions[-1] if versions else None)
    if version is None or version not in versions:
        return None
    try:
        return json.loads((folder / version / folder.name).read_text())
    except ValueError:  # a file being written (the catalog writes whole, other writers may not)
        return None


def _generations(project: Path, entry: str, stage: str = "") -> list[int]:
    """Every generation >= 1 with a folder of ``entry``, in order."""
    root = Path(project).resolve()
    parts = entry_folder(project, entry, 0, stage).relative_to(root).parts
    at = parts.index(generation_name(0))  # the folder the factory names by generation
    found = set()
    for folder in root.glob("/".join([*parts[:at], f"{GENERATION}_*", *parts[at + 1 :]])):
        step = parse_step(folder.relative_to(root).parts[at])
        if step and step[1] >= 1:
            found.add(step[1])
    return sorted(found)


def curve_generations(project: Path, run_id: str | None) -> list[int]:
    """The generations of run ``run_id`` (None: of any run) with a scorecard, in order: every
    generation of a whole run, those a partial run made (``--from-nodes``, ``--namespaces``),
    none for an export or a ladder."""
    return [k for k in _generations(project, METRICS, "eval")
            if generation_metrics(project, k, "eval", run_id) is not None]  # fmt: skip


def newest_curve_run(project: Path) -> str | None:
    """The newest run of ``project`` with a learning curve (:func:`curve_generations`), or
    None."""
    return next((r for r in reversed(known_runs(project)) if curve_generations(project, r)),
                None)  # fmt: skip


def run_started(project: Path, run_id: str | None) -> float | None:
    """When run ``run_id`` started (its manifest's ``started``), as a POSIX time."""
    if run_id is None or run_id not in known_runs(project):
        return None
    started = read_manifest(project, run_id).get("started")
    try:
        return datetime.datetime.strptime(started, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except (TypeError, ValueError):
        return None


def _written_at(path: Path, start: float | None) -> float | None:
    try:
        return round(path.stat().st_mtime - start, 1) if start is not None else None
    except OSError:
        return None


def generation_rows(project: Path, run_id: str | None, times: bool = False,
                    start: float | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """One mapping per generation of run ``run_id`` with a scorecard (and, with ``times``,
    also one with only its model so far), in order: ``generation``, the scorecard's metrics
    as they are named, the self-play and training metrics prefixed ``selfplay.`` and
    ``train.``. ``times`` adds ``model_at_s``, ``scorecard_at_s`` (when each file was
    written, seconds since ``start``, by default the run's start) and ``scorecard_lag_s``."""
    generations = set(curve_generations(project, run_id))
    if times:
        start = run_started(project, run_id) if start is None else start
        generations |= {k for k in _generations(project, MODEL)
                        if run_id is not None and entry_file(project, MODEL, k, run_id).is_file()}  # fmt: skip
    rows = []
    for k in sorted(generations):
        row: dict[str, Any] = {"generation": k}
        row.update(generation_metrics(project, k, "eval", run_id) or {})
        for stage in ("selfplay", "train"):
            metrics = generation_metrics(project, k, stage, run_id) or {}
            row.update({f"{stage}.{key}": value for key, value in metrics.items()})
        if times and run_id is not None:
            model = _written_at(entry_file(project, MODEL, k, run_id), start)
            card = _written_at(entry_file(project, METRICS, k, run_id, "eval"), start)
            lag = None if None in (model, card) else round(card - model, 1)
            row.update(model_at_s=model, scorecard_at_s=card, scorecard_lag_s=lag)
        rows.append(row)
    return rows
