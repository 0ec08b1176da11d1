"""What the pipeline registry needs: the structural parameters of the run being built.

Kedro pipelines are DAGs, so the AlphaZero generations and the REINFORCE
chunks are unrolled when the registry builds the pipelines, and a few
*structural* parameters fix their shape (``alphazero.num_generations``,
``train.buffer_gens``, ``evaluate.gating``, ``reinforce.num_chunks``). The registry reads them from the
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

from ..common.config_loader import load_parameters
from ..common.project import project_root
from ..params.schema import section_of

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
    root = project_root()
    if root is None:
        return {}
    return load_parameters(root / "conf", os.environ.get("KEDRO_ENV", "local"))


def _built_from() -> Mapping[str, Any]:
    """The parameters the pipelines are built from: the session's, else ``conf/``'s."""
    params = _SESSION_PARAMS.get()
    return _conf_params() if params is None else params


def section(name: str) -> Any:
    """The config of section ``name`` of the parameters the pipelines are built from."""
    return section_of(_built_from(), name)


STRUCTURAL = ("alphazero.num_generations", "train.buffer_gens", "evaluate.gating",
              "reinforce.num_chunks")  # fmt: skip
"""The parameters that shape the unrolled DAGs."""


def _shape(params: Mapping[str, Any]) -> dict[str, Any]:
    return {key: getattr(section_of(params, key.rsplit(".", 1)[0]), key.rsplit(".", 1)[1])
            for key in STRUCTURAL}  # fmt: skip


def check_shape(params: Mapping[str, Any]) -> None:
    """Refuse a run whose structural parameters are not the ones its pipelines are built
    from: a plain ``KedroSession`` (not :class:`~..session.ProjectSession`) builds them
    from ``conf/``, so ``runtime_params`` that change the DAG's shape would be ignored;
    and a ``model.start_from`` there, which such a session would ignore too."""
    start = (params.get("model") or {}).get("start_from")
    if start and _SESSION_PARAMS.get() is None:  # a plain session plans no start point
        raise ValueError(
            f"model.start_from={start!r}: this session would ignore it (the project's session "
            "resolves a start point once, at the run's start): run it with kedro run, or with "
            "connect_zero_pipeline.session.project_session.ProjectSession (settings.SESSION_CLASS)"
        )
    wanted = _shape(params)
    built = _shape(_built_from())
    changed = [k for k in STRUCTURAL if wanted[k] != built[k]]
    if changed:
        raise ValueError(
            f"{', '.join(f'{k}={wanted[k]!r}' for k in changed)} change the pipelines' shape, "
            "but this session builds them from conf/ "
            f"({', '.join(f'{k}={built[k]!r}' for k in changed)}): run it with kedro run, or "
            "with connect_zero_pipeline.session.project_session.ProjectSession (settings.SESSION_CLASS), "
            "which builds its pipelines from its own parameters"
        )


def bind(func, **kwargs):
    """``partial`` that keeps the function's name and docs (for kedro-viz and node names)."""
    return update_wrapper(partial(func, **kwargs), func)
