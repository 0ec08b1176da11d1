"""``alphazero``: init_model, N generations of self_play -> train -> evaluate, then export.

The loop is unrolled at registry time (``docs/architecture.md``, "The generation loop"). Generation ``k`` lives in
the namespace ``gen_{k:03d}``:

- ``gen_k.self_play``: ``gen_{k-1}.model`` -> ``gen_k.games``, ``gen_k.selfplay_metrics``
- ``gen_k.train``: ``gen_{k-1}.model`` + ``gen_{k-B+1..k}.games`` -> ``gen_k.candidate``, ``gen_k.train_metrics``
  (``gen_000.games``, a start run's replay window or nothing, in the first ``B - 1`` windows)
- ``gen_k.evaluate``: ``gen_k.candidate``, ``gen_{k-1}.model``, ``pons_positions``,
  ``public_sets_labelled`` -> ``gen_k.model`` (the candidate, or the previous model when gating rejects it),
  ``gen_k.eval_metrics``

Dataset factories in ``catalog.yml`` make each of these a versioned entry. Before the
first generation, ``label_public_sets`` labels the public position sets (catalog entry
``pons_benchmarks``) once for the whole run.
After the last generation: ``plot_learning_curves``, ``publish_model`` (the
final model becomes ``latest_model``) and the ``export`` pipeline (ONNX,
parity gate, play page).
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from ...naming import generation_name
from ..evaluate.nodes import evaluate_generation, label_public_sets
from ..export.pipeline import create_pipeline as create_export
from ..selfplay.nodes import generate_games, init_model, start_games
from ..structure import bind
from ..train.nodes import train_generation
from .report import plot_learning_curves
from .structure import structure


def generation_pipeline(k: int, num_generations: int, buffer_gens: int) -> Pipeline:
    """Generation ``k``: a template pipeline namespaced as ``gen_{k:03d}``.

    Outputs (``games``, ``candidate``, ``model``, ``*_metrics``) get the
    namespace prefix from Kedro; the previous model, the earlier generations
    of the replay window and the solver set are mapped in.
    """
    gen, prev = generation_name(k), generation_name(k - 1)
    earlier = range(max(0, k - buffer_gens + 1), k)  # window generations before this one
    window = [f"window_{j}" for j in earlier] + ["games"]
    template = Pipeline(
        [
            Node(
                bind(generate_games, generation=k),
                inputs=["previous_model", "params:selfplay"],
                outputs=["games", "selfplay_metrics"],
                name="self_play",
                tags=["selfplay"],
            ),
            Node(
                bind(train_generation, generation=k, num_generations=num_generations),
                inputs=["previous_model", "params:train", *window],
                outputs=["candidate", "train_metrics"],
                name="train",
                tags=["train"],
            ),
            Node(
                bind(evaluate_generation, generation=k),
                inputs=[
                    "candidate",
                    "previous_model",
                    "pons_positions",
                    "public_sets_labelled",
                    "params:evaluate",
                ],
                outputs=["model", "eval_metrics"],
                name="evaluate",
                tags=["evaluate"],
            ),
        ]
    )
    return Pipeline(
        template,
        namespace=gen,
        inputs={
            "previous_model": f"{prev}.model",
            "pons_positions": "pons_positions",
            "public_sets_labelled": "public_sets_labelled",
            **{f"window_{j}": f"{generation_name(j)}.games" for j in earlier},
        },
        parameters={"params:selfplay", "params:train", "params:evaluate"},
    )


def init_pipeline() -> Pipeline:
    """``gen_000.init_model``: the initial network, ``gen_000.model``; ``gen_000.start_games``:
    generation 0's games (a start run's replay window, or none); and the public sets
    labelled once for every generation's evaluation."""
    template = Pipeline(
        [
            Node(
                init_model,
                inputs=["params:model", "start_point", "model_files"],
                outputs="model",
                name="init_model",
                tags=["selfplay", "init"],
            ),
            Node(
                start_games,
                inputs=["start_point", "games_files"],
                outputs="games",
                name="start_games",
                tags=["selfplay", "init"],
            ),
        ]
    )
    labels = Node(
        label_public_sets,
        inputs=["pons_benchmarks", "params:pons"],
        outputs="public_sets_labelled",
        name="label_public_sets",
        tags=["evaluate", "init"],
    )
    init = Pipeline(template, namespace=generation_name(0),
                    parameters={"params:model"},
                    inputs={"start_point", "model_files", "games_files"})  # fmt: skip
    return init + Pipeline([labels])


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
    num_generations, buffer_gens = structure()
    pipe = init_pipeline()
    for k in range(1, num_generations + 1):
        pipe += generation_pipeline(k, num_generations, buffer_gens)
    pipe += report_pipeline(num_generations) + publish_pipeline(num_generations)
    return pipe + create_export()
