"""TorchModelDataset: versioned saves never overwrite; loads rebuild the model."""

from __future__ import annotations

import pytest
from kedro.io import DatasetError, Version

from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.datasets import TorchModelDataset


def test_versions_accumulate_and_latest_loads(tmp_path):
    path = str(tmp_path / "model.pt")
    first = build_model("mlp")
    first.meta = {"generation": 1}
    TorchModelDataset(path, version=Version(None, "2026-01-01T00.00.00.000Z")).save(first)
    second = build_model("mlp")
    second.meta = {"generation": 2}
    TorchModelDataset(path, version=Version(None, "2026-01-02T00.00.00.000Z")).save(second)
    assert len(list((tmp_path / "model.pt").iterdir())) == 2
    assert TorchModelDataset(path, version=Version(None, None)).load().meta == {"generation": 2}
    old = TorchModelDataset(path, version=Version("2026-01-01T00.00.00.000Z", None)).load()
    assert old.meta == {"generation": 1}
    with pytest.raises(DatasetError, match="must not exist if versioning is enabled"):
        TorchModelDataset(path, version=Version(None, "2026-01-02T00.00.00.000Z")).save(second)


def test_a_foreign_file_gives_a_clear_error(tmp_path):
    version = tmp_path / "model.pt" / "2026-01-01T00.00.00.000Z"
    version.mkdir(parents=True)
    (version / "model.pt").write_bytes(b"\x00garbage")
    with pytest.raises(DatasetError, match="not a readable model file"):
        TorchModelDataset(str(tmp_path / "model.pt"), version=Version(None, None)).load()
