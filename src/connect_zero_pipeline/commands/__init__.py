"""Command-line tools behind ``python -m connect_zero_pipeline <command>``."""
