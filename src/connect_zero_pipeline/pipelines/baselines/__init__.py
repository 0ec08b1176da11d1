"""``baselines``: a match between two baseline players, results to Parquet and MLflow."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
