"""Connect-Zero Pipeline: Connect-4 agents trained by self-play, measured against a perfect solver."""

__version__ = "0.1.0"
