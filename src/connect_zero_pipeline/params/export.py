"""The ``export`` section: ONNX export, parity gate, offline play page."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.config import check, is_int
from ..core.config.export import MIN_OPSET


@dataclass(frozen=True)
class ExportConfig:
    opset: int = 18
    """ONNX opset (>= 18, the dynamo exporter's native opset)."""
    parity_positions: int = 1000
    """Random legal positions on which ONNX and torch must agree."""
    parity_seed: int = 0
    """Seeds those positions."""
    parity_atol: float = 1e-4
    """Max absolute difference of logits and values; above it nothing is written."""
    ort_web_dir: str | None = None
    """onnxruntime-web's ``dist`` folder (null: the one under ``web/node_modules``)."""
    graph_cache: bool = True
    """Keep each architecture's traced ONNX graph (no weights) in the user's cache folder, so
    a later export of the same architecture, in any run, takes 0.1 s instead of 3
    (``core.export.export_onnx``); false: traced in every process that exports."""

    def __post_init__(self):
        check(is_int(self.opset) and self.opset >= MIN_OPSET, "opset", self.opset,
              f"an integer >= {MIN_OPSET}")  # fmt: skip
        check(is_int(self.parity_positions) and self.parity_positions >= 1000,
              "parity_positions", self.parity_positions, "an integer >= 1000")  # fmt: skip
        check(isinstance(self.parity_atol, (int, float)) and 0 < self.parity_atol <= 1e-3,
              "parity_atol", self.parity_atol, "a number in (0, 1e-3]")  # fmt: skip
        check(isinstance(self.graph_cache, bool), "graph_cache", self.graph_cache,
              "true or false")  # fmt: skip
