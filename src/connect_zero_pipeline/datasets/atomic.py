"""``AtomicDataCatalog``: every versioned output is written whole or not at all.

The project's catalog class (``settings.DATA_CATALOG_CLASS``). Every save of a run goes
through :meth:`DataCatalog.save`; for a versioned dataset on the local filesystem this
catalog points the dataset's save path at a hidden staging sibling of the version
(:func:`..core.files.staging_path`) and renames it into place once the dataset's own
``save`` returned. A version that exists is therefore complete, whatever the dataset
(Parquet, JSON, PNG, ``.pt``, ``.onnx``, the play-page folder): readers, ``exists()`` (so
``--only-missing-outputs``), resume and ``play --web`` never see a partial one.

A resumed run re-runs a node whose outputs were not all written. An output that the
interrupted attempt did complete is already there at the run's version; it is kept, not
written again (versions are never overwritten), and the rest are written.
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath
from typing import Any

from fsspec.implementations.local import LocalFileSystem
from kedro.io import DataCatalog
from kedro.io.core import AbstractVersionedDataset, Version

from ..core.files import atomic_path

log = logging.getLogger(__name__)


def version_path(dataset: Any) -> Path | None:
    """Where ``dataset``'s next save lands, for a versioned dataset on the local filesystem
    (``<filepath>/<version>/<name>``); None for any other dataset."""
    if not isinstance(dataset, AbstractVersionedDataset) or dataset._version is None:
        return None
    if not isinstance(getattr(dataset, "_fs", None), LocalFileSystem):
        return None
    return Path(str(dataset._get_versioned_path(dataset.resolve_save_version())))


class AtomicDataCatalog(DataCatalog):
    """A ``DataCatalog`` whose saves of local versioned datasets are atomic (module docstring)."""

    def save(self, ds_name: str, data: Any) -> None:
        dataset = self[ds_name]
        final = version_path(dataset)
        if final is None:
            return super().save(ds_name, data)
        if final.exists():
            log.info("%s: version %s is already complete (a resumed run); kept as it is",
                     ds_name, final.parent.name)  # fmt: skip
            return None
        version = dataset._version
        with atomic_path(final) as tmp:
            # For this save only: write to tmp, and let Kedro's check after the save read the
            # version being written (it is not in place until the rename).
            dataset._get_save_path = lambda: PurePosixPath(tmp)
            dataset._version = Version(version.load or final.parent.name, final.parent.name)
            try:
                super().save(ds_name, data)
            finally:
                del dataset._get_save_path
                dataset._version = version
        dataset._clear_version_cache()
        return None
