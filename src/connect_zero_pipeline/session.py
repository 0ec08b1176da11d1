"""``ProjectSession``: a ``KedroSession`` that builds its pipelines from its own parameters,
and after which a failed run always says it failed.

The unrolled pipelines' shape comes from structural parameters
(:mod:`.pipelines.structure`): the session reads its merged parameters (base, env,
``--params``) with its own config loader, and Kedro builds the pipelines inside
:func:`.pipelines.structure.reading`.

Kedro tells hooks of a failure (``on_pipeline_error``) only when a node raised an
``Exception``. A run can also fail in a hook before the first node (the MLflow store),
or be stopped with Ctrl-C (``KeyboardInterrupt``); the session then calls
:func:`.hooks.record_failure`, so the run's manifest says ``failed`` with the error and
its MLflow runs end FAILED in every case. ``settings.SESSION_CLASS`` names it, so
``kedro run`` and ``python -m connect_zero_pipeline`` use it.

A ``--only-missing-outputs`` run whose every output already exists (a resume repeated)
stops before it writes anything: no manifest, MLflow run or summary changes, and it says
so and exits 0 (:class:`.runs.NothingToDo`).

Node filters (``--nodes``, ``--from-nodes``, ``--tags``, ...) that name nothing in the run's
pipelines are refused before the context is created, so before any hook writes (the
MLflow store): Kedro itself filters only after.
"""

from __future__ import annotations

from typing import Any

from kedro.framework.session import KedroSession


class ProjectSession(KedroSession):
    def parameters(self) -> dict[str, Any]:
        """The session's merged parameters (base, env, runtime), read from its configuration."""
        return dict(self._get_config_loader()["parameters"])

    def load_context(self):
        from .pipelines.structure import reading

        with reading(self.parameters()):  # its checks see the parameters the run builds from
            return super().load_context()

    def run(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from .errors import NothingToDo
        from .pipelines.structure import reading

        params = self.parameters()
        try:
            with reading(params):
                check_filters(params, kwargs)
                return super().run(*args, **kwargs)
        except NothingToDo as done:  # every output exists: nothing ran, nothing was written
            print(done, flush=True)
            return {}
        except BaseException as error:
            from .hooks import record_failure

            record_failure(error)
            raise


def check_filters(params: dict[str, Any], run_kwargs: dict[str, Any]) -> None:
    """Filter the run's pipelines as Kedro will, raising Kedro's ``ValueError`` for a name
    they do not hold. Parameters that do not validate are left to the run-start hook, which
    refuses them with its own message."""
    from .naming import FILTERS

    asked = {FILTERS[k]: v for k, v in run_kwargs.items() if k in FILTERS and v}
    if not asked:
        return
    from kedro.framework.project import pipelines
    from kedro.pipeline import Pipeline

    from .params.schema import validate_params
    from .pipelines.structure import check_shape

    try:
        validate_params(params)
        check_shape(params)
    except ValueError:
        return
    names = run_kwargs.get("pipeline_names") or None
    pipelines.set_requested(names)  # as Kedro's run does: only these are built (and cached)
    combined = Pipeline([])
    for name in names or ["__default__"]:
        if name in pipelines:  # an unknown pipeline is Kedro's error to raise
            combined += pipelines[name]
    combined.filter(**asked)
