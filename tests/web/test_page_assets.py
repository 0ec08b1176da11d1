"""The play page's assets and the vendored onnxruntime-web (no browser needed)."""

from __future__ import annotations

import json
import re

import pytest

from connect_zero_pipeline import web


def test_the_pin_is_exact_and_matches_the_lock_file():
    pinned = web.pinned_ort_web_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"pin an exact version, not {pinned!r}"
    lock = json.loads((web.WEB_DIR / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/onnxruntime-web"]["version"] == pinned


def test_the_npm_cache_holds_the_pinned_files():
    dist = web.ort_web_dist()  # raises with the fetch command when they are missing
    assert all((dist / name).stat().st_size > 0 for name in web.ORT_FILES)


def test_missing_files_name_the_fetch_command(tmp_path):
    (tmp_path / "ort.wasm.min.js").write_text("//")
    with pytest.raises(FileNotFoundError) as err:
        web.ort_web_dist(tmp_path)
    message = str(err.value)
    assert "ort-wasm-simd-threaded.mjs, ort-wasm-simd-threaded.wasm are missing" in message
    assert f"npm ci --prefix {web.WEB_DIR}" in message


def test_the_page_loads_nothing_from_the_network():
    for name in web.ASSETS:
        text = (web.WEB_DIR / name).read_text()
        assert not re.search(r"https?://|//cdn", text), f"{name} refers to the network"
    html = (web.WEB_DIR / "index.html").read_text()
    for src in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert src.startswith("data:") or src in (*web.ASSETS, *web.ORT_FILES), src
    app = (web.WEB_DIR / "app.js").read_text()
    assert "ort.env.wasm.numThreads = 1" in app and "ort.env.wasm.wasmPaths" in app


def test_the_page_search_uses_the_python_search_constants():
    # The page's MCTS mirrors core.search: same exploration constant, same value of a win.
    from connect_zero_pipeline.core.config.search import MCTSConfig

    app = (web.WEB_DIR / "app.js").read_text()
    assert float(re.search(r"const C_PUCT = ([0-9.]+);", app).group(1)) == MCTSConfig.c_puct
    decay = float(re.search(r"const WIN_DECAY = ([0-9.]+);", app).group(1))
    assert decay == MCTSConfig.win_decay


def test_a_page_exported_without_the_runtime_is_served_with_this_machines(tmp_path, monkeypatch):
    """A machine without onnxruntime-web (offline) exports the page without it; the page
    server adds this machine's, or says before it starts that it cannot."""
    import threading
    import urllib.request

    from connect_zero_pipeline.commands.page import PlayError, make_server

    page = tmp_path / "play"
    page.mkdir()
    for name, content in web.page_files(b"onnx", {"opset": 18}, None).items():
        (page / name).write_bytes(content)
    assert not web.has_runtime(page)
    assert json.loads((page / "model.json").read_text())["onnxruntime_web"] is None
    server = make_server(page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        for name in web.ORT_FILES:
            with urllib.request.urlopen(base + name) as answer:
                assert answer.read() == (web.ort_web_dist() / name).read_bytes(), name
        with urllib.request.urlopen(base + "model.onnx") as answer:  # the page's own files
            assert answer.read() == b"onnx"
    finally:
        server.shutdown()
        server.server_close()
    monkeypatch.setattr(web, "DEFAULT_DIST", tmp_path / "not-fetched")
    with pytest.raises(PlayError, match=r"play was exported without onnxruntime-web, and "
                       r"onnxruntime-web files .* are missing .*npm ci --prefix"):  # fmt: skip
        make_server(page)
