"""Project settings (see https://docs.kedro.org/en/stable/kedro_project_setup/settings.html).

kedro-mlflow registers its own hooks through its plugin entry point; the
project's hooks (``hooks.py``) open one MLflow child run per generation and
keep the MLflow run stack clean; ``RunStartHook`` validates the run's
parameters before any work; ``run_identity`` makes a run read only its own
versions and resume by its id; ``RunSummaryHook`` prints what a finished run
produced. ``ProjectSession`` (``session.py``) hands the merged parameters to the
pipeline registry: the unrolled DAGs depend on them.
"""

from kedro.config import OmegaConfigLoader

from connect_zero_pipeline.config_loader import CONFIG_LOADER_ARGS as _LOADER_ARGS
from connect_zero_pipeline.datasets.atomic import AtomicDataCatalog
from connect_zero_pipeline.hooks import GenerationRunsHook, MlflowRunStackHook, RunStartHook
from connect_zero_pipeline.runs import run_identity
from connect_zero_pipeline.session import ProjectSession
from connect_zero_pipeline.summary import RunSummaryHook

# run_identity comes last: of the hooks that run last after a pipeline (trylast), pluggy
# calls the last registered last, and the run's manifest says "finished" only after
# every other write of the run.
HOOKS = (
    RunStartHook(),
    GenerationRunsHook(),
    RunSummaryHook(),
    MlflowRunStackHook(),
    run_identity,
)

# Every versioned output appears whole or not at all (datasets/atomic.py).
DATA_CATALOG_CLASS = AtomicDataCatalog
# A run that fails in any way (a hook, Ctrl-C) is recorded as failed (session.py).
SESSION_CLASS = ProjectSession

CONFIG_LOADER_CLASS = OmegaConfigLoader
CONFIG_LOADER_ARGS = _LOADER_ARGS  # parameters merge key by key over conf/base

from connect_zero_pipeline import quiet  # noqa: E402

quiet.install()
