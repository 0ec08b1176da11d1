"""The project's commands: one click group, ``python -m connect_zero_pipeline <command>``.

:data:`cli` is the group Kedro finds in :mod:`..cli` (so ``kedro <command>`` works too);
``run`` is Kedro's run command with the project's checks (:mod:`.run`), the others are
the modules of this package named in :data:`COMMANDS`. ``--help`` at every level is
click's, generated from the commands themselves.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any

import click


class UnknownName(click.ClickException):
    """A name on the command line that names nothing: ``Error: <message>`` alone, exit 2
    (Click's usage lines would come first and say nothing about the name)."""

    exit_code = 2


class Whole(click.ParamType):
    """An integer from ``low`` to ``high`` (None: no bound), typed as an integer in --help and
    refused in the project's words: ``must be <what>, got '<text>'``."""

    name = "integer"

    def __init__(self, low: int = 0, high: int | None = None, what: str = "an integer >= 0"):
        self.low, self.high, self.what = low, high, what

    def convert(self, value, param, ctx) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = None
        if number is None or number < self.low or (self.high is not None and number > self.high):
            self.fail(f"must be {self.what}, got {str(value)!r}", param, ctx)
        return number


COUNT = Whole()
"""A count: an integer >= 0."""
PORT = Whole(0, 65535, "a port in [0, 65535]")
"""A TCP port (0: any free one)."""


def max_nodes_option(what: str):
    """``--max-nodes N``: the solver's node budget a position (0: no limit); ``what`` it does
    past it ("Skip a position")."""
    return click.option(
        "--max-nodes",
        type=COUNT,
        default=0,
        show_default=True,
        metavar="N",
        help=f"{what} after N search nodes (0: no limit).",
    )


def did_you_mean(name: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


PROG = "python -m connect_zero_pipeline"
"""How the commands are called (``kedro <command>`` works too)."""


class LazyCommand(click.Command):
    """A command imported when it runs or shows its own help: listed (``--help`` of the group,
    ``kedro --help``) by its name and :data:`COMMANDS`' one line alone, so listing the
    commands imports none of them (``tests/commands/test_cli.py`` checks the line is the
    command's own)."""

    def __init__(self, name: str, load: str | Callable[[], click.Command], line: str) -> None:
        super().__init__(name, help=line, short_help=line)  # listed whole (click wraps it)
        self.load = load
        self._real: click.Command | None = None

    def real(self) -> click.Command:
        """The command itself, imported now if it was not (``load``: ``module:attr``, or a
        function that returns it)."""
        if self._real is None:
            if callable(self.load):
                self._real = self.load()
            else:
                module, _, attr = self.load.partition(":")
                self._real = getattr(importlib.import_module(module), attr)
        return self._real

    def make_context(self, info_name, args, parent=None, **extra) -> click.Context:
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        return self.real().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        return self.real().invoke(ctx)

    def get_params(self, ctx: click.Context) -> list:
        return self.real().get_params(ctx)

    def get_help(self, ctx: click.Context) -> str:
        return self.real().get_help(ctx)

    def get_usage(self, ctx: click.Context) -> str:
        return self.real().get_usage(ctx)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list:
        return self.real().shell_complete(ctx, incomplete)


class ProjectCommands(click.Group):
    """A click group whose commands are imported when one runs (:class:`LazyCommand`), so
    ``--help`` and ``runs`` import neither Kedro nor torch, and ``run`` not ``play``'s. An
    unknown command is named, with the closest one and the list."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = {name: LazyCommand(name, target, short) for name, (target, short)
                     in lazy.items()}  # fmt: skip

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *self.lazy]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self.lazy.get(name) or super().get_command(ctx, name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            names = self.list_commands(ctx)
            formatter = ctx.make_formatter()
            self.format_commands(ctx, formatter)
            raise UnknownName(f"unknown command {name!r}.{did_you_mean(name, names)}\n\n"
                              f"{formatter.getvalue().rstrip()}")  # fmt: skip
        return super().resolve_command(ctx, args)


COMMANDS = {
    "run": ("connect_zero_pipeline.commands.run:run",
            "Train and measure: kedro run (--pipelines, --params, --env)."),
    "play": ("connect_zero_pipeline.commands.play:play",
             "Play the agent in the terminal, or in the browser with --web."),
    "benchmark": ("connect_zero_pipeline.commands.benchmark:benchmark",
                  "Score an agent on position files against the perfect solver."),
    "curve": ("connect_zero_pipeline.commands.curve:curve",
              "Print a run's learning curve as a Markdown table."),
    "frontier": ("connect_zero_pipeline.commands.frontier:frontier",
                 "Every finished run's strength against its wall minutes."),
    "runs": ("connect_zero_pipeline.commands.runs:runs",
             "List the project's runs: id, status, generations, start, error."),
    "solve": ("connect_zero_pipeline.commands.solve:solve",
              "Solve positions from standard input, one move string a line."),
    "bench": ("connect_zero_pipeline.bench:bench", "Benchmarks: one JSON line per figure."),
}  # fmt: skip
"""Every command: name -> (where its click command is, imported when it runs; its line in
the list of commands, which is the command's own short help: one line of an 80-column
terminal, ``tests/commands/test_cli.py`` checks)."""


@click.group(name="Connect Zero Pipeline", cls=ProjectCommands, lazy=COMMANDS,
             invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Connect-Zero Pipeline: Connect-4 agents trained by self-play, measured against a
    perfect solver. Options alone (--pipelines=...) are those of run."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def invoke(argv: list[str]) -> int:
    """Run ``python -m connect_zero_pipeline <argv>`` in this process (tests, notebooks) and
    return its exit status: usage errors are printed and give 2, as on the command line."""
    try:
        status = cli.main(args=list(argv), prog_name=PROG, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return status if isinstance(status, int) else 0


def finish(status: int) -> None:
    """End a command with exit status ``status`` (click would exit 0 whatever it returned)."""
    click.get_current_context().exit(status)
