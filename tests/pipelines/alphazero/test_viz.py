"""kedro-viz: `kedro viz build` produces the static site, one group per generation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


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
    assert {"gen_000", "gen_001", "gen_008"} <= groups  # 8 generations by default
    names = {n["name"] for n in main["nodes"]}
    assert {"self_play", "train", "evaluate"} <= {n.split(".")[-1] for n in names}
