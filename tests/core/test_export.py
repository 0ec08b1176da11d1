"""ONNX export: the protocol signature, a dynamic batch, and parity with torch (the reference)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from connect_zero_pipeline.core.bitboard import BOARD_MASK, from_boards, has_won
from connect_zero_pipeline.core.export import (
    ParityError,
    check_parity,
    check_signature,
    export_onnx,
    onnx_info,
    ort_evaluate,
    ort_session,
    random_positions,
)
from connect_zero_pipeline.core.models import build_model


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    model.meta = {"generation": 5}
    return model, export_onnx(model)


def test_export_has_the_protocol_signature_and_folds_batchnorm(tiny):
    model, data = tiny
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    check_signature(data)
    (inp,) = proto.graph.input
    assert inp.name == "board" and inp.type.tensor_type.elem_type == onnx.TensorProto.INT8
    assert [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim] == ["batch", 6, 7]
    assert [o.name for o in proto.graph.output] == ["logits", "value"]
    ops = {n.op_type for n in proto.graph.node}
    assert "BatchNormalization" not in ops and "Conv" in ops  # folded by the exporter
    info = onnx_info(data)
    assert info["config"] == model.config and info["meta"] == {"generation": 5}
    assert info["opset"] >= 17


@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_the_batch_dimension_is_dynamic(tiny, batch):
    model, data = tiny
    boards = random_positions(batch, seed=batch)
    logits, value = ort_evaluate(ort_session(data), boards.numpy())
    assert logits.shape == (batch, 7) and value.shape == (batch,)
    assert logits.dtype == np.float32 and value.dtype == np.float32
    with torch.inference_mode():
        t_logits, t_value = model(boards)
    np.testing.assert_allclose(logits, t_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(value, t_value.numpy(), atol=1e-4)


@pytest.fixture(scope="module")
def mlp_train_mode():
    """An MLP in training mode, its weights before export, and its export."""
    torch.manual_seed(1)
    model = build_model("mlp").train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    return model, before, export_onnx(model)


def test_parity_holds_for_both_architectures(tiny, mlp_train_mode):
    model, data = tiny
    report = check_parity(model, data, num_positions=1000, seed=1)
    assert report.num_positions == 1000 and report.ok
    assert report.max_abs_diff_logits <= 1e-4 and report.max_abs_diff_value <= 1e-4
    mlp, _, mlp_data = mlp_train_mode
    assert check_parity(mlp, mlp_data, num_positions=1000).ok


def test_export_and_parity_leave_the_callers_model_alone(mlp_train_mode):
    model, before, data = mlp_train_mode
    check_parity(model, data, num_positions=1000)
    assert model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_the_gate_rejects_a_broken_export():
    torch.manual_seed(0)
    model = build_model("mlp").eval()
    broken = build_model("mlp").eval()
    broken.load_state_dict(model.state_dict())
    with torch.no_grad():
        broken.value[2].bias += 0.5  # a wrong value head, a right policy head
    with pytest.raises(ParityError, match=r"logits [0-9.e+-]+, value 0\.4\d* > atol 0\.0001"):
        check_parity(model, export_onnx(broken), num_positions=1000)


def test_bad_opset_and_foreign_signatures_are_named(mlp_train_mode):
    model, _, data = mlp_train_mode
    with pytest.raises(ValueError, match="opset must be an integer >= 18, got 13"):
        export_onnx(model, opset=13)
    proto = onnx.load_from_string(data)
    proto.graph.output[1].name = "v"
    with pytest.raises(ValueError, match=r"ONNX outputs .* are \[.*'v'.*\], expected"):
        check_signature(proto.SerializeToString())


def test_random_positions_are_legal_unfinished_and_seeded():
    boards = random_positions(1000, seed=3)
    assert boards.shape == (1000, 6, 7) and boards.dtype == torch.int8
    state = from_boards(boards)  # raises on floating stones or impossible counts
    assert not bool(has_won(state.position ^ state.mask).any())  # nobody has won yet
    assert not bool((state.mask == BOARD_MASK).any())
    plies = state.ply.unique()
    assert plies.min() == 0 and plies.max() >= 20  # openings through late middle games
    assert torch.equal(boards, random_positions(1000, seed=3))
    assert not torch.equal(boards, random_positions(1000, seed=4))
    with pytest.raises(ValueError, match="num_positions must be an integer >= 1, got 0"):
        random_positions(0)
