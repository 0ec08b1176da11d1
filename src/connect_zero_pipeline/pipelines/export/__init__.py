"""``export``: the chosen model to ONNX (parity-gated), MLflow, and an offline play page."""

from .pipeline import DEFAULT_MODEL_INPUT, create_pipeline

__all__ = ["DEFAULT_MODEL_INPUT", "create_pipeline"]
