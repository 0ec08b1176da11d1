"""ONNX export of a Connect-4 model and its parity check against torch.

The exported graph keeps the model protocol of docs/architecture.md §3::

    board int8 [B, 6, 7]  ->  logits float32 [B, 7], value float32 [B]

with ``B`` a dynamic dimension named ``batch``. The input planes are built
inside the graph from the int8 board (as in ``forward``), so every consumer
(onnxruntime in Python, onnxruntime-web in the play page) feeds the same int8
boards the engine produces.

Exporter choice: torch's dynamo exporter (``torch.onnx.export(dynamo=True)``,
the default in torch >= 2.9, built on onnxscript) at opset 18, its native
opset. Its graph is clean: BatchNorm is folded into the convolutions by
``ONNXProgram.optimize()``, the batch dimension is a named symbol, and the
input keeps its int8 type. The legacy TorchScript exporter (``dynamo=False``)
also gives a correct graph but is deprecated, emits TracerWarnings on the
model's Python shape checks and adds Identity/Constant noise; asking the
dynamo exporter for opset 17 goes through a lossy version converter, so we
stay at 18 (onnxruntime >= 1.14 and onnxruntime-web run it).

Parity: :func:`check_parity` runs torch and onnxruntime on random legal
positions from the batched engine and raises :class:`ParityError`, naming the
largest difference, when either head differs by more than ``atol``.

Shapes: B = batch of positions, A = 7 columns.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .bitboard import initial_state, play, random_legal_actions, to_boards
from .board import HEIGHT, WIDTH
from .config.export import DEFAULT_OPSET, INPUT_NAME, MIN_OPSET, OUTPUT_NAMES
from .device import exporting

log = logging.getLogger(__name__)

BATCH_DIM = "batch"

# ONNX TensorProto element types used in the signature check.
_INT8, _FLOAT = 3, 1


class ParityError(ValueError):
    """onnxruntime and torch disagree on the exported model by more than the tolerance."""


@dataclass(frozen=True)
class ParityReport:
    """Largest absolute differences between torch and onnxruntime outputs."""

    num_positions: int
    max_abs_diff_logits: float
    max_abs_diff_value: float
    atol: float

    @property
    def max_abs_diff(self) -> float:
        return max(self.max_abs_diff_logits, self.max_abs_diff_value)

    @property
    def ok(self) -> bool:
        return self.max_abs_diff <= self.atol


class _ExportWrapper(nn.Module):
    """Pins the exported signature: one ``board`` input, two named outputs."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, board: torch.Tensor):
        logits, value = self.model(board)
        return logits, value


@contextlib.contextmanager
def _quiet_exporter():
    """Hide the dynamo exporter's known, harmless chatter (optional torchvision ops,
    a pytree deprecation inside torch.export) for the duration of an export."""
    names = ("torch.onnx._internal.exporter._registration", "torch.onnx._internal.exporter")
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*LeafSpec.*", category=FutureWarning)
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


GRAPH_FORMAT = 1
"""The format of :func:`export_onnx`'s graphs kept per architecture (part of their key)."""
_GRAPHS: dict[str, bytes] = {}  # this process's graphs, by key


def export_onnx(model: nn.Module, opset: int = DEFAULT_OPSET, meta: dict | None = None,
                graphs: Path | None = None) -> bytes:  # fmt: skip
    """Export ``model`` to ONNX bytes with the protocol signature and a dynamic batch.

    The dynamo exporter traces an architecture once (about 3 s, most of it torch.export and
    the translation): the graph, its weights left out, is kept by its architecture, opset
    and library versions in this process and, with ``graphs``, in that folder; a model of
    the same architecture gets a copy with its own weights, then the exporter's optimizer
    (BatchNorm folded into the convolutions) runs on it: 0.1 s. The result is checked
    against the protocol here and against torch by :func:`check_parity` where it is used.

    Args:
        model: any model following the protocol (``ResNet``, ``SimpleMLP``);
            exported on CPU in eval mode (the caller's model is not modified).
        opset: ONNX opset, ``>= 18``.
        meta: what the file says about the model (``connect_zero.meta``); default
            ``model.meta`` (its generation).
        graphs: a folder that keeps the traced graphs across processes (None: this process).

    Returns:
        A serialised ``onnx.ModelProto``: input ``board`` int8 ``[batch, 6, 7]``,
        outputs ``logits`` float32 ``[batch, 7]`` and ``value`` float32 ``[batch]``.

    Raises:
        ValueError: for an opset below 18 or an exported graph whose signature
            differs from the protocol (the message names the difference).
    """
    import onnx  # noqa: PLC0415 (onnx: only for an ONNX model)
    import onnxscript  # noqa: PLC0415 (onnxscript: only for an export)

    if isinstance(opset, bool) or not isinstance(opset, int) or opset < MIN_OPSET:
        raise ValueError(f"opset must be an integer >= {MIN_OPSET}, got {opset!r}")
    wrapper = _ExportWrapper(copy.deepcopy(model).cpu()).eval()
    weights = {k: v.detach().cpu().numpy() for k, v in wrapper.state_dict().items()}
    proto = onnx.load_from_string(_graph(wrapper, getattr(model, "config", None), opset, graphs))
    for init in proto.graph.initializer:
        if init.name in weights:  # the graph's own constants stay as traced
            init.CopyFrom(onnx.numpy_helper.from_array(weights[init.name], init.name))
    proto = onnxscript.optimizer.optimize(proto)  # constant folding: BatchNorm into Conv
    # The file describes itself: the architecture config and meta travel with the graph.
    for key, value in (
        ("connect_zero.config", getattr(model, "config", None)),
        ("connect_zero.meta", meta if meta is not None else getattr(model, "meta", None) or {}),
    ):
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, json.dumps(value, sort_keys=True, default=str)
    data = proto.SerializeToString()
    check_signature(data)
    return data


def _graph(wrapper: nn.Module, config: Any, opset: int, folder: Path | None) -> bytes:
    """The unoptimised ONNX graph of ``wrapper``'s architecture, its weights zeroed: kept (this
    process, ``folder``) when ``config`` names the architecture, else traced every time."""
    import onnx  # noqa: PLC0415 (onnx: only for an ONNX model)
    import onnxscript  # noqa: PLC0415 (onnxscript: only for an export)

    key = None
    if config is not None:
        spec = {"config": config, "class": type(wrapper.model).__qualname__, "opset": opset,
                "torch": torch.__version__, "onnxscript": onnxscript.__version__,
                "onnx": onnx.__version__, "format": GRAPH_FORMAT}  # fmt: skip
        key = hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()
        if key in _GRAPHS:
            return _GRAPHS[key]
        path = folder / f"{key[:32]}.onnx" if folder is not None else None
        if path is not None and path.is_file():
            _GRAPHS[key] = path.read_bytes()
            return _GRAPHS[key]
    example = torch.zeros(2, HEIGHT, WIDTH, dtype=torch.int8)  # (2, 6, 7); B=1 would specialise
    with exporting(), _quiet_exporter(), torch.no_grad():  # one export at a time: device.py
        program = torch.onnx.export(
            wrapper,
            (example,),
            input_names=[INPUT_NAME],
            output_names=list(OUTPUT_NAMES),
            dynamic_shapes={"board": {0: torch.export.Dim(BATCH_DIM)}},
            opset_version=opset,
            dynamo=True,
            optimize=False,  # optimised once its weights are in (export_onnx)
            verbose=False,
        )
    proto = program.model_proto
    names = set(wrapper.state_dict())
    for init in proto.graph.initializer:  # the architecture alone: no model's weights kept
        if init.name in names:
            shape = onnx.numpy_helper.to_array(init).shape
            dtype = onnx.helper.tensor_dtype_to_np_dtype(init.data_type)
            init.CopyFrom(onnx.numpy_helper.from_array(np.zeros(shape, dtype), init.name))
    data = proto.SerializeToString()
    if key is not None:
        _GRAPHS[key] = data
        if folder is not None:
            with contextlib.suppress(OSError):  # a read-only folder: this process keeps it
                folder.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{os.getpid()}")
                tmp.write_bytes(data)
                os.replace(tmp, path)  # whole or not at all: another run may write it too
    return data


def weights_digest(model_bytes: bytes) -> str:
    """The sha256 of an ONNX model's weights (its initializers' names and bytes, in name
    order): the same network exported twice has one digest, whatever its metadata says."""
    import onnx  # noqa: PLC0415 (onnx: only for an ONNX model)

    proto = onnx.load_from_string(model_bytes)
    digest = hashlib.sha256()
    for init in sorted(proto.graph.initializer, key=lambda i: i.name):
        digest.update(init.name.encode())
        digest.update(onnx.numpy_helper.to_array(init).tobytes())
    return digest.hexdigest()


def onnx_info(model_bytes: bytes) -> dict[str, Any]:
    """``{"config", "meta", "opset", "producer"}`` of an ONNX model exported by :func:`export_onnx`.

    ``config`` and ``meta`` are ``None`` / ``{}`` for a foreign ONNX file.
    """
    import onnx  # noqa: PLC0415 (onnx: only for an ONNX model)

    proto = onnx.load_from_string(model_bytes)
    props = {p.key: p.value for p in proto.metadata_props}
    opset = max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), default=0)
    return {
        "config": json.loads(props.get("connect_zero.config", "null")),
        "meta": json.loads(props.get("connect_zero.meta", "{}")),
        "opset": int(opset),
        "producer": f"{proto.producer_name} {proto.producer_version}".strip(),
    }


def check_signature(model_bytes: bytes) -> None:
    """Check an ONNX model's inputs and outputs against the protocol.

    Raises:
        ValueError: naming the input or output whose name, type or shape differs.
    """
    import onnx  # noqa: PLC0415 (onnx: only for an ONNX model)

    proto = onnx.load_from_string(model_bytes)

    def describe(vi) -> tuple[str, int, list]:
        t = vi.type.tensor_type
        return vi.name, t.elem_type, [d.dim_param or d.dim_value for d in t.shape.dim]

    inputs = [describe(vi) for vi in proto.graph.input]
    outputs = [describe(vi) for vi in proto.graph.output]
    want_in = [(INPUT_NAME, _INT8, [BATCH_DIM, HEIGHT, WIDTH])]
    want_out = [
        (OUTPUT_NAMES[0], _FLOAT, [BATCH_DIM, WIDTH]),
        (OUTPUT_NAMES[1], _FLOAT, [BATCH_DIM]),
    ]
    if inputs != want_in:
        raise ValueError(f"ONNX inputs (name, elem_type, shape) are {inputs}, expected {want_in}")
    if outputs != want_out:
        raise ValueError(
            f"ONNX outputs (name, elem_type, shape) are {outputs}, expected {want_out}"
        )


def ort_session(model_bytes: bytes, threads: int | None = None, spin: bool = True):
    """An onnxruntime CPU session with full graph optimisation.

    Args:
        model_bytes: a serialised ONNX model.
        threads: intra-op threads (``None``: onnxruntime's default, one per core).
        spin: let idle worker threads busy-wait for the next call (onnxruntime's
            default). Off, they sleep: fairer to other work on a shared CPU.
    """
    import onnxruntime as ort  # noqa: PLC0415 (onnxruntime: only for an ONNX model)

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def ort_evaluate(session, boards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run an ONNX session: ``int8 [B, 6, 7]`` -> ``(logits [B, 7], value [B])`` float32."""
    logits, value = session.run(list(OUTPUT_NAMES), {INPUT_NAME: boards.astype(np.int8)})
    return logits, value


class OnnxNetwork(nn.Module):
    """An exported model (:func:`export_onnx` bytes) as a network: ``forward(boards int8
    [B, 6, 7]) -> (logits [B, 7], value [B])`` on onnxruntime's CPU provider.

    It has the checkpoint models' ``config`` and ``meta`` (from the file) and
    ``onnx_bytes``, which :func:`~.inference.make_evaluate_fn` runs as they are.
    It lets ``play``, ``benchmark`` and the ladder use a registered ONNX version.
    """

    def __init__(self, model_bytes: bytes):
        super().__init__()
        check_signature(model_bytes)
        info = onnx_info(model_bytes)
        self.onnx_bytes = model_bytes
        self.config = info["config"]
        self.meta = info["meta"]
        self._session = ort_session(model_bytes, threads=1, spin=False)

    def forward(self, boards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = ort_evaluate(self._session, boards.detach().cpu().numpy())
        return torch.from_numpy(logits), torch.from_numpy(value)


def random_positions(num_positions: int, seed: int = 0) -> torch.Tensor:
    """``int8 [num_positions, 6, 7]`` boards from seeded random legal play (batched engine).

    ``num_positions`` games are played in lock-step with uniformly random
    legal moves; every unfinished position met on the way (empty board
    included) is a candidate, and a seeded shuffle picks ``num_positions`` of
    them. Finished positions are never included.
    """
    if isinstance(num_positions, bool) or not isinstance(num_positions, int) or num_positions < 1:
        raise ValueError(f"num_positions must be an integer >= 1, got {num_positions!r}")
    gen = torch.Generator().manual_seed(seed)
    state = initial_state(num_positions)
    live = torch.ones(num_positions, dtype=torch.bool)  # (B,)
    b_boards: list[torch.Tensor] = []
    while bool(live.any()):
        state = state.take(live)  # drop finished games
        b_boards.append(to_boards(state))  # (M, 6, 7)
        step = play(state, random_legal_actions(state, gen), validate=False)
        state, live = step.state, ~step.done
    boards = torch.cat(b_boards)  # (sum M, 6, 7)
    pick = torch.randperm(boards.shape[0], generator=gen)[:num_positions]
    return boards[pick]


def parity_report(
    model: nn.Module, model_bytes: bytes, boards: torch.Tensor, atol: float = 1e-4
) -> ParityReport:
    """Compare torch and onnxruntime on ``boards`` (``int8 [B, 6, 7]``); never raises on a gap."""
    session = ort_session(model_bytes)
    model = copy.deepcopy(model).cpu().eval()  # the caller's model keeps its device and mode
    with torch.inference_mode():
        t_logits, t_value = model(boards.cpu())  # (B, 7), (B,)
    o_logits, o_value = ort_evaluate(session, boards.cpu().numpy())
    if o_logits.shape != tuple(t_logits.shape) or o_value.shape != tuple(t_value.shape):
        raise ParityError(
            f"ONNX output shapes {o_logits.shape}, {o_value.shape} differ from torch's "
            f"{tuple(t_logits.shape)}, {tuple(t_value.shape)}"
        )
    return ParityReport(
        num_positions=int(boards.shape[0]),
        max_abs_diff_logits=float(np.abs(o_logits - t_logits.numpy()).max()),
        max_abs_diff_value=float(np.abs(o_value - t_value.numpy()).max()),
        atol=atol,
    )


def check_parity(
    model: nn.Module,
    model_bytes: bytes,
    num_positions: int = 1000,
    seed: int = 0,
    atol: float = 1e-4,
) -> ParityReport:
    """The parity gate: torch vs onnxruntime on ``num_positions`` random legal positions.

    Returns:
        The :class:`ParityReport` when both heads agree within ``atol``.

    Raises:
        ParityError: naming the head(s) and the max abs difference above ``atol``.
    """
    report = parity_report(model, model_bytes, random_positions(num_positions, seed), atol)
    if not report.ok:
        raise ParityError(
            f"ONNX export failed the parity gate on {report.num_positions} random legal "
            f"positions (seed {seed}): max abs difference logits "
            f"{report.max_abs_diff_logits:.3g}, value {report.max_abs_diff_value:.3g} > "
            f"atol {atol:g}; the export is rejected"
        )
    log.info(
        "ONNX parity on %d positions: max abs diff logits %.2e, value %.2e (atol %g)",
        report.num_positions,
        report.max_abs_diff_logits,
        report.max_abs_diff_value,
        atol,
    )
    return report
