"""``scripts/offline_wheels.sh download --have FREEZE --python 3.12``: the bundle for a GPU
machine as it is, made from this machine (Python 3.11).

FREEZE is shaped like the lent GPU machine's (``tests/data/gpu_freeze.txt``: Python 3.12, its
image's packages, pyarrow too new for MLflow). The bundle holds only what that machine lacks,
wheels for its Python and its manylinux tags, no kedro-viz, and the machine's too-new
pyarrow is reported by name, not a resolution failure. The target's wheels exist only on the
package index (cp312 builds), so this test reads it; ``tests/pipelines/alphazero/
test_gpu_envs.py`` installs a bundle with no index at all.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.helpers import REPO

FREEZE = REPO / "tests/data/gpu_freeze.txt"
FREEZE_H200 = REPO / "tests/data/gpu_freeze_h200.txt"


def _names(freeze) -> set[str]:
    return {canonicalize_name(line.split("==")[0]) for line in freeze.read_text().splitlines()
            if "==" in line and not line.startswith("#")}  # fmt: skip


def _download(*args: str):
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(["bash", str(REPO / "scripts/offline_wheels.sh"), "download", *args],
                          capture_output=True, text=True, env=env, timeout=600)  # fmt: skip


def _target_tags() -> set[Tag]:
    """What CPython 3.12 on glibc 2.28 x86-64 installs."""
    platforms = [f"manylinux_2_{m}_x86_64" for m in range(28, 4, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    return {*cpython_tags((3, 12), platforms=platforms),
            *compatible_tags((3, 12), "cp312", platforms)}  # fmt: skip


@pytest.mark.slow
def test_a_bundle_for_the_gpu_machines_as_they_are(tmp_path):
    # Both lent images: the bundle holds what either lacks (the H200's has no pydantic).
    machine = _names(FREEZE) & _names(FREEZE_H200)
    bundle = tmp_path / "bundle"
    res = _download("--have", str(FREEZE), "--have", str(FREEZE_H200), "--python", "3.12",
                    "--limit-mb", "45", str(bundle))  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    wheels = sorted(bundle.glob("*.whl"))
    names = {canonicalize_name(parse_wheel_filename(w.name)[0]) for w in wheels}
    assert {"kedro", "kedro-datasets", "kedro-mlflow", "mlflow"} <= names
    assert not names & machine  # nothing the machines have: pyarrow, numpy, torch, pytest ...
    assert {"pydantic", "pydantic-core", "tzdata"} <= names - _names(FREEZE_H200)
    assert "kedro-viz" not in names and "plotly" not in names  # a run needs no viz
    assert "torch" in machine and not any(n.startswith("nvidia") for n in names)
    tags = _target_tags()
    for wheel in wheels:  # every one installs on the target, whatever built the bundle
        assert parse_wheel_filename(wheel.name)[3] & tags, wheel.name
    # The machine's packages are used as they are; a version out of a range is named.
    assert re.search(r"^offline_wheels: pyarrow 26\.0\.1 on the machine; mlflow \S+ wants "
                     r"\S*<26\S*: may fail at import$", res.stdout, re.M), res.stdout  # fmt: skip
    count, mib = re.search(r"^(\d+) wheels, ([\d.]+) MiB, in .*: for Python 3\.12 \(manylinux "
                           r"<= 2\.28\)", res.stdout, re.M).groups()  # fmt: skip
    assert int(count) == len(wheels)
    assert float(mib) == pytest.approx(sum(w.stat().st_size for w in wheels) / 2**20, abs=0.06)
    assert "fits the 45 MiB limit" in res.stdout
    # Again into the same folder: the same bundle, nothing added; a lower limit says so.
    both = ("--have", str(FREEZE), "--have", str(FREEZE_H200))
    again = _download(*both, "--python", "3.12", "--limit-mb", "1", str(bundle))
    assert again.returncode == 1, again.stderr[-2000:]
    assert sorted(bundle.glob("*.whl")) == wheels
    assert f"does NOT fit the 1 MiB limit (over by {float(mib) - 1:.1f} MiB)" in again.stdout
    # A folder holding other wheels is refused: install --target takes every wheel there.
    (bundle / "stray-1.0-py3-none-any.whl").write_bytes(b"")
    refused = _download(*both, "--python", "3.12", str(bundle))
    assert refused.returncode == 2 and "stray-1.0-py3-none-any.whl" in refused.stderr


def test_bad_arguments_are_refused_before_any_work(tmp_path):
    res = _download("--have", str(tmp_path / "nowhere.txt"), str(tmp_path / "b"))
    assert res.returncode == 2 and "nowhere.txt: no such file" in res.stderr
    res = _download("--have", str(FREEZE), "--python", "twelve", str(tmp_path / "b"))
    assert res.returncode == 2 and "--python 'twelve': a CPython version such as 3.12" in res.stderr
    assert not (tmp_path / "b").exists()
