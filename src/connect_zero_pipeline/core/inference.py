"""Fast network evaluation for search: torch or onnxruntime behind one ``evaluate_fn``.

Self-play and evaluation spend nearly all their time in network forwards of
a few hundred boards at a time. On CPU, onnxruntime runs the project's small
ResNets faster than torch at those batch sizes (it folds BatchNorm into the
convolutions and uses its own convolution kernels; ``bench onnx`` measures it); on
CUDA, torch is the right backend. ``backend="auto"`` picks accordingly.

The ONNX graph here is an internal, throw-away artefact, made with torch's
TorchScript exporter (under a second) rather than the dynamo exporter that
``export.py`` uses for the published model (tens of seconds), because it is
rebuilt for every generation's model.

Shapes: B boards, A = 7 columns.
"""

from __future__ import annotations

import copy
import io
import logging
import warnings
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from .board import HEIGHT, WIDTH
from .config.search import BACKENDS
from .device import arithmetic, exporting

log = logging.getLogger(__name__)

EvaluateFn = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
"""The network as search and evaluation see it: ``boards int8 [B, 6, 7] -> (logits [B, 7],
value [B])`` float32, the value from the view of each board's side to move. Search takes any
such function (a toy bandit in the tests); :func:`make_evaluate_fn` wraps a model."""


def torch_evaluate_fn(model: nn.Module, device: torch.device | str | None = None,
                      dtype: torch.dtype = torch.float32) -> EvaluateFn:  # fmt: skip
    """``model`` as an :data:`EvaluateFn` with torch: eval mode, ``inference_mode``, float32 out.

    Args:
        device: where the model runs (it is moved there); None keeps the device
            of its parameters. Boards are moved to it.
        dtype: the arithmetic: float32, or a lower precision under ``torch.autocast`` (the
            weights stay float32).
    """
    if device is None:
        device = next(model.parameters(), torch.empty(0)).device  # no parameters: an OnnxNetwork
    model = model.to(device).eval()
    device = torch.device(device)

    def evaluate_fn(boards: torch.Tensor):
        if model.training:  # e.g. a training loop switched it back
            model.eval()
        with torch.inference_mode(), arithmetic(device.type, dtype):
            logits, value = model(boards.to(device))
        return logits.float(), value.float()

    return evaluate_fn


def onnx_bytes_for_inference(model: nn.Module) -> bytes:
    """The model as an ONNX graph (TorchScript exporter, opset 17, dynamic batch), under the
    process's export lock (:func:`~.device.exporting`: an overlapped run's scorecard and
    self-play build theirs at the same moment)."""
    net = copy.deepcopy(model).cpu().eval()
    example = torch.zeros(2, HEIGHT, WIDTH, dtype=torch.int8)
    buf = io.BytesIO()
    with exporting(), warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and trace notes
        torch.onnx.export(
            net,
            (example,),
            buf,
            dynamo=False,
            input_names=["board"],
            output_names=["logits", "value"],
            dynamic_axes={"board": {0: "batch"}, "logits": {0: "batch"}, "value": {0: "batch"}},
            opset_version=17,
            do_constant_folding=True,
        )
    return buf.getvalue()


def ort_evaluate_fn(model: nn.Module, threads: int = 1) -> EvaluateFn:
    """Like :func:`torch_evaluate_fn`, on onnxruntime's CPU provider (outputs on CPU)."""
    import onnxruntime as ort  # noqa: PLC0415 (onnxruntime: only for an ONNX model)

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    graph = getattr(model, "onnx_bytes", None) or onnx_bytes_for_inference(model)  # OnnxNetwork
    session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def evaluate_fn(boards: torch.Tensor):
        b = boards.detach().cpu().numpy().astype(np.int8, copy=False)
        logits, value = session.run(["logits", "value"], {"board": b})
        return torch.from_numpy(logits), torch.from_numpy(value)

    return evaluate_fn


def make_evaluate_fn(
    model: nn.Module,
    device: torch.device | str = "cpu",
    backend: str = "auto",
    threads: int = 1,
    dtype: torch.dtype = torch.float32,
) -> EvaluateFn:
    """An ``evaluate_fn`` for ``model``.

    Args:
        backend: ``auto`` (onnxruntime on CPU in float32, torch on CUDA or in another
            ``dtype``), ``torch`` or ``onnxruntime``.
        threads: onnxruntime's intra-op threads (0: its default, one per core).
        dtype: the arithmetic (:func:`~.device.compute_dtype`); onnxruntime's is float32.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    device = torch.device(device)
    if backend == "auto":
        backend = "onnxruntime" if device.type == "cpu" and dtype == torch.float32 else "torch"
    if backend == "onnxruntime":
        if device.type != "cpu":
            raise ValueError(f"backend 'onnxruntime' runs on the CPU, but device is {device}")
        if dtype != torch.float32:
            raise ValueError(f"backend 'onnxruntime' runs in float32, not {dtype}: set the "
                             "backend to auto or torch, or the precision to float32")  # fmt: skip
        return ort_evaluate_fn(model, threads)
    return torch_evaluate_fn(model, device, dtype)
