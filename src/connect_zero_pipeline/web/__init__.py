"""The play page: static assets, the vendored onnxruntime-web, and the page assembly.

The page (``index.html``, ``app.js``, ``style.css`` in this folder) runs the
exported ONNX model in the browser with onnxruntime-web's WebAssembly backend,
single-threaded, so it works from any static server without cross-origin
isolation and without the network.

onnxruntime-web is pinned in ``package.json`` next to this file (the lock file
pins its integrity hash) and fetched from the npm registry into
``node_modules/`` (gitignored) by::

    npm ci --prefix src/connect_zero_pipeline/web     # or: make web

The export copies only the three files the wasm backend needs
(:data:`ORT_FILES`, about 14 MB, mostly the ``.wasm``) into every exported
page folder, so an exported page is self-contained. They are not committed:
14 MB of binary per onnxruntime-web upgrade would grow the repository forever,
while ``npm ci`` from the lock file is reproducible.

A machine without them (a GPU machine with no network, a copy of the project without its
git-ignored files) still finishes a run: the page is written without the runtime
(:func:`runtime_dist` is None; its ``model.json`` says so), one line says how to make it
whole, and ``play --web`` serves such a page with the runtime fetched since
(:data:`WHOLE_LATER`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WEB_DIR = Path(__file__).resolve().parent
ASSETS = ("index.html", "app.js", "style.css")
# What ort.wasm.min.js (the wasm-only build) loads: itself, then the threaded-SIMD
# Emscripten glue (.mjs) and binary (.wasm), which also run with numThreads = 1.
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
DEFAULT_DIST = WEB_DIR / "node_modules" / "onnxruntime-web" / "dist"
FETCH_COMMAND = f"npm ci --prefix {WEB_DIR}"
WHOLE_LATER = "make web, then make play (which serves it with the runtime)"
"""How a page exported without onnxruntime-web is played later."""


def pinned_ort_web_version() -> str:
    """The onnxruntime-web version pinned in ``web/package.json``."""
    package = json.loads((WEB_DIR / "package.json").read_text())
    return package["dependencies"]["onnxruntime-web"]


def ort_web_dist(dist_dir: str | Path | None = None) -> Path:
    """The onnxruntime-web ``dist`` folder holding :data:`ORT_FILES`, checked.

    Args:
        dist_dir: a folder with the files; ``None`` uses the npm cache of this
            package (``web/node_modules/onnxruntime-web/dist``) and also checks
            that its version is the pinned one.

    Raises:
        FileNotFoundError: naming the missing files and the command that fetches them.
        ValueError: the npm cache holds another onnxruntime-web version than the pin.
    """
    dist = Path(dist_dir) if dist_dir is not None else DEFAULT_DIST
    missing = [name for name in ORT_FILES if not (dist / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"onnxruntime-web files {', '.join(missing)} are missing from {dist}; "
            f"fetch the pinned version with: {FETCH_COMMAND}"
        )
    if dist_dir is None:
        installed = _installed_version(dist)
        pinned = pinned_ort_web_version()
        if installed != pinned:
            raise ValueError(
                f"{dist.parent} holds onnxruntime-web {installed}, but {pinned} is pinned in "
                f"{WEB_DIR / 'package.json'}; refresh it with: {FETCH_COMMAND}"
            )
    return dist


def runtime_dist(dist_dir: str | Path | None = None) -> Path | None:
    """:func:`ort_web_dist`, or None when the default one is simply not fetched (the page is
    then written without it). A folder named in ``dist_dir`` that lacks the files, and a
    fetched version other than the pin, still raise."""
    if dist_dir is None and not any((DEFAULT_DIST / name).is_file() for name in ORT_FILES):
        return None
    return ort_web_dist(dist_dir)


def _installed_version(dist: Path) -> str | None:
    """The version in the ``package.json`` above a ``dist`` folder, if there is one."""
    try:
        return json.loads((dist.parent / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def page_files(onnx_bytes: bytes, info: dict[str, Any], dist: Path | None) -> dict[str, bytes]:
    """The files of a play page, by relative path.

    Args:
        onnx_bytes: the exported model (see :func:`~..core.export.export_onnx`).
        info: JSON-serialisable facts shown on the page (``config``, ``meta``,
            ``opset``, ...); saved as ``model.json`` with the onnxruntime-web version.
        dist: onnxruntime-web's files (:func:`runtime_dist`); None: the page without them,
            its ``model.json``'s ``onnxruntime_web`` null.

    Returns:
        ``{"index.html": ..., "app.js": ..., "style.css": ..., "model.onnx": ...,
        "model.json": ..., "ort.wasm.min.js": ..., "ort-wasm-simd-threaded.mjs": ...,
        "ort-wasm-simd-threaded.wasm": ...}`` (the last three only with ``dist``).
    """
    files = {name: (WEB_DIR / name).read_bytes() for name in ASSETS}
    version = None
    if dist is not None:
        version = _installed_version(dist) or "unknown"
        files.update({name: (dist / name).read_bytes() for name in ORT_FILES})
    files["model.onnx"] = onnx_bytes
    files["model.json"] = json.dumps(
        {**info, "onnxruntime_web": version}, indent=2, sort_keys=True
    ).encode()
    return files


def has_runtime(folder: Path) -> bool:
    """Whether a page folder holds onnxruntime-web's files."""
    return all((folder / name).is_file() for name in ORT_FILES)
