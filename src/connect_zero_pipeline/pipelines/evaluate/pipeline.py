"""``evaluate``: the evaluate stage of every generation, a slice of the ``alphazero`` DAG.

Rerun one generation's stage with
``kedro run --pipelines=evaluate --namespaces=gen_003``; it reads and writes the
same versioned datasets as ``alphazero``.
"""

from kedro.pipeline import Pipeline

from ..alphazero.pipeline import create_pipeline as create_alphazero


def create_pipeline(**kwargs) -> Pipeline:
    return create_alphazero().only_nodes_with_tags("evaluate")
