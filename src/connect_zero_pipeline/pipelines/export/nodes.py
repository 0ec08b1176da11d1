"""Thin adapters: parameters -> core export and parity gate -> ONNX, metrics, page files."""

from __future__ import annotations

import logging

import onnx
import pandas as pd
from torch import nn

from ... import web
from ...common.project import user_cache
from ...core.evaluation import solver_set_metrics
from ...core.export import check_parity, export_onnx, onnx_info
from ...core.inference import torch_evaluate_fn
from ...params.schema import parse_section

log = logging.getLogger(__name__)


def export_onnx_model(
    model: nn.Module, positions: pd.DataFrame, params: dict
) -> tuple[onnx.ModelProto, dict]:
    """Export ``model`` to ONNX behind the parity gate.

    The file's metadata carries the model's ``meta`` (its generation) and its
    ``solver.acc`` and ``solver.weak_acc`` on the solver-labelled ``positions``,
    which the registry version's tags and the play page show.

    Returns the ONNX model and the parity metrics. Raises before returning, so nothing is
    written, when the gate fails or the play page could not be built (a named
    ``ort_web_dir`` without onnxruntime-web, a fetched version other than the pin).
    """
    cfg = parse_section("export", params)
    web.runtime_dist(cfg.ort_web_dir)  # the page node needs it: fail before writing anything
    strength = solver_set_metrics(torch_evaluate_fn(model, "cpu"), positions)
    meta = {
        **(getattr(model, "meta", None) or {}),
        "solver.acc": strength["acc"],
        "solver.weak_acc": strength["weak_acc"],
    }
    data = export_onnx(model, cfg.opset, meta=meta,
                       graphs=user_cache() / "onnx" if cfg.graph_cache else None)  # fmt: skip
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
    """The offline play page's files: the web assets, onnxruntime-web and the model (without
    onnxruntime-web where it is not fetched: one warning says how to make the page whole)."""
    cfg = parse_section("export", params)
    data = onnx_model.SerializeToString()
    dist = web.runtime_dist(cfg.ort_web_dir)
    files = web.page_files(data, onnx_info(data), dist)
    if dist is None:  # a machine without the runtime (offline): the run still finishes
        log.warning("Play page written without onnxruntime-web (not fetched here): "
                    "%s", web.WHOLE_LATER)  # fmt: skip
    log.info("Play page: %d files, %.1f MB", len(files), sum(map(len, files.values())) / 1e6)
    return files


def register_model(onnx_model: onnx.ModelProto, play_page) -> onnx.ModelProto:
    """The ONNX model for MLflow (logged, registered and described as it is saved). It takes
    the play page only to run after it: the registry gets a version once the files exist."""
    return onnx_model
