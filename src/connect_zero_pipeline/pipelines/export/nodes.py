"""Thin adapters: parameters -> core export and parity gate -> ONNX, metrics, page files."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import onnx
import pandas as pd
from torch import nn

from ... import web
from ...core.config import check
from ...core.evaluation import solver_set_metrics
from ...core.export import MIN_OPSET, check_parity, export_onnx, onnx_info
from ...core.inference import torch_evaluate_fn
from ..params import parse_section

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExportConfig:
    opset: int = 18
    """ONNX opset of the export (>= 18, the dynamo exporter's native opset)."""
    parity_positions: int = 1000
    """Random legal positions (seeded random play) on which torch and onnxruntime must agree."""
    parity_seed: int = 0
    """Seed of those positions."""
    parity_atol: float = 1e-4
    """Largest allowed absolute difference of logits and values; above it nothing is written."""
    ort_web_dir: str | None = None
    """Folder with the onnxruntime-web files; ``None``: the npm cache in the package's web/."""

    def __post_init__(self):
        check(
            isinstance(self.opset, int) and not isinstance(self.opset, bool)
            and self.opset >= MIN_OPSET,
            "opset", self.opset, f"an integer >= {MIN_OPSET}",
        )  # fmt: skip
        check(
            isinstance(self.parity_positions, int) and self.parity_positions >= 1000,
            "parity_positions", self.parity_positions, "an integer >= 1000",
        )  # fmt: skip
        check(
            isinstance(self.parity_atol, (int, float)) and 0 < self.parity_atol <= 1e-3,
            "parity_atol", self.parity_atol, "a number in (0, 1e-3]",
        )  # fmt: skip


def export_onnx_model(
    model: nn.Module, positions: pd.DataFrame, params: dict
) -> tuple[onnx.ModelProto, dict]:
    """Export ``model`` to ONNX behind the parity gate.

    The file's metadata carries the model's ``meta`` (its generation) and its
    ``solver.acc`` and ``solver.weak_acc`` on the solver-labelled ``positions``,
    which the registry version's tags and the play page show.

    Returns the ONNX model and the parity metrics. Raises before returning, so nothing is
    written, when the gate fails or the play page could not be built.
    """
    (cfg,) = parse_section("export", params)
    web.ort_web_dist(cfg.ort_web_dir)  # the page node needs it: fail before writing anything
    strength = solver_set_metrics(torch_evaluate_fn(model, "cpu"), positions)
    meta = {
        **(getattr(model, "meta", None) or {}),
        "solver.acc": strength["acc"],
        "solver.weak_acc": strength["weak_acc"],
    }
    data = export_onnx(model, cfg.opset, meta=meta)
    report = check_parity(model, data, cfg.parity_positions, cfg.parity_seed, cfg.parity_atol)
    metrics = {
        "parity_max_abs_diff_logits": report.max_abs_diff_logits,
        "parity_max_abs_diff_value": report.max_abs_diff_value,
        "parity_positions": float(report.num_positions),
    }
    log.info("Exported %s to ONNX opset %d (%d bytes)", model.config, cfg.opset, len(data))
    proto = onnx.load_from_string(data)
    return proto, {k: {"value": v, "step": 0} for k, v in metrics.items()}


def build_play_page(onnx_model: onnx.ModelProto, params: dict) -> dict[str, bytes]:
    """The offline play page's files: the web assets, onnxruntime-web and the model."""
    (cfg,) = parse_section("export", params)
    data = onnx_model.SerializeToString()
    files = web.page_files(data, onnx_info(data), cfg.ort_web_dir)
    log.info("Play page: %d files, %.1f MB", len(files), sum(map(len, files.values())) / 1e6)
    return files


def register_model(onnx_model: onnx.ModelProto, play_page) -> onnx.ModelProto:
    """The ONNX model for MLflow (logged, registered and described as it is saved). It takes
    the play page only to run after it: the registry gets a version once the files exist."""
    return onnx_model
