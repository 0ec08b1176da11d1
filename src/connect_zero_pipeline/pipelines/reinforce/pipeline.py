"""``reinforce``: init the policy, then N chunks of train -> evaluate, then the learning curves.

The chunk loop is unrolled at registry time like the AlphaZero generations
(``docs/architecture.md``). Chunk ``k`` lives in the namespace ``rf_{k:03d}``:

- ``rf_000.init_model``: ``params:reinforce.model`` -> ``rf_000.model``, ``rf_000.trainer_state``
- ``rf_k.train``: ``rf_{k-1}.model`` + ``rf_{k-1}.trainer_state`` (Adam moments,
  frozen opponent, swap window) -> ``rf_k.model``, ``rf_k.trainer_state``, ``rf_k.train_metrics``
- ``rf_k.evaluate``: ``rf_k.model``, ``pons_positions`` -> ``rf_k.eval_metrics``
- ``plot_reinforce_curves``: every chunk's metrics -> ``reinforce_learning_curves``

The number of chunks, ``reinforce.num_chunks``, is structural: it is read from
the run's configuration (base, env and ``--params``) when the DAG is built.
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from ...common.naming import SCORECARD_NODE, chunk_name
from ..structure import bind, section
from .nodes import (
    evaluate_reinforce_chunk,
    init_reinforce_model,
    plot_reinforce_curves,
    train_reinforce_chunk,
)


def num_chunks() -> int:
    """``reinforce.num_chunks`` of the run being built, validated."""
    return section("reinforce").num_chunks


def init_pipeline() -> Pipeline:
    template = Pipeline(
        [
            Node(
                init_reinforce_model,
                inputs="params:reinforce.model",
                outputs=["model", "trainer_state"],
                name="init_model",
                tags=["reinforce", "init"],
            )
        ]
    )
    return Pipeline(template, namespace=chunk_name(0), parameters={"params:reinforce.model"})


def chunk_pipeline(k: int, total: int) -> Pipeline:
    """Chunk ``k`` of ``total``: a template namespaced as ``rf_{k:03d}``."""
    template = Pipeline(
        [
            Node(
                bind(train_reinforce_chunk, chunk=k, num_chunks=total),
                inputs=["previous_model", "previous_state", "params:reinforce.train"],
                outputs=["model", "trainer_state", "train_metrics"],
                name="train",
                tags=["reinforce", "reinforce_train"],
            ),
            Node(
                bind(evaluate_reinforce_chunk, chunk=k),
                inputs=["model", "pons_positions", "params:reinforce.evaluate"],
                outputs="eval_metrics",
                name=SCORECARD_NODE,
                tags=["reinforce", "reinforce_evaluate"],
            ),
        ]
    )
    prev = chunk_name(k - 1)
    return Pipeline(
        template,
        namespace=chunk_name(k),
        inputs={
            "previous_model": f"{prev}.model",
            "previous_state": f"{prev}.trainer_state",
            "pons_positions": "pons_positions",
        },
        parameters={"params:reinforce.train", "params:reinforce.evaluate"},
    )


def report_pipeline(total: int) -> Pipeline:
    chunks = [chunk_name(k) for k in range(1, total + 1)]
    return Pipeline(
        [
            Node(
                bind(plot_reinforce_curves, num_chunks=total),
                inputs=[f"{c}.eval_metrics" for c in chunks]
                + [f"{c}.train_metrics" for c in chunks],
                outputs="reinforce_learning_curves",
                name="plot_reinforce_curves",
                tags=["reinforce", "report"],
            )
        ]
    )


def create_pipeline(**kwargs) -> Pipeline:
    total = num_chunks()
    pipe = init_pipeline()
    for k in range(1, total + 1):
        pipe += chunk_pipeline(k, total)
    return pipe + report_pipeline(total)
