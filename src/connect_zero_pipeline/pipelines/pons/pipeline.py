"""``pons``: games -> positions -> solver labels -> the decisive, mirror-deduplicated set."""

from kedro.pipeline import Node, Pipeline

from .nodes import (
    collect_pons_positions,
    generate_pons_games,
    label_pons_positions,
    select_pons_positions,
)


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                generate_pons_games,
                ["params:pons", "solver_cache"],
                "pons_games",
                name="generate_pons_games",
            ),
            Node(
                collect_pons_positions,
                ["pons_games", "params:pons"],
                "pons_candidates",
                name="collect_pons_positions",
            ),
            Node(
                label_pons_positions,
                ["pons_candidates", "params:pons", "solver_cache"],
                ["pons_labelled", "pons_label_metrics"],
                name="label_pons_positions",
            ),
            Node(
                select_pons_positions,
                "pons_labelled",
                ["pons_positions", "pons_set_metrics"],
                name="select_pons_positions",
            ),
        ],
        tags=["pons"],
    )
