"""``reinforce`` pipeline: the REINFORCE baseline, trained in chunks."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
