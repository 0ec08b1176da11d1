"""The served model as MLflow's "model from code" (:func:`.served.served_model`): MLflow
copies this file beside the model and runs it to load the model; nothing is pickled."""

from mlflow.models import set_model

from connect_zero_pipeline.tracking.served import BoardModel

set_model(BoardModel())
