"""Model files: the weights plus the architecture config that rebuilds the model.

A checkpoint is a plain dict saved with ``torch.save`` and loaded with
``torch.load(weights_only=True)`` (no pickled code runs on load)::

    {"format": "connect-zero-model/1", "config": {...}, "state_dict": {...}, "meta": {...}}

``config`` is what :func:`~.models.build_model` takes; ``meta`` holds small
JSON-like facts (generation, training step, ...).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import torch
from torch import nn

from .models import build_model

FORMAT = "connect-zero-model/1"


def checkpoint_dict(model: nn.Module, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The checkpoint of ``model`` (tensors moved to CPU)."""
    if not hasattr(model, "config"):
        raise ValueError(f"{type(model).__name__} has no .config: build models with build_model()")
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"format": FORMAT, "config": dict(model.config), "state_dict": state, "meta": meta or {}}


def save_model(model: nn.Module, file: str | Path | BinaryIO, meta: dict | None = None) -> None:
    """Save ``model`` with its config to a path or a binary file object."""
    torch.save(checkpoint_dict(model, meta), file)


def model_to_bytes(model: nn.Module, meta: dict | None = None) -> bytes:
    buf = io.BytesIO()
    save_model(model, buf, meta)
    return buf.getvalue()


def load_model(
    file: str | Path | BinaryIO, device: str | torch.device = "cpu", name: str | None = None
) -> nn.Module:
    """Rebuild a model from a checkpoint (``weights_only=True``), in eval mode.

    The checkpoint's ``meta`` dict is attached as ``model.meta``.

    Raises:
        ValueError: the file is corrupt, not a torch file, or not a Connect-Zero
            model (the message names the file).
    """
    label = name or (str(file) if isinstance(file, (str, Path)) else "model file")
    try:
        ckpt = torch.load(file, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many types for foreign or truncated files
        raise ValueError(
            f"{label} is not a readable model file: {_why_unreadable(file, exc)}"
        ) from exc
    return from_dict(ckpt, label).to(device).eval()


_ZIP_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive


def _why_unreadable(file: str | Path | BinaryIO, exc: Exception) -> str:
    """Why ``torch.load`` could not read ``file``, in one line: empty, not a torch file (what
    it starts with), truncated or damaged; else the first line of torch's own message (its
    ``weights_only`` advice, eight lines, is about files that are torch files)."""
    try:
        if isinstance(file, (str, Path)):
            with open(file, "rb") as f:
                head, size = f.read(8), Path(file).stat().st_size
        else:
            file.seek(0)
            head = file.read(8)
            size = file.seek(0, io.SEEK_END)
            file.seek(0)
    except (OSError, AttributeError, ValueError):
        head, size = None, None
    if size == 0:
        return "it is empty (0 bytes)"
    if head is not None and not head.startswith(_ZIP_MAGIC):
        return f"not a PyTorch checkpoint (a torch.save zip archive); it starts with {head!r}"
    if head is not None:
        try:
            with zipfile.ZipFile(file) as archive:
                damaged = archive.testzip()
        except (zipfile.BadZipFile, OSError, EOFError):
            return f"a zip archive cut short or damaged ({size} bytes): save or copy it again"
        if damaged is not None:
            return f"a damaged zip archive ({damaged} is corrupt): save or copy it again"
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return lines[0][:200]


def from_dict(ckpt: Any, name: str = "checkpoint") -> nn.Module:
    """Rebuild a model from a checkpoint dict (:func:`checkpoint_dict`), in eval mode on the CPU.

    The one place a checkpoint becomes a model: files, worker processes and Ray
    actors all come through here. The dict's ``meta`` is attached as ``model.meta``.

    Raises:
        ValueError: naming ``name``, when ``ckpt`` is not a Connect-Zero
            checkpoint or its weights do not fit its config.
    """
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        raise ValueError(f"{name} is not a Connect-Zero model ({FORMAT}); found {found!r}")
    model = build_model(ckpt["config"])
    try:
        model.load_state_dict(ckpt["state_dict"])
    except RuntimeError as exc:
        raise ValueError(f"{name}: weights do not match its config: {exc}") from exc
    model.meta = dict(ckpt.get("meta") or {})
    return model.eval()
