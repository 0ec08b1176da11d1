"""``alphazero``: init_model, N generations of self_play -> train (-> gate), their scorecards,
then export.

The loop is unrolled when the registry builds the pipelines (``docs/architecture.md``, "The
generation loop"), from its shape (:func:`structure`: ``alphazero.num_generations``
generations, each training on the last ``train.buffer_gens`` generations of games (as
``train.schedule`` has it at that generation), with a
``gate`` node on the loop's path when ``evaluate.gating`` is on; read in
:func:`..structure.reading` of the run's parameters). Generation ``k`` lives in the
namespace ``gen_{k:03d}`` (:func:`generation_pipeline`, the template):

- ``gen_k.self_play``: ``gen_{k-1}.model`` -> ``gen_k.games``, ``gen_k.selfplay_metrics``
- ``gen_k.train``: ``gen_{k-1}.model`` + ``gen_{k-B+1..k}.games`` -> ``gen_k.model``
  (with ``evaluate.gating``: ``gen_k.candidate``), ``gen_k.train_metrics``
  (``gen_000.games``, a start run's replay window or nothing, in the first ``B - 1`` windows)
- with gating, ``gen_k.gate``: ``gen_k.candidate``, ``gen_{k-1}.model`` -> ``gen_k.model`` (the
  candidate, or the previous model when the match rejects it), ``gen_k.gate_match``
- ``gen_k.evaluate`` (the scorecard, a leaf: no later generation waits for it):
  ``gen_k.model`` and ``gen_{k-1}.model`` (with gating: ``gen_k.candidate`` and
  ``gen_k.gate_match``), ``pons_positions``, ``public_sets_labelled`` -> ``gen_k.eval_metrics``;
  in full every ``evaluate.full_every`` generations and at the last, the solver set alone
  between them

Dataset factories in ``catalog.yml`` make each of these a versioned entry. Generation 0
(:func:`init_pipeline`): the initial model, its games, and ``label_public_sets``, which
labels the public position sets (catalog entry ``pons_benchmarks``) once for the whole run.
After the last generation: ``plot_learning_curves``, ``publish_model`` (the final model
becomes ``latest_model``) and the ``export`` pipeline (ONNX, parity gate, play page). The
``selfplay``, ``train`` and ``evaluate`` pipelines are this DAG's slices by tag; the nodes
are :mod:`.nodes`'.
"""

from __future__ import annotations

from collections.abc import Callable

from kedro.pipeline import Node, Pipeline

from ...common.naming import SCORECARD_NODE, generation_name
from ..export.pipeline import create_pipeline as create_export
from ..structure import bind, section
from .nodes import (
    evaluate_generation,
    gate_generation,
    generate_games,
    init_model,
    label_public_sets,
    plot_learning_curves,
    publish_model,
    score_gated_generation,
    start_games,
    train_generation,
)


def structure() -> tuple[int, Callable[[int], int], bool]:
    """``(num_generations, window, gating)`` of the run being built, validated: ``window(k)``
    is generation ``k``'s ``train.buffer_gens`` (the section's schedule applied)."""
    train = section("train")
    return (section("alphazero").num_generations, lambda k: train.at(k).buffer_gens,
            section("evaluate").gating)  # fmt: skip


def generation_pipeline(k: int, num_generations: int, buffer_gens: int, gating: bool) -> Pipeline:
    """Generation ``k``: a template pipeline namespaced as ``gen_{k:03d}``.

    Outputs (``games``, ``model``, ``*_metrics``; with gating ``candidate`` and
    ``gate_match``) get the namespace prefix from Kedro; the previous model, the earlier
    generations of the replay window and the solver set are mapped in.

    Only what the next generation needs is on the loop's path. Without gating, ``train``
    writes the generation's ``model`` and ``evaluate`` (its scorecard) is a leaf that no
    later generation waits for. With gating, ``train`` writes the ``candidate``, ``gate``
    plays it against the previous model and writes the ``model``, and ``evaluate`` is the
    leaf that makes the scorecard with the gate's match.
    """
    gen, prev = generation_name(k), generation_name(k - 1)
    earlier = range(max(0, k - buffer_gens + 1), k)  # window generations before this one
    window = [f"window_{j}" for j in earlier] + ["games"]
    trained = "candidate" if gating else "model"
    scored = ["candidate", "gate_match"] if gating else ["model", "previous_model"]
    nodes = [
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
            outputs=[trained, "train_metrics"],
            name="train",
            tags=["train"],
        ),
        Node(
            bind(
                score_gated_generation if gating else evaluate_generation,
                generation=k,
                num_generations=num_generations,
            ),
            inputs=[*scored, "pons_positions", "public_sets_labelled", "params:evaluate"],
            outputs="eval_metrics",
            name=SCORECARD_NODE,
            tags=["evaluate"],
        ),
    ]
    if gating:
        nodes.append(
            Node(
                bind(gate_generation, generation=k),
                inputs=["candidate", "previous_model", "params:evaluate"],
                outputs=["model", "gate_match"],
                name="gate",
                tags=["evaluate"],
            )
        )
    return Pipeline(
        Pipeline(nodes),
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
        inputs=["pons_benchmarks", "params:pons", "solver_cache"],
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
    num_generations, window, gating = structure()
    pipe = init_pipeline()
    for k in range(1, num_generations + 1):
        pipe += generation_pipeline(k, num_generations, window(k), gating)
    pipe += report_pipeline(num_generations) + publish_pipeline(num_generations)
    return pipe + create_export()
