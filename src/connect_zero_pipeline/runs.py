"""Run identity: a run reads only its own versions, and a killed run resumes by its id.

**The id.** Every ``kedro run`` has one: the session's save version
(``2026-11-23T10.26.41.512Z``), the folder name every versioned output of the
run is written under. :class:`RunIdentityHook` pins the *load* version of
every versioned dataset the run itself produces to that id, so a generation
reads the previous model, the replay window and the model it publishes and
exports from this run only, never from an earlier run or one running at the
same time. Inputs the run does not produce (the solver-labelled set,
``latest_model`` for ``--pipelines=export`` alone) load their latest version,
as Kedro does.

**The manifest.** At its start a run writes ``data/runs/<id>.json``: the
pipelines, the env, the merged parameters, the MLflow parent run, the process
(host, pid and its start time) and a status: ``running``, then ``finished`` or
``failed`` with the error's one line (any exception, a full disk, a store error,
Ctrl-C: :meth:`RunIdentityHook.fail`). A run that could not record its end
(``kill -9``, a disk too full to write even that) stays ``running`` on disk;
:func:`run_status` tells it apart from a live run by its process, and calls it
``interrupted``. ``python -m connect_zero_pipeline runs`` lists the runs.

**Resume.** ``kedro run --only-missing-outputs --params resume=<id>`` (or
``make resume RUN=<id>``) continues run ``<id>``: the same id, so its finished
nodes are skipped and the rest is written under the same version folders, and
the same MLflow parent run, which ends FINISHED. Before anything runs it
checks that the id is known, that the pipelines and parameters are the run's
own (a resumed run with other parameters would mix two recipes), and that
``--only-missing-outputs`` is given (without it, finished nodes would run again).

**Training further (an extension).** The one parameter a resume may change is
:data:`GROWABLE`, ``alphazero.num_generations``, and only upwards: ``make resume
RUN=<id> PARAMS=alphazero.num_generations=40`` continues a 24-generation run to 40 in
the same run (its id, its MLflow parent, one learning curve; the new generations
are new children). Generations are written at the run's id as always. What comes
after the generations, the run's *final outputs* (:func:`final_outputs`: the
learning curves, ``latest_model``, the export), already exists at that id and is
never overwritten: an extension writes them at a version of its own, the
extension's session version, recorded in the manifest (``extended``) and read
back by :func:`final_version`. A resumed extension uses the same version.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kedro.framework.hooks import hook_impl

from .core.files import atomic_path, staging_path
from .errors import NothingToDo, RunRefused
from .naming import RESUME_KEY

log = logging.getLogger(__name__)

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


def newest_version(folder: Path) -> Path | None:
    """The newest ``<version>/<name>`` file of a versioned dataset folder ``.../<name>``."""
    if not folder.is_dir():
        return None
    versions = sorted(p / folder.name for p in folder.iterdir() if (p / folder.name).exists())
    return versions[-1] if versions else None


def alphazero_runs(root: Path) -> list[str]:
    """The finished runs of ``root`` that trained generations (``alphazero``), oldest first."""
    out = []
    for run_id in known_runs(root):
        manifest = read_manifest(root, run_id)
        pipelines = set(manifest.get("pipelines") or [])
        if manifest.get("status") == "finished" and pipelines & {"__default__", "alphazero"}:
            out.append(run_id)
    return out


def _partitions(root: Path, view: str) -> list[str]:
    """The partition ids of catalog view ``view`` (``model_files``, ``games_files``) of the
    project at ``root``; nothing is read."""
    from kedro.io import DataCatalog

    from .config_loader import chdir, project_config

    with chdir(Path(root)):  # the catalog's relative paths are the project's
        catalog = DataCatalog.from_config(project_config(Path(root), "catalog"))
        return list(catalog.load(view))


def _generation_models(root: Path) -> dict[tuple[str, int], str]:
    """``(run id, generation) -> partition id`` of every generation model in ``model_files``."""
    from .naming import GENERATION, MODEL_PARTITION

    out = {}
    for pid in _partitions(root, "model_files"):
        m = MODEL_PARTITION.match(pid)
        if m and m["kind"] == GENERATION:
            out[(m["v"], int(m["k"]))] = pid
    return out


def start_model(root: Path, ref: str) -> tuple[str, str]:
    """The trained model a run starts from (``model.start_from``): the partition id of its
    file in the ``model_files`` view of the models folder, and what it is, in words.

    ``ref`` is a registered version (``models:/<name>@<alias>`` or ``models:/<name>/<n>``:
    the run and generation it was exported from, as its tags say) or a run id (its last
    generation).

    Raises:
        ValueError: naming ``ref``: an unknown run, version or alias, or a model file that is
            not in this project.
    """
    _, _, partition, described = start_point(root, ref)
    return partition, described


def start_point(root: Path, ref: str) -> tuple[str, int, str, str]:
    """``(run id, generation, model partition id, what it is in words)`` of
    ``model.start_from`` ``ref``, whose model file is in this project (:func:`start_model`).

    Raises:
        ValueError: as :func:`start_model`.
    """
    generations = _generation_models(root)
    from .registry import REGISTRY_PREFIX

    if ref.startswith(REGISTRY_PREFIX):
        from .registry import find_version, parse_model_uri, project_client

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
        words = f"{ref} ({name} version {found.version}: run {run_id}, generation {generation})"
        return (*key, generations[key], words)
    if ref not in known_runs(root):
        raise ValueError(f"model.start_from={ref!r}: no such run in this project; known runs: "
                         f"{known_runs(root)[-5:]} (python -m connect_zero_pipeline runs)")  # fmt: skip
    mine = sorted(k for run, k in generations if run == ref)
    if not mine:
        raise ValueError(f"model.start_from={ref!r}: that run has no generation models")
    key = (ref, mine[-1])
    return (*key, generations[key], f"run {ref}, generation {mine[-1]}")


def start_games(root: Path, ref: str, size: int) -> list[tuple[int, str]]:
    """The replay window a run started from ``ref`` takes over (``model.start_window``):
    ``(generation, partition id)`` in the ``games_files`` view of the games of the source
    run's last ``size`` generations up to its start generation (fewer when it has fewer),
    oldest first.

    Raises:
        ValueError: naming ``ref`` and the generation, for games not in this project.
    """
    from .naming import GAMES_PARTITION

    run_id, generation, _, _ = start_point(root, ref)
    games = {}
    for pid in _partitions(root, "games_files"):
        m = GAMES_PARTITION.match(pid)
        if m and m["v"] == run_id:
            games[int(m["k"])] = pid
    wanted = range(max(1, generation - size + 1), generation + 1)
    missing = [k for k in wanted if k not in games]
    if missing:
        raise ValueError(f"model.start_from={ref!r} with model.start_window=true: run {run_id} "
                         f"has no games of generation(s) {missing} in this project's self-play "
                         "folder")  # fmt: skip
    return [(k, games[k]) for k in wanted]


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


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from ``/proc``); None where there is
    no ``/proc`` or no such process. A pid with another start time is another process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, after the command's ")"


def _alive(manifest: dict[str, Any]) -> bool:
    pid = manifest.get("pid")
    if not isinstance(pid, int):
        return False
    if manifest.get("host") != socket.gethostname():
        return True  # another machine's run: no way to tell, so it may be live
    started = manifest.get("pid_started")
    if started is not None:
        return process_start(pid) == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_status(manifest: dict[str, Any]) -> str:
    """A run's status: its manifest's, except that a ``running`` run whose process is gone is
    ``interrupted`` (killed, or it could not record how it ended)."""
    status = manifest.get("status", "running")
    if status == "running" and not _alive(manifest):
        return "interrupted"
    return status


_DATASET_ERROR = re.compile(
    r"^(?P<name>[^\s:]+: )?Failed while (?P<verb>loading|saving) data (?:from|to) dataset "
    r".*?\)\.\s*\n(?P<rest>.*)$",
    re.DOTALL,
)


def error_text(error: BaseException) -> str:
    """What went wrong, in words: Kedro's "Failed while loading data from dataset <repr>"
    becomes "<name>: could not load: <the reason, which names the file>"."""
    text = str(error).strip()
    found = _DATASET_ERROR.match(text)
    if found:
        verb = "load" if found["verb"] == "loading" else "save"
        text = f"{found['name'] or ''}could not {verb}: {found['rest'].strip()}"
    return text


def error_line(error: BaseException) -> str:
    """An error in one line, as a run's manifest records it."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    from .tracking import store_line

    text = store_line(error) or " ".join(error_text(error).split())  # not MLflow's SQL
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


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


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    """Nested parameters as flat keys: ``{"train": {"lr": 1}}`` -> ``{"train.lr": 1}``."""
    if not isinstance(d, dict):
        return {prefix.rstrip("."): d}
    out: dict[str, Any] = {}
    for key, value in d.items():
        out.update(flatten(value, f"{prefix}{key}."))
    return out


GROWABLE = "alphazero.num_generations"
"""The parameter a resume may raise: the run is extended by the new generations."""


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
    from .naming import parse_step

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


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            value = _merged(out[key], value)
        out[key] = value
    return out


def resume_arguments(root: Path, params: dict[str, Any], env: str | None):
    """A resume's ``--params`` and ``--env`` as ``kedro run`` should take them: the run's
    recorded parameters with the user's over them, and its recorded env when none is given.
    So ``make resume RUN=<id>`` alone continues a run started with any ``--params``, and
    ``PARAMS`` only extends it (:data:`GROWABLE`) or moves it (:func:`is_placement`); any
    other change is refused by :meth:`RunIdentityHook.check`. Not a resume, or an id that
    names no run (refused there too): the arguments as they are."""
    resume = (params or {}).get(RESUME_KEY)
    if not isinstance(resume, str) or not RUN_ID.match(resume):
        return params, env
    path = manifest_path(root, resume)
    if not path.is_file():
        return params, env
    manifest = json.loads(path.read_text())
    recorded = {k: v for k, v in (manifest.get("params") or {}).items() if k != RESUME_KEY}
    return _merged(recorded, params), env or manifest.get("env")


def nothing_to_run(pipeline, catalog, mlflow_run_id: str | None) -> bool:
    """Whether ``--only-missing-outputs`` would skip every node of ``pipeline``: each node has
    outputs and none of its persistent outputs is missing (Kedro's rule: a node runs when it
    has no outputs, misses a persistent one, or feeds a node that runs). What a run logs to
    MLflow exists when MLflow run ``mlflow_run_id`` (a resumed run's parent) holds it; it is
    read, never opened, so the check writes nothing."""
    for node in pipeline.nodes:
        if not node.outputs:
            return False
        for name in node.outputs:
            if name not in catalog:  # a MemoryDataset of the run
                continue
            dataset = catalog.get(name)
            if not getattr(dataset, "_EPHEMERAL", False) and not _saved(dataset, mlflow_run_id):
                return False
    return True


def _saved(dataset, mlflow_run_id: str | None) -> bool:
    """Whether ``dataset`` exists; one that MLflow tracks, in run ``mlflow_run_id``."""
    import copy

    from kedro_mlflow.io.metrics import MlflowMetricsHistoryDataset

    saved_in = getattr(dataset, "saved_in", None)  # the project's model-tracking dataset
    if isinstance(dataset, MlflowMetricsHistoryDataset) or saved_in is not None:
        if not mlflow_run_id:
            return False
        if saved_in is not None:
            import mlflow

            return saved_in(mlflow.MlflowClient().get_run(mlflow_run_id))
        probe = copy.copy(dataset)  # the run's own dataset keeps following the active run
        probe.run_id = mlflow_run_id
        return probe.exists()
    return dataset.exists()


def steps_done(pipeline) -> str:
    """What a pipeline's steps are, in words: ``26 generations``, ``4 chunks``, or ``its nodes``."""
    from .naming import CHUNK, GENERATION, parse_step

    last: dict[str, int] = {}
    for node in pipeline.nodes:
        step = parse_step(node.namespace)
        if step:
            last[step[0]] = max(last.get(step[0], 0), step[1])
    for kind, word in ((GENERATION, "generations"), (CHUNK, "chunks")):
        if kind in last:
            return f"{last[kind]} {word}"
    return f"the outputs of its {len(pipeline.nodes)} nodes"


def pin_outputs(pipeline, catalog, run_id: str, final: str | None = None) -> int:
    """Load (and save) every versioned output of ``pipeline`` at version ``run_id``, and its
    :func:`final_outputs` at version ``final`` (default ``run_id``); returns how many."""
    from kedro.io.core import AbstractVersionedDataset, Version

    last = final_outputs(pipeline)
    pinned = 0
    for name in sorted(pipeline.all_outputs()):
        dataset = catalog.get(name)
        if isinstance(dataset, AbstractVersionedDataset) and dataset._version is not None:
            version = (final or run_id) if name in last else run_id
            dataset._version = Version(load=version, save=version)
            pinned += 1
    return pinned


class RunIdentityHook:
    """Pins a run's versions to its id, records its manifest and resumes a run by id."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.root: Path | None = None
        self.params: dict[str, Any] = {}
        self.env: str | None = None
        self.resumed: dict[str, Any] | None = None
        self.run_id: str | None = None
        self.final_version: str | None = None  # of the final outputs (final_version())
        self.extension: tuple[int, int] | None = None
        self.manifest: dict[str, Any] | None = None
        self._attempt_start = time.perf_counter()

    def check(self, context, params: dict[str, Any]) -> None:
        """Before anything is written: the resume id is known and ``params`` (the session's
        merged parameters) are the run's."""
        self._reset()
        self.root = Path(context.project_path)
        self.params = dict(params)
        self.env = context.env
        resume = self.params.get(RESUME_KEY)
        if resume is None:
            return
        manifest = read_manifest(self.root, resume)
        if run_status(manifest) == "running":
            raise ValueError(
                f"resume={resume!r}: that run is still running (pid {manifest.get('pid')} on "
                f"{manifest.get('host')}); wait for it or stop it first"
            )
        recorded = manifest.get("params") or {}
        self.extension = extension(recorded, self.params)
        changes = [c for c in parameter_changes(recorded, self.params)
                   if self.extension is None or not c.startswith(f"{GROWABLE}:")]  # fmt: skip
        if changes:
            raise ValueError(
                f"resume={resume!r}: a resume keeps the run's parameters (make resume "
                f"RUN={resume} uses them); it may only raise {GROWABLE} or change where a "
                f"stage runs (*.node.*). Changed: {'; '.join(changes[:10])}"
            )
        if (manifest.get("env") or None) != (self.env or None):
            raise ValueError(
                f"resume={resume!r}: that run used --env {manifest.get('env')!r}, this one "
                f"{self.env!r}"
            )
        self.resumed = manifest

    @hook_impl(tryfirst=True)
    def before_pipeline_run(self, run_params: dict, pipeline, catalog) -> None:
        if self.root is None:  # a session whose context this hook did not see
            return
        names = sorted(run_params.get("pipeline_names") or ["__default__"])
        if self.resumed is not None:
            run_id = self.resumed["run_id"]
            if not run_params.get("only_missing_outputs"):
                raise RunRefused(
                    f"resume={run_id!r} needs --only-missing-outputs (finished nodes would run "
                    f"again): kedro run --only-missing-outputs --params resume={run_id}, "
                    f"or make resume RUN={run_id}"
                )
            if sorted(self.resumed.get("pipelines") or ["__default__"]) != names:
                raise RunRefused(
                    f"resume={run_id!r}: that run ran pipelines {self.resumed.get('pipelines')}, "
                    f"this one {names}"
                )
            self._point_mlflow_at(self.resumed.get("mlflow_run_id"))
        else:
            run_id = run_params["run_id"]
        extended = list((self.resumed or {}).get("extended") or [])
        if self.extension is not None:
            from .naming import GENERATION, parse_step

            if not any((parse_step(n.namespace) or ("",))[0] == GENERATION for n in pipeline.nodes):
                raise RunRefused(f"{GROWABLE}: run {run_id} ran pipelines {names}, which have "
                                 "no generations to extend")  # fmt: skip
            extended.append({"from": self.extension[0], "to": self.extension[1],
                             "version": run_params["run_id"],
                             "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")})  # fmt: skip
            log.info("Run %s: extended from %d to %d generations; its final outputs are "
                     "written at version %s", run_id, *self.extension, run_params["run_id"])  # fmt: skip
        finished = self.resumed is None or self.resumed.get("status") == "finished"
        if run_params.get("only_missing_outputs") and self.extension is None and finished:
            # A run that failed after its last node (its summary, its record) runs again.
            final = final_version(self.resumed) if self.resumed is not None else run_id
            pin_outputs(pipeline, catalog, run_id, final)
            parent = (self.resumed or {}).get("mlflow_run_id")
            if nothing_to_run(pipeline, catalog, parent):
                what = (f"run {run_id} already has {steps_done(pipeline)}" if self.resumed
                        else f"every output of the {len(pipeline.nodes)} nodes exists")  # fmt: skip
                raise NothingToDo(f"Nothing to do: {what}; nothing was run or written.")
        started = (self.resumed or {}).get("started") or time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self._attempt_start = time.perf_counter()
        start = (self.resumed or {}).get("start_from") or self._start_from()
        self.manifest = {
            "run_id": run_id,
            "pipelines": names,
            "env": self.env,
            "params": self.params,
            "status": "running",
            "started": started,
            "resumed": [*((self.resumed or {}).get("resumed") or []), run_params["run_id"]]
            if self.resumed
            else [],
            "extended": extended,
            "mlflow_run_id": (self.resumed or {}).get("mlflow_run_id"),
            "wall_seconds": (self.resumed or {}).get("wall_seconds") or 0.0,
            "start_from": start,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "pid_started": process_start(os.getpid()),
        }
        if self.resumed is not None:
            write_manifest(self.root, self.manifest)
        else:
            run_id = claim_manifest(self.root, self.manifest)
        self.run_id = run_id
        self.final_version = final_version(self.manifest)
        pinned = pin_outputs(pipeline, catalog, run_id, self.final_version)
        log.info("Run %s: %d versioned outputs read and written at this version", run_id, pinned)

    def _start_from(self) -> dict[str, Any] | None:
        """Where ``model.start_from`` points now, resolved once at the run's start (an alias
        moves, a resume keeps what the run started from): ``ref``, ``run_id``,
        ``generation``, ``described``; None without one."""
        ref = (self.params.get("model") or {}).get("start_from")
        if not ref:
            return None
        run_id, generation, _, described = start_point(self.root, ref)
        return {"ref": ref, "run_id": run_id, "generation": generation, "described": described}

    @staticmethod
    def _point_mlflow_at(parent_run_id: str | None) -> None:
        """Make kedro-mlflow reopen the run's own parent run instead of starting a new one."""
        if not parent_run_id:
            return
        try:
            from kedro_mlflow.framework.hooks.mlflow_hook import mlflow_hook
        except ImportError:  # kedro-mlflow not installed: nothing to reopen
            return
        config = getattr(mlflow_hook, "mlflow_config", None)
        if config is not None:
            config.tracking.run.id = parent_run_id

    def attempt_seconds(self) -> float:
        """How long this attempt has run (since its pipeline started)."""
        return time.perf_counter() - self._attempt_start

    def record_mlflow_run(self, run_id: str | None) -> None:
        """Called once the MLflow parent run exists: keep its id in the manifest."""
        if self.manifest is not None and run_id:
            self.manifest["mlflow_run_id"] = run_id
            write_manifest(self.root, self.manifest)

    def _finish(self, status: str, error: BaseException | None = None) -> None:
        if self.manifest is None:
            return
        record = {k: v for k, v in self.manifest.items() if k != "error"}
        record["status"] = status
        record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        record["wall_seconds"] = round(record["wall_seconds"] + self.attempt_seconds(), 1)
        if error is not None:
            record["error"] = error_line(error)
        write_manifest(self.root, record)  # a failed write leaves the run open for fail()
        self.manifest = self.resumed = None

    @hook_impl(trylast=True)  # the run's last write: a failure before it is not "finished"
    def after_pipeline_run(self) -> None:
        self._finish("finished")

    @hook_impl
    def on_pipeline_error(self, error: BaseException) -> None:
        self.fail(error)

    def fail(self, error: BaseException) -> None:
        """Record that the run failed with ``error`` (once; later calls do nothing). A manifest
        that cannot be written (a full disk) is left ``running``: :func:`run_status` then
        reads ``interrupted``."""
        try:
            self._finish("failed", error)
        except OSError as exc:
            log.warning("Could not record the run's failure in its manifest: %s", exc)


run_identity = RunIdentityHook()
"""The project's one instance (``settings.HOOKS``); other hooks ask it for the run's id."""
