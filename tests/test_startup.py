"""Every command answers at once when its answer needs nothing heavy: help, and the refusals
decided from the names and parameters alone, import none of torch, MLflow, pandas, pyarrow,
numba or onnx. (A bad parameter's refusal: tests/reliability/test_failures.py.)

What makes it so, and is checked here against the installed libraries: the project's
commands are listed by their one line and imported when they run; kedro-mlflow's command
group is listed by its own words and imported when it runs; kedro-mlflow's hooks are the
plugin's, imported at their first call."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import click
import pytest

from connect_zero_pipeline.commands import COMMANDS, cli
from connect_zero_pipeline.session.hooks import MLFLOW_PLUGIN_HOOK, MlflowPluginHook
from tests.helpers import IMPORT_TIMES, heavy_imports, kedro_cli

RUN_ID = "2026-01-01T00.00.00.000Z"


@pytest.mark.parametrize(
    ("args", "status", "said"),
    [
        (["--help"], 0, "mlflow  Use mlflow-specific commands inside kedro project."),
        (["run", "--help"], 0, "--pipelines TEXT"),
        (
            ["run", "--pipelines", "alphazro"],
            2,
            "no pipeline named 'alphazro'. Did you mean 'alphazero'?",
        ),
        (
            ["run", "--env", "gpuu"],
            2,
            "no env named 'gpuu' (no folder conf/gpuu). Did you mean 'gpu'?",
        ),
        (["run", "--params", f"resume={RUN_ID}"], 1, f"resume='{RUN_ID}': no such run"),
    ],
)
def test_kedro_answers_without_importing_anything_heavy(kedro_project, args, status, said):
    res = kedro_cli(kedro_project, *args, env=IMPORT_TIMES)
    assert res.returncode == status, res.stdout[-2000:] + res.stderr[-3000:]
    assert said in res.stdout + res.stderr
    assert heavy_imports(res.stderr) == set()


def test_the_project_command_lists_its_commands_without_importing_them():
    res = subprocess.run([sys.executable, "-m", "connect_zero_pipeline", "--help"],
                         capture_output=True, text=True, env={**os.environ, **IMPORT_TIMES})  # fmt: skip
    assert res.returncode == 0 and "curve      Print a run's learning curve" in res.stdout
    assert heavy_imports(res.stderr) == set()
    imported = {line.rsplit("|", 1)[1].strip() for line in res.stderr.splitlines()
                if line.startswith("import time:")}  # fmt: skip
    assert not {"kedro", "connect_zero_pipeline.commands.play"} & imported


def test_each_command_is_listed_by_its_own_line():
    """:data:`COMMANDS`' lines are the commands' own short help (as click would list them)."""
    for name, (_, line) in COMMANDS.items():
        lazy = cli.get_command(click.Context(cli), name)
        assert lazy.real().get_short_help_str(limit=1000) == line, name


def test_kedro_mlflows_commands_are_listed_by_its_own_words():
    from kedro_mlflow.framework.cli.cli import commands

    from connect_zero_pipeline.cli import PLUGIN_COMMANDS

    group_name, group_help, name, line = PLUGIN_COMMANDS["kedro-mlflow"]
    assert (commands.name, commands.help.strip()) == (group_name, group_help)
    real = commands.get_command(click.Context(commands), name)
    assert real.get_short_help_str(limit=1000) == line


def test_kedro_mlflows_hooks_are_the_plugins_own_with_the_same_arguments():
    """The stand-in takes the plugin's entry-point name and has each of its hooks, with the
    same arguments (a kedro-mlflow release that adds or changes a hook fails here)."""
    import importlib.metadata

    from kedro_mlflow.framework.hooks.mlflow_hook import MlflowHook, mlflow_hook

    (entry,) = [e for e in importlib.metadata.entry_points(group="kedro.hooks")
                if e.name == MLFLOW_PLUGIN_HOOK]  # fmt: skip
    assert entry.load() is mlflow_hook

    def hooks(cls) -> dict[str, list[str]]:  # each hook implementation and its arguments
        return {n: list(inspect.signature(m).parameters) for n, m in inspect.getmembers(cls)
                if hasattr(m, "kedro_impl")}  # fmt: skip

    theirs, ours = hooks(MlflowHook), hooks(MlflowPluginHook)
    assert theirs and ours == theirs
    stand_in = MlflowPluginHook()
    assert stand_in.__name__ == MLFLOW_PLUGIN_HOOK and stand_in.plugin() is mlflow_hook
