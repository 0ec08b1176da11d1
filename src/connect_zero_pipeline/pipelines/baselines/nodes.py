"""Thin adapters: parameters -> core calls -> tables and metrics."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pandas as pd

from ...core.config import check, resolve_device
from ...core.match import play_match
from ...core.players import PLAYERS, make_player
from ..params import parse_section

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BaselineMatchConfig:
    player_a: str = "random_punisher"
    """First player's name (``random`` or ``random_punisher``); moves first in even games."""
    player_b: str = "random"
    """Second player's name."""
    num_games: int = 2000
    """Games in the match; colours alternate."""
    seed: int = 0
    """Seeds the match's random generator."""
    device: str = "auto"
    """``auto``, ``cpu`` or ``cuda``."""

    def __post_init__(self):
        for key in ("player_a", "player_b"):
            value = getattr(self, key)
            check(value in PLAYERS, key, value, f"one of {sorted(PLAYERS)}")
        check(
            isinstance(self.num_games, int) and self.num_games >= 1,
            "num_games",
            self.num_games,
            "an integer >= 1",
        )


def play_baseline_match(params: dict) -> tuple[pd.DataFrame, dict]:
    """Play the configured match; return per-game results and MLflow metrics."""
    (cfg,) = parse_section("baselines", params)
    device = resolve_device(cfg.device)
    log.info("Playing %d games: %s vs %s on %s", cfg.num_games, cfg.player_a, cfg.player_b, device)
    result = play_match(
        make_player(cfg.player_a), make_player(cfg.player_b), cfg.num_games, cfg.seed, device=device
    )
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
