"""Evaluation nodes: label the public position sets once, then measure every generation.

The logic is :mod:`~...core.evaluation`'s (:func:`~...core.evaluation.previous_match`,
:func:`~...core.evaluation.evaluate_candidate`); the nodes turn parameters into configs and
catalog entries into its arguments. With gating off a generation's scorecard
(:func:`evaluate_generation`) is a leaf of the DAG: the next generation does not wait for it.
With gating on, :func:`gate_generation` plays the match against the previous generation and
picks the generation's model (the only evaluation on the loop's path), and
:func:`score_gated_generation` makes the scorecard with that match's figures.
"""

from __future__ import annotations

import logging
import time

import pandas as pd
from torch import nn

from ...core.device import resolve_device, tensor_cores
from ...core.evaluation import evaluate_candidate, previous_match
from ...core.inference import make_evaluate_fn
from ...core.pons_files import label_positions
from ...params.schema import parse_section
from ..pons.nodes import pons_labeller

log = logging.getLogger(__name__)

EVALUATE_SECONDS = "evaluate.seconds"
"""The evaluation's wall time, among its metrics (which carry no stage prefix)."""

SET_COLUMN = "set"
"""The column of ``public_sets_labelled`` that names each row's set."""


def label_public_sets(files: dict[str, pd.DataFrame], pons: dict) -> pd.DataFrame:
    """Every move of every position of the public sets (catalog entry ``pons_benchmarks``),
    labelled exactly by the solver of the ``pons`` section (through its cache: a later run
    solves nothing again); one table, the set's name in column ``set``."""
    cfg = parse_section("pons", pons)
    tables = []
    with pons_labeller(cfg, max_nodes=0) as labeller:
        for name, positions in files.items():
            labelled, _ = label_positions(positions, labeller, desc=f"labelling {name}")
            tables.append(labelled.assign(**{SET_COLUMN: name}))
    if not tables:
        return pd.DataFrame({SET_COLUMN: pd.Series(dtype=str)})
    return pd.concat(tables, ignore_index=True)


def _agents(params: dict) -> tuple:
    """The ``evaluate`` config, the device, and a maker of a network's search evaluator."""
    cfg = parse_section("evaluate", params)
    device = resolve_device(cfg.node.device)
    threads = cfg.node.num_threads or 0  # 0: onnxruntime's default, one thread per core

    def evaluator(model: nn.Module):
        return make_evaluate_fn(model, device, cfg.node.backend, threads)

    return cfg, device, evaluator


def gate_generation(
    candidate: nn.Module, previous: nn.Module, params: dict, generation: int
) -> tuple[nn.Module, dict]:
    """With gating on: the match of ``candidate`` against ``previous``; returns the
    generation's model (the candidate if it scores ``gate_threshold``, else the previous
    model) and the match's figures (``previous.*``, ``gate.*``) for the scorecard."""
    cfg, device, evaluator = _agents(params)
    with tensor_cores(device):
        match = previous_match(evaluator(candidate), evaluator(previous), cfg,
                               generation=generation, device=device)  # fmt: skip
    accepted = bool(match["gate.accepted"])
    log.info("Generation %d: vs previous %.3f -> %s", generation, match["gate.score"],
             "accepted" if accepted else "rejected, keeping the previous model")  # fmt: skip
    chosen = (candidate if accepted else previous).cpu()
    chosen.meta = {**getattr(chosen, "meta", {}), "generation_accepted_at": generation}
    return chosen, match


def evaluate_generation(
    candidate: nn.Module,
    previous: nn.Module,
    positions: pd.DataFrame,
    public_sets: pd.DataFrame,
    params: dict,
    generation: int,
) -> dict:
    """The scorecard of generation ``generation``'s model (gating off: the candidate is the
    model), the match against ``previous`` included.

    Metric names are shared with the REINFORCE pipeline so MLflow charts align:
    ``solver.*`` (network alone), ``punisher.policy.*`` and ``punisher.mcts.*``
    (win/draw/loss against RandomPunisher), ``previous.*`` (MCTS agents, new vs
    previous), ``gate.*`` and ``bench.<set>.<agent>.*`` for each public set.
    """
    return _scorecard(candidate, positions, public_sets, params, generation, previous=previous)


def score_gated_generation(
    candidate: nn.Module,
    match: dict,
    positions: pd.DataFrame,
    public_sets: pd.DataFrame,
    params: dict,
    generation: int,
) -> dict:
    """The scorecard of generation ``generation``'s candidate (gating on), with the gate's
    ``match`` (:func:`gate_generation`) as its ``previous.*`` and ``gate.*`` figures."""
    return _scorecard(candidate, positions, public_sets, params, generation, match=match)


def _scorecard(candidate, positions, public_sets, params, generation, *, previous=None,
               match=None) -> dict:  # fmt: skip
    cfg, device, evaluator = _agents(params)
    sets = {
        str(name): table.drop(columns=SET_COLUMN).reset_index(drop=True)
        for name, table in public_sets.groupby(SET_COLUMN, sort=False)
    }
    start = time.perf_counter()
    with tensor_cores(device):
        metrics = evaluate_candidate(
            candidate, evaluator(candidate), positions, sets, cfg, generation=generation,
            device=device, match=match, old_fn=None if previous is None else evaluator(previous),
        )  # fmt: skip
    metrics[EVALUATE_SECONDS] = time.perf_counter() - start
    log.info(
        "Generation %d: solver acc %.3f, ce %.3f | vs RandomPunisher: policy %.3f, mcts %.3f | "
        "vs previous %.3f",
        generation,
        metrics["solver.acc"],
        metrics["solver.ce"],
        metrics["punisher.policy.win_rate"],
        metrics["punisher.mcts.win_rate"],
        metrics["gate.score"],
    )
    return metrics
