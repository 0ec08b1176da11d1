"""How the project reads ``conf/``: one set of config-loader arguments for every reader.

Kedro's ``OmegaConfigLoader`` replaces a whole top-level key when an env names
it, unless asked to merge softly. Parameters here merge key by key: an env
(``--env gpu``) overrides only the keys its files name, and the rest of the
recipe in ``conf/base`` stays. ``settings.py`` hands these arguments to Kedro;
:func:`load_parameters` reads the same configuration outside a session (the
pipeline registry under kedro-viz, tests, notebooks).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kedro.config import OmegaConfigLoader

from .project import in_project

CONFIG_LOADER_ARGS: dict[str, Any] = {
    "base_env": "base",
    "default_run_env": "local",
    "config_patterns": {
        "mlflow": ["mlflow*", "mlflow*/**"],
    },
    "merge_strategy": {"parameters": "soft"},
    # mlflow.yml anchors the store at the project root: sqlite:///${cz.project_root:}/mlflow.db
    "custom_resolvers": {"cz.project_root": lambda: _project_root()},
}


def _project_root() -> str:
    return str(in_project("."))


def load_parameters(
    conf_source: str | Path, env: str | None = None, runtime_params: dict | None = None
) -> dict[str, Any]:
    """The merged parameters of ``conf_source`` (base, then ``env``, then ``runtime_params``)."""

    loader = OmegaConfigLoader(
        conf_source=str(conf_source), env=env, runtime_params=runtime_params, **CONFIG_LOADER_ARGS
    )
    return dict(loader["parameters"])


@contextlib.contextmanager
def chdir(path: Path) -> Iterator[None]:
    """Run the block in ``path`` (relative paths and ``${cz.project_root:}`` resolve there)."""
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def project_config(project: Path, key: str, env: str | None = None) -> dict[str, Any]:
    """The merged config ``key`` (``catalog``, ``mlflow``, ...) of the Kedro project at
    ``project``, read as ``kedro run`` reads it (base, then ``env``; None: ``$KEDRO_ENV`` or
    local), without a session: no hooks, no MLflow run."""
    with chdir(project):  # the ${cz.project_root:} resolver looks around the current folder
        loader = OmegaConfigLoader(
            conf_source=str(project / "conf"), env=env or os.environ.get("KEDRO_ENV"),
            **CONFIG_LOADER_ARGS,
        )  # fmt: skip
        return dict(loader[key])
