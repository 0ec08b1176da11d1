"""The project's commands: one click group, ``python -m connect_zero_pipeline <command>``.

:data:`cli` is the group Kedro finds in :mod:`..cli` (so ``kedro <command>`` works too);
``run`` is Kedro's run command with the project's checks (:mod:`..cli`), the others are
the modules of this package named in :data:`COMMANDS`. ``--help`` at every level is
click's, generated from the commands themselves.
"""

from __future__ import annotations

import difflib
from typing import Any

import click


class UnknownName(click.ClickException):
    """A name on the command line that names nothing: ``Error: <message>`` alone, exit 2
    (Click's usage lines would come first and say nothing about the name)."""

    exit_code = 2


def max_nodes_option(what: str):
    """``--max-nodes N``: the solver's node budget a position (0: no limit); ``what`` it does
    past it ("Skip a position")."""
    return click.option(
        "--max-nodes",
        type=click.IntRange(min=0),
        default=0,
        metavar="N",
        help=f"{what} after N search nodes (default 0: no limit).",
    )


def did_you_mean(name: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


PROG = "python -m connect_zero_pipeline"
"""How the commands are called (``kedro <command>`` works too)."""


class ProjectCommands(click.Group):
    """A click group whose commands are imported when one is asked for (:data:`COMMANDS`;
    click's lazy-loading recipe), so ``runs`` imports neither Kedro nor torch, and ``run``
    not ``play``'s. An unknown command is named, with the closest one and the list."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *self.lazy]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            import importlib

            module, _, attr = self.lazy[name].partition(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

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
    "run": "connect_zero_pipeline.cli:run",
    "play": "connect_zero_pipeline.commands.play:play",
    "benchmark": "connect_zero_pipeline.commands.benchmark:benchmark",
    "curve": "connect_zero_pipeline.commands.curve:curve",
    "runs": "connect_zero_pipeline.commands.runs:runs",
    "solve": "connect_zero_pipeline.commands.solve:solve",
    "bench": "connect_zero_pipeline.bench:bench",
}
"""Every command: name -> where its click command is (imported when used)."""


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
