"""The parameters that shape the unrolled AlphaZero DAG.

Kedro pipelines are DAGs, so the generation loop is unrolled when the
pipeline registry is built, and two parameters fix its shape:
``alphazero.num_generations`` and ``train.buffer_gens`` (the replay window).

They are read from the run's configuration: :class:`RegistryParamsHook`
stashes the merged parameters of the session (base + env + ``--params``) as
soon as the context exists, before Kedro builds the pipelines. Outside a
session (``kedro registry``, kedro-viz without hooks, plain imports), the
project's ``conf/`` is read directly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kedro.framework.hooks import hook_impl

_STASH: dict[str, Any] = {}


class RegistryParamsHook:
    """Stash the session's parameters for :func:`structure` (runs before pipelines are built)."""

    @hook_impl(tryfirst=True)
    def after_context_created(self, context) -> None:
        # config_loader["parameters"] already merges the env and runtime --params.
        _STASH.clear()
        _STASH.update(context.config_loader["parameters"])


def _load_from_conf() -> dict[str, Any]:
    from kedro.config import OmegaConfigLoader

    root = Path.cwd()
    while not (root / "conf" / "base").is_dir() and root != root.parent:
        root = root.parent
    if not (root / "conf" / "base").is_dir():
        return {}
    loader = OmegaConfigLoader(
        conf_source=str(root / "conf"),
        base_env="base",
        default_run_env=os.environ.get("KEDRO_ENV", "local"),
    )
    return dict(loader["parameters"])


def registry_params() -> dict[str, Any]:
    """The run's merged parameters while the registry builds pipelines (or ``conf/`` outside a run)."""
    return _STASH or _load_from_conf()


def structure() -> tuple[int, int]:
    """``(num_generations, buffer_gens)`` for building the DAG, validated."""
    params = registry_params()
    num_generations = (params.get("alphazero") or {}).get("num_generations", 8)
    buffer_gens = (params.get("train") or {}).get("buffer_gens", 4)
    for key, value in (
        ("alphazero.num_generations", num_generations),
        ("train.buffer_gens", buffer_gens),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 999:
            raise ValueError(f"{key} must be an integer in [1, 999], got {value!r}")
    return num_generations, buffer_gens


def generation_name(k: int) -> str:
    """Namespace of generation ``k``: ``gen_001`` ... (``gen_000`` is the initial model)."""
    return f"gen_{k:03d}"
