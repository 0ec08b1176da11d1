"""``bench precision``: the shipped ONNX model rebuilt in torch, played in fp32 and bf16."""

from __future__ import annotations

import torch

from connect_zero_pipeline.bench.precision import selfplay_rates, shipped_network
from connect_zero_pipeline.commands.model_source import pretrained_model
from connect_zero_pipeline.core.export import random_positions


def test_the_rebuilt_network_is_the_shipped_onnx_model():
    boards = random_positions(256, seed=3)
    onnx, _ = pretrained_model()
    with torch.no_grad():
        logits, value = shipped_network()(boards)
    expected_logits, expected_value = onnx(boards)
    assert torch.allclose(logits, expected_logits, atol=1e-4)
    assert torch.allclose(value, expected_value, atol=1e-5)
    # bf16 moves the outputs (a real change of precision), within its rounding.
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        low, _ = shipped_network()(boards)
    assert 0 < (low.float() - logits).abs().max() < 0.5


def test_the_self_play_figure_plays_the_recipe_in_both_precisions():
    line = selfplay_rates(shipped_network(), torch.device("cpu"), steps=1, repeats=1)
    assert (line["figure"], line["slots"], line["sims"], line["steps"]) == (
        "selfplay_positions_per_s", 512, 16, 1)  # fmt: skip
    assert line["value"] > 0 and line["baseline_value"] > 0
