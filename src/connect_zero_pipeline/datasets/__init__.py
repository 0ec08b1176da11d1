"""Custom Kedro datasets."""

from .model_dataset import TorchModelDataset

__all__ = ["TorchModelDataset"]
