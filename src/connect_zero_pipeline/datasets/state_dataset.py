"""``TorchStateDataset``: a versioned dict of tensors and plain values (e.g. a trainer state)."""

from __future__ import annotations

import io

import torch
from kedro.io.core import DatasetError

from .versioned_file import VersionedFileDataset, torch_bytes


class TorchStateDataset(VersionedFileDataset[dict, dict]):
    """Saves a dict with ``torch.save``; loads it with ``weights_only=True`` (no pickled code runs).

    For resumable training state: optimiser moments, a frozen opponent's
    weights, counters. Example catalog entry::

        "rf_{chunk}.trainer_state":
          type: connect_zero_pipeline.datasets.state_dataset.TorchStateDataset
          filepath: data/06_models/reinforce/rf_{chunk}/trainer_state.pt
          versioned: true
    """

    def _encode(self, data: dict) -> bytes:
        if not isinstance(data, dict):
            raise DatasetError(f"TorchStateDataset saves a dict, got {type(data).__name__}")
        return torch_bytes(data)

    def _decode(self, data: bytes, path: str) -> dict:
        try:
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for foreign or truncated files
            raise DatasetError(f"{path} is not a readable state file: {exc}") from exc
        if not isinstance(state, dict):
            raise DatasetError(f"{path} holds a {type(state).__name__}, not a state dict")
        return state
