"""``PlayPageDataset``: a versioned folder of static files (the offline play page)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from kedro.io.core import DatasetError, Version, get_protocol_and_path

from .versioned_file import VersionedPathDataset


class PlayPageDataset(VersionedPathDataset[dict[str, bytes], Path]):
    """Saves ``{relative path: bytes}`` as files of one folder; loads that folder's path.

    Example catalog entry::

        play_page:
          type: connect_zero_pipeline.datasets.PlayPageDataset
          path: data/08_reporting/play
          versioned: true

    Versioned, a save writes ``data/08_reporting/play/<version>/play/index.html``
    etc.; ``load()`` returns the folder of the requested (default: latest)
    version, ready to be served (``python -m connect_zero_pipeline play --web``).
    Only local paths are supported, since the folder is served from disk. The folder
    appears whole or not at all (the catalog writes it as a staging folder and
    renames it: :class:`.atomic.AtomicDataCatalog`).
    """

    def __init__(
        self,
        path: str,
        version: Version | None = None,
        metadata: dict[str, Any] | None = None,
    ):
        protocol, _ = get_protocol_and_path(path, version)
        if protocol != "file":
            raise DatasetError(f"PlayPageDataset needs a local path, got {path!r}")
        super().__init__(path, version, metadata)

    def _describe(self) -> dict[str, Any]:
        return {"path": self._filepath, "version": self._version}

    def load(self) -> Path:
        folder = Path(self._get_load_path())
        if not (folder / "index.html").is_file():
            raise DatasetError(f"{folder} is not a play page folder: it has no index.html")
        return folder

    def save(self, data: dict[str, bytes]) -> None:
        if not isinstance(data, dict) or not data:
            raise DatasetError("PlayPageDataset saves a non-empty dict {relative path: bytes}")
        for name, content in data.items():
            rel = PurePosixPath(name)
            if rel.is_absolute() or ".." in rel.parts or not isinstance(content, bytes):
                raise DatasetError(
                    f"PlayPageDataset: bad entry {name!r} ({type(content).__name__}); "
                    "keys are relative paths inside the folder, values bytes"
                )
        folder = Path(self._get_save_path())
        for name, content in data.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        self._invalidate_cache()

    def _present(self, path: str) -> bool:
        return (Path(path) / "index.html").is_file()
