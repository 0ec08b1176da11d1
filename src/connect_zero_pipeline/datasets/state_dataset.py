"""``TorchStateDataset``: a versioned dict of tensors and plain values (e.g. a trainer state)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import fsspec
import torch
from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, get_protocol_and_path


class TorchStateDataset(AbstractVersionedDataset[dict, dict]):
    """Saves a dict with ``torch.save``; loads it with ``weights_only=True`` (no pickled code runs).

    For resumable training state: optimiser moments, a frozen opponent's
    weights, counters. Example catalog entry::

        "rf_{chunk}.trainer_state":
          type: connect_zero_pipeline.datasets.state_dataset.TorchStateDataset
          filepath: data/06_models/reinforce/rf_{chunk}/trainer_state.pt
          versioned: true
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

    def load(self) -> dict:
        path = self._get_load_path()
        with self._fs.open(str(path), "rb") as f:
            try:
                data = torch.load(f, map_location="cpu", weights_only=True)
            except Exception as exc:  # torch raises many types for foreign or truncated files
                raise DatasetError(f"{path} is not a readable state file: {exc}") from exc
        if not isinstance(data, dict):
            raise DatasetError(f"{path} holds a {type(data).__name__}, not a state dict")
        return data

    def save(self, data: dict) -> None:
        if not isinstance(data, dict):
            raise DatasetError(f"TorchStateDataset saves a dict, got {type(data).__name__}")
        path = self._get_save_path()
        self._fs.mkdirs(str(PurePosixPath(path).parent), exist_ok=True)
        with self._fs.open(str(path), "wb") as f:
            torch.save(data, f)
        self._invalidate_cache()

    def _exists(self) -> bool:
        try:
            path = self._get_load_path()
        except DatasetError:
            return False
        return self._fs.exists(str(path))

    def _invalidate_cache(self) -> None:
        self._fs.invalidate_cache(str(self._filepath))
