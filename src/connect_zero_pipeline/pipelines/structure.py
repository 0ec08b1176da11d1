"""What the pipeline registry needs: the structural parameters of the run being built.

Kedro pipelines are DAGs, so the AlphaZero generations and the REINFORCE
chunks are unrolled when the registry builds the pipelines, and a few
*structural* parameters fix their shape (``alphazero.num_generations``,
``train.buffer_gens``, ``reinforce.num_chunks``). The registry reads them from the
configuration of the session that runs: :class:`~..session.ProjectSession` reads its
merged parameters (base + env + ``--params``) with its own config loader, and builds its
pipelines inside :func:`reading`. Outside a session (``kedro registry``, kedro-viz,
plain imports) the project's ``conf/`` is read, with the same loader settings.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from functools import partial, update_wrapper
from typing import Any

from ..params.schema import parse_section

_SESSION_PARAMS: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "session_params", default=None
)


@contextlib.contextmanager
def reading(params: Mapping[str, Any]) -> Iterator[None]:
    """Build pipelines from ``params`` (a session's merged parameters) inside the block."""
    token = _SESSION_PARAMS.set(params)
    try:
        yield
    finally:
        _SESSION_PARAMS.reset(token)


def _conf_params() -> Mapping[str, Any]:
    from ..config_loader import load_parameters
    from ..project import project_root

    root = project_root()
    if root is None:
        return {}
    return load_parameters(root / "conf", os.environ.get("KEDRO_ENV", "local"))


def section(name: str) -> Any:
    """:func:`~..params.schema.parse_section` of section ``name`` of the run's parameters."""
    params = _SESSION_PARAMS.get()
    node: Any = _conf_params() if params is None else params
    for part in name.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return parse_section(name, node)


def bind(func, **kwargs):
    """``partial`` that keeps the function's name and docs (for kedro-viz and node names)."""
    return update_wrapper(partial(func, **kwargs), func)
