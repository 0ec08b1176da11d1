"""``alphazero``: init_model, N generations of self_play -> train (-> gate), their scorecards,
then export.

The loop is unrolled at registry time (``docs/architecture.md``, "The generation loop"). Generation ``k`` lives in
the namespace ``gen_{k:03d}``:

- ``gen_k.self_play``: ``gen_{k-1}.model`` -> ``gen_k.games``, ``gen_k.selfplay_metrics``
- ``gen_k.train``: ``gen_{k-1}.model`` + ``gen_{k-B+1..k}.games`` -> ``gen_k.model``
  (with ``evaluate.gating``: ``gen_k.candidate``), ``gen_k.train_metrics``
  (``gen_000.games``, a start run's replay window or nothing, in the first ``B - 1`` windows)
- with gating, ``gen_k.gate``: ``gen_k.candidate``, ``gen_{k-1}.model`` -> ``gen_k.model`` (the
  candidate, or the previous model when the match rejects it), ``gen_k.gate_match``
- ``gen_k.evaluate`` (the scorecard, a leaf: no later generation waits for it):
  ``gen_k.model`` and ``gen_{k-1}.model`` (with gating: ``gen_k.candidate`` and
  ``gen_k.gate_match``), ``pons_positions``, ``public_sets_labelled`` -> ``gen_k.eval_metrics``

Dataset factories in ``catalog.yml`` make each of these a versioned entry. Before the
first generation, ``label_public_sets`` labels the public position sets (catalog entry
``pons_benchmarks``) once for the whole run.
After the last generation: ``plot_learning_curves``, ``publish_model`` (the
final model becomes ``latest_model``) and the ``export`` pipeline (ONNX,
parity gate, play page).
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from ...common.naming import generation_name
from ..export.pipeline import create_pipeline as create_export
from .generation import generation_pipeline, init_pipeline
from .report import plot_learning_curves
from .structure import structure


def report_pipeline(num_generations: int) -> Pipeline:
    metrics = [f"{generation_name(k)}.eval_metrics" for k in range(1, num_generations + 1)]
    return Pipeline(
        [
            Node(
                plot_learning_curves,
                inputs=metrics,
                outputs="learning_curves",
                name="plot_learning_curves",
                tags=["report"],
            )
        ]
    )


def publish_model(model):
    """The run's final model becomes ``latest_model`` (what ``play`` and ``export`` use)."""
    return model


def publish_pipeline(num_generations: int) -> Pipeline:
    return Pipeline(
        [
            Node(
                publish_model,
                inputs=f"{generation_name(num_generations)}.model",
                outputs="latest_model",
                name="publish_model",
                tags=["report"],
            )
        ]
    )


def create_pipeline(**kwargs) -> Pipeline:
    num_generations, buffer_gens, gating = structure()
    pipe = init_pipeline()
    for k in range(1, num_generations + 1):
        pipe += generation_pipeline(k, num_generations, buffer_gens, gating)
    pipe += report_pipeline(num_generations) + publish_pipeline(num_generations)
    return pipe + create_export()
