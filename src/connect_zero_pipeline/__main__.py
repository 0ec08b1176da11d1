"""Entry point: ``python -m connect_zero_pipeline <command> [options]``.

``python -m connect_zero_pipeline`` alone (or ``--help``) lists the commands. ``run`` is
Kedro's run command (``kedro run``, the same options); arguments that start with an option
(``python -m connect_zero_pipeline --pipelines=ladder``) go to it too, as in every Kedro
project. Each command's options: ``python -m connect_zero_pipeline <command> --help``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

COMMANDS = {
    "run": (None, "train and measure: kedro run (--pipelines, --params, --env, ...)"),
    "play": ("connect_zero_pipeline.commands.play",
             "play the trained agent in the terminal, or in the browser with --web"),
    "benchmark": ("connect_zero_pipeline.commands.benchmark",
                  "score an agent on files of positions labelled by the perfect solver"),
    "curve": ("connect_zero_pipeline.commands.curve", "print a run's learning curve as a table"),
    "runs": ("connect_zero_pipeline.commands.runs", "list the project's runs, their status and errors"),
    "solve": ("connect_zero_pipeline.commands.solve",
              "the perfect solver on move strings from standard input"),
    "bench": ("connect_zero_pipeline.bench", "benchmarks: one JSON line per figure"),
    "score": ("connect_zero_pipeline.commands.benchmark", "the same as benchmark (its older name)"),
}  # fmt: skip
"""Command -> (module with ``main(argv)``, one line of help); ``run`` is Kedro's."""

HELP_FLAGS = ("-h", "--help", "help")


def usage() -> str:
    """The help that lists every command with one line each."""
    width = max(map(len, COMMANDS))
    lines = [
        "usage: python -m connect_zero_pipeline <command> [options]",
        "",
        "Connect-Zero Pipeline: Connect-4 agents trained by self-play, measured against a "
        "perfect solver.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()),
        "",
        "A command's options: python -m connect_zero_pipeline <command> --help",
    ]
    return "\n".join(lines)


def main(*args, **kwargs) -> Any:
    from . import quiet

    quiet.install()  # known library warnings and progress bars, before any library loads
    argv = list(args[0]) if args else sys.argv[1:]
    if not argv or argv[0] in HELP_FLAGS:
        print(usage())
        return sys.exit(0)
    if argv[0] == "run":
        argv = argv[1:]
        args = (argv, *args[1:]) if args else ()
        if not args:
            sys.argv[1:] = argv
    elif argv[0] in COMMANDS:
        from .commands import interrupts

        interrupts.install()  # before torch is imported: Ctrl-C is clean from here on
        module = importlib.import_module(COMMANDS[argv[0]][0])
        if argv[0] == "score":
            return sys.exit(module.main(argv[1:], prog="score"))
        return sys.exit(module.main(argv[1:]))
    elif not argv[0].startswith("-"):
        print(f"unknown command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
        return sys.exit(2)

    from kedro.framework.cli.utils import find_run_command
    from kedro.framework.project import configure_project

    package_name = Path(__file__).parent.name
    configure_project(package_name)
    interactive = hasattr(sys, "ps1")
    kwargs["standalone_mode"] = not interactive
    run = find_run_command(package_name)
    return run(*args, **kwargs)


if __name__ == "__main__":
    main()
