"""The shared bases of the project's versioned datasets.

:class:`VersionedPathDataset`: one path a version (a file, or a folder: the play page), its
filesystem (fsspec) and whether a version is there. :class:`VersionedFileDataset`: one file
a version, whose subclasses say how to turn their object into bytes and back. That a version appears
only when complete is the catalog's work (:class:`.atomic.AtomicDataCatalog`),
the same for every dataset.
"""

from __future__ import annotations

import io
from pathlib import PurePosixPath
from typing import Any, Generic, TypeVar

import fsspec
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path

_DI = TypeVar("_DI")
_DO = TypeVar("_DO")


class VersionedPathDataset(AbstractVersionedDataset[_DI, _DO], Generic[_DI, _DO]):
    """One path per version on an fsspec filesystem. A version is there when
    :meth:`_present` says so of its path (default: the path exists)."""

    def __init__(
        self,
        filepath: str,
        version: Version | None = None,
        metadata: dict[str, Any] | None = None,
    ):
        protocol, path = get_protocol_and_path(filepath, version)
        self._protocol = protocol
        self._fs = fsspec.filesystem(protocol)
        self.metadata = metadata
        super().__init__(
            filepath=PurePosixPath(path),
            version=version,
            exists_function=self._fs.exists,
            glob_function=self._fs.glob,
        )

    def _present(self, path: str) -> bool:
        return self._fs.exists(path)

    def _exists(self) -> bool:
        try:
            path = self._get_load_path()
        except DatasetError:
            return False
        return self._present(str(path))

    def _invalidate_cache(self) -> None:
        self._fs.invalidate_cache(str(self._filepath))


class VersionedFileDataset(VersionedPathDataset[_DI, _DO]):
    """One file per version. Subclasses implement :meth:`_encode` and :meth:`_decode`."""

    # -- what subclasses provide -------------------------------------------------

    def _encode(self, data: _DI) -> bytes:
        raise NotImplementedError

    def _decode(self, data: bytes, path: str) -> _DO:
        """Rebuild the object; raise ``DatasetError`` naming ``path`` for a bad file."""
        raise NotImplementedError

    # -- the Kedro dataset interface ----------------------------------------------
    # ``_load``/``_save``, not ``load``/``save``: Kedro wraps a class's ``_save`` once per
    # subclass, but a ``save`` inherited already wrapped is wrapped again, and the inner
    # wrapper then draws a second save version (a file at one timestamp, Kedro's record at
    # another, when no version is pinned).

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "version": self._version}

    def _load(self) -> _DO:
        path = str(self._get_load_path())
        with self._fs.open(path, "rb") as f:
            return self._decode(f.read(), path)

    def _save(self, data: _DI) -> None:
        payload = self._encode(data)
        path = str(self._get_save_path())
        self._fs.mkdirs(str(PurePosixPath(path).parent), exist_ok=True)
        with self._fs.open(path, "wb") as f:
            f.write(payload)
        self._invalidate_cache()


def torch_bytes(obj: Any) -> bytes:
    """``torch.save`` into bytes."""
    import torch  # noqa: PLC0415 (torch: 1.1 s, when a model is used)

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()
