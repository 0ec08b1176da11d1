"""The pure library: Connect-4 rules, players, search, training and evaluation.

Nothing in ``core`` imports Kedro; the pipelines are thin adapters around it. Each module
is imported by its own name (``from connect_zero_pipeline.core.solver import Solver``), so a
light one (``core.files``, ``core.config``) imports no torch.
"""
