"""The project around the current folder: the one way this package finds its root."""

from __future__ import annotations

from pathlib import Path


def project_root(start: str | Path | None = None) -> Path | None:
    """The Kedro project (``pyproject.toml`` with ``[tool.kedro]``) at or above ``start``
    (default: the current folder), resolved; None outside a project."""
    from kedro.utils import find_kedro_project

    found = find_kedro_project(Path(start) if start is not None else Path.cwd())
    return found.resolve() if found is not None else None


def in_project(path: str | Path) -> Path:
    """``path`` itself if absolute, else ``path`` below the project root (the current folder
    outside a project), so a relative path in the parameters means the same file from any
    folder of the project."""
    path = Path(path)
    return path if path.is_absolute() else (project_root() or Path.cwd().resolve()) / path
