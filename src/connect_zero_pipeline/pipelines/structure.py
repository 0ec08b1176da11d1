"""What the pipeline registry needs: the run's parameters, before any pipeline is built.

Kedro pipelines are DAGs, so the AlphaZero generations and the REINFORCE
chunks are unrolled when the registry builds the pipelines, and a few
*structural* parameters fix their shape (``alphazero.num_generations``,
``train.buffer_gens``, ``reinforce.num_chunks``). They are read from the run's
configuration: ``hooks.RunStartHook`` validates the merged parameters of the
session (base + env + ``--params``) against the schema (:mod:`.params`) as
soon as the context exists, before Kedro builds the pipelines, runs a node or
opens an MLflow run, and hands them over with :func:`set_registry_params`. Outside a
session (``kedro registry``, kedro-viz without hooks, plain imports), the
project's ``conf/`` is read directly, with the same loader settings.
"""

from __future__ import annotations

import os
from functools import partial, update_wrapper
from pathlib import Path
from typing import Any

_STASH: dict[str, Any] = {}


def set_registry_params(params: dict[str, Any] | None) -> None:
    """Hand the session's validated parameters to the registry (None: forget them)."""
    _STASH.clear()
    if params:
        _STASH.update(params)


def _load_from_conf() -> dict[str, Any]:
    from ..config_loader import load_parameters

    root = Path.cwd()
    while not (root / "conf" / "base").is_dir() and root != root.parent:
        root = root.parent
    if not (root / "conf" / "base").is_dir():
        return {}
    return load_parameters(root / "conf", os.environ.get("KEDRO_ENV", "local"))


def registry_params() -> dict[str, Any]:
    """The run's merged parameters while the registry builds pipelines (or ``conf/`` outside a run)."""
    return _STASH or _load_from_conf()


def section(name: str) -> tuple:
    """:func:`~.params.parse_section` of section ``name`` of :func:`registry_params`."""
    from .params import parse_section

    node: Any = registry_params()
    for part in name.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return parse_section(name, node)


def bind(func, **kwargs):
    """``partial`` that keeps the function's name and docs (for kedro-viz and node names)."""
    return update_wrapper(partial(func, **kwargs), func)
