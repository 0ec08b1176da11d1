"""Where the project commands (``play``, ``benchmark``) take a trained model from.

The model is ``--model PATH`` (a checkpoint or an exported ONNX file, or a
versioned dataset folder: its latest version), ``--model models:/NAME@ALIAS``
or ``models:/NAME/VERSION`` (a version of the project's MLflow registry, as
an ONNX network), else the latest version of a catalog entry (by default
``latest_model``, the export pipeline's input), read from the Kedro project
around the working directory without running a pipeline.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from ..common import quiet
from ..common.config_loader import chdir, project_config
from ..common.project import project_root
from ..common.stops import EXIT_INTERRUPTED, INTERRUPTED
from ..run.manifest import RUN_ID, newest_version, run_of_version
from ..run.start import resolve
from ..tracking.registry import (
    REGISTRY_PREFIX,  # --model models:/connect-zero@champion
    load_registered,
)

DEFAULT_MODEL_ENTRY = "latest_model"  # the export pipeline's default input

PRETRAINED = Path(__file__).resolve().parents[1] / "pretrained" / "connect_zero.onnx"
"""The model that ships with the project (the default recipe's final generation), played
when this project has trained none yet (pretrained/README.md says how it was made)."""


def pretrained_model():
    """``(OnnxNetwork, description)`` of :data:`PRETRAINED`, or None if it is missing."""
    if not PRETRAINED.is_file():
        return None
    from ..core.export import OnnxNetwork  # noqa: PLC0415 (.core.export imports torch)

    network = OnnxNetwork(PRETRAINED.read_bytes())
    generation = network.meta.get("generation")
    what = f"generation {generation} of the default recipe" if generation else "the default recipe"
    return network, f"the shipped pretrained model ({what}; `make run` trains your own)"


class CommandError(Exception):
    """A problem the user can fix; printed without a traceback."""


EXIT_USAGE = 2  # a usage error: no model, an unreadable file, a port in use


def run_command(body: Callable[[], int], project: Path | None = None) -> int:
    """Run a command's body (in ``project``, ``--project``, when given: paths the user typed
    are made absolute first with :func:`from_here`); a :class:`CommandError` prints
    ``Error: ...`` (exit 2).

    Ctrl-C prints ``Interrupted.`` and exits 130: in a command process through
    :mod:`.interrupts`, in-process (``commands.invoke``) through ``KeyboardInterrupt``.
    """
    try:
        with chdir(project) if project is not None else contextlib.nullcontext():
            return body()
    except CommandError as exc:
        print(f"Error: {exc}", file=sys.stderr)  # the one style, as click and kedro run
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"\n{INTERRUPTED}", file=sys.stderr)
        return EXIT_INTERRUPTED


class NoVersionError(CommandError):
    """The catalog entry exists but nothing was saved to it yet."""


def _quiet_catalog() -> None:
    """Known third-party warnings (omegaconf's resolver API) and the catalog's per-dataset
    loading lines stay out of a command's output."""
    quiet.install()
    quiet.drop_log_records("kedro.io.data_catalog", ["Loading data from"])


def load_catalog_entry(name: str, start: Path | None = None, *, with_version: bool = False):
    """Load the latest version of catalog entry ``name`` of the Kedro project around ``start``
    (with ``with_version``: ``(data, the version loaded)``, None for an unversioned entry).

    Reads ``conf/`` (base + local, or ``$KEDRO_ENV``) without starting a session:
    no hooks, no MLflow run. Relative file paths resolve against the project root.

    Raises:
        CommandError: outside a Kedro project, for an unknown entry, or when the
            entry has no saved version yet (:class:`NoVersionError`).
    """
    _quiet_catalog()
    from kedro.io import DataCatalog, DatasetError  # noqa: PLC0415 (Kedro: not for the light commands)

    project = project_root(start)
    if project is None:
        raise CommandError(
            f"{start or Path.cwd()} is not inside a Kedro project, so there is no catalog "
            f"to take '{name}' from; run from the project folder or pass a path"
        )

    with chdir(project):
        catalog = DataCatalog.from_config(project_config(project, "catalog"))
        if name not in catalog:
            raise CommandError(f"the catalog of {project} has no entry {name!r}")
        try:
            data = catalog.load(name)
        except DatasetError as exc:
            if "Did not find any versions" in str(exc) or "No such file" in str(exc):
                raise NoVersionError(
                    f"catalog entry {name!r} of {project} has no saved version yet"
                ) from exc
            raise CommandError(f"could not load catalog entry {name!r}: {exc}") from exc
        data = data.resolve() if isinstance(data, Path) else data  # paths outlive the chdir
        if not with_version:
            return data
        dataset = catalog.get(name)
        resolve = getattr(dataset, "resolve_load_version", None)
        return data, (resolve() if resolve is not None else None)


def latest_version_file(path: Path) -> Path:
    """``path`` itself if a file, else the newest ``<version>/<name>`` inside a versioned folder."""
    if path.is_file():
        return path
    if (newest := newest_version(path)) is not None:
        return newest
    what = "no such file or folder" if not path.exists() else "a folder with no model version"
    raise CommandError(f"--model {path}: {what}. {MODEL_FORMS}")


MODEL_FORMS = (
    "--model takes a model file (.pt or .onnx); a versioned folder (its newest version, e.g. "
    "data/06_models/latest_model.pt); a registered version, models:/connect-zero@champion or "
    "models:/connect-zero/<N>; or a run id (its last generation; python -m "
    "connect_zero_pipeline runs lists them)"
)
"""What ``--model`` accepts, in words (its help and its errors)."""


def _run_model(run_id: str):
    """The last generation model of run ``run_id`` of the project around the current folder."""
    project = project_root()
    if project is None:
        raise CommandError(f"--model {run_id}: {Path.cwd()} is not inside a Kedro project")
    models = load_catalog_entry("model_files")
    try:
        start = resolve(project, run_id, models)
    except ValueError as exc:
        raise CommandError(str(exc).replace("model.start_from=", "--model ")) from exc
    return models[start["model"]](), start["described"]


def resolve_model(model_path: str | None, dataset: str = DEFAULT_MODEL_ENTRY):
    """``(model, description)`` from ``--model`` or the catalog entry ``dataset``.

    Raises:
        CommandError: no such model file, an unreadable one, or nothing in the catalog.
    """
    from ..core.checkpoint import load_model  # noqa: PLC0415 (.core.checkpoint imports torch)

    if model_path is not None and model_path.startswith(REGISTRY_PREFIX):
        return _registered(model_path)
    if model_path is not None and RUN_ID.match(model_path):
        return _run_model(model_path)
    if model_path is not None:
        path = latest_version_file(Path(model_path))
        if path.suffix == ".onnx":
            from ..core.export import OnnxNetwork  # noqa: PLC0415 (.core.export imports torch)

            data = path.read_bytes()
            if not data:
                raise CommandError(f"{path} is not a readable model file: it is empty (0 bytes)")
            try:
                return OnnxNetwork(data), str(path)
            except ValueError as exc:  # an ONNX model, not this project's: ours, one line
                raise CommandError(f"{path} is not a readable model file: {exc}") from exc
            except Exception as exc:  # protobuf, onnx and onnxruntime each raise their own
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                raise CommandError(f"{path} is not an ONNX model: {first}") from exc
        try:
            return load_model(path), str(path)
        except ValueError as exc:  # its message names the file
            raise CommandError(str(exc)) from exc
    try:
        model, version = load_catalog_entry(dataset, with_version=True)
    except NoVersionError as exc:
        if dataset == DEFAULT_MODEL_ENTRY and (shipped := pretrained_model()) is not None:
            print(f"No model trained in this project yet: playing {shipped[1]}.", file=sys.stderr)
            return shipped
        raise CommandError(
            f"no model trained yet: {exc}. Train one (kedro run), "
            f"or pass --model PATH or --dataset NAME (e.g. gen_008.model)"
        ) from exc
    if not (hasattr(model, "config") and callable(model)):
        raise CommandError(
            f"catalog entry {dataset!r} is not a model (it holds a {type(model).__name__}); "
            f"pass a model entry such as latest_model or gen_008.model"
        )
    return model, _described(dataset, version, getattr(model, "meta", {}))


def _described(entry: str, version: str | None, meta: dict) -> str:
    """``latest_model version <v>: run <id>, generation <k>``: which run's model a catalog
    entry's newest version is (its version names the run, or one of its extensions)."""
    if version is None:
        return f"catalog entry {entry!r}"
    run_id = run_of_version(project_root() or Path.cwd(), version)
    generation = meta.get("generation_accepted_at", meta.get("generation"))
    what = [f"run {run_id}"] if run_id else []
    what += [f"generation {generation}"] if generation is not None else []
    return f"{entry} version {version}" + (f": {', '.join(what)}" if what else "")


def _registered(uri: str):
    """A registered version of the project's MLflow registry (``models:/name@alias``)."""
    project = project_root()
    if project is None:
        raise CommandError(f"{uri}: {Path.cwd()} is not inside a Kedro project (no registry)")
    try:
        network = load_registered(uri, project)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    return network, f"{uri} ({network.meta['registered']})"


def from_here(path: str | None) -> str | None:
    """A path the user typed, absolute (it names a file from the folder the command started
    in, wherever ``--project`` is); a registered version or a run id as it is."""
    if path is None or path.startswith(REGISTRY_PREFIX) or RUN_ID.match(path):
        return path
    return os.path.abspath(path)


def model_options(command):
    """``--model PATH | --dataset NAME``, as :func:`resolve_model` takes them (check them
    with :func:`one_model`), and ``--project`` (:func:`run_command`'s ``project``)."""
    command = click.option(
        "--project",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        show_default="the one around the current folder",
        help="The project folder, whose catalog, runs and registry name the model.",
    )(command)
    command = click.option(
        "--dataset",
        default=DEFAULT_MODEL_ENTRY,
        show_default=True,
        help="The catalog entry of the model (its latest version).",
    )(command)
    return click.option(
        "--model", default=None, help="The model: " + MODEL_FORMS.removeprefix("--model takes ")
    )(command)


def one_model(model: str | None, dataset: str) -> None:
    """Refuse ``--model`` with ``--dataset``: each names the model."""
    if model is not None and dataset != DEFAULT_MODEL_ENTRY:
        raise click.UsageError("--model and --dataset cannot be combined: each names the model")
