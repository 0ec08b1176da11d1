"""Models: the protocol of docs/architecture.md §3, presets, config round trips and bad configs."""

from __future__ import annotations

import io
import json

import pytest
import torch

from connect_zero_pipeline.core.bitboard import state_from_moves, to_boards
from connect_zero_pipeline.core.config.models import PRESETS, parameter_count, resolve_config
from connect_zero_pipeline.core.models import ResNet, SimpleMLP, build_model, count_parameters


def _boards() -> torch.Tensor:
    return to_boards(state_from_moves(["", "4", "4453", "1234567"]))  # (4, 6, 7) int8


@pytest.mark.parametrize("preset", ["tiny", "small", "mlp"])
def test_protocol_batch_and_single(preset):
    torch.manual_seed(0)
    model = build_model(preset).eval()
    boards = _boards()
    with torch.no_grad():
        logits, value = model(boards)
        single_logits, single_value = model(boards[2])
    assert logits.shape == (4, 7) and logits.dtype == torch.float32
    assert value.shape == (4,) and value.dtype == torch.float32
    assert bool(((value >= -1) & (value <= 1)).all())
    assert single_logits.shape == (7,) and single_value.shape == ()
    torch.testing.assert_close(single_logits, logits[2], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(single_value, value[2], atol=1e-5, rtol=1e-5)


def test_connectzero_preset_forwards():
    model = build_model({"preset": "connectzero"}).eval()
    assert model.config == {
        "arch": "resnet",
        "blocks": 19,
        "channels": 128,
        "value_hidden": 128,
        "policy_planes": 2,
        "value_planes": 1,
    }
    with torch.no_grad():
        logits, value = model(_boards()[:2])
    assert logits.shape == (2, 7) and value.shape == (2,)


def test_parameter_counts_grow_with_presets():
    counts = {name: count_parameters(build_model(name)) for name in PRESETS}
    assert counts["mlp"] < counts["tiny"] < counts["cpu"] < counts["small"] < counts["connectzero"]
    assert counts["tiny"] == 58_714  # reported in the issue note; changes must be deliberate
    assert counts["cpu"] == 170_906  # the CPU recipe's network (README, docs/alphazero.md)


def test_head_widths_are_configurable_and_default_to_alphazeros():
    narrow = build_model({"arch": "resnet", "blocks": 1, "channels": 8})
    wide = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "policy_planes": 5,
                        "value_planes": 3})  # fmt: skip
    assert narrow.policy_fc.in_features == 2 * 42 and narrow.value_fc[0].in_features == 42
    assert wide.policy_fc.in_features == 5 * 42 and wide.value_fc[0].in_features == 3 * 42
    for model in (narrow, wide):
        assert count_parameters(model) == parameter_count(resolve_config(model.config))
        logits, value = model(_boards()[:3])
        assert logits.shape == (3, 7) and value.shape == (3,)
    # A checkpoint written before the head keys existed has AlphaZero's heads: it loads as saved.
    old = {k: v for k, v in narrow.config.items() if not k.endswith("_planes")}
    restored = build_model(old)
    restored.load_state_dict(narrow.state_dict())
    assert restored.config == narrow.config


def test_resnet_planes_encode_side_and_parity():
    boards = to_boards(state_from_moves(["4", "44"]))  # one stone (opponent's), two stones
    planes = ResNet.planes(boards)  # (2, 3, 6, 7)
    assert planes.shape == (2, 3, 6, 7)
    assert planes[0, 0].sum() == 0 and planes[0, 1].sum() == 1  # the stone is the opponent's
    assert bool((planes[0, 2] == 1).all())  # odd stone count
    assert planes[1, 0].sum() == 1 and planes[1, 1].sum() == 1
    assert bool((planes[1, 2] == 0).all())  # even stone count


@pytest.mark.parametrize("preset", ["tiny", "mlp"])
def test_checkpoint_round_trip_with_weights_only(preset):
    torch.manual_seed(1)
    model = build_model(preset).eval()
    buffer = io.BytesIO()
    torch.save({"config": model.config, "state_dict": model.state_dict()}, buffer)
    buffer.seek(0)
    blob = torch.load(buffer, weights_only=True)
    json.dumps(blob["config"])  # a plain, JSON-serialisable dict
    clone = build_model(blob["config"]).eval()
    clone.load_state_dict(blob["state_dict"])
    with torch.no_grad():
        for a, b in zip(model(_boards()), clone(_boards()), strict=True):
            torch.testing.assert_close(a, b)


def test_partial_config_and_preset_override():
    assert build_model({"arch": "resnet"}).config == resolve_config("tiny")
    model = build_model({"preset": "tiny", "channels": 16})
    assert model.config["channels"] == 16 and model.config["blocks"] == 3
    assert isinstance(build_model({"arch": "mlp", "hidden": [16]}), SimpleMLP)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"preset": "huge"}, "'huge'"),
        ({"arch": "transformer"}, "'transformer'"),
        ({"preset": "tiny", "dropout": 0.1}, "'dropout'"),
        ({"arch": "resnet", "blocks": 0}, "'blocks'"),
        ({"arch": "resnet", "channels": "32"}, "'channels'"),
        ({"arch": "resnet", "value_planes": 0}, "'value_planes'"),
        ({"arch": "resnet", "policy_planes": 2000}, "'policy_planes'"),
        ({"arch": "mlp", "hidden": []}, "'hidden'"),
        ({"arch": "mlp", "hidden": [64, -1]}, "'hidden'"),
    ],
)
def test_bad_configs_name_the_offender(config, named):
    with pytest.raises(ValueError, match=named):
        build_model(config)


def test_bad_board_shape():
    with pytest.raises(ValueError, match="boards must be"):
        build_model("tiny")(torch.zeros(2, 7, 6, dtype=torch.int8))


def test_gradients_reach_every_parameter():
    model = build_model("tiny").train()
    logits, value = model(_boards())
    (logits.logsumexp(1).sum() + value.sum()).backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in model.parameters())
