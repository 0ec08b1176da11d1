"""What a ladder plays, planned once at the run's start: the catalog entry ``ladder_plan``.

As :mod:`.start` does for ``model.start_from``, the session resolves what the ladder's
parameters name before any work, so that its nodes are functions of their catalog inputs
(they read no manifest, no registry and no current folder):

- ``runs``: ``ladder.runs`` as run ids (``latest``: the newest finished alphazero run),
  each checked to be this project's;
- ``registry``: ``ladder.registry``'s versions of the registered model, each as ``ref``,
  ``version``, ``run_id``, ``uri`` (``models:/<name>/<n>``) and ``source`` (where its
  files are, which the node reads);
- ``match_cache``, ``solver_cache``: the ladder's game cache (``ladder.cache_dir``) and the
  solver's (the run's own ``pons.cache_dir``), as folders of this project (or None).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..common.project import folder_in
from ..params.ladder import LATEST
from ..params.schema import RunParams
from ..tracking.registry import REGISTERED_MODEL, REGISTRY_PREFIX, find_version, project_client
from .manifest import alphazero_runs, check_known


def ladder_plan(root: Path, params: RunParams, solver_cache: str | None) -> dict[str, Any]:
    """The plan of the ladder that ``params`` describe, in the project at ``root``
    (``solver_cache``: the run's, resolved in its plan).

    Raises:
        ValueError: naming an unknown run id, registry version or alias.
    """
    cfg = params.ladder
    finished = alphazero_runs(root)
    runs = []
    for run in cfg.runs:
        if run == LATEST:
            if not finished:
                raise ValueError(
                    "ladder.runs: 'latest' names no run: this project has no finished "
                    "alphazero run yet (kedro run), or name run ids"
                )
            run = finished[-1]
        else:
            check_known(root, run, "ladder.runs")
        runs.append(run)
    registry = []
    if cfg.registry:
        client = project_client(root)
        for ref in map(str, cfg.registry):
            try:
                version = find_version(client, REGISTERED_MODEL, ref)
            except ValueError as exc:
                raise ValueError(f"ladder.registry: {exc}") from exc
            registry.append({
                "ref": ref, "version": int(version.version), "run_id": version.tags.get("run_id"),
                "uri": f"{REGISTRY_PREFIX}{REGISTERED_MODEL}/{version.version}",
                "source": client.get_model_version_download_uri(REGISTERED_MODEL, version.version),
            })  # fmt: skip
    return {"runs": runs, "registry": registry, "match_cache": folder_in(root, cfg.cache_dir),
            "solver_cache": solver_cache}  # fmt: skip
