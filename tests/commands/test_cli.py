"""``python -m connect_zero_pipeline``: every command discoverable, nothing trained by accident."""

from __future__ import annotations

import subprocess
import sys

import pytest

from connect_zero_pipeline.commands import cli
from tests.helpers import files_under, store_untouched

CLI = [sys.executable, "-m", "connect_zero_pipeline"]


@pytest.mark.parametrize("args", [[], ["--help"], ["-h"]])
def test_no_command_prints_every_command_and_trains_nothing(args, kedro_project):
    before = files_under(kedro_project)
    res = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=kedro_project,
                         timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    section = res.stdout.split("Commands:\n", 1)[1].splitlines()
    listed = [line.split()[0] for line in section if line.startswith("  ")]
    assert listed == cli.list_commands(None)
    for line in section:
        if line.startswith("  "):
            assert len(line.split(None, 1)[1]) > 20, line  # a real one-line description
    assert files_under(kedro_project) == before and store_untouched(kedro_project)  # no run


def test_an_unknown_command_is_named_with_the_list(kedro_project):
    res = subprocess.run([*CLI, "trian"], capture_output=True, text=True, cwd=kedro_project,
                         timeout=120)  # fmt: skip
    assert res.returncode == 2
    assert "unknown command 'trian'" in res.stderr and "  benchmark " in res.stderr


def test_run_is_kedro_run(kedro_project):
    res = subprocess.run([*CLI, "run", "--pipelines=nonexistent"], capture_output=True,
                         text=True, cwd=kedro_project, timeout=120)  # fmt: skip
    assert res.returncode != 0
    assert "no pipeline named 'nonexistent'" in res.stderr
