"""Entry point: ``python -m connect_zero_pipeline <command> [options]``.

The commands are one click group, :data:`.commands.cli` (Kedro finds it in :mod:`.cli` for
``kedro <command>`` too): ``run`` is Kedro's run command with the project's checks, the
others are imported when used (:data:`.commands.COMMANDS`). ``python -m connect_zero_pipeline`` alone
(or ``--help``) lists them; ``<command> --help`` gives a command's options. Arguments that
start with an option (``python -m connect_zero_pipeline --pipelines=ladder``) go to ``run``,
as in every Kedro project.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .commands import PROG, cli, interrupts
from .common import quiet

HELP_FLAGS = ("-h", "--help")


def main(*args, **kwargs) -> Any:
    quiet.install()  # known library warnings and progress bars, before any library loads
    argv = list(args[0]) if args else sys.argv[1:]
    if argv and argv[0].startswith("-") and argv[0] not in HELP_FLAGS:
        argv = ["run", *argv]
    if argv[:1] == ["run"]:
        from kedro.framework.project import configure_project  # noqa: PLC0415 (Kedro: not for this command's --help)

        configure_project(Path(__file__).parent.name)  # as the kedro command does
    elif argv and not argv[0].startswith("-"):
        interrupts.install()  # before torch is imported: Ctrl-C is clean from here on
    kwargs.setdefault("standalone_mode", not hasattr(sys, "ps1"))  # interactive: no exit
    return cli.main(args=argv, prog_name=PROG, **kwargs)


if __name__ == "__main__":
    main()
