"""Entry point: ``python -m connect_zero_pipeline [solve|bench|play|benchmark|score] ...``.

Without one of the project commands below, the arguments go to Kedro's run
command, as in every Kedro project (``python -m connect_zero_pipeline`` is
``kedro run``).

- ``solve [--weak] [--analyze]``: perfect solver on move strings from stdin.
- ``bench NAME``: benchmarks, one JSON line per figure.
- ``play [--web] [--model PATH] [--sims N]``: play the trained agent.
- ``benchmark --file PATH [--model PATH] [--sims 0,32,600]``: the network
  alone and MCTS agents on Pons position files, labelled by the solver; one
  JSON line per file and agent. ``score`` is the same command.
- ``curve [--run ID]``: a run's learning curve as a Markdown table.
- ``runs``: the project's runs, their status (``interrupted`` for a killed one)
  and errors.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

COMMANDS = {
    "solve": "connect_zero_pipeline.commands.solve",
    "bench": "connect_zero_pipeline.bench",
    "play": "connect_zero_pipeline.commands.play",
    "benchmark": "connect_zero_pipeline.commands.benchmark",
    "curve": "connect_zero_pipeline.commands.curve",
    "runs": "connect_zero_pipeline.commands.runs",
    "score": "connect_zero_pipeline.commands.benchmark",  # the same command, older name
}


def main(*args, **kwargs) -> Any:
    argv = list(args[0]) if args else sys.argv[1:]
    if argv and argv[0] in COMMANDS:
        from .commands import interrupts

        interrupts.install()  # before torch is imported: Ctrl-C is clean from here on
        module = importlib.import_module(COMMANDS[argv[0]])
        if argv[0] == "score":
            return sys.exit(module.main(argv[1:], prog="score"))
        return sys.exit(module.main(argv[1:]))

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
