"""``OnnxModelDataset``: a versioned ``.onnx`` file."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import fsspec
import onnx
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path


class OnnxModelDataset(AbstractVersionedDataset[onnx.ModelProto | bytes, onnx.ModelProto]):
    """Saves an ``onnx.ModelProto`` (or its serialised bytes); loads an ``onnx.ModelProto``.

    Example catalog entry::

        onnx_model:
          type: connect_zero_pipeline.datasets.OnnxModelDataset
          filepath: data/06_models/onnx_model.onnx
          versioned: true

    The model is stored as one self-contained file (no external tensor data),
    so the same file can be copied next to a web page. Loading checks the file
    with ``onnx.checker``.
    """

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

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "version": self._version}

    def load(self) -> onnx.ModelProto:
        path = self._get_load_path()
        with self._fs.open(str(path), "rb") as f:
            data = f.read()
        try:
            proto = onnx.load_from_string(data)
            onnx.checker.check_model(proto)
        except Exception as exc:  # protobuf and the checker raise several types
            raise DatasetError(f"{path} is not a valid ONNX model: {exc}") from exc
        return proto

    def save(self, data: onnx.ModelProto | bytes) -> None:
        if isinstance(data, onnx.ModelProto):
            data = data.SerializeToString()
        if not isinstance(data, bytes):
            raise DatasetError(
                f"OnnxModelDataset saves an onnx.ModelProto or bytes, got {type(data).__name__}"
            )
        path = self._get_save_path()
        self._fs.mkdirs(str(PurePosixPath(path).parent), exist_ok=True)
        with self._fs.open(str(path), "wb") as f:
            f.write(data)
        self._invalidate_cache()

    def _exists(self) -> bool:
        try:
            path = self._get_load_path()
        except DatasetError:
            return False
        return self._fs.exists(str(path))

    def _invalidate_cache(self) -> None:
        self._fs.invalidate_cache(str(self._filepath))
