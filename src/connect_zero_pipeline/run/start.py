"""Where a run starts: ``model.start_from``, resolved once, at the run's start.

``model.start_from`` is a registered version (``models:/<name>@<alias>`` or
``models:/<name>/<n>``: the run and generation it was exported from, as its tags say) or a
run id (its last generation). An alias moves, so :func:`start_point` resolves it once when
the run starts; the manifest records the answer (``start_from``: ``ref``, ``run_id``,
``generation``, ``described``, and ``registered`` for a registry version) and a resume
keeps it.

The nodes never look anything up: the session hands them the answer as the catalog entry
``start_point`` (``model``: the partition id of the model file in the ``model_files`` view
of the models folder; ``games``: with ``model.start_window``, the ``(generation, partition
id)`` of the source run's replay window in the ``games_files`` view), and
``gen_000.init_model`` and ``gen_000.start_games`` read those partitions.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kedro.io import DataCatalog

from ..common.config_loader import project_config
from ..common.naming import GAMES_PARTITION, GENERATION, model_index
from ..tracking.registry import (
    REGISTRY_PREFIX,
    find_version,
    parse_model_uri,
    project_client,
    version_words,
)
from .manifest import check_known


def partitions(root: Path, view: str, env: str | None = None) -> list[str]:
    """The partition ids of catalog view ``view`` (``model_files``, ``games_files``) of the
    project at ``root``, as its env ``env`` configures it; nothing is read. The view's
    folder, relative in the catalog, is the project's."""
    conf = dict(project_config(Path(root), "catalog", env)[view])
    conf["path"] = str(Path(root) / conf["path"])  # an absolute path stays as it is
    return list(DataCatalog.from_config({view: conf}).load(view))


def _generation_models(models: Iterable[str]) -> dict[tuple[str, int], str]:
    """``(run id, generation) -> partition id`` of the generation models among ``models``."""
    return {(f.version, f.k): f.pid for f in model_index(models, GENERATION)}


def resolve(root: Path, ref: str, models: Iterable[str]) -> dict[str, Any]:
    """``ref`` as ``{ref, run_id, generation, described, registered}`` (``registered``: the
    registry's ``{name, version}`` for a ``models:/`` ref, else None), its model among
    ``models`` (the ``model_files`` partitions) checked to be there, as ``model``.

    Raises:
        ValueError: naming ``ref``: an unknown run, version or alias, or a model file that is
            not in this project.
    """
    generations = _generation_models(models)
    if ref.startswith(REGISTRY_PREFIX):
        name, version = parse_model_uri(ref)
        try:
            found = find_version(project_client(root), name, version)
        except ValueError as exc:
            raise ValueError(f"model.start_from={ref!r}: {exc}") from exc
        run_id, generation = found.tags.get("run_id"), found.tags.get("generation")
        if not run_id or not str(generation or "").isdigit():
            raise ValueError(f"model.start_from={ref!r}: version {found.version} names no run "
                             "and generation (its tags run_id, generation)")  # fmt: skip
        key = (run_id, int(generation))
        if key not in generations:
            raise ValueError(f"model.start_from={ref!r}: run {run_id}'s generation {generation} "
                             "model is not in this project's models folder")  # fmt: skip
        words = f"{ref} ({version_words(name, found.version, found.tags)})"
        registered = {"name": name, "version": int(found.version)}
    else:
        check_known(root, ref, "model.start_from")
        registered = None
        mine = sorted(k for run, k in generations if run == ref)
        if not mine:
            raise ValueError(f"model.start_from={ref!r}: that run has no generation models")
        key = (ref, mine[-1])
        words = f"run {ref}, generation {mine[-1]}"
    return {"ref": ref, "run_id": key[0], "generation": key[1], "described": words,
            "registered": registered, "model": generations[key]}  # fmt: skip


def model_partition(start: dict[str, Any], models: Iterable[str]) -> str:
    """The partition id of a resolved start's model among ``models``.

    Raises:
        ValueError: naming the start, for a model file not in this project.
    """
    key = (start["run_id"], int(start["generation"]))
    found = _generation_models(models).get(key)
    if found is None:
        raise ValueError(f"model.start_from={start['ref']!r}: run {key[0]}'s generation "
                         f"{key[1]} model is not in this project's models folder")  # fmt: skip
    return found


def games_window(start: dict[str, Any], size: int, games: Iterable[str]) -> list[list]:
    """The replay window a run started from ``start`` takes over (``model.start_window``):
    ``[generation, partition id]`` among ``games`` (the ``games_files`` partitions) of the
    source run's last ``size`` generations up to its start generation (fewer when it has
    fewer), oldest first.

    Raises:
        ValueError: naming the start and the generations, for games not in this project.
    """
    run_id, generation = start["run_id"], int(start["generation"])
    found = {}
    for pid in games:
        m = GAMES_PARTITION.match(pid)
        if m and m["v"] == run_id:
            found[int(m["k"])] = pid
    wanted = range(max(1, generation - size + 1), generation + 1)
    missing = [k for k in wanted if k not in found]
    if missing:
        raise ValueError(f"model.start_from={start['ref']!r} with model.start_window=true: run "
                         f"{run_id} has no games of generation(s) {missing} in this project's "
                         "self-play folder")  # fmt: skip
    return [[k, found[k]] for k in wanted]


def start_point(root: Path, ref: str, window: int, kept: dict[str, Any] | None = None,
                env: str | None = None):  # fmt: skip
    """What the catalog entry ``start_point`` holds for a run from ``ref`` (``{}`` without
    one): :func:`resolve`'s answer (or ``kept``, what a resumed run's manifest recorded), with ``games``, its
    replay window of ``window`` generations (none for 0). Each catalog view is listed once.

    Raises:
        ValueError: as :func:`resolve`, :func:`model_partition` and :func:`games_window`.
    """
    if not ref:
        return {}
    models = partitions(root, "model_files", env)
    start = {**kept, "model": model_partition(kept, models)} if kept else resolve(root, ref, models)
    games = partitions(root, "games_files", env) if window else []
    return {**start, "games": games_window(start, window, games) if window else []}


def recorded(start: dict[str, Any]) -> dict[str, Any] | None:
    """What the manifest records of a start point: ``ref``, ``run_id``, ``generation``,
    ``described``, and for a registry version ``registered`` (its ``name`` and ``version``:
    fields, which the run's name reads; None for ``{}``)."""
    if not start:
        return None
    keys = ("ref", "run_id", "generation", "described") + ("registered",) * bool(
        start.get("registered")
    )
    return {k: start[k] for k in keys}
