"""``TorchModelDataset``: a versioned model file with its architecture config."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import fsspec
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path
from torch import nn

from ..core.checkpoint import load_model, save_model


class TorchModelDataset(AbstractVersionedDataset[nn.Module, nn.Module]):
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
        protocol, path = get_protocol_and_path(filepath, version)
        self._protocol = protocol
        self._fs = fsspec.filesystem(protocol)
        self._device = device
        self.metadata = metadata
        super().__init__(
            filepath=PurePosixPath(path),
            version=version,
            exists_function=self._fs.exists,
            glob_function=self._fs.glob,
        )

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "version": self._version, "device": self._device}

    def load(self) -> nn.Module:
        path = self._get_load_path()
        with self._fs.open(str(path), "rb") as f:
            try:
                return load_model(f, device=self._device, name=str(path))
            except ValueError as exc:
                raise DatasetError(str(exc)) from exc

    def save(self, data: nn.Module) -> None:
        path = self._get_save_path()
        self._fs.mkdirs(str(PurePosixPath(path).parent), exist_ok=True)
        with self._fs.open(str(path), "wb") as f:
            save_model(data, f, getattr(data, "meta", None))
        self._invalidate_cache()

    def _exists(self) -> bool:
        try:
            path = self._get_load_path()
        except DatasetError:
            return False
        return self._fs.exists(str(path))

    def _invalidate_cache(self) -> None:
        self._fs.invalidate_cache(str(self._filepath))
