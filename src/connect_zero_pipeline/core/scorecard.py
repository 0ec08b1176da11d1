"""The scorecard: two trained agents on the same yardsticks, and against each other.

For each agent (e.g. the latest REINFORCE and AlphaZero models):

- ``solver.*``: the network alone on the solver-labelled set;
- ``punisher.policy.*``: the greedy network against RandomPunisher (same seed
  for both agents, colours alternating);
- a direct match, both networks greedy. Greedy play is deterministic, so each
  game starts with ``opening_plies`` uniformly random moves (seeded);
- optionally a second direct match: the first agent's greedy network against
  the second agent's MCTS (``mcts``, no noise).

Shapes: B games.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import torch
from torch import nn

from .config.scorecard import ScorecardConfig
from .evaluation import solver_set_metrics, win_rates
from .inference import torch_evaluate_fn
from .players import Player, PolicyPlayer, RandomOpening, RandomPunisher
from .search import MCTSPlayer


def _rates(prefix: str, rates: Mapping[str, float]) -> dict[str, float]:
    return {f"{prefix}.{k}": v for k, v in rates.items() if not k.startswith("win_rate_")}


def scorecard(
    first: tuple[str, nn.Module],
    second: tuple[str, nn.Module],
    positions: pd.DataFrame | None,
    config: ScorecardConfig,
    device: torch.device | str = "cpu",
) -> dict[str, dict[str, float]]:
    """Measure two agents side by side.

    Args:
        first, second: ``(name, model)``; ``second`` is the one searched with MCTS
            in the second direct match (AlphaZero's network is trained for it).
        positions: the solver-labelled set, or ``None`` to skip ``solver.*``.

    Returns:
        ``{name: metrics}`` with, for each agent: ``solver.*``,
        ``punisher.policy.{win,draw,loss}_rate``, ``punisher.policy.mean_length``,
        ``h2h.policy.{win,draw,loss}_rate`` (its own rates in the greedy-vs-greedy
        match), and unless ``mcts`` is None ``h2h.mcts.*`` (first's greedy network
        vs second's MCTS agent, each from its own side).
    """
    (name_a, model_a), (name_b, model_b) = first, second
    if name_a == name_b:
        raise ValueError(f"the two agents need different names, got {name_a!r} twice")
    out: dict[str, dict[str, float]] = {name_a: {}, name_b: {}}
    greedy = {}
    for name, model in ((name_a, model_a), (name_b, model_b)):
        model = model.to(device).eval()
        greedy[name] = PolicyPlayer(model, temperature=0.0)
        if positions is not None:
            for k, v in solver_set_metrics(torch_evaluate_fn(model, device), positions).items():
                out[name][f"solver.{k}"] = v
        rates = win_rates(greedy[name], RandomPunisher(), config.num_games, config.seed, device)
        out[name].update(_rates("punisher.policy", rates))

    def match(a: Player, b: Player, prefix: str, seed: int) -> None:
        a = RandomOpening(a, config.opening_plies)
        b = RandomOpening(b, config.opening_plies)
        rates = win_rates(a, b, config.match_games, seed, device)
        out[name_a].update(_rates(prefix, rates))
        mirrored = {
            "win_rate": rates["loss_rate"],
            "draw_rate": rates["draw_rate"],
            "loss_rate": rates["win_rate"],
            "mean_length": rates["mean_length"],
        }
        out[name_b].update(_rates(prefix, mirrored))

    match(greedy[name_a], greedy[name_b], "h2h.policy", config.seed + 1)
    if config.mcts is not None:
        agent = MCTSPlayer(model_b.to(device).eval(), config.mcts, device=device)
        match(greedy[name_a], agent, "h2h.mcts", config.seed + 2)
    return out
