"""Where tensors live and how torch runs there: the device a setting names, tensor cores on
CUDA, torch's thread count for a block."""

from __future__ import annotations

from contextlib import contextmanager

import torch


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


@contextmanager
def tensor_cores(device: torch.device | str):
    """Run a block with float32 matrix products on tensor cores on CUDA (TF32:
    ``torch.set_float32_matmul_precision("high")``, then restored); unchanged elsewhere."""
    if torch.device(device).type != "cuda":
        yield
        return
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


@contextmanager
def torch_threads(num_threads: int | None):
    """Run a block with ``torch.set_num_threads(num_threads)`` (``None`` or 0: unchanged), then
    restore."""
    previous = torch.get_num_threads()
    if num_threads:
        torch.set_num_threads(int(num_threads))
    try:
        yield
    finally:
        torch.set_num_threads(previous)
