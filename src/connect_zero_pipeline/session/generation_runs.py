"""``GenerationRunsHook``: a run's MLflow record beyond kedro-mlflow's parent run.

Registered by :class:`.session.project_session.ProjectSession` for its run, with the run's
:class:`.run_life.RunLife`. kedro-mlflow opens one run per ``kedro run`` (the
parent). For every generation namespace (``gen_001``, ...) this hook opens a
child run through ``MlflowClient`` (tag ``mlflow.parentRunId``), never through
MLflow's active-run stack, so the stack kedro-mlflow manages is untouched. A
child run gets the generation's parameters, every ``*_metrics`` output of its
nodes (also logged on the parent with ``step = generation``, for curves) and
its model file. It is ended FINISHED when the generation's last node in this
run completes (or, for a generation whose finished nodes a resumed run
skipped, when the pipeline completes), or FAILED if the pipeline fails. A
resumed run reopens the children its first attempt created. Pipeline-level outputs
(``learning_curves``) are logged on the parent. REINFORCE chunks (``rf_001``,
...) are treated like generations, and ``reinforce_learning_curves`` like
``learning_curves``. The parent is named by what it is (:func:`parent_run_name`).
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import mlflow
from kedro.framework.hooks import hook_impl
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from ..common.config_loader import CONFIG_LOADER_ARGS
from ..common.naming import (
    EVAL_STAGE,
    FILTERS,
    HEADLINE,
    HEADLINE_SECTION,
    LEARNING_CURVES,
    MODEL_OUTPUTS,
    NOTE_TAG,
    RESUME_KEY,
    headline_line,
    metric_name,
    parse_step,
    pipeline_label,
    stage_of,
)
from ..core.checkpoint import save_model
from ..params.schedule import scheduled_params
from ..run.rules import flatten
from ..tracking.store import runs_view

_HEADLINE_KEYS = {key for key, _ in HEADLINE}


log = logging.getLogger(__name__)


EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
"""The experiment tag that makes MLflow 3's UI open the model-training view (not GenAI)."""


NAMED_OVERRIDES = 3
"""``--params`` overrides a parent's name spells out; past them it says how many more."""


def overrides(runtime_params: dict | None) -> list[str]:
    """A run's ``--params`` as ``key=value`` (dotted keys, nested mappings flattened), the
    seeds first, then by key; the resume marker is not one. A value is one word without
    quotes: a list of plain values ``[600,1200]``, any other list ``[...]``."""
    flat = flatten({k: v for k, v in (runtime_params or {}).items() if k != RESUME_KEY})

    def shown(value: Any) -> str:  # short, one word, no quote (names are searched by)
        if isinstance(value, list | tuple):
            plain = all(isinstance(x, int | float | str | bool) or x is None for x in value)
            value = "[" + ",".join(map(str, value)) + "]" if plain else "[...]"
        elif isinstance(value, dict):
            value = "{...}"
        return "".join(c for c in str(value) if c not in "'\" ").replace(" ", "")

    order = sorted(flat, key=lambda k: (k.rpartition(".")[2] != "seed", k))
    return [f"{k}={shown(flat[k])}" for k in order]


def parent_run_name(run_params: dict, steps: list[str], run_id: str | None,
                    manifest: dict | None = None, *, precise: bool = False) -> str:  # fmt: skip
    """What the MLflow parent run is called: what tells it apart from other runs first, in
    the 17 characters MLflow 3's runs list shows of a name at its default width
    (docs/mlflow_runs.png), then the pipeline and the run's start time (UTC, to the second,
    as its id; the list's Created column has the date).

    What tells it apart: the generations of a run filtered to some nodes (``gen_003`` or
    ``gen_003..gen_005``), where it started (``from v3``: registered version 3; ``from 11-22
    09:14``: a run), how far it was extended (``24->40``), and its ``--params`` overrides,
    the seeds first (``selfplay.seed=1``; :data:`NAMED_OVERRIDES` of them, then ``+2``),
    then its configuration environment when not the default (``env=quick``). A run of the
    configuration as it is names none: ``alphazero 10:26:07``.

    ``precise``: the time to the millisecond (for a second run started in the same second:
    :meth:`GenerationRunsHook.before_pipeline_run`). ``steps`` are the generation (or chunk)
    namespaces of the pipeline that runs; ``run_id`` is the run's id (a UTC time,
    ``2026-11-23T10.26.07.123Z``, whole in the run's ``run_id`` tag); ``manifest`` its
    record (``start_from``, ``extended``).
    """

    def moment(rid: str) -> str:  # 2026-11-23T10.26.07.123Z -> 11-23 10:26
        date, _, clock = rid.partition("T")
        return f"{date[5:]} {clock[:5].replace('.', ':')}"

    parts = []
    steps = sorted(steps, key=lambda s: parse_step(s)[1])
    if steps and any(run_params.get(k) for k in FILTERS):
        parts.append(steps[0] if len(steps) == 1 else f"{steps[0]}..{steps[-1]}")
    start = (manifest or {}).get("start_from")
    if start:
        registered = start.get("registered")  # a registry version's number
        parts.append(f"from v{registered['version']}" if registered
                     else f"from {moment(start['run_id'])}")  # fmt: skip
    extended = (manifest or {}).get("extended") or []
    if extended:
        parts.append(f"{extended[0]['from']}->{extended[-1]['to']}")
    changed = overrides(run_params.get("runtime_params"))
    parts += changed[:NAMED_OVERRIDES]
    if len(changed) > NAMED_OVERRIDES:
        parts.append(f"+{len(changed) - NAMED_OVERRIDES}")
    env = run_params.get("env")
    if env and env != CONFIG_LOADER_ARGS["default_run_env"]:
        parts.append(f"env={env}")
    parts.append(pipeline_label(run_params.get("pipeline_names")))
    if run_id:  # 2026-11-23T10.26.07.123Z -> 10:26:07 (precise: 10:26:07.123)
        clock = run_id.partition("T")[2].rstrip("Z")
        parts.append(clock.replace(".", ":", 2) if precise else clock[:8].replace(".", ":"))
    return " ".join(parts)


def name_taken(client: MlflowClient, experiment: str, name: str, parent: str) -> bool:
    """Whether a run of ``experiment`` other than ``parent`` is called ``name``."""
    found = client.search_runs([experiment], f"attributes.run_name = '{name}'")
    return any(r.info.run_id != parent for r in found)


_REPR = re.compile(r"^<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>$")


def plain_repr(value: str) -> str:
    """An object's default repr as its class name (``<kedro...SequentialRunner object at
    0x7f..>`` -> ``SequentialRunner``); any other text as it is."""
    found = _REPR.match(value)
    return found.group(1) if found else value


class GenerationRunsHook:
    def __init__(self, life) -> None:
        self._life = life  # the run's RunLife: its context, and where the parent is recorded
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._client: MlflowClient | None = None
        self._parent: str | None = None
        self._experiment: str | None = None
        self._children: dict[str, str] = {}  # namespace -> child run id
        self._pending: dict[str, set[str]] = {}  # namespace -> node names not yet done
        self._opened: set[str] = set()  # namespaces whose child this run has logged to

    @hook_impl(trylast=True)  # after kedro-mlflow opened the parent run
    def before_pipeline_run(self, run_params: dict, pipeline) -> None:
        self._reset()
        run = mlflow.active_run()
        if run is None:  # tracking disabled for this pipeline
            return
        self._client = MlflowClient()
        self._parent = run.info.run_id
        self._experiment = run.info.experiment_id
        for node in pipeline.nodes:
            if parse_step(node.namespace):
                self._pending.setdefault(node.namespace, set()).add(node.name)
        self._life.opened(self._parent)
        run = self._life.context  # planned, its manifest written (RunLife runs first)
        manifest = run.manifest
        # kedro-mlflow tagged the session id; the run's id is this
        self._client.set_tag(self._parent, "run_id", run.run_id)
        name = parent_run_name(run_params, list(self._pending), run.run_id, manifest)
        if name_taken(self._client, self._experiment, name, self._parent):  # the same second
            name = parent_run_name(run_params, list(self._pending), run.run_id, manifest,
                                   precise=True)  # fmt: skip
        self._client.set_tag(self._parent, "mlflow.runName", name)
        extended = manifest.get("extended")
        if extended:  # trained further: how many generations each extension added
            self._client.set_tag(self._parent, "extended", ", ".join(
                f"{e['from']} -> {e['to']} generations" for e in extended))  # fmt: skip
        start = manifest.get("start_from")
        if start:  # where this run's generation 0 came from (resolved once, at its start)
            self._client.set_tag(self._parent, "start_from", start["described"])
        for key, value in run_params.items():  # kedro-mlflow tags the run params as they are
            if isinstance(value, str) and (plain := plain_repr(value)) != value:
                self._client.set_tag(self._parent, key, plain)  # "SequentialRunner", no repr
        self._client.set_experiment_tag(self._experiment, *EXPERIMENT_KIND)
        self._client.set_experiment_tag(self._experiment, *runs_view())
        # A resumed run: reopen the children its first attempt created.
        for child in self._client.search_runs(
            [self._experiment], f"tags.mlflow.parentRunId = '{self._parent}'"
        ):
            if parse_step(child.info.run_name):
                self._children[child.info.run_name] = child.info.run_id

    def _child(self, namespace: str, params: dict[str, Any]) -> str:
        with self._lock:
            if namespace not in self._children:
                _, generation = parse_step(namespace)
                run = self._client.create_run(
                    self._experiment,
                    run_name=namespace,
                    tags={"mlflow.parentRunId": self._parent, "generation": str(generation)},
                )
                self._children[namespace] = run.info.run_id
                self._client.log_param(run.info.run_id, "generation", generation)
            elif namespace not in self._opened:  # reopened by a resumed run: running again
                self._client.update_run(self._children[namespace], "RUNNING")
            self._opened.add(namespace)
            run_id = self._children[namespace]
        batch = [Param(k, str(v)[:6000]) for k, v in flatten(params).items()]
        if batch:
            self._client.log_batch(run_id, params=batch)
        return run_id

    @hook_impl
    def after_node_run(self, node, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        if self._client is None:
            return
        if parse_step(node.namespace):
            self._log_generation_node(node, inputs, outputs)
        else:
            for name, value in outputs.items():
                if name.endswith(LEARNING_CURVES) and hasattr(value, "savefig"):
                    with tempfile.TemporaryDirectory() as tmp:
                        path = Path(tmp) / f"{name}.png"
                        value.savefig(path, dpi=120)
                        self._client.log_artifact(self._parent, str(path), "plots")

    def _log_generation_node(self, node, inputs, outputs) -> None:
        namespace = node.namespace
        _, generation = parse_step(namespace)
        params = {k.split(":", 1)[1]: v for k, v in inputs.items() if k.startswith("params:")}
        params = {k: scheduled_params(v, generation, k) if isinstance(v, dict) and v.get(
            "schedule") else v for k, v in params.items()}  # a generation's own values  # fmt: skip
        run_id = self._child(namespace, params)
        for name, value in outputs.items():
            local = name.rsplit(".", 1)[-1]
            stage = stage_of(name)
            if stage is not None and isinstance(value, dict):
                now = int(time.time() * 1000)
                metrics = []
                for key, metric in value.items():
                    if isinstance(metric, (int, float)):
                        full = metric_name(stage, key)
                        metrics.append(Metric(full, float(metric), now, generation))
                        if stage == EVAL_STAGE and key in _HEADLINE_KEYS:  # first on the page
                            metrics.append(Metric(HEADLINE_SECTION + full, float(metric), now,
                                                  generation))  # fmt: skip
                for run in (run_id, self._parent):  # one write a run: MLflow's batch limit is 1,000
                    for i in range(0, len(metrics), 1000):
                        self._client.log_batch(run, metrics=metrics[i : i + 1000])
                if stage == EVAL_STAGE:  # the child's description: its headline in one line
                    self._client.set_tag(run_id, NOTE_TAG, f"{namespace}: {headline_line(value)}")
            elif local in MODEL_OUTPUTS and hasattr(value, "state_dict"):
                with tempfile.TemporaryDirectory() as tmp:
                    path = Path(tmp) / f"{local}.pt"
                    save_model(value, path, getattr(value, "meta", None))
                    self._client.log_artifact(run_id, str(path), "model")
        pending = self._pending.get(namespace)
        if pending is not None:
            pending.discard(node.name)
            if not pending:
                self._client.set_terminated(run_id, "FINISHED")

    @hook_impl
    def after_pipeline_run(self) -> None:
        """Children whose remaining nodes were skipped (a resume) or never ran end FINISHED."""
        if self._client is None:
            return
        for run_id in self._children.values():
            if self._client.get_run(run_id).info.status == "RUNNING":
                self._client.set_terminated(run_id, "FINISHED")

    @hook_impl
    def on_pipeline_error(self) -> None:
        if self._client is None:
            return
        pending, self._pending = self._pending, {}  # marked once, however often called
        for namespace, run_id in self._children.items():
            if pending.get(namespace):
                self._client.set_terminated(run_id, "FAILED")
