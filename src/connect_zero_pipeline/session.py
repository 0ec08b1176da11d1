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
        from .pipelines.structure import reading

        try:
            with reading(self.parameters()):
                return super().run(*args, **kwargs)
        except BaseException as error:
            from .hooks import record_failure

            record_failure(error)
            raise
