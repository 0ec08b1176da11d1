"""Project pipelines."""

from __future__ import annotations

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

from .common.naming import DEFAULT_PIPELINE


def register_pipelines() -> dict[str, Pipeline]:
    """Register the project's pipelines.

    Every package under ``pipelines/`` with a ``create_pipeline()`` is found
    automatically. The default pipeline is the main job. ``selfplay``, ``train`` and
    ``evaluate`` are the ``alphazero`` DAG's slices by tag, each a package of its own: Kedro
    loads only the packages a run names (``--pipelines=selfplay`` imports that package
    alone, and a name with no package is an error before this function could add it).
    """
    pipelines = find_pipelines(raise_errors=True)
    # `kedro run --pipelines=X` makes find_pipelines load only X.
    if DEFAULT_PIPELINE in pipelines:
        pipelines["__default__"] = pipelines[DEFAULT_PIPELINE]
    return pipelines
