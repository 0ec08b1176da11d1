"""The hooks of every session (``settings.HOOKS``): light by construction.

Kedro registers these when any session is created, before a run's parameters are checked,
so this module imports nothing heavy; MLflow is imported when a run first calls a hook that
needs it. The run's own hooks (its record, its MLflow children, its summary) are registered
by :class:`.session.project_session.ProjectSession` once the run is planned.

``PipelineShapeHook``. Refuses structural parameters (``alphazero.num_generations``, ...)
that the session's pipelines were not built from (a plain ``KedroSession``), first of all.

``MlflowPluginHook``. kedro-mlflow's hooks (its plugin's ``mlflow_hook``), registered under
the plugin's entry-point name so that Kedro does not load the plugin's module when a session
starts (pluggy loads no entry point whose name is registered already): kedro-mlflow's
module, and MLflow with it, is imported at the first hook call, the context's creation in a
run, and every call is kedro-mlflow's own.

``MlflowRunStackHook``. kedro-mlflow reopens its run at every node (for thread
safety), which pushes the same run onto MLflow's stack again; after the run
only one entry is popped. In a process that runs several sessions (tests,
notebooks) the next session would log into the stale run. This hook runs last
and ends every run still on the stack: FINISHED after success, FAILED after an
error.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from kedro.framework.hooks import hook_impl

from ..common.errors import RunRefused
from ..pipelines.structure import check_shape

log = logging.getLogger(__name__)

MLFLOW_PLUGIN_HOOK = "mlflow_hook"
"""kedro-mlflow's ``kedro.hooks`` entry point (``kedro_mlflow.framework.hooks.mlflow_hook``)."""


def end_all_runs(status: str) -> int:
    """End every active MLflow run of this thread with ``status``; returns how many (none in
    a process that has not imported MLflow: no run can be active there)."""
    mlflow = sys.modules.get("mlflow")
    if mlflow is None:
        return 0
    ended = 0
    while mlflow.active_run() is not None:
        mlflow.end_run(status)
        ended += 1
    return ended


class MlflowPluginHook:
    """kedro-mlflow's hooks, imported at their first call (module docstring). Each method is
    one of the plugin's hook implementations, with its arguments
    (``tests/test_internals.py`` checks they are the same on the installed kedro-mlflow)."""

    __name__ = MLFLOW_PLUGIN_HOOK  # pluggy's name for it: the plugin's entry point is taken

    def __init__(self) -> None:
        self._hook: Any = None

    def plugin(self) -> Any:
        """kedro-mlflow's own hook object, imported now if it was not."""
        if self._hook is None:
            from kedro_mlflow.framework.hooks import mlflow_hook  # noqa: PLC0415 (kedro-mlflow imports MLflow)

            self._hook = mlflow_hook
        return self._hook

    @hook_impl
    def after_context_created(self, context) -> None:
        self.plugin().after_context_created(context=context)

    @hook_impl
    def after_catalog_created(self, catalog, conf_catalog, conf_creds, parameters,
                              save_version, load_versions) -> None:  # fmt: skip
        self.plugin().after_catalog_created(catalog=catalog, conf_catalog=conf_catalog,
                                            conf_creds=conf_creds, parameters=parameters,
                                            save_version=save_version,
                                            load_versions=load_versions)  # fmt: skip

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        self.plugin().before_pipeline_run(run_params=run_params, pipeline=pipeline,
                                          catalog=catalog)  # fmt: skip

    @hook_impl
    def before_node_run(self, node, catalog, inputs, is_async) -> None:
        self.plugin().before_node_run(node=node, catalog=catalog, inputs=inputs,
                                      is_async=is_async)  # fmt: skip

    @hook_impl
    def after_pipeline_run(self, run_params, pipeline, catalog) -> None:
        self.plugin().after_pipeline_run(run_params=run_params, pipeline=pipeline,
                                         catalog=catalog)  # fmt: skip

    @hook_impl
    def on_pipeline_error(self, error, run_params, pipeline, catalog) -> None:
        self.plugin().on_pipeline_error(error=error, run_params=run_params, pipeline=pipeline,
                                        catalog=catalog)  # fmt: skip


class PipelineShapeHook:
    """Refuses, before any hook writes, parameters that change the pipelines' shape in a
    session that did not build its pipelines from them (a plain ``KedroSession``:
    :func:`.pipelines.structure.check_shape`). Stateless: ``settings.HOOKS``."""

    @hook_impl(tryfirst=True)
    def after_context_created(self, context) -> None:
        try:
            check_shape(dict(context.config_loader["parameters"]))
        except ValueError as exc:
            raise RunRefused(str(exc)) from exc


class MlflowRunStackHook:
    @hook_impl(trylast=True)
    def after_pipeline_run(self) -> None:
        end_all_runs("FINISHED")

    @hook_impl(trylast=True)
    def on_pipeline_error(self) -> None:
        if end_all_runs("FAILED"):
            log.debug("MLflow runs left open by the failed pipeline were marked FAILED")
