"""``RunModelDataset``: kedro-mlflow's model-tracking dataset that knows whether it was saved.

kedro-mlflow's ``MlflowModelTrackingDataset`` logs a model into the active
MLflow run (and registers a version) but cannot tell whether it already did,
so ``--only-missing-outputs`` took it for missing and ran the export again:
a resumed, finished run re-exported and re-registered its model. This
subclass answers ``exists()`` from the run itself: the model is there when the
active run (the resumed run's own parent) already has a logged model of that
name.
"""

from __future__ import annotations

import mlflow
from kedro_mlflow.io.models import MlflowModelTrackingDataset


class RunModelDataset(MlflowModelTrackingDataset):
    """``MlflowModelTrackingDataset`` whose ``exists()`` looks in the active MLflow run."""

    def _exists(self) -> bool:
        run = mlflow.active_run()
        name = (self._save_args or {}).get("name")
        if run is None or not name:
            return False
        found = mlflow.search_logged_models(
            experiment_ids=[run.info.experiment_id],
            filter_string=f"source_run_id = '{run.info.run_id}' AND name = '{name}'",
            output_format="list",
        )
        return bool(found)
