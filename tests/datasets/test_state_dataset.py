"""TorchStateDataset (resumable trainer state) and OptionalPartitionedDataset (may be empty)."""

from __future__ import annotations

import pytest
import torch
from kedro.io import DatasetError, Version

from connect_zero_pipeline.datasets.partitions import OptionalPartitionedDataset
from connect_zero_pipeline.datasets.state_dataset import TorchStateDataset

V1, V2 = "2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z"


def test_state_round_trips_with_tensors_and_versions(tmp_path):
    path = str(tmp_path / "state.pt")
    opt = torch.optim.Adam([torch.nn.Parameter(torch.ones(3))])
    opt.param_groups[0]["params"][0].grad = torch.ones(3)
    opt.step()
    state = {"step": 7, "optimizer": opt.state_dict(), "opponent": None, "swap": {"batches": []}}
    TorchStateDataset(path, version=Version(None, V1)).save({"step": 1})
    TorchStateDataset(path, version=Version(None, V2)).save(state)
    loaded = TorchStateDataset(path, version=Version(None, None)).load()  # the latest
    assert loaded["step"] == 7 and loaded["opponent"] is None
    torch.testing.assert_close(
        loaded["optimizer"]["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"]
    )
    assert TorchStateDataset(path, version=Version(V1, None)).load() == {"step": 1}
    with pytest.raises(DatasetError, match="saves a dict"):
        TorchStateDataset(path, version=Version(None, "2026-01-03T00.00.00.000Z")).save([1])


def test_foreign_or_non_dict_files_are_refused(tmp_path):
    folder = tmp_path / "state.pt" / V1
    folder.mkdir(parents=True)
    (folder / "state.pt").write_bytes(b"\x00garbage")
    with pytest.raises(DatasetError, match="not a readable state file"):
        TorchStateDataset(str(tmp_path / "state.pt"), version=Version(None, None)).load()
    torch.save([1, 2], folder / "state.pt")
    with pytest.raises(DatasetError, match="holds a list"):
        TorchStateDataset(str(tmp_path / "state.pt"), version=Version(None, None)).load()


def test_optional_partitions_load_empty_instead_of_raising(tmp_path):
    ds = OptionalPartitionedDataset(path=str(tmp_path / "nothing"), dataset="json.JSONDataset")
    assert ds.load() == {}
    (tmp_path / "some").mkdir()
    (tmp_path / "some" / "a.json").write_text('{"x": 1}')
    ds = OptionalPartitionedDataset(
        path=str(tmp_path / "some"), dataset="json.JSONDataset", filename_suffix=".json"
    )
    parts = ds.load()
    assert list(parts) == ["a"] and parts["a"]() == {"x": 1}
