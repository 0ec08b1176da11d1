"""Typed configs from plain parameter dicts, with loud errors for unknown or bad keys."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import torch

T = TypeVar("T")


def from_params(cls: type[T], params: Mapping[str, Any] | None, section: str) -> T:
    """Build the frozen dataclass ``cls`` from ``params``.

    Args:
        cls: a dataclass; its ``__post_init__`` validates values.
        params: the parameter mapping (missing keys take the dataclass defaults).
        section: the parameter path, named in error messages (e.g. ``"selfplay"``).

    Raises:
        ValueError: for a key ``cls`` does not have, naming the key and ``section``,
            or for a value the dataclass rejects.
    """
    params = dict(params or {})
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {', '.join(repr(k) for k in unknown)} in '{section}'; "
            f"valid keys are: {', '.join(names)}"
        )
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"invalid parameters in '{section}': {exc}") from exc


def check(condition: bool, key: str, value: Any, requirement: str) -> None:
    """Raise ``ValueError`` naming ``key`` and ``value`` unless ``condition`` holds."""
    if not condition:
        raise ValueError(f"{key} must be {requirement}, got {value!r}")


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
