"""``scorecard``: one table comparing the latest REINFORCE and AlphaZero models.

Run it after both algorithms have trained (``kedro run --pipelines=scorecard``).
It reads the model and metric folders through load-only partitioned catalog
entries and picks, for each algorithm, the highest chunk / generation on disk
(or the one named in ``params:scorecard``) and its latest version.
"""

from kedro.pipeline import Node, Pipeline

from .nodes import build_scorecard


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                build_scorecard,
                inputs=[
                    "model_files",
                    "metric_files",
                    "pons_positions",
                    "params:scorecard",
                ],
                outputs=["scorecard", "scorecard_metrics"],
                name="build_scorecard",
                tags=["scorecard", "report"],
            )
        ]
    )
