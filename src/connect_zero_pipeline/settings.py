"""Project settings (see https://docs.kedro.org/en/stable/kedro_project_setup/settings.html).

kedro-mlflow's hooks are registered here, under its plugin's entry-point name, so that
its module (and MLflow) is imported at their first call, not when a session starts
(:class:`.session.hooks.MlflowPluginHook`). ``ProjectSession``
(``session/project_session.py``) plans each run once (its parameters validated, a resume checked, its
start point resolved: :mod:`.run`) and registers the run's own hooks with that plan: the
run's record (:class:`.session.run_life.RunLife`), one MLflow child run per generation
(:class:`.session.generation_runs.GenerationRunsHook`) and the summary
(:class:`.session.summary.RunSummaryHook`).
``HOOKS`` holds the stateless ones: the pipelines' shape, checked for any session,
kedro-mlflow's hooks (imported at their first call) and MLflow's run stack kept clean. No hook's
correctness depends on the order in which hooks are registered.
"""

from kedro.config import OmegaConfigLoader

from connect_zero_pipeline.common.config_loader import CONFIG_LOADER_ARGS as _LOADER_ARGS
from connect_zero_pipeline.datasets.atomic import AtomicDataCatalog
from connect_zero_pipeline.session.hooks import (
    MlflowPluginHook,
    MlflowRunStackHook,
    PipelineShapeHook,
)
from connect_zero_pipeline.session.project_session import ProjectSession

# kedro-mlflow's hooks are registered here, under its plugin's name, so that Kedro does not
# import its module (and MLflow) when a session starts: hooks.MlflowPluginHook.
HOOKS = (PipelineShapeHook(), MlflowPluginHook(), MlflowRunStackHook())

# Every versioned output appears whole or not at all (datasets/atomic.py).
DATA_CATALOG_CLASS = AtomicDataCatalog
# A run is planned once and recorded whatever ends it (session/project_session.py).
SESSION_CLASS = ProjectSession

CONFIG_LOADER_CLASS = OmegaConfigLoader
CONFIG_LOADER_ARGS = _LOADER_ARGS  # parameters merge key by key over conf/base

from connect_zero_pipeline.common import quiet  # noqa: E402

quiet.install()
