"""``scripts/offline_wheels.sh download --have FREEZE --python 3.12``: the bundle for a GPU
machine as it is, made from this machine (Python 3.11).

FREEZE is shaped like the lent GPU machine's (``tests/data/gpu_freeze.txt``: Python 3.12, its
image's packages, pyarrow too new for MLflow). The bundle holds only what that machine lacks,
wheels for its Python and its manylinux tags, no kedro-viz, and the machine's too-new
pyarrow is reported by name, not a resolution failure. The target's wheels exist only on the
package index (cp312 builds), so the real resolution and download reads it: a rehearsal
(``make test-rehearsal``, which CI runs). ``make test`` checks the same bundle's logic on a
recorded answer of that resolution (:data:`RECORDED`); ``tests/pipelines/alphazero/
test_gpu_envs.py`` installs a bundle with no index at all.
"""

from __future__ import annotations

import importlib.util
import json
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
RECORDED = REPO / "tests/data/gpu_resolution.json"
"""The real resolution's record (the ``.resolution.json`` a download leaves in its folder) for
both machines, made 2026-11-29 by ``scripts/offline_wheels.sh download --have
tests/data/gpu_freeze.txt --have tests/data/gpu_freeze_h200.txt --python 3.12 DIR``: 123
packages, of which the machines lack 60. Made again the same way when the project's
dependencies change (the rehearsal's test makes the same resolution)."""


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


@pytest.fixture(scope="module")
def offline_wheels():
    spec = importlib.util.spec_from_file_location(
        "offline_wheels", REPO / "scripts/offline_wheels.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_recorded_resolution_bundles_what_the_machines_lack(offline_wheels):
    """The bundle's logic on a real resolution's record, with no package index: what the
    machines have is held and left out, what they lack is bundled, a version outside a
    range is named."""
    installs = json.loads(RECORDED.read_text())["installs"]
    first, second = offline_wheels.have(FREEZE), offline_wheels.have(FREEZE_H200)
    machine = {n: v for n, v in first.items() if n in second}  # what both have, as main reads it
    needed, lacking = offline_wheels.bundle_of(installs, machine)
    assert {"kedro", "kedro-datasets", "kedro-mlflow", "mlflow"} <= set(lacking)
    assert not set(lacking) & set(machine) and "torch" not in lacking
    assert {"pydantic", "pydantic-core", "tzdata"} <= set(lacking) - _names(FREEZE_H200)
    assert "kedro-viz" not in needed and "plotly" not in needed  # a run needs no viz
    assert not any(n.startswith("nvidia") for n in needed)
    # The machine's versions that every requirement accepts are the resolved ones (held).
    held = offline_wheels.held(installs, machine, "3.12")
    assert {"numpy", "pandas"} <= set(held)
    assert all(needed[n] == machine[n] for n in held)
    said = offline_wheels.conflicts(installs, machine, "3.12")
    assert any(re.fullmatch(r"pyarrow 26\.0\.1 on the machine; mlflow \S+ wants \S*<26\S*: may "
                            r"fail at import", line) for line in said), said  # fmt: skip
    assert "pyarrow" not in held  # rejected: never pinned into a failure
    reqs = {offline_wheels.requirement_name(r) for r in offline_wheels.requirements(False, False)}
    assert "torch" not in reqs and "kedro-viz" not in reqs and "kedro" in reqs
    assert {offline_wheels.canonical(i["metadata"]["name"]) for i in installs} >= reqs


@pytest.mark.slow
@pytest.mark.rehearsal
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
