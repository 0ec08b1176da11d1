"""Model files: round trip, and clear errors for corrupt or foreign files."""

from __future__ import annotations

import io

import pytest
import torch

from connect_zero_pipeline.core.checkpoint import load_model, model_to_bytes, save_model
from connect_zero_pipeline.core.models import build_model


def test_round_trip_keeps_config_weights_and_meta(tmp_path):
    torch.manual_seed(0)
    model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    path = tmp_path / "m.pt"
    save_model(model, path, meta={"generation": 2})
    loaded = load_model(path)
    assert loaded.config == model.config and loaded.meta == {"generation": 2}
    boards = torch.zeros(3, 6, 7, dtype=torch.int8)
    model.eval()
    for a, b in zip(model(boards), loaded(boards), strict=True):
        assert torch.equal(a, b)


def test_corrupt_and_foreign_files_are_named(tmp_path):
    bad = tmp_path / "garbage.pt"
    bad.write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="garbage.pt is not a readable model file"):
        load_model(bad)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(2)}, foreign)
    with pytest.raises(ValueError, match="foreign.pt is not a Connect-Zero model"):
        load_model(foreign)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(model_to_bytes(build_model("mlp"))[:200])
    with pytest.raises(ValueError, match="truncated.pt is not a readable model file"):
        load_model(truncated)


def test_pickled_code_is_refused():
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    buf = io.BytesIO()
    torch.save({"format": "connect-zero-model/1", "x": Evil()}, buf)
    buf.seek(0)
    with pytest.raises(ValueError, match="not a readable model file"):
        load_model(buf)
