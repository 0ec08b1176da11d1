"""``RunModelDataset``: kedro-mlflow's model-tracking dataset that knows whether it was saved.

kedro-mlflow's ``MlflowModelTrackingDataset`` logs a model into the active
MLflow run (and registers a version) but cannot tell whether it already did,
so ``--only-missing-outputs`` took it for missing and ran the export again:
a resumed, finished run re-exported and re-registered its model. This
subclass answers ``exists()`` from the run itself: the model is there when the
active run (the resumed run's own parent) already has a logged model of that
name.

Each save also registers a described version (:mod:`..registry`): the ONNX
signature, a description, tags and the ``champion`` alias. Its pip requirements
are stated (:func:`model_requirements`) rather than inferred by MLflow, which
loads the model in a subprocess to find them (about 2 s a save).
"""

from __future__ import annotations

import mlflow
from kedro_mlflow.io.models import MlflowModelTrackingDataset


def model_requirements() -> list[str]:
    """What serving the ONNX model needs, pinned to this environment's versions: the ONNX
    flavour's own (onnx, onnxruntime) and numpy, as MLflow's inference finds them."""
    from importlib.metadata import version

    from mlflow.onnx import get_default_pip_requirements

    return [*get_default_pip_requirements(), f"numpy=={version('numpy')}"]


class RunModelDataset(MlflowModelTrackingDataset):
    """``MlflowModelTrackingDataset`` whose ``exists()`` looks in the active MLflow run, and
    whose registered versions describe themselves (:func:`..registry.describe_version`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "signature" not in self._save_args:
            from ..registry import onnx_signature

            self._save_args["signature"] = onnx_signature()
        if "pip_requirements" not in self._save_args:  # MLflow would infer them (2 s a save)
            self._save_args["pip_requirements"] = model_requirements()

    def _save(self, model) -> None:
        super()._save(model)
        name = self._save_args.get("registered_model_name")
        version = getattr(self.model_info, "registered_model_version", None)
        if not name or version is None:
            return
        from ..core.export import onnx_info
        from ..pipeline_registry import pipeline_label
        from ..registry import describe_version, version_tags
        from ..runs import run_identity

        meta = onnx_info(model.SerializeToString())["meta"]
        pipelines = (run_identity.manifest or {}).get("pipelines")
        tags = version_tags(
            meta, run_identity.run_id, pipeline_label(pipelines) if pipelines else None
        )
        describe_version(mlflow.MlflowClient(), name, str(version), tags)

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
