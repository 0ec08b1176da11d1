"""Declarative ``export`` pipeline.

``create_pipeline(model_input=...)`` names the catalog entry of the model to
export. Standalone (``kedro run --pipelines=export``) it is ``latest_model``;
the alphazero pipeline passes its last generation, e.g.
``create_pipeline(model_input="gen_008.model")`` (or remaps the input with
``kedro.pipeline.pipeline(export, inputs={"latest_model": "gen_008.model"})``).

The ONNX file and the play page are written first; ``register_model`` logs the
model to MLflow and registers its version last, so a failed export never leaves a
registry version behind.
"""

from kedro.pipeline import Node, Pipeline

from .nodes import build_play_page, export_onnx_model, register_model

DEFAULT_MODEL_INPUT = "latest_model"


def create_pipeline(model_input: str = DEFAULT_MODEL_INPUT, **kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                export_onnx_model,
                inputs=[model_input, "pons_positions", "params:export"],
                outputs=["onnx_model", "export_metrics"],
                name="export_onnx_model",
                tags=["export"],
            ),
            Node(
                build_play_page,
                inputs=["onnx_model", "params:export"],
                outputs="play_page",
                name="build_play_page",
                tags=["export"],
            ),
            # Last: the registry gets a version only once the export's files are complete.
            Node(
                register_model,
                inputs=["onnx_model", "play_page"],
                outputs="onnx_model_mlflow",
                name="register_model",
                tags=["export"],
            ),
        ]
    )
