"""core/ is a plain library: importing every module of it never imports Kedro."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import connect_zero_pipeline.core as core


def test_core_never_imports_kedro():
    modules = [f"connect_zero_pipeline.core.{m.name}" for m in pkgutil.iter_modules(core.__path__)]
    assert "connect_zero_pipeline.core.bitboard" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(k for k in sys.modules if k == 'kedro' or k.startswith('kedro'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imported: {out.stdout.strip()}"


def test_core_has_no_executors():
    """Worker pools and Ray live in connect_zero_pipeline.executors, never in core."""
    from pathlib import Path

    sources = sorted(Path(core.__path__[0]).rglob("*.py"))
    assert len(sources) > 10
    for path in sources:
        text = path.read_text()
        for banned in ("import ray", "from ray", "ProcessPoolExecutor", "multiprocessing"):
            assert banned not in text, f"{path.name} mentions {banned!r}"
