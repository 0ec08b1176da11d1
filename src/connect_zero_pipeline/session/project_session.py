"""``ProjectSession``: a ``KedroSession`` that plans its run once and hands it to its hooks.

**The plan.** Before anything is written, the session reads its merged parameters
(base, env, ``--params``) and plans the run (:func:`.run.plan`): the parameters are
validated once, a resume is checked and the start point resolved, into one immutable
:class:`.run.RunContext`. Node filters (``--nodes``, ``--from-nodes``, ``--tags``, ...)
that name nothing in the run's pipelines are refused next (Kedro itself filters only
after its hooks have written), and the MLflow store is prepared.

**The hooks.** Once the run is planned, the session registers the run's own hooks, each
given the run's :class:`.run_life.RunLife` (which holds the context): :class:`.run_life.RunLife`
itself (the manifest, the pinned versions, the start point),
:class:`.session.generation_runs.GenerationRunsHook` (the MLflow children) and
:class:`.session.summary.RunSummaryHook` (so a run its plan refuses imports none of MLflow).
``settings.HOOKS`` holds the stateless rest. **The runner** is the one ``kedro run
--runner`` named, else the recipe's (:func:`chosen_runner`).

**The pipelines.** Their shape comes from structural parameters
(:mod:`.pipelines.structure`): Kedro builds them inside :func:`.pipelines.structure.reading`
of the session's parameters.

**The end.** The run's manifest says ``finished`` after every hook of the run returned
(:meth:`.run_life.RunLife.finish`). Kedro tells hooks of a failure (``on_pipeline_error``) only
when a node raised an ``Exception``; a run can also fail in a hook (the MLflow store) or be
stopped with Ctrl-C. The session then calls every project hook's ``on_pipeline_error`` and
:meth:`.run_life.RunLife.fail`, so the manifest says ``failed`` with the error and the MLflow
runs end FAILED in every case, and marks the error with the run's id for the command line
(:func:`.common.errors.run_of`). A ``--only-missing-outputs`` run whose every output already
exists stops before it writes anything, says so and returns (:class:`.common.errors.NothingToDo`).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kedro.framework.project import pipelines, settings
from kedro.framework.session import KedroSession
from kedro.pipeline import Pipeline

from ..common.errors import NothingToDo, mark_run
from ..common.internals import session_config, session_hooks
from ..common.naming import FILTERS
from ..params.schema import RunParams, parse_run_params
from ..pipelines.structure import reading
from ..run.context import plan
from ..run.liveness import remove_dead_semaphores
from ..tracking.store import prepare_store, store_line
from .run_life import RunLife
from .runner import RecipeRunner, recipe_runner

log = logging.getLogger(__name__)


@contextlib.contextmanager
def reopening(mlflow_run_id: str | None) -> Iterator[None]:
    """Inside the block, the next MLflow run started (kedro-mlflow's parent) is run
    ``mlflow_run_id``, reopened: MLflow's own ``MLFLOW_RUN_ID``, which it clears once used."""
    if not mlflow_run_id:
        yield
        return
    os.environ["MLFLOW_RUN_ID"] = mlflow_run_id
    try:
        yield
    finally:
        os.environ.pop("MLFLOW_RUN_ID", None)


class ProjectSession(KedroSession):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.life = RunLife()
        """The run's context and record (:class:`.run_life.RunLife`); its context is None until
        :meth:`run` plans it."""
        self._run_hooks: tuple = ()

    def _register_run_hooks(self) -> None:
        """The run's own hooks, once it is planned: its record, its MLflow children and its
        summary (imported here: their modules import MLflow and numpy, which a run refused by
        its plan never loads)."""
        from .generation_runs import GenerationRunsHook  # noqa: PLC0415 (imports MLflow: after the plan)
        from .summary import RunSummaryHook  # noqa: PLC0415 (imports numpy: after the plan)

        self._run_hooks = (GenerationRunsHook(self.life), RunSummaryHook(self.life))
        for hook in (self.life, *self._run_hooks):
            session_hooks(self).register(hook)

    def parameters(self) -> dict[str, Any]:
        """The session's merged parameters (base, env, runtime), read from its configuration."""
        return dict(session_config(self)["parameters"])

    def load_context(self):
        """Kedro's context, the pipelines built from this session's parameters: its run's
        sections once it is planned (no second parse), else parsed here (``kedro ipython``,
        ``session.load_context()``)."""
        run = self.life.context
        sections = run.sections if run is not None else parse_run_params(self.parameters())
        with reading(sections):
            return super().load_context()

    def run(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        params = self.parameters()
        root = Path(self.store["project_path"])
        try:
            names = kwargs.get("pipeline_names") or [kwargs.get("pipeline_name")]
            run = plan(root, params, self.store.get("env"), self.session_id, names)
            with reading(run.sections):
                check_filters(kwargs)
                self._prepare_store(root)
                self._remove_dead_semaphores()
                self._register_run_hooks()
                self.life.begin(run)
                kwargs["runner"] = chosen_runner(kwargs.get("runner"), run.sections)
                with reopening(run.mlflow_parent):
                    result = super().run(*args, **kwargs)
            self.life.finish()
            return result
        except NothingToDo as done:  # every output exists: nothing ran, nothing was written
            print(done, flush=True)
            return {}
        except BaseException as error:
            unrecorded = self._record_failure(error)
            if self.life.started:
                mark_run(error, self.life.context.run_id, unrecorded)
            raise

    @staticmethod
    def _remove_dead_semaphores() -> None:
        """What a run killed with its whole process group left in ``/dev/shm`` goes now."""
        removed = remove_dead_semaphores()
        if removed:
            log.info("Removed %d semaphores in /dev/shm that a stopped run left behind",
                     len(removed))  # fmt: skip

    def _prepare_store(self, root: Path) -> None:
        try:
            mlflow_conf = session_config(self)["mlflow"]
        except Exception:  # no mlflow.yml: kedro-mlflow's defaults, nothing to prepare
            return
        prepare_store(root, dict(mlflow_conf))

    def _record_failure(self, error: BaseException) -> str | None:
        """Run every project hook's ``on_pipeline_error`` for ``error`` (they do their work
        once, so after Kedro's own call this does nothing), then record the failure in the
        manifest; returns why it could not be, if it could not. A hook that fails (the
        MLflow store is unreachable) is logged and the others still run."""
        for hook in (*self._run_hooks, *settings.HOOKS):
            method = getattr(hook, "on_pipeline_error", None)
            if method is None:
                continue
            needs = {n for n, p in inspect.signature(method).parameters.items()
                     if p.default is inspect.Parameter.empty}  # fmt: skip
            if needs - {"error"}:  # kedro-mlflow's: Kedro calls it for a node's failure
                continue
            try:
                if "error" in needs:
                    method(error=error)
                else:
                    method()
            except Exception as exc:  # the store may be what failed
                why = store_line(exc) or " ".join(str(exc).split())[:300]
                log.warning("%s could not record the failure: %s", type(hook).__name__, why)
        return self.life.fail(error)


def chosen_runner(runner: Any, sections: RunParams) -> Any:
    """The runner a run uses: the one ``kedro run --runner`` named, else the recipe's
    (:func:`.session.runner.recipe_runner` of the run's sections: ``kedro run`` without
    ``--runner`` passes a :class:`.session.runner.RecipeRunner`, a direct ``session.run()``
    none)."""
    if runner is None:
        return recipe_runner(sections)
    if type(runner) is RecipeRunner:
        return recipe_runner(sections, runner.async_io)
    return runner


def check_filters(run_kwargs: dict[str, Any]) -> None:
    """Filter the run's pipelines (built from the sections being read: :func:`..pipelines.structure.reading`)
    as Kedro will, raising Kedro's ``ValueError`` for a name they do not hold."""
    asked = {FILTERS[k]: v for k, v in run_kwargs.items() if k in FILTERS and v}
    if not asked:
        return

    names = run_kwargs.get("pipeline_names") or None
    pipelines.set_requested(names)  # as Kedro's run does: only these are built (and cached)
    combined = Pipeline([])
    for name in names or ["__default__"]:
        if name in pipelines:  # an unknown pipeline is Kedro's error to raise
            combined += pipelines[name]
    combined.filter(**asked)
