"""AlphaZero training: loss on hand-computed examples, mirror augmentation, schedule, guard."""

from __future__ import annotations

import math
from copy import deepcopy
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
import torch

from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core.config.training import TrainConfig
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.training import (
    PI_COLUMNS,
    TrainingDivergedError,
    alphazero_loss,
    cosine_lr,
    games_to_tensors,
    lambda_returns,
    sampling_weights,
    soft_policy_loss,
    train_model,
    train_step,
    train_steps,
)


def test_loss_on_a_hand_computed_example():
    # Uniform logits: CE = log 7 whatever pi is. Value 0.5 vs z = 1 and -1: MSE = (0.25 + 2.25)/2.
    logits = torch.zeros(2, 7)
    pi = torch.tensor([[1.0, 0, 0, 0, 0, 0, 0], [0, 0, 0.5, 0.5, 0, 0, 0]])
    value = torch.tensor([0.5, 0.5])
    z = torch.tensor([1.0, -1.0])
    loss, policy, val = alphazero_loss(logits, value, pi, z, value_coef=2.0)
    assert policy.item() == pytest.approx(math.log(7))
    assert val.item() == pytest.approx(1.25)
    assert loss.item() == pytest.approx(math.log(7) + 2.5)
    # A confident correct policy: logits (ln 3, 0, ...) gives p0 = 3/9 = 1/3.
    logits = torch.tensor([[math.log(3.0), 0, 0, 0, 0, 0, 0]])
    _, policy, _ = alphazero_loss(logits, torch.zeros(1), pi[:1], torch.zeros(1), 1.0)
    assert policy.item() == pytest.approx(math.log(3))


def _table(moves: list[str], pis: list[list[float]], zs: list[float]) -> pd.DataFrame:
    pairs = [bb.moves_to_bitboards(m) for m in moves]
    df = pd.DataFrame(
        {
            "position": np.array([p for p, _ in pairs], dtype=np.uint64),
            "mask": np.array([m for _, m in pairs], dtype=np.uint64),
            "z": np.array(zs, dtype=np.float32),
        }
    )
    for c, name in enumerate(PI_COLUMNS):
        df[name] = np.array([p[c] for p in pis], dtype=np.float32)
    return df


def test_mirror_augmentation_mirrors_boards_and_pi():
    table = _table(["1", "12"], [[0.7, 0.3, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0.1, 0.9]], [1.0, -1.0])
    boards, pi, z, _ = games_to_tensors([table], mirror=True)
    assert boards.shape == (4, 6, 7) and pi.shape == (4, 7) and z.tolist() == [1, -1, 1, -1]
    # The mirror of "1" is "7": the opponent's stone sits in the rightmost column.
    expected = bb.to_boards(bb.state_from_moves(["7", "76"]))
    assert torch.equal(boards[2:], expected)
    assert pi[2].tolist() == pytest.approx([0, 0, 0, 0, 0, 0.3, 0.7])
    assert pi[3].tolist() == pytest.approx([0.9, 0.1, 0, 0, 0, 0, 0])
    plain, _, _, _ = games_to_tensors([table], mirror=False)
    assert plain.shape[0] == 2


def test_cosine_schedule_ends_at_both_rates():
    assert cosine_lr(0.0, 1e-3, 1e-5) == pytest.approx(1e-3)
    assert cosine_lr(1.0, 1e-3, 1e-5) == pytest.approx(1e-5)
    assert cosine_lr(0.5, 1e-3, 1e-5) == pytest.approx((1e-3 + 1e-5) / 2)


def _toy_data(n: int = 256):
    # Every position is the empty board + one stone; the target move is the mirror column.
    gen = torch.Generator().manual_seed(0)
    cols = torch.randint(0, 7, (n,), generator=gen)
    state = bb.play(bb.initial_state(n), cols).state
    boards = bb.to_boards(state)
    pi = torch.nn.functional.one_hot(6 - cols, 7).float()
    z = torch.where(cols < 3, 1.0, -1.0)
    return boards, pi, z


def test_training_fits_a_learnable_target_and_leaves_the_input_model_alone():
    torch.manual_seed(0)
    model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 16})
    before = {k: v.clone() for k, v in model.state_dict().items()}
    boards, pi, z = _toy_data()
    cfg = TrainConfig(batch_size=64, samples_per_position=25, lr=5e-3, lr_min=1e-4)
    steps = train_steps(cfg, new_rows=256)
    assert steps == 100
    trained, metrics = train_model(model, boards, pi, z, cfg, num_steps=steps)
    assert metrics["policy_loss"] < 0.3 and metrics["value_loss"] < 0.2
    assert metrics["num_steps"] == 25 * 4 and metrics["lr_end"] < metrics["lr_start"]
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
    with torch.no_grad():
        logits, value = trained(boards[:32])
    assert (logits.argmax(1) == pi[:32].argmax(1)).float().mean() > 0.95
    assert (value.sign() == z[:32]).float().mean() > 0.95


def test_divergence_guard_raises_on_nan_and_on_exploding_loss():
    model = build_model("mlp")
    boards, pi, z = _toy_data(64)
    bad_z = z.clone()
    bad_z[5] = float("nan")
    with pytest.raises(TrainingDivergedError, match="minibatch loss nan"):
        train_model(model, boards, pi, bad_z, TrainConfig(batch_size=16), num_steps=4)
    with pytest.raises(TrainingDivergedError, match="limit max_loss=0.001"):
        train_model(model, boards, pi, z, TrainConfig(batch_size=16, max_loss=1e-3), num_steps=4)


def test_bad_config_values_are_named():
    with pytest.raises(ValueError, match="lr_min must be in \\(0, lr=0.001\\], got 0.01"):
        TrainConfig(lr=1e-3, lr_min=1e-2)
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        TrainConfig(batch_size=0)


def test_value_target_mixes_in_the_root_value():
    table = _table(["1", "12"], [[1, 0, 0, 0, 0, 0, 0]] * 2, [1.0, -1.0])
    table["root_value"] = np.array([0.0, 0.5], dtype=np.float32)
    _, _, z, _ = games_to_tensors([table], mirror=False, root_value_weight=0.25)
    assert z.tolist() == pytest.approx([0.75, -0.625])
    _, _, z0, _ = games_to_tensors([table], mirror=False)
    assert z0.tolist() == [1.0, -1.0]


def test_merging_duplicates_averages_the_targets_of_each_distinct_board():
    # "4" three times (a symmetric board: its mirror is itself), "1" once, "12" once.
    table = _table(
        ["4", "1", "4", "12", "4"],
        [
            [0, 0, 0, 1, 0, 0, 0],
            [1, 0, 0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, 1, 0, 0],
        ],
        [1.0, -1.0, -1.0, 0.5, 0.0],
    )
    boards, pi, z, _ = games_to_tensors([table], mirror=False, merge_duplicates=True)
    assert boards.shape == (3, 6, 7)  # first-seen order: "4", "1", "12"
    assert torch.equal(boards, bb.to_boards(bb.state_from_moves(["4", "1", "12"])))
    assert pi[0].tolist() == pytest.approx([0, 0, 1 / 3, 1 / 3, 1 / 3, 0, 0])
    assert z.tolist() == pytest.approx([0.0, -1.0, 0.5])
    # With mirroring, "4" and its mirror coincide (6 copies, one row); "1" and "7" stay apart.
    boards, pi, z, _ = games_to_tensors([table], mirror=True, merge_duplicates=True)
    assert boards.shape == (5, 6, 7)
    assert pi.sum(1).tolist() == pytest.approx([1.0] * 5)
    assert z[0].item() == pytest.approx(0.0)
    plain, _, _, _ = games_to_tensors([table], mirror=True)
    assert plain.shape[0] == 10


class _Recorder(torch.nn.Module):
    """A network that records the boards each training step sees (on the class: training
    works on a deep copy)."""

    seen: ClassVar[list[torch.Tensor]] = []

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(7))

    def forward(self, boards):
        _Recorder.seen.append(boards.clone())
        n = boards.shape[0]
        return self.bias.expand(n, 7), torch.zeros(n) + 0.0 * self.bias.sum()


def test_sampling_weights_mix_uniform_and_surprise():
    surprise = torch.tensor([0.0, 1.0, 3.0, 0.0])
    torch.testing.assert_close(sampling_weights(surprise, 0.0), torch.full((4,), 0.25,
                               dtype=torch.float64))  # fmt: skip
    torch.testing.assert_close(sampling_weights(surprise, 1.0),
                               torch.tensor([0.0, 0.25, 0.75, 0.0], dtype=torch.float64))  # fmt: skip
    torch.testing.assert_close(sampling_weights(surprise, 0.5),
                               torch.tensor([0.125, 0.25, 0.5, 0.125], dtype=torch.float64))  # fmt: skip
    torch.testing.assert_close(sampling_weights(torch.zeros(4), 0.5), torch.full((4,), 0.25,
                               dtype=torch.float64))  # fmt: skip


def test_surprise_weighting_trains_on_the_surprising_positions():
    first, second = torch.arange(49) // 7, torch.arange(49) % 7  # 49 distinct boards
    boards = bb.to_boards(bb.play(bb.play(bb.initial_state(49), first).state, second).state)
    assert len(torch.unique(boards.flatten(1), dim=0)) == 49
    z, pi = torch.zeros(49), torch.full((49, 7), 1 / 7)
    surprise = torch.zeros(49)
    surprise[7] = 0.8  # only board 7 surprised the network
    cfg = TrainConfig(batch_size=16, surprise_weight=1.0)
    _Recorder.seen.clear()
    _, metrics = train_model(_Recorder(), boards, pi, z, cfg, num_steps=8, surprise=surprise)
    seen = torch.cat(_Recorder.seen)
    assert seen.shape[0] == 2 * 49 and (seen == boards[7]).all()  # two passes of 49 draws
    assert metrics["policy_surprise"] == pytest.approx(0.8 / 49)
    # half uniform: board 7 is drawn about 1/2 + 1/98 of the time, the others evenly
    _Recorder.seen.clear()
    train_model(_Recorder(), boards, pi, z, TrainConfig(batch_size=64, surprise_weight=0.5),
                num_steps=40, surprise=surprise)  # fmt: skip
    seen = torch.cat(_Recorder.seen)
    share = (seen == boards[7]).flatten(1).all(1).float().mean()
    assert 0.42 < share < 0.6
    others = {tuple(b.flatten().tolist()) for b in seen} - {tuple(boards[7].flatten().tolist())}
    assert len(others) > 40
    # off (the default): shuffled passes, no surprise read or reported
    _Recorder.seen.clear()
    _, metrics = train_model(_Recorder(), boards, pi, z, TrainConfig(batch_size=49), num_steps=2)
    assert "policy_surprise" not in metrics
    assert all(len(torch.unique(b.flatten(1), dim=0)) == 49 for b in _Recorder.seen)
    with pytest.raises(ValueError, match=r"surprise_weight=0.5 needs each sample's surprise, "
                                         r"\[49\], got None"):  # fmt: skip
        train_model(_Recorder(), boards, pi, z, TrainConfig(surprise_weight=0.5), num_steps=1)
    with pytest.raises(ValueError, match="surprise_weight must be in \\[0, 1\\], got 1.5"):
        TrainConfig(surprise_weight=1.5)


def test_the_window_carries_each_positions_surprise_through_mirror_and_merge():
    table = _table(["1", "1", "7"], [[1, 0, 0, 0, 0, 0, 0]] * 3, [1.0, 1.0, -1.0])
    table["root_value"] = np.float32(0.0)
    with pytest.raises(ValueError, match=r"table #0 lacks column\(s\) \['surprise'\]"):
        games_to_tensors([table], surprise=True)
    table["surprise"] = np.array([0.2, 0.4, 1.0], dtype=np.float32)
    boards, _, _, surprise = games_to_tensors([table], mirror=True, merge_duplicates=True,
                                              surprise=True)  # fmt: skip
    # "1" twice (mean 0.3), "7" once; "1" mirrored is "7": the same board, four rows
    as_list = {tuple(b.flatten().tolist()): float(k) for b, k in zip(boards, surprise, strict=True)}
    assert len(as_list) == 2
    assert sorted(as_list.values()) == pytest.approx([(0.2 + 0.4 + 1.0) / 3] * 2)
    assert games_to_tensors([table]).surprise is None


def test_the_soft_policy_target_is_the_flattened_search_policy():
    pi = torch.tensor([[0.81, 0.16, 0.01, 0.01, 0.01, 0.0, 0.0]])
    soft = pi**0.25 / (pi**0.25).sum()
    logits = torch.tensor([[1.0, 0.5, 0.0, -1.0, 2.0, 0.0, 0.0]])
    expected = -(soft * torch.log_softmax(logits, 1)).sum()
    assert soft_policy_loss(logits, pi).item() == pytest.approx(expected.item())
    assert soft[0, 0] < 0.45 and soft[0, 5] == 0  # flatter, and illegal columns stay 0


def test_a_network_with_a_soft_policy_head_adds_its_weighted_loss():
    boards, pi, z = _toy_data(32)
    torch.manual_seed(0)
    net = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "soft_policy_planes": 1})
    losses = {}
    for weight in (0.0, 8.0):
        copy = deepcopy(net)
        opt = torch.optim.SGD(copy.parameters(), lr=0.0)
        cfg = TrainConfig(soft_policy_weight=weight)
        losses[weight] = train_step(copy, opt, boards, pi, z, cfg)
    _, _, soft_logits = net.train().training_heads(boards)
    extra = 8.0 * soft_policy_loss(soft_logits, pi).item()
    assert losses[8.0][0].item() == pytest.approx(losses[0.0][0].item() + extra, rel=1e-4)
    assert losses[8.0][1].item() == pytest.approx(losses[0.0][1].item())  # the policy loss alone


def test_lambda_returns_bootstrap_from_the_later_root_values():
    # one game of 4 plies won by its last mover (z alternates), and one of 2 plies whose
    # middle row was not kept (playout-cap randomisation): rows out of order on purpose
    table = pd.DataFrame({
        "generation": np.int32([1, 1, 1, 1, 2, 2]),
        "game": np.int32([5, 5, 5, 5, 5, 5]),
        "ply": np.int8([3, 0, 2, 1, 0, 2]),
        "z": np.float32([1.0, -1.0, -1.0, 1.0, 0.5, 0.5]),
        "root_value": np.float32([0.9, 0.1, -0.4, 0.2, 0.3, 0.6]),
    })  # fmt: skip
    np.testing.assert_allclose(lambda_returns(table, 1.0), table["z"])
    lam = 0.5
    g3 = 1.0
    g2 = -((1 - lam) * 0.9 + lam * g3)
    g1 = -((1 - lam) * -0.4 + lam * g2)
    g0 = -((1 - lam) * 0.2 + lam * g1)
    h2 = 0.5
    h0 = (1 - lam) * 0.6 + lam * h2  # two plies on: the same side to move
    np.testing.assert_allclose(lambda_returns(table, lam), [g3, g0, g2, g1, h0, h2], rtol=1e-6)
    np.testing.assert_allclose(lambda_returns(table, 0.0)[[1, 4]], [-0.2, 0.6], rtol=1e-6)
    assert lambda_returns(table.iloc[:0], 0.5).shape == (0,)
    # the value target takes it in place of z
    table[PI_COLUMNS] = np.float32(1 / 7)
    table["position"], table["mask"] = np.uint64(0), np.uint64(0)
    _, _, z, _ = games_to_tensors([table], mirror=False, value_lambda=lam)
    np.testing.assert_allclose(z, [g3, g0, g2, g1, h0, h2], rtol=1e-6)
    with pytest.raises(ValueError, match="value_lambda must be in \\[0, 1\\], got -0.1"):
        TrainConfig(value_lambda=-0.1)


def test_the_root_values_weight_can_grow_over_the_opening():
    table = _table(["", "4", "44", "444", "4444"], [[1, 0, 0, 0, 0, 0, 0]] * 5,
                   [1.0, -1.0, 1.0, -1.0, 1.0])  # fmt: skip
    table["root_value"] = np.float32(0.2)
    table["ply"] = np.int8([0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['ply'\]"):
        games_to_tensors([table.drop(columns="ply")], root_value_weight=0.5,
                         root_value_ramp_plies=4)  # fmt: skip
    _, _, z, _ = games_to_tensors([table], mirror=False, root_value_weight=0.5,
                                  root_value_ramp_plies=4)  # fmt: skip
    w = np.array([0.0, 0.125, 0.25, 0.375, 0.5])  # 0 at ply 0, 0.5 from ply 4 on
    zs = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    np.testing.assert_allclose(z, (1 - w) * zs + w * 0.2, rtol=1e-6)
    _, _, flat, _ = games_to_tensors([table], mirror=False, root_value_weight=0.5)
    np.testing.assert_allclose(flat, 0.5 * zs + 0.1, rtol=1e-6)
    with pytest.raises(ValueError, match="root_value_ramp_plies must be an integer in"):
        TrainConfig(root_value_ramp_plies=-1)
