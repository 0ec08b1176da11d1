"""Evaluation: a network on the solver-labelled set, and match win rates.

Solver-set metrics, for a network alone (no search), on positions labelled
with the exact score of every move (``score_1..score_7``, null for a full
column, and ``best_score``; docs/architecture.md §4). A move is *optimal* when its score
equals ``best_score``.

- ``acc``: the top legal move of the policy is optimal (strict: its exact
  score is the best score).
- ``weak_acc``: the top legal move keeps the best outcome class (win, draw or
  loss under perfect play); ``1 - weak_acc`` is AlphaZero.jl's weak-mistake rate.
- ``ce``: ``-log`` of the policy mass (softmax over legal columns) on the
  optimal moves.
- ``val_signacc``: the value head has the sign of ``best_score``, on positions
  whose best score is not 0 (not a draw).
- The same, split by ply bucket, two ways (:mod:`.config.evaluation`):
  ``PLY_BUCKETS``, ``begin`` (ply <= 14), ``middle`` (15-28), ``end`` (>= 29), the stone
  counts of Pons' beginning/middle/end sets; and ``STRENGTH_BUCKETS``, ``ply00_06``,
  ``ply07_12``, ``ply13_20`` and ``ply21_42``, finer where the agent is weakest (the
  opening); and by the position's outcome class for the side to move (``win``, ``draw``,
  ``loss``): strict accuracy in a won position means the quickest win, in a lost one the
  slowest loss.

Shapes: N positions, A = 7 columns.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from .bitboard import State, legal_mask, to_boards
from .config import mix_seed
from .config.evaluation import BUCKETS, EvaluateConfig
from .config.search import MCTSConfig
from .inference import EvaluateFn, torch_evaluate_fn
from .labelling import SCORE_COLUMNS
from .match import play_match
from .players import Player, PolicyPlayer, RandomOpening, RandomPunisher
from .progress import progress_bar
from .search import MCTSPlayer, search

log = logging.getLogger(__name__)

OUTCOME_CLASSES = {"win": 1, "draw": 0, "loss": -1}
"""Metric suffix -> the sign of ``best_score`` (the side to move's outcome under perfect play)."""


def ply_buckets(ply: np.ndarray) -> list[tuple[str, torch.Tensor]]:
    """``(name, mask [N] bool)`` of each ply bucket (``BUCKETS``) that holds a position."""
    ply_t = torch.from_numpy(ply)
    masks = [(name, (ply_t >= lo) & (ply_t <= hi)) for name, (lo, hi) in BUCKETS.items()]
    return [(name, sel) for name, sel in masks if bool(sel.any())]


def solver_labels(positions: pd.DataFrame) -> tuple[State, torch.Tensor, torch.Tensor, np.ndarray]:
    """Unpack a solver-labelled table.

    Returns:
        ``state`` ([N] bitboards), ``optimal [N, 7] bool``, ``best_score [N] int64``,
        ``ply [N]`` numpy array.
    """
    missing = [
        c for c in ["position", "mask", "ply", "best_score", *SCORE_COLUMNS] if c not in positions
    ]
    if missing:
        raise ValueError(f"solver-labelled table lacks column(s) {missing}")
    pos = torch.from_numpy(positions["position"].to_numpy(np.uint64).view(np.int64).copy())
    mask = torch.from_numpy(positions["mask"].to_numpy(np.uint64).view(np.int64).copy())
    ply = positions["ply"].to_numpy(np.int64)
    scores = positions[SCORE_COLUMNS].astype("float64").to_numpy()  # NaN for full columns
    best = positions["best_score"].to_numpy(np.int64)
    optimal = torch.from_numpy(scores == best[:, None])  # NaN == x is False
    return State(pos, mask, torch.from_numpy(ply)), optimal, torch.from_numpy(best), ply


@torch.inference_mode()
def _forward(evaluate_fn: EvaluateFn, boards: torch.Tensor, batch_size: int):
    logits, values = [], []
    for i in range(0, boards.shape[0], batch_size):
        lo, va = evaluate_fn(boards[i : i + batch_size])
        logits.append(lo.float().cpu())
        values.append(va.float().cpu())
    return torch.cat(logits), torch.cat(values)


def solver_set_metrics(
    evaluate_fn: EvaluateFn, positions: pd.DataFrame, batch_size: int = 4096
) -> dict[str, float]:
    """``acc``, ``ce`` and ``val_signacc`` overall and per ply bucket (see the module doc).

    Args:
        evaluate_fn: ``boards int8 [B, 6, 7] -> (logits [B, 7], value [B])``.
        positions: a solver-labelled table (``pons_positions`` schema).

    Returns:
        ``{"acc", "weak_acc", "ce", "val_signacc", "count", "acc_begin", ..., "count_end"}``;
        a bucket with no positions is left out.
    """
    state, optimal, best, ply = solver_labels(positions)
    outcome = torch.from_numpy(np.sign(positions[SCORE_COLUMNS].astype("float64").to_numpy()))
    logits, value = _forward(evaluate_fn, to_boards(state), batch_size)
    legal = legal_mask(state)  # (N, 7)
    logp = F.log_softmax(logits.masked_fill(~legal, float("-inf")), dim=1)  # (N, 7)
    top = logp.argmax(1)
    hit = optimal.gather(1, top[:, None]).squeeze(1)  # (N,)
    # Weak: the top move keeps the best outcome class (win / draw / loss under perfect play).
    weak_hit = outcome.gather(1, top[:, None]).squeeze(1) == torch.sign(best.double())  # (N,)
    ce = -torch.logsumexp(logp.masked_fill(~optimal, float("-inf")), dim=1)  # (N,)
    decided = best != 0
    sign_ok = torch.sign(value) == torch.sign(best.float())

    def summary(sel: torch.Tensor, suffix: str) -> dict[str, float]:
        out = {
            f"acc{suffix}": float(hit[sel].double().mean()),
            f"weak_acc{suffix}": float(weak_hit[sel].double().mean()),
            f"ce{suffix}": float(ce[sel].double().mean()),
            f"count{suffix}": float(sel.sum()),
        }
        dec = sel & decided
        if bool(dec.any()):
            out[f"val_signacc{suffix}"] = float(sign_ok[dec].double().mean())
        return out

    everything = torch.ones_like(hit)
    metrics = summary(everything, "")
    for name, sel in ply_buckets(ply):
        metrics.update(summary(sel, f"_{name}"))
    for name, sign in OUTCOME_CLASSES.items():
        sel = torch.sign(best) == sign
        if bool(sel.any()):
            metrics.update(summary(sel, f"_{name}"))
    return metrics


def search_agent_metrics(
    evaluate_fn: EvaluateFn,
    positions: pd.DataFrame,
    config,
    batch_size: int = 256,
    progress: str | None = None,
) -> dict[str, float]:
    """The MCTS agent of ``config`` (an :class:`~.config.search.MCTSConfig`) on a labelled set: no
    noise; PUCT plays the most visited move, Gumbel search its Sequential Halving survivor.

    Returns:
        ``strict_acc`` (the move has the best exact score), ``weak_acc`` (it
        keeps the best outcome class) and ``count``, overall and per ply bucket
        (``BUCKETS``: ``strict_acc_ply00_06``, ...; a bucket with no positions is left
        out); positions are searched ``batch_size`` at a time, all together on the batched
        tree. ``progress``: the description of a progress bar over the batches (None: no bar).
    """

    state, optimal, best, ply = solver_labels(positions)
    outcome = torch.from_numpy(np.sign(positions[SCORE_COLUMNS].astype("float64").to_numpy()))
    picks = []
    starts = range(0, state.batch_size, batch_size)
    if progress:
        starts = progress_bar(starts, desc=progress, unit="batch", leave=False)
    for i in starts:
        sub = state.take(torch.arange(i, min(i + batch_size, state.batch_size)))
        picks.append(search(sub, evaluate_fn, config).action)
    top = torch.cat(picks) if picks else torch.zeros(0, dtype=torch.int64)
    hit = optimal.gather(1, top[:, None]).squeeze(1)
    weak_hit = outcome.gather(1, top[:, None]).squeeze(1) == torch.sign(best.double())

    def summary(sel: torch.Tensor, suffix: str) -> dict[str, float]:
        m = int(sel.sum())
        return {f"strict_acc{suffix}": float(hit[sel].sum()) / max(m, 1),
                f"weak_acc{suffix}": float(weak_hit[sel].sum()) / max(m, 1),
                f"count{suffix}": float(m)}  # fmt: skip

    metrics = summary(torch.ones_like(hit), "")
    for name, sel in ply_buckets(ply[: len(top)]):
        metrics.update(summary(sel, f"_{name}"))
    return metrics


def win_rates(
    player: Player, opponent: Player, num_games: int, seed: int, device: torch.device | str = "cpu"
) -> dict[str, float]:
    """``player``'s win/draw/loss rates over ``num_games`` games, colours alternating."""
    return play_match(player, opponent, num_games, seed=seed, device=device).rates()


def set_scores(
    labelled: pd.DataFrame,
    network_fn: EvaluateFn,
    search_fn: EvaluateFn | None = None,
    mcts: MCTSConfig | None = None,
    batch_size: int = 4096,
    progress: str | None = None,
) -> dict[str, float]:
    """One agent on a solver-labelled set: the network alone (``mcts`` None, every metric of
    :func:`solver_set_metrics`, and the same over decisive positions with the suffix
    ``_decisive``) or the search agent of ``mcts`` (:func:`search_agent_metrics`).

    Both have ``strict_acc`` (the move has the best exact score), ``weak_acc`` and
    ``weak_mistake_rate = 1 - weak_acc`` (the move loses the outcome class: AlphaZero.jl's
    figure) and ``count``, overall and per ply bucket (``strict_acc_ply00_06``,
    ``weak_mistake_rate_ply00_06``, ...); an empty table gives ``{}``. ``progress``: a progress bar's
    description for the search agent (None: no bar).
    """
    if labelled.empty:
        return {}
    if mcts is None:
        metrics = solver_set_metrics(network_fn, labelled, batch_size)
        metrics["strict_acc"] = metrics["acc"]
        metrics |= {
            f"strict_acc_{b}": metrics[f"acc_{b}"] for b in BUCKETS if f"acc_{b}" in metrics
        }
        if "decisive" in labelled:
            decisive = labelled.loc[labelled["decisive"].to_numpy(bool)]
            if not decisive.empty:
                sub = solver_set_metrics(network_fn, decisive, batch_size)
                metrics.update({f"{k}_decisive": v for k, v in sub.items() if k != "count"})
    else:
        metrics = search_agent_metrics(search_fn or network_fn, labelled, mcts, progress=progress)
    metrics["weak_mistake_rate"] = 1.0 - metrics["weak_acc"]
    for b in BUCKETS:
        if f"weak_acc_{b}" in metrics:
            metrics[f"weak_mistake_rate_{b}"] = 1.0 - metrics[f"weak_acc_{b}"]
    return metrics


# ---------------------------------------------------------------------------
# A generation's evaluation
# ---------------------------------------------------------------------------


def gate(vs_previous: dict[str, float], config: EvaluateConfig) -> tuple[float, bool]:
    """The new model's score against the previous one, and whether it replaces it."""
    score = vs_previous["win_rate"] + 0.5 * vs_previous["draw_rate"]
    return score, (not config.gating) or score >= config.gate_threshold


def previous_match(
    new_fn: EvaluateFn,
    old_fn: EvaluateFn,
    config: EvaluateConfig,
    *,
    generation: int,
    device: torch.device,
) -> dict[str, float]:
    """The match of the new network against the previous generation's (both MCTS agents of
    ``config.previous``, opened by random moves) and the gate's verdict: ``previous.*``,
    ``gate.score`` and ``gate.accepted`` (1.0 when the new model replaces the previous one:
    always without gating)."""
    seed = mix_seed(config.seed, generation)
    match = config.previous
    new_agent = RandomOpening(MCTSPlayer(new_fn, match.mcts), match.opening_plies)
    old_agent = RandomOpening(MCTSPlayer(old_fn, match.mcts), match.opening_plies)
    vs_prev = win_rates(new_agent, old_agent, match.num_games, seed + 1, device)
    metrics = {f"previous.{k}": v for k, v in vs_prev.items()}
    score, accepted = gate(vs_prev, config)
    metrics["gate.accepted"] = float(accepted)
    metrics["gate.score"] = score
    return metrics


def evaluate_candidate(
    candidate: torch.nn.Module,
    new_fn: EvaluateFn,
    positions: pd.DataFrame,
    public_sets: dict[str, pd.DataFrame],
    config: EvaluateConfig,
    *,
    generation: int,
    device: torch.device,
    match: dict[str, float] | None = None,
    old_fn: EvaluateFn | None = None,
    full: bool = True,
) -> dict[str, float]:
    """Measure a generation's candidate network: its scorecard.

    ``new_fn`` evaluates the candidate's network for the searches. Metrics: ``solver.*``
    (the network alone on ``positions``), ``punisher.policy.*`` and ``punisher.mcts.*``
    (against RandomPunisher), the :func:`previous_match` (``previous.*``, ``gate.*``: given as
    ``match`` when the gate has played it, else played here with ``old_fn``, the previous
    model's network), and for each public set ``bench.<set>.<agent>.strict_acc`` and
    ``.weak_mistake_rate``. Every part is seeded by ``config.seed`` and ``generation``
    alone, so the figures do not depend on what runs before or beside it.

    Not ``full`` (:func:`~.config.evaluation.full_scorecard`): the ``solver.*`` figures alone
    (and the gate's ``match``, which is played already); ``new_fn`` and ``old_fn`` are not
    used. ``evaluate.full`` says which (1 or 0).
    """
    if full and (match is None) == (old_fn is None):
        raise ValueError("evaluate_candidate takes either the gate's match or old_fn")
    network_fn = torch_evaluate_fn(candidate, device)
    metrics = {f"solver.{k}": v for k, v in solver_set_metrics(network_fn, positions).items()}
    metrics["evaluate.full"] = float(full)
    if not full:
        return {**metrics, **(match or {})}
    seed = mix_seed(config.seed, generation)
    punisher = RandomPunisher()
    players = (("policy", PolicyPlayer(candidate.to(device).eval())),
               ("mcts", MCTSPlayer(new_fn, config.mcts)))  # fmt: skip
    for name, player in players:
        for k, v in win_rates(player, punisher, config.num_games, seed, device).items():
            metrics[f"punisher.{name}.{k}"] = v
    if match is None:
        match = previous_match(new_fn, old_fn, config, generation=generation, device=device)
    metrics.update(match)
    agents = {"network": None} | {
        f"mcts{n}": dataclasses.replace(config.mcts, sims=n) for n in config.benchmark.sims
    }
    for name, labelled in public_sets.items():
        for agent, mcts in agents.items():
            scores = set_scores(labelled, network_fn, new_fn, mcts)
            for k in ("strict_acc", "weak_mistake_rate"):
                metrics[f"bench.{name}.{agent}.{k}"] = scores.get(k, float("nan"))
    return metrics
