"""kedro-viz: `kedro viz build` produces the static site, one group per generation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml


def test_kedro_viz_build_shows_one_group_per_generation(kedro_project):
    env = {**os.environ, "DO_NOT_TRACK": "1", "KEDRO_DISABLE_TELEMETRY": "1"}
    kedro = Path(sys.executable).parent / "kedro"
    out = subprocess.run(
        [str(kedro), "viz", "build", "--include-hooks"],
        cwd=kedro_project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    build = kedro_project / "build"
    assert (build / "index.html").exists()
    main = json.loads((build / "api" / "main").read_text())
    groups = {m["id"] for m in main["modular_pipelines"].values()}
    params = yaml.safe_load((kedro_project / "conf/base/parameters_alphazero.yml").read_text())
    last = params["alphazero"]["num_generations"]  # the default run's generations, one group each
    expected = {f"gen_{k:03d}" for k in range(last + 1)}
    assert expected <= groups
    assert f"gen_{last + 1:03d}" not in groups
    names = {n["name"] for n in main["nodes"]}
    assert {"self_play", "train", "evaluate"} <= {n.split(".")[-1] for n in names}
