"""AlphaZero training: loss on hand-computed examples, mirror augmentation, schedule, guard."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core import device
from connect_zero_pipeline.core.config.training import TrainConfig
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.training import (
    PI_COLUMNS,
    TrainingDivergedError,
    alphazero_loss,
    cosine_lr,
    games_to_tensors,
    train_model,
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
    boards, pi, z = games_to_tensors([table], mirror=True)
    assert boards.shape == (4, 6, 7) and pi.shape == (4, 7) and z.tolist() == [1, -1, 1, -1]
    # The mirror of "1" is "7": the opponent's stone sits in the rightmost column.
    expected = bb.to_boards(bb.state_from_moves(["7", "76"]))
    assert torch.equal(boards[2:], expected)
    assert pi[2].tolist() == pytest.approx([0, 0, 0, 0, 0, 0.3, 0.7])
    assert pi[3].tolist() == pytest.approx([0.9, 0.1, 0, 0, 0, 0, 0])
    plain, _, _ = games_to_tensors([table], mirror=False)
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


def test_bfloat16_learns_as_float32_does_at_equal_steps():
    """The same data, seed and steps in bfloat16 (autocast) and float32: both fit the target,
    their losses within a few percent; the weights stay float32 either way."""
    boards, pi, z = _toy_data()
    cfg = TrainConfig(batch_size=64, samples_per_position=25, lr=5e-3, lr_min=1e-4)
    results = {}
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 16})
        trained, metrics = train_model(model, boards, pi, z, cfg, num_steps=100, dtype=dtype)
        assert metrics["bfloat16"] == float(dtype == torch.bfloat16)
        assert {p.dtype for p in trained.parameters()} == {torch.float32}
        results[dtype] = metrics
    f32, bf16 = results[torch.float32], results[torch.bfloat16]
    assert bf16["policy_loss"] < 0.3 and bf16["value_loss"] < 0.2  # it learns
    assert abs(bf16["loss"] - f32["loss"]) < 0.1 * f32["loss"] + 0.02, (f32, bf16)


def test_auto_precision_is_bfloat16_only_where_the_cpu_has_it(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    for flags, found in (("fpu avx2 fma", None), ("fpu avx512f avx512_bf16", "avx512_bf16"),
                         ("avx512_bf16 amx_bf16 amx_tile", "amx_bf16")):  # fmt: skip
        cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert device.native_bf16(str(cpuinfo)) == found
    assert device.native_bf16(str(tmp_path / "none")) is None  # not Linux
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    monkeypatch.setattr(device, "native_bf16", lambda: None)
    assert device.compute_dtype("auto", cpu) == (torch.float32, "float32 (auto: no native "
                                                                "bfloat16 on this CPU)")  # fmt: skip
    assert device.compute_dtype("bfloat16", cpu) == (torch.bfloat16, "bfloat16 (asked for)")
    monkeypatch.setattr(device, "native_bf16", lambda: "avx512_bf16")
    assert device.compute_dtype("auto", cpu) == (torch.bfloat16,
                                                 "bfloat16 (auto: the CPU's avx512_bf16)")  # fmt: skip
    assert device.compute_dtype("auto", cuda)[0] == torch.float32  # TF32 already on CUDA
    assert device.compute_dtype("float32", cpu)[0] == torch.float32
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16, auto, "
                                         "got 'fp8'"):  # fmt: skip
        TrainConfig(precision="fp8")


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
    _, _, z = games_to_tensors([table], mirror=False, root_value_weight=0.25)
    assert z.tolist() == pytest.approx([0.75, -0.625])
    _, _, z0 = games_to_tensors([table], mirror=False)
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
    boards, pi, z = games_to_tensors([table], mirror=False, merge_duplicates=True)
    assert boards.shape == (3, 6, 7)  # first-seen order: "4", "1", "12"
    assert torch.equal(boards, bb.to_boards(bb.state_from_moves(["4", "1", "12"])))
    assert pi[0].tolist() == pytest.approx([0, 0, 1 / 3, 1 / 3, 1 / 3, 0, 0])
    assert z.tolist() == pytest.approx([0.0, -1.0, 0.5])
    # With mirroring, "4" and its mirror coincide (6 copies, one row); "1" and "7" stay apart.
    boards, pi, z = games_to_tensors([table], mirror=True, merge_duplicates=True)
    assert boards.shape == (5, 6, 7)
    assert pi.sum(1).tolist() == pytest.approx([1.0] * 5)
    assert z[0].item() == pytest.approx(0.0)
    plain, _, _ = games_to_tensors([table], mirror=True)
    assert plain.shape[0] == 10
