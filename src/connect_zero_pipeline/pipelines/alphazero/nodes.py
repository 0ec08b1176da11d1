"""The ``alphazero`` pipeline's nodes: parameters -> configs -> core calls.

- **Self-play:** :func:`init_model` (the first model, from ``model.seed``),
  :func:`start_games` (generation 0's games: a start run's replay window, or none) and
  :func:`generate_games` (a generation's games from the previous model).
- **Training:** :func:`train_generation`: a model and a replay window of games -> a new
  model and metrics.
- **Evaluation:** :func:`label_public_sets` labels the public position sets once, then every
  generation is measured. The logic is :mod:`~...core.evaluation`'s
  (:func:`~...core.evaluation.previous_match`, :func:`~...core.evaluation.evaluate_candidate`).
  With gating off a generation's scorecard (:func:`evaluate_generation`) is a leaf of the
  DAG: the next generation does not wait for it. With gating on, :func:`gate_generation`
  plays the match against the previous generation and picks the generation's model (the
  only evaluation on the loop's path), and :func:`score_gated_generation` makes the
  scorecard with that match's figures.
- **Report:** :func:`plot_learning_curves` (from the generations' evaluation metrics) and
  :func:`publish_model` (the final model becomes ``latest_model``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ...common.naming import generation_name
from ...core.config import mix_seed
from ...core.config.evaluation import full_scorecard
from ...core.device import compute_dtype, resolve_device
from ...core.evaluation import evaluate_candidate, previous_match
from ...core.inference import make_evaluate_fn
from ...core.models import build_model, count_parameters
from ...core.pons_files import label_positions
from ...core.search import compile_backend
from ...core.selfplay import COLUMNS, empty_games_table
from ...core.training import games_to_tensors, train_model, train_steps
from ...executors.dispatch import play_generation
from ...params.schema import parse_section
from ..plots import pyplot
from ..pons.nodes import pons_labeller

log = logging.getLogger(__name__)


def init_model(
    params: dict, start_point: dict, model_files: Mapping[str, Callable[[], Any]]
) -> nn.Module:
    """Generation 0 (section ``model``, :class:`ModelSpec`): a freshly initialised network,
    or the trained one the run starts from: ``start_point["model"]``, a partition of
    ``model_files`` (the models folder). The session resolves ``model.start_from`` into
    ``start_point`` once, at the run's start (:mod:`...run.start`)."""
    if start_point:
        model = model_files[start_point["model"]]()
        model.meta = {"generation": 0, "started_from": start_point["described"]}
        log.info("Generation 0: %s, %d parameters", start_point["described"],
                 count_parameters(model))  # fmt: skip
        return model
    spec = parse_section("model", params)
    # The layers draw their initial weights from torch's default generator: seeded inside a
    # fork of it, so the process's own stream (other nodes, other threads) is left as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = build_model(spec.config())
    model.meta = {"generation": 0}
    log.info("Initialised %s with %d parameters", model.config, count_parameters(model))
    return model


def start_games(start_point: dict, games_files: Mapping[str, Callable[[], Any]]) -> pd.DataFrame:
    """Generation 0's games: with ``model.start_window``, the replay window of the run the
    model starts from (``start_point["games"]``: the ``[generation, partition]`` of its last
    ``train.buffer_gens - 1`` generations up to the start, in ``games_files``, the self-play
    folder), their ``generation`` renumbered so that the start's is 0 (then -1, -2, ...);
    else an empty table."""
    chosen = (start_point or {}).get("games") or []
    if not chosen:
        return empty_games_table()
    last = chosen[-1][0]
    tables = [games_files[pid]().assign(generation=k - last) for k, pid in chosen]
    games = pd.concat(tables, ignore_index=True).astype({"generation": COLUMNS["generation"]})
    log.info("Generation 0's games: generations %d-%d of %s, %d positions",
             chosen[0][0], last, start_point["described"], len(games))  # fmt: skip
    return games


def generate_games(model: nn.Module, params: dict, generation: int) -> tuple[pd.DataFrame, dict]:
    """One generation of batched MCTS self-play, on the configured executor.

    The section's ``node`` keys (device, workers, executor, ...:
    :class:`~...executors.settings.NodeSettings`) never change the table.

    Returns:
        The games table (``docs/architecture.md``) and ``selfplay`` metrics.
    """
    cfg = parse_section("selfplay", params).at(generation)  # the section's schedule applied
    dtype, precision = compute_dtype(cfg.precision, resolve_device(cfg.node.device))
    decided_here = cfg.node.executor != "ray" or cfg.precision != "auto"
    if not decided_here:
        precision = "auto: each Ray actor's own CPU or GPU decides"
    log.info("Generation %d self-play, the network in %s", generation, precision)
    start = time.perf_counter()
    played = play_generation(cfg, model, generation, cfg.node)
    games, seconds = played.table, time.perf_counter() - start
    num_games = int(games["game"].nunique())
    metrics = {
        "positions": float(len(games)),
        "games": float(num_games),
        "mean_game_length": float(len(games) / max(num_games, 1)),
        "first_player_score": float(_first_player_score(games)),
        "seconds": seconds,
        "positions_per_s": len(games) / seconds if seconds else 0.0,
    }
    if decided_here:  # else unknown here: the summary then says no precision for self-play
        metrics["bfloat16"] = float(dtype == torch.bfloat16)
    if compile_backend(cfg.node.compile) is not None:  # compiled: its share of the seconds
        metrics["compile_s"] = played.compile_s
    log.info(
        "Generation %d self-play: %s", generation, {k: round(v, 3) for k, v in metrics.items()}
    )
    return games, metrics


def _first_player_score(games: pd.DataFrame) -> float:
    """Mean outcome for the first player (+1 win, 0 draw, -1 loss) over finished games
    (the sign of ``z``: a win's ``z`` is below 1 when ``win_decay`` > 0)."""
    if games.empty:
        return 0.0
    first = games[games["ply"] == 0]
    return float(np.sign(first["z"]).mean())


def train_generation(
    model: nn.Module, params: dict, *games: pd.DataFrame, generation: int, num_generations: int
) -> tuple[nn.Module, dict]:
    """Train generation ``generation`` of ``num_generations`` on the replay window ``games``.

    The window (the last ``buffer_gens`` generations, ``games[-1]`` being this
    generation's, ``buffer_gens`` as the section's schedule has it at this generation) is
    wired into the DAG; in the first ``buffer_gens - 1`` generations it
    begins with generation 0's games (a start run's window, numbered 0, -1, ...: the rows
    of the generations it still reaches are kept); the step count follows the newest
    generation's size (``samples_per_position``); the cosine learning-rate
    schedule spans the whole run.
    """
    cfg = parse_section("train", params).at(generation)  # the section's schedule applied
    first = generation - len(games) + 1  # the window is gen_{first} .. gen_{generation}
    if first == 0:  # generation 0's games: a start run's window (generations <= 0), or none
        oldest = generation - cfg.buffer_gens + 1
        games = (games[0][games[0]["generation"] >= oldest], *games[1:])
    boards, pi, z = games_to_tensors(
        games,
        mirror=cfg.mirror,
        root_value_weight=cfg.root_value_weight,
        names=[f"{generation_name(first + i)}.games" for i in range(len(games))],
        merge_duplicates=cfg.merge_duplicates,
    )
    if boards.shape[0] == 0:
        raise ValueError(
            f"generation {generation}: the replay window has no positions (no self-play game "
            "finished); set selfplay.finish_games=true, or raise selfplay.moves_per_gen"
        )
    new_rows = len(games[-1]) * (2 if cfg.mirror else 1)  # the newest generation's samples
    progress = ((generation - 1) / num_generations, generation / num_generations)
    window_rows = sum(len(g) for g in games) * (2 if cfg.mirror else 1)
    device = resolve_device(cfg.node.device)
    dtype, precision = compute_dtype(cfg.precision, device)
    log.info(
        "Generation %d training on %d samples from %d generation(s)%s, in %s",
        generation,
        boards.shape[0],
        len(games),
        f" ({window_rows} before merging duplicates)" if cfg.merge_duplicates else "",
        precision,
    )
    trained, metrics = train_model(
        model,
        boards,
        pi,
        z,
        cfg,
        num_steps=train_steps(cfg, new_rows),
        progress=progress,
        device=device,
        seed=mix_seed(cfg.seed, generation),
        progress_bar=True,
        num_threads=cfg.node.num_threads,
        dtype=dtype,
    )
    trained.meta = {"generation": generation}
    start = games[0]["generation"].nunique() if first == 0 else 1  # generation 0's: 0 or more
    metrics["window_generations"] = float(len(games) - 1 + start)
    metrics["distinct_fraction"] = boards.shape[0] / window_rows if cfg.merge_duplicates else 1.0
    log.info("Generation %d training: %s", generation, {k: round(v, 4) for k, v in metrics.items()})
    return trained.cpu(), metrics


EVALUATE_SECONDS = "evaluate.seconds"
"""The evaluation's wall time, among its metrics (which carry no stage prefix)."""

SET_COLUMN = "set"
"""The column of ``public_sets_labelled`` that names each row's set."""


def label_public_sets(files: dict[str, pd.DataFrame], pons: dict,
                      solver_cache: str | None = None) -> pd.DataFrame:  # fmt: skip
    """Every move of every position of the public sets (catalog entry ``pons_benchmarks``),
    labelled exactly by the solver of the ``pons`` section (through its cache,
    ``solver_cache``: a later run solves nothing again); one table, the set's name in
    column ``set``."""
    cfg = parse_section("pons", pons)
    tables = []
    with pons_labeller(cfg, solver_cache, max_nodes=0) as labeller:
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
    num_generations: int,
) -> dict:
    """The scorecard of generation ``generation``'s model (gating off: the candidate is the
    model), the match against ``previous`` included; every ``evaluate.full_every``-th
    generation and the last in full, the others the solver set alone
    (:func:`~...core.config.evaluation.full_scorecard`).

    Metric names are shared with the REINFORCE pipeline so MLflow charts align:
    ``solver.*`` (network alone), ``punisher.policy.*`` and ``punisher.mcts.*``
    (win/draw/loss against RandomPunisher), ``previous.*`` (MCTS agents, new vs
    previous), ``gate.*`` and ``bench.<set>.<agent>.*`` for each public set.
    """
    return _scorecard(candidate, positions, public_sets, params, generation, num_generations,
                      previous=previous)  # fmt: skip


def score_gated_generation(
    candidate: nn.Module,
    match: dict,
    positions: pd.DataFrame,
    public_sets: pd.DataFrame,
    params: dict,
    generation: int,
    num_generations: int,
) -> dict:
    """The scorecard of generation ``generation``'s candidate (gating on), with the gate's
    ``match`` (:func:`gate_generation`) as its ``previous.*`` and ``gate.*`` figures (in full
    as :func:`evaluate_generation`'s)."""
    return _scorecard(candidate, positions, public_sets, params, generation, num_generations,
                      match=match)  # fmt: skip


def _scorecard(candidate, positions, public_sets, params, generation, num_generations, *,
               previous=None, match=None) -> dict:  # fmt: skip
    cfg, device, evaluator = _agents(params)
    full = full_scorecard(cfg, generation, num_generations)
    sets = {
        str(name): table.drop(columns=SET_COLUMN).reset_index(drop=True)
        for name, table in public_sets.groupby(SET_COLUMN, sort=False)
    }
    start = time.perf_counter()
    metrics = evaluate_candidate(
        candidate, evaluator(candidate) if full else None, positions, sets, cfg,
        generation=generation, device=device, match=match, full=full,
        old_fn=evaluator(previous) if full and previous is not None else None,
    )  # fmt: skip
    metrics[EVALUATE_SECONDS] = time.perf_counter() - start
    if not full:
        log.info("Generation %d: solver acc %.3f, ce %.3f (the solver set alone: the games and "
                 "searches every %d generations and at the last)", generation,
                 metrics["solver.acc"], metrics["solver.ce"], cfg.full_every)  # fmt: skip
        return metrics
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


CURVES = [
    ("solver.acc", "solver-set accuracy (network alone)"),
    ("solver.ce", "solver-set cross-entropy"),
    ("punisher.policy.win_rate", "win rate vs RandomPunisher: network"),
    ("punisher.mcts.win_rate", "win rate vs RandomPunisher: MCTS agent"),
]


def learning_curve_table(*eval_metrics: dict) -> pd.DataFrame:
    """One row per generation with the curve metrics (NaN where a generation's scorecard
    was the solver set alone)."""
    rows = [
        {"generation": k, **{m: float(d.get(m, math.nan)) for m, _ in CURVES}}
        for k, d in enumerate(eval_metrics, start=1)
    ]
    return pd.DataFrame(rows)


def plot_learning_curves(*eval_metrics: dict):
    """A figure with acc, ce and win rates by generation."""
    table = learning_curve_table(*eval_metrics)
    fig, axes = pyplot().subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(table["generation"], table["solver.acc"], marker="o")
    axes[0].set_title(CURVES[0][1])
    axes[1].plot(table["generation"], table["solver.ce"], marker="o", color="tab:orange")
    axes[1].set_title(CURVES[1][1])
    for key, label in CURVES[2:]:  # the generations scored in full
        games = table.dropna(subset=[key])
        axes[2].plot(games["generation"], games[key], marker="o", label=label.split(": ")[1])
    axes[2].set_title("win rate vs RandomPunisher")
    axes[2].legend()
    for ax in axes:
        ax.set_xlabel("generation")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def publish_model(model):
    """The run's final model becomes ``latest_model`` (what ``play`` and ``export`` use)."""
    return model
