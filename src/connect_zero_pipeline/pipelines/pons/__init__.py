"""``pons`` pipeline: the solver-labelled evaluation set."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
