"""Evaluation node: solver-set metrics, matches against RandomPunisher and the previous model, gating."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pandas as pd
from torch import nn

from ...core.config import check, mix_seed, resolve_device
from ...core.evaluation import solver_set_metrics, win_rates
from ...core.inference import BACKENDS, make_evaluate_fn, torch_evaluate_fn
from ...core.mcts import SEARCHES, MCTSConfig, MCTSPlayer
from ...core.players import PolicyPlayer, RandomOpening, RandomPunisher
from ..params import parse_section

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvaluateConfig:
    num_games: int = 200
    """Games against RandomPunisher, for the network alone and for the MCTS agent (colours alternate)."""
    mcts_sims: int = 32
    """Simulations per move of the MCTS agent."""
    previous_games: int = 200
    """Games of the new model (MCTS agent) against the previous generation's."""
    previous_sims: int = 16
    """Simulations per move of both MCTS agents in the match against the previous generation."""
    opening_plies: int = 2
    """Random moves that open every game against the previous generation (the agents are
    deterministic: without them the match would repeat the same two games)."""
    gating: bool = False
    """Keep the previous model unless the new one wins ``gate_threshold`` of the match."""
    gate_threshold: float = 0.55
    """Score (wins + draws/2) the new model needs against the previous one to replace it."""
    seed: int = 0
    """Seeds the matches (mixed with the generation number)."""
    device: str = "auto"
    """``auto``, ``cpu`` or ``cuda``."""
    backend: str = "auto"
    """Network evaluation inside the MCTS agents: ``auto`` (onnxruntime on CPU, torch on
    CUDA), ``torch`` or ``onnxruntime``."""
    search: str = "puct"
    """The MCTS agents' search: ``puct`` (most visited move) or ``gumbel`` (Gumbel search
    without noise: its Sequential Halving survivor)."""

    def __post_init__(self):
        check(self.num_games >= 200, "num_games", self.num_games, ">= 200 (both colours, seeded)")
        check(self.mcts_sims >= 1, "mcts_sims", self.mcts_sims, ">= 1")
        check(self.previous_games >= 2, "previous_games", self.previous_games, ">= 2")
        check(self.previous_sims >= 1, "previous_sims", self.previous_sims, ">= 1")
        check(0 <= self.opening_plies <= 8, "opening_plies", self.opening_plies, "in [0, 8]")
        check(self.backend in BACKENDS, "backend", self.backend, f"one of {BACKENDS}")
        check(self.search in SEARCHES, "search", self.search, f"one of {SEARCHES}")
        check(0 <= self.gate_threshold <= 1, "gate_threshold", self.gate_threshold, "in [0, 1]")


def evaluate_generation(
    candidate: nn.Module,
    previous: nn.Module,
    positions: pd.DataFrame,
    params: dict,
    generation: int,
) -> tuple[nn.Module, dict]:
    """Measure ``candidate``; return the generation's model (gated) and its metrics.

    Metric names are shared with the REINFORCE pipeline so MLflow charts align:
    ``solver.*`` (network alone), ``punisher.policy.*`` and ``punisher.mcts.*``
    (win/draw/loss against RandomPunisher), ``previous.*`` (MCTS agents, new vs
    previous) and ``gate.accepted``.
    """
    (cfg,) = parse_section("evaluate", params)
    device = resolve_device(cfg.device)
    seed = mix_seed(cfg.seed, generation)
    metrics: dict[str, float] = {}
    for k, v in solver_set_metrics(torch_evaluate_fn(candidate, device), positions).items():
        metrics[f"solver.{k}"] = v
    punisher = RandomPunisher()
    mcts_cfg = MCTSConfig(sims=cfg.mcts_sims, search=cfg.search)
    new_fn = make_evaluate_fn(candidate, device, cfg.backend)
    old_fn = make_evaluate_fn(previous, device, cfg.backend)
    agent = MCTSPlayer(new_fn, mcts_cfg)
    for name, player in (("policy", PolicyPlayer(candidate.to(device).eval())), ("mcts", agent)):
        for k, v in win_rates(player, punisher, cfg.num_games, seed, device).items():
            metrics[f"punisher.{name}.{k}"] = v
    prev_cfg = MCTSConfig(sims=cfg.previous_sims, search=cfg.search)
    new_agent = RandomOpening(MCTSPlayer(new_fn, prev_cfg), cfg.opening_plies)
    old_agent = RandomOpening(MCTSPlayer(old_fn, prev_cfg), cfg.opening_plies)
    vs_prev = win_rates(new_agent, old_agent, cfg.previous_games, seed + 1, device)
    for k, v in vs_prev.items():
        metrics[f"previous.{k}"] = v
    score = vs_prev["win_rate"] + 0.5 * vs_prev["draw_rate"]
    accepted = (not cfg.gating) or score >= cfg.gate_threshold
    metrics["gate.accepted"] = float(accepted)
    metrics["gate.score"] = score
    log.info(
        "Generation %d: solver acc %.3f, ce %.3f | vs RandomPunisher: policy %.3f, mcts %.3f | "
        "vs previous %.3f%s",
        generation,
        metrics["solver.acc"],
        metrics["solver.ce"],
        metrics["punisher.policy.win_rate"],
        metrics["punisher.mcts.win_rate"],
        score,
        "" if accepted else " -> rejected, keeping the previous model",
    )
    chosen = candidate if accepted else previous
    chosen = chosen.cpu()
    chosen.meta = {**getattr(chosen, "meta", {}), "generation_accepted_at": generation}
    return chosen, metrics
