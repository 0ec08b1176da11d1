"""Elo fits: known ratings recovered, the anchor exact, draws, intervals that shrink."""

from __future__ import annotations

import numpy as np
import pytest

from connect_zero_pipeline.core.ratings import (
    Games,
    bootstrap_intervals,
    expected_score,
    fit_elo,
)


def simulate(elos: list[float], games_per_pair: int, seed: int, draw_rate: float = 0.0) -> Games:
    """Round robin between players of given Elo. A game is drawn with probability
    ``draw_rate * 2 * min(e, 1 - e)`` (``e`` the expected score: close games draw more), else
    won with the probability that keeps the expected score ``e`` (a draw is half a point)."""
    rng = np.random.default_rng(seed)
    a, b, score = [], [], []
    for i in range(len(elos)):
        for j in range(i + 1, len(elos)):
            e = expected_score(elos[i], elos[j])
            d = draw_rate * 2 * min(e, 1 - e)
            p_win = (e - 0.5 * d) / (1 - d)  # e = p_win * (1 - d) + 0.5 * d
            for _ in range(games_per_pair):
                s = 0.5 if rng.random() < d else float(rng.random() < p_win)
                a.append(i), b.append(j), score.append(s)
    return Games(np.array(a), np.array(b), np.array(score), len(elos))


TRUE = [0.0, 150.0, -200.0, 400.0, 50.0]


def test_the_fit_recovers_known_ratings_with_an_exact_anchor():
    games = simulate(TRUE, games_per_pair=800, seed=0)
    elo = fit_elo(games, anchor=0)
    assert elo[0] == 0.0  # the anchor is exact
    np.testing.assert_allclose(elo, TRUE, atol=35)
    shifted = fit_elo(games, anchor=0, anchor_elo=1000.0)
    np.testing.assert_allclose(shifted - 1000.0, elo, atol=1e-6)  # only the offset moves
    other = fit_elo(games, anchor=3, anchor_elo=400.0)
    assert other[3] == 400.0
    np.testing.assert_allclose(other, elo, atol=5.0)  # same differences (the weak prior: a few Elo)


def test_draws_count_as_half_points():
    games = simulate(TRUE, games_per_pair=800, seed=1, draw_rate=0.4)
    assert 0.15 < (games.score == 0.5).mean() < 0.4
    np.testing.assert_allclose(fit_elo(games, anchor=0), TRUE, atol=45)
    # Two players who only draw are equal.
    even = Games(np.zeros(10, int), np.ones(10, int), np.full(10, 0.5), 2)
    assert fit_elo(even, anchor=0)[1] == pytest.approx(0.0, abs=1e-9)


def test_a_player_who_always_wins_stays_finite():
    games = Games(np.zeros(20, int), np.ones(20, int), np.ones(20), 2)
    elo = fit_elo(games, anchor=1)
    assert np.isfinite(elo).all() and elo[0] > 400


def test_intervals_cover_the_truth_and_shrink_as_games_grow():
    widths = []
    for n in (50, 400):
        games = simulate(TRUE, games_per_pair=n, seed=2)
        low, high = bootstrap_intervals(games, anchor=0, num_bootstrap=100, seed=0)
        assert low[0] == high[0] == 0.0
        assert np.all(low <= fit_elo(games, anchor=0) + 1e-9)
        assert np.all(fit_elo(games, anchor=0) <= high + 1e-9)
        assert np.sum((low <= TRUE) & (np.array(TRUE) <= high)) >= 4
        widths.append(np.mean((high - low)[1:]))
    assert widths[1] < widths[0] / 2  # 8x the games: about a third of the width


def test_bad_games_are_named():
    with pytest.raises(ValueError, match="cannot play itself"):
        Games(np.array([0]), np.array([0]), np.array([1.0]), 2)
    with pytest.raises(ValueError, match="scores must be 0, 0.5 or 1"):
        Games(np.array([0]), np.array([1]), np.array([0.7]), 2)
    with pytest.raises(ValueError, match="anchor must be a player index"):
        fit_elo(Games(np.array([0]), np.array([1]), np.array([1.0]), 2), anchor=5)
