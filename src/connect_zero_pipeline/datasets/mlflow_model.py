"""``RunModelDataset``: kedro-mlflow's model-tracking dataset that knows whether it was saved.

kedro-mlflow's ``MlflowModelTrackingDataset`` logs a model into the active
MLflow run (and registers a version) but cannot tell whether it already did,
so ``--only-missing-outputs`` took it for missing and ran the export again:
a resumed, finished run re-exported and re-registered its model. This
subclass answers ``exists()`` from the run itself: the model is there when the
active run (the resumed run's own parent) already has a logged model of that
name made from this run's final outputs (tag :data:`FILES_TAG`: the version of
the ONNX file it was logged from). A run extended to more generations exports
again at a version of its own (:mod:`..run.rules`), so its parent run holds one
logged model, and the registry one version, per export.

Each save also registers a described version (:mod:`..registry`): the ONNX
signature, a description, tags and the ``champion`` alias; unless the same weights are
registered already (the version tag :data:`..registry.WEIGHTS_TAG`, a digest of the
weights): then one line names that version, and no new one is made. Its pip requirements
are stated (:func:`model_requirements`) rather than inferred by MLflow, which
loads the model in a subprocess to find them (a subprocess per save).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from importlib.metadata import version

import mlflow
from kedro_mlflow.io.models import MlflowModelTrackingDataset

from ..common.internals import save_args
from ..common.naming import pipeline_label
from ..core.export import onnx_info, weights_digest
from ..tracking.registry import (
    WEIGHTS_TAG,
    describe_version,
    onnx_signature,
    run_version,
    version_tags,
    weights_version,
)


def model_requirements() -> list[str]:
    """What serving the ONNX model needs, pinned to this environment's versions: the ONNX
    flavour's own (onnx, onnxruntime) and numpy, as MLflow's inference finds them."""
    from mlflow.onnx import get_default_pip_requirements  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    return [*get_default_pip_requirements(), f"numpy=={version('numpy')}"]


FILES_TAG = "files_version"
"""The logged model's tag naming the version of the run's files it was logged from."""


_REGISTER_CHATTER = ("already exists. Creating a new version", "Successfully registered model",
                     "Created version")  # fmt: skip
"""What ``mlflow.register_model`` prints to stderr at every export; the run logs the version."""


def _register(model_uri: str, name: str):
    """``mlflow.register_model``, its chatter (:data:`_REGISTER_CHATTER`) replaced by one
    log line; anything else it prints still reaches stderr."""
    with contextlib.redirect_stderr(io.StringIO()) as said:
        version = mlflow.register_model(model_uri, name)
    rest = [s for s in said.getvalue().splitlines() if not any(c in s for c in _REGISTER_CHATTER)]
    if rest:
        print("\n".join(rest), file=sys.stderr)
    logging.getLogger(__name__).info("Registered %s version %s", name, version.version)
    return version


class RunModelDataset(MlflowModelTrackingDataset):
    """``MlflowModelTrackingDataset`` whose ``exists()`` looks in the active MLflow run, and
    whose registered versions describe themselves (:func:`..registry.describe_version`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._run = None  # the run it is saved by (bind_run)
        if "signature" not in self._save_args:
            self._save_args["signature"] = onnx_signature()
        if "pip_requirements" not in self._save_args:  # MLflow would infer them (2 s a save)
            self._save_args["pip_requirements"] = model_requirements()

    def bind_run(self, run) -> None:
        """Save as part of run ``run`` (a :class:`..run.RunContext`, handed over when the run
        pins its versions): the logged model is tagged with the version of its files, and the
        registered version names the run."""
        self._run = run

    def _files_version(self) -> str | None:
        return self._run.final_version if self._run is not None else None

    def _save(self, model) -> None:
        """Log the model, register a version of it, describe the version: each step once.

        A save cut short (a store error, a full disk) and run again by a resumed run picks
        up where it stopped: the model logged in this run is not logged again, and its
        version is not registered again, so a finished export has one version.
        """
        run = mlflow.active_run()
        name = self._save_args.get("registered_model_name")
        digest = weights_digest(model.SerializeToString())
        logged = self._logged_model(run)
        if logged is None:
            args = {k: v for k, v in self._save_args.items() if k != "registered_model_name"}
            args["tags"] = {**args.get("tags", {}), WEIGHTS_TAG: digest}
            if self._files_version():
                args["tags"][FILES_TAG] = self._files_version()
            with save_args(self, args):  # logged here, registered below (once)
                super()._save(model)
        if run is None or not name:  # tracking off, or nothing to register
            return
        model_uri = self.model_info.model_uri if logged is None else f"models:/{logged.model_id}"
        client = mlflow.MlflowClient()
        version = self._registered_version(client, run, logged)
        if version is None:
            same = weights_version(client, name, digest)
            if same is not None and same.description:  # registered whole already
                logging.getLogger(__name__).info(
                    "%s: these weights are registered already, as version %s: no new version",
                    name, same.version)  # fmt: skip
                return
            version = same or _register(model_uri, name)

        meta = onnx_info(model.SerializeToString())["meta"]
        manifest = (self._run.manifest if self._run is not None else None) or {}
        pipelines = manifest.get("pipelines")
        start = (manifest.get("start_from") or {}).get("described")
        run_id = self._run.run_id if self._run is not None else None
        tags = version_tags(meta, run_id, pipeline_label(pipelines) if pipelines else None, start,
                            digest)  # fmt: skip
        describe_version(client, name, str(version.version), tags)

    def _logged_model(self, run):
        """This dataset's model logged in ``run``, or None."""
        name = (self._save_args or {}).get("name")
        if run is None or not name:
            return None
        where = f"source_run_id = '{run.info.run_id}' AND name = '{name}'"
        if self._files_version():
            where += f" AND tags.{FILES_TAG} = '{self._files_version()}'"
        found = mlflow.search_logged_models(
            experiment_ids=[run.info.experiment_id], filter_string=where, output_format="list"
        )
        return found[0] if found else None

    def _registered_version(self, client, run, logged):
        """The version of the registered model that ``run`` registered from its logged model
        ``logged`` (None: this save's new one), or None."""
        model_id = logged.model_id if logged is not None else self.model_info.model_id
        return run_version(client, self._save_args.get("registered_model_name"),
                           run.info.run_id, model_id)  # fmt: skip

    def _exists(self) -> bool:
        return self.saved_in(mlflow.active_run())

    def saved_in(self, run) -> bool:
        """Saved means complete: logged in MLflow run ``run`` (the active run during a run)
        and, when registered, its version described (the description is
        :func:`..registry.describe_version`'s last write)."""
        logged = self._logged_model(run)
        if logged is None:
            return False
        name = self._save_args.get("registered_model_name")
        if not name:
            return True
        client = mlflow.MlflowClient()
        version = self._registered_version(client, run, logged)
        if version is None:  # its weights registered before, by another export: that version
            version = weights_version(client, name, logged.tags.get(WEIGHTS_TAG))
        return version is not None and bool(version.description)
