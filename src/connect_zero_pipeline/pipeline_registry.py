"""Project pipelines."""

from __future__ import annotations

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

DEFAULT_PIPELINE = "alphazero"
"""The main job: what ``kedro run`` runs (``__default__``)."""


def pipeline_label(names: list[str] | None) -> str:
    """A run's pipelines as people name them: ``__default__`` is the main job's name."""
    return ",".join(DEFAULT_PIPELINE if n == "__default__" else n for n in names or ["__default__"])


def register_pipelines() -> dict[str, Pipeline]:
    """Register the project's pipelines.

    Every package under ``pipelines/`` with a ``create_pipeline()`` is found
    automatically. The default pipeline is the main job.
    """
    pipelines = find_pipelines(raise_errors=True)
    # `kedro run --pipelines=X` makes find_pipelines load only X.
    if DEFAULT_PIPELINE in pipelines:
        pipelines["__default__"] = pipelines[DEFAULT_PIPELINE]
    return pipelines
