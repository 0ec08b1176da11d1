"""Gumbel AlphaZero search: Sequential Halving on bandits, policy improvement, batching, a
slow per-node reference, the exact budget."""

from __future__ import annotations

import math

import pytest
import torch

from connect_zero_pipeline.core.bitboard import moves_to_bitboards, state_from_moves
from connect_zero_pipeline.core.config.search import MCTSConfig
from connect_zero_pipeline.core.search import SearchInputs
from connect_zero_pipeline.core.search import gumbel as G
from connect_zero_pipeline.core.search.loop import MCTSPlayer, search
from connect_zero_pipeline.core.search.reference import reference_mcts

POSITIONS = ["", "4453", "44444433333322222", "1212", "33455"]  # the third: 2 full columns


def pure_fn(boards: torch.Tensor):
    """A deterministic stand-in network: logits and value are fixed functions of the board."""
    b = boards.float().flatten(1)
    w = torch.arange(42, dtype=torch.float32).sin()
    logits = torch.stack([(b * (w * (c + 1)).cos()).sum(1) for c in range(7)], 1) * 0.7
    return logits, torch.tanh((b * w).sum(1) * 0.3)


def _gumbel(rows: int, seed: int) -> torch.Tensor:
    u = torch.rand(rows, 7, generator=torch.Generator().manual_seed(seed))
    return G.gumbel_from_uniforms(u.clamp(1e-6, 1 - 1e-6))


@pytest.mark.parametrize("m", range(1, 8))
def test_sequential_halving_spends_exactly_the_budget(m):
    for sims in range(1, 70):
        schedule = G.considered_visits(m, sims)
        assert len(schedule) == sims
        assert schedule[:m] == tuple([0] * min(m, sims))  # every considered action once first
    state = state_from_moves(POSITIONS)
    config = MCTSConfig(sims=23, search="gumbel", gumbel_num_actions=m)
    result = search(state, pure_fn, config, inputs=SearchInputs(gumbel=_gumbel(len(POSITIONS), m)))
    assert result.visit_counts.sum(1).tolist() == [23] * len(POSITIONS)
    assert (result.visit_counts > 0).sum(1).max() <= m


def _bandit_pick(q: torch.Tensor, logits: torch.Tensor, m: int, sims: int) -> int:
    """Sequential Halving with the module's rules on a bandit: a visit of arm a returns q[a]."""
    legal = torch.ones(1, 7, dtype=torch.bool)
    g = torch.zeros(1, 7)
    considered, count = G.top_m(g, logits, legal, m)
    visits = torch.zeros(1, 7)
    schedule = G.considered_visits(int(count), sims)
    for k in range(sims):
        node = G.NodeStats(logits, legal, q, visits, torch.zeros(1))
        scores = G.root_scores(g, node, 50.0, 1.0)
        a = int(G.root_action(scores, considered, visits, torch.tensor([schedule[k]])))
        visits[0, a] += 1
    assert int(visits.sum()) == sims
    scores = G.root_scores(g, G.NodeStats(logits, legal, q, visits, torch.zeros(1)), 50.0, 1.0)
    return int(G.final_action(scores, considered, visits))


def test_the_search_finds_the_best_arm_of_a_bandit_without_noise():
    gen = torch.Generator().manual_seed(0)
    for trial in range(200):
        q = torch.rand(1, 7, generator=gen) * 2 - 1  # known action values
        logits = torch.zeros(1, 7)  # an uninformed prior: the values decide
        m = 7
        for sims in (m, 2 * m, 50):
            assert _bandit_pick(q, logits, m, sims) == int(q.argmax()), (trial, sims)


def test_the_improved_policy_never_lowers_the_expected_value():
    gen = torch.Generator().manual_seed(1)
    for _ in range(500):
        logits = torch.randn(1, 7, generator=gen) * 2
        legal = torch.rand(1, 7, generator=gen) > 0.2
        legal[0, int(torch.randint(7, (1,), generator=gen))] = True
        q = torch.rand(1, 7, generator=gen) * 2 - 1
        visits = torch.randint(1, 20, (1, 7), generator=gen).float() * legal
        prior = torch.softmax(logits.masked_fill(~legal, -1e9), 1) * legal
        node = G.NodeStats(logits, legal, q, visits, torch.zeros(1))
        improved = G.improved_policy(node, 50.0, 1.0)
        assert float(improved.sum()) == pytest.approx(1.0, abs=1e-5)
        assert float((improved * ~legal).sum()) == 0.0
        assert float((improved * q).sum()) >= float((prior * q).sum()) - 1e-5


def test_batch_elements_never_interact():
    config = MCTSConfig(sims=19, search="gumbel", gumbel_num_actions=4)
    g = _gumbel(len(POSITIONS), 3)
    batch = search(state_from_moves(POSITIONS), pure_fn, config, inputs=SearchInputs(gumbel=g))
    for i, moves in enumerate(POSITIONS):
        alone = search(
            state_from_moves([moves]), pure_fn, config, inputs=SearchInputs(gumbel=g[i : i + 1])
        )
        assert torch.equal(alone.visit_counts[0], batch.visit_counts[i]), moves
        assert int(alone.action[0]) == int(batch.action[i])
        assert torch.allclose(alone.action_weights[0], batch.action_weights[i], atol=1e-6)


@pytest.mark.parametrize(("sims", "m"), [(1, 7), (5, 7), (16, 7), (40, 7), (16, 2), (40, 4)])
def test_the_batched_search_agrees_with_the_per_node_reference(sims, m):
    config = MCTSConfig(sims=sims, search="gumbel", gumbel_num_actions=m)
    g = _gumbel(len(POSITIONS), sims * 10 + m)
    result = search(state_from_moves(POSITIONS), pure_fn, config, inputs=SearchInputs(gumbel=g))
    for i, moves in enumerate(POSITIONS):
        counts, value, policy, action = reference_mcts(
            *moves_to_bitboards(moves), pure_fn, config, gumbel=g[i].tolist()
        )
        assert counts == result.visit_counts[i].tolist(), moves
        assert action == int(result.action[i]), moves
        assert policy == pytest.approx(result.action_weights[i].tolist(), abs=1e-4), moves
        assert value == pytest.approx(float(result.root_value[i]), abs=1e-5), moves


def test_the_gumbel_agent_takes_a_win_and_configs_are_validated():
    # The side to move has columns 5-7 on the bottom row: column 4 wins at once, and the
    # search sees the exact value of that terminal child, whatever the network says.
    state = state_from_moves(["556677"])
    player = MCTSPlayer(pure_fn, MCTSConfig(sims=24, search="gumbel"))
    assert int(player.act(state)[0]) == 3
    for bad in (
        {"search": "alphabeta"},
        {"gumbel_num_actions": 0},
        {"gumbel_num_actions": 8},
        {"c_visit": 0},
        {"c_scale": -1.0},
        {"c_visit": math.inf},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            MCTSConfig(**bad)
