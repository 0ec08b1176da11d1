"""Benchmarks: ``python -m connect_zero_pipeline bench NAME [options]``.

Each benchmark prints one JSON line per figure with at least ``bench``,
``figure`` and ``value``; where a baseline is measured in the same process the
line also has ``baseline_value`` and ``ratio``, because this machine is shared
and absolute times drift. Benchmarks are not tests: they print, never assert.

Every module of this package with a ``run(args)`` is a benchmark, found rather than
listed: ``bench NAME`` is a click command built from it (its docstring's first line is its
help, its ``OPTIONS`` its options besides ``--quick``), and ``bench all`` runs each.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import click


def figure(bench: str, name: str, value: float, baseline: float | None = None, **extra) -> dict:
    """One benchmark line; ``ratio = value / baseline`` when a baseline is given."""
    line = {"bench": bench, "figure": name, "value": value}
    if baseline is not None:
        line["baseline_value"] = baseline
        line["ratio"] = value / baseline if baseline else float("inf")
    line.update(extra)
    return line


def best_rate(fn: Callable[[], int], repeats: int = 3, min_seconds: float = 0.5) -> float:
    """Best of ``repeats`` measurements of ``units / second``; ``fn`` returns its unit count."""
    best = 0.0
    for _ in range(repeats):
        units, start = 0, time.perf_counter()
        while True:
            units += fn()
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = max(best, units / elapsed)
    return best


QUICK = click.Option(["--quick"], is_flag=True, help="Smaller sizes, for a smoke run.")


def first_sentence(text: str) -> str:
    """A help text's first sentence: the command's whole line in a list of commands (click
    would cut a longer one at the terminal's width)."""
    return re.split(r"(?<=[.?])\s", text.strip(), maxsplit=1)[0]


def _names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.ispkg)


def _emit(run: Callable[..., Iterator[dict]], options: dict) -> None:
    for line in run(SimpleNamespace(**options)):
        click.echo(json.dumps(line))


def _command(name: str) -> click.Command:
    module = importlib.import_module(f"{__name__}.{name}")
    summary = " ".join((module.__doc__ or name).strip().split("\n\n")[0].split())
    summary = summary.replace(f"``bench {name}``: ", "").replace("``", "")
    summary = summary[:1].upper() + summary[1:]
    return click.Command(name, params=[QUICK, *getattr(module, "OPTIONS", ())],
                         callback=lambda **options: _emit(module.run, options), help=summary,
                         short_help=first_sentence(summary))  # fmt: skip


class Benches(click.Group):
    """The benchmarks of this package (module docstring), imported when one is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*_names(), *super().list_commands(ctx)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return _command(name) if name in _names() else super().get_command(ctx, name)


@click.group(cls=Benches)
def bench() -> None:
    """Benchmarks: one JSON line per figure."""


@bench.command(name="all")
@click.option("--quick", is_flag=True, help="Smaller sizes, for a smoke run.")
def run_all(quick: bool) -> None:
    """Every benchmark, each with its defaults."""
    for name in _names():
        try:
            command = _command(name)
        except ModuleNotFoundError as exc:  # an optional extra (Ray) not installed
            click.echo(json.dumps({"bench": name, "error": f"not available: {exc}"}))
            continue
        command.callback(**{**{p.name: p.default for p in command.params}, "quick": quick})
