"""``RunLife``: the hook that starts a run's record and the session's calls that end it.

A run's own hooks live in this package, each given the run's ``RunLife``: this one (the
manifest, the pinned versions, the start point), :mod:`.generation_runs` (the MLflow
children) and :mod:`.summary`; :mod:`.hooks` holds those of every session.

Registered by :class:`.project_session.ProjectSession` for its run only, with the
:class:`..run.context.RunContext` the session planned. Before the first node
(``before_pipeline_run``, first of all hooks) it checks what only the run's own arguments
tell (:func:`..run.rules.check_attempt`), stops a run with nothing to do
(:func:`..run.pinning.nothing_to_run`: nothing is written), claims the run's id and writes its
manifest (:mod:`..run.manifest`), pins the run's versions and hands the datasets and the nodes
what they need (:func:`..run.pinning.pin_outputs`, the catalog entry ``start_point``). The
session calls :meth:`RunLife.finish` after every hook of the run returned, so a manifest
says ``finished`` only after the run's last write, whatever order the hooks run in, and
:meth:`RunLife.fail` after a failure of any kind.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kedro.framework.hooks import hook_impl

from ..common.errors import NothingToDo
from ..common.naming import pipeline_names
from ..params.schema import node_settings
from ..run import manifest as manifests  # looked up at each call (the fault sweep wraps them)
from ..run.context import RunContext, advance, thaw
from ..run.liveness import this_process
from ..run.messages import error_line
from ..run.pinning import nothing_to_run, pin_outputs, steps_done
from ..run.rules import check_attempt

log = logging.getLogger(__name__)

START_POINT = "start_point"
"""The catalog entry that hands the nodes the run's start point (:mod:`..run.start`)."""
LADDER_PLAN = "ladder_plan"
"""The catalog entry that hands the ladder's nodes what it plays (:mod:`..run.ladder_plan`)."""
SOLVER_CACHE = "solver_cache"
"""The catalog entry that hands the solver's nodes its cache folder (``pons.cache_dir``,
resolved in the plan)."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class RunLife:
    """The run's context and record during one session (module docstring)."""

    def __init__(self, context: RunContext | None = None) -> None:
        self.context = context
        self._attempt_start = time.perf_counter()

    def begin(self, run: RunContext) -> None:
        """Hold the run the session planned (its first stage) until the pipeline starts."""
        if run.stage != "planned":
            raise ValueError(f"run {run.run_id} is {run.stage}, not planned")
        self.context = run

    @property
    def started(self) -> bool:
        """Whether the run's manifest was written (so it can be resumed)."""
        return self.context is not None and self.context.manifest is not None

    @hook_impl(tryfirst=True)
    def before_pipeline_run(self, run_params: dict, pipeline, catalog) -> None:
        run = self.context
        if run is None:
            return
        check_attempt(run.resumed, run.extension, run_params, pipeline)
        finished = run.resumed is None or run.resumed.get("status") == "finished"
        if run_params.get("only_missing_outputs") and run.extension is None and finished:
            # A run that failed after its last node (its summary, its record) runs again.
            pin_outputs(pipeline, catalog, run)
            if nothing_to_run(pipeline, catalog, run.mlflow_parent):
                what = (f"run {run.run_id} already has {steps_done(pipeline)}" if run.resumed
                        else f"every output of the {len(pipeline.nodes)} nodes exists")  # fmt: skip
                raise NothingToDo(f"Nothing to do: {what}; nothing was run or written.")
        self._attempt_start = time.perf_counter()
        self._process_settings(run)
        record = self._manifest(run, run_params)
        self.context = advance(run, "claimed", manifest=record)  # fail() records a failed write
        if run.is_resume:
            manifests.write_manifest(run.root, record)
        else:
            record["run_id"] = manifests.claim_manifest(run.root, record)
        self.context = run = advance(run, "claimed", run_id=record["run_id"], manifest=record)
        if run.extension is not None:
            log.info("Run %s: extended from %d to %d generations; its final outputs are "
                     "written at version %s", run.run_id, *run.extension, run.attempt)  # fmt: skip
        pinned = pin_outputs(pipeline, catalog, run)
        if START_POINT in catalog:
            catalog.get(START_POINT).save(dict(run.start))
        if LADDER_PLAN in catalog:
            catalog.get(LADDER_PLAN).save(dict(run.ladder))
        if SOLVER_CACHE in catalog:
            catalog.get(SOLVER_CACHE).save(run.solver_cache)
        self.context = advance(run, "pinned")
        log.info("Run %s: %d versioned outputs read and written at this version",
                 run.run_id, pinned)  # fmt: skip

    @staticmethod
    def _process_settings(run: RunContext) -> None:
        """What a run sets once for its whole process, before its first node: float32
        products on tensor cores when a stage computes on CUDA (never per node: an
        overlapped run's nodes share the process, ``core/device.py``)."""
        from ..core.device import use_tensor_cores  # noqa: PLC0415 (torch: for the nodes, not the refusals before)

        if use_tensor_cores([node.device for node in node_settings(run.sections)]):
            log.info("Run %s: float32 products on CUDA run as TF32 (tensor cores)", run.run_id)

    @staticmethod
    def _manifest(run: RunContext, run_params: dict) -> dict[str, Any]:
        before = run.resumed or {}
        extended = list(before.get("extended") or [])
        if run.extension is not None:
            extended.append({"from": run.extension[0], "to": run.extension[1],
                             "version": run.attempt, "started": _now()})  # fmt: skip
        return {
            "run_id": run.run_id,
            "pipelines": pipeline_names(run_params.get("pipeline_names")),
            "env": run.env,
            "params": thaw(run.params),
            "status": "running",
            "started": before.get("started") or _now(),
            "resumed": [*(before.get("resumed") or []), run.attempt] if run.is_resume else [],
            "extended": extended,
            "mlflow_run_id": before.get("mlflow_run_id"),
            "wall_seconds": before.get("wall_seconds") or 0.0,
            "start_from": before.get("start_from") or run.start_from,
            **this_process(),
        }

    def attempt_seconds(self) -> float:
        """How long this attempt has run (since its pipeline started)."""
        return time.perf_counter() - self._attempt_start

    def opened(self, mlflow_run_id: str | None) -> None:
        """The MLflow parent run exists: keep its id in the context and the manifest."""
        if not self.started or not mlflow_run_id:
            return
        record = {**self.context.manifest, "mlflow_run_id": mlflow_run_id}
        manifests.write_manifest(self.context.root, record)
        self.context = advance(self.context, "opened", manifest=record,
                               mlflow_parent=mlflow_run_id)  # fmt: skip

    def _end(self, status: str, error: BaseException | None = None) -> None:
        if not self.started or self.context.manifest.get("status") != "running":
            return
        record = {k: v for k, v in self.context.manifest.items() if k != "error"}
        record["status"] = status
        record["finished"] = _now()
        record["wall_seconds"] = round(record["wall_seconds"] + self.attempt_seconds(), 1)
        if error is not None:
            record["error"] = error_line(error)
        manifests.write_manifest(self.context.root, record)  # a failed write: fail() may follow
        self.context = advance(self.context, status, manifest=record)

    def finish(self) -> None:
        """Record that the run finished: the session calls it after the run's last write."""
        self._end("finished")

    def fail(self, error: BaseException) -> str | None:
        """Record that the run failed with ``error`` (once; later calls do nothing); returns
        None, or why the manifest could not be written (a full disk, a read-only ``data/``):
        it is then left ``running``, which :func:`.liveness.run_status` reads as
        ``interrupted`` once the process is gone."""
        try:
            self._end("failed", error)
        except OSError as exc:
            return f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}"
        return None
