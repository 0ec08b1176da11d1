"""Run ids and manifests: ``data/runs/<id>.json``, one per run, the record of its life.

**The id.** Every run has one: its session's save version (``2026-11-23T10.26.41.512Z``),
the folder name every versioned output of the run is written under. Two runs started in
the same millisecond cannot share it: the manifest is claimed exclusively
(:func:`claim_manifest`), and a taken id moves on by a millisecond.

**The manifest.** At its start a run writes the pipelines, the env, the merged parameters,
the MLflow parent run, where it started from, the process (host, pid and its start time)
and a status: ``running``, then ``finished`` or ``failed`` with the error's one line
(:mod:`..session.run_life`). Every write is atomic (:func:`.core.files.atomic_path`).
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..common.naming import DEFAULT_PIPELINE, pipeline_names
from ..core.files import atomic_path, staging_path

RUN_ID = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}\.\d{3}Z$")
"""A run id: Kedro's save-version timestamp."""
_ID_FORMAT = "%Y-%m-%dT%H.%M.%S.%fZ"  # strptime reads the 3 digits of a run id as ms
MANIFESTS = Path("data") / "runs"
"""Where run manifests live, relative to the project root."""


def manifest_path(root: Path, run_id: str) -> Path:
    return Path(root) / MANIFESTS / f"{run_id}.json"


def known_runs(root: Path) -> list[str]:
    """Ids of the runs with a manifest, oldest first."""
    folder = Path(root) / MANIFESTS
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def check_known(root: Path, run_id: str, key: str) -> None:
    """Refuse a run id with no manifest in the project at ``root``, naming ``key``, the
    newest runs and how to list them all.

    Raises:
        ValueError: for an unknown ``run_id``.
    """
    runs = known_runs(root)
    if run_id not in runs:
        raise ValueError(f"{key}={run_id!r}: no such run in this project; known runs: "
                         f"{runs[-5:]} (python -m connect_zero_pipeline runs)")  # fmt: skip


def newest_version(folder: Path) -> Path | None:
    """The newest ``<version>/<name>`` file of a versioned dataset folder ``.../<name>``."""
    if not folder.is_dir():
        return None
    versions = sorted(p / folder.name for p in folder.iterdir() if (p / folder.name).exists())
    return versions[-1] if versions else None


def read_manifest(root: Path, run_id: str) -> dict[str, Any]:
    """The manifest of run ``run_id``.

    Raises:
        ValueError: naming the id, for a malformed or unknown id (listing the known runs).
    """
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise ValueError(
            f"resume={run_id!r} is not a run id; ids look like 2026-11-23T10.26.41.512Z "
            f"(the version folder of a run's outputs)"
        )
    path = manifest_path(root, run_id)
    if not path.is_file():
        runs = known_runs(root)
        listing = ", ".join(runs[-5:]) if runs else "none"
        raise ValueError(f"resume={run_id!r}: no such run in this project; known runs: {listing}")
    return json.loads(path.read_text())


def alphazero_runs(root: Path) -> list[str]:
    """The finished runs of ``root`` that trained generations (``alphazero``), oldest first."""
    out = []
    for run_id in known_runs(root):
        manifest = read_manifest(root, run_id)
        pipelines = pipeline_names(manifest.get("pipelines"))
        if manifest.get("status") == "finished" and DEFAULT_PIPELINE in pipelines:
            out.append(run_id)
    return out


def run_of_version(root: Path, version: str) -> str | None:
    """The run whose outputs have ``version``: the run of that id, or the run an extension
    of that version trained further (None when no manifest says)."""
    runs = known_runs(root)
    if version in runs:
        return version
    for run_id in runs:
        extended = read_manifest(root, run_id).get("extended") or []
        if any(e.get("version") == version for e in extended):
            return run_id
    return None


def _manifest_text(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True, default=str)


def write_manifest(root: Path, manifest: dict[str, Any]) -> Path:
    """Write a manifest atomically (:func:`.core.files.atomic_path`)."""
    path = manifest_path(root, manifest["run_id"])
    with atomic_path(path) as tmp:
        tmp.write_text(_manifest_text(manifest))
    return path


def next_run_id(run_id: str) -> str:
    """The id one millisecond after ``run_id``."""
    moment = datetime.strptime(run_id, _ID_FORMAT) + timedelta(milliseconds=1)
    return moment.strftime(_ID_FORMAT)[:-4] + "Z"  # microseconds -> milliseconds


def claim_manifest(root: Path, manifest: dict[str, Any]) -> str:
    """Write a new run's manifest under an id no other run has; returns that id.

    The id is the session's save version, a millisecond timestamp: two runs started in
    the same millisecond would share it, and with it every output version. The manifest
    is created exclusively (a hard link of a complete temporary file, which fails if the
    name exists), and a taken id moves on by a millisecond.
    """
    while True:
        path = manifest_path(root, manifest["run_id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = staging_path(path)
        try:
            tmp.write_text(_manifest_text(manifest))
            os.link(tmp, path)
            return manifest["run_id"]
        except FileExistsError:
            manifest["run_id"] = next_run_id(manifest["run_id"])
        finally:
            tmp.unlink(missing_ok=True)
