"""``TorchModelDataset``: a versioned model file with its architecture config."""

from __future__ import annotations

import io
from typing import Any

from kedro.io.core import DatasetError, Version
from torch import nn

from ..core.checkpoint import load_model, model_to_bytes
from .versioned_file import VersionedFileDataset


class TorchModelDataset(VersionedFileDataset[nn.Module, nn.Module]):
    """Saves ``{config, state_dict, meta}`` with ``torch.save``; loads with ``weights_only=True``.

    Example catalog entry::

        model:
          type: connect_zero_pipeline.datasets.TorchModelDataset
          filepath: data/06_models/model.pt
          versioned: true

    ``model.meta`` (a small dict, e.g. the generation) is stored with the weights.
    """

    def __init__(
        self,
        filepath: str,
        version: Version | None = None,
        device: str = "cpu",
        metadata: dict[str, Any] | None = None,
    ):
        self._device = device
        super().__init__(filepath, version, metadata)

    def _describe(self) -> dict[str, Any]:
        return {**super()._describe(), "device": self._device}

    def _encode(self, data: nn.Module) -> bytes:
        return model_to_bytes(data, getattr(data, "meta", None))

    def _decode(self, data: bytes, path: str) -> nn.Module:
        try:
            return load_model(io.BytesIO(data), device=self._device, name=path)
        except ValueError as exc:
            raise DatasetError(str(exc)) from exc
