"""Declarative ``baselines`` pipeline."""

from kedro.pipeline import Node, Pipeline

from .nodes import play_baseline_match


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                play_baseline_match,
                inputs="params:baselines",
                outputs=["baselines_match_results", "baselines_match_metrics"],
                name="play_baseline_match",
            )
        ]
    )
