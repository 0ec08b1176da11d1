"""``ladder`` pipeline: Elo ratings of generations, runs, registered versions and anchors."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
