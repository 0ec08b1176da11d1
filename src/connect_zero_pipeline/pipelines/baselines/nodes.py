"""Thin adapters: parameters -> core calls -> tables and metrics."""

from __future__ import annotations

import logging

import pandas as pd

from ...common.opening_book import book_solver
from ...core.config.players import SOLVER_PREFIX
from ...core.device import resolve_device
from ...core.match import play_match
from ...core.players import make_player
from ...params.schema import parse_section

log = logging.getLogger(__name__)


def play_baseline_match(params: dict) -> tuple[pd.DataFrame, dict]:
    """Play the configured match; return per-game results and MLflow metrics."""
    cfg = parse_section("baselines", params)
    device = resolve_device(cfg.node.device)
    log.info("Playing %d games: %s vs %s on %s", cfg.num_games, cfg.player_a, cfg.player_b, device)
    names = (cfg.player_a, cfg.player_b)
    solver = book_solver() if any(n.startswith(SOLVER_PREFIX) for n in names) else None
    a, b = (make_player(name, solver_max_nodes=cfg.solver_max_nodes, solver=solver)
            for name in names)  # fmt: skip
    result = play_match(a, b, cfg.num_games, cfg.seed, device=device)
    table = pd.DataFrame(
        {
            "game": pd.Series(range(cfg.num_games), dtype="int32"),
            "player_a": cfg.player_a,
            "player_b": cfg.player_b,
            "a_first": result.a_first.cpu().numpy(),
            "result": result.result.cpu().numpy().astype("int8"),
            "length": result.length.cpu().numpy().astype("int16"),
        }
    )
    rates = result.rates()
    log.info("%s vs %s: %s", cfg.player_a, cfg.player_b, {k: round(v, 4) for k, v in rates.items()})
    metrics = {k: {"value": v, "step": 0} for k, v in rates.items()}
    return table, metrics
