"""A run reads only its own versions, and a repeated run writes nothing.

:func:`pin_outputs` pins the *load* (and save) version of every versioned dataset the run
itself produces to the run's id, so a generation reads the previous model, the replay
window and the model it publishes and exports from this run only, never from an earlier
run or one running at the same time. Inputs the run does not produce (the solver-labelled
set, ``latest_model`` for ``--pipelines=export`` alone) load their latest version, as Kedro
does. Datasets that record which run they belong to (``bind_run``: the exported model's
MLflow dataset) are handed the run's :class:`.context.RunContext` at the same time.

:func:`nothing_to_run` tells a ``--only-missing-outputs`` run whose every output exists
before it writes anything.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ..common.internals import is_ephemeral, is_versioned, pin_version
from ..common.naming import CHUNK, GENERATION, parse_step
from .rules import final_outputs

if TYPE_CHECKING:
    from .context import RunContext


def pin_outputs(pipeline, catalog, run: RunContext) -> int:
    """Load (and save) every versioned output of ``pipeline`` at ``run.run_id``, and its
    :func:`.rules.final_outputs` at ``run.final_version``; hand ``run`` to the datasets
    that record it. Returns how many versions were pinned."""
    last = final_outputs(pipeline)
    pinned = 0
    for name in sorted(pipeline.all_outputs()):
        dataset = catalog.get(name)
        if is_versioned(dataset):
            pin_version(dataset, run.final_version if name in last else run.run_id)
            pinned += 1
        if hasattr(dataset, "bind_run"):
            dataset.bind_run(run)
    return pinned


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
            if not is_ephemeral(dataset) and not _saved(dataset, mlflow_run_id):
                return False
    return True


def _saved(dataset, mlflow_run_id: str | None) -> bool:
    """Whether ``dataset`` exists; one that MLflow tracks, in run ``mlflow_run_id``."""
    from kedro_mlflow.io.metrics import MlflowMetricsHistoryDataset  # noqa: PLC0415 (kedro-mlflow imports MLflow)

    saved_in = getattr(dataset, "saved_in", None)  # the project's model-tracking dataset
    if isinstance(dataset, MlflowMetricsHistoryDataset) or saved_in is not None:
        if not mlflow_run_id:
            return False
        if saved_in is not None:
            import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

            return saved_in(mlflow.MlflowClient().get_run(mlflow_run_id))
        probe = copy.copy(dataset)  # the run's own dataset keeps following the active run
        probe.run_id = mlflow_run_id
        return probe.exists()
    return dataset.exists()


def steps_done(pipeline) -> str:
    """What a pipeline's steps are, in words: ``26 generations``, ``4 chunks``, or ``its nodes``."""
    last: dict[str, int] = {}
    for node in pipeline.nodes:
        step = parse_step(node.namespace)
        if step:
            last[step[0]] = max(last.get(step[0], 0), step[1])
    for kind, word in ((GENERATION, "generations"), (CHUNK, "chunks")):
        if kind in last:
            return f"{last[kind]} {word}"
    return f"the outputs of its {len(pipeline.nodes)} nodes"
