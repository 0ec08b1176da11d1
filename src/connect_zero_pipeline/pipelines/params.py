"""Helpers shared by node adapters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def split_params(
    params: Mapping[str, Any] | None, node_keys: Mapping[str, Any], section: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a parameter section into node-level settings and the rest.

    Args:
        params: the section, e.g. ``params:selfplay``.
        node_keys: node-level keys with their defaults (``device``, ...).
        section: the section's name, for error messages.

    Returns:
        ``(node_settings, rest)``: the node-level keys with defaults filled in,
        and everything else (for a core config's ``from_params``).
    """
    if params is not None and not isinstance(params, Mapping):
        raise ValueError(f"parameters '{section}' must be a mapping, got {type(params).__name__}")
    rest = dict(params or {})
    node = {k: rest.pop(k, default) for k, default in node_keys.items()}
    return node, rest
