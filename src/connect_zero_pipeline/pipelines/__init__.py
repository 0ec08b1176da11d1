"""The project's pipelines: one package each, found by :func:`..pipeline_registry.register_pipelines`."""

from __future__ import annotations

import pkgutil


def pipeline_names() -> list[str]:
    """The pipelines ``--pipelines`` takes, without building any: every package of
    ``pipelines/`` (what :func:`register_pipelines` finds), and ``__default__``."""
    found = (m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)
    return [*sorted(found), "__default__"]
