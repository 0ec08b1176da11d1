"""The project's uses of Kedro's, kedro-mlflow's and MLflow's non-public state, in one place;
and where the others are.

What no public API of Kedro, kedro-mlflow or MLflow gives is kept here, so that a release
that changes it breaks one module, and ``tests/test_internals.py`` (which exercises each
function on the installed versions) says which:

- **A version per dataset** (:func:`pin_version`). A run reads and writes its own outputs
  at its id, and an extension writes its final outputs at a version of its own; Kedro's
  catalog takes one save version for all its datasets, so the pinning sets a dataset's
  ``Version`` itself (``AbstractVersionedDataset._version``).
- **Where a versioned save lands, and a save staged elsewhere** (:func:`save_path`,
  :func:`staged_save`): :class:`.datasets.atomic.AtomicDataCatalog` writes a version to a
  hidden sibling and renames it into place (``_get_versioned_path``, ``_get_save_path``,
  ``_clear_version_cache``).
- **The file a dataset reads** (:func:`load_path`), which the run's summary prints
  (``_get_load_path``, ``_filepath``).
- **The session's hook manager and config loader** (:func:`session_hooks`,
  :func:`session_config`): :class:`.session.project_session.ProjectSession` registers its run's own hooks
  and reads its configuration (``KedroSession._hook_manager``, ``_get_config_loader``).
- **Whether a dataset keeps what it saves** (:func:`is_ephemeral`): Kedro's runner decides
  with ``AbstractDataset._EPHEMERAL`` (a ``MemoryDataset`` is), and so does the check that
  a resumed run has nothing left to do.
- **Save arguments for one save** (:func:`save_args`): the model-tracking dataset logs a
  model without registering it (kedro-mlflow's ``_save_args``), then registers it itself.
- **MLflow's sqlite store, read and relocated** (:func:`relocate_artifacts`,
  :func:`experiment_in_store`). A copied project's store still points its artifact
  locations at the project it was copied from; MLflow stores them as absolute URIs and has
  no public call to move them (no artifact root relative to the store exists for a local
  store without a tracking server), so the relocation rewrites those columns. The UI's
  address is read without opening the store through MLflow (which would create or migrate
  it). Both are written for :data:`MLFLOW_SCHEMA`, MLflow's schema revision:
  ``tests/test_internals.py`` fails when the installed MLflow makes stores of another.
- **A process pool's workers** (:func:`kill_pool_workers`): a stopped run kills them
  (``ProcessPoolExecutor._processes``; public from Python 3.14 as ``kill_workers``).
- **Kedro's errors in words** (:func:`unknown_nodes`, :func:`dataset_failure`): Kedro
  raises a plain ``ValueError`` for unknown node names, whose text is the only record of
  them; a dataset's failure is a ``DatasetError`` (matched by type) whose first line names
  the verb and whose cause is the reason.

**Used where they are** (``core/`` imports nothing above it, and each is one line beside
the code it serves; the tests named exercise them on the installed versions):

- torch's ``while_loop`` (``torch._higher_order_ops.while_loop``, :mod:`.core.search.tree`): the
  compiled search's simulation loop in one graph (``tests/core/test_compiled.py``);
- torch._dynamo's counters and ``config.patch`` and torch._inductor's cache folder
  (:mod:`.core.search.compiled`; :mod:`.bench.selfplay` and :mod:`.bench.compile` also patch
  inductor's config for kernel profiles): graphs and compile seconds counted, a recompile
  past the limit made an error (``tests/core/test_compiled.py``, ``tests/bench/``);
- Ray's address check and GCS client (``ray._private.services``, ``ray._raylet``,
  :mod:`.executors.ray_cluster`): a bad ``ray://`` or GCS address fails in seconds
  (``tests/executors/test_ray.py``);
- kedro-mlflow's ``_save_args`` written by the model-tracking dataset itself
  (:mod:`.datasets.mlflow_model`, a subclass: the signature and requirements set once);
  Kedro's ``_get_executor`` (:mod:`.session.runner`), Kedro's extension point for runners.

Reopening a resumed run's MLflow parent needs none: MLflow's ``MLFLOW_RUN_ID``
(:func:`.session.project_session.reopening`). The project's own datasets subclass Kedro's and MLflow's
dataset classes and use the attributes those classes document for subclasses
(``_get_load_path``, ``_fs``, ``_save_args``); those are not listed here.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sqlite3
from ast import literal_eval
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from fsspec.implementations.local import LocalFileSystem
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version


def is_versioned(dataset: Any) -> bool:
    """Whether ``dataset`` is a versioned dataset with versioning on."""
    return isinstance(dataset, AbstractVersionedDataset) and dataset._version is not None


def pin_version(dataset: Any, version: str) -> None:
    """Make versioned ``dataset`` load and save version ``version``."""
    dataset._version = Version(load=version, save=version)


def save_path(dataset: Any) -> Path | None:
    """Where ``dataset``'s next save lands, for a versioned dataset on the local filesystem
    (``<filepath>/<version>/<name>``); None for any other dataset."""
    if not is_versioned(dataset) or not isinstance(getattr(dataset, "_fs", None), LocalFileSystem):
        return None
    return Path(str(dataset._get_versioned_path(dataset.resolve_save_version())))


@contextlib.contextmanager
def staged_save(dataset: Any, tmp: Path, final: Path) -> Iterator[None]:
    """Inside the block, ``dataset`` saves to ``tmp`` instead of ``final`` (its
    :func:`save_path`), and Kedro's check after a save reads the version being written."""
    version = dataset._version
    dataset._get_save_path = lambda: PurePosixPath(tmp)
    dataset._version = Version(version.load or final.parent.name, final.parent.name)
    try:
        yield
    finally:
        del dataset._get_save_path
        dataset._version = version


def forget_versions(dataset: Any) -> None:
    """Make ``dataset`` look its versions up again (a version was just put in place)."""
    dataset._clear_version_cache()


def load_path(dataset: Any) -> str | None:
    """The file ``dataset`` reads (its pinned or latest version, or its one file); None when
    it names none or no version is on disk."""
    reader = getattr(dataset, "_get_load_path", None)
    try:
        path = reader() if reader else getattr(dataset, "_filepath", None)
    except Exception:  # no version on disk (the node did not run)
        return None
    return None if path is None else str(PurePosixPath(path))


def session_hooks(session: Any):
    """The pluggy manager of ``session``'s hooks (``settings.HOOKS``, the plugins')."""
    return session._hook_manager


def session_config(session: Any):
    """``session``'s config loader: its conf source, env and runtime parameters."""
    return session._get_config_loader()


def is_ephemeral(dataset: Any) -> bool:
    """Whether ``dataset`` keeps nothing between runs (Kedro's runner's own test)."""
    return bool(getattr(dataset, "_EPHEMERAL", False))


@contextlib.contextmanager
def save_args(dataset: Any, args: dict[str, Any]) -> Iterator[None]:
    """Inside the block, ``dataset`` saves with ``args`` as its save arguments."""
    kept = dataset._save_args
    dataset._save_args = args
    try:
        yield
    finally:
        dataset._save_args = kept


_UNKNOWN_NODES = re.compile(r"Pipeline does not contain nodes named (\[.*?\])")
_DATASET_FAILURE = re.compile(r"^Failed while (loading|saving) data (?:from|to) dataset")


def unknown_nodes(error: BaseException) -> list[str] | None:
    """The node names Kedro's ``Pipeline.only_nodes`` did not find, from its error (None:
    another error)."""
    found = isinstance(error, ValueError) and _UNKNOWN_NODES.search(str(error))
    return literal_eval(found.group(1)) if found else None


def dataset_failure(error: BaseException) -> tuple[str | None, str, str] | None:
    """``(dataset name, verb, reason)`` of a dataset's failed load or save: the name Kedro's
    catalog prefixed (None without one), ``load`` or ``save``, and the cause's words, which
    name the file. None for another error."""
    name, current = None, error
    while isinstance(current, DatasetError):
        text, cause = str(current).strip(), current.__cause__
        found = _DATASET_FAILURE.match(text)
        if found:
            reason = str(cause).strip() if cause is not None else text.partition("\n")[2]
            return name, ("load" if found[1] == "loading" else "save"), reason.strip()
        # Kedro's catalog raises the dataset's error again as "<name>: <that error>".
        if isinstance(cause, DatasetError) and text.endswith(str(cause).strip()):
            name = text[: len(text) - len(str(cause).strip())].rstrip(": ") or name
        current = cause
    return None


log = logging.getLogger(__name__)

MLFLOW_SCHEMA = "dc11669786a5"
"""The revision of MLflow's sqlite schema (its ``alembic_version``) that the two functions
below are written for: MLflow 3.17's."""
_LOCATION_COLUMNS = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("logged_models", "artifact_location"),
    ("model_versions", "source"),
    ("model_versions", "storage_location"),
)
"""Tables and columns of MLflow's sqlite schema that hold artifact locations."""


def _local_dir(uri: str | None) -> Path | None:
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and uri.startswith("/"):
        return Path(uri)
    return None


def relocate_artifacts(db: Path, experiment: str, artifacts: Path, quiet: bool = False) -> int:
    """Point the artifact locations of the store ``db`` that live under another ``mlruns``
    at ``artifacts``.

    Only locations under the folder the experiment ``experiment`` was created with are
    rewritten, and only when that folder is not ``artifacts``: the store of a copied
    project (a warning says so, unless ``quiet``: a new store copied from an empty one).
    Returns the number of rows changed.
    """
    con = sqlite3.connect(db, timeout=60)
    try:
        row = con.execute(
            "SELECT artifact_location FROM experiments WHERE name = ?", (experiment,)
        ).fetchone()
        old = _local_dir(row[0]) if row else None
        if old is None or old == artifacts:
            return 0
        old_uri, new_uri = old.as_uri(), artifacts.as_uri()
        tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master")}
        changed = 0
        with con:
            for table, column in _LOCATION_COLUMNS:
                if table not in tables:
                    continue
                for prefix, target in ((old_uri, new_uri), (str(old), str(artifacts))):
                    cur = con.execute(
                        f"UPDATE {table} SET {column} = ? || substr({column}, ?) "
                        f"WHERE {column} = ? OR {column} LIKE ?",
                        (target, len(prefix) + 1, prefix, prefix + "/%"),
                    )
                    changed += cur.rowcount
        if not quiet:
            log.warning(
                "This project's MLflow store pointed its artifacts at %s (the project it was "
                "copied from); %d locations now point at %s",
                old, changed, artifacts,
            )  # fmt: skip
        return changed
    finally:
        con.close()


def experiment_in_store(db: Path, experiment: str, tag: str) -> tuple[str, bool] | None:
    """``(experiment id, whether it has tag`` ``tag)`` of ``experiment`` in the store
    ``db``, read only; None when the store has no such experiment (or no tables yet)."""
    row = _read(db, "SELECT experiment_id FROM experiments WHERE name = ?", experiment)
    if not row:
        return None
    tagged = _read(
        db, "SELECT 1 FROM experiment_tags WHERE experiment_id = ? AND key = ?", row[0], tag
    )  # fmt: skip (an older store has no tags table: not tagged)
    return str(row[0]), tagged is not None


def _read(db: Path, sql: str, *args) -> tuple | None:
    """The first row of a read-only query of the store ``db``; None if none or no such table."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return conn.execute(sql, args).fetchone()
    except sqlite3.Error:
        return None


def kill_pool_workers(pool: Any) -> int:
    """SIGKILL every worker process of a ``ProcessPoolExecutor`` (its ``_processes``; Python
    3.14's ``kill_workers`` does this): a stopped run ends its workers at once, those still
    starting too, instead of waiting for them to start. Returns how many were signalled."""
    killed = 0
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):  # already gone
            process.kill()
            killed += 1
    return killed
