"""Custom Kedro datasets (imported when first named: ``settings`` imports the catalog class
alone, so a command refused before any work never pays for torch)."""

from __future__ import annotations

import importlib
from typing import Any

_MODULES = {
    "FigureDataset": ".figure_dataset",
    "OnnxModelDataset": ".onnx_dataset",
    "PlayPageDataset": ".play_page_dataset",
    "PonsFilesDataset": ".pons_files",
    "TorchModelDataset": ".model_dataset",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
