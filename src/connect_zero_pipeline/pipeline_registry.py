"""Project pipelines."""

from __future__ import annotations

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

from .common.naming import DEFAULT_PIPELINE


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
