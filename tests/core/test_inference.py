"""Network evaluation backends agree: onnxruntime vs torch on random legal positions."""

from __future__ import annotations

import pytest
import torch

from connect_zero_pipeline.core.bitboard import from_boards
from connect_zero_pipeline.core.config.search import MCTSConfig
from connect_zero_pipeline.core.export import random_positions
from connect_zero_pipeline.core.inference import make_evaluate_fn
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.search.loop import search


@pytest.mark.parametrize("preset", ["tiny", "mlp"])
def test_onnxruntime_matches_torch(preset):
    torch.manual_seed(0)
    model = build_model(preset)
    boards = random_positions(300, seed=1)
    lt, vt = make_evaluate_fn(model, "cpu", "torch")(boards)
    lo, vo = make_evaluate_fn(model, "cpu", "onnxruntime")(boards)
    assert lo.shape == (300, 7) and vo.shape == (300,) and lo.dtype == torch.float32
    assert torch.allclose(lt, lo, atol=1e-4) and torch.allclose(vt, vo, atol=1e-4)
    # The search sees the same network either way.
    state = from_boards(boards[:16])
    cfg = MCTSConfig(sims=8)
    a = search(state, make_evaluate_fn(model, "cpu", "torch"), cfg).visit_counts
    b = search(state, make_evaluate_fn(model, "cpu", "onnxruntime"), cfg).visit_counts
    assert (a == b).float().mean() > 0.95  # ties may break differently in the last float bit


def test_bad_backend_and_device_are_named():
    model = build_model("mlp")
    with pytest.raises(ValueError, match="backend must be one of .* got 'tensorrt'"):
        make_evaluate_fn(model, "cpu", "tensorrt")
    with pytest.raises(ValueError, match="runs on the CPU, but device is meta"):
        make_evaluate_fn(model, "meta", "onnxruntime")
