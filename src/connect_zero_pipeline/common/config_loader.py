"""How the project reads ``conf/``: one set of config-loader arguments for every reader.

Kedro's ``OmegaConfigLoader`` replaces a whole top-level key when an env names
it, unless asked to merge softly. Parameters here merge key by key: an env
(``--env gpu``) overrides only the keys its files name, and the rest of the
recipe in ``conf/base`` stays. ``settings.py`` hands these arguments to Kedro;
:func:`load_parameters` reads the same configuration outside a session (the
pipeline registry under kedro-viz, tests, notebooks). :func:`env_params` reads one env's
own keys as ``--params`` (:func:`params_text`), so that they can go over another env: the
tests and ``scripts/gpu_check.py`` run ``conf/tiny`` so.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
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


def env_params(conf_source: str | Path, env: str) -> dict[str, Any]:
    """The keys env ``env`` of ``conf_source`` names, flat (``{"selfplay.mcts.sims": 2}``),
    as its ``parameters*.yml`` files write them: ``kedro run --params`` with them over another
    env (or over ``base``) runs what ``--env <env>`` runs."""
    files = sorted((Path(conf_source) / env).glob("parameters*.yml"))
    if not files:
        raise FileNotFoundError(f"no parameters*.yml in {Path(conf_source) / env}")
    flat: dict[str, Any] = {}

    def walk(node: dict, prefix: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict) and value:
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = value

    for path in files:
        walk(yaml.safe_load(path.read_text()) or {}, "")
    return flat


def params_text(params: dict[str, Any]) -> str:
    """``kedro run --params`` text of flat ``params``: ``a.b=1,c=[2,3],d=null,e=true``
    (OmegaConf's words for None and booleans; a list in brackets)."""

    def text(value: Any) -> str:
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple)):
            return "[" + ",".join(text(v) for v in value) + "]"
        return str(value)

    return ",".join(f"{key}={text(value)}" for key, value in params.items())


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
