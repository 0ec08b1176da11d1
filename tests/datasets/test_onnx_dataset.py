"""OnnxModelDataset and PlayPageDataset: versioned saves never overwrite; loads return the latest."""

from __future__ import annotations

import onnx
import pytest
from kedro.io import DatasetError, Version
from onnx import TensorProto, helper

from connect_zero_pipeline.datasets import OnnxModelDataset, PlayPageDataset


def _identity_model(name: str) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], name, [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_onnx_versions_accumulate_and_latest_loads(tmp_path):
    path = str(tmp_path / "model.onnx")
    OnnxModelDataset(path, version=Version(None, "2026-01-01T00.00.00.000Z")).save(
        _identity_model("a")
    )
    second = _identity_model("b").SerializeToString()  # bytes are accepted too
    OnnxModelDataset(path, version=Version(None, "2026-01-02T00.00.00.000Z")).save(second)
    assert len(list((tmp_path / "model.onnx").iterdir())) == 2
    assert OnnxModelDataset(path, version=Version(None, None)).load().graph.name == "b"
    old = OnnxModelDataset(path, version=Version("2026-01-01T00.00.00.000Z", None)).load()
    assert old.graph.name == "a"
    with pytest.raises(DatasetError, match="must not exist if versioning is enabled"):
        OnnxModelDataset(path, version=Version(None, "2026-01-02T00.00.00.000Z")).save(second)


def test_a_corrupt_onnx_file_gives_a_clear_error(tmp_path):
    version = tmp_path / "model.onnx" / "2026-01-01T00.00.00.000Z"
    version.mkdir(parents=True)
    (version / "model.onnx").write_bytes(b"\x00garbage")
    with pytest.raises(DatasetError, match="is not a valid ONNX model"):
        OnnxModelDataset(str(tmp_path / "model.onnx"), version=Version(None, None)).load()
    with pytest.raises(DatasetError, match="saves an onnx.ModelProto or bytes, got str"):
        OnnxModelDataset(str(tmp_path / "other.onnx")).save("not a model")


def test_play_page_folders_are_versioned(tmp_path):
    path = str(tmp_path / "play")
    files = {"index.html": b"<html>1</html>", "js/app.js": b"1"}
    PlayPageDataset(path, version=Version(None, "2026-01-01T00.00.00.000Z")).save(files)
    PlayPageDataset(path, version=Version(None, "2026-01-02T00.00.00.000Z")).save(
        {**files, "index.html": b"<html>2</html>"}
    )
    folder = PlayPageDataset(path, version=Version(None, None)).load()
    assert folder == tmp_path / "play" / "2026-01-02T00.00.00.000Z" / "play"
    assert (folder / "index.html").read_bytes() == b"<html>2</html>"
    assert (folder / "js" / "app.js").read_bytes() == b"1"
    assert PlayPageDataset(path, version=Version(None, None)).exists()


def test_play_page_rejects_paths_outside_its_folder(tmp_path):
    dataset = PlayPageDataset(str(tmp_path / "play"), version=Version(None, None))
    with pytest.raises(DatasetError, match=r"bad entry '\.\./evil\.html'"):
        dataset.save({"index.html": b"x", "../evil.html": b"x"})
    assert not (tmp_path / "evil.html").exists() and not (tmp_path / "play").exists()
    with pytest.raises(DatasetError, match="has no saved version|Did not find any versions"):
        dataset.load()


def test_an_unpinned_save_is_recorded_at_the_version_it_wrote(tmp_path, monkeypatch):
    """Kedro draws one save version per save: the file's folder is the version Kedro reports
    (a ``save`` wrapped twice drew a second one, so the two differed across a millisecond)."""
    import itertools

    import kedro.io.core

    drawn = (f"2026-01-01T00.00.00.{n:03d}Z" for n in itertools.count())
    monkeypatch.setattr(kedro.io.core, "generate_timestamp", lambda: next(drawn))
    dataset = OnnxModelDataset(str(tmp_path / "model.onnx"), version=Version(None, None))
    dataset.save(_identity_model("a"))
    folders = [p.name for p in (tmp_path / "model.onnx").iterdir()]
    assert folders == ["2026-01-01T00.00.00.000Z"] == [dataset.resolve_save_version()]
    assert dataset.load().graph.name == "a"
