"""``python -m connect_zero_pipeline``: every command discoverable, nothing trained by accident."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from connect_zero_pipeline.commands import cli
from tests.helpers import command, files_under, store_untouched

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
    assert len([line for line in section if line.strip()]) == len(listed)  # one line each
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


HELPS = [[], ["bench"], ["run"], ["play"], ["benchmark"], ["curve"], ["runs"], ["solve"],
         ["bench", "book"]]  # fmt: skip


@pytest.mark.parametrize("argv", HELPS, ids=lambda a: " ".join(a) or "top")
def test_every_help_line_is_whole_and_says_defaults_one_way(argv):
    """No listed command's line cut short ("..."), every default as click shows it
    ([default: ...]), never in words of the help text."""
    status, out, _ = command(*argv, "--help")
    assert status == 0, out
    assert not re.search(r"\(default\b", out, re.IGNORECASE), out  # click's [default: ...]
    if "Commands:\n" in out:
        listed = out.split("Commands:\n", 1)[1].splitlines()
        assert listed and not [line for line in listed if line.rstrip().endswith("...")], out


def test_the_help_names_the_project_s_defaults_and_types():
    run = command("run", "--help")[1]
    assert "Without --pipelines it runs alphazero" in run and "Run the pipeline." not in run
    shown = " ".join(run.split())
    assert "[default: (alphazero)]" in shown and "[default: (SequentialRunner)]" in shown
    assert "__default__" not in run and "[default: (local)]" in shown
    play = command("play", "--help")[1]
    assert "--port INTEGER" in play and "--project DIRECTORY" in play
    assert "--project DIRECTORY" in command("benchmark", "--help")[1]
    solve = " ".join(command("solve", "--help")[1].split())
    assert "an empty line is the empty board" in solve
    assert "opening book" in solve and "$XDG_CACHE_HOME/connect-zero-pipeline" in solve
