"""Custom Kedro datasets."""

from .model_dataset import TorchModelDataset
from .onnx_dataset import OnnxModelDataset
from .play_page_dataset import PlayPageDataset

__all__ = ["OnnxModelDataset", "PlayPageDataset", "TorchModelDataset"]
