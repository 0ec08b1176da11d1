"""Elo ratings from game results: a Bradley-Terry fit, an anchor and bootstrap intervals.

The model. Player ``i`` has strength ``theta_i`` (natural-log units); it scores
against ``j`` with probability ``sigmoid(theta_i - theta_j)``. A draw counts as
half a win for each side (Bradley-Terry with ties as half-points). Ratings are
reported on the Elo scale, ``elo = 400 / ln(10) * theta``, so 400 Elo points
are odds of 10 to 1.

The fit is the maximum of the likelihood with one player's rating fixed (the
anchor) and a very weak Gaussian prior on the others (``prior_sd`` Elo around
the anchor): without it a player that won or lost every game would drift to
infinity. Newton's method on the (concave) log posterior converges in a few
steps for the ladder's tens of players.

Intervals: the games are resampled with replacement ``num_bootstrap`` times
and refitted; the 2.5% and 97.5% quantiles of each rating form its 95%
interval (the anchor's is exactly its fixed value).

Shapes: G games, P players.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per natural-log unit of strength."""


@dataclass(frozen=True)
class Games:
    """Game results between players ``0 .. num_players - 1``.

    ``a`` and ``b`` are ``int [G]`` player indices; ``score`` is ``float [G]``,
    ``a``'s result: 1 a win, 0.5 a draw, 0 a loss.
    """

    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    num_players: int

    def __post_init__(self):
        if not (len(self.a) == len(self.b) == len(self.score)):
            raise ValueError("a, b and score must have one entry per game")
        if len(self.a) and (min(self.a.min(), self.b.min()) < 0
                            or max(self.a.max(), self.b.max()) >= self.num_players):  # fmt: skip
            raise ValueError(f"player indices must be in [0, {self.num_players})")
        if np.any(self.a == self.b):
            raise ValueError("a player cannot play itself")
        if not np.isin(self.score, (0.0, 0.5, 1.0)).all():
            raise ValueError("scores must be 0, 0.5 or 1")

    def take(self, index: np.ndarray) -> Games:
        return Games(self.a[index], self.b[index], self.score[index], self.num_players)


def fit_elo(
    games: Games, anchor: int, anchor_elo: float = 0.0, prior_sd: float = 2000.0,
    max_iter: int = 100, tol: float = 1e-9,
) -> np.ndarray:  # fmt: skip
    """Maximum-likelihood Elo ratings ``float [P]`` with ``anchor`` fixed at ``anchor_elo``.

    Args:
        games: the results.
        anchor: the index of the player whose rating is fixed.
        prior_sd: the weak prior's standard deviation (Elo) of the other players
            around the anchor; it only matters for players with no finite
            maximum (all wins or all losses).
    """
    p = games.num_players
    if not 0 <= anchor < p:
        raise ValueError(f"anchor must be a player index in [0, {p}), got {anchor}")
    free = np.array([i for i in range(p) if i != anchor])
    theta = np.zeros(p)
    prior = (ELO_PER_NAT / prior_sd) ** 2  # precision in natural units
    for _ in range(max_iter):
        diff = theta[games.a] - theta[games.b]  # (G,)
        prob = 1.0 / (1.0 + np.exp(-diff))  # (G,) a's expected score
        resid = games.score - prob  # (G,)
        grad = np.bincount(games.a, resid, p) - np.bincount(games.b, resid, p) - prior * theta
        w = prob * (1.0 - prob)  # (G,)
        hess = np.zeros((p, p))
        np.add.at(hess, (games.a, games.b), w)
        np.add.at(hess, (games.b, games.a), w)
        hess -= np.diag(hess.sum(1) + prior)  # the negative-definite Hessian of the log posterior
        step = np.linalg.solve(hess[np.ix_(free, free)], -grad[free])
        theta[free] += step
        if np.max(np.abs(step)) < tol:
            break
    return anchor_elo + ELO_PER_NAT * theta


def bootstrap_intervals(
    games: Games, anchor: int, anchor_elo: float = 0.0, num_bootstrap: int = 200,
    seed: int = 0, level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(low [P], high [P])``: the ``level`` interval of each rating by resampling games."""
    if num_bootstrap < 1:
        raise ValueError(f"num_bootstrap must be >= 1, got {num_bootstrap}")
    rng = np.random.default_rng(seed)
    n = len(games.a)
    fits = np.stack([
        fit_elo(games.take(rng.integers(0, n, n)), anchor, anchor_elo)
        for _ in range(num_bootstrap)
    ])  # (num_bootstrap, P)  # fmt: skip
    tail = (1.0 - level) / 2.0
    return np.quantile(fits, tail, axis=0), np.quantile(fits, 1.0 - tail, axis=0)


def expected_score(elo_a: float, elo_b: float) -> float:
    """``a``'s expected score against ``b`` under the model."""
    return 1.0 / (1.0 + 10.0 ** ((elo_b - elo_a) / 400.0))


def ratings_table(ratings) -> list[str]:
    """A ladder's ratings (``label``, ``run_id``, ``elo``, ``elo_low``, ``elo_high``,
    ``games``, ``score``; best first) as Markdown table lines; a player of no run gets an
    empty run cell."""
    import pandas as pd  # noqa: PLC0415 (pandas: not for the light commands)

    lines = ["| player | run | Elo | 95% interval | games | score |", "|---|---|---|---|---|---|"]
    for r in ratings.itertuples():
        run = "" if r.run_id is None or pd.isna(r.run_id) else str(r.run_id)
        lines.append(f"| {r.label} | {run} | {r.elo:+.0f} | [{r.elo_low:+.0f}, {r.elo_high:+.0f}] "
                     f"| {int(r.games)} | {r.score:.3f} |")  # fmt: skip
    return lines
