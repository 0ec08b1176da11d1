"""``ladder``: an Elo ladder of generations, runs, registered versions and anchors.

``kedro run --pipelines=ladder`` (after an ``alphazero`` run): select the
players, play every pair from seeded random openings with both colours
(reusing every game already played, ``ladder.cache_dir``), fit the ratings
with bootstrap intervals, plot them and publish them to MLflow.
"""

from kedro.pipeline import Node, Pipeline

from .nodes import play_ladder, publish_ratings, rate_players, select_players


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                select_players,
                ["model_files", "ladder_plan", "params:ladder"],
                "ladder_players",
                name="select_players",
            ),
            Node(
                play_ladder,
                ["ladder_players", "model_files", "ladder_plan", "params:ladder"],
                "ladder_matches",
                name="play_ladder",
            ),
            Node(
                rate_players,
                ["ladder_matches", "ladder_players", "params:ladder"],
                ["ladder_ratings", "ladder_plot", "ladder_metrics"],
                name="rate_players",
            ),
            Node(
                publish_ratings,
                ["ladder_ratings", "ladder_plot", "params:ladder"],
                None,
                name="publish_ratings",
            ),
        ],
        tags=["ladder"],
    )
