"""What the pipeline registry needs: the structural parameters of the run being built.

Kedro pipelines are DAGs, so the AlphaZero generations and the REINFORCE
chunks are unrolled when the registry builds the pipelines, and a few
*structural* parameters fix their shape (``alphazero.num_generations``,
``train.buffer_gens``, ``evaluate.gating``, ``reinforce.num_chunks``). The registry reads them from the
configuration of the session that runs: :class:`~..session.project_session.ProjectSession`
plans its run, its merged parameters (base + env + ``--params``) parsed once into typed
sections, and builds its pipelines inside :func:`reading` of them. Outside a session (``kedro registry``, kedro-viz,
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
from ..params.schema import RunParams, parse_run_params

_SESSION_SECTIONS: contextvars.ContextVar[RunParams | None] = contextvars.ContextVar(
    "session_sections", default=None
)
"""The one adapter between a session and Kedro's pipeline registry, which builds the
pipelines by calling ``register_pipelines()`` with no argument: the sections of the run being
built, set by :func:`reading` for the block that builds them."""


@contextlib.contextmanager
def reading(sections: RunParams) -> Iterator[None]:
    """Build pipelines from ``sections`` (a run's parameters, parsed once) inside the block."""
    token = _SESSION_SECTIONS.set(sections)
    try:
        yield
    finally:
        _SESSION_SECTIONS.reset(token)


def _conf_sections() -> RunParams:
    root = project_root()
    params = {} if root is None else load_parameters(root / "conf",
                                                     os.environ.get("KEDRO_ENV", "local"))  # fmt: skip
    return parse_run_params(params)


def _built_from() -> RunParams:
    """The sections the pipelines are built from: the session's, else ``conf/``'s."""
    sections = _SESSION_SECTIONS.get()
    return _conf_sections() if sections is None else sections


def section(name: str) -> Any:
    """The config of section ``name`` of the parameters the pipelines are built from."""
    return getattr(_built_from(), name)


STRUCTURAL = ("alphazero.num_generations", "train.buffer_gens", "evaluate.gating",
              "reinforce.num_chunks")  # fmt: skip
"""The parameters that shape the unrolled DAGs."""


def _shape(sections: RunParams) -> dict[str, Any]:
    return {key: getattr(getattr(sections, key.split(".")[0]), key.split(".")[1])
            for key in STRUCTURAL}  # fmt: skip


def check_shape(params: Mapping[str, Any]) -> None:
    """Refuse a run whose structural parameters are not the ones its pipelines are built
    from: a plain ``KedroSession`` (not :class:`~..session.project_session.ProjectSession`)
    builds them from ``conf/``, so ``runtime_params`` that change the DAG's shape would be
    ignored; and a ``model.start_from`` there, which such a session would ignore too. A
    project session builds its pipelines from its own parameters (:func:`reading`): nothing
    to check, nothing parsed again."""
    if _SESSION_SECTIONS.get() is not None:
        return
    start = (params.get("model") or {}).get("start_from")
    if start:  # a plain session plans no start point
        raise ValueError(
            f"model.start_from={start!r}: this session would ignore it (the project's session "
            "resolves a start point once, at the run's start): run it with kedro run, or with "
            "connect_zero_pipeline.session.project_session.ProjectSession (settings.SESSION_CLASS)"
        )
    wanted = _shape(parse_run_params(params))
    built = _shape(_conf_sections())
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
