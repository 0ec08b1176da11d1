"""Project settings (see https://docs.kedro.org/en/stable/kedro_project_setup/settings.html).

kedro-mlflow registers its own hooks through its plugin entry point; the
project's hooks (``hooks.py``) open one MLflow child run per generation and
keep the MLflow run stack clean; ``RegistryParamsHook`` hands the run's
parameters to the pipeline registry (the AlphaZero DAG depends on them).
"""

from kedro.config import OmegaConfigLoader

from connect_zero_pipeline.hooks import GenerationRunsHook, MlflowRunStackHook
from connect_zero_pipeline.pipelines.alphazero.structure import RegistryParamsHook

HOOKS = (RegistryParamsHook(), GenerationRunsHook(), MlflowRunStackHook())

CONFIG_LOADER_CLASS = OmegaConfigLoader
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    "config_patterns": {
        "mlflow": ["mlflow*", "mlflow*/**"],
    },
}

from connect_zero_pipeline import quiet  # noqa: E402

quiet.install()
