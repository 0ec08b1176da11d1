"""The project around the current folder: the one way this package finds its root; and the
user's cache folder, shared by the projects of one user."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def project_root(start: str | Path | None = None) -> Path | None:
    """The Kedro project (``pyproject.toml`` with ``[tool.kedro]``) at or above ``start``
    (default: the current folder), resolved; None outside a project."""
    from kedro.utils import find_kedro_project  # noqa: PLC0415 (Kedro: not for python -m connect_zero_pipeline --help)

    found = find_kedro_project(Path(start) if start is not None else Path.cwd())
    return found.resolve() if found is not None else None


def in_project(path: str | Path) -> Path:
    """``path`` itself if absolute, else ``path`` below the project root (the current folder
    outside a project), so a relative path in the parameters means the same file from any
    folder of the project."""
    path = Path(path)
    return path if path.is_absolute() else (project_root() or Path.cwd().resolve()) / path


def folder_in(root: str | Path, where: str | None) -> str | None:
    """A folder the parameters name (``pons.cache_dir``, ``ladder.cache_dir``) in the project
    at ``root``: an absolute path stays; None (no folder) stays None."""
    return None if not where else str(Path(root) / where)


def user_cache() -> Path:
    """``$XDG_CACHE_HOME/connect-zero-pipeline`` (default ``~/.cache/...``): what is the same
    for every project of a machine and costs seconds to make, kept once per library version
    (an empty MLflow store, the ONNX graph of each architecture). Never a project's data."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "connect-zero-pipeline"


SHIPPED_LABELS = "data/02_intermediate/solver_cache/part-public-sets.parquet"
"""The solver cache's shipped part: the public sets' labels (``scripts/public_sets_cache.py``)."""
SHIPPED_SET = "data/03_primary/pons_positions.parquet"
"""The shipped solver-labelled set every scorecard reads (a versioned folder)."""


def new_project(source: str | Path, dest: str | Path, *, store: str | Path | None = None,
                solver_set: bool = False) -> Path:  # fmt: skip
    """A new project at ``dest`` (a folder that exists is refused: nothing is overwritten)
    from the checkout at ``source``, for runs to write into, as a fresh clone has it: its
    ``conf/`` but ``conf/local``, an empty ``conf/local``, ``pyproject.toml``, the public
    sets (``tests/data/pons``) and their shipped labels (:data:`SHIPPED_LABELS`), ``data/``'s
    layer folders and no run output, and an empty ``src/`` (Kedro wants it; the package is
    imported from where it is installed).

    ``store``: an MLflow store pinned in ``conf/local/mlflow.yml`` by absolute path (None:
    conf/base's, the project's own ``mlflow.db``). ``solver_set``: the shipped
    solver-labelled set too (:data:`SHIPPED_SET`), for runs that score on it.
    """
    source, dest = Path(source), Path(dest)
    dest.mkdir(parents=True)
    shutil.copytree(source / "conf", dest / "conf", ignore=shutil.ignore_patterns("local"))
    (dest / "conf" / "local").mkdir()
    if store is not None:
        uri = f"sqlite:///{Path(store).resolve()}"
        (dest / "conf" / "local" / "mlflow.yml").write_text(
            f"server:\n  mlflow_tracking_uri: {uri}\n  mlflow_registry_uri: {uri}\n"
        )
    shutil.copy(source / "pyproject.toml", dest / "pyproject.toml")
    shutil.copytree(source / "tests" / "data" / "pons", dest / "tests" / "data" / "pons")
    for layer in sorted((source / "data").iterdir()):
        if layer.is_dir():
            (dest / "data" / layer.name).mkdir(parents=True)
            if (layer / ".gitkeep").is_file():
                shutil.copy(layer / ".gitkeep", dest / "data" / layer.name / ".gitkeep")
    (dest / SHIPPED_LABELS).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / SHIPPED_LABELS, dest / SHIPPED_LABELS)
    if solver_set:
        shutil.copytree(source / SHIPPED_SET, dest / SHIPPED_SET)
    (dest / "src").mkdir()
    return dest
