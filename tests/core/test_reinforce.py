"""REINFORCE: the loss by hand, returns per mover and discounting, the swap rule, resuming."""

from __future__ import annotations

import io
import math

import pytest
import torch
from torch import nn

from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core.config.reinforce import ReinforceConfig, ReinforceEvalConfig
from connect_zero_pipeline.core.match import play_match
from connect_zero_pipeline.core.players import PolicyPlayer, RandomPlayer
from connect_zero_pipeline.core.reinforce import (
    SwapRule,
    beta_at,
    discounted_returns,
    distinct_games,
    init_policy,
    masked_entropy,
    play_rollout,
    reinforce_loss,
    selfplay_diversity,
    train_chunk,
)

ALL = torch.ones(1, 7, dtype=torch.bool)
TWO = torch.tensor([[True, True, False, False, False, False, False]])


# ---------------------------------------------------------------------------
# Loss
# ---------------------------------------------------------------------------


def test_loss_on_a_hand_computed_example():
    # Row 0: uniform over 7 legal columns, move 3, advantage +1: log pi = -ln 7, H = ln 7.
    # Row 1: logits (ln 3, 0) on the 2 legal columns -> p = (3/4, 1/4); move 0, advantage -1.
    #        The large logit on an illegal column must be ignored.
    logits = torch.tensor([[0.0] * 7, [math.log(3.0), 0, 50.0, 0, 0, 0, 0]], requires_grad=True)
    legal = torch.cat([ALL, TWO])
    moves = torch.tensor([3, 0])
    adv = torch.tensor([1.0, -1.0])
    h1 = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    out = reinforce_loss(logits, legal, moves, adv, beta=0.1)
    expected_policy = -(1.0 * -math.log(7) + (-1.0) * math.log(0.75)) / 2
    assert out.policy_loss.item() == pytest.approx(expected_policy)
    assert out.entropy.item() == pytest.approx((math.log(7) + h1) / 2)
    # The bonus is subtracted: more entropy means a lower loss.
    assert out.loss.item() == pytest.approx(expected_policy - 0.1 * (math.log(7) + h1) / 2)
    assert out.value_loss.item() == 0.0
    out.loss.backward()
    grad = logits.grad
    assert torch.isfinite(grad).all()
    assert grad[1, 2:].abs().max() == 0  # illegal columns get no gradient
    # Row 1 has advantage -1 on move 0: gradient descent lowers that move's logit.
    assert grad[1, 0] > 0


def test_entropy_bonus_pushes_towards_uniform_and_value_term():
    logits = torch.tensor([[2.0, 0, 0, 0, 0, 0, 0]], requires_grad=True)
    out = reinforce_loss(logits, ALL, torch.tensor([0]), torch.zeros(1), beta=1.0)
    out.loss.backward()
    # Only the entropy term acts: descending it lowers the dominant logit.
    assert logits.grad[0, 0] > 0 and (logits.grad[0, 1:] < 0).all()
    value = torch.tensor([0.5, 0.0])
    out = reinforce_loss(
        torch.zeros(2, 7),
        torch.cat([ALL, ALL]),
        torch.tensor([0, 1]),
        torch.zeros(2),
        beta=0.0,
        value=value,
        returns=torch.tensor([1.0, -1.0]),
        value_coef=2.0,
    )
    assert out.value_loss.item() == pytest.approx((0.25 + 1.0) / 2)
    assert out.loss.item() == pytest.approx(math.log(7) * 0 + 2.0 * 0.625)


def test_masked_entropy_of_uniform_rows():
    assert masked_entropy(torch.zeros(1, 7), ALL).item() == pytest.approx(math.log(7))
    assert masked_entropy(torch.zeros(1, 7), TWO).item() == pytest.approx(math.log(2))
    one = torch.tensor([[False, False, False, True, False, False, False]])
    assert masked_entropy(torch.randn(1, 7), one).item() == pytest.approx(0.0)


def test_beta_anneals_linearly():
    assert beta_at(0.0, 0.1, 0.01) == pytest.approx(0.1)
    assert beta_at(0.5, 0.1, 0.0) == pytest.approx(0.05)
    assert beta_at(1.0, 0.1, 0.01) == pytest.approx(0.01)
    assert beta_at(0.7, 0.05, None) == 0.05


# ---------------------------------------------------------------------------
# Returns
# ---------------------------------------------------------------------------


def test_discounted_returns_count_the_movers_own_remaining_moves():
    # A 7-ply game won by the first player: its moves at plies 0, 2, 4, 6; the loser's at 1, 3, 5.
    ply = torch.arange(7)
    length = torch.full((7,), 7)
    outcome = torch.tensor([1.0, -1, 1, -1, 1, -1, 1])
    r = discounted_returns(outcome, ply, length, gamma=0.5)
    assert r.tolist() == pytest.approx([0.125, -0.25, 0.25, -0.5, 0.5, -1.0, 1.0])
    assert discounted_returns(outcome, ply, length, 1.0).tolist() == outcome.tolist()
    with pytest.raises(ValueError, match="ply"):
        discounted_returns(outcome, ply + 1, length, 1.0)


def test_discounted_returns_match_a_per_game_reference():
    gamma = 0.9
    m = play_match(RandomPlayer(), RandomPlayer(), 40, seed=3, record=True)
    r = discounted_returns(m.returns, m.ply, m.length[m.game], gamma)
    for g in range(40):
        sel = (m.game == g).nonzero().squeeze(1)
        length = int(m.length[g])
        first_result = int(m.result[g]) if bool(m.a_first[g]) else -int(m.result[g])
        for i in sel.tolist():
            p = int(m.ply[i])
            mover_result = first_result if p % 2 == 0 else -first_result
            later = len(range(p + 2, length, 2))  # the mover's moves after this one
            assert r[i].item() == pytest.approx(gamma**later * mover_result)


class _RankedPolicy(nn.Module):
    """Prefers column 0, then 1, ...: sampling at temperature 1 is as good as greedy."""

    def forward(self, boards):
        logits = 100.0 * (7 - torch.arange(7.0)).expand(boards.shape[0], 7)
        return logits, torch.zeros(boards.shape[0])


class _FixedPolicy(nn.Module):
    """Always (almost surely) plays ``column``; value 0."""

    def __init__(self, column: int):
        super().__init__()
        self.column = column

    def forward(self, boards):
        logits = torch.zeros(boards.shape[0], 7)
        logits[:, self.column] = 100.0
        return logits, torch.zeros(boards.shape[0])


def test_rollout_assigns_returns_to_the_learner_in_both_colours():
    # The learner stacks column 1, the opponent column 2: whoever starts wins at ply 6.
    b = play_rollout(_FixedPolicy(0), PolicyPlayer(_FixedPolicy(1)), 2, seed=0, gamma=0.5)
    assert b.result.tolist() == [1, -1] and b.length.tolist() == [7, 7]
    order = torch.argsort(b.game * 100 + b.ply)  # records are ply-major; read them game by game
    assert b.game[order].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert b.ply[order].tolist() == [0, 2, 4, 6, 1, 3, 5]
    assert b.moves.tolist() == [0] * 7
    assert b.outcome[order].tolist() == [1, 1, 1, 1, -1, -1, -1]
    assert b.returns[order].tolist() == pytest.approx([0.125, 0.25, 0.5, 1.0, -0.25, -0.5, -1.0])
    # Boards are from the learner's view: in game 1 the opponent's stone is already down.
    first_of_game_1 = order[4]
    assert torch.equal(b.boards[first_of_game_1], bb.to_boards(bb.state_from_moves(["2"]))[0])
    assert b.legal.all()


# ---------------------------------------------------------------------------
# Opponent swap rule
# ---------------------------------------------------------------------------


def test_swap_rule_needs_a_full_window_above_threshold():
    rule = SwapRule(threshold=0.52, window=100)
    assert not rule.update(50, 100)  # 50%
    assert not rule.update(51, 100)  # the window slides to the last 100 games: 51%
    assert rule.update(52, 100)  # 52% -> swap, the window restarts
    assert rule.games == 0
    assert not rule.update(40, 50)  # 80%, but only 50 games against the new copy
    assert rule.update(13, 50)  # 53 / 100
    assert not rule.update(60, 60) and not rule.update(0, 60)  # 60 / 120 = 50%: keep both
    assert rule.games == 120 and rule.win_rate == pytest.approx(0.5)
    clone = SwapRule(0.52, 100)
    clone.load_state_dict(rule.state_dict())
    assert clone.batches == rule.batches
    with pytest.raises(ValueError, match="wins"):
        rule.update(5, 4)
    with pytest.raises(ValueError, match="swap_threshold"):
        SwapRule(0.0, 10)


def _tiny_cfg(**kw) -> ReinforceConfig:
    base = {"games_per_batch": 16, "batches_per_chunk": 3, "lr": 1e-2, "swap_window": 16}
    return ReinforceConfig(**{**base, **kw})


def _same_weights(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_train_chunk_refreshes_the_frozen_copy_by_the_rule():
    torch.set_num_threads(1)
    model = init_policy({"arch": "mlp", "hidden": [16]}, seed=0)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    # Threshold 1.0 over 16 games: never met by a copy of itself, the copy stays the start model.
    net, state, metrics = train_chunk(model, _tiny_cfg(swap_threshold=1.0))
    assert metrics["opponent_swaps"] == 0 and state["opponent_version"] == 0
    assert _same_weights(state["opponent"], start)
    assert not _same_weights(net.state_dict(), start)  # the learner did move
    assert _same_weights(model.state_dict(), start)  # the input model is untouched
    # Threshold 0.01: every batch with a win refreshes the copy to the current learner.
    net, state, metrics = train_chunk(model, _tiny_cfg(swap_threshold=0.01))
    assert metrics["opponent_swaps"] == 3 and state["opponent_version"] == 3
    assert _same_weights(state["opponent"], net.state_dict())
    _, state, _ = train_chunk(model, _tiny_cfg(opponent="random_punisher"))
    assert state["opponent"] is None


# ---------------------------------------------------------------------------
# Chunks resume exactly
# ---------------------------------------------------------------------------


def test_two_chunks_equal_one_long_chunk_through_a_saved_state():
    torch.set_num_threads(1)
    model = init_policy({"arch": "mlp", "hidden": [16]}, seed=1)
    cfg = _tiny_cfg(batches_per_chunk=2, beta=0.1, beta_final=0.0, baseline="mean")
    one, one_state, _ = train_chunk(model, cfg, None, chunk=1, num_chunks=1)

    half = _tiny_cfg(batches_per_chunk=1, beta=0.1, beta_final=0.0, baseline="mean")
    a, state, m1 = train_chunk(model, half, None, chunk=1, num_chunks=2)
    buf = io.BytesIO()
    torch.save(state, buf)  # as TorchStateDataset does
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    b, state, m2 = train_chunk(a, half, state, chunk=2, num_chunks=2)
    assert m1["beta_start"] == pytest.approx(0.1) and m2["beta_start"] == pytest.approx(0.05)
    assert state["step"] == 2 and b.meta["chunk"] == 2
    for k, v in one.state_dict().items():
        torch.testing.assert_close(b.state_dict()[k], v)
    torch.testing.assert_close(state["baseline"], one_state["baseline"])


def test_value_baseline_trains_the_value_head():
    torch.set_num_threads(1)
    model = init_policy({"arch": "mlp", "hidden": [16]}, seed=2)
    net, _, metrics = train_chunk(
        model, _tiny_cfg(baseline="value", opponent="random_punisher", batches_per_chunk=2)
    )
    assert metrics["value_loss"] > 0
    moved = [k for k, v in net.state_dict().items() if not torch.equal(v, model.state_dict()[k])]
    assert any(k.startswith("value.") for k in moved)


def test_bad_state_and_config_are_named():
    model = init_policy({"arch": "mlp", "hidden": [8]})
    with pytest.raises(ValueError, match="trainer state"):
        train_chunk(model, _tiny_cfg(), {"format": "something else"})
    _, state, _ = train_chunk(model, _tiny_cfg(batches_per_chunk=1))
    bigger = init_policy({"arch": "mlp", "hidden": [16]})
    with pytest.raises(ValueError, match="optimizer does not match the model: exp_avg"):
        train_chunk(bigger, _tiny_cfg(), state)
    with pytest.raises(ValueError, match="opponent does not match the model"):
        train_chunk(bigger, _tiny_cfg(), {**state, "optimizer": None})
    with pytest.raises(ValueError, match="opponent"):
        ReinforceConfig(opponent="mirror")
    with pytest.raises(ValueError, match="gamma"):
        ReinforceConfig(gamma=0.0)
    with pytest.raises(ValueError, match="num_games"):
        ReinforceEvalConfig(num_games=100)


# ---------------------------------------------------------------------------
# Diversity and init
# ---------------------------------------------------------------------------


def test_distinct_games_counts_move_sequences():
    greedy = PolicyPlayer(_FixedPolicy(3))
    assert distinct_games(play_match(greedy, greedy, 10, seed=0, record=True)) == 1
    many = distinct_games(play_match(RandomPlayer(), RandomPlayer(), 50, seed=0, record=True))
    assert many == 50
    d = selfplay_diversity(_RankedPolicy(), num_games=6)
    assert d["distinct_games"] == 1 and d["policy_entropy"] == pytest.approx(0, abs=1e-6)
    with pytest.raises(ValueError, match="record"):
        distinct_games(play_match(greedy, greedy, 2))


def test_init_policy_is_seeded_and_leaves_the_global_rng_alone():
    before = torch.get_rng_state()
    a = init_policy("mlp", seed=5)
    b = init_policy("mlp", seed=5)
    assert torch.equal(torch.get_rng_state(), before)
    assert _same_weights(a.state_dict(), b.state_dict())
    assert not _same_weights(a.state_dict(), init_policy("mlp", seed=6).state_dict())
