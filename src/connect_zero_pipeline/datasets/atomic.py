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
from typing import Any

from kedro.io import DataCatalog

from ..common.internals import forget_versions, save_path, staged_save
from ..core.files import atomic_path

log = logging.getLogger(__name__)


class AtomicDataCatalog(DataCatalog):
    """A ``DataCatalog`` whose saves of local versioned datasets are atomic (module docstring)."""

    def save(self, ds_name: str, data: Any) -> None:
        dataset = self[ds_name]
        final = save_path(dataset)
        if final is None:
            return super().save(ds_name, data)
        if final.exists():
            log.info("%s: version %s is already complete (a resumed run); kept as it is",
                     ds_name, final.parent.name)  # fmt: skip
            return None
        with atomic_path(final) as tmp, staged_save(dataset, tmp, final):
            super().save(ds_name, data)  # to tmp; Kedro's check after it reads the new version
        forget_versions(dataset)
        return None
