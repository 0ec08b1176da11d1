"""Where tensors live and how torch runs there: the device a setting names, and torch's
process-wide state, set where a process starts, or guarded where threads share it.

Threads of one process (an overlapped run's nodes: ``session.runner.OverlapRunner``) share
whatever torch keeps per process. This module holds each such setting the project touches,
with its rule:

- **float32 precision** (:func:`use_tensor_cores`): set once, where a process that computes
  on CUDA starts (a run, a Ray actor, a benchmark), never around a node, so that no thread
  can flip it under another;
- **the exporters** (:func:`exporting`): torch's ONNX exporters keep process-global state
  (the TorchScript one its ``GLOBALS.in_onnx_export`` flag, both of them the warning filters
  and loggers they quieten), so every export of the project holds one lock;
- **intra-op threads** (:func:`torch_threads`): set around a block. With torch's OpenMP
  backend (the CPU wheels) the count is each thread's own once the thread has run a parallel
  op, so an overlapped node's setting does not reach another node's thread.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, contextmanager, nullcontext

import torch

from .config.training import PRECISIONS


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` picks CUDA when available, else CPU; other names are passed to torch."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available")
    return dev


BF16_FLAGS = ("amx_bf16", "avx512_bf16")
"""CPU flags (Linux's ``/proc/cpuinfo``) of native bfloat16 products, the faster first."""


def native_bf16(cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """The first of :data:`BF16_FLAGS` this machine's CPU has, or None (not Linux, or none)."""
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])  # fmt: skip
    except OSError:
        return None
    return next((flag for flag in BF16_FLAGS if flag in flags), None)


def arithmetic(device_type: str, dtype: torch.dtype) -> AbstractContextManager:
    """The context a network's products run in for ``dtype`` (:func:`compute_dtype`):
    ``torch.autocast`` for a lower precision, nothing at all for float32 (autocast refuses
    devices it has no rules for, ``meta`` among them, even when disabled)."""
    return torch.autocast(device_type, dtype) if dtype != torch.float32 else nullcontext()


def compute_dtype(precision: str, device: torch.device) -> tuple[torch.dtype, str]:
    """``(dtype, why)``: what ``precision`` (:data:`PRECISIONS`) runs in on ``device``, and in
    words why (``"bfloat16 (the CPU's avx512_bf16)"``), for the run's log."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "float32" or (precision == "auto" and device.type != "cpu"):
        return torch.float32, "float32"
    if precision == "bfloat16":
        return torch.bfloat16, "bfloat16 (asked for)"
    flag = native_bf16()
    if flag is None:
        return torch.float32, "float32 (auto: no native bfloat16 on this CPU)"
    return torch.bfloat16, f"bfloat16 (auto: the CPU's {flag})"


MATMUL_PRECISION = "high"
"""torch's float32 matrix-product precision in a process that computes on CUDA: ``high``
lets them run as TF32 on tensor cores (convolutions already do: cuDNN's default)."""


def use_tensor_cores(devices) -> bool:
    """Let float32 matrix products run on tensor cores (TF32, :data:`MATMUL_PRECISION`) for
    the rest of this process when any of ``devices`` (device names or ``torch.device``\\ s:
    ``auto`` resolves) is CUDA; nothing otherwise (on the CPU the setting would reach
    oneDNN's products). Called once where a process that computes starts, never around a
    block: the setting is the process's, shared by its threads. Returns whether it was set."""
    if not torch.cuda.is_available():
        return False
    if not any(resolve_device(d).type == "cuda" for d in devices):
        return False
    torch.set_float32_matmul_precision(MATMUL_PRECISION)
    return True


_EXPORTER = threading.Lock()


@contextmanager
def exporting():
    """Hold the process's one ONNX export lock for a block that calls ``torch.onnx.export``
    (either exporter): two exports at once in threads of one process corrupt each other's
    state (``AssertionError: GLOBALS.in_onnx_export must be False``) and the warning filters
    each sets and restores."""
    with _EXPORTER:
        yield


@contextmanager
def torch_threads(num_threads: int | None):
    """Run a block with ``torch.set_num_threads(num_threads)`` (``None`` or 0: unchanged), then
    restore (module docstring: per thread under OpenMP)."""
    previous = torch.get_num_threads()
    if num_threads:
        torch.set_num_threads(int(num_threads))
    try:
        yield
    finally:
        torch.set_num_threads(previous)
