"""``scripts/offline_wheels.sh download --have FREEZE``: only what a machine lacks, then
``install --target``, where no venv can be made (a GPU machine with its own torch stack).

The machine is simulated by this environment's own ``pip list --format=freeze`` less Kedro's
three packages, so the bundle is those three wheels (downloaded from the package index)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.helpers import REPO

LACKING = {"kedro", "kedro-datasets", "kedro-mlflow"}


@pytest.mark.slow
def test_the_bundle_holds_only_what_the_machine_lacks_and_installs_into_a_target(tmp_path):
    freeze = subprocess.run([sys.executable, "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    lines = [
        x for x in freeze.splitlines() if x.split("==")[0].lower().replace("_", "-") not in LACKING
    ]
    assert len(lines) == len(freeze.splitlines()) - len(LACKING)
    (tmp_path / "freeze.txt").write_text("\n".join(lines) + "\n")
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    env = {**os.environ, "PYTHON": sys.executable}
    res = subprocess.run(["bash", str(REPO / "scripts/offline_wheels.sh"), "download", "--have",
                          str(tmp_path / "freeze.txt"), str(wheels)], capture_output=True,
                         text=True, env=env, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    names = {re.split(r"-\d", w.name)[0].replace("_", "-").lower() for w in wheels.glob("*.whl")}
    assert names == LACKING  # no package the machine has, no dev extra, no torch
    count, mb = re.search(r"^(\d+) wheels, (\d+) MB, in ", res.stdout, re.M).groups()
    assert int(count) == 3 and int(mb) <= 5
    res = subprocess.run(["bash", str(REPO / "scripts/offline_wheels.sh"), "install", "--target",
                          str(target), str(wheels)], capture_output=True, text=True, env=env,
                         timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"export PYTHONPATH={target}:" in res.stdout
    where = subprocess.run([sys.executable, "-c", "import kedro, kedro_mlflow; "
                            "print(kedro.__file__, kedro_mlflow.__file__)"],
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": str(target)}).stdout.split()  # fmt: skip
    assert all(path.startswith(str(target)) for path in where), where
    res = subprocess.run(["bash", str(REPO / "scripts/offline_wheels.sh"), "download", "--have",
                          str(tmp_path / "nowhere.txt")], capture_output=True, text=True, env=env)  # fmt: skip
    assert res.returncode == 2 and "nowhere.txt: no such file" in res.stderr
