"""Every use of another library's non-public state, in one place.

The project needs four things no public API gives, each kept here so that a Kedro or
kedro-mlflow release that changes them breaks one module, and
``tests/test_internals.py`` (which exercises each function on the installed versions)
says which:

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
  :func:`session_config`): :class:`.session.ProjectSession` registers its run's own hooks
  and reads its configuration (``KedroSession._hook_manager``, ``_get_config_loader``).

Reopening a resumed run's MLflow parent needs none: MLflow's ``MLFLOW_RUN_ID``
(:func:`.session.reopening`). The project's own datasets subclass Kedro's and MLflow's
dataset classes and use the attributes those classes document for subclasses
(``_get_load_path``, ``_fs``, ``_save_args``); those are not listed here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from fsspec.implementations.local import LocalFileSystem
from kedro.io.core import AbstractVersionedDataset, Version


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
