"""``alphazero`` pipeline: the whole self-play loop, N generations."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
