"""``OnnxModelDataset``: a versioned ``.onnx`` file."""

from __future__ import annotations

import onnx
from kedro.io.core import DatasetError

from .versioned_file import VersionedFileDataset


class OnnxModelDataset(VersionedFileDataset[onnx.ModelProto | bytes, onnx.ModelProto]):
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

    def _encode(self, data: onnx.ModelProto | bytes) -> bytes:
        if isinstance(data, onnx.ModelProto):
            data = data.SerializeToString()
        if not isinstance(data, bytes):
            raise DatasetError(
                f"OnnxModelDataset saves an onnx.ModelProto or bytes, got {type(data).__name__}"
            )
        return data

    def _decode(self, data: bytes, path: str) -> onnx.ModelProto:
        try:
            proto = onnx.load_from_string(data)
            onnx.checker.check_model(proto)
        except Exception as exc:  # protobuf and the checker raise several types
            raise DatasetError(f"{path} is not a valid ONNX model: {exc}") from exc
        return proto
