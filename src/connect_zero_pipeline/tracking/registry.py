"""The MLflow model registry: what a registered version says about itself, and the champion.

Every export registers a version of ``connect-zero`` (``catalog.yml``,
``onnx_model_mlflow``). :class:`~.datasets.mlflow_model.RunModelDataset` logs
it with :func:`onnx_signature` and then calls :func:`describe_version`, which
gives the version:

- a description (what it is, how strong, the signature in words);
- tags ``generation``, ``run_id``, ``solver.acc``, ``solver.weak_acc``, ``pipeline``
  and, for a run started from a trained model, ``start_from`` (the strength figures
  travel in the ONNX file's metadata, measured by the export node on the shipped
  solver set);
- the alias ``champion``, when the version beats the current champion on
  ``solver.acc`` (or there is none yet). Once a ladder moved the champion
  (``ladder.move_champion``, the model's tag ``champion_by: ladder.elo``), the
  alias follows the ladder and exports leave it alone.

:func:`load_registered` reads a ``models:/<name>@<alias>`` or
``models:/<name>/<version>`` URI of the project's store as an
:class:`~.core.export.OnnxNetwork`, for ``play``, ``benchmark`` and the ladder.
"""

from __future__ import annotations

import logging
import math
import tempfile
from pathlib import Path
from typing import Any

from ..common.config_loader import project_config
from ..core.board import HEIGHT, WIDTH
from ..core.config.export import INPUT_NAME, OUTPUT_NAMES

log = logging.getLogger(__name__)

REGISTERED_MODEL = "connect-zero"
"""The registered model every export adds a version to (``catalog.yml``, ``onnx_model_mlflow``)."""
CHAMPION = "champion"
"""The alias of the best registered version."""
CHAMPION_METRIC = "solver.acc"
"""What the champion is chosen by (higher is better)."""
CHAMPION_BY_TAG = "champion_by"
"""A registered-model tag: ``ladder.elo`` once a ladder moved the champion (``ladder.
move_champion``); exports then leave the alias alone (unless there is no champion)."""
WEIGHTS_TAG = "weights_sha256"
"""A version's (and a logged model's) tag: the digest of its weights
(:func:`~.core.export.weights_digest`). Weights registered once are not registered again."""
TAG_KEYS = ("generation", "run_id", "solver.acc", "solver.weak_acc", "pipeline", "start_from",
            WEIGHTS_TAG)  # fmt: skip
"""The tags a registered version may have."""


def onnx_signature():
    """The MLflow signature of the exported protocol: ``board`` int8 ``[-1, 6, 7]`` ->
    ``logits`` float32 ``[-1, 7]``, ``value`` float32 ``[-1]``."""
    import numpy as np  # noqa: PLC0415 (numpy: not for the light commands)
    from mlflow.models import ModelSignature  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)
    from mlflow.types.schema import Schema, TensorSpec  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    return ModelSignature(
        inputs=Schema([TensorSpec(np.dtype(np.int8), (-1, HEIGHT, WIDTH), INPUT_NAME)]),
        outputs=Schema(
            [
                TensorSpec(np.dtype(np.float32), (-1, WIDTH), OUTPUT_NAMES[0]),
                TensorSpec(np.dtype(np.float32), (-1,), OUTPUT_NAMES[1]),
            ]
        ),
    )


def version_tags(meta: dict[str, Any], run_id: str | None, pipeline: str | None,
                 start_from: str | None = None, weights: str | None = None) -> dict[str, str]:  # fmt: skip
    """The tags of a version from its ONNX file's ``meta`` and the run that made it
    (``start_from``: the trained model that run started from, in words; ``weights``: the
    digest of its weights)."""
    values = {
        "generation": meta.get("generation"),
        "run_id": run_id,
        "solver.acc": meta.get("solver.acc"),
        "solver.weak_acc": meta.get("solver.weak_acc"),
        "pipeline": pipeline,
        "start_from": start_from,
        WEIGHTS_TAG: weights,
    }
    return {k: (f"{v:.4f}" if isinstance(v, float) else str(v)) for k, v in values.items()
            if v is not None}  # fmt: skip


def describe(tags: dict[str, str]) -> str:
    """A version's description, from its tags."""
    text = f"Generation {tags['generation']}" if "generation" in tags else "A model"
    if "run_id" in tags:
        text += f" of run {tags['run_id']}"
    if "pipeline" in tags:
        text += f" (pipeline {tags['pipeline']})"
    if "start_from" in tags:
        text += f", started from {tags['start_from']}"
    text += ", a Connect-4 AlphaZero network in ONNX."
    if "solver.acc" in tags:
        text += (f" On the shipped solver set the network alone plays the best move in "
                 f"{float(tags['solver.acc']):.1%} of positions (solver.acc)")  # fmt: skip
        if "solver.weak_acc" in tags:
            text += (f" and keeps the best outcome in {float(tags['solver.weak_acc']):.1%} "
                     f"(solver.weak_acc)")  # fmt: skip
        text += "."
    return text + (
        " Input `board` int8 [batch, 6, 7] (+1 the side to move, -1 the opponent, row 0 at "
        "the top); outputs `logits` float32 [batch, 7] (one per column) and `value` float32 "
        "[batch] in [-1, 1]."
    )


def _score(tags: dict[str, str]) -> float:
    try:
        return float(tags.get(CHAMPION_METRIC, "nan"))
    except ValueError:
        return math.nan


def describe_version(client, name: str, version: str, tags: dict[str, str]) -> bool:
    """Tag and describe version ``version`` of ``name``; move ``champion`` to it when it beats
    the current champion on ``solver.acc``. Returns whether it became the champion.
    Run again on the same version (a resumed export), it changes nothing more."""
    for key, value in tags.items():
        client.set_model_version_tag(name, version, key, value)
    champion = _crown(client, name, version, _score(tags))
    # Last: a version with a description is complete (RunModelDataset.exists).
    client.update_model_version(name, version, description=describe(tags))
    return champion


def crown_by_ladder(client, version: str, name: str = REGISTERED_MODEL) -> None:
    """Move ``champion`` to ``version``, the best-rated of a ladder, and mark the model as
    following the ladder (:data:`CHAMPION_BY_TAG`): exports then leave the alias alone."""
    client.set_registered_model_alias(name, CHAMPION, version)
    client.set_registered_model_tag(name, CHAMPION_BY_TAG, "ladder.elo")


def _crown(client, name: str, version: str, new: float) -> bool:
    """Move ``champion`` to ``version`` if its score ``new`` beats the champion's."""
    from mlflow.exceptions import MlflowException  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    if math.isnan(new):
        return False
    try:
        current = client.get_model_version_by_alias(name, CHAMPION)
    except MlflowException:  # no champion yet
        current = None
    follows_ladder = client.get_registered_model(name).tags.get(CHAMPION_BY_TAG) == "ladder.elo"
    if current is not None and (follows_ladder or not new > _score(current.tags)):
        return False
    client.set_registered_model_alias(name, CHAMPION, version)
    log.info("%s version %s is the new %s (%s %.4f)", name, version, CHAMPION,
             CHAMPION_METRIC, new)  # fmt: skip
    return True


def project_client(project: Path):
    """An ``MlflowClient`` on the tracking store and registry of the Kedro project at
    ``project`` (its ``mlflow.yml``); no global MLflow URI is changed."""
    import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    server = project_config(project, "mlflow")["server"]
    tracking = server["mlflow_tracking_uri"]
    return mlflow.MlflowClient(tracking_uri=tracking,
                               registry_uri=server.get("mlflow_registry_uri") or tracking)  # fmt: skip


def run_version(client, name: str, mlflow_run_id: str, model_id: str | None = None):
    """The newest version of registered model ``name`` registered from MLflow run
    ``mlflow_run_id`` (a run's parent; an extended run has one per export), or of its logged
    model ``model_id`` only; None if there is none."""
    found = client.search_model_versions(f"name = '{name}' AND run_id = '{mlflow_run_id}'")
    if model_id is not None:  # a version's model_id is not stored by every store: its source is
        found = [v for v in found if v.model_id == model_id or v.source == f"models:/{model_id}"]
    return max(found, key=lambda v: int(v.version)) if found else None


def weights_version(client, name: str, digest: str | None):
    """The version of registered model ``name`` whose weights have ``digest`` (the first
    registered: weights are registered once), or None."""
    if not digest:
        return None
    found = client.search_model_versions(f"name = '{name}' AND tags.{WEIGHTS_TAG} = '{digest}'")
    return min(found, key=lambda v: int(v.version)) if found else None


def run_model_version(client, name: str, mlflow_run_id: str):
    """The version of ``name`` that holds a model of MLflow run ``mlflow_run_id``: the newest
    registered from it, else the one registered earlier with the same weights as a model
    the run logged (an export of weights already registered adds no version); None."""
    version = run_version(client, name, mlflow_run_id)
    if version is not None:
        return version
    run = client.get_run(mlflow_run_id)
    logged = client.search_logged_models(experiment_ids=[run.info.experiment_id],
                                         filter_string=f"source_run_id = '{mlflow_run_id}'")  # fmt: skip
    same = [weights_version(client, name, m.tags.get(WEIGHTS_TAG)) for m in logged]
    same = [v for v in same if v is not None]
    return max(same, key=lambda v: int(v.version)) if same else None


def find_version(client, name: str, ref: str):
    """Version ``ref`` (a number or an alias) of registered model ``name``.

    Raises:
        ValueError: naming ``ref``, with the model's known versions and aliases.
    """
    from mlflow.exceptions import MlflowException  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    ref = str(ref)
    try:
        if ref.isdigit():
            return client.get_model_version(name, ref)
        return client.get_model_version_by_alias(name, ref)
    except MlflowException as exc:
        raise ValueError(
            f"{name} has no version or alias {ref!r} ({_known(client, name)})"
        ) from exc


REGISTRY_PREFIX = "models:/"
"""How a registered version is named: ``models:/<name>@<alias>`` or ``models:/<name>/<n>``."""


def parse_model_uri(uri: str) -> tuple[str, str]:
    """``(name, alias or version)`` of ``models:/<name>@<alias>`` or ``models:/<name>/<n>``: the
    one parser of these URIs (``model.start_from``, ``play --model``, the ladder)."""
    body = uri.removeprefix(REGISTRY_PREFIX)
    name, _, ref = body.partition("@") if "@" in body else body.partition("/")
    return name, ref


def load_registered(uri: str, project: Path):
    """``models:/<name>@<alias>`` or ``models:/<name>/<version>`` of the project's store, as an
    :class:`~.core.export.OnnxNetwork`.

    Raises:
        ValueError: naming the URI, for an unknown model, alias or version (with the known ones).
    """
    client = project_client(project)
    name, ref = parse_model_uri(uri)
    try:
        version = find_version(client, name, ref)
    except ValueError as exc:
        raise ValueError(
            f"{uri}: no such registered model version ({_known(client, name)})"
        ) from exc
    # The version's own artifact location: no global tracking or registry URI is touched.
    source = client.get_model_version_download_uri(name, version.version)
    return load_version_files(source, version_words(name, version.version, version.tags))


def version_words(name: str, version: str, tags: dict[str, str]) -> str:
    """``connect-zero version 3: run <id>, generation 7``: a registered version and the run
    and generation that made it (its tags; a version without them is named alone)."""
    made = [f"run {tags['run_id']}"] if tags.get("run_id") else []
    made += [f"generation {tags['generation']}"] if tags.get("generation") else []
    return f"{name} version {version}" + (f": {', '.join(made)}" if made else "")


def load_version_files(source: str, described: str):
    """The ONNX network of a registered version's files at ``source`` (its download URI), as
    an :class:`~.core.export.OnnxNetwork` whose ``meta`` says it is ``described``."""
    import mlflow  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    from ..core.export import OnnxNetwork  # noqa: PLC0415 (.core.export imports torch)

    with tempfile.TemporaryDirectory() as tmp:
        local = mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=tmp)
        files = sorted(Path(local).rglob("*.onnx"))
        if not files:
            raise ValueError(f"{described} holds no ONNX file")
        network = OnnxNetwork(files[0].read_bytes())
    network.meta = {**network.meta, "registered": described}
    return network


def _known(client, name: str) -> str:
    from mlflow.exceptions import MlflowException  # noqa: PLC0415 (MLflow: 1.5 s, when the store is used)

    try:
        model = client.get_registered_model(name)
    except MlflowException:
        names = sorted(m.name for m in client.search_registered_models())
        return f"registered models: {names}" if names else "the registry is empty"
    versions = sorted(int(v.version) for v in client.search_model_versions(f"name='{name}'"))
    aliases = sorted(model.aliases or {})
    return f"{name} has versions {versions}, aliases {aliases}"
