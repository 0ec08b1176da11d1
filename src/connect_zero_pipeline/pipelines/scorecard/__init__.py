"""``scorecard`` pipeline: the latest REINFORCE and AlphaZero models side by side."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
