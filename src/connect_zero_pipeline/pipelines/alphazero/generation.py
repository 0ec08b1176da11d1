"""The generation template: one generation of the loop (``self_play`` -> ``train``, then
the scorecard ``evaluate`` beside the next generation; with gating ``gate`` on the loop's
path) as a pipeline namespaced ``gen_{k:03d}``, and generation 0 (the initial model,
its games, the public sets labelled once). :mod:`.pipeline` unrolls it; the ``selfplay``,
``train`` and ``evaluate`` pipelines are its slices by tag. The stages' nodes are this
package's :mod:`.selfplay`, :mod:`.train` and :mod:`.evaluate`.
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline

from ...common.naming import generation_name
from ..structure import bind
from .evaluate import (
    evaluate_generation,
    gate_generation,
    label_public_sets,
    score_gated_generation,
)
from .selfplay import generate_games, init_model, start_games
from .train import train_generation


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
            bind(score_gated_generation if gating else evaluate_generation, generation=k),
            inputs=[*scored, "pons_positions", "public_sets_labelled", "params:evaluate"],
            outputs="eval_metrics",
            name="evaluate",
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
        inputs=["pons_benchmarks", "params:pons"],
        outputs="public_sets_labelled",
        name="label_public_sets",
        tags=["evaluate", "init"],
    )
    init = Pipeline(template, namespace=generation_name(0),
                    parameters={"params:model"},
                    inputs={"start_point", "model_files", "games_files"})  # fmt: skip
    return init + Pipeline([labels])
