"""Evaluation nodes: label the public position sets once, then measure every generation.

The logic is :func:`~...core.evaluation.evaluate_candidate`'s; the nodes turn parameters
into configs and catalog entries into its arguments.
"""

from __future__ import annotations

import logging
import time

import pandas as pd
from torch import nn

from ...core.config import resolve_device, tensor_cores
from ...core.evaluation import evaluate_candidate
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


def evaluate_generation(
    candidate: nn.Module,
    previous: nn.Module,
    positions: pd.DataFrame,
    public_sets: pd.DataFrame,
    params: dict,
    generation: int,
) -> tuple[nn.Module, dict]:
    """Measure ``candidate``; return the generation's model (gated) and its metrics.

    Metric names are shared with the REINFORCE pipeline so MLflow charts align:
    ``solver.*`` (network alone), ``punisher.policy.*`` and ``punisher.mcts.*``
    (win/draw/loss against RandomPunisher), ``previous.*`` (MCTS agents, new vs
    previous), ``gate.*`` and ``bench.<set>.<agent>.*`` for each public set.
    """
    cfg = parse_section("evaluate", params)
    device = resolve_device(cfg.node.device)
    threads = cfg.node.num_threads or 0  # 0: onnxruntime's default, one thread per core
    new_fn = make_evaluate_fn(candidate, device, cfg.node.backend, threads)
    old_fn = make_evaluate_fn(previous, device, cfg.node.backend, threads)
    sets = {
        str(name): table.drop(columns=SET_COLUMN).reset_index(drop=True)
        for name, table in public_sets.groupby(SET_COLUMN, sort=False)
    }
    start = time.perf_counter()
    with tensor_cores(device):
        accepted, metrics = evaluate_candidate(
            candidate, new_fn, old_fn, positions, sets, cfg, generation=generation, device=device
        )
    metrics[EVALUATE_SECONDS] = time.perf_counter() - start
    log.info(
        "Generation %d: solver acc %.3f, ce %.3f | vs RandomPunisher: policy %.3f, mcts %.3f | "
        "vs previous %.3f%s",
        generation,
        metrics["solver.acc"],
        metrics["solver.ce"],
        metrics["punisher.policy.win_rate"],
        metrics["punisher.mcts.win_rate"],
        metrics["gate.score"],
        "" if accepted else " -> rejected, keeping the previous model",
    )
    chosen = (candidate if accepted else previous).cpu()
    chosen.meta = {**getattr(chosen, "meta", {}), "generation_accepted_at": generation}
    return chosen, metrics
