"""What Kedro looks for in ``<package>.cli``: the project's command group (:data:`cli`, the
group of :mod:`.commands`, whose ``run`` is :mod:`.commands.run`'s), and the stand-ins of
plugins' heavy command modules that the project's ``kedro.init`` entry point puts first
(:func:`defer_plugin_commands`).
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import types

import click

from .commands import LazyCommand, cli  # noqa: F401 (Kedro reads cli)

PLUGIN_COMMANDS = {
    "kedro-mlflow": ("Mlflow", "Kedro plugin for interactions with mlflow.", "mlflow",
                     "Use mlflow-specific commands inside kedro project."),
}  # fmt: skip
"""Kedro plugins whose command group imports a heavy library when it is loaded (kedro-mlflow:
MLflow, about 1.5 s) -> (their group's name and help, their command, its one line): listed by
``kedro --help`` as these, imported when the command runs (:func:`defer_plugin_commands`;
``tests/commands/test_cli.py`` checks the words are the plugin's own)."""


def defer_plugin_commands() -> None:
    """Kedro loads every plugin's project commands when it starts, whatever the command; the
    project's ``kedro.init`` entry point (which Kedro runs first) puts a stand-in for each of
    :data:`PLUGIN_COMMANDS`' modules in ``sys.modules``: a group listing the plugin's command
    with its words, whose command imports the plugin's module and runs the real one. No
    other plugin, and nothing of the plugin's own, is changed."""
    for entry in importlib.metadata.entry_points(group="kedro.project_commands"):
        plugin = re.sub(r"[-_.]+", "-", entry.dist.name).lower() if entry.dist else None
        if plugin not in PLUGIN_COMMANDS or entry.module in sys.modules or not entry.attr:
            continue  # another plugin, or already imported: nothing to save
        group_name, group_help, name, short_help = PLUGIN_COMMANDS[plugin]

        def load(entry=entry, name=name) -> click.Command:
            sys.modules.pop(entry.module, None)  # the stand-in: import the plugin itself
            real = entry.load()
            return real.get_command(click.Context(real), name)

        stand_in = types.ModuleType(entry.module)
        group = click.Group(name=group_name, help=group_help)
        group.add_command(LazyCommand(name, load, short_help))
        setattr(stand_in, entry.attr, group)
        sys.modules[entry.module] = stand_in
