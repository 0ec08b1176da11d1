"""The project around the current folder: the one way this package finds its root; and the
user's cache folder, shared by the projects of one user."""

from __future__ import annotations

import os
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
