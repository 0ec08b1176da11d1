"""Project hooks.

``MlflowRunStackHook`` keeps the MLflow run stack clean. kedro-mlflow reopens
its run at every node (for thread safety), which pushes the same run onto
MLflow's stack again; after the run only one entry is popped. In a process
that runs several sessions (tests, notebooks) the next session would then log
into the stale run. This hook runs after kedro-mlflow's own and ends every run
still on the stack: FINISHED after success, FAILED after an error.
"""

from __future__ import annotations

import logging

import mlflow
from kedro.framework.hooks import hook_impl

log = logging.getLogger(__name__)


def end_all_runs(status: str) -> int:
    """End every active MLflow run of this thread with ``status``; returns how many."""
    ended = 0
    while mlflow.active_run() is not None:
        mlflow.end_run(status)
        ended += 1
    return ended


class MlflowRunStackHook:
    @hook_impl(trylast=True)
    def after_pipeline_run(self) -> None:
        end_all_runs("FINISHED")

    @hook_impl(trylast=True)
    def on_pipeline_error(self) -> None:
        if end_all_runs("FAILED"):
            log.info("MLflow runs left open by the failed pipeline were marked FAILED")
